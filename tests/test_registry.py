"""Tests of longdep.experiments.registry: one entry per kind of model, every list derived."""

import pytest
import torch
from longdep.experiments.registry import (
    BOOK_MODELS,
    KEY_RECALL_MODELS,
    KIND,
    KINDS,
    MIXER_OF,
    MQAR_MODELS,
    ORDER_BLIND,
    TABLE_1,
    TABLE_1_KIND,
    TABLE_1_LAYERS,
    TABLE_1_PATH_LENGTH,
    ModelKind,
    ModelShape,
    model_kind,
)
from longdep.models.mixers import MIXERS


def test_every_kind_is_named_once_and_every_list_comes_from_the_registry():
    names = [kind.name for kind in KINDS]
    assert len(names) == len(set(names)) == len(KIND)
    assert BOOK_MODELS == ("tanh RNN", "LSTM", "Transformer (softmax attention)",
                           "sliding-window attention", "linear attention", "selective SSM")
    assert KEY_RECALL_MODELS == (*BOOK_MODELS, ORDER_BLIND)
    assert set(MQAR_MODELS) <= set(BOOK_MODELS)
    assert TABLE_1_LAYERS == ("self-attention", "recurrent", "convolution",
                              "dilated convolution", "windowed attention")
    assert list(TABLE_1_PATH_LENGTH) == list(TABLE_1_LAYERS)
    assert sorted(MIXER_OF.values()) == sorted(MIXERS)  # each mixer once, no other key


def test_table_1_rows_point_to_their_kinds():
    assert TABLE_1_KIND["recurrent"].name == "tanh RNN" and TABLE_1_KIND["recurrent"].recurrent
    assert TABLE_1_KIND["self-attention"].mixer == "softmax"
    assert TABLE_1_KIND["windowed attention"].mixer == "window"
    assert [row.position for row in TABLE_1.values()] == list(range(len(TABLE_1)))


@pytest.mark.parametrize("name", KEY_RECALL_MODELS)
def test_every_compared_model_builds_for_a_shape(name):
    shape = ModelShape(input_size=6, width=8, d_ff=16, window=3, max_len=16)
    output = KIND[name].build(shape)(torch.randn(2, 5, 6))
    output = output[0] if isinstance(output, tuple) else output
    assert output.shape == (2, 5, 8)


def test_a_layer_of_table_1_only_is_no_model_and_errors_are_clear():
    with pytest.raises(ValueError, match="only a layer of Table 1"):
        KIND["convolution"].build()
    with pytest.raises(ValueError, match="not a mixer stack"):
        KIND["LSTM"].stack(ModelShape(), 2)
    with pytest.raises(ValueError, match="model must be one of"):
        model_kind("GRU", BOOK_MODELS)
    with pytest.raises(ValueError, match="mixer must be one of"):
        ModelKind("mamba", mixer="mamba")
    with pytest.raises(ValueError, match="not both"):
        ModelKind("both", mixer="ssm", make=lambda shape, size: None)
    with pytest.raises(TypeError, match="shape must be a ModelShape"):
        KIND["LSTM"].build({})
