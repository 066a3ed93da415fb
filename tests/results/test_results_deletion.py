"""Falsification tests of chapter 9's results on deletion with repeated words: the exact route
(every configuration of the repeated words, the chain over positions given each:
``prop-deletion-configurations``) and the certified route (an unbiased estimate whose intervals
cover at their level: ``prop-deletion-sampled``). The reference is the enumeration of
``tests/deletion_reference.py``: the model's torch forward pass on all ``2^d`` perturbed
documents and the defining sums, no code shared with either route.

The coverage tests run the certified route on a seeded population with enumerated truth, the
audit's shape (issue 42): 30 documents (tiny random models of three scales, every fourth one
position-heavy; 6 to 11 distinct words, at least two of them repeated) x 20 seeds x the three
values, 1,800 runs, at a tolerance (2e-2) where the stopping rule decides most runs (they go
beyond the first stage's 10 batches: checked). A run's coverage is the share
of its values inside their intervals; the runs are independent, so the mean of these shares has
a standard deviation at most the binomial one, ``sqrt(level (1 - level) / runs)`` (a share of
correlated values varies at most as much as one value does): the tests allow 3.29 of them
(two-sided 99.9 %). Marker ``falsifies``: ``tests/results/test_results_registry.py``; settings:
``tests/hypo.py``."""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest
import torch
from conftest import make_tiny, tiny_text
from deletion_reference import game, reference, words_of
from hypothesis import event, given
from hypothesis import strategies as st
from hypo import VOCAB, examples, models
from scipy.stats import t as student

from attnxai import theory
from attnxai.theory.deletion_sampled import LEVEL
from attnxai.theory.lime_inputs import resolve

#: Why a route may refuse (documented refusals: attention too hard for float64; LIME's fit
#: degenerate for one word, or a kernel too narrow for any perturbation to weigh).
REFUSALS = ("too wide a range", "would need", "MAX_SCORE_RANGE", "singular", "narrow")


@st.composite
def repeating_documents(draw, max_words: int = 7, max_tokens: int = 11):
    """``[CLS]`` and 3 to ``max_tokens`` words from a pool of 2 to ``max_words`` distinct ids (UNK
    included), more tokens than words in the pool, so that some word repeats."""
    pool = draw(st.lists(st.integers(2, VOCAB - 1), min_size=2, max_size=max_words, unique=True))
    n = draw(st.integers(len(pool) + 1, max(len(pool) + 1, max_tokens)))
    body = draw(st.lists(st.sampled_from(pool), min_size=n, max_size=n))
    return np.array([1, *body], dtype=np.int64)


def refused(call):
    """``call()``, or None after checking that the refusal is a documented one."""
    try:
        return call()
    except ValueError as exc:
        assert any(r in str(exc) for r in REFUSALS), exc
        event("refused: " + next(r for r in REFUSALS if r in str(exc)))
        return None


def value_settings(draw_value: str, data) -> dict:
    """The keyword settings of ``deletion_game`` for a value: LIME's kernel width, the effects'
    kept fraction."""
    if draw_value == "lime":
        return {"kernel_width": data.draw(st.sampled_from([25.0, 8.0, 100.0, math.inf]))}
    if draw_value == "effects":
        return {"p": data.draw(st.sampled_from([0.2, 0.5, 0.7]))}
    return {}


def ref_of(value: str, Z, v, kw: dict):
    return reference(value, Z, v, nu=kw.get("kernel_width", 25.0), p=kw.get("p", 0.5))


# ---------------------------------------------------------------- the exact route
@pytest.mark.falsifies("prop-deletion-configurations")
@examples(60)
@given(spec=models(paddings=("mask",), scales=(0.1, 1.0, 3.0, 30.0)),
       ids=repeating_documents(),
       value=st.sampled_from(["shapley", "banzhaf", "lime", "effects"]), data=st.data())
