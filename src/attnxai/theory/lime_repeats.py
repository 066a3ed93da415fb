"""Deletion with repeated words, exactly: the chain over positions given the repeated words'
decisions.

lime's deletion (``bow=True``) removes a word with all its occurrences. Split the document's
``d`` words into the ``R`` *repeated* ones (two occurrences or more) and the ``d_s`` words that
occur once. Fix which repeated words are kept, a configuration ``z`` in ``{0, 1}^R``: the dropped
ones' tokens vanish, the kept ones' tokens stay (fixed), and the rest is a document of distinct
free words among fixed tokens. Reading it from left to right, a kept token sits at position
``1 + c + F``: ``c`` free tokens kept before it, ``F`` fixed tokens before it (known from ``z``).
So the chain of :mod:`attnxai.theory.lime_chain`, whose state is ``c``, is exact given ``z``, and
the number of kept *words* is ``|z| + c``: any law of the kept set that depends only on its size
(lime's law, the Shapley weights, independent removal at a fraction ``p``) is followed exactly.

For a weight ``W(m)`` of a kept set of ``m`` words, every quantity the book needs is a sum over
the ``2^d`` kept sets ``S``::

    G_0 = sum_S W(|S|) f(S),        G_j = sum_{S containing j} W(|S|) f(S)

(lime's ``Gamma``; the Shapley value ``phi_j = G_j - mean_k G_k + (f(all) - f(empty)) / d`` with
the weights of :func:`attnxai.theory.shapley_values.size_weights`; the effects at ``p``, Banzhaf
at ``p = 1/2``, from ``W(m) = p^m (1 - p)^(d - m)``). :func:`config_sums` returns, for each
configuration ``z``, its part of ``G``: ``G_0(z)``, ``G_j(z)`` for a free word ``j`` (the chain's
backward pass), ``z_j G_0(z)`` for a repeated word. Summed over all ``2^R`` configurations they
are ``G`` exactly (:mod:`attnxai.theory.deletion_routes`, ``route="exact"``); averaged over
configurations drawn at random, an unbiased estimate (``route="sampled"``).

**Why not a chain over positions whose state holds the open words.** Reading left to right, one
could keep in the state only the decisions of the repeated words whose first occurrence is
behind and last occurrence ahead ("open" words): ``2^open`` instead of ``2^R`` states per count.
But then the words already closed are forgotten while the positions still depend on how many of
their tokens were kept, and lime's law on how many words were: the state needs the kept tokens
and the kept words as two counts, a factor ``d`` more than here, which costs more than
``2^(R - open)`` saves on the test reviews (``book/data/deletion_regime.csv``: median ``R`` 28,
median 20 open words at once, median ``d`` 115, over 3,000 test reviews). Only at a fixed fraction
``p`` (Banzhaf, the curves) does the count of words drop out; not implemented (``2^20`` states
would still be out of reach).

**Cost.** Per head, per node of the lambda rule and per configuration, one forward and one
backward pass over the kept tokens, ``O(L d_s)`` (``L`` the configuration's tokens); the
exponentials ``exp(-lambda G_t(q))`` are computed once per node for all configurations.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ..native import jit
from ..threads import one_blas_thread
from .lime_chain import delete_terms
from .lime_inputs import Tables, feature_owner
from .lime_quadrature import lambda_rule_doubling

__all__ = ["RepeatLayout", "all_configs", "config_sums", "config_weights", "document_output",
           "repeat_layout"]


class RepeatLayout:
    """Which of a document's features repeat: ``owner`` (n,) the feature of each token 1..n,
    ``rep`` (d,) the index among the repeated features (-1 for a word that occurs once),
    ``repeated`` (R,) and ``single`` (d_s,) the features of each kind in feature order,
    ``single_token`` (d_s,) the 0-based token of each single word."""

    def __init__(self, feats: list[np.ndarray], T: int):
        sizes = np.array([np.asarray(f).size for f in feats])
        self.d = len(feats)
        self.owner = feature_owner(feats, T)
        self.repeated = np.flatnonzero(sizes > 1)
        self.single = np.flatnonzero(sizes == 1)
        self.rep = np.full(self.d, -1, dtype=np.int64)
        self.rep[self.repeated] = np.arange(self.repeated.size)
        self.single_token = np.array([int(np.asarray(feats[j]).ravel()[0]) - 1
                                      for j in self.single], dtype=np.int64)

    @property
    def R(self) -> int:
        return int(self.repeated.size)

    @property
    def d_s(self) -> int:
        return int(self.single.size)


def repeat_layout(feats: list[np.ndarray], T: int) -> RepeatLayout:
    """The :class:`RepeatLayout` of ``feats``, a partition of the token positions 1..T-1."""
    return RepeatLayout(feats, T)


def document_output(tb: Tables) -> np.ndarray:
    """Every head's output (K,) on the whole document (every token kept, in place)."""
    T = tb.T
    s = tb.a_tok + tb.b[:, :T]
    e = np.exp(s - s.max(axis=1, keepdims=True))
    return (e * (tb.c_tok + tb.r[:, :T])).sum(axis=1) / e.sum(axis=1)


