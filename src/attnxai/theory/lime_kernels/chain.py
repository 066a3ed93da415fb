"""The chain's compiled loops (:mod:`attnxai.theory.lime_chain`). One compiled kernel family
(:func:`attnxai.native.jit`; plain Python without numba, same numbers, much slower):
:func:`chain_delete` / :func:`chain_replace`, the dynamic programme over the number of tokens kept
so far, forward and backward, at every node of the lambda rule, and their named-tuple inputs.

**Deletion's exponentials.** :func:`chain_delete` needs ``exp(-lambda G_t(q))`` for every token
``t``, position ``q <= t`` and node ``lambda``: ``T^2/2`` exponentials per node. Its lambda nodes
double (``lambda_{l+s} = 2 lambda_l``, ``s = ksub``), so each value follows from the previous one:
``W = 1 - E`` is carried while ``E > 1/2`` (``W' = W (2 - W)``, relative error growing by at
most one rounding per step) and ``E`` itself afterwards (``E' = E^2``; its relative error doubles
per step, but once ``E < 1/2`` at most ``log2(745)`` steps remain before ``E`` underflows). The
table stores ``W >= 0`` or ``-E <= -1e-300``. Tested against ``exp`` to 1e-14
(``tests/theory/test_theory_lime_chain.py::test_doubling_table_matches_exp``).

Reproducibility (fixed order, one arena per call): :mod:`attnxai.theory.lime_kernels`.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ...native import REASSOCIATE, jit
from .arena import named_arena, views_as

__all__ = ["ChainLaw", "ChainOut", "DeleteTerms", "DeleteWork", "ReplaceTerms", "ReplaceWork",
           "chain_delete", "chain_replace", "table_entry"]

# The compiled loops take their inputs as named tuples (numba compiles a field access to a plain
# load), so that a call names every array: the terms of one head, the law and rule (the settings),
# the outputs and the work buffers. The fields' order is the order of the arrays in the call's arena
# (:mod:`~attnxai.theory.lime_kernels.arena`): it fixes their relative addresses, hence the code
# path and the bits.


class DeleteTerms(NamedTuple):
    """One head's terms for deletion (:func:`attnxai.theory.lime_chain.delete_terms`): token ``t``
    (1..n) kept at position ``q`` adds ``ea[t-1] * eb[q]`` to the denominator and that times
    ``cw[t-1]`` plus ``ea[t-1] * ebr[q]`` to the numerator; ``h0``: the numerator of [CLS]."""

    ea: np.ndarray     # (n,)
    cw: np.ndarray     # (n,)
    eb: np.ndarray     # (n + 1,), eb[0] = 0
    ebr: np.ndarray    # (n + 1,)
    h0: float


class ReplaceTerms(NamedTuple):
    """One head's terms for replacement (:func:`attnxai.theory.lime_chain.replace_terms`): feature
    ``t`` adds ``(gk, hk)[t-1]`` to (denominator, numerator) when kept, ``(gr, hr)[t-1]`` when
    replaced by UNK; ``h0``: the numerator of [CLS]."""

    gk: np.ndarray     # (d,)
    hk: np.ndarray
    gr: np.ndarray
    hr: np.ndarray
    h0: float


class ChainLaw(NamedTuple):
    """The settings of one run of a chain: the law of the kept set and the rule in ``lambda``.

    ``p < 0``: lime's law, the kept set of size ``m`` with weight ``omega[m]`` ((n + 1,)) and
    uniform given ``m``; ``0 <= p <= 1``: every token (feature) kept independently with
    probability ``p`` (``omega`` all ones). ``lam`` (L,) and ``wts`` (L,): the nodes and weights
    (times ``exp(-lambda g0)``) of ``E[M/N] = sum_l wts[l] E[M exp(-lambda_l (N - g0))]``;
    deletion's nodes double every ``ksub`` (replacement ignores ``ksub``)."""

    omega: np.ndarray
    p: float
    lam: np.ndarray
    wts: np.ndarray
    ksub: int = 1


