"""The binomial positions' compiled loops (deletion with repeated words). One compiled kernel
family (:func:`attnxai.native.jit`; plain Python without numba, same numbers, much slower):
:func:`binomial_delete` (with :func:`binomial_windows`), the binomial-position approximation at
every (head, node p, node lambda, token) (:mod:`attnxai.theory.lime_binomial`), and
:func:`binomial_means`, the binomial means of the position terms at one node ``p``
(:mod:`attnxai.theory.lime_independent`).

Reproducibility (fixed order, one arena per call, called from Python):
:mod:`attnxai.theory.lime_kernels`.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ...native import REASSOCIATE, jit
from .arena import named_arena
from .chain import table_entry

__all__ = ["TAIL", "BinomialHeads", "BinomialSettings", "WordLayout", "binomial_delete",
           "binomial_means", "binomial_windows"]


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
                    xr[q] = table_entry(lm * e_t * ebq[q])
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