def test_exact_route_is_the_enumeration(spec, ids, value, data):
    """Every configuration of the repeated words, the chain over the others given each, summed:
    LIME's limit (any kernel width), the Shapley and Banzhaf values and the effects at p equal the
    defining sums over all 2^d kept sets (the model run on each), on random models of every
    scale and 1 to 3 heads (hard attention refused as documented)."""
    model = spec.build()
    feats = words_of(ids)
    kw = value_settings(value, data)
    res = refused(lambda: theory.deletion_game(model, ids, value, features=feats, route="exact",
                                               **kw))
    if res is None:
        return
    Z, v = game(model, ids, feats)
    ref = ref_of(value, Z, v, kw)
    scale = max(float(np.abs(v).max()), float(np.abs(ref).max()), 1e-300)
    assert res.route == "exact" and res.configs == 2 ** sum(f.size > 1 for f in feats)
    assert np.abs(res.values - ref).max() <= 1e-9 * scale, (res.values, ref)
    np.testing.assert_array_equal(res.halfwidth, 0.0)
    event(f"{value}, d = {len(feats)}, R = {res.n_repeated}")


# ---------------------------------------------------------------- the certified route
@pytest.mark.falsifies("prop-deletion-sampled")
@examples(30)
@given(spec=models(paddings=("mask",), scales=(0.1, 1.0, 3.0), heads=(1, 3)),
       ids=repeating_documents(max_words=6, max_tokens=10),
       value=st.sampled_from(["shapley", "banzhaf", "lime"]), seed=st.integers(0, 2**16),
       data=st.data())
def test_sampled_route_is_near_the_enumeration(spec, ids, value, seed, data):
    """One run of the certified route on a random model and document: its error against the
    enumeration is within four times its intervals' half-widths (in norm 2), a bound a correct
    estimate breaks with probability below 1e-5; a biased law, sum or weight fails it. When it
    converged, the half-widths are within ``tol`` of the values, and each is the t quantile with
    ``extra['df']`` degrees of freedom times the standard error."""
    model = spec.build()
    feats = words_of(ids)
    kw = value_settings(value, data)
    res = refused(lambda: theory.deletion_game(model, ids, value, features=feats,
                                               route="sampled", **kw,
                                               sampling=theory.SamplingSettings(tol=0.05,
                                                                                seed=seed)))
    if res is None:
        return
    if res.route == "exact":                 # one word: its two kept sets, summed exactly
        event("one word: the exact route")
        return
    Z, v = game(model, ids, feats)
    ref = ref_of(value, Z, v, kw)
    scale = max(float(np.abs(v).max()), 1e-300)
    err = float(np.linalg.norm(res.values - ref))
    assert err <= 4 * float(np.linalg.norm(res.halfwidth)) + 1e-12 * scale, (
        value, err, res.halfwidth, res.values, ref)
    quantile = student.ppf(0.5 + LEVEL / 2, res.extra["df"])
    np.testing.assert_allclose(res.halfwidth, quantile * res.stderr, rtol=1e-12)
    assert res.level == LEVEL
    assert res.converged == (res.rel_error <= 0.05)
    event(f"{value}, converged: {res.converged}")


# ---------------------------------------------------------------- coverage on a population
TOL = 2e-2
SEEDS = 20
VALUES = ("shapley", "banzhaf", "lime")


def population() -> list[tuple]:
    """30 (model, ids, features): tiny random models (2 heads; weight scales 1, 1.5, 2; every
    fourth position-heavy: word embeddings / 10) on texts of 12 to 16 tokens with 6 to 11
    distinct words, at least two of them repeated."""
    out = []
    for i in range(30):
        pre = make_tiny(seed=100 + i, scale=(1.0, 1.5, 2.0)[i % 3], n_heads=2)
        if i % 4 == 3:
            with torch.no_grad():
                pre.model.W_e.mul_(0.1)
        for k in range(200):
            text = tiny_text(12 + k % 5, seed=1000 + 50 * i + k, unknown=False)
            model, ids, feats = resolve(pre, text, True, None)
            if 6 <= len(feats) <= 11 and sum(f.size > 1 for f in feats) >= 2:
                out.append((model, np.asarray(ids), feats))
                break
        else:
            raise AssertionError(f"no text for model {i}")
    return out


