"""The gradient theorem (paper, Section 4) in closed form, for torch models and SymPy models.

For the classifier of Section 2 and the logit ``f = f_c`` of class ``c`` (``target``), with
``w^(i) = W_l^(i)[c]`` the row of that logit in head ``i``, ``s_t^(i) = w^(i) . v_t^(i)`` the
token's score (chapter 1's per-token score), ``s~^(i) = w^(i) . v~^(i)`` the head's output and
``a_t^(i) = q_1 . k_t / sqrt(d_att)`` the attention logit (``alpha = softmax(a)``)::

    grad_{e_t} f = (1/K) sum_i alpha_t^(i) W_v^(i)T w^(i)T                            "value" term
                 + (1/K) sum_i alpha_t^(i) (s_t^(i) - s~^(i)) / sqrt(d_att) W_k^(i)T q_1^(i)   "key"
                 + [t = CLS] (1/K) sum_i sum_u alpha_u^(i) (s_u^(i) - s~^(i)) / sqrt(d_att)
                                                    W_q^(i)T k_u^(i)            "query" term

Only the first term is linear in the attention weights; its direction ``W_v^T w^T`` is made of
matrices attention does not depend on (``W_v``, ``W_l``), and the other two terms bring in the
token scores and ``W_k`` (``W_q`` for [CLS]).

Corollary (gradient times input): with ``e_t . W_v^T w^T = s_t`` and ``e_t . W_k^T q_1 =
sqrt(d_att) a_t``::

    e_t . grad_{e_t} f = (1/K) sum_i alpha_t^(i) [ s_t^(i) + (s_t^(i) - s~^(i)) a_t^(i) ]
                         + [t = CLS] (1/K) sum_i sum_u alpha_u^(i) (s_u^(i) - s~^(i)) a_u^(i)

Conventions. Code positions are 0-based: ``[CLS]`` is position 0 (the paper's ``t = 1``), the
paper's ``t >= 2`` are positions ``>= 1``. Arrays are ``(B, T, d_embed)`` with ``T`` the length
after the model's own padding (``model.check_ids``; ``max_len`` in ``padding="unk"`` mode).
Padded positions (``padding="mask"``) have ``alpha = 0`` and get an exactly zero gradient, as the
automatic derivative does (the logit does not depend on them).
"""

from __future__ import annotations

import math

from typing import TYPE_CHECKING

import numpy as np
import torch
from torch import Tensor

from .. import validate
from ..explainers import gradient as autodiff_gradient
from ..model.interface import iter_batches
from ..model.single_layer import AttentionClassifier, Internals

if TYPE_CHECKING:        # SymPy is imported by the functions that use it: 0.6 s that a process
    import sympy as sp   # computing explanations (a study's worker, a CLI run) never needs

    from ..model.symbolic import SymbolicModel

TERMS = ("value", "key", "query")


def _single_layer(model) -> AttentionClassifier:
    """The theorem's model: the single-layer classifier, else a TypeError saying what to pass."""
    if isinstance(model, AttentionClassifier):
        return model
    from ..model.textmodel import Pretrained

    if isinstance(model, Pretrained):
        hint = ("pass pre.model (the classifier) and pre.encode(text) (its ids)"
                if isinstance(model.model, AttentionClassifier) else
                f"its model is a {type(model.model).__name__}, for which the theorem does not hold:"
                " use attnxai.explainers.gradient (automatic differentiation)")
        raise TypeError(f"the gradient theorem takes the single-layer AttentionClassifier and its "
                        f"ids, got a Pretrained: {hint}")
    raise TypeError(f"the gradient theorem (Section 4) is derived for the single-layer "
                    f"AttentionClassifier, got {type(model).__name__}: for another model use "
                    "attnxai.explainers.gradient (automatic differentiation)")


def _internals(model: AttentionClassifier, ids: Tensor) -> Internals:
    ids, mask = model.ids_and_mask(ids)
    with torch.no_grad():
        return model.internals(model.embed(ids), mask, ids=ids)


