"""Tests of longdep.experiments.registry: one entry per kind of model; the drivers' lists name
registered kinds."""

import pytest
import torch
from longdep.experiments.attention import TABLE_1, TABLE_1_LAYERS
from longdep.experiments.mqar import MQAR_MODELS
from longdep.experiments.registry import (
    KIND,
    KINDS,
    TABLE_1_KIND,
    ModelKind,
    ModelShape,
    model_kind,
)
from longdep.experiments.summary import KEY_RECALL_MODELS, SUMMARY_MODELS
from longdep.models.mixers import MIXERS


def test_every_kind_is_named_once_and_every_driver_list_names_registered_kinds():
    names = [kind.name for kind in KINDS]
    assert len(names) == len(set(names)) == len(KIND)
    for names in (SUMMARY_MODELS, KEY_RECALL_MODELS, MQAR_MODELS):
        assert set(names) <= set(KIND)
    assert set(MQAR_MODELS) <= set(SUMMARY_MODELS)
    assert set(TABLE_1_LAYERS) == set(TABLE_1_KIND) and list(TABLE_1) == list(TABLE_1_LAYERS)
    mixers = [kind.mixer for kind in KINDS if kind.mixer is not None]
    assert sorted(mixers) == sorted(MIXERS)  # each mixer once, no other key


def test_table_1_rows_point_to_their_kinds():
    assert TABLE_1_KIND["recurrent"].name == "tanh RNN" and TABLE_1_KIND["recurrent"].recurrent
    assert TABLE_1_KIND["self-attention"].mixer == "softmax"
    assert TABLE_1_KIND["windowed attention"].mixer == "window"


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
        model_kind("GRU", SUMMARY_MODELS)
    with pytest.raises(ValueError, match="mixer must be one of"):
        ModelKind("mamba", mixer="mamba")
    with pytest.raises(ValueError, match="not both"):
        ModelKind("both", mixer="ssm", make=lambda shape, size: None)
    with pytest.raises(ValueError, match="needs a mixer key, a maker or a Table 1 row"):
        ModelKind("nothing")
    with pytest.raises(TypeError, match="shape must be a ModelShape"):
        KIND["LSTM"].build({})
