"""The gradient theorem with the skip term (chapter 9): SymPy derivation and autograd in float64."""

from __future__ import annotations

import pytest
import sympy as sp
import torch

from attnxai import AttentionClassifier, explainers
from attnxai.theory import gradient_skip as gs
from attnxai.theory import gradient_theorem as tg
from conftest import random_model


def tiny_skip(padding: str = "mask", seed: int = 0, skip: bool = True) -> AttentionClassifier:
    return random_model(40, seed=seed, d_embed=6, d_attn=3, d_value=4, n_heads=3, max_len=10,
                        n_classes=3, padding=padding, init_range=1.0, skip=skip)


def batch(model):
    return model.collate([[1, 5, 6, 7, 8, 5], [1, 9, 10], [1, 3, 4, 11, 12, 13, 14]])


@pytest.mark.parametrize("padding", ["mask", "unk"])
@pytest.mark.parametrize("target", [0, 1, 2])
def test_skip_gradient_matches_autograd_to_1e12(padding, target):
    model = tiny_skip(padding)
    ids = batch(model)
    auto = explainers.gradient(model, ids, target)
    closed = gs.gradient_closed_form(model, ids, target)
    assert (closed - auto).abs().max() < 1e-12
    terms = gs.gradient_terms(model, ids, target)
    assert terms["skip"][:, 1:].abs().max() == 0
    assert torch.equal(terms["skip"][:, 0], model.W_s.detach()[target].expand(3, -1))
    # without the skip term the paper's theorem misses exactly it, at [CLS] only
    plain = tg.gradient_closed_form(model, ids, target)
    assert torch.allclose(plain[:, 1:], auto[:, 1:], atol=1e-12, rtol=0)
    assert (auto[:, 0] - plain[:, 0] - model.W_s.detach()[target]).abs().max() < 1e-12


def test_skip_is_a_constant_offset():
    with_skip, without = tiny_skip(seed=3), tiny_skip(seed=3, skip=False)
    ids = batch(with_skip)
    for k in ("W_e", "W_q", "W_k", "W_v", "W_l"):
        assert torch.equal(getattr(with_skip, k), getattr(without, k))
    e1 = with_skip.embed(with_skip.check_ids(ids))[:, 0]
    offset = e1 @ with_skip.W_s.T
    assert torch.allclose(with_skip(ids), without(ids) + offset, atol=1e-14)
    assert torch.allclose(offset, offset[:1].expand_as(offset))      # the same for every review
    assert torch.equal(explainers.attention(with_skip, ids).nan_to_num(0),
                       explainers.attention(without, ids).nan_to_num(0))
    assert torch.allclose(with_skip(ids, per_head=True).mean(1), with_skip(ids), atol=1e-14)
    it = with_skip(ids, return_internals=True)
    assert torch.allclose(it.logits, with_skip(ids), atol=1e-14)
    flipped = explainers.flip_output_layer(with_skip)
    assert torch.allclose(flipped(ids), -with_skip(ids), atol=1e-14)


def test_skip_models_take_the_generic_lime_path():
    from attnxai import fastlime
    from attnxai.model.network import Projections

    from conftest import make_tiny, tiny_text

    pre = make_tiny(n_heads=2, scale=0.1, skip=True, redraw=False)
    with pytest.raises(TypeError, match="skip"):
        Projections.of(pre.model)
    res = fastlime.explain_instance(pre, tiny_text(12), num_samples=100, random_state=0)
    assert res.path == "generic" and "skip" in res.reason


@pytest.mark.parametrize("t", [0, 1, 2])
def test_sympy_derivation(t):
    sk = gs.symbolic_skip_model(T=3, d_embed=2, d_attn=1, d_value=1, n_heads=1)
    assert gs.symbolic_skip_difference(sk, t) == sp.zeros(2, 1)
    extra = gs.symbolic_skip_extra(sk, t)
    assert extra == (sk.W_s[0, :].T if t == 0 else sp.zeros(2, 1))