def gradient_terms(model: AttentionClassifier, ids: Tensor, target: int = 1) -> dict[str, Tensor]:
    """The three terms of the theorem, each (B, T, d_embed); their sum is
    :func:`gradient_closed_form`.

    ``"value"``: ``(1/K) sum_i alpha_t W_v^T w^T`` (linear in attention);
    ``"key"``: ``(1/K) sum_i alpha_t (s_t - s~) / sqrt(d_att) W_k^T q_1``;
    ``"query"``: the ``[CLS]`` query's own dependence, non-zero only at position 0.
    """
    model = _single_layer(model)
    target = validate.target(target, model.n_classes)
    it = _internals(model, ids)
    K = model.n_heads
    scale = 1.0 / math.sqrt(model.d_attn)
    w = model.W_l.detach()[:, target, :]                                  # (K, d_value)
    W_v, W_k, W_q = model.W_v.detach(), model.W_k.detach(), model.W_q.detach()
    alpha = it.alpha                                                      # (B, K, T)
    s = it.token_scores[..., target]                                      # (B, K, T)
    s_bar = it.head_scores[..., target]                                   # (B, K)
    # alpha_t (s_t - s~) / sqrt(d_att), zero on padding (alpha = 0 there, s finite)
    c = alpha * (s - s_bar[..., None]) * scale                           # (B, K, T)
    u_value = torch.einsum("kvd,kv->kd", W_v, w)                          # W_v^T w^T  (K, d)
    u_key = torch.einsum("kad,bka->bkd", W_k, it.q1)                      # W_k^T q_1  (B, K, d)
    value = torch.einsum("bkt,kd->btd", alpha, u_value) / K
    key = torch.einsum("bkt,bkd->btd", c, u_key) / K
    query = torch.zeros_like(value)
    query[:, 0] = torch.einsum("bkt,bkta,kad->bd", c, it.k, W_q) / K
    return {"value": value, "key": key, "query": query}


def gradient_closed_form(model: AttentionClassifier, ids: Tensor, target: int = 1) -> Tensor:
    """``grad_{e_t} f_target`` from the closed form: (B, T, d_embed), same call as
    :func:`attnxai.explainers.gradient` (automatic differentiation)."""
    terms = gradient_terms(model, ids, target)
    return terms["value"] + terms["key"] + terms["query"]


def gradient_x_input(model: AttentionClassifier, ids: Tensor, target: int = 1) -> Tensor:
    """The corollary: ``e_t . grad_{e_t} f`` without forming the gradient, (B, T) (0 on padding)."""
    model = _single_layer(model)
    target = validate.target(target, model.n_classes)
    it = _internals(model, ids)
    s = it.token_scores[..., target]
    s_bar = it.head_scores[..., target][..., None]
    a = torch.where(it.mask[:, None, :], it.scores, torch.zeros_like(it.scores))  # -inf -> 0
    per_token = (it.alpha * (s + (s - s_bar) * a)).mean(dim=1)                     # (B, T)
    cls_extra = (it.alpha * (s - s_bar) * a).sum(dim=2).mean(dim=1)                # (B,)
    per_token[:, 0] = per_token[:, 0] + cls_extra
    return per_token


def term_shares(terms: dict[str, Tensor], mask: Tensor | None = None) -> dict[str, Tensor]:
    """How much of the gradient each term carries, per token: (B, T) each.

    ``share[term] = <term_t, g_t> / ||g_t||^2`` with ``g_t`` the sum of the terms: the shares of a
    token sum to 1 (they split ``||g_t||^2`` exactly; a share can be negative or above 1 when terms
    point in opposite directions). NaN where ``mask`` is False or the gradient is zero.
    """
    g = sum(terms.values())
    sq = (g * g).sum(-1)
    out = {}
    for name, term in terms.items():
        share = (term * g).sum(-1) / sq
        bad = sq == 0 if mask is None else (~mask) | (sq == 0)
        out[name] = share.masked_fill(bad, float("nan"))
    return out


# ---------------------------------------------------------------------- SymPy
def symbolic_gradient(sm: SymbolicModel, t: int, target: int = 0) -> sp.Matrix:
    """The closed form for token ``t`` (0-based, 0 = [CLS]) of a :class:`SymbolicModel`, as a
    ``d_embed x 1`` matrix: what ``sm.f[target].diff(e_t)`` must equal."""
    import sympy as sp

    if not 0 <= t < sm.T:
        raise ValueError(f"token index {t} out of range for T={sm.T} (0-based, 0 = [CLS])")
    if not 0 <= target < sm.n_classes:
        raise ValueError(f"target class {target} does not exist: the model has {sm.n_classes} logits")
    d = sp.sqrt(sm.d_attn)
    out = sp.zeros(sm.d_embed, 1)
    for i in range(sm.n_heads):
        w = sm.W_l[i][target, :]                                  # 1 x d_value
        alpha = sm.alpha[i]
        s = [(w * sm.v[i][u])[0, 0] for u in range(sm.T)]
        s_bar = (w * sm.v_tilde[i])[0, 0]
        out += alpha[t] * sm.W_v[i].T * w.T
        out += alpha[t] * (s[t] - s_bar) / d * sm.W_k[i].T * sm.q1[i]
        if t == 0:
            for u in range(sm.T):
                out += alpha[u] * (s[u] - s_bar) / d * sm.W_q[i].T * sm.k[i][u]
    return out / sm.n_heads