class ChainOut(NamedTuple):
    """What a chain adds to: ``on[0]`` the mean output, ``on[t]`` / ``off[t]`` with feature ``t``
    kept / removed ((n + 1,) each; ``off`` only under independent removal)."""

    on: np.ndarray
    off: np.ndarray


class DeleteWork(NamedTuple):
    """Deletion's buffers: ``X`` the doubling table (ksub, n (n + 1) / 2), ``A``, ``AM`` the
    forward rows ((n + 1) (n + 2) / 2), ``beta``, ``betaM`` the backward row (n + 1,)."""

    X: np.ndarray
    A: np.ndarray
    AM: np.ndarray
    beta: np.ndarray
    betaM: np.ndarray


class ReplaceWork(NamedTuple):
    """Replacement's buffers: the forward rows ``A``, ``AM``, the backward row ``beta``,
    ``betaM`` and one level's exponentials ``EK``, ``ER`` (d,)."""

    A: np.ndarray
    AM: np.ndarray
    beta: np.ndarray
    betaM: np.ndarray
    EK: np.ndarray
    ER: np.ndarray


@jit()
def _one_minus_exp(x):
    """``1 - exp(-x)`` for ``x >= 0`` to full relative precision."""
    if x < 1e-3:
        return x * (1.0 - 0.5 * x * (1.0 - x / 3.0 * (1.0 - 0.25 * x)))
    return -math.expm1(-x)


@jit()
def table_entry(x):
    """The doubling table's entry for ``exp(-x)``: ``W = 1 - exp(-x) >= 0`` while
    ``exp(-x) > 1/2``, else ``-exp(-x)`` (at most ``-1e-300``, never ``-0.0``, which would read
    as ``W = 0``)."""
    if x < 0.6931471805599453:
        return _one_minus_exp(x)
    return -max(math.exp(-x), 1e-300)


