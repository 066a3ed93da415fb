"""Independent removal's compiled loops (:mod:`attnxai.theory.lime_independent`). One compiled
kernel family (:func:`attnxai.native.jit`; plain Python without numba, same numbers, much
slower): :func:`bernoulli_sums`, the product over features of
``p exp(-lambda G_j) + (1 - p) exp(-lambda G'_j)`` and its leave-one-out versions at every
(node p, node lambda), and :func:`fold_profile`, which folds the profile's sums into the
coefficients, with their named-tuple inputs.

Reproducibility (fixed order, one arena per call): :mod:`attnxai.theory.lime_kernels`.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ...native import REASSOCIATE, jit
from .arena import named_arena, views_as

__all__ = ["BernoulliTerms", "BernoulliWork", "ProfileNodes", "ProfileOut", "bernoulli_sums",
           "fold_profile"]


class BernoulliTerms(NamedTuple):
    """Independent removal at fixed positions: feature ``j`` adds ``(FGk, FHk)[i, j]`` when kept
    (one row per node ``i``, or a single row when it does not depend on the node) and
    ``(FGr, FHr)[j]`` when removed; ``h0``: the numerator of [CLS]."""

    FGk: np.ndarray    # (1 or n_nodes, d)
    FHk: np.ndarray
    FGr: np.ndarray    # (d,)
    FHr: np.ndarray
    h0: float


class ProfileNodes(NamedTuple):
    """The settings of a profile computation: the nodes ``p`` (n_nodes,) and the rule in
    ``lambda`` (``lam``, ``wts``: (L,) each, weights times ``exp(-lambda g0)``)."""

    nodes: np.ndarray
    lam: np.ndarray
    wts: np.ndarray


class ProfileOut(NamedTuple):
    """What a profile computation adds to: ``delta`` (n_nodes, d) and ``phi`` (n_nodes,)."""

    delta: np.ndarray
    phi: np.ndarray


class BernoulliWork(NamedTuple):
    """The per-feature buffers of :func:`bernoulli_sums` ((d,) each)."""

    KE: np.ndarray
    KH: np.ndarray
    RE: np.ndarray
    RH: np.ndarray
    inv: np.ndarray
    rat: np.ndarray
    Lv: np.ndarray


@jit(REASSOCIATE)
def _bernoulli_sums(terms, rule, out, work):
    """Independent removal (every feature kept with probability p, features independent): at
    each node ``p = nodes[i]``, ``delta[i, j] = E[f | z_j = 1] - E[f | z_j = 0]`` and
    ``phi[i] = E[f]`` for one head, ``f = M/N``, by ``E[M/N] = sum_l wts[l] E[M exp(-lambda_l
    (N - g0))]`` and the factorisation over features of ``E[exp(-lambda N)]``.

    Feature j adds ``(FGk, FHk)[i, j]`` when kept (``FGk.shape[0]`` is 1 when it does not depend
    on the node) and ``(FGr, FHr)[j]`` when removed. Each factor
    ``L_j = max(p exp(-lambda FGk) + (1 - p) exp(-lambda FGr), 1e-300)``; the product over features
    is carried as a mantissa and a power of 1e-200 (a log per (p, lambda), not per feature).
    Adds to ``delta`` and ``phi`` (:class:`BernoulliTerms`, :class:`ProfileNodes`,
    :class:`ProfileOut`, :class:`BernoulliWork`).
    """
    FGk, FHk, FGr, FHr, h0 = terms.FGk, terms.FHk, terms.FGr, terms.FHr, terms.h0
    nodes, lam, wts = rule.nodes, rule.lam, rule.wts
    delta, phi = out.delta, out.phi
    KE, KH, RE, RH = work.KE, work.KH, work.RE, work.RH
    inv, rat, Lv = work.inv, work.rat, work.Lv
    n_p = nodes.shape[0]
    d = FGr.shape[0]
    per_node = FGk.shape[0] > 1
    big = 1e200
    tiny = 1e-200
    log_tiny = math.log(tiny)
    for l in range(lam.shape[0]):
        lm = lam[l]
        w = wts[l]
        for j in range(d):
            RE[j] = math.exp(-lm * FGr[j])
            RH[j] = FHr[j] * RE[j]
        for i in range(n_p):
            p = nodes[i]
            if i == 0 or per_node:
                row = i if per_node else 0
                for j in range(d):
                    KE[j] = math.exp(-lm * FGk[row, j])
                    KH[j] = FHk[row, j] * KE[j]
            mant = 1.0
            expo = 0
            R = 0.0
            for j in range(d):
                L = max(p * KE[j] + (1.0 - p) * RE[j], 1e-300)
                Lv[j] = L
                iv = 1.0 / L
                inv[j] = iv
                r = (p * KH[j] + (1.0 - p) * RH[j]) * iv
                rat[j] = r
                R += r
                mant *= L
                if mant < tiny:
                    mant *= big
                    expo += 1
            scale = math.exp(expo * log_tiny) if expo < 4 else 0.0
            phi[i] += w * mant * scale * (h0 + R)
            log_p = math.log(mant) + expo * log_tiny
            for j in range(d):
                if expo < 2 or Lv[j] < 1e-90:
                    q = mant * inv[j] * scale if expo < 2 else math.exp(log_p - math.log(Lv[j]))
                    s = h0 + R - rat[j]
                    delta[i, j] += w * q * ((KE[j] - RE[j]) * s + (KH[j] - RH[j]))


@jit()
def fold_profile(delta, phi, U, V, out):
    """``out[k, j] = sum_i U[i] (delta[k, i, j] - mean_j delta[k, i, :]) + sum_i V[i] phi[k, i] / d``
    (the profile form of LIME's limit, :func:`attnxai.theory.lime_text.beta_from_effects`, with
    the law's weights folded into ``U`` and ``V``)."""
    K, n_p, d = delta.shape
    for k in range(K):
        slope = 0.0
        for i in range(n_p):
            slope += V[i] * phi[k, i]
        for j in range(d):
            out[k, j] = slope / d
        for i in range(n_p):
            mean = 0.0
            for j in range(d):
                mean += delta[k, i, j]
            mean /= d
            for j in range(d):
                out[k, j] += U[i] * (delta[k, i, j] - mean)


def bernoulli_sums(terms: BernoulliTerms, rule: ProfileNodes, delta: np.ndarray,
                   phi: np.ndarray) -> None:
    """:func:`_bernoulli_sums` (docstring there) on one arena per call; adds to ``delta``
    (n_nodes, d) and ``phi`` (n_nodes,)."""
    d = len(terms.FGr)
    f = np.float64
    v = named_arena({
        "FGk": np.atleast_2d(np.asarray(terms.FGk, f)),
        "FHk": np.atleast_2d(np.asarray(terms.FHk, f)),
        "FGr": np.asarray(terms.FGr, f), "FHr": np.asarray(terms.FHr, f),
        "nodes": np.asarray(rule.nodes, f), "lam": np.asarray(rule.lam, f),
        "wts": np.asarray(rule.wts, f), "delta": np.asarray(delta, f),
        "phi": np.asarray(phi, f), **{name: (d, f) for name in BernoulliWork._fields}})
    _bernoulli_sums(views_as(BernoulliTerms, v, h0=float(terms.h0)), views_as(ProfileNodes, v),
                    views_as(ProfileOut, v), views_as(BernoulliWork, v))
    delta[...] = v["delta"]
    phi[...] = v["phi"]
