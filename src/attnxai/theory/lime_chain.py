"""LIME's exact large-sample limit on the attention classifier by dynamic programming over the
number of tokens kept so far.

**The chain.** Read the document from left to right. With deletion (``bow=True``), a kept token
lands at position ``1 + c``, ``c`` = the number of tokens kept before it: its contribution
``G_t(1 + c) = exp(a_t + b(1 + c))`` to a head's softmax denominator ``N`` and
``G_t(1 + c) (c_t + r(1 + c))`` to its numerator ``M`` depend on the past only through ``c``.
With replacement (``bow=False``) nothing moves and ``c`` only counts. For a fixed ``lambda``,
``exp(-lambda N)`` is a product over tokens, so the sums over the ``2^d`` perturbations that LIME's
limit needs are sums over paths of a chain whose state is ``c``: a forward pass (``T^2/2``
states) gives them for the whole document, a backward pass for every "token t kept" at once.
With ``1/N = int exp(-lambda N) d lambda`` (:mod:`~attnxai.theory.lime_quadrature`) this gives
``E[M/N]``-type expectations, hence ``f``'s, exactly.

**The laws.** lime draws the number ``s`` of removed features uniformly in ``1..d`` and the removed
set uniformly given ``s``; the kernel weights every sample by ``pi(s)``. A subset ``S`` of kept
features then carries the weight ``omega(|S|) = pi(d - |S|) / (d C(d, |S|))``, which depends only
on its size: the final state of the chain. So (``law="lime"``)

    Gamma_0 = E[pi f] = sum_S omega(|S|) f(S),   Gamma_j = E[pi z_j f] = sum_{S ni j} omega(|S|) f(S)

come out of one forward-backward pass per lambda node, and ``beta = Sigma^{-1} Gamma``
(:func:`attnxai.theory.lime_text.sigma_inverse`, in closed form) is LIME's limit with no
approximation: no ``O(1/d)`` term, any kernel width. Independent removal (every feature kept with
probability ``p``) is the same chain with weights ``p`` and ``1 - p`` per step
(:func:`chain_profile`).

**Where it is exact.** Replacement: always (features are positions; a feature grouping several
positions is one step of the chain with their summed contributions). Deletion: when the
document's words are distinct (each feature is one token). A word that occurs several times is
deleted everywhere at once, which a chain whose state is a count cannot follow: the chain then
runs over the *tokens*, as if each occurrence were its own feature (lime's law over the ``T - 1``
tokens), and a word's coefficient is the sum of its tokens' (exact for a model linear in the
tokens; chapter 6 measures the error otherwise).

Cost: ``O(T^2)`` per lambda node and head, about 30 nodes (:mod:`attnxai.theory.lime_kernels`).
"""

from __future__ import annotations

import numpy as np

from ..threads import one_blas_thread
from .lime_inputs import Tables, feature_owner
from .lime_kernels import ChainLaw, DeleteTerms, ReplaceTerms, chain_delete, chain_replace
from .lime_quadrature import lambda_rule_doubling, lambda_rule_profile
from .lime_text import SIGMA_RTOL, moments, removal_law

__all__ = ["chain_gammas", "chain_profile", "chain_sums", "delete_terms", "lime_weights",
           "replace_terms", "solve_sigma"]


def lime_weights(d: int, kernel_width: float) -> np.ndarray:
    """``omega_bar[m] = P(m kept) pi(d - m) = pi(d - m) / d`` for ``m = 0..d`` (``m = d``, the
    document itself, is sample 0: weight 0 in the limit)."""
    law = removal_law(d, kernel_width)
    om = np.zeros(d + 1)
    om[(d - law.s).astype(int)] = law.weight / d
    return om


