"""Integrated Gradients of the attention classifier in closed form: the gradient theorem
(Section 4) integrated along the straight path from a baseline.

**Baseline and path.** The baseline replaces every token's embedding by UNK's at the same
position, ``e0_t = W_e[UNK] + p_t`` (``[CLS]`` stays: it is never removed), so the path
``e(sigma) = e0 + sigma (e - e0)`` moves only the word part, by ``Delta_t = W_e[x_t] - W_e[UNK]``.
Along it every head's attention logit and value score of a token are affine in ``sigma``::

    s_t(sigma) = s0_t + sigma Delta s_t,     Delta s_t = Delta_t . W_k^T q_1 / sqrt(d_att)
    u_t(sigma) = u0_t + sigma Delta u_t,     Delta u_t = Delta_t . W_v^T w^T

and the gradient theorem, dotted with ``Delta_t``, gives the path derivative token by token::

    Delta_t . grad_{e_t} f(e(sigma)) = (1/K) sum_i alpha_t(sigma) [Delta u_t + Delta s_t
                                        (u_t(sigma) - F_i(sigma))],  F_i = sum_t alpha_t u_t

(the query term vanishes: ``[CLS]`` does not move). So ::

    IG_t = int_0^1 Delta_t . grad_{e_t} f(e(sigma)) d sigma,     sum_t IG_t = f(x) - f(baseline)

(completeness: the terms add up to ``d f(e(sigma)) / d sigma``). The integrand is a ratio of
sums of exponentials of affine functions of ``sigma``, analytic on [0, 1], so Gauss-Legendre in
``sigma`` converges geometrically; :func:`integrated_gradients` doubles the nodes from 16 until
two rules agree to ``tol`` (relative to the largest attribution) and returns the finer one, with
that difference as its error estimate. Each node costs ``O(K T)`` (no network evaluation).

The baseline's output is that of the document with every word replaced by UNK: the same
``v(empty)`` as the replacement game of :mod:`attnxai.theory.shapley_values`, whose Shapley values add
up to the same difference.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import validate
from ..model.single_layer import AttentionClassifier
from ..model.textmodel import Pretrained
from .lime_inputs import Tables, feature_owner, resolve, tables
from .shapley_weights import gauss_nodes

__all__ = ["IntegratedGradients", "MAX_NODES", "integrated_gradients", "path_terms"]

#: The most nodes :func:`integrated_gradients` tries before refusing (a clear error, not a
#: silently unconverged answer).
MAX_NODES = 4096
_FIRST = 16


@dataclass(frozen=True)
class IntegratedGradients:
    """The attributions of one document: ``tokens`` (n,) one per token after ``[CLS]``, ``words``
    (d,) their sums over each feature's tokens (lime's words, ``bow=True`` order), ``heads``
    (K, n) per head's output (their mean is ``tokens``); ``output`` and ``baseline_output`` the
    logit at both ends of the path; ``n_nodes`` the Gauss-Legendre nodes used; ``error`` the
    largest change of an attribution from ``n_nodes / 2`` nodes (an upper estimate of the
    quadrature error)."""

    tokens: np.ndarray
    words: np.ndarray
    heads: np.ndarray
    output: float
    baseline_output: float
    n_nodes: int
    error: float

    @property
    def completeness_gap(self) -> float:
        """``sum_t IG_t - (f(x) - f(baseline))`` (0 up to quadrature and rounding)."""
        return float(self.tokens.sum() - (self.output - self.baseline_output))


def path_terms(tb: Tables) -> dict[str, np.ndarray]:
    """Per head and position (K, T'), ``[CLS]`` first and, for ``padding="unk"``, the UNK fill
    after the document (``Delta = 0`` there): the baseline's logits ``s0`` and value scores
    ``u0``, and their slopes ``ds``, ``du`` along the path."""
    T, pos = tb.T, np.arange(tb.T)
    s1, u1 = tb.a_tok + tb.b[:, pos], tb.c_tok + tb.r[:, pos]
    s0, u0 = tb.a_unk[:, None] + tb.b[:, pos], tb.c_unk[:, None] + tb.r[:, pos]
    s0[:, 0], u0[:, 0] = s1[:, 0], u1[:, 0]                       # [CLS] does not move
    ds, du = s1 - s0, u1 - u0
    unk = tb.ids == tb.projections.model.unk_id        # UNK does not move: exactly 0, not the
    ds[:, unk], du[:, unk] = 0.0, 0.0                  # rounding of two products of one vector
    if tb.padding == "unk":
        pp = np.arange(T, tb.max_len)
        fill_s, fill_u = tb.a_unk[:, None] + tb.b[:, pp], tb.c_unk[:, None] + tb.r[:, pp]
        zero = np.zeros_like(fill_s)
        s0, u0 = np.concatenate([s0, fill_s], 1), np.concatenate([u0, fill_u], 1)
        ds, du = np.concatenate([ds, zero], 1), np.concatenate([du, zero], 1)
    return {"s0": s0, "u0": u0, "ds": ds, "du": du}


def _rule(terms: dict[str, np.ndarray], n: int) -> np.ndarray:
    """(K, T') the Gauss-Legendre rule with ``n`` nodes of every head's path derivative."""
    x, w = gauss_nodes(n)
    out = np.zeros_like(terms["s0"])
    s0, u0, ds, du = terms["s0"], terms["u0"], terms["ds"], terms["du"]
    for lo in range(0, n, 64):                     # blocks of nodes: (64, K, T') at most
        sig = x[lo:lo + 64, None, None]
        s = s0 + sig * ds
        e = np.exp(s - s.max(axis=2, keepdims=True))
        alpha = e / e.sum(axis=2, keepdims=True)
        u = u0 + sig * du
        F = (alpha * u).sum(axis=2, keepdims=True)
        out += np.einsum("i,ikt->kt", w[lo:lo + 64], alpha * (du + ds * (u - F)))
    return out


def _head_outputs(terms: dict[str, np.ndarray], sigma: float) -> np.ndarray:
    s = terms["s0"] + sigma * terms["ds"]
    e = np.exp(s - s.max(axis=1, keepdims=True))
    return (e * (terms["u0"] + sigma * terms["du"])).sum(axis=1) / e.sum(axis=1)


def integrated_gradients(model: AttentionClassifier | Pretrained, ids, *, target: int = 1,
                         n_nodes: int | None = None, tol: float = 1e-12) -> IntegratedGradients:
    """Integrated Gradients from the UNK baseline (module docstring), in closed form.

    Inputs as :func:`attnxai.theory.lime_limit`: ``(pre, text)`` (``words`` then follow
    ``fastlime.explain_instance(pre, text).words``) or ``(pre.model, ids)``. ``n_nodes``: a fixed
    number of Gauss-Legendre nodes (``error`` still compares it with half as many); ``None``:
    doubled from 16 until the largest change is at most ``tol`` times the largest attribution.
    Raises ``ValueError`` if that needs more than :data:`MAX_NODES` nodes.
    """
    model, arr, feats = resolve(model, ids, True, None)
    tb = tables(model, arr, target)
    terms = path_terms(tb)
    if not (isinstance(tol, (int, float)) and not isinstance(tol, bool) and tol > 0):
        raise ValueError(f"tol must be a positive number, got {tol!r}")
    if n_nodes is not None:
        n = validate.positive_int(n_nodes, "n_nodes")
        fine = _rule(terms, n)
        coarse = _rule(terms, max(1, n // 2)) if n > 1 else fine
    else:
        n, coarse = _FIRST, _rule(terms, _FIRST // 2)
        fine = _rule(terms, n)
        while np.abs(fine - coarse).max() > tol * max(np.abs(fine).max(), 1e-300):
            if 2 * n > MAX_NODES:
                raise ValueError(
                    f"Integrated Gradients did not converge to tol={tol:g} within {MAX_NODES} "
                    f"nodes (last change {np.abs(fine - coarse).max():.3g}): the attention "
                    "logits move too steeply along the path; pass n_nodes or a larger tol")
            n, coarse = 2 * n, fine
            fine = _rule(terms, n)
    T = tb.T
    heads = fine[:, 1:T]
    tokens = heads.mean(axis=0)
    owner = feature_owner(feats, T)
    return IntegratedGradients(
        tokens=tokens, words=np.bincount(owner, tokens, len(feats)), heads=heads,
        output=float(_head_outputs(terms, 1.0).mean()),
        baseline_output=float(_head_outputs(terms, 0.0).mean()), n_nodes=n,
        error=float(np.abs(fine - coarse)[:, 1:T].mean(axis=0).max()))
