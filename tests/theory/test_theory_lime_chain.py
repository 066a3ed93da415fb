"""LIME's limit by the chain over the number of kept tokens (lime_chain), its quadratures
(lime_quadrature), its compiled loops (lime_kernels): exactness against the sum over all 2^d
perturbations, agreement with the previous implementation, robustness, reproducibility."""

from __future__ import annotations

import copy
import itertools
import json
import math
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

from attnxai.theory import lime_attention as la
from attnxai.theory import lime_binomial as lb
from attnxai.theory import lime_chain as lc
from attnxai.theory import lime_exhaustive as lx
from attnxai.theory import lime_kernels as lk
from attnxai.theory import lime_quadrature as lq
from attnxai.theory import lime_text as lt
from conftest import make_tiny, tiny_text

DATA = Path(__file__).parents[1] / "data"


def distinct_doc(seed: int, n: int, vocab: int = 30) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.concatenate([[1], rng.choice(np.arange(3, vocab), n, replace=False)])


# The reference runs the model's own forward pass on every perturbed document
# (lime_exhaustive.perturbed_outputs, logit 1): none of the chain, its quadratures or its
# compiled loops calls it (they evaluate the float64 projections), so it shares no code with them.
def exact_limit(model, ids, feats, bow, nu):
    """LIME's n -> infinity limit by enumerating the 2^d perturbations (lime_text.beta_exact)."""
    return lt.beta_exact(lambda Z: lx.perturbed_outputs(model, ids, feats, Z, bow), len(feats),
                         nu)[1]


def bernoulli_truth(model, ids, feats, p, bow):
    """E[f | z_j = 1] - E[f | z_j = 0] and E[f], every feature kept independently w.p. p."""
    Z = np.array(list(itertools.product((0.0, 1.0), repeat=len(feats))))
    prob = np.prod(np.where(Z == 1, p, 1 - p), axis=1)
    y = lx.perturbed_outputs(model, ids, feats, Z, bow)
    on = (prob * y) @ Z / (prob @ Z)
    off = (prob * y) @ (1 - Z) / (prob @ (1 - Z))
    return on - off, float(prob @ y)


# ----------------------------------------------------------------------------- SymPy
@pytest.mark.parametrize("law", ["lime", "bernoulli"])
@pytest.mark.parametrize("removal", ["delete", "replace"])
def test_symbolic_chain_equals_direct_sum(law, removal):
    res = la.symbolic_chain(3, law, removal)
    assert all(d == 0 for d in res["difference"])


# ----------------------------------------------------------------------------- exactness
@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("nu", [25.0, 8.0, math.inf])
def test_deletion_chain_is_exact_for_distinct_words(seed, nu):
    """Deletion, distinct words: the chain under lime's law is LIME's limit to rounding."""
    pre = make_tiny(seed=seed, n_heads=2, max_len=20, scale=1.5)
    ids = distinct_doc(seed, 8)
    feats = la.document_features(ids[1:].tolist(), True)
    got = la.lime_limit(pre.model, ids, bow=True, kernel_width=nu, ksub=4)
    np.testing.assert_allclose(got, exact_limit(pre.model, ids, feats, True, nu), atol=1e-10)
    # the default rule (steps log 2) is within its stated ~1e-5 relative accuracy
    ref = np.abs(got).max()
    assert np.abs(la.lime_limit(pre.model, ids, bow=True, kernel_width=nu) - got).max() < 3e-5 * ref


@pytest.mark.parametrize("seed", [2, 3])
def test_replacement_chain_is_exact_with_repeats_and_groups(seed):
    """Replacement: exact for any document, and for features grouping several positions."""
    pre = make_tiny(seed=seed, n_heads=3, max_len=20, scale=1.5)
    rng = np.random.default_rng(seed)
    ids = np.concatenate([[1], rng.choice(np.arange(3, 9), 9)])      # repeated words
    feats = la.document_features(ids[1:].tolist(), False)
    got = la.lime_limit(pre.model, ids, bow=False, law="lime", ksub=4)
    np.testing.assert_allclose(got, exact_limit(pre.model, ids, feats, False, 25.0), atol=1e-10)
    grouped = la.document_features(ids[1:].tolist(), True)              # a word = its positions
    got = la.lime_limit(pre.model, ids, bow=False, law="lime", ksub=4, features=grouped)
    np.testing.assert_allclose(got, exact_limit(pre.model, ids, grouped, False, 25.0), atol=1e-10)