@jit(REASSOCIATE)
def _chain_delete(terms, law, out, work):
    """Deletion: the chain over the tokens whose state is the number ``c`` of tokens kept so far
    (:class:`DeleteTerms`, :class:`ChainLaw`, :class:`ChainOut`, :class:`DeleteWork`).

    Token ``t`` (1..n) kept after ``c`` kept tokens sits at position ``q = c + 1`` and adds
    ``G = ea[t-1] * eb[q]`` to the denominator and ``G * cw[t-1] + ea[t-1] * ebr[q]`` to the
    numerator; ``h0`` is the numerator of [CLS] (its denominator is in ``wts``). ``lam`` (nodes,
    doubling every ``ksub``) and ``wts`` (weights times ``exp(-lambda g0)``) give
    ``E[M/N] = sum_l wts[l] E[M exp(-lambda_l (N - g0))]``.

    ``p < 0``: lime's law. The kept set has size ``m`` with weight ``omega[m]`` and is uniform
    given ``m``; adds ``E[w f]`` to ``on[0]`` and ``E[w z_t f]`` to ``on[t]``. The forward
    quantities are averages over kept subsets of each size (``(t - c)/t`` and ``c/t`` weights,
    bounded by 1 for any n). ``0 <= p <= 1``: every token kept independently with probability p
    (pass ``omega = 1``); adds ``E[f]`` to ``on[0]``, ``E[f | z_t = 1]`` to ``on[t]`` and
    ``E[f | z_t = 0]`` to ``off[t]``.
    """
    ea, cw, eb, ebr, h0 = terms.ea, terms.cw, terms.eb, terms.ebr, terms.h0
    omega, p, lam, wts, ksub = law.omega, law.p, law.lam, law.wts, law.ksub
    on, off = out.on, out.off
    X, A, AM, beta, betaM = work.X, work.A, work.AM, work.beta, work.betaM
    n = ea.shape[0]
    nlam = lam.shape[0]
    lime = p < 0.0
    pk = 0.0 if lime else p
    pd = 0.0 if lime else 1.0 - p
    for l in range(nlam):
        Xs = X[l % ksub]
        lm = lam[l]
        w = wts[l]
        first = l < ksub
        A[0] = 1.0
        AM[0] = 0.0
        for t in range(1, n + 1):
            xo = t * (t - 1) // 2          # row t of the E table (q = 1..t) = row t-1 of A
            no = xo + t                    # row t of A (t + 1 entries)
            ea_t = ea[t - 1]
            cw_t = cw[t - 1]
            # row views: indices from range() are known >= 0, so numba drops the negative-index
            # wraparound and LLVM vectorises the loops (xo + c would not)
            xr = Xs[xo:xo + t]             # xr[q - 1]: position q
            Ap = A[xo:xo + t]
            AMp = AM[xo:xo + t]
            Ac = A[no:no + t + 1]
            AMc = AM[no:no + t + 1]
            ebq = eb[1:t + 1]              # ebq[q - 1] = eb[q]
            ebrq = ebr[1:t + 1]
            if first:
                for q in range(t):
                    xr[q] = table_entry(lm * ea_t * ebq[q])
            inv = 1.0 / t
            # one pass per row: the E table moves to this node, then the forward step
            if lime:
                Ac[0] = Ap[0]
                AMc[0] = AMp[0]
            else:
                Ac[0] = pd * Ap[0]
                AMc[0] = pd * AMp[0]
            if not first:
                for c in range(t):
                    x = xr[c]
                    v = x * (2.0 - x)
                    v = v if v < 0.5 else v - 1.0
                    u = -(x * x)
                    u = u if u < -1e-300 else -1e-300
                    xr[c] = v if x >= 0.0 else u
            for c in range(1, t):
                x = xr[c - 1]
                e = 1.0 - x if x >= 0.0 else -x
                hh = ea_t * (ebq[c - 1] * cw_t + ebrq[c - 1])
                kc = c * inv if lime else pk
                ke = kc * e
                dc = 1.0 - kc if lime else pd
                a1 = Ap[c - 1]
                AMc[c] = dc * AMp[c] + ke * (AMp[c - 1] + hh * a1)
                Ac[c] = dc * Ap[c] + ke * a1
            x = xr[t - 1]
            e = (1.0 - x if x >= 0.0 else -x) * (1.0 if lime else pk)
            a1 = Ap[t - 1]
            AMc[t] = e * (AMp[t - 1] + ea_t * (eb[t] * cw_t + ebr[t]) * a1)
            Ac[t] = e * a1
        fo = n * (n + 1) // 2
        acc0 = 0.0
        for m in range(n + 1):
            acc0 += omega[m] * (AM[fo + m] + h0 * A[fo + m])
        on[0] += w * acc0
        for c in range(n + 1):
            beta[c] = omega[c]
            betaM[c] = 0.0
        for t in range(n, 0, -1):
            xo = t * (t - 1) // 2
            ea_t = ea[t - 1]
            cw_t = cw[t - 1]
            inv = 1.0 / t
            acc = 0.0
            xr = Xs[xo:xo + t]
            Ap = A[xo:xo + t]
            AMp = AM[xo:xo + t]
            ebq = eb[1:t + 1]              # ebq[c] = eb[c + 1]
            ebrq = ebr[1:t + 1]
            b1v = beta[1:t + 1]            # b1v[c] = beta[c + 1]
            bm1v = betaM[1:t + 1]
            if lime:
                for c in range(t):
                    x = xr[c]
                    e = 1.0 - x if x >= 0.0 else -x
                    hh = ea_t * (ebq[c] * cw_t + ebrq[c])
                    ke = (c + 1) * inv * e
                    b1 = b1v[c]
                    bm1 = bm1v[c]
                    acc += ke * (Ap[c] * (bm1 + (h0 + hh) * b1) + AMp[c] * b1)
                    dc = (t - c) * inv
                    betaM[c] = dc * betaM[c] + ke * (bm1 + hh * b1)
                    beta[c] = dc * beta[c] + ke * b1
            else:
                acc_off = 0.0
                for c in range(t):
                    x = xr[c]
                    e = 1.0 - x if x >= 0.0 else -x
                    hh = ea_t * (ebq[c] * cw_t + ebrq[c])
                    b1 = b1v[c]
                    bm1 = bm1v[c]
                    acc += e * (Ap[c] * (bm1 + (h0 + hh) * b1) + AMp[c] * b1)
                    acc_off += Ap[c] * (betaM[c] + h0 * beta[c]) + AMp[c] * beta[c]
                    ke = pk * e
                    betaM[c] = pd * betaM[c] + ke * (bm1 + hh * b1)
                    beta[c] = pd * beta[c] + ke * b1
                off[t] += w * acc_off
            on[t] += w * acc


