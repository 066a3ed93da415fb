"""Falsification tests of the results of chapters 1-4 and of the skip connection (chapter 8): each
tries to break its labelled statement on random float64 models (1 to 3 heads, both padding modes,
weights from 0.1 to 30, where attention underflows), random documents (one word, repeats, UNK)
and every logit. The marker ``falsifies`` names the statement's ``:label:``
(``tests/results/test_results_registry.py``); settings in ``tests/hypo.py``."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import event, given
from hypothesis import strategies as st
from hypo import documents, examples, models, relative, tensor

from attnxai import explainers, theory
from attnxai.theory import gradient_skip

#: Rounding allowance relative to the scale of the compared quantity (float64, short sums).
TOL = 1e-10


def _autograd_and_e(model, ids, target):
    return explainers.gradient(model, ids, target, return_embeddings=True)


@pytest.mark.falsifies("lem-token-scores")
@examples(120)
@given(spec=models(n_classes=(1, 2, 3)), ids=documents())
def test_heads_average_token_scores(spec, ids):
    model = spec.build()
    with torch.no_grad():
        it = model(tensor(ids), return_internals=True)
        fast = model(tensor(ids))
    per_token = (it.alpha[..., None] * it.token_scores).sum(2)             # sum_t alpha_t s_t
    assert relative(per_token, it.head_scores) < TOL
    f = per_token.mean(1)                                                 # (1/K) sum_i ...
    assert relative(f, it.logits) < TOL and relative(f, fast) < TOL
    # alpha is a convex combination: each head's output lies between its extreme token scores
    lo = it.token_scores.masked_fill(~it.mask[:, None, :, None], np.inf).amin(2)
    hi = it.token_scores.masked_fill(~it.mask[:, None, :, None], -np.inf).amax(2)
    slack = TOL * float(it.token_scores.abs().max())
    assert bool((it.head_scores >= lo - slack).all() and (it.head_scores <= hi + slack).all())


@pytest.mark.falsifies("prop-attention")
@examples(120)
@given(spec=models(), ids=documents(), other=st.integers(0, 2**16))
def test_attention_is_positive_normalised_and_blind_to_values(spec, ids, other):
    model = spec.build()
    T = tensor(ids)
    alpha = explainers.attention(model, T, "none")[0]                     # (K, T)
    valid = explainers.valid_mask(model, T)[0]
    a = alpha[:, valid]
    assert bool((a >= 0).all())
    assert relative(a.sum(-1), torch.ones(a.shape[0], dtype=a.dtype)) < 1e-12
    # alpha_t > 0 in exact arithmetic; in float64 wherever exp(score - max) does not underflow
    with torch.no_grad():
        s = model(T, return_internals=True).scores[0][:, valid]
    gap = s.max(-1, keepdim=True).values - s
    assert bool((a[gap < 700] > 0).all())
    event("some alpha underflowed to 0" if bool((a == 0).any()) else "every alpha > 0")
    # no dependence on W_v nor W_l: other values, same attention, bit for bit
    changed = spec.build()
    g = torch.Generator().manual_seed(other)
    with torch.no_grad():
        changed.W_v.copy_(torch.randn(changed.W_v.shape, generator=g, dtype=torch.float64))
        changed.W_l.copy_(torch.randn(changed.W_l.shape, generator=g, dtype=torch.float64))
    for reduce in ("mean", "max", "none"):
        assert torch.equal(explainers.attention(changed, T, reduce).nan_to_num(-1),
                           explainers.attention(model, T, reduce).nan_to_num(-1))
    flipped = explainers.flip_output_layer(model)
    with torch.no_grad():
        assert torch.equal(flipped(T), -model(T))                         # exact: negation
    assert torch.equal(explainers.attention(flipped, T, "none"), alpha[None])


@pytest.mark.falsifies("thm-gradient")
@examples(120)
@given(spec=models(n_classes=(1, 2, 3)), ids=documents(), target=st.integers(0, 2))
def test_gradient_closed_form_against_autograd(spec, ids, target):
    model = spec.build()
    target = target % model.n_classes
    T = tensor(ids)
    auto = explainers.gradient(model, T, target)
    closed = theory.gradient_closed_form(model, T, target)
    assert relative(closed, auto) < TOL
    terms = theory.gradient_terms(model, T, target)
    assert float(terms["query"][:, 1:].abs().max()) == 0.0              # the query term: [CLS] only


@pytest.mark.falsifies("cor-gxi")
@examples(120)
@given(spec=models(n_classes=(1, 2)), ids=documents(), target=st.integers(0, 1))
def test_gradient_times_input_corollary(spec, ids, target):
    model = spec.build()
    target = target % model.n_classes
    T = tensor(ids)
    grad, e = _autograd_and_e(model, T, target)
    auto = (grad * e).sum(-1)
    closed = theory.gradient_x_input(model, T, target)
    assert relative(closed, auto) < TOL
    # its first part is the token's share of f (chapter 1's lemma): the value term's G x I
    value = (theory.gradient_terms(model, T, target)["value"] * e).sum(-1)
    with torch.no_grad():
        it = model(T, return_internals=True)
    share = (it.alpha * it.token_scores[..., target]).mean(1)
    assert relative(value, share) < TOL


@pytest.mark.falsifies("thm-skip-gradient")
@examples(100)
@given(spec=models(n_classes=(1, 2, 3), skip=(True,)), ids=documents(), target=st.integers(0, 2))
def test_skip_gradient_against_autograd(spec, ids, target):
    model = spec.build()
    target = target % model.n_classes
    T = tensor(ids)
    auto = explainers.gradient(model, T, target)
    assert relative(gradient_skip.gradient_closed_form(model, T, target), auto) < TOL
    plain = theory.gradient_closed_form(model, T, target)                 # the theorem of ch. 3
    extra = auto - plain                                                  # what the skip adds
    assert float(extra[0, 1:].abs().amax()) <= TOL * float(auto.abs().max())
    assert relative(extra[0, 0], model.W_s.detach()[target]) < TOL


@pytest.mark.falsifies("cor-skip-offset")
@examples(80)
@given(spec=models(n_classes=(2, 3), skip=(True,)), docs=st.lists(documents(), min_size=1,
                                                                   max_size=3))
def test_skip_connection_is_a_constant_offset(spec, docs):
    with_skip, without = spec.build(), spec.without_skip()
    ids = with_skip.collate([d.tolist() for d in docs])
    b = (with_skip.W_e[with_skip.cls_id] + with_skip.positions(1)[0]) @ with_skip.W_s.T
    with torch.no_grad():
        b = b.detach()
        logits = with_skip(ids)
        assert relative(logits, without(ids) + b) < TOL                   # f_skip = f + b
        heads = with_skip(ids, per_head=True)
        it = with_skip(ids, return_internals=True)
    assert relative(heads, it.head_logits) < TOL                          # one per-head output
    assert relative(it.head_logits - it.head_scores, b.expand_as(heads)) < TOL
    assert relative(heads.mean(1), logits) < TOL
    for reduce in ("mean", "max"):                                        # the same attention
        assert torch.equal(explainers.attention(with_skip, ids, reduce).nan_to_num(0),
                           explainers.attention(without, ids, reduce).nan_to_num(0))
    for c in range(with_skip.n_classes):                                  # every word's gradient
        gs, gw = (explainers.gradient(m, ids, c) for m in (with_skip, without))
        assert relative(gs[:, 1:], gw[:, 1:]) < TOL