def all_configs(R: int) -> np.ndarray:
    """(2^R, R) int64: every configuration of the repeated words (row ``b``: bit ``r``)."""
    b = np.arange(2 ** R, dtype=np.int64)
    return (b[:, None] >> np.arange(R, dtype=np.int64)) & 1


def config_weights(W: np.ndarray, lay: RepeatLayout, configs: np.ndarray) -> np.ndarray:
    """``Omega[z, c] = W(|z| + c) C(d_s, c)`` (n_configs, d_s + 1): the chain's weights of the
    number ``c`` of kept single words given configuration ``z`` (it averages over the sets of
    each size, hence the binomial coefficient)."""
    from scipy.special import gammaln

    W = np.asarray(W, dtype=np.float64)
    if W.shape != (lay.d + 1,) or np.any(W < 0) or not np.all(np.isfinite(W)):
        raise ValueError(f"W must hold {lay.d + 1} finite non-negative weights, one per size")
    ds = lay.d_s
    c = np.arange(ds + 1)
    logC = gammaln(ds + 1) - gammaln(c + 1) - gammaln(ds - c + 1)
    k = configs.sum(axis=1) if configs.size else np.zeros(configs.shape[0], dtype=np.int64)
    m = k[:, None] + c[None]
    with np.errstate(divide="ignore"):
        logW = np.log(W)
    return np.exp(logW[m] + logC[None])


class HeadTerms(NamedTuple):
    """One head's deletion terms as the chain reads them (:func:`~attnxai.theory.lime_chain.
    delete_terms`, the value weights shifted): ``ea`` (n,), ``cw`` (n,), ``eb`` (n + 2,),
    ``ebr`` (n + 2,) and ``h0``; with the lambda rule's nodes ``lam`` and weights ``wts``. A
    named tuple, not a dataclass: the compiled chain takes it whole."""

    ea: np.ndarray
    cw: np.ndarray
    eb: np.ndarray
    ebr: np.ndarray
    h0: float
    lam: np.ndarray
    wts: np.ndarray


@jit()          # no reassociation: the sums' order, hence the bits, never depend on alignment
def _config_chain(head, owner, rep, configs, omega):
    """One head (:class:`HeadTerms`): for every configuration ``z = configs[i]`` and every node
    of the lambda rule, the chain over the tokens left (single words free, repeated words fixed
    by ``z``), forward then backward. Returns ``tot`` (n_configs,), ``tot[i] = sum_l wts[l]
    sum_c omega[i, c] E_c[M exp(-lambda_l (N - g0))]``, and ``ont`` (n_configs, n), for a single
    word's token ``t`` the part of ``tot[i]`` from the sets that keep ``t``. Its work arrays:
    ``EE`` (n, n + 2), ``HH`` (n, n + 2): one node's ``exp(-lambda G)`` and the numerator terms
    by (token, position); ``alpha``, ``mu`` (n + 1, d_s + 1): the forward rows; ``beta``,
    ``betaM`` (d_s + 1,); ``steps`` (n, 3) int64: token, free, F."""
    ea, cw, eb, ebr, h0, lam, wts = (head.ea, head.cw, head.eb, head.ebr, head.h0, head.lam,
                                     head.wts)
    n = ea.shape[0]
    C, ds = configs.shape[0], omega.shape[1] - 1
    tot, ont = np.zeros(C), np.zeros((C, n))
    EE, HH = np.zeros((n, n + 2)), np.zeros((n, n + 2))
    alpha, mu = np.zeros((n + 1, ds + 1)), np.zeros((n + 1, ds + 1))
    beta, betaM = np.zeros(ds + 1), np.zeros(ds + 1)
    steps = np.zeros((n, 3), dtype=np.int64)
    for t in range(n):
        for q in range(1, t + 2):
            HH[t, q] = ea[t] * (eb[q] * cw[t] + ebr[q])
    for l in range(lam.shape[0]):
        lm = lam[l]
        w = wts[l]
        for t in range(n):
            for q in range(1, t + 2):
                EE[t, q] = math.exp(-lm * ea[t] * eb[q])
        for i in range(configs.shape[0]):
            # the configuration's tokens, in order: (token, free?, fixed tokens before it)
            L = 0
            F = 0
            for t in range(n):
                r = rep[owner[t]]
                if r >= 0 and configs[i, r] == 0:
                    continue
                steps[L, 0] = t
                steps[L, 1] = 1 if r < 0 else 0
                steps[L, 2] = F
                if r >= 0:
                    F += 1
                L += 1
            alpha[0, 0] = 1.0
            mu[0, 0] = 0.0
            s = 0
            for st in range(L):
                t = steps[st, 0]
                Fb = steps[st, 2]
                ap = alpha[st]
                mp = mu[st]
                ac = alpha[st + 1]
                mc = mu[st + 1]
                if steps[st, 1] == 1:                # a free word: kept or not
                    s += 1
                    inv = 1.0 / s
                    ac[0] = ap[0]
                    mc[0] = mp[0]
                    for c in range(1, s + 1):
                        e = EE[t, c + Fb]
                        h = HH[t, c + Fb]
                        keep = c * inv * e
                        drop = (s - c) * inv
                        a_prev = ap[c - 1]
                        a_same = ap[c] if c < s else 0.0
                        m_same = mp[c] if c < s else 0.0
                        ac[c] = drop * a_same + keep * a_prev
                        mc[c] = drop * m_same + keep * (mp[c - 1] + h * a_prev)
                else:                                 # a kept repeated word: always there
                    for c in range(s + 1):
                        e = EE[t, 1 + c + Fb]
                        h = HH[t, 1 + c + Fb]
                        ac[c] = e * ap[c]
                        mc[c] = e * (mp[c] + h * ap[c])
            acc = 0.0
            for c in range(s + 1):
                acc += omega[i, c] * (mu[L, c] + h0 * alpha[L, c])
                beta[c] = omega[i, c]
                betaM[c] = h0 * omega[i, c]
            tot[i] += w * acc
            for st in range(L - 1, -1, -1):
                t = steps[st, 0]
                Fb = steps[st, 2]
                ap = alpha[st]
                mp = mu[st]
                if steps[st, 1] == 1:
                    inv = 1.0 / s
                    on = 0.0
                    for c in range(1, s + 1):
                        e = EE[t, c + Fb]
                        h = HH[t, c + Fb]
                        keep = c * inv * e
                        on += keep * ((mp[c - 1] + h * ap[c - 1]) * beta[c]
                                      + ap[c - 1] * betaM[c])
                    ont[i, t] += w * on
                    for c in range(s):
                        e = EE[t, c + 1 + Fb]
                        h = HH[t, c + 1 + Fb]
                        keep = (c + 1) * inv * e
                        drop = (s - c) * inv
                        betaM[c] = drop * betaM[c] + keep * (betaM[c + 1] + h * beta[c + 1])
                        beta[c] = drop * beta[c] + keep * beta[c + 1]
                    s -= 1
                else:
                    for c in range(s + 1):
                        e = EE[t, 1 + c + Fb]
                        h = HH[t, 1 + c + Fb]
                        betaM[c] = e * (betaM[c] + h * beta[c])
                        beta[c] = e * beta[c]
    return tot, ont


