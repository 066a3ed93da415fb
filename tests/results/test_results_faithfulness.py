"""Falsification tests of chapter 7's propositions (what can be proved about the faithfulness
measures before measuring): random float64 models, documents from one word up, score vectors
with ties, zeros and no positive entry (empty rationales), both perturbations, every selection
rule and both tie orders; for the two-class and flip symmetries also an output layer multiplied
by up to 1000, so that probabilities saturate near 0 and 1 (where float64 rounds leave-one-out
drops to equal values in one class only: the case tau-LOO's ties, ``perturbation.LOO_TIE``, are
for). Marker ``falsifies``: ``tests/results/test_results_registry.py``; settings:
``tests/hypo.py``."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import event, given
from hypothesis import strategies as st
from hypo import documents, examples, models, scores, tensor
from scipy.stats import kendalltau

from attnxai import explainers, registry
from attnxai import perturbation as F

SELS = ("abs", "positive", "signed")
AOPC = ("comprehensiveness", "sufficiency")
AUC = ("deletion_auc", "insertion_auc")
TOL = 1e-12                       # probabilities: float64 softmax, p_0 against 1 - p_1


def _table(model, ids, sc, *, target=1, ties="position"):
    return F.evaluate(model, ids, sc, target=target, selections=SELS, ties=ties)


def _score_sets(model, ids, data):
    """The position scores of the model's own explainers, and two drawn vectors (ties, zeros,
    signs; one of them non-positive everywhere, so that the positive rule selects nothing)."""
    n = ids.size - 1
    got = registry.position_scores(model, tensor(ids), 1)
    out = {m: v[0, 1:n + 1].double().numpy() for m, v in got.items()}
    out["drawn"] = data.draw(scores(n))
    out["drawn, no positive"] = -np.abs(data.draw(scores(n)))
    return out


#: How far apart p_0 and 1 - p_1 can be in float64: 8 units of the spacing of doubles just below 1
#: (2^-53); the tests assert the probabilities at TOL and measure the drops against this.
ROUNDING = 2.0 ** -50


def _check_taus(a, b, name, pert, sign):
    """tau-LOO of ``b`` is ``sign`` times that of ``a`` bit for bit, NaN for both or neither,
    where b's drops are exactly a's negated (the other class, or the flipped model: asserted by
    the callers). Nothing is excused: no pair tied by rounding near 1, no saturated class."""
    t_a, t_b = (r.table.loc[(name, pert, "abs"), "tau_loo"] for r in (a, b))
    if np.isnan(t_a) or np.isnan(t_b):                 # constant scores, one word, all tied
        assert np.isnan(t_a) and np.isnan(t_b), (name, pert, t_a, t_b)
    else:
        assert t_b == sign * t_a, (name, pert, t_a, t_b)
    da = np.abs(np.subtract.outer(a.loo[pert], a.loo[pert]))
    if ((da > 0) & (da <= F.LOO_TIE)).any():
        event("near-tied drops (e.g. rounding near 0 or 1): tied by LOO_TIE")
    if np.isnan(t_a):
        event("tau-LOO undefined (every pair tied)")


#: Output layers multiplied by these: at 1000 the logits reach hundreds, the probabilities of a
#: class round to (or to within a few units of 2^-53 of) 1 on many documents.
OUTPUT_GAINS = (1.0, 1.0, 1.0, 30.0, 1000.0)


def _gain(model, g):
    if g != 1.0:
        with torch.no_grad():
            model.W_l.mul_(g)
    return model


def _check_opposite(a, b, name, pert, sel, *, same_rationales=True):
    """Measures of b are those of a for the other class: -comp, -suff (1 and 1 when nothing is
    selected), 1 - each area, 1 - each curve."""
    ra, rb = a.table.loc[(name, pert, sel)], b.table.loc[(name, pert, sel)]
    assert ra["n_rationales"] == rb["n_rationales"]
    if ra["n_rationales"] > 0:
        for k in AOPC:
            assert rb[k] == pytest.approx(-ra[k], abs=TOL), (name, pert, sel, k)
    else:
        event("empty rationale: comp = 0, suff = 1 for both")
        assert (ra["comprehensiveness"], rb["comprehensiveness"]) == (0.0, 0.0)
        assert (ra["sufficiency"], rb["sufficiency"]) == (1.0, 1.0)
    for k in AUC:
        assert rb[k] == pytest.approx(1 - ra[k], abs=TOL), (name, pert, sel, k)
    for ca, cb in zip(a.curves[(name, pert, sel)], b.curves[(name, pert, sel)]):
        np.testing.assert_allclose(cb, 1 - ca, rtol=0, atol=TOL)


@pytest.mark.falsifies("prop-faith-unsigned")
@examples(80)
@given(spec=models(), ids=documents(), ties=st.sampled_from(F.TIES), data=st.data())
def test_positive_scores_make_the_rules_agree(spec, ids, ties, data):
    model = spec.build()
    sc = _score_sets(model, ids, data)
    sc["drawn, positive"] = np.abs(data.draw(scores(ids.size - 1))) + 0.5    # ties, all > 0
    res = _table(model, ids, sc, ties=ties)
    for name, w in sc.items():
        if not bool((w > 0).all()):
            if name in ("alpha-avg", "alpha-max", "G-l1", "G-l2"):
                event(f"{name}: a score is 0 in float64 (outside the hypothesis)")
            continue
        for pert in F.PERTURBATIONS:
            a, p = res.table.loc[(name, pert, "abs")], res.table.loc[(name, pert, "positive")]
            assert a.equals(p), (name, pert)
            for ca, cp in zip(res.curves[(name, pert, "abs")], res.curves[(name, pert, "positive")]):
                assert np.array_equal(ca, cp)


def test_unsigned_rules_differ_once_attention_underflows():
    """The hypothesis of prop-faith-unsigned is needed: on a model with large weights some
    alpha_t are exactly 0 in float64, the positive rule never selects them, the abs rule puts them
    last, and the measures differ."""
    from hypo import ModelSpec

    for seed in range(200):
        model = ModelSpec(seed, 2, 6, 3, 3, 30.0, 3.0, "mask", 2, False).build()
        ids = np.array([1, *np.random.default_rng(seed).integers(3, 30, 11)])
        a = explainers.attention(model, tensor(ids))[0, 1:].numpy()
        if (a == 0).sum() < 2:
            continue
        res = F.evaluate(model, ids, {"alpha-avg": a}, perturbations="delete")
        abs_, pos = (res.value("alpha-avg", "comprehensiveness", selection=s)
                     for s in ("abs", "positive"))
        if abs_ != pos:
            assert res.table.loc[("alpha-avg", "delete", "positive"), "n_ranked"] < ids.size - 1
            return
    pytest.fail("no random model in 200 seeds had underflowing attention that changes a measure")


@pytest.mark.falsifies("prop-faith-two-classes")
@examples(60)
@given(spec=models(), ids=documents(), ties=st.sampled_from(F.TIES),
       gain=st.sampled_from(OUTPUT_GAINS), data=st.data())
def test_the_other_class_negates_a_fixed_rationale(spec, ids, ties, gain, data):
    model = _gain(spec.build(), gain)
    sc = _score_sets(model, ids, data)
    one, zero = (_table(model, ids, sc, target=c, ties=ties) for c in (1, 0))
    for pert in F.PERTURBATIONS:
        assert zero.p[pert] == pytest.approx(1 - one.p[pert], abs=TOL)
        assert np.array_equal(zero.loo[pert], -one.loo[pert])        # bit for bit
        if np.isin(one.p[pert], (0.0, 1.0)) or np.abs(one.loo[pert]).max() < 1e-12:
            event("a saturated class: p rounds to 0 or 1, or every drop below 1e-12")
        for name in sc:
            for sel in SELS:
                _check_opposite(one, zero, name, pert, sel)
            _check_taus(one, zero, name, pert, -1)


def test_rounding_near_one_broke_the_tau_symmetry_of_softmax_differences():
    """Why the drops come from the logit margins: on a document where no probability is 0 or 1,
    p_0 is about 1 - 3e-9, and the drops computed as differences of float64 probabilities
    (ferret's p(x) - p(x without t)) round to multiples of 2^-53 in class 0, two of them equal,
    while class 1's, near 0, differ by about 1e-17: Kendall's tau of those drops (scipy, exact
    ties) gives tau_0 != -tau_1. The book's drops are exactly odd, and its tau_0 = -tau_1."""
    from conftest import make_tiny

    model = make_tiny(seed=4, n_heads=3, scale=3.0).model
    ids = np.array([1, 24, 14, 23, 6])
    sc = {"ranks": np.arange(4.0)}
    one, zero = (F.evaluate(model, ids, sc, target=c, perturbations="delete", selections="abs")
                 for c in (1, 0))
    assert 0 < one.p["delete"] < 1e-8
    naive = {}
    for c, r in ((1, one), (0, zero)):
        P = F.Perturber(model, ids, perturbation="delete", target=c)
        probs = P(np.vstack([np.ones((1, 4), bool), ~np.eye(4, dtype=bool)]))
        assert np.all((probs > 0) & (probs < 1))              # no probability is 0 or 1
        naive[c] = probs[0] - probs[1:]
    exact = {c: kendalltau(naive[c], sc["ranks"]).statistic for c in (0, 1)}
    assert abs(exact[0] + exact[1]) > 0.1                    # softmax differences: it fails
    d0, d1 = (np.subtract.outer(naive[c], naive[c]) for c in (0, 1))
    rounded_together = (d0 == 0) & (d1 != 0)
    assert rounded_together.any() and np.abs(d1[rounded_together]).max() <= ROUNDING
    t1, t0 = (r.value("ranks", "tau_loo", perturbation="delete", selection="abs")
              for r in (one, zero))
    assert t0 == -t1 and not np.isnan(t1)                    # the book's drops: it holds
    assert np.array_equal(zero.loo["delete"], -one.loo["delete"])


@pytest.mark.falsifies("prop-faith-flip")
@examples(50)
@given(spec=models(), ids=documents(), ties=st.sampled_from(F.TIES),
       gain=st.sampled_from(OUTPUT_GAINS), data=st.data())
def test_flipping_the_output_layer(spec, ids, ties, gain, data):
    model = _gain(spec.build(), gain)
    flipped = explainers.flip_output_layer(model)
    n = ids.size - 1
    T = tensor(ids)
    before = {m: v[0, 1:n + 1].double().numpy() for m, v in registry.position_scores(model, T).items()}
    after = {m: v[0, 1:n + 1].double().numpy() for m, v in registry.position_scores(flipped, T).items()}
    before["alpha x s"] = explainers.alpha_times_score(model, T)[0, 1:n + 1].double().numpy()
    after["alpha x s"] = explainers.alpha_times_score(flipped, T)[0, 1:n + 1].double().numpy()
    unchanged, negated = ("alpha-avg", "alpha-max", "G-l1", "G-l2"), ("G-avg", "GxI", "alpha x s")
    for m in unchanged:                     # bit for bit: negation is exact in floating point
        np.testing.assert_array_equal(after[m], before[m])
    for m in negated:
        np.testing.assert_array_equal(after[m], -before[m])
    # on the flipped model p'_1 = 1 - p_1: for any fixed scores v, every measure is that of the
    # other class on the original model (prop-faith-two-classes)
    v = {m: before[m] for m in unchanged} | {m: -before[m] for m in negated}
    v["drawn"] = data.draw(scores(n))
    orig, flip = _table(model, ids, v, ties=ties), _table(flipped, ids, v, ties=ties)
    orig_w = _table(model, ids, {m: before[m] for m in negated}, ties=ties)
    for pert in F.PERTURBATIONS:
        assert np.array_equal(flip.loo[pert], -orig.loo[pert])          # bit for bit
        for name in v:
            for sel in SELS:
                _check_opposite(orig, flip, name, pert, sel)
        for name in v:                                  # tau' = -tau(v) for the same v
            _check_taus(orig, flip, name, pert, -1)
        for m in negated:                               # so a sign-changing explainer keeps tau
            _check_taus(orig_w, flip, m, pert, +1)
            # and under the abs rule its AOPC measures change sign, its areas go to 1 - AUC
            a, b = orig_w.table.loc[(m, pert, "abs")], flip.table.loc[(m, pert, "abs")]
            if a["n_rationales"] > 0:
                assert b["comprehensiveness"] == pytest.approx(-a["comprehensiveness"], abs=TOL)
            assert b["deletion_auc"] == pytest.approx(1 - a["deletion_auc"], abs=TOL)


def _pairs_at_the_threshold(loo, eps):
    """Whether some pair of drops differs by within 2 eps of LOO_TIE (prop-faith-tau-ties's one
    exception)."""
    d = np.abs(np.subtract.outer(loo, loo))
    return bool((np.abs(d - F.LOO_TIE) <= 2 * eps).any())


@pytest.mark.falsifies("prop-faith-tau-ties")
@examples(150)
@given(levels=st.lists(st.floats(-1, 1, width=64), min_size=1, max_size=4),
       picks=st.lists(st.integers(0, 3), min_size=1, max_size=12),
       near=st.lists(st.sampled_from([0.0, 0.0, 1 / 3, 0.99, 1.01, 2.0]), min_size=12,
                     max_size=12),
       eps_exp=st.integers(-60, -46), noise_seed=st.integers(0, 2 ** 16), data=st.data())
def test_tau_loo_is_the_same_for_drops_within_rounding(levels, picks, near, eps_exp, noise_seed,
                                                      data):
    """The statement itself: drops from a few levels (exact ties), some moved by a fraction of
    LOO_TIE (near-ties on either side of it), then every drop moved by at most eps (another
    evaluation's rounding): tau-LOO does not change unless a pair lies within 2 eps of LOO_TIE."""
    n = len(picks)
    loo = np.array([levels[k % len(levels)] for k in picks]) + np.array(near[:n]) * F.LOO_TIE
    eps = 2.0 ** eps_exp
    moved = loo + np.random.default_rng(noise_seed).uniform(-eps, eps, n)
    w = data.draw(scores(n))
    a, b = F.kendall_tau_loo(w, loo), F.kendall_tau_loo(w, moved)
    if _pairs_at_the_threshold(loo, eps):
        event("a pair within 2 eps of LOO_TIE: the exception")
        return
    assert (np.isnan(a) and np.isnan(b)) or a == b, (loo, moved, w, a, b)
    if np.any(loo != moved) and len(set(loo.tolist())) < n:
        event("tied drops moved by rounding")


@pytest.mark.falsifies("prop-faith-tau-ties")
@examples(60)
@given(spec=models(scales=(0.1, 1.0, 3.0)), ids=documents(min_size=2),
       query_gain=st.sampled_from([1.0, 1.0, 4.0, 8.0]), data=st.data())
def test_both_backends_give_one_tau_loo(spec, ids, query_gain, data):
    """On random float64 models up to init_range 3, with attention pushed towards one-hot (the
    queries multiplied by up to 8): the fast and the model backends' drops differ by at most
    LOO_TIE / 100, and their tau-LOO are equal (prop-faith-tau-ties, the exception excused)."""
    model = spec.build(query_gain=query_gain)
    n = ids.size - 1
    sc = {"drawn": data.draw(scores(n)),
          "alpha-avg": explainers.attention(model, tensor(ids))[0, 1:n + 1].numpy()}
    try:
        fast = F.evaluate(model, ids, sc, backend="fast", selections="abs", fractions=(0.0, 1.0))
    except ValueError as exc:
        assert "too wide a range" in str(exc), exc
        event("the fast backend refuses (attention too spread): nothing to compare")
        return
    slow = F.evaluate(model, ids, sc, backend="model", selections="abs", fractions=(0.0, 1.0))
    if sc["alpha-avg"].max() > 0.99:
        event("saturated attention (a weight > 0.99)")
    for pert in F.PERTURBATIONS:
        eps = float(np.abs(fast.loo[pert] - slow.loo[pert]).max())
        assert eps <= F.LOO_TIE / 100, eps
        if _pairs_at_the_threshold(fast.loo[pert], eps):
            event("a pair within 2 eps of LOO_TIE: the exception")
            continue
        for name in sc:
            a, b = (r.value(name, "tau_loo", perturbation=pert, selection="abs")
                    for r in (fast, slow))
            assert (np.isnan(a) and np.isnan(b)) or a == b, (name, pert, a, b)
        if (fast.loo[pert] != slow.loo[pert]).any():
            event("the backends' drops differ (by rounding)")
