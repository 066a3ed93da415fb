"""Deletion with repeated words: independent binomial positions (an approximation).

When a word occurs several times, lime deletes all its occurrences at once, and the chain of
:mod:`attnxai.theory.lime_chain`, whose state is a count, cannot remember which words it has
kept. This module keeps the words' own coupling and approximates the positions instead.

Every word is kept independently with probability ``p`` (the profile form of LIME's limit,
:func:`attnxai.theory.lime_text.beta_from_effects`, ``O(1/d)`` from lime's law). A kept token
``t`` sits at ``1 + o_t + B_t``: ``o_t`` earlier occurrences of its own word (kept with it) and
``B_t ~ Binomial(n_t, p)`` kept tokens among the ``n_t`` earlier tokens of other words, the
``B_t`` of different tokens treated as independent. Then ``E[exp(-lambda N)]`` factorises over
words, each word's factor being the product over its tokens of ``E_B[exp(-lambda G_t)]``, and
``E[M/N]`` is the same lambda integral as for replacement. Keeping rather than deleting word j
moves every later token of another word one position further: its position law becomes
``1 + o_t + z + Binomial(n_t - 1, p)`` (``z = 1`` kept, 0 deleted), counted once per word
(a word's second and later occurrences before ``t`` are not added, which keeps the expansion
stable), and its word's factor is recomputed with it, the changes adding up over tokens.

For independent removal it is exact when positions do not matter (a model without position
codes); lime's own law adds an ``O(1/d)`` term, and with positions it is an approximation, measured
in chapter 6 against exhaustive enumeration on small random models and
against LIME on the trained one.

**Cost.** The book's earlier implementation computed the same thing with numpy in about a second
per review; :func:`~attnxai.theory.lime_kernels.binomial_delete` compiles it (``benchmarks/bench_lime_limit.py`` times a whole
review). Its work is one evaluation per (head, node ``p``, node ``lambda``, token), each a sum
over the binomial window of the token's position (``+-8`` standard deviations): on a 255-token
review of the trained model, about 0.95 million evaluations (6 heads x 25 nodes ``p`` x about 25
nodes ``lambda`` x 255 tokens) of about 50 terms. Three things cut its time without changing the
answer beyond rounding:

* the window sums and the table rows index *views* (``pmf[o:o + ln]``, then ``[k]``): an index
  ``o + k`` may be negative as far as numba knows, and its wraparound check kept LLVM from
  vectorising the sums (2.3x on the whole call);
* the binomial windows are computed once per review, for every head (the heads then run one
  call each: see :func:`~attnxai.theory.lime_kernels.binomial_delete` for why not one compiled loop);
* **each node ``p`` stops its lambda rule early.** ``E[M/N] = sum_l w_l E[M exp(-lambda_l N)]``
  and, for ``lambda >= lambda_l``, the rest of the sum is at most about ``|f|_max
  E[exp(-lambda_l N / 2)]`` (the trapezoid sum of the decreasing ``lambda N exp(-lambda N)``
  is below its integral plus its first term); conditioning on ``z_j`` divides ``E`` by at most
  ``min(p, 1 - p)``. So once ``E[exp(-lambda N / 2)] < TAIL min(p, 1 - p)`` (``TAIL = 1e-16``),
  the node's remaining levels change nothing at float64 precision. The rule must reach
  ``lambda g0 = 20`` for the configuration where every word is deleted; on trained reviews the
  words that carry a head's attention are few, so the configurations where they are all deleted
  keep ``E`` from falling fast, and about 12 % of the (node, lambda) pairs are skipped. Tested
  against the untruncated rule (``tail=0``).

**Where the time goes** (``python benchmarks/deletion_cost.py``, which measures each part on
255-token reviews of the trained model, one thread): the evaluations above take about 48 ms, i.e.
about 47 ns each once the tables are left out. The parts: building every level's
``exp(-lambda G)`` tables, about 3 ms; the window sums, about 6 ns of the 47 (the same kernel on
windows cut to one term takes 41 ns per evaluation), although the windows hold about 46 million
terms, three quarters of them *flat* (``lambda e_t`` times the spread of ``e^b`` over the window
below 0.02), a quarter *full* (the terms differ by factors of order one), almost none *dead* (all
below ``e^-40``); the ``2 n + 2 d`` logarithms per (head, node, level) alone, about 9 ms; the rest
of the per-token and per-word algebra (divisions, the gathers by word, two exponentials per word),
the other 30 ms or so.

**Why not 10 ms per review.** Measured alone, the tables, the window sums and the logarithms
already take about 18 ms. The logarithms could go (products carried with a separate exponent), but
the tables and the sums (about 9 ms) would still leave about 1 ms for everything else: about 1 ns,
a few cycles, per evaluation for the rest of its arithmetic (a few divisions, a dozen products,
the gathers by word), which would all have to be vectorised across tokens. This is an estimate
from the measured parts, not a proof, but it leaves no margin: the way to 10 ms is fewer
evaluations. The rule in ``p`` needs its 25 nodes for a relative error of a few 1e-4 (below), and
every token has its own position law. The rule in ``lambda`` is a trapezoid in ``log lambda``
whose nodes double (which is what makes each level's tables a product away from the previous
level's), 20 to 35 levels per head on these reviews; a rule fitted to ``1/N`` over its range might
need fewer (not tried: its nodes would not double, and every table entry would then cost an
exponential). The other deletion approximations, the chain over tokens and the mean positions, are
cheaper but not under 10 ms either (about 16 and 15 ms on these reviews,
``python benchmarks/bench_lime_limit.py --approximations``), and they are less accurate on the
trained model (chapter 6, against LIME over the test set).

The rule in ``p`` sets the accuracy here, not the rule in ``lambda``: the windows move with
``p``, so the effects vary on the scale ``sqrt(p (1 - p) / n_t)`` and 25 Chebyshev nodes leave a
relative error of a few 1e-4 on 255-token reviews (13 to 33 nodes in the same script);
replacement, whose effects are smooth in ``p``, is within about 1e-10 with 25.
"""