@pytest.mark.parametrize("p", [0.0, 0.3, 0.85, 1.0])
def test_deletion_chain_is_exact_for_independent_removal(p):
    """The same chain with weights p, 1 - p: the effects of independent removal, exactly."""
    pre = make_tiny(seed=4, n_heads=2, max_len=20, scale=1.5)
    ids = distinct_doc(4, 8)
    feats = la.document_features(ids[1:].tolist(), True)
    tb = la.tables(pre.model, ids)
    delta, phi = lc.chain_profile(tb, np.array([p]), ksub=4)
    truth_d, truth_phi = bernoulli_truth(pre.model, ids, feats, p, True) if 0 < p < 1 else (None, None)
    if truth_d is None:   # p = 0 or 1: only one configuration on one side
        return
    np.testing.assert_allclose(delta.mean(0)[0], truth_d, atol=1e-10)
    assert phi.mean(0)[0] == pytest.approx(truth_phi, abs=1e-10)


def test_replacement_profile_is_exact_for_independent_removal():
    pre = make_tiny(seed=5, n_heads=2, max_len=20, scale=2.0)
    rng = np.random.default_rng(5)
    ids = np.concatenate([[1], rng.choice(np.arange(3, 9), 9)])
    feats = la.document_features(ids[1:].tolist(), True)
    eff = la.conditional_effects(pre.model, ids, bow=False, features=feats, law="continuous",
                                 n_nodes=4, lambda_step=0.25)
    for i, p in enumerate(eff.law.p):
        truth_d, truth_phi = bernoulli_truth(pre.model, ids, feats, p, False)
        np.testing.assert_allclose(eff.delta[i], truth_d, atol=1e-9)
        assert eff.phi[i] == pytest.approx(truth_phi, abs=1e-9)


def test_independent_removal_against_lime_law():
    """Independent removal (the profile form) is exact for a model linear in z, and off by
    O(1/d) otherwise; lime's law (the chain) is exact in both cases."""
    pre = make_tiny(seed=6, n_heads=2, max_len=20, scale=2.0)
    ids = distinct_doc(6, 8)
    feats = la.document_features(ids[1:].tolist(), False)
    exact = exact_limit(pre.model, ids, feats, False, 25.0)
    lime_law = la.lime_limit(pre.model, ids, bow=False, law="lime", ksub=4)
    profile = la.lime_limit(pre.model, ids, bow=False, law="discrete", lambda_step=0.25)
    np.testing.assert_allclose(lime_law, exact, atol=1e-10)
    assert np.abs(profile - exact).max() > 1e-4 * np.abs(exact).max()
    linear = copy.deepcopy(pre.model)
    with torch.no_grad():
        linear.W_q.zero_()                           # uniform attention: f linear in z
    exact = exact_limit(linear, ids, feats, False, 25.0)
    for law in ("lime", "discrete"):
        got = la.lime_limit(linear, ids, bow=False, law=law, ksub=4, lambda_step=0.25)
        np.testing.assert_allclose(got, exact, atol=1e-10)


def test_repeated_words_token_approximation():
    """Deletion with a repeated word: the chain runs over tokens (approximate); the exact
    answer by enumeration stays close on a mild model, and the profile law's chain agrees with
    lime's law to O(1/d)."""
    pre = make_tiny(seed=7, n_heads=2, max_len=20, scale=0.7)
    ids = np.array([1, 5, 9, 5, 12, 14, 9, 20, 21])
    feats = la.document_features(ids[1:].tolist(), True)
    assert len(feats) == 6
    exact = exact_limit(pre.model, ids, feats, True, 25.0)
    got = la.lime_limit(pre.model, ids, bow=True, ksub=4)
    err = np.linalg.norm(got - exact) / np.linalg.norm(exact)
    assert 0 < err < 0.5


def test_lambda_rule_errors_are_the_quoted_ones():
    """RULE_ERRORS (quoted by the docstrings) is each rule's worst relative error on 1/N over its
    stated population of N, rounded up: measured <= quoted <= 1.1 x measured."""
    ranges = ((0.3, 4e4), (1.0, 300.0), (1e-3, 1e6), (0.05, 2e3), (2.0, 2.5))
    for (kind, step), quoted in lq.RULE_ERRORS.items():
        worst = 0.0
        for n_min, n_max in ranges:
            r = (lq.lambda_rule_doubling(n_min, n_max, step) if kind == "doubling"
                 else lq.lambda_rule_profile(n_min, n_max, step))
            N = np.geomspace(n_min, n_max, 2000)
            worst = max(worst, float(np.abs((np.exp(-np.outer(N, r.lam)) @ r.wts) * N - 1).max()))
        assert worst <= quoted <= 1.1 * worst, (kind, step, worst, quoted)