def symbolic_autodiff(sm: SymbolicModel, t: int, target: int = 0) -> sp.Matrix:
    """``d f_target / d e_t`` by SymPy's differentiation (``d_embed x 1``)."""
    import sympy as sp

    return sp.Matrix([sp.diff(sm.f[target, 0], s) for s in sm.e[t]])


def symbolic_difference(sm: SymbolicModel, t: int, target: int = 0, *, simplify: bool = True) -> sp.Matrix:
    """``autodiff - closed form`` for token ``t``, simplified (use a small ``sm``: a few seconds
    for T=3, d_embed=2, d_attn=d_value=1, one head; it grows fast with the sizes)."""
    import sympy as sp

    diff = symbolic_autodiff(sm, t, target) - symbolic_gradient(sm, t, target)
    return diff.applyfunc(sp.simplify) if simplify else diff


def random_point(sm: SymbolicModel, seed: int = 0, digits: int = 50) -> dict[sp.Symbol, sp.Float]:
    """Every symbol of ``sm`` set to a random rational in [-2, 2] (step 1/10), as a ``digits``-digit
    float: a point at which to evaluate expressions exactly enough to see rounding at 1e-``digits``."""
    import sympy as sp

    rng = np.random.default_rng(seed)
    return {s: sp.Float(sp.Rational(int(rng.integers(-20, 21)), 10), digits) for s in sm.symbols()}


def check_at_random_points(sm: SymbolicModel, n_points: int = 1, seed: int = 0,
                           digits: int = 50) -> list[dict]:
    """``|autodiff - closed form|`` (largest coordinate) for every token and logit of ``sm`` at
    ``n_points`` random points, evaluated with ``digits`` significant digits. One row per
    (point, target, token): ``{"point", "target", "token", "max_abs_diff", "max_abs_grad"}``."""
    rows = []
    grads = {(c, t): (symbolic_autodiff(sm, t, c), symbolic_gradient(sm, t, c))
             for c in range(sm.n_classes) for t in range(sm.T)}
    for p in range(n_points):
        vals = random_point(sm, seed + p, digits)
        for (c, t), (auto, closed) in grads.items():
            a = auto.xreplace(vals).evalf(digits)
            b = closed.xreplace(vals).evalf(digits)
            rows.append({"point": p, "target": c, "token": t,
                         "max_abs_diff": float(max(abs(x) for x in a - b)),
                         "max_abs_grad": float(max(abs(x) for x in a))})
    return rows


def symbolic_gradient_x_input(sm: SymbolicModel, t: int, target: int = 0) -> sp.Expr:
    """The corollary for token ``t`` (0-based) of a :class:`SymbolicModel`: what
    ``e_t . d f_target / d e_t`` must equal, written with alpha, the token scores ``s`` and the
    attention logits ``a`` (no gradient in it)."""
    import sympy as sp

    if not 0 <= t < sm.T:
        raise ValueError(f"token index {t} out of range for T={sm.T} (0-based, 0 = [CLS])")
    if not 0 <= target < sm.n_classes:
        raise ValueError(f"target class {target} does not exist: the model has {sm.n_classes} logits")
    out = sp.Integer(0)
    for i in range(sm.n_heads):
        alpha, a = sm.alpha[i], sm.scores[i]
        s = [sm.token_scores[i][u][target, 0] for u in range(sm.T)]
        s_bar = sm.head_out[i][target, 0]
        out += alpha[t] * (s[t] + (s[t] - s_bar) * a[t])
        if t == 0:
            out += sum(alpha[u] * (s[u] - s_bar) * a[u] for u in range(sm.T))
    return out / sm.n_heads