@jit(REASSOCIATE)
def _chain_replace(terms, law, out, work):
    """Replacement: the chain over the features (positions do not move), state ``c`` = features
    kept so far (:class:`ReplaceTerms`, :class:`ChainLaw`, :class:`ChainOut`,
    :class:`ReplaceWork`). Feature ``t`` adds ``(gk, hk)[t-1]`` to (denominator, numerator) when
    kept and ``(gr, hr)[t-1]`` when replaced by UNK. Same laws, nodes and outputs as
    :func:`_chain_delete` (here the exponentials are two per feature and node)."""
    gk, hk, gr, hr, h0 = terms.gk, terms.hk, terms.gr, terms.hr, terms.h0
    omega, p, lam, wts = law.omega, law.p, law.lam, law.wts
    on, off = out.on, out.off
    A, AM, beta, betaM, EK, ER = work.A, work.AM, work.beta, work.betaM, work.EK, work.ER
    n = gk.shape[0]
    nlam = lam.shape[0]
    lime = p < 0.0
    pk = 0.0 if lime else p
    pd = 0.0 if lime else 1.0 - p
    for l in range(nlam):
        lm = lam[l]
        w = wts[l]
        for t in range(n):
            EK[t] = math.exp(-lm * gk[t])
            ER[t] = math.exp(-lm * gr[t])
        A[0] = 1.0
        AM[0] = 0.0
        for t in range(1, n + 1):
            xo = t * (t - 1) // 2
            no = xo + t
            ek, er, hkt, hrt = EK[t - 1], ER[t - 1], hk[t - 1], hr[t - 1]
            inv = 1.0 / t
            Ap = A[xo:xo + t]              # row views (see chain_delete)
            AMp = AM[xo:xo + t]
            Ac = A[no:no + t + 1]
            AMc = AM[no:no + t + 1]
            # kept fraction c/t under lime's law, p under independent removal (1 - p = pd)
            d0 = er if lime else pd * er
            Ac[0] = d0 * Ap[0]
            AMc[0] = d0 * (AMp[0] + hrt * Ap[0])
            for c in range(1, t):
                kc = c * inv if lime else pk
                dr = (1.0 - kc) * er
                ke = kc * ek
                a0 = Ap[c]
                a1 = Ap[c - 1]
                AMc[c] = dr * (AMp[c] + hrt * a0) + ke * (AMp[c - 1] + hkt * a1)
                Ac[c] = dr * a0 + ke * a1
            kt = ek if lime else pk * ek
            a1 = Ap[t - 1]
            AMc[t] = kt * (AMp[t - 1] + hkt * a1)
            Ac[t] = kt * a1
        fo = n * (n + 1) // 2
        acc0 = 0.0
        for m in range(n + 1):
            acc0 += omega[m] * (AM[fo + m] + h0 * A[fo + m])
        on[0] += w * acc0
        for c in range(n + 1):
            beta[c] = omega[c]
            betaM[c] = 0.0
        for t in range(n, 0, -1):
            xo = t * (t - 1) // 2
            ek, er, hkt, hrt = EK[t - 1], ER[t - 1], hk[t - 1], hr[t - 1]
            inv = 1.0 / t
            acc = 0.0
            acc_off = 0.0
            Ap = A[xo:xo + t]
            AMp = AM[xo:xo + t]
            b1v = beta[1:t + 1]            # b1v[c] = beta[c + 1]
            bm1v = betaM[1:t + 1]
            for c in range(t):
                b0 = beta[c]
                bm0 = betaM[c]
                b1 = b1v[c]
                bm1 = bm1v[c]
                if lime:
                    kc = (c + 1) * inv
                    dc = (t - c) * inv
                else:
                    kc = pk
                    dc = pd
                kon = (c + 1) * inv if lime else 1.0
                acc += kon * ek * (Ap[c] * (bm1 + (h0 + hkt) * b1) + AMp[c] * b1)
                acc_off += er * (Ap[c] * (bm0 + (h0 + hrt) * b0) + AMp[c] * b0)
                betaM[c] = dc * er * (bm0 + hrt * b0) + kc * ek * (bm1 + hkt * b1)
                beta[c] = dc * er * b0 + kc * ek * b1
            on[t] += w * acc
            if not lime:
                off[t] += w * acc_off