# ----------------------------------------------------------------------------- previous code
def test_replacement_equals_previous_implementation():
    """bow=False (independent removal, the default there) and the mean field give the previous
    implementation's coefficients (stored from commit c2fc43f) to 1e-10."""
    ref = json.loads((DATA / "lime_limit_c2fc43f.json").read_text())
    for case in ref["cases"]:
        pre = make_tiny(seed=case["seed"], n_heads=case["n_heads"], max_len=40,
                        scale=case["scale"])
        text, nu = case["text"], case["kernel_width"]
        np.testing.assert_allclose(la.lime_limit(pre, text, bow=False, kernel_width=nu),
                                   case["replace"], rtol=0, atol=1e-10)
        np.testing.assert_allclose(la.lime_limit(pre, text, bow=False, kernel_width=nu,
                                                 method="meanfield"),
                                   case["replace_meanfield"], rtol=0, atol=1e-10)
        np.testing.assert_allclose(la.lime_limit(pre, text, bow=True, kernel_width=nu,
                                                 law="discrete", method="meanfield"),
                                   case["delete_meanfield"], rtol=0, atol=1e-10)
        # deletion with repeated words: the same binomial-position approximation (by name: the
        # default is now exact on such short texts), on the doubling lambda rule instead of the
        # old one (quadrature errors ~1e-5 relative)
        old = np.asarray(case["delete"])
        np.testing.assert_allclose(la.lime_limit(pre, text, bow=True, kernel_width=nu,
                                                 positions="binomial"), old,
                                   rtol=0, atol=3e-5 * np.abs(old).max())


# ----------------------------------------------------------------------------- quadrature
@pytest.mark.parametrize("rule", ["doubling", "profile"])
def test_lambda_rules_integrate_one_over_n(rule):
    n_min, n_max = 0.3, 4.0e4
    r = (lq.lambda_rule_doubling(n_min, n_max, 1) if rule == "doubling"
         else lq.lambda_rule_profile(n_min, n_max, 0.7))
    N = np.geomspace(n_min, n_max, 200)
    approx = np.exp(-np.outer(N, r.lam)) @ r.wts
    assert np.abs(approx * N - 1).max() < 2e-5       # sqrt(8 pi^2/h) exp(-pi^2/h) ~ 1.1e-5
    if rule == "profile":   # the folded tail equals the original implementation's nodes
        lo, hi, h = math.log(1e-10 / n_max), math.log(40 / n_min), 0.7
        lam = np.exp(np.arange(lo, hi + h, h))
        full = np.exp(-np.outer(N, lam)) @ (h * lam)
        assert np.abs(approx / full - 1).max() < 1e-11
        assert r.lam.size < lam.size - 20
    else:
        np.testing.assert_array_equal(r.lam[1:], 2 * r.lam[:-1])


def test_doubling_table_matches_exp():
    """The chain's exp(-lambda G) table by doubling (no exp call) against exp at every node:
    the same nodes with ``ksub = number of nodes`` initialise every node directly."""
    pre = make_tiny(seed=8, n_heads=2, max_len=30, scale=1.5)
    ids = distinct_doc(8, 20)
    tb = la.tables(pre.model, ids)
    for k in range(2):
        tm = lc.delete_terms(tb, k)
        rule = lq.lambda_rule_doubling(tm["n_min"], tm["n_max"], 1)
        om = lc.lime_weights(20, 25.0)
        outs = []
        for ksub in (1, rule.lam.size):
            on, off = np.zeros(21), np.zeros(21)
            lk.chain_delete(lk.DeleteTerms(tm["ea"], tm["cw"], tm["eb"], tm["ebr"], tm["h0"]),
                            lk.ChainLaw(om, -1.0, rule.lam, rule.with_offset(tm["g0"]), ksub),
                            on, off)
            outs.append(on)
        np.testing.assert_allclose(outs[0], outs[1], rtol=1e-12, atol=1e-15)


