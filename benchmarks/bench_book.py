"""Time each chapter beside the machine's matmul speed and small-step cost, to compare machines.

Each chapter notebook is copied to a temporary folder and executed there with nbclient (the
committed notebook is never touched); the script prints a table of the wall-clock seconds per
chapter and the machine's float32 matrix-multiply speed on two threads (the median GFLOP/s of
several 1024 x 1024 products). Nothing passes or fails: a chapter that raises is reported as
such.

The matmul rate alone does not predict the book's time. Its models are tiny, so a chapter's
time is mostly the fixed cost of each small operation, which a faster matrix unit does not
shorten. The script therefore also prints the microseconds of one step of a tiny training loop
on one thread (:func:`tiny_step_microseconds`): the book's speed budgets (DESIGN.md, "True on
every machine") are set for a machine on which it takes about 200 microseconds. The surest
comparison of two machines is the same commit timed on both: check out the commit in a work tree
and run this script from there.

    .venv/bin/python benchmarks/bench_book.py [--chapters 01 04] [--repeats 9] [--slowest 5]

Each chapter's CPU seconds (its kernel and the workers it forks) are printed beside its wall
time: on a machine that other jobs load, the CPU time is the steadier measure of what a change
costs. With ``--slowest N`` each chapter's row is followed by its N slowest cells (seconds,
the cell's index in the notebook and its first line), to show where a chapter's time goes.
"""

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

import nbformat
import torch
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError

BOOK = Path(__file__).resolve().parent.parent / "book"
SIZE, THREADS = 1024, 2


def matmul_gflops(size: int = SIZE, threads: int = THREADS, repeats: int = 9) -> float:
    """Median GFLOP/s of ``repeats`` float32 products of two (size, size) matrices."""
    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        a, b = torch.randn(size, size), torch.randn(size, size)
        for _ in range(2):  # warm-up: thread pool, caches, frequency
            torch.matmul(a, b)
        rates = []
        for _ in range(repeats):
            start = time.perf_counter()
            torch.matmul(a, b)
            rates.append(2 * size**3 / (time.perf_counter() - start) / 1e9)
        return statistics.median(rates)
    finally:
        torch.set_num_threads(previous)


def tiny_step_microseconds(steps: int = 300, repeats: int = 5) -> float:
    """Median microseconds of one training step (forward, backward, update) of a two-layer
    MLP of width 32 on a batch of 8, on one thread: the per-operation cost that bounds the
    book's tiny models."""
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        model = torch.nn.Sequential(torch.nn.Linear(32, 32), torch.nn.Tanh(),
                                    torch.nn.Linear(32, 32))
        x = torch.randn(8, 32)
        rates = []
        for _ in range(repeats + 1):  # the first round warms up
            start = time.perf_counter()
            for _ in range(steps):
                model.zero_grad()
                model(x).square().mean().backward()
                with torch.no_grad():
                    for p in model.parameters():
                        p.add_(p.grad, alpha=-1e-3)
            rates.append((time.perf_counter() - start) / steps * 1e6)
        return statistics.median(rates[1:])
    finally:
        torch.set_num_threads(previous)


def cell_seconds(nb: nbformat.NotebookNode) -> list[tuple[float, int, str]]:
    """(seconds, index, first line) of each executed code cell, from nbclient's timing record."""
    timed = []
    for index, cell in enumerate(nb.cells):
        timing = cell.get("metadata", {}).get("execution", {})
        if cell.cell_type == "code" and "shell.execute_reply" in timing:
            end, start = (datetime.fromisoformat(timing[key].replace("Z", "+00:00"))
                          for key in ("shell.execute_reply", "iopub.execute_input"))
            seconds = end - start
            timed.append((seconds.total_seconds(), index, cell.source.split("\n", 1)[0]))
    return timed


def children_cpu_seconds() -> float:
    """User + system CPU seconds of the finished child processes (the kernels, and the workers
    they forked and waited for): on a machine that other jobs load, a chapter's CPU time moves
    much less than its wall-clock time."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def chapter_seconds(notebook: Path, timeout: int
                    ) -> tuple[float, float, str, list[tuple[float, int, str]]]:
    """Wall-clock and CPU seconds to execute a copy of ``notebook`` in a temporary folder, "ok"
    or the name of the error that stopped it, and each cell's seconds (``cell_seconds``)."""
    with tempfile.TemporaryDirectory() as folder:
        copy = Path(folder) / notebook.name
        shutil.copy(notebook, copy)
        nb = nbformat.read(copy, as_version=4)
        client = NotebookClient(nb, timeout=timeout, kernel_name="python3", record_timing=True,
                                resources={"metadata": {"path": folder}})
        start, cpu = time.perf_counter(), children_cpu_seconds()
        try:
            client.execute(stderr=subprocess.DEVNULL)  # the kernel's own log, not a cell's
            status = "ok"
        except (CellExecutionError, CellTimeoutError, DeadKernelError) as error:  # report it
            status = type(error).__name__
        return (time.perf_counter() - start, children_cpu_seconds() - cpu, status,
                cell_seconds(nb))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chapters", nargs="*", default=None,
                        help="chapter numbers such as 01 04 (default: all)")
    parser.add_argument("--repeats", type=int, default=9, help="matmuls timed (default 9)")
    parser.add_argument("--slowest", type=int, default=0,
                        help="also list each chapter's N slowest cells (default 0)")
    parser.add_argument("--timeout", type=int, default=600, help="seconds per cell")
    args = parser.parse_args()

    notebooks = sorted(BOOK.glob("[0-9][0-9]_*.ipynb"))
    if args.chapters:
        notebooks = [nb for nb in notebooks if nb.name[:2] in args.chapters]
    # The kernels must import this checkout's longdep, wherever it is installed.
    code = str(BOOK.parent / "code")
    os.environ["PYTHONPATH"] = os.pathsep.join(
        filter(None, [code, os.environ.get("PYTHONPATH")]))

    gflops = matmul_gflops(repeats=args.repeats)
    print(f"python {sys.version.split()[0]}, torch {torch.__version__}, "
          f"CPU capability {torch.backends.cpu.get_cpu_capability()}, "
          f"{os.cpu_count()} CPUs")
    print(f"fp32 matmul {SIZE} x {SIZE}, {THREADS} threads: {gflops:.0f} GFLOP/s "
          f"(median of {args.repeats})")
    print(f"tiny training step, 1 thread: {tiny_step_microseconds():.0f} microseconds "
          f"(the budgets assume about 200)")
    print(f"{'chapter':32s} {'seconds':>8s} {'CPU s':>8s}  status")
    total = total_cpu = 0.0
    for notebook in notebooks:
        seconds, cpu, status, cells = chapter_seconds(notebook, args.timeout)
        total, total_cpu = total + seconds, total_cpu + cpu
        print(f"{notebook.stem:32s} {seconds:8.1f} {cpu:8.1f}  {status}", flush=True)
        for cell_time, index, first_line in sorted(cells, reverse=True)[:args.slowest]:
            print(f"    cell {index:3d} {cell_time:7.1f}  {first_line[:60]}", flush=True)
    print(f"{'all chapters':32s} {total:8.1f} {total_cpu:8.1f}")
    print(f"matmul again: {matmul_gflops(repeats=args.repeats):.0f} GFLOP/s "
          f"(a change means the machine's load changed during the run)")


if __name__ == "__main__":
    main()
