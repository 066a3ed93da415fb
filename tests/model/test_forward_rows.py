"""The training path ``forward_rows`` (logits from the embedding rows a batch uses) is the model's
forward: the same logits and the same gradients, on random float64 models (hypothesis: 1 to 3
heads, both padding modes, the skip connection, weights up to 30, batches with padding), against
``model(ids)`` and autograd through it."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from conftest import random_model
from hypo import documents, examples, models, relative

from attnxai.model.interface import ClassifierBase

TOL = 1e-10


def _gradient_scales(model, it, w) -> dict[str, float]:
    """The size of the terms each parameter's gradient sums (products of the largest factors on
    its path, times the batch): the scale of its rounding, where the gradient itself may cancel
    (saturated attention makes the query's and key's gradients tiny differences)."""
    a = {n: float(p.detach().abs().max()) for n, p in model.named_parameters()}
    e, v = float(it.e.detach().abs().max()), float(it.v.detach().abs().max())
    s = float(it.token_scores.detach().abs().max())
    ws = float(w.abs().max()) * w.shape[0]
    attn = ws * s * e * e
    return {"W_l": ws * v, "W_v": ws * a["W_l"] * e, "W_q": attn * a["W_k"],
            "W_k": attn * a["W_q"], "W_s": ws * e,
            "W_e": ws * (a["W_l"] * a["W_v"] + s * e * a["W_q"] * a["W_k"] + a.get("W_s", 0.0))}


def _batch(model, docs):
    ids = model.check_ids(model.collate([d.tolist() for d in docs]))
    uniq, index = torch.unique(ids, return_inverse=True)
    return ids, uniq, index, model.pad_mask(ids)


@examples(80)
@given(spec=models(n_classes=(1, 2, 3), skip=(False, True)),
       docs=st.lists(documents(), min_size=1, max_size=4), seed=st.integers(0, 2**16))
def test_forward_rows_is_forward_logits_and_gradients(spec, docs, seed):
    model = spec.build()
    ids, uniq, index, mask = _batch(model, docs)
    with torch.no_grad():
        it = model(ids, return_internals=True)
    scale = float(it.token_scores.abs().max()) + float(it.head_logits.abs().max())
    w = torch.randn(it.head_logits.shape, generator=torch.Generator().manual_seed(seed),
                    dtype=torch.float64)
    grad_scale = _gradient_scales(model, it, w)
    # reference: the model's forward, autograd with respect to the whole W_e
    model.zero_grad(set_to_none=True)
    ref = model(ids, per_head=True)
    (ref * w).sum().backward()
    ref_grads = {n: p.grad.clone() for n, p in model.named_parameters()}
    for forward in (type(model).forward_rows, ClassifierBase.forward_rows):   # override, default
        model.zero_grad(set_to_none=True)
        rows = model.W_e.detach()[uniq].clone().requires_grad_()
        out = forward(model, rows, index, mask, per_head=True)
        assert relative(out.detach(), ref.detach(), scale) < TOL
        assert relative(forward(model, rows, index, mask).detach(), ref.detach().mean(1),
                        scale) < TOL
        (out * w).sum().backward()
        g = ref_grads["W_e"]
        assert relative(rows.grad, g[uniq], grad_scale["W_e"]) < TOL
        assert not bool(g[~torch.isin(torch.arange(g.shape[0]), uniq)].any())  # rows unused
        for name, p in model.named_parameters():
            if name != "W_e":
                assert relative(p.grad, ref_grads[name], grad_scale[name]) < TOL, name


def test_forward_rows_refuses_a_batch_without_one_query_row(tiny):
    model = tiny.model
    ids = model.collate([[1, 5, 6], [1, 7]])
    uniq, index = torch.unique(ids, return_inverse=True)
    rows = model.W_e.detach()[uniq]
    index[1, 0] = index[0, 1]                      # the second document's query is another row
    with pytest.raises(ValueError, match="start with the same row"):
        model.forward_rows(rows, index, model.pad_mask(ids))


def test_default_forward_rows_of_the_multilayer_model():
    """The base class's ``forward_rows`` (forms e, then forward_embeddings) on the 6 x 6 model's
    architecture."""
    model = random_model(40, n_layers=2, d_value=4, max_len=16, init_range=0.1, residual=True,
                         norm="pre")
    ids = model.check_ids(model.collate([[1, 5, 9, 5, 30], [1, 3], [1, 39, 38, 4]]))
    uniq, index = torch.unique(ids, return_inverse=True)
    rows = model.W_e.detach()[uniq].clone().requires_grad_()
    out = model.forward_rows(rows, index, model.pad_mask(ids))
    ref = model(ids)
    assert relative(out.detach(), ref.detach()) < TOL
    out.sum().backward()
    ref.sum().backward()
    assert relative(rows.grad, model.W_e.grad[uniq]) < TOL