# ----------------------------------------------------------------------------- robustness
def test_reproducible_bit_for_bit():
    """Two identical calls give the same bits, whatever happened in between (allocations, torch
    on one thread: both used to move the kernels' arrays relative to each other and switch
    LLVM's vector loops to their scalar fallback, ~1e-14 apart)."""
    pre = make_tiny(seed=9, n_heads=3, max_len=40)
    text = tiny_text(35, seed=9)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        for kw in ({"bow": True}, {"bow": False}, {"bow": False, "law": "lime"},
                   {"bow": True, "law": "lime"}, {"bow": True, "law": "discrete", "positions": "mean"}):
            first = la.lime_limit(pre, text, **kw)
            for size in (17, 1001, 3):
                junk = [np.empty(size * k) for k in range(1, 6)]      # move the allocator around
                with torch.no_grad():
                    pre.model.W_e[torch.arange(size % 7 + 1)].sum().item()
                again = la.lime_limit(pre, text, **kw)
                del junk
                assert np.array_equal(first, again), kw
    finally:
        torch.set_num_threads(threads)


def test_narrow_kernel_is_refused_or_right():
    pre = make_tiny(seed=10, n_heads=2, max_len=40)
    short = distinct_doc(10, 9)
    for law in ("lime", "discrete"):
        with pytest.raises(ValueError, match="underflow"):
            la.lime_limit(pre.model, short, bow=False, kernel_width=0.5, law=law)
    # a longer document keeps enough weights at width 0.5: the chain is still exact
    ids = distinct_doc(11, 8)
    feats = la.document_features(ids[1:].tolist(), True)
    got = la.lime_limit(pre.model, ids, bow=True, kernel_width=3.0, ksub=4)
    np.testing.assert_allclose(got, exact_limit(pre.model, ids, feats, True, 3.0), atol=1e-9)


def test_huge_scores_are_refused_or_right():
    pre = make_tiny(seed=12, n_heads=2, max_len=20)
    ids = distinct_doc(12, 7)
    feats = la.document_features(ids[1:].tolist(), True)
    big = copy.deepcopy(pre.model)
    with torch.no_grad():
        big.W_q.mul_(8.0)                              # peaked, still representable: exact
    got = la.lime_limit(big, ids, bow=True, ksub=4)
    np.testing.assert_allclose(got, exact_limit(big, ids, feats, True, 25.0),
                               atol=1e-8 * max(1.0, np.abs(got).max()))
    with torch.no_grad():
        big.W_q.mul_(1000.0)
    for bow in (True, False):
        with pytest.raises(ValueError, match="too wide a range"):
            la.lime_limit(big, ids, bow=bow)


def test_nan_weights_are_named():
    pre = make_tiny(seed=13, n_heads=2, max_len=20)
    ids = distinct_doc(13, 6)
    bad = copy.deepcopy(pre.model)
    with torch.no_grad():
        bad.W_v[0, 0, 0] = float("nan")
    with pytest.raises(ValueError, match="W_v holds NaN"):
        la.lime_limit(bad, ids)
    bad = copy.deepcopy(pre.model)
    with torch.no_grad():
        bad.W_e[ids[3], 1] = float("inf")
    with pytest.raises(ValueError, match="W_e .* infinite"):
        la.lime_limit(bad, ids, bow=False)


def test_binomial_windows_match_scipy():
    from scipy.stats import binom

    n_other = np.array([0, 1, 2, 5, 40, 200], dtype=np.int64)
    nodes = np.array([0.0, 0.02, 0.5, 0.97, 1.0])
    lo = np.zeros((5, 6), np.int64)
    length, offset = np.zeros_like(lo), np.zeros_like(lo)
    pmf = np.zeros(5 * (n_other.sum() + 12))
    lk.binomial_windows(n_other, nodes, 1e-14, lo, length, offset, pmf)
    for i, p in enumerate(nodes):
        for t, n in enumerate(n_other):
            if n == 0:
                assert length[i, t] == 0
                continue
            full = binom.pmf(np.arange(n), n - 1, p)
            got = np.zeros(n)
            got[lo[i, t]:lo[i, t] + length[i, t]] = pmf[offset[i, t]:offset[i, t] + length[i, t]]
            np.testing.assert_allclose(got, full, atol=1e-13 * full.max())