from __future__ import annotations

import numpy as np

from .lime_inputs import Tables, token_layout
from .lime_kernels import TAIL, BinomialHeads, BinomialSettings, WordLayout, binomial_delete
from .lime_quadrature import lambda_rule_doubling

__all__ = ["binomial_effects"]


def binomial_effects(tb: Tables, feats: list[np.ndarray], nodes: np.ndarray, ksub: int = 1,
                     tail: float = TAIL, counts: np.ndarray | None = None
                     ) -> tuple[np.ndarray, np.ndarray]:
    """``delta`` (K, n_nodes, d) and ``Phi`` (K, n_nodes) of the binomial-position approximation
    (module docstring) at the kept fractions ``nodes``. ``tail``: a node stops once the rest of
    the lambda rule adds less than ``2 tail`` times the largest output (0: never stops);
    ``counts`` (K, n_nodes) int64, if given, receives the number of lambda levels each head
    evaluated at each node (a prefix of its rule: a node that stops never restarts)."""
    K, T, d = tb.n_heads, tb.T, len(feats)
    n = T - 1
    owner, o, n_other = token_layout(feats, T)
    first = np.array([int(np.min(f)) - 1 for f in feats], dtype=np.int64)
    EA, EB, EBR = np.zeros((K, n)), np.zeros((K, n + 2)), np.zeros((K, n + 2))
    G0, H0, rules = np.zeros(K), np.zeros(K), []
    for k in range(K):
        a = tb.a_tok[k, 1:]
        amax = a.max()
        bmax = tb.b[k, :n + 2].max()
        EA[k] = np.exp(a - amax)
        EB[k] = np.exp(tb.b[k, :n + 2] - bmax)
        EBR[k] = EB[k] * tb.r[k, :n + 2]
        G0[k] = float(np.exp(tb.a_tok[k, 0] + tb.b[k, 0] - amax - bmax))
        H0[k] = G0[k] * float(tb.c_tok[k, 0] + tb.r[k, 0])
        best = np.maximum.accumulate(EB[k, 1:n + 2])        # max over positions 1..t+1
        n_max = G0[k] + float(np.sum(EA[k] * best[1:n + 1]))
        rules.append(lambda_rule_doubling(G0[k], n_max, ksub))
    lmax = max(r.lam.size for r in rules)
    LAM, WTS = np.ones((K, lmax)), np.zeros((K, lmax))
    NL = np.array([r.lam.size for r in rules], dtype=np.int64)
    for k, r in enumerate(rules):
        LAM[k, :r.lam.size] = r.lam
        WTS[k, :r.lam.size] = r.with_offset(G0[k])
    delta = np.zeros((K, nodes.size, d))
    phi = np.zeros((K, nodes.size))
    heads = BinomialHeads(EA, np.ascontiguousarray(tb.c_tok[:, 1:]), EB, EBR, G0, H0, LAM, WTS,
                          NL)
    evaluated = binomial_delete(heads, WordLayout(1 + o, n_other, owner, first), nodes,
                                BinomialSettings(ksub=ksub, tail=tail), delta, phi)
    if counts is not None:
        counts[...] = evaluated
    return delta, phi
