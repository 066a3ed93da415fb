"""The architecture carried whole (attnxai.model.config): each field checked by name when the
configuration is built, the models built from one object only, and the checkpoints' ``"model"``
section read and written in the format every saved checkpoint has."""

import dataclasses
import json

import pytest
import torch

from attnxai.model.config import AttentionConfig, ModelConfig, MultiLayerConfig
from attnxai.model.multilayer import MultiLayerClassifier
from attnxai.model.single_layer import AttentionClassifier


@pytest.mark.parametrize("cls, bad, match", [
    (AttentionConfig, {"padding": "zeros"}, "padding must be one of"),
    (AttentionConfig, {"pad_id": 1}, "must differ"),
    (AttentionConfig, {"cls_id": -1}, "cls_id must be an int >= 0"),
    (AttentionConfig, {"d_embed": 0}, "d_embed must be a positive int"),
    (AttentionConfig, {"n_heads": 2.0}, "n_heads must be a positive int"),
    (AttentionConfig, {"d_attn": True}, "d_attn must be a positive int"),
    (AttentionConfig, {"d_value": -3}, "d_value must be a positive int"),
    (AttentionConfig, {"max_len": 0}, "max_len must be a positive int"),
    (AttentionConfig, {"init_range": float("inf")}, "init_range must be a finite number"),
    (AttentionConfig, {"skip": 1}, "skip must be True or False"),
    (MultiLayerConfig, {"norm": "mid"}, "norm must be one of"),
    (MultiLayerConfig, {"n_layers": 0}, "n_layers must be a positive int"),
    (MultiLayerConfig, {"residual": "yes"}, "residual must be True or False"),
    (MultiLayerConfig, {"d_ff": -1}, "d_ff must be an int >= 0"),
    (MultiLayerConfig, {"dropout": 1.0}, r"dropout must lie in \[0, 1\)"),
])
def test_each_field_is_checked_by_name_when_built(cls, bad, match):
    with pytest.raises((TypeError, ValueError), match=match):
        cls(50, **bad)
    with pytest.raises(ValueError, match="vocab_size=2 is too small"):
        cls(2)
    with pytest.raises(dataclasses.FrozenInstanceError):
        cls(50).d_embed = 4                      # frozen: checked once, never changed after


def test_every_field_but_the_vocabulary_is_a_keyword():
    with pytest.raises(TypeError):
        AttentionConfig(50, 8)                                   # type: ignore[misc]
    c = MultiLayerConfig(50, dropout=0)
    assert isinstance(c.dropout, float) and c.n_heads == AttentionConfig(50).n_heads == 6


def test_a_model_is_built_from_its_own_configuration_only():
    with pytest.raises(TypeError, match="AttentionClassifier is built from one AttentionConfig"):
        AttentionClassifier(50)                                  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="built from one MultiLayerConfig"):
        MultiLayerClassifier(AttentionConfig(50))                # type: ignore[arg-type]
    c = AttentionConfig(50, d_embed=8, d_attn=4, d_value=6, n_heads=3, max_len=12, skip=True)
    m = AttentionClassifier(c)
    assert m.config is c and (m.d_attn, m.d_value, m.n_heads, m.max_len) == (4, 6, 3, 12)
    assert tuple(m.W_s.shape) == (2, 8) and tuple(m.W_v.shape) == (3, 6, 8)
    deep = MultiLayerClassifier(MultiLayerConfig(50, d_embed=8, n_layers=3, n_heads=2, d_attn=4,
                                                 d_value=4, d_ff=16))
    assert len(deep.blocks) == 2 and deep.blocks[0].ff is not None and deep.n_layers == 3


def test_the_checkpoint_section_keeps_its_format():
    """The single-layer model's section has no init_range and skip only when on (the format of
    every saved checkpoint, the paper model's included); the multi-layer one has every field.
    Each reads back to the same configuration; an unknown key is refused by name."""
    single = AttentionConfig(89568)
    assert single.to_dict() == {"vocab_size": 89568, "d_embed": 128, "d_attn": 64,
                                "d_value": 64, "n_heads": 6, "max_len": 256, "n_classes": 2,
                                "padding": "mask", "pad_id": 0, "cls_id": 1, "unk_id": 2}
    assert AttentionConfig(50, skip=True).to_dict()["skip"] is True
    deep = MultiLayerConfig(21553, n_layers=2, n_heads=4, d_attn=16, d_value=16, dropout=0.1)
    assert deep.to_dict() == {"cls_id": 1, "d_attn": 16, "d_embed": 128, "d_ff": 0,
                              "d_value": 16, "dropout": 0.1, "init_range": 0.1, "max_len": 256,
                              "n_classes": 2, "n_heads": 4, "n_layers": 2, "norm": "pre",
                              "pad_id": 0, "padding": "mask", "residual": True, "unk_id": 2,
                              "vocab_size": 21553}
    for c in (single, AttentionConfig(50, skip=True, padding="unk"), deep):
        back = type(c).from_dict(json.loads(json.dumps(c.to_dict())))
        assert back == c
    with pytest.raises(TypeError, match=r"unknown field\(s\) \['d_model'\] of AttentionConfig"):
        AttentionConfig.from_dict({"vocab_size": 50, "d_model": 8})
    with pytest.raises(TypeError, match="dict of fields"):
        ModelConfig.from_dict([("vocab_size", 50)])


def test_a_replaced_configuration_builds_the_same_weights_with_another_padding():
    torch.manual_seed(0)
    m = AttentionClassifier(AttentionConfig(40, d_embed=6, d_attn=3, d_value=4, n_heads=2,
                                            max_len=10))
    unk = AttentionClassifier(dataclasses.replace(m.config, padding="unk"))
    unk.load_state_dict(m.state_dict())
    assert unk.padding == "unk" and unk.config.to_dict() == {**m.config.to_dict(),
                                                             "padding": "unk"}
    with pytest.raises(ValueError, match="padding must be one of"):
        dataclasses.replace(m.config, padding="zeros")
