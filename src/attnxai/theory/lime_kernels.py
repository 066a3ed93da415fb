"""Compiled loops of the LIME closed forms (:func:`attnxai.native.jit`; plain Python without
numba, same numbers, much slower).

These loops cannot be vectorised with numpy without tables of size ``T^2 x (lambda nodes)``:

* :func:`chain_delete` / :func:`chain_replace`: the dynamic programme over the number of tokens
  kept so far (:mod:`attnxai.theory.lime_chain`), forward and backward, at every node of the
  lambda rule;
* :func:`bernoulli_sums`: for independent removal, the product over features of
  ``p exp(-lambda G_j) + (1 - p) exp(-lambda G'_j)`` and its leave-one-out versions at every
  (node p, node lambda) (:mod:`attnxai.theory.lime_independent`).

and the loops of the binomial positions (deletion with repeated words):

* :func:`binomial_delete` (with :func:`binomial_windows`): the binomial-position approximation
  at every (head, node p, node lambda, token) (:mod:`attnxai.theory.lime_binomial`);
* :func:`binomial_means`: the binomial means of the position terms at one node ``p``
  (:mod:`attnxai.theory.lime_independent`).

**Reproducibility.** Every sum is a loop in a fixed order (no BLAS, no threads), so a call
returns the same bits every time in a process and across processes on one machine. The loops are
compiled with ``fastmath=REASSOCIATE`` (``reassoc``, ``contract``, ``nsz``, ``arcp``; never
``nnan``/``ninf``), which lets LLVM vectorise the reductions: the order it picks is fixed at
compile time. The kernels are
called from Python, never from another compiled function: a compiled loop that called the
binomial kernel ran code with other rounding when numba loaded it from its cache than when it had
just compiled it (1e-16), so a rerun on a warm cache did not reproduce a fresh one
(``tests/test_theory_lime_chain.py`` compiles, then loads, and compares the bits). A loop indexes
*views* of a row (``A[xo:xo + t]``, then ``[c]``) rather than ``A[xo + c]``: numba must treat
``xo + c`` as possibly negative (Python's wraparound), a branch per access that stops LLVM from
vectorising, while an index from ``range()`` is known to be non-negative (measured: 1.5x on the
deletion chain, 2.3x on :mod:`attnxai.theory.lime_binomial`'s window sums).

**Deletion's exponentials.** :func:`chain_delete` needs ``exp(-lambda G_t(q))`` for every token
``t``, position ``q <= t`` and node ``lambda``: ``T^2/2`` exponentials per node. Its lambda nodes
double (``lambda_{l+s} = 2 lambda_l``, ``s = ksub``), so each value follows from the previous one:
``W = 1 - E`` is carried while ``E > 1/2`` (``W' = W (2 - W)``, relative error growing by at
most one rounding per step) and ``E`` itself afterwards (``E' = E^2``; its relative error doubles
per step, but once ``E < 1/2`` at most ``log2(745)`` steps remain before ``E`` underflows). The
table stores ``W >= 0`` or ``-E <= -1e-300``. Tested against ``exp`` to 1e-14
(``tests/test_theory_lime_chain.py::test_doubling_table_matches_exp``).
"""

from __future__ import annotations

import math

from typing import NamedTuple

import numpy as np

from ..native import REASSOCIATE, jit

__all__ = ["TAIL", "BernoulliTerms", "BinomialHeads", "BinomialSettings", "ChainLaw", "DeleteTerms",
           "ProfileNodes", "ReplaceTerms", "WordLayout", "aligned", "aligned_empty", "arena",
           "bernoulli_sums", "binomial_delete", "binomial_means", "binomial_windows",
           "chain_delete", "chain_replace", "fold_profile", "named_arena"]


# ---------------------------------------------------------------------- what the kernels take
# The compiled loops take their inputs as named tuples (numba compiles a field access to a plain
# load), so that a call names every array: the terms of one head, the law and rule (the
# settings), the outputs and the work buffers. The fields' order is the order of the arrays in
# the call's arena (below): it fixes their relative addresses, hence the code path and the bits.
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


