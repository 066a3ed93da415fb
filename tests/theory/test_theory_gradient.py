"""The gradient theorem (Section 4): closed form against automatic differentiation."""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp
import torch

from attnxai import AttentionClassifier, explainers, registry
from attnxai.model import symbolic
from attnxai.text import TruncationWarning
from attnxai.theory import gradient_theorem as tg
from conftest import random_model


def tiny(padding: str = "mask", n_classes: int = 2, seed: int = 0) -> AttentionClassifier:
    return random_model(40, seed=seed, d_embed=6, d_attn=3, d_value=4, n_heads=3, max_len=10,
                        n_classes=n_classes, padding=padding, init_range=1.0)


def batch(model: AttentionClassifier) -> torch.Tensor:
    return model.collate([[1, 5, 6, 7, 8, 5], [1, 9, 10], [1, 3, 4, 11, 12, 13, 14]])


@pytest.mark.parametrize("padding", ["mask", "unk"])
@pytest.mark.parametrize("target", [0, 1, 2])
def test_closed_form_matches_autodiff(padding, target):
    model = tiny(padding, n_classes=3)
    ids = batch(model)
    auto = explainers.gradient(model, ids, target)
    closed = tg.gradient_closed_form(model, ids, target)
    assert closed.shape == auto.shape == (3, ids.shape[1] if padding == "mask" else 10, 6)
    assert torch.allclose(closed, auto, atol=1e-13, rtol=0)


def test_padding_gets_zero_gradient():
    model = tiny("mask")
    ids = batch(model)
    closed = tg.gradient_closed_form(model, ids)
    pad = ids == model.pad_id
    assert pad.any()
    assert closed[pad].abs().max() == 0
    assert explainers.gradient(model, ids)[pad].abs().max() == 0


def test_terms_sum_and_structure():
    model = tiny()
    ids = batch(model)
    terms = tg.gradient_terms(model, ids, 1)
    assert set(terms) == set(tg.TERMS)
    assert torch.allclose(sum(terms.values()), tg.gradient_closed_form(model, ids, 1), atol=0, rtol=0)
    assert terms["query"][:, 1:].abs().max() == 0           # only [CLS] has a query term
    # the value term is linear in the per-head attention, along the fixed W_v^T w^T directions
    alpha = explainers.attention(model, ids, reduce="none")
    u = torch.einsum("kvd,kv->kd", model.W_v.detach(), model.W_l.detach()[:, 1])
    assert torch.allclose(terms["value"], torch.einsum("bkt,kd->btd", alpha, u) / model.n_heads)


def test_term_shares_sum_to_one():
    model = tiny()
    ids = batch(model)
    shares = tg.term_shares(tg.gradient_terms(model, ids), explainers.valid_mask(model, ids))
    total = sum(shares.values())
    mask = explainers.valid_mask(model, ids)
    assert torch.allclose(total[mask], torch.ones_like(total[mask]))
    assert torch.isnan(total[~mask]).all()


@pytest.mark.parametrize("padding", ["mask", "unk"])
def test_gradient_x_input_corollary(padding):
    model = tiny(padding)
    ids = batch(model)
    grad, e = explainers.gradient(model, ids, 1, return_embeddings=True)
    direct = (grad * e).sum(-1)
    assert torch.allclose(tg.gradient_x_input(model, ids, 1), direct, atol=1e-13, rtol=0)


def test_symbolic_difference_simplifies_to_zero():
    sm = symbolic.symbolic_model(T=3, d_embed=2, d_attn=1, d_value=1, n_heads=1)
    for t in (0, 2):     # [CLS] and an ordinary token
        assert tg.symbolic_difference(sm, t) == sp.zeros(2, 1)


def test_symbolic_check_at_random_points():
    sm = symbolic.symbolic_model(T=3, d_embed=2, d_attn=2, d_value=1, n_heads=2, n_classes=2)
    rows = tg.check_at_random_points(sm, n_points=1, digits=40)
    assert len(rows) == sm.T * sm.n_classes
    assert max(r["max_abs_diff"] for r in rows) < 1e-35
    assert min(r["max_abs_grad"] for r in rows) > 1e-6      # the check is not vacuous


def test_symbolic_closed_form_matches_torch():
    sm = symbolic.symbolic_model(T=4, d_embed=3, d_attn=2, d_value=2, n_heads=2, n_classes=2)
    model = symbolic.tiny_torch_model(sm, vocab_size=20, seed=3)
    ids = torch.tensor([[1, 4, 7, 9]])
    e = model.embed(model.check_ids(ids))[0]
    closed = tg.gradient_closed_form(model, ids, 1)[0]
    for t in range(sm.T):
        sym = sm.evaluate(tg.symbolic_gradient(sm, t, 1), model, e).ravel()
        np.testing.assert_allclose(sym, closed[t].numpy(), atol=1e-13)


