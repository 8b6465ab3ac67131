"""Fixtures shared by the unit tests."""

import pytest
import torch


@pytest.fixture
def one_thread():
    """Train on one thread, as the chapters do: the tensors are small, and a second thread only
    adds synchronisation (and waits for a core on a busy machine)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