def test_repeated_words_defaults():
    """With a repeated word the default is the exact route when it fits its budget (lime's
    law, every configuration of the repeated words), beyond it the binomial-position
    approximation (a word's occurrences deleted together, independent removal); the
    distinct-word default the chain; several kernel widths in one call give each width's
    answer."""
    pre = make_tiny(seed=15, n_heads=2, max_len=20, scale=1.0)
    ids = np.array([1, 5, 9, 5, 12, 5, 9, 20, 21, 5])
    feats = la.document_features(ids[1:].tolist(), True)
    np.testing.assert_allclose(la.lime_limit(pre.model, ids, bow=True),
                               exact_limit(pre.model, ids, feats, True, 25.0), atol=1e-10)
    with pytest.warns(la.LimitApproximationWarning, match="binomial"):
        binom_ = la.lime_limit(pre.model, ids, bow=True, budget=0)
    np.testing.assert_array_equal(binom_, la.lime_limit(pre.model, ids, bow=True,
                                                        law="discrete", positions="binomial"))
    distinct = distinct_doc(15, 6)
    np.testing.assert_array_equal(la.lime_limit(pre.model, distinct, bow=True),
                                  la.lime_limit(pre.model, distinct, bow=True, law="lime"))
    for budget in (0, None):
        kw = {} if budget is None else {"budget": budget}
        both = la.lime_limit_heads_by_width(pre.model, ids, [25.0, math.inf], bow=True, **kw)
        for nu in (25.0, math.inf):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", la.LimitApproximationWarning)
                one = la.lime_limit(pre.model, ids, bow=True, kernel_width=nu, **kw)
            np.testing.assert_allclose(both[nu].mean(0), one, atol=1e-13)


def test_aligned_arrays_and_arena():
    for shape in (5, (3, 7), 1):
        a = lk.aligned_empty(shape)
        assert a.ctypes.data % 64 == 0 and a.flags.c_contiguous
    b = lk.aligned(np.arange(10.0)[1:])
    assert b.ctypes.data % 64 == 0 and np.array_equal(b, np.arange(1.0, 10.0))
    x, i, w = lk.arena(np.arange(5.0), np.array([3, 1, 2]), ((2, 3), np.float64))
    assert np.array_equal(x, np.arange(5.0)) and i.dtype == np.int64 and i.tolist() == [3, 1, 2]
    assert w.shape == (2, 3) and all(v.ctypes.data % 64 == 0 for v in (x, i, w))
    offsets = [v.ctypes.data - x.ctypes.data for v in (i, w)]
    x2, i2, w2 = lk.arena(np.ones(5), np.zeros(3, dtype=int), ((2, 3), np.float64))
    assert [v.ctypes.data - x2.ctypes.data for v in (i2, w2)] == offsets   # fixed layout