def delete_terms(tb: Tables, k: int) -> dict:
    """Head ``k``'s per-token and per-position terms for deletion, at a common scale: token ``t``
    (1..n) at position ``q`` contributes ``ea[t-1] eb[q]`` and ``ea[t-1] (eb[q] cw[t-1] +
    ebr[q])``; [CLS] ``g0``, ``h0``; ``n_min``, ``n_max`` bound every configuration's
    denominator."""
    n = tb.T - 1
    a, b = tb.a_tok[k, 1:], tb.b[k, :n + 1]
    amax, bmax = a.max(), b[1:].max()
    ea = np.exp(a - amax)
    with np.errstate(over="ignore"):     # an infinite [CLS] share is refused by the lambda rule
        eb = np.exp(b - bmax)
        g0 = float(np.exp(tb.a_tok[k, 0] + b[0] - amax - bmax))
    eb[0] = 0.0
    h0 = g0 * float(tb.c_tok[k, 0] + tb.r[k, 0])
    ebr = eb * tb.r[k, :n + 1]
    best = np.maximum.accumulate(eb[1:])               # max over positions 1..t
    return {"ea": ea, "cw": np.ascontiguousarray(tb.c_tok[k, 1:]), "eb": eb, "ebr": ebr,
            "g0": g0, "h0": h0, "n_min": g0, "n_max": g0 + float(np.sum(ea * best))}


def _delete(tm: dict) -> DeleteTerms:
    """The kernel's :class:`~attnxai.theory.lime_kernels.DeleteTerms` of :func:`delete_terms`."""
    return DeleteTerms(tm["ea"], tm["cw"], tm["eb"], tm["ebr"], tm["h0"])


def replace_terms(tb: Tables, feats: list[np.ndarray], k: int) -> dict:
    """Head ``k``'s per-feature terms for replacement by UNK in place (positions fixed): kept
    ``gk``, ``hk`` and replaced ``gr``, ``hr`` (summed over the feature's positions), [CLS] (and
    a ``padding="unk"`` model's UNK fill, a constant part) ``g0``, ``h0``, at a common scale."""
    T = tb.T
    pos = np.arange(T)
    s_tok = tb.a_tok[k] + tb.b[k, pos]
    s_unk = tb.a_unk[k] + tb.b[k, pos]
    # (position 0 holds [CLS], never UNK: its UNK score must not set the scale, or every real
    # term could underflow against it)
    shift = max(s_tok.max(), s_unk[1:].max(initial=-np.inf))
    G, Gu = np.exp(s_tok - shift), np.exp(s_unk[1:] - shift)   # Gu[t - 1]: position t
    H, Hu = G * (tb.c_tok[k] + tb.r[k, pos]), Gu * (tb.c_unk[k] + tb.r[k, pos[1:]])
    g0, h0 = float(G[0]), float(H[0])
    if tb.padding == "unk":     # UNK padding up to max_len: a constant part
        pp = np.arange(T, tb.max_len)
        gp = np.exp(tb.a_unk[k] + tb.b[k, pp] - shift)
        g0 += float(gp.sum())
        h0 += float((gp * (tb.c_unk[k] + tb.r[k, pp])).sum())
    owner = feature_owner(feats, T)
    d = len(feats)
    out = {"gk": np.bincount(owner, G[1:], d), "hk": np.bincount(owner, H[1:], d),
           "gr": np.bincount(owner, Gu, d), "hr": np.bincount(owner, Hu, d),
           "g0": g0, "h0": h0}
    out["n_min"] = g0 + float(np.minimum(out["gk"], out["gr"]).sum())
    out["n_max"] = g0 + float(np.maximum(out["gk"], out["gr"]).sum())
    return out


def chain_sums(tb: Tables, feats: list[np.ndarray], removal: str, omega: np.ndarray,
               ksub: int = 1, lambda_step: float | None = None) -> np.ndarray:
    """The chain under a law of the kept set's size, for every head: (K, n + 1), ``[sum_m
    omega_m A_m, on_1, ..., on_n]`` with ``A_m`` the mean output over kept sets of size ``m`` and
    ``on_t = sum_m omega_m (m / n) B_m(t)``, ``B_m(t)`` the mean over those containing step
    ``t`` (deletion: the T - 1 tokens; replacement: the features). ``omega`` (n + 1,): lime's law
    (:func:`lime_weights`) for its limit, the Shapley weights for the Shapley value
    (:func:`attnxai.theory.shapley_values.size_weights`).

    Deletion uses the doubling rule (``h = log(2)/ksub``); replacement uses the doubling nodes
    too, or the profile rule of step ``lambda_step`` when given."""
    K = tb.n_heads
    n = tb.T - 1 if removal == "delete" else len(feats)
    omega = np.asarray(omega, dtype=np.float64)
    if omega.shape != (n + 1,):
        raise ValueError(f"omega must have shape ({n + 1},), one weight per size, got {omega.shape}")
    out = np.zeros((K, n + 1))
    dummy = np.zeros(n + 1)
    with one_blas_thread():
        for k in range(K):
            if removal == "delete":
                tm = delete_terms(tb, k)
                rule = lambda_rule_doubling(tm["n_min"], tm["n_max"], ksub)
                chain_delete(_delete(tm), ChainLaw(omega, -1.0, rule.lam,
                                                   rule.with_offset(tm["g0"]), rule.ksub),
                             out[k], dummy)
            else:
                tm = replace_terms(tb, feats, k)
                rule = (lambda_rule_profile(tm["n_min"], tm["n_max"], lambda_step)
                        if lambda_step else lambda_rule_doubling(tm["n_min"], tm["n_max"], ksub))
                chain_replace(ReplaceTerms(tm["gk"], tm["hk"], tm["gr"], tm["hr"], tm["h0"]),
                              ChainLaw(omega, -1.0, rule.lam, rule.with_offset(tm["g0"])),
                              out[k], dummy)
    return out


