"""LIME's limit through the kept fraction (the profile form), every feature kept independently
with probability ``p``.

:func:`attnxai.theory.lime_text.beta_from_effects` writes LIME's limit, to first order in
``1/d`` (exactly for linear models), through the effect ``delta_j(p) = E[f | z_j = 1] -
E[f | z_j = 0]`` and the mean ``Phi(p) = E[f]`` when every feature is kept independently with
probability ``p``, averaged over lime's kernel-weighted law of ``p``. For one head ``f = M/N``:

* ``method="integral"``: ``E[M/N] = int_0^inf E[M exp(-lambda N)] d lambda`` and, features being
  independent, ``E[exp(-lambda N)]`` is a product over features (replacement, and deletion with
  every token at a fixed position: :func:`~attnxai.theory.lime_kernels.bernoulli_sums`), or
  the chain of :mod:`attnxai.theory.lime_chain` with weights ``p``, ``1 - p`` (deletion with the
  positions' exact law, :func:`~attnxai.theory.lime_chain.chain_profile`).
* ``method="meanfield"``: numerator and denominator replaced by their means (first order in
  ``1/d``; it fails when a few tokens carry most of a head's attention, as in trained models).

Deletion's positions: ``"exact"`` (the chain: a kept token's position is ``1 +`` the number of
tokens kept before it; a repeated word's occurrences are then treated as separate features),
``"binomial"`` (independent binomial positions, a word's occurrences kept together,
:mod:`~attnxai.theory.lime_binomial`), ``"mean"`` (every kept token at its mean position ``1 + o_t + p n_t``,
``o_t`` earlier occurrences of its own word, ``n_t`` earlier tokens of other words; the sinusoidal
code is then evaluated between integers). The mean field uses the exact mean of ``N`` and ``M``
(positions averaged over ``Binomial(n_t, p)``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..threads import one_blas_thread
from .lime_binomial import binomial_effects
from .lime_chain import chain_profile, replace_terms
from .lime_inputs import Tables, token_layout
from .lime_kernels import BernoulliTerms, ProfileNodes, bernoulli_sums, binomial_means
from .lime_quadrature import lambda_rule_profile
from .lime_text import RemovalLaw

__all__ = ["Effects", "EXPECTATION_METHODS", "POSITIONS", "profile_effects"]

#: How E[M/N] is computed (``method=``).
EXPECTATION_METHODS = ("integral", "meanfield")
#: Where deletion puts a kept token (``positions=``): the chain's exact law (distinct words),
#: independent binomial positions (:mod:`~attnxai.theory.lime_binomial`), the mean position.
POSITIONS = ("exact", "binomial", "mean")


@dataclass
class Effects:
    """Conditional effects at the values of ``p`` of ``law``: ``delta`` (n_p, d) the effect of
    keeping each feature, ``phi`` (n_p,) the mean output, per head too (``delta_heads``
    (K, n_p, d), ``phi_heads`` (K, n_p)). For deletion with exact positions the features are
    the document's tokens (``features`` says which positions each column covers)."""

    law: RemovalLaw
    delta: np.ndarray
    phi: np.ndarray
    delta_heads: np.ndarray
    phi_heads: np.ndarray
    features: list[np.ndarray] = field(default_factory=list)


def _feature_sums(values: np.ndarray, owner: np.ndarray, d: int) -> np.ndarray:
    """Sum ``values`` (per token) by feature, in token order."""
    return np.bincount(owner, values, d)


def _others(x: np.ndarray) -> np.ndarray:
    """``sum_{k != j} x_k`` for every j, by prefix and suffix sums (no cancellation)."""
    pre = np.concatenate([[0.0], np.cumsum(x)[:-1]])
    suf = np.concatenate([np.cumsum(x[::-1])[::-1][1:], [0.0]])
    return pre + suf


def _meanfield(gk, hk, gr, hr, g0, h0, p):
    NR = g0 + _others(p * gk + (1 - p) * gr)
    MR = h0 + _others(p * hk + (1 - p) * hr)
    N = g0 + float(np.sum(p * gk + (1 - p) * gr))
    M = h0 + float(np.sum(p * hk + (1 - p) * hr))
    return (MR + hk) / (NR + gk) - (MR + hr) / (NR + gr), M / N