def test_symbolic_bad_arguments():
    sm = symbolic.symbolic_model(T=2, d_embed=1, d_attn=1, d_value=1, n_heads=1)
    with pytest.raises(ValueError, match="token index 2"):
        tg.symbolic_gradient(sm, 2)
    with pytest.raises(ValueError, match="target class 1 does not exist"):
        tg.symbolic_gradient(sm, 0, target=1)


def test_bad_inputs():
    model = tiny()
    with pytest.raises(ValueError, match="empty input"):
        tg.gradient_closed_form(model, torch.zeros((0, 4), dtype=torch.long))
    with pytest.raises(ValueError, match=r"token ids must lie in \[0, 40\)"):
        tg.gradient_closed_form(model, torch.tensor([[1, 40]]))
    with pytest.raises(ValueError, match="target class 2 does not exist"):
        tg.gradient_closed_form(model, batch(model), target=2)
    with pytest.raises(ValueError, match="target class -1 does not exist"):
        tg.gradient_terms(model, batch(model), target=-1)
    with pytest.raises(TypeError, match="target must be an int"):
        tg.gradient_closed_form(model, batch(model), target=1.0)
    with pytest.raises(ValueError, match="only padding"):
        tg.gradient_closed_form(model, torch.tensor([[1, 5], [0, 0]]))
    with pytest.raises(TypeError, match="integer tensor"):
        tg.gradient_closed_form(model, torch.ones((1, 3)))


def test_trained_model_rounding_level(quick_model64, imdb):
    pre = quick_model64
    with pytest.warns(TruncationWarning, match="longer than the model reads"):   # long reviews, cut
        ids = pre.encode([r.text for r in imdb.test[:: 2500]])
    auto = explainers.gradient(pre.model, ids)
    closed = tg.gradient_closed_form(pre.model, ids)
    assert (auto - closed).abs().max() / auto.abs().max() < 1e-10


def test_symbolic_gradient_x_input_corollary():
    sm = symbolic.symbolic_model(T=3, d_embed=2, d_attn=1, d_value=1, n_heads=1)
    for t in (0, 1):
        lhs = (sm.e[t].T * tg.symbolic_autodiff(sm, t))[0, 0]
        assert sp.simplify(lhs - tg.symbolic_gradient_x_input(sm, t)) == 0
    with pytest.raises(ValueError, match="out of range"):
        tg.symbolic_gradient_x_input(sm, 3)


def test_corpus_terms():
    model = tiny()
    seqs = [[1, 5, 6, 7, 8, 5], [1, 9, 10], [1, 3, 4, 11]]
    df = tg.corpus_terms(model, seqs, batch_size=2)
    assert len(df) == 5 + 2 + 3 and (df.position > 0).all()
    assert df.review.tolist() == [0] * 5 + [1] * 2 + [2] * 3
    np.testing.assert_allclose(df[["share_value", "share_key", "share_query"]].sum(axis=1), 1.0)
    assert (df.share_query == 0).all()
    # against the explainers, token by token
    ids = model.collate(seqs)
    ex = registry.position_scores(model, ids)
    np.testing.assert_allclose(df.gxi, ex["GxI"][:, 1:][~torch.isnan(ex["GxI"][:, 1:])].numpy())
    np.testing.assert_allclose(df.g_avg, ex["G-avg"][:, 1:][~torch.isnan(ex["G-avg"][:, 1:])].numpy())
    # value part of GxI is chapter 1's per-token contribution (1/K) sum_i alpha_t s_t
    it = model(ids, return_internals=True)
    contrib = (it.alpha * it.token_scores[..., 1]).mean(1)[:, 1:]
    np.testing.assert_allclose(df.gxi_value, contrib[ids[:, 1:] != 0].detach().numpy(), atol=1e-14)
    with_cls = tg.corpus_terms(model, seqs, include_cls=True)
    assert len(with_cls) == len(df) + 3
    with pytest.raises(ValueError, match="no documents"):
        tg.corpus_terms(model, [])


def test_compare_with_autodiff():
    model = tiny()
    seqs = [[1, 5, 6, 7, 8, 5], [1, 9, 10], [1, 3, 4, 11]]
    out = tg.compare_with_autodiff(model, seqs, batch_size=2)
    assert out["reviews"] == 3 and out["tokens"] == 13
    assert out["max_abs_diff"] < 1e-13 and out["max_rel_review"] < 1e-12 and out["max_rel_token"] < 1e-12
    assert out["max_abs_grad"] > 0 and out["max_abs_gxi"] > 0 and out["max_abs_diff_gxi"] < 1e-13
    with pytest.raises(ValueError, match="no documents"):
        tg.compare_with_autodiff(model, [])
    with pytest.raises(ValueError, match="target class 3 does not exist"):
        tg.compare_with_autodiff(model, seqs, target=3)