# ---------------------------------------------------------------------- corpus
def corpus_terms(model: AttentionClassifier, seqs, target: int = 1, batch_size: int = 64, *,
                 include_cls: bool = False):
    """One row per token of the reviews ``seqs`` (id lists, each ``[CLS]`` + tokens): how the
    gradient splits into the theorem's terms. A :class:`pandas.DataFrame` with columns

    ``review``, ``position`` (0 = [CLS]), ``id``; ``alpha_avg``; ``g_l2`` (``||g_t||``);
    ``share_value``, ``share_key``, ``share_query`` (:func:`term_shares`, sum to 1);
    ``norm_value``, ``norm_key``, ``norm_query`` (each term's norm);
    ``g_avg`` and ``g_avg_value`` (G-avg and the value term's part of it, linear in the per-head
    attention); ``gxi`` and ``gxi_value`` (GxI and the value term's part, ``(1/K) sum_i alpha_t
    s_t``, chapter 1's per-token contribution to ``f``).
    """
    import pandas as pd

    model = _single_layer(model)
    target = validate.target(target, model.n_classes)
    frames = []
    for start, ids in iter_batches(model, seqs, batch_size):
        terms = gradient_terms(model, ids, target)
        ids_c = model.check_ids(ids)
        mask = model.pad_mask(ids_c).clone()
        if not include_cls:
            mask[:, 0] = False
        e = model.embed(ids_c).detach()
        g = terms["value"] + terms["key"] + terms["query"]
        shares = term_shares(terms, mask)
        with torch.no_grad():
            alpha = model.cls_attention(e, model.pad_mask(ids_c))[:, 0]
        b, t = mask.nonzero(as_tuple=True)
        cols = {"review": (b + start).numpy(), "position": t.numpy(), "id": ids_c[b, t].numpy(),
                "alpha_avg": alpha.mean(1)[b, t], "g_l2": g.norm(dim=-1)[b, t]}
        for name in TERMS:
            cols[f"share_{name}"] = shares[name][b, t]
            cols[f"norm_{name}"] = terms[name].norm(dim=-1)[b, t]
        cols["g_avg"] = g.mean(-1)[b, t]
        cols["g_avg_value"] = terms["value"].mean(-1)[b, t]
        cols["gxi"] = (g * e).sum(-1)[b, t]
        cols["gxi_value"] = (terms["value"] * e).sum(-1)[b, t]
        frames.append(pd.DataFrame({k: (v.double().numpy() if isinstance(v, Tensor) else v)
                                    for k, v in cols.items()}))
    return pd.concat(frames, ignore_index=True)


def compare_with_autodiff(model: AttentionClassifier, seqs, target: int = 1, batch_size: int = 32) -> dict:
    """Closed form against :func:`attnxai.explainers.gradient` on the reviews ``seqs`` (id lists).

    Returns ``reviews``, ``tokens`` (non-padding positions, [CLS] included), ``max_abs_diff``
    (largest ``|autodiff - closed|`` over every coordinate), ``max_abs_grad``, ``max_rel_review``
    (largest ``||autodiff - closed|| / ||autodiff||`` over reviews, Frobenius norms over the
    review's tokens) and ``max_rel_token`` (the same per token, over tokens whose gradient norm is
    at least 1e-8 times the review's largest, so that underflowing attention weights do not
    divide by ~0), ``max_abs_diff_gxi`` (the corollary :func:`gradient_x_input` against
    ``e_t . autodiff``) and ``max_abs_gxi``. Run it on a float64 model to see rounding level.
    """
    model = _single_layer(model)
    target = validate.target(target, model.n_classes)
    out = {"reviews": 0, "tokens": 0, "max_abs_diff": 0.0, "max_abs_grad": 0.0,
           "max_rel_review": 0.0, "max_rel_token": 0.0, "max_abs_diff_gxi": 0.0, "max_abs_gxi": 0.0}
    for _, ids in iter_batches(model, seqs, batch_size):
        auto, e = autodiff_gradient(model, ids, target, return_embeddings=True)
        closed = gradient_closed_form(model, ids, target)
        gxi = (auto * e).sum(-1)
        out["max_abs_diff_gxi"] = max(out["max_abs_diff_gxi"],
                                      (gxi - gradient_x_input(model, ids, target)).abs().max().item())
        out["max_abs_gxi"] = max(out["max_abs_gxi"], gxi.abs().max().item())
        diff = auto - closed
        mask = model.pad_mask(model.check_ids(ids))
        tok_norm, tok_diff = auto.norm(dim=-1), diff.norm(dim=-1)
        rev = diff.flatten(1).norm(dim=1) / auto.flatten(1).norm(dim=1)
        keep = mask & (tok_norm >= 1e-8 * tok_norm.amax(dim=1, keepdim=True))
        out["reviews"] += ids.shape[0]
        out["tokens"] += int(mask.sum())
        out["max_abs_diff"] = max(out["max_abs_diff"], diff.abs().max().item())
        out["max_abs_grad"] = max(out["max_abs_grad"], auto.abs().max().item())
        out["max_rel_review"] = max(out["max_rel_review"], rev.max().item())
        out["max_rel_token"] = max(out["max_rel_token"], (tok_diff[keep] / tok_norm[keep]).max().item())
    return out
