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
(``tests/theory/test_theory_lime_chain.py`` compiles, then loads, and compares the bits). A loop indexes
*views* of a row (``A[xo:xo + t]``, then ``[c]``) rather than ``A[xo + c]``: numba must treat
``xo + c`` as possibly negative (Python's wraparound), a branch per access that stops LLVM from
vectorising, while an index from ``range()`` is known to be non-negative (measured: 1.5x on the
deletion chain, 2.3x on :mod:`attnxai.theory.lime_binomial`'s window sums).

The kernels, one compiled family per module:

    chain        chain_delete, chain_replace (attnxai.theory.lime_chain)
    bernoulli    bernoulli_sums, fold_profile (attnxai.theory.lime_independent)
    binomial     binomial_delete, binomial_windows, binomial_means (attnxai.theory.lime_binomial)
    arena        one aligned buffer per call (plain numpy)
"""

from __future__ import annotations

from .arena import aligned, aligned_empty, arena, named_arena
from .bernoulli import BernoulliTerms, ProfileNodes, bernoulli_sums, fold_profile
from .binomial import (TAIL, BinomialHeads, BinomialSettings, WordLayout, binomial_delete,
                       binomial_means, binomial_windows)
from .chain import ChainLaw, DeleteTerms, ReplaceTerms, chain_delete, chain_replace

__all__ = ["TAIL", "BernoulliTerms", "BinomialHeads", "BinomialSettings", "ChainLaw", "DeleteTerms",
           "ProfileNodes", "ReplaceTerms", "WordLayout", "aligned", "aligned_empty", "arena",
           "bernoulli_sums", "binomial_delete", "binomial_means", "binomial_windows",
           "chain_delete", "chain_replace", "fold_profile", "named_arena"]