@jit()
def _one_minus_exp(x):
    """``1 - exp(-x)`` for ``x >= 0`` to full relative precision."""
    if x < 1e-3:
        return x * (1.0 - 0.5 * x * (1.0 - x / 3.0 * (1.0 - 0.25 * x)))
    return -math.expm1(-x)


@jit()
def _table_entry(x):
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
                    xr[q] = _table_entry(lm * ea_t * ebq[q])
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


# ---------------------------------------------------------------------- one arena per call
# Two things make a vectorised loop's rounding depend on where its arrays lie in memory: LLVM may
# peel iterations to reach an aligned address, and it guards the vector loop with run-time
# checks that the arrays it writes do not overlap those it reads, comparing *differences of
# addresses* with the vector width; when two unrelated arrays happen to lie close, the scalar
# fallback runs instead and sums in another order (measured: the first head's coefficients
# changed by ~1e-14 from one call to the next when torch or numpy calls in between moved the
# allocator). Every array a kernel touches is therefore a view into one buffer per call, each
# on a 64-byte boundary at a fixed offset: the same addresses *relative to each other* on every
# call, hence the same code path and the same bits (tests/test_theory_lime_chain.py).
_ALIGN = 8   # float64 elements per 64 bytes


def aligned_empty(shape) -> np.ndarray:
    """An uninitialised float64 C array whose first element is on a 64-byte boundary."""
    shape = (shape,) if np.isscalar(shape) else tuple(shape)
    size = math.prod(shape)
    buf = np.empty(size + _ALIGN)
    off = (-(buf.ctypes.data // 8)) % _ALIGN
    return buf[off:off + size].reshape(shape)


def aligned(a) -> np.ndarray:
    """A 64-byte aligned float64 C copy of ``a``."""
    a = np.asarray(a, dtype=np.float64)
    out = aligned_empty(a.shape)
    out[...] = a
    return out


def arena(*specs) -> list[np.ndarray]:
    """Views into one 64-byte aligned buffer, in order and at fixed offsets: an array spec is
    copied (float64, or int64 if it is an integer array), a ``(shape, dtype)`` spec is left
    uninitialised."""
    plan = []
    for spec in specs:        # math.prod, not np.prod: this runs per kernel call, per array
        if isinstance(spec, np.ndarray) or np.isscalar(spec) or isinstance(spec, list):
            a = np.asarray(spec)
            dtype = np.int64 if np.issubdtype(a.dtype, np.integer) else np.float64
            plan.append((a.shape, dtype, a))
        else:
            shape, dtype = spec
            shape = (shape,) if np.isscalar(shape) else tuple(shape)
            plan.append((shape, np.dtype(dtype).type, None))
    sizes = [math.prod(sh) for sh, _, _ in plan]
    padded = [-(-max(n, 1) // _ALIGN) * _ALIGN for n in sizes]
    buf = aligned_empty(sum(padded))
    out, pos = [], 0
    for (shape, dtype, a), n, pn in zip(plan, sizes, padded):
        v = buf[pos:pos + n]
        if dtype is np.int64:
            v = v.view(np.int64)
        v = v.reshape(shape)
        if a is not None:
            v[...] = a
        out.append(v)
        pos += pn
    return out


def named_arena(specs: dict[str, object]) -> dict[str, np.ndarray]:
    """:func:`arena` with a name for every array: ``{name: view}`` in the order of ``specs``."""
    return dict(zip(specs, arena(*specs.values())))


def _views(cls, views: dict[str, np.ndarray], **scalars):
    """The named tuple ``cls`` from arena views and scalars, by field name."""
    return cls(**{f: scalars[f] if f in scalars else views[f] for f in cls._fields})


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
    _chain_delete(_views(DeleteTerms, v, h0=float(terms.h0)),
                  _views(ChainLaw, v, p=float(law.p), ksub=int(law.ksub)),
                  _views(ChainOut, v), _views(DeleteWork, v))
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
    _chain_replace(_views(ReplaceTerms, v, h0=float(terms.h0)),
                   _views(ChainLaw, v, p=float(law.p), ksub=int(law.ksub)),
                   _views(ChainOut, v), _views(ReplaceWork, v))
    on[...] = v["on"]
    off[...] = v["off"]


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
    _bernoulli_sums(_views(BernoulliTerms, v, h0=float(terms.h0)), _views(ProfileNodes, v),
                    _views(ProfileOut, v), _views(BernoulliWork, v))
    delta[...] = v["delta"]
    phi[...] = v["phi"]


# ---------------------------------------------------------------------- binomial positions
# The kernels of attnxai.theory.lime_binomial (deletion with repeated words) and of the binomial
# position means of attnxai.theory.lime_independent.
#: A node of the lambda rule stops once ``E[exp(-lambda N / 2)] < TAIL * min(p, 1 - p)``: the
#: rest of the rule adds less than ``2 TAIL`` times the largest output (module docstring).
TAIL = 1e-16


# ---------------------------------------------------------------------- what the kernel takes
# The binomial positions' kernel (attnxai.theory.lime_binomial) takes named tuples too.
class BinomialSettings(NamedTuple):
    """The settings of :func:`binomial_delete`: ``ksub`` (the lambda rule's nodes double every
    ``ksub`` levels), ``tail`` (a node stops once the rest of its rule adds less than ``2 tail``
    times the largest output; 0: never) and ``tol`` (a binomial window drops the terms below
    ``tol`` times its mode)."""

    ksub: int = 1
    tail: float = TAIL
    tol: float = 1e-14


class WordLayout(NamedTuple):
    """Where each token stands among the words (:func:`attnxai.theory.lime_inputs.token_layout`):
    ``base[t]`` = 1 + earlier occurrences of its word (its position when no other word before it
    is kept), ``n_other[t]`` tokens of other words before it, ``owner[t]`` its word, ``first[j]``
    the 0-based token of word ``j``'s first occurrence. (n,) int64 each, ``first`` (d,)."""

    base: np.ndarray
    n_other: np.ndarray
    owner: np.ndarray
    first: np.ndarray


class BinomialHeads(NamedTuple):
    """Every head's terms, stacked: ``EA``, ``CW`` (K, n); ``EB``, ``EBR`` (K, n + 2); ``G0``,
    ``H0`` (K,) (the denominator and numerator of [CLS]); each head's lambda rule ``LAM``,
    ``WTS`` (K, max NL), its first ``NL[k]`` entries used (weights times ``exp(-lambda g0)``)."""

    EA: np.ndarray
    CW: np.ndarray
    EB: np.ndarray
    EBR: np.ndarray
    G0: np.ndarray
    H0: np.ndarray
    LAM: np.ndarray
    WTS: np.ndarray
    NL: np.ndarray


class _Head(NamedTuple):
    """One head's terms as the kernel reads them (rows of :class:`BinomialHeads`)."""

    ea: np.ndarray
    cw: np.ndarray
    eb: np.ndarray
    ebr: np.ndarray
    g0: float
    h0: float
    lam: np.ndarray
    wts: np.ndarray


class _Windows(NamedTuple):
    """The binomial windows of every token at every node ``p`` (:func:`binomial_windows`)."""

    nodes: np.ndarray      # (n_nodes,)
    lo: np.ndarray         # (n_nodes, n) int64
    length: np.ndarray
    offset: np.ndarray
    pmf: np.ndarray


class _Out(NamedTuple):
    """What the kernel adds to for one head: ``delta`` (n_nodes, d), ``phi`` (n_nodes,), and the
    lambda levels each node evaluated, ``levels`` (n_nodes,) int64."""

    delta: np.ndarray
    phi: np.ndarray
    levels: np.ndarray


class _Work(NamedTuple):
    """The kernel's buffers: the doubling table ``X`` (ksub, cells), the level's tables ``ET``,
    ``EHT`` (cells), per token ``logE`` .. ``rz1`` and ``a0`` .. ``b1`` (n,), per word ``KE`` ..
    ``ratio`` and ``oa0`` .. ``ob1`` (d,), per node ``alive`` (int64) and ``past``
    (ksub, n_nodes)."""

    X: np.ndarray
    ET: np.ndarray
    EHT: np.ndarray
    logE: np.ndarray
    rat: np.ndarray
    dE0: np.ndarray
    dE1: np.ndarray
    rz0: np.ndarray
    rz1: np.ndarray
    KE: np.ndarray
    KH: np.ndarray
    Lw: np.ndarray
    ratio: np.ndarray
    a0: np.ndarray
    a1: np.ndarray
    b0: np.ndarray
    b1: np.ndarray
    oa0: np.ndarray
    oa1: np.ndarray
    ob0: np.ndarray
    ob1: np.ndarray
    alive: np.ndarray
    past: np.ndarray


@jit()
def binomial_means(eb, ebr, base, n_other, p, EB, EBR):
    """``EB[k, t] = E[eb[k, base[t] + B]]`` and ``EBR[k, t]`` likewise for every head ``k``,
    ``B ~ Binomial(n_other[t], p)`` (rows of Pascal's triangle in probability, built once up to
    the largest ``n_other``)."""
    nmax = 0
    for t in range(n_other.shape[0]):
        nmax = max(nmax, n_other[t])
    rows = np.zeros((nmax + 1, nmax + 1))
    rows[0, 0] = 1.0
    for m in range(1, nmax + 1):
        rows[m, 0] = (1.0 - p) * rows[m - 1, 0]
        for k in range(1, m + 1):
            rows[m, k] = (1.0 - p) * rows[m - 1, k] + p * rows[m - 1, k - 1]
    for h in range(eb.shape[0]):
        for t in range(n_other.shape[0]):
            m = n_other[t]
            s = 0.0
            sr = 0.0
            for k in range(m + 1):
                s += rows[m, k] * eb[h, base[t] + k]
                sr += rows[m, k] * ebr[h, base[t] + k]
            EB[h, t] = s
            EBR[h, t] = sr


@jit()
def binomial_windows(n_other, nodes, tol, lo, length, offset, pmf):
    """The law ``Binomial(n_other[t] - 1, nodes[i])`` of the kept tokens of other words before
    token ``t`` but one, on its window of mass ``>= 1 - tol``-ish (terms below ``tol`` times the
    mode dropped): first value ``lo[i, t]``, ``length[i, t]`` values from ``pmf[offset[i, t]:]``
    (``length = 0`` when ``n_other[t] = 0``). Fills ``lo``, ``length``, ``offset``, ``pmf``
    (large enough: ``nodes.size * sum(n_other)`` values); returns the number of values used."""
    pos = 0
    for i in range(nodes.shape[0]):
        p = nodes[i]
        for t in range(n_other.shape[0]):
            m = n_other[t] - 1
            offset[i, t] = pos
            if m < 0:
                lo[i, t] = 0
                length[i, t] = 0
                continue
            if p <= 0.0 or p >= 1.0 or m == 0:       # a point mass
                lo[i, t] = m if p >= 1.0 else 0
                length[i, t] = 1
                pmf[pos] = 1.0
                pos += 1
                continue
            mode = min(m, int((m + 1) * p))
            logm = (math.lgamma(m + 1.0) - math.lgamma(mode + 1.0) - math.lgamma(m - mode + 1.0)
                    + mode * math.log(p) + (m - mode) * math.log1p(-p))
            pm = math.exp(logm)
            r = p / (1.0 - p)
            a = mode
            v = pm
            while a > 0:
                v2 = v * a / (m - a + 1.0) / r
                if v2 < tol * pm:
                    break
                v = v2
                a -= 1
            b = mode
            v = pm
            while b < m:
                v2 = v * (m - b) / (b + 1.0) * r
                if v2 < tol * pm:
                    break
                v = v2
                b += 1
            lo[i, t] = a
            length[i, t] = b - a + 1
            v = pm
            pmf[pos + mode - a] = pm
            for k in range(mode - 1, a - 1, -1):
                v = v * (k + 1.0) / (m - k) / r
                pmf[pos + k - a] = v
            v = pm
            for k in range(mode + 1, b + 1):
                v = v * (m - k + 1.0) / k * r
                pmf[pos + k - a] = v
            pos += b - a + 1
    return pos


@jit(REASSOCIATE)
def _binomial_delete(head, layout, windows, settings, out, work):
    """Deletion with every word kept independently with probability ``p`` and each kept token at
    ``1 + o_t + B_t``, ``B_t ~ Binomial(n_t, p)`` independent across tokens; keeping word j moves
    every later token of another word one position further (one position per word). Adds
    ``delta[i, j] = E[f | z_j = 1] - E[f | z_j = 0]`` and ``phi[i] = E[f]`` for one head at every
    node ``p = nodes[i]`` (the approximation of :mod:`attnxai.theory.lime_binomial`).

    A node stops once ``E[exp(-lambda N / 2)] < tail * min(p, 1 - p)`` (``past`` keeps the value
    of ``E[exp(-lambda N)]`` at the last ``ksub`` levels): every later node of the rule then adds
    less than ``2 tail`` times the largest output to ``delta`` and ``phi`` (module docstring).
    ``levels[i]``: the number of lambda levels node ``i`` evaluated. Arguments: :class:`_Head`,
    :class:`WordLayout`, :class:`_Windows`, :class:`BinomialSettings`, :class:`_Out`,
    :class:`_Work`."""
    ea, cw, eb, ebr, g0, h0 = head.ea, head.cw, head.eb, head.ebr, head.g0, head.h0
    lam, wts = head.lam, head.wts
    base, owner, first = layout.base, layout.owner, layout.first
    nodes, wlo, wlen, woff, pmf = (windows.nodes, windows.lo, windows.length, windows.offset,
                                   windows.pmf)
    ksub, tail = settings.ksub, settings.tail
    delta, phi, levels = out.delta, out.phi, out.levels
    X, ET, EHT, logE, rat = work.X, work.ET, work.EHT, work.logE, work.rat
    dE0, dE1, rz0, rz1, KE, KH = work.dE0, work.dE1, work.rz0, work.rz1, work.KE, work.KH
    Lw, ratio, a0, a1, b0, b1 = work.Lw, work.ratio, work.a0, work.a1, work.b0, work.b1
    oa0, oa1, ob0, ob1, alive, past = work.oa0, work.oa1, work.ob0, work.ob1, work.alive, work.past
    n = ea.shape[0]
    d = KE.shape[0]
    for i in range(nodes.shape[0]):
        alive[i] = 1
        levels[i] = 0
    for l in range(lam.shape[0]):
        Xs = X[l % ksub]
        lm = lam[l]
        w = wts[l]
        init = l < ksub
        for t in range(1, n + 1):                  # exp(-lambda G_t(q)), q = 1..t+1, doubling
            ro = (t - 1) * (t + 2) // 2
            e_t = ea[t - 1]
            # row views (entry q - 1 for position q): see the window sums below
            xr = Xs[ro:ro + t + 1]
            er = ET[ro:ro + t + 1]
            hr = EHT[ro:ro + t + 1]
            ebq = eb[1:t + 2]
            ebrq = ebr[1:t + 2]
            if init:
                for q in range(t + 1):
                    xr[q] = _table_entry(lm * e_t * ebq[q])
            else:
                for q in range(t + 1):
                    x = xr[q]
                    v = x * (2.0 - x)
                    v = v if v < 0.5 else v - 1.0
                    u = -(x * x)
                    u = u if u < -1e-300 else -1e-300
                    xr[q] = v if x >= 0.0 else u
            c_t = cw[t - 1]
            for q in range(t + 1):                 # exp(-lambda G) and its numerator term
                x = xr[q]
                e = 1.0 - x if x >= 0.0 else -x
                er[q] = e
                hr[q] = e * e_t * (ebq[q] * c_t + ebrq[q])
        for i in range(nodes.shape[0]):
            if alive[i] == 0:
                continue
            levels[i] += 1
            p = nodes[i]
            for t in range(1, n + 1):
                ro = (t - 1) * (t + 2) // 2
                bs = base[t - 1]
                ln = wlen[i, t - 1]
                if ln == 0:                          # no other word before t: fixed position
                    m = max(ET[ro + bs - 1], 1e-300)
                    logE[t - 1] = m
                    rat[t - 1] = EHT[ro + bs - 1] / m
                    dE0[t - 1] = 1.0
                    dE1[t - 1] = 1.0
                    rz0[t - 1] = 0.0
                    rz1[t - 1] = 0.0
                    continue
                c0 = ro + bs + wlo[i, t - 1] - 1     # cell of the first position of the window
                o = woff[i, t - 1]
                m0 = 0.0
                h0z = 0.0
                m1 = 0.0
                h1z = 0.0
                # views first: indices from range(ln) are known >= 0, so the compiled loop has
                # no negative-index wraparound and vectorises (o + k would not)
                pw = pmf[o:o + ln]
                e0 = ET[c0:c0 + ln]
                e1 = ET[c0 + 1:c0 + 1 + ln]
                f0 = EHT[c0:c0 + ln]
                f1 = EHT[c0 + 1:c0 + 1 + ln]
                for k in range(ln):
                    pk = pw[k]
                    m0 += pk * e0[k]
                    h0z += pk * f0[k]
                    m1 += pk * e1[k]
                    h1z += pk * f1[k]
                mP = max((1.0 - p) * m0 + p * m1, 1e-300)
                r = ((1.0 - p) * h0z + p * h1z) / mP
                logE[t - 1] = mP                     # (the transform itself, multiplied below)
                rat[t - 1] = r
                m0 = max(m0, 1e-300)
                m1 = max(m1, 1e-300)
                dE0[t - 1] = m0 / mP                 # exp of the change of the log-transform
                dE1[t - 1] = m1 / mP
                rz0[t - 1] = h0z / m0 - r
                rz1[t - 1] = h1z / m1 - r
            for j in range(d):
                KE[j] = 1.0
                KH[j] = 0.0
            for t in range(n):
                KE[owner[t]] *= logE[t]
                KH[owner[t]] += rat[t]
            S = 0.0
            R = 0.0
            for j in range(d):
                ke = KE[j]
                KH[j] = ke * KH[j]
                L = max(p * ke + (1.0 - p), 1e-300)
                Lw[j] = L
                ratio[j] = p * KH[j] / L
                S += math.log(L)
                R += ratio[j]
            phi[i] += w * math.exp(S) * (h0 + R)
            e_now = math.exp(S - lm * g0)                 # E[exp(-lambda N)], scaled units
            slot = l % ksub
            if l >= ksub and past[slot, i] < tail * min(p, 1.0 - p):
                alive[i] = 0                             # E at lambda / 2 negligible: stop
            past[slot, i] = e_now
            for t in range(n):
                j = owner[t]
                kap = p * KE[j] / Lw[j]
                rho = KH[j] / max(KE[j], 1e-300)
                rf = ratio[j]
                x = dE1[t]
                Lz = 1.0 + kap * (x - 1.0)
                a1[t] = math.log(Lz)
                b1[t] = kap * x * (rho + rz1[t]) / Lz - rf
                x = dE0[t]
                Lz = 1.0 + kap * (x - 1.0)
                a0[t] = math.log(Lz)
                b0[t] = kap * x * (rho + rz0[t]) / Lz - rf
            # a word's later tokens are not moved by the word itself: their terms are taken out
            for j in range(d):
                oa0[j] = 0.0
                oa1[j] = 0.0
                ob0[j] = 0.0
                ob1[j] = 0.0
            for t in range(n):
                j = owner[t]
                if t > first[j]:
                    oa0[j] += a0[t]
                    oa1[j] += a1[t]
                    ob0[j] += b0[t]
                    ob1[j] += b1[t]
            # suffix sums over tokens, in place: a[t] = sum_{u >= t} a[u]
            for t in range(n - 2, -1, -1):
                a0[t] += a0[t + 1]
                a1[t] += a1[t + 1]
                b0[t] += b0[t + 1]
                b1[t] += b1[t + 1]
            for j in range(d):
                f = first[j] + 1                 # the tokens after j's first one
                dS0 = (a0[f] if f < n else 0.0) - oa0[j]
                dS1 = (a1[f] if f < n else 0.0) - oa1[j]
                dR0 = (b0[f] if f < n else 0.0) - ob0[j]
                dR1 = (b1[f] if f < n else 0.0) - ob1[j]
                lj = S - math.log(Lw[j])
                rest = h0 + R - ratio[j]
                on = math.exp(lj + dS1) * (KE[j] * (rest + dR1) + KH[j])
                off = math.exp(lj + dS0) * (rest + dR0)
                delta[i, j] += w * (on - off)


def binomial_delete(heads: BinomialHeads, layout: WordLayout, nodes: np.ndarray,
                    settings: BinomialSettings, delta: np.ndarray, phi: np.ndarray) -> np.ndarray:
    """:func:`_binomial_delete` (docstring there) for every head, on one arena per call
    (:func:`attnxai.theory.lime_kernels.arena`: fixed relative addresses, the same bits every
    call); the binomial windows at ``nodes`` (n_nodes,) are computed once for all heads, and the
    heads are called one by one from here (why not from a compiled loop:
    :mod:`attnxai.theory.lime_kernels`). Adds to ``delta`` (K, n_nodes, d) and ``phi``
    (K, n_nodes). Returns the number of lambda levels evaluated per head and node (K, n_nodes)."""
    K, n = heads.EA.shape
    d = delta.shape[2]
    f, i8 = np.float64, np.int64
    n_other = np.ascontiguousarray(layout.n_other, dtype=i8)
    nodes_ = np.asarray(nodes, f)
    lo = np.zeros((nodes_.size, n), dtype=i8)
    length, offset = np.zeros_like(lo), np.zeros_like(lo)
    pmf = np.empty(max(int(nodes_.size * (n_other.sum() + 2 * n)), 1))
    used = binomial_windows(n_other, nodes_, settings.tol, lo, length, offset, pmf)
    cells = n * (n + 3) // 2 + 1
    ksub = int(settings.ksub)
    per_token = {name: (n, f) for name in ("logE", "rat", "dE0", "dE1", "rz0", "rz1")}
    v = named_arena({
        "EA": np.asarray(heads.EA, f), "CW": np.asarray(heads.CW, f),
        "base": np.asarray(layout.base, i8), "n_other": n_other,
        "owner": np.asarray(layout.owner, i8), "first": np.asarray(layout.first, i8),
        "EB": np.asarray(heads.EB, f), "EBR": np.asarray(heads.EBR, f),
        "G0": np.asarray(heads.G0, f), "H0": np.asarray(heads.H0, f), "nodes": nodes_,
        "lo": lo, "length": length, "offset": offset, "pmf": pmf[:max(used, 1)],
        "LAM": np.asarray(heads.LAM, f), "WTS": np.asarray(heads.WTS, f),
        "NL": np.asarray(heads.NL, i8), "delta": np.asarray(delta, f), "phi": np.asarray(phi, f),
        "X": ((ksub, cells), f), "ET": (cells, f), "EHT": (cells, f), **per_token,
        **{name: (d, f) for name in ("KE", "KH", "Lw", "ratio")},
        **{name: (n, f) for name in ("a0", "a1", "b0", "b1")},
        **{name: (d, f) for name in ("oa0", "oa1", "ob0", "ob1")},
        "alive": (nodes_.size, i8), "past": ((ksub, nodes_.size), f),
        "levels": ((K, nodes_.size), i8)})
    layout_ = WordLayout(v["base"], v["n_other"], v["owner"], v["first"])
    windows = _Windows(v["nodes"], v["lo"], v["length"], v["offset"], v["pmf"])
    work = _Work(**{name: v[name] for name in _Work._fields})
    rule = BinomialSettings(ksub=ksub, tail=float(settings.tail), tol=float(settings.tol))
    for k in range(K):
        nl = int(v["NL"][k])
        head = _Head(v["EA"][k], v["CW"][k], v["EB"][k], v["EBR"][k], float(v["G0"][k]),
                     float(v["H0"][k]), v["LAM"][k, :nl], v["WTS"][k, :nl])
        _binomial_delete(head, layout_, windows, rule,
                         _Out(v["delta"][k], v["phi"][k], v["levels"][k]), work)
    delta[...] = v["delta"]
    phi[...] = v["phi"]
    return v["levels"].copy()