@functools.lru_cache(maxsize=1)
def runs() -> list[dict]:
    """Every run of the population: value, seed, estimate, standard errors, degrees of freedom,
    half-widths at LEVEL, convergence, and the enumerated truth."""
    out = []
    for k, (model, ids, feats) in enumerate(population()):
        Z, v = game(model, ids, feats)
        for i, value in enumerate(VALUES):
            ref = reference(value, Z, v)
            for seed in range(SEEDS):           # each value its own seeds: independent runs
                res = theory.deletion_game(model, ids, value, features=feats, route="sampled",
                                           sampling=theory.SamplingSettings(
                                               tol=TOL, seed=1000 * i + seed))
                out.append({"doc": k, "value": value, "seed": seed, "values": res.values,
                            "stderr": res.stderr, "df": res.extra["df"],
                            "halfwidth": res.halfwidth, "converged": res.converged,
                            "batches": res.extra["batches"], "truth": ref})
    return out


def binomial_bound(level: float, n: int) -> float:
    """3.29 binomial standard deviations of a rate at ``level`` over ``n`` independent runs."""
    return 3.29 * math.sqrt(level * (1 - level) / n)


def test_the_population_is_the_audits_and_the_rule_binds():
    rs = runs()
    assert len(rs) == 30 * SEEDS * len(VALUES)
    batches = np.array([r["batches"] for r in rs])
    assert all(r["converged"] for r in rs)
    # the stopping rule decides most runs (they go beyond the first stage's 10 batches)
    assert 0.3 < np.mean(batches > 10) < 0.95, np.mean(batches > 10)


def coverage(rs: list[dict], half) -> float:
    """The mean over runs of the share of a run's values within ``half(run)`` of the truth."""
    return float(np.mean([np.mean(np.abs(r["values"] - r["truth"]) <= half(r)) for r in rs]))


@pytest.mark.falsifies("prop-deletion-sampled")
@examples(12)
@given(level=st.one_of(st.just(LEVEL), st.sampled_from([0.5, 0.8, 0.9, 0.99]),
                       st.floats(0.5, 0.99)))
def test_intervals_cover_at_their_level(level):
    """At any level, the intervals ``values +/- t_df((1 + level) / 2) stderr`` (the quantile from
    scipy, not from the route) cover the enumerated truth in a share of the population within the
    binomial bound of the level (module docstring); and the intervals the route reports (its
    ``halfwidth``, at LEVEL) within that of LEVEL. The normal quantile in place of Student's t
    (as the route reported before issue 42) covers 91.8 % at 95 %, 97.0 % at 99 %: outside the
    bounds."""
    rs = runs()
    quantile = {df: student.ppf(0.5 + level / 2, df) for df in {r["df"] for r in rs}}
    rate = coverage(rs, lambda r: quantile[r["df"]] * r["stderr"])
    assert abs(rate - level) <= binomial_bound(level, len(rs)), (level, rate)
    reported = coverage(rs, lambda r: r["halfwidth"])
    assert abs(reported - LEVEL) <= binomial_bound(LEVEL, len(rs)), reported
    event(f"level {level:.2f}: covered {rate:.3f} (reported intervals: {reported:.3f})")


@pytest.mark.falsifies("prop-deletion-sampled")
@examples(4)
@given(value=st.sampled_from([None, *VALUES]))
def test_error_is_within_tol_at_the_level(value):
    """The route stops when its half-widths are within ``tol`` (norm 2, relative): the error is
    then within the half-widths' norm, and so within ``tol``, in at least ``LEVEL`` of the runs
    (of each value, or all of them; one-sided binomial bound). Stopping when one standard error
    is within ``tol`` leaves a third of the runs above it."""
    rs = [r for r in runs() if value in (None, r["value"])]
    err = np.array([np.linalg.norm(r["values"] - r["truth"]) for r in rs])
    half = np.array([np.linalg.norm(r["halfwidth"]) for r in rs])
    size = np.array([np.linalg.norm(r["values"]) for r in rs])
    assert np.all(half <= TOL * size * (1 + 1e-12))
    inside = float(np.mean(err <= half))
    within = float(np.mean(err <= TOL * np.array([np.linalg.norm(r["truth"]) for r in rs])))
    bound = binomial_bound(LEVEL, len(rs))
    assert inside >= LEVEL - bound and within >= LEVEL - bound, (value, inside, within)
    event(f"{value or 'all'}: error within the half-widths {inside:.3f}, within tol {within:.3f}")