def test_feature_owner_and_token_layout():
    """The vectorised owner map agrees with its definition (token t belongs to the feature that
    lists position t), for features in any order and of any size; the layout counts earlier
    occurrences and earlier tokens of other features."""
    from attnxai.theory.lime_inputs import feature_owner, token_layout
    rng = np.random.default_rng(3)
    for T in (2, 9, 40):
        labels = rng.integers(0, max(T // 3, 1), size=T - 1)
        feats = [np.flatnonzero(labels == v) + 1 for v in np.unique(labels)]
        feats = [feats[j] for j in rng.permutation(len(feats))]
        owner = feature_owner(feats, T)
        for j, f in enumerate(feats):
            assert (owner[f - 1] == j).all()
        owner2, o, n_other = token_layout(feats, T)
        assert np.array_equal(owner2, owner)
        for t in range(T - 1):
            assert o[t] == np.sum(owner[:t] == owner[t]) and n_other[t] == t - o[t]
    assert feature_owner([], 1).size == 0


def test_lime_weights_and_sigma_solve():
    d, nu = 9, 25.0
    om = lc.lime_weights(d, nu)
    assert om[d] == 0 and om.sum() == pytest.approx(lt.moments(d, nu).alpha0)
    rng = np.random.default_rng(14)
    gamma = rng.normal(size=(2, d + 1))
    want = np.stack([lt.beta_from_gamma(g, nu)[1] for g in gamma])
    np.testing.assert_allclose(lc.solve_sigma(gamma, nu), want, atol=1e-10)


def test_sigma_solve_of_many_rows_is_each_row_alone_bit_for_bit():
    """solve_sigma treats every row at once: each row's coefficients are the bits of that row
    solved alone (its own fixed-order sum, whatever the other rows and the layout of gamma), as
    the sampled route's batches need (a batch's values must not depend on the batch beside it);
    and they are Sigma^{-1} Gamma."""
    rng = np.random.default_rng(15)
    for trial in range(60):
        d = int(rng.integers(2, 41)) if trial % 10 else int(rng.integers(129, 400))
        nu = float(rng.choice([25.0, 8.0, 100.0, math.inf]))
        gamma = rng.normal(size=(int(rng.integers(1, 200)), d + 1))
        gamma *= 10.0 ** rng.integers(-3, 4, size=gamma.shape)
        got = lc.solve_sigma(gamma, nu)
        alone = np.concatenate([lc.solve_sigma(g[None], nu) for g in gamma])
        assert np.array_equal(got.view(np.int64), alone.view(np.int64)), (d, nu)
        for layout in (np.asfortranarray(gamma), np.repeat(gamma, 2, axis=0)[::2]):
            assert np.array_equal(lc.solve_sigma(layout, nu).view(np.int64), got.view(np.int64))
        want = gamma @ lt.sigma_inverse(d, nu)[:, 1:]
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-9 * np.abs(want).max())
    with pytest.raises(ValueError, match="gamma must be"):
        lc.solve_sigma(np.zeros(5), 25.0)


def test_binomial_truncated_lambda_rule_changes_nothing():
    """Each node p stops its lambda rule once the rest is below TAIL (module docstring of
    lime_binomial): the same effects as the whole rule to rounding, with fewer evaluations."""
    pre = make_tiny(seed=21, n_heads=2, max_len=130, scale=1.5)
    rng = np.random.default_rng(21)
    # 120 tokens of the 26 words 4..29: P(every word deleted) = (1 - p)^26, negligible at the
    # upper nodes, which stop early (on a review of 150 words, the middle ones too)
    ids = np.concatenate([[1], rng.integers(4, 30, size=120)])
    feats = la.document_features(ids[1:].tolist(), True)
    tb = la.tables(pre.model, ids)
    nodes = np.linspace(0.0, 0.99, 9)
    short, full = np.zeros((2, nodes.size), np.int64), np.zeros((2, nodes.size), np.int64)
    d1, p1 = lb.binomial_effects(tb, feats, nodes, 1, counts=short)
    d0, p0 = lb.binomial_effects(tb, feats, nodes, 1, tail=0.0, counts=full)
    np.testing.assert_allclose(d1, d0, rtol=0, atol=1e-14 * np.abs(d0).max())
    np.testing.assert_allclose(p1, p0, rtol=0, atol=1e-14 * np.abs(p0).max())
    assert np.all(short <= full) and np.all(short.sum(1) < full.sum(1))   # it did stop nodes
    assert np.all(full == full[:, :1])               # untruncated: every node, every level


_FRESH_OR_CACHED = r"""
import json, sys
from pathlib import Path
import attnxai
from attnxai import fastlime
from attnxai.fastlime import kernels as fk
from attnxai.theory import lime_attention as la, lime_binomial as lb, lime_kernels as lk
pre = attnxai.pretrained("quick", progress=False)
text = Path(sys.argv[1]).read_text()
out = [la.lime_limit(pre, text, bow=True), la.lime_limit(pre, text, bow=False),
       la.lime_limit(pre, text, bow=True, law="lime"), la.lime_limit(pre, text, bow=False, law="lime")]
out += [fastlime.explain_instance(pre, text, bow=b, num_samples=300, random_state=1).coef for b in (True, False)]
kernels = [f for m in (lb, lk, fk) for f in vars(m).values()
           if hasattr(getattr(f, "stats", None), "cache_hits")]            # numba dispatchers
hits = sum(sum(f.stats.cache_hits.values()) for f in kernels)
print(json.dumps({"coef": [[float(x).hex() for x in o] for o in out], "hits": hits}))
"""


def test_same_bits_freshly_compiled_or_from_numba_cache(quick_model, imdb, tmp_path):
    """numba compiles the kernels on first use and caches the machine code; a later process loads
    it. Both must give the same bits (a compiled function that called the binomial kernel did
    not: 1e-16 apart on trained reviews), or a resumed corpus run would mix two roundings. Two
    processes on an empty cache folder, a 255-token review of the quick model, the closed forms
    and the fast LIME in both modes: the first process compiles, the second loads."""
    import os
    import subprocess
    import sys

    from attnxai.experiment import full_length_reviews

    (tmp_path / "review.txt").write_text(full_length_reviews(imdb, 1, quick_model.model.max_len)[0])
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache")}
    script = tmp_path / "fresh_or_cached.py"
    script.write_text(_FRESH_OR_CACHED)
    runs = [json.loads(subprocess.run([sys.executable, str(script), str(tmp_path / "review.txt")],
                                      env=env, capture_output=True, text=True, check=True,
                                      timeout=600).stdout.splitlines()[-1]) for _ in range(2)]
    assert runs[0]["hits"] == 0 and runs[1]["hits"] >= 4            # compiled, then loaded
    assert runs[0]["coef"] == runs[1]["coef"]