def chain_gammas(tb: Tables, feats: list[np.ndarray], removal: str, kernel_width: float,
                 ksub: int = 1, lambda_step: float | None = None) -> np.ndarray:
    """``Gamma`` (K, n + 1) under lime's law for every head: ``[E[pi f], E[pi z_1 f], ...]`` over
    the chain's steps (:func:`chain_sums` with lime's weights)."""
    n = tb.T - 1 if removal == "delete" else len(feats)
    return chain_sums(tb, feats, removal, lime_weights(n, kernel_width), ksub, lambda_step)


def solve_sigma(gamma: np.ndarray, kernel_width: float) -> np.ndarray:
    """``beta = Sigma^{-1} Gamma`` (coefficients only) for every row of ``gamma`` (K, d + 1), by
    :func:`attnxai.theory.lime_text.sigma_inverse`'s closed form (no matrix, fixed-order sums).

    Rows at once: each row's sum is numpy's pairwise sum over that row alone, in a C-contiguous
    copy (the same bits as ``np.sum`` of the row by itself, whatever the layout of ``gamma``),
    and the rest is elementwise, so a row's result does not depend on the others."""
    gamma = np.asarray(gamma, dtype=np.float64)
    if gamma.ndim != 2:
        raise ValueError(f"gamma must be (K, d + 1), got shape {gamma.shape}")
    d = gamma.shape[1] - 1
    if d < 2:
        raise ValueError("d = 1: a single feature is always removed, LIME's fit is degenerate "
                         "(Sigma is singular)")
    mo = moments(d, kernel_width)
    a, b, m, a0 = mo.a, mo.b, mo.m, mo.alpha0
    c = a + d * b
    if not c > SIGMA_RTOL * a:
        raise ValueError(f"Sigma is numerically singular for d={d}, kernel_width={kernel_width}: "
                         "the kernel puts all the weight on one number of removed features "
                         "(the other weights underflow)")
    gz = np.ascontiguousarray(gamma[:, 1:])
    common = -m / c * gamma[:, 0] - b / (a * c) * np.sum(gz, axis=1)
    return (common[:, None] + gz / a) / a0


def chain_profile(tb: Tables, nodes: np.ndarray, ksub: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Deletion, independent removal: at every node ``p``, ``delta_t(p) = E[f | z_t = 1] -
    E[f | z_t = 0]`` (K, n_nodes, T - 1) and ``Phi(p) = E[f]`` (K, n_nodes), each token kept
    independently with probability ``p`` (exact for distinct words; one chain per node)."""
    K, n = tb.n_heads, tb.T - 1
    delta = np.zeros((K, nodes.size, n))
    phi = np.zeros((K, nodes.size))
    ones = np.ones(n + 1)
    with one_blas_thread():
        for k in range(K):
            tm = delete_terms(tb, k)
            rule = lambda_rule_doubling(tm["n_min"], tm["n_max"], ksub)
            wts = rule.with_offset(tm["g0"])
            for i, p in enumerate(nodes):
                on, off = np.zeros(n + 1), np.zeros(n + 1)
                chain_delete(_delete(tm), ChainLaw(ones, float(min(max(p, 0.0), 1.0)), rule.lam,
                                                   wts, rule.ksub), on, off)
                delta[k, i] = on[1:] - off[1:]
                phi[k, i] = on[0]
    return delta, phi