def config_sums(tb: Tables, feats: list[np.ndarray], W: np.ndarray, configs: np.ndarray,
                ksub: int = 2, shift: np.ndarray | None = None) -> np.ndarray:
    """Each configuration's part of ``G`` (module docstring) for every head: (K, n_configs,
    d + 1), column 0 ``G_0(z)``, column ``1 + j`` ``G_j(z)`` in feature order. ``W`` (d + 1,):
    the weight of a kept set by its size; ``configs`` (n_configs, R) 0/1; ``ksub``: the lambda
    rule's steps per octave (the values' error it leaves:
    :data:`~attnxai.theory.deletion_routes.EXACT_ERRORS`). ``shift`` (K,):
    the sums are of ``f - shift[k]`` for head ``k`` (a constant the values do not depend on,
    which the sampled route subtracts to cut its variance)."""
    lay = repeat_layout(feats, tb.T)
    configs = np.ascontiguousarray(configs, dtype=np.int64)
    if configs.ndim != 2 or configs.shape[1] != lay.R or not np.isin(configs, (0, 1)).all():
        raise ValueError(f"configs must be a 0/1 array (n_configs, {lay.R}), one column per "
                         f"repeated word, got shape {configs.shape}")
    omega = np.ascontiguousarray(config_weights(W, lay, configs))
    C = configs.shape[0]
    out = np.zeros((tb.n_heads, C, lay.d + 1))
    with one_blas_thread():
        for k in range(tb.n_heads):
            tm = delete_terms(tb, k)
            rule = lambda_rule_doubling(tm["n_min"], tm["n_max"], ksub)
            c = 0.0 if shift is None else float(shift[k])
            # f - c = (h0 - c g0 + sum (h - c g)) / N: the value weights move by -c
            cw, h0 = tm["cw"] - c, float(tm["h0"]) - c * float(tm["g0"])
            head = HeadTerms(tm["ea"], cw, tm["eb"], tm["ebr"], h0, rule.lam,
                             rule.with_offset(tm["g0"]))
            tot, ont = _config_chain(head, lay.owner, lay.rep, configs, omega)
            o = out[k]
            o[:, 0] = tot
            o[:, 1 + lay.single] = ont[:, lay.single_token]
            o[:, 1 + lay.repeated] = configs * tot[:, None]
    return out