def _delete_node_terms(tb: Tables, p: float, layout, positions: str):
    """Deletion, every head: per token, the kept contributions ``(g, h)`` (K, T-1) at kept
    fraction ``p`` (positions averaged over Binomial(n_t, p), or at the mean position), and
    [CLS]'s ``(g0, h0)`` (K,), at a common scale per head."""
    owner, o, n_other = layout
    a = tb.a_tok[:, 1:]
    amax = a.max(axis=1, keepdims=True)
    ea = np.exp(a - amax)
    bmax = tb.b.max(axis=1, keepdims=True)
    if positions == "mean":
        bb, rr = tb.pos_scores(1 + o + p * n_other)
        EB = np.exp(bb - bmax)
        EBR = EB * rr
    else:
        eb = np.ascontiguousarray(np.exp(tb.b - bmax))
        EB, EBR = np.empty((tb.n_heads, o.size)), np.empty((tb.n_heads, o.size))
        binomial_means(eb, eb * tb.r, 1 + o, n_other, float(p), EB, EBR)
    g = ea * EB
    h = ea * (tb.c_tok[:, 1:] * EB + EBR)
    g0 = np.exp(tb.a_tok[:, 0] + tb.b[:, 0] - amax[:, 0] - bmax[:, 0])
    return g, h, g0, g0 * (tb.c_tok[:, 0] + tb.r[:, 0])


def profile_effects(tb: Tables, feats: list[np.ndarray], removal: str, nodes: np.ndarray, *,
                    positions: str = "exact", method: str = "integral",
                    lambda_step: float = 0.7, ksub: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """``delta`` (K, n_nodes, d') and ``Phi`` (K, n_nodes) at the kept fractions ``nodes``
    (n_nodes,) in [0, 1] (those of a :class:`~attnxai.theory.lime_quadrature.ProfileWeights`,
    or Gauss-Legendre nodes for the Shapley value, :mod:`~attnxai.theory.shapley_values`). ``d'`` is the
    number of features, except deletion with ``positions="exact"`` and ``method="integral"``
    (the chain), where the columns are the document's tokens."""
    K, T, d = tb.n_heads, tb.T, len(feats)
    nodes = np.ascontiguousarray(nodes, dtype=np.float64)
    delta = np.zeros((K, nodes.size, d))
    phi = np.zeros((K, nodes.size))
    if removal == "delete" and positions == "exact" and method == "integral":
        return chain_profile(tb, nodes, ksub)
    if removal == "delete" and positions == "binomial" and method == "integral":
        return binomial_effects(tb, feats, nodes, ksub)
    layout = token_layout(feats, T) if removal == "delete" else None
    if removal == "delete":
        where = "mean" if positions == "mean" else "binomial"
        rows = [_delete_node_terms(tb, p, layout, where) for p in nodes]
        G = np.stack([np.stack([_feature_sums(r[0][k], layout[0], d) for r in rows])
                      for k in range(K)])                                  # (K, nodes, d)
        Hs = np.stack([np.stack([_feature_sums(r[1][k], layout[0], d) for r in rows])
                       for k in range(K)])
        g0s, h0s = rows[0][2], rows[0][3]
    with one_blas_thread():
        for k in range(K):
            if removal == "replace":
                tm = replace_terms(tb, feats, k)
                gk, hk, gr, hr, g0, h0 = (tm[x] for x in ("gk", "hk", "gr", "hr", "g0", "h0"))
                if method == "meanfield":
                    for i, p in enumerate(nodes):
                        delta[k, i], phi[k, i] = _meanfield(gk, hk, gr, hr, g0, h0, p)
                    continue
                rule = lambda_rule_profile(tm["n_min"], tm["n_max"], lambda_step)
                bernoulli_sums(BernoulliTerms(gk[None], hk[None], gr, hr, h0),
                               ProfileNodes(nodes, rule.lam, rule.with_offset(g0)),
                               delta[k], phi[k])
                continue
            zeros = np.zeros(d)
            g0, h0 = float(g0s[k]), float(h0s[k])
            if method == "meanfield":
                for i, p in enumerate(nodes):
                    delta[k, i], phi[k, i] = _meanfield(G[k, i], Hs[k, i], zeros, zeros, g0, h0, p)
                continue
            # every configuration's N lies between g0 (all removed) and all kept at the max
            rule = lambda_rule_profile(g0, g0 + float(G[k].max(0).sum()), lambda_step)
            bernoulli_sums(BernoulliTerms(G[k], Hs[k], zeros, zeros, h0),
                           ProfileNodes(nodes, rule.lam, rule.with_offset(g0)), delta[k], phi[k])
    return delta, phi