def chain_delete(terms: DeleteTerms, law: ChainLaw, on: np.ndarray, off: np.ndarray) -> None:
    """:func:`_chain_delete` (docstring there) on one arena per call; adds to ``on`` and ``off``
    ((n + 1,) each)."""
    n = len(terms.ea)
    f = np.float64
    tri, rows = n * (n + 1) // 2, (n + 1) * (n + 2) // 2
    v = named_arena({
        "ea": np.asarray(terms.ea, f), "cw": np.asarray(terms.cw, f),
        "eb": np.asarray(terms.eb, f), "ebr": np.asarray(terms.ebr, f),
        "omega": np.asarray(law.omega, f), "lam": np.asarray(law.lam, f),
        "wts": np.asarray(law.wts, f), "on": np.asarray(on, f), "off": np.asarray(off, f),
        "X": ((int(law.ksub), tri), f), "A": (rows, f), "AM": (rows, f), "beta": (n + 1, f),
        "betaM": (n + 1, f)})
    _chain_delete(views_as(DeleteTerms, v, h0=float(terms.h0)),
                  views_as(ChainLaw, v, p=float(law.p), ksub=int(law.ksub)),
                  views_as(ChainOut, v), views_as(DeleteWork, v))
    on[...] = v["on"]
    off[...] = v["off"]


def chain_replace(terms: ReplaceTerms, law: ChainLaw, on: np.ndarray, off: np.ndarray) -> None:
    """:func:`_chain_replace` (docstring there) on one arena per call; adds to ``on`` and
    ``off`` ((d + 1,) each)."""
    n = len(terms.gk)
    f = np.float64
    rows = (n + 1) * (n + 2) // 2
    v = named_arena({
        "gk": np.asarray(terms.gk, f), "hk": np.asarray(terms.hk, f),
        "gr": np.asarray(terms.gr, f), "hr": np.asarray(terms.hr, f),
        "omega": np.asarray(law.omega, f), "lam": np.asarray(law.lam, f),
        "wts": np.asarray(law.wts, f), "on": np.asarray(on, f), "off": np.asarray(off, f),
        "A": (rows, f), "AM": (rows, f), "beta": (n + 1, f), "betaM": (n + 1, f),
        "EK": (n, f), "ER": (n, f)})
    _chain_replace(views_as(ReplaceTerms, v, h0=float(terms.h0)),
                   views_as(ChainLaw, v, p=float(law.p), ksub=int(law.ksub)),
                   views_as(ChainOut, v), views_as(ReplaceWork, v))
    on[...] = v["on"]
    off[...] = v["off"]
