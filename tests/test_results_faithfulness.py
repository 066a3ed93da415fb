"""Falsification tests of chapter 7's propositions (what can be proved about the faithfulness
measures before measuring): random float64 models, documents from one word up, score vectors
with ties, zeros and no positive entry (empty rationales), both perturbations, every selection
rule and both tie orders. Marker ``falsifies``: ``tests/test_results_registry.py``; settings:
``tests/hypo.py``."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import event, given
from hypothesis import strategies as st
from hypo import documents, examples, models, scores, tensor

from attnxai import explainers
from attnxai import faithfulness as F

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
    got = explainers.position_scores(model, tensor(ids), 1)
    out = {m: v[0, 1:n + 1].double().numpy() for m, v in got.items()}
    out["drawn"] = data.draw(scores(n))
    out["drawn, no positive"] = -np.abs(data.draw(scores(n)))
    return out


def _loo_untied(res, pert, gap=1e-9):
    """Whether the leave-one-out drops are either equal or clearly apart (rounding cannot
    reorder them between two computations)."""
    v = np.unique(res.loo[pert])
    return v.size < 2 or float(np.diff(v).min()) > gap


def _check_taus(a, b, name, pert, sign):
    """tau_b of ``b`` is ``sign`` times that of ``a``, in exact arithmetic. In float64 the one
    exception: a probability rounded to 1 (or 0) makes one class's drops all equal (tau undefined)
    while the other class's, near 0, are still told apart."""
    t_a, t_b = (r.table.loc[(name, pert, "abs"), "tau_loo"] for r in (a, b))
    if np.isnan(t_a) or np.isnan(t_b):
        if np.isnan(t_a) != np.isnan(t_b):
            spreads = sorted(float(np.ptp(r.loo[pert])) for r in (a, b))
            assert spreads[0] == 0.0 and spreads[1] < 1e-12, (name, pert, spreads)
            event("p saturated in float64: one class's drops all round to 0")
        return
    if _loo_untied(a, pert) and _loo_untied(b, pert):
        assert t_b == pytest.approx(sign * t_a, abs=TOL), (name, pert)
    else:
        event("leave-one-out drops within 1e-9: tau not compared")


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
@given(spec=models(), ids=documents(), ties=st.sampled_from(F.TIES), data=st.data())
def test_the_other_class_negates_a_fixed_rationale(spec, ids, ties, data):
    model = spec.build()
    sc = _score_sets(model, ids, data)
    one, zero = (_table(model, ids, sc, target=c, ties=ties) for c in (1, 0))
    for pert in F.PERTURBATIONS:
        assert zero.p[pert] == pytest.approx(1 - one.p[pert], abs=TOL)
        np.testing.assert_allclose(zero.loo[pert], -one.loo[pert], rtol=0, atol=TOL)
        for name in sc:
            for sel in SELS:
                _check_opposite(one, zero, name, pert, sel)
            _check_taus(one, zero, name, pert, -1)


@pytest.mark.falsifies("prop-faith-flip")
@examples(50)
@given(spec=models(), ids=documents(), ties=st.sampled_from(F.TIES), data=st.data())
def test_flipping_the_output_layer(spec, ids, ties, data):
    model = spec.build()
    flipped = explainers.flip_output_layer(model)
    n = ids.size - 1
    T = tensor(ids)
    before = {m: v[0, 1:n + 1].double().numpy() for m, v in explainers.position_scores(model, T).items()}
    after = {m: v[0, 1:n + 1].double().numpy() for m, v in explainers.position_scores(flipped, T).items()}
    before["alpha x s"] = explainers.alpha_times_score(model, T)[0, 1:n + 1].double().numpy()
    after["alpha x s"] = explainers.alpha_times_score(flipped, T)[0, 1:n + 1].double().numpy()
    unchanged, negated = ("alpha-avg", "alpha-max", "G-l1", "G-l2"), ("G-avg", "GxI", "alpha x s")
    scale = max(float(np.abs(v).max()) for v in before.values())
    for m in unchanged:
        np.testing.assert_allclose(after[m], before[m], rtol=0, atol=1e-12 * scale)
    for m in negated:
        np.testing.assert_allclose(after[m], -before[m], rtol=0, atol=1e-12 * scale)
    # on the flipped model p'_1 = 1 - p_1: for any fixed scores v, every measure is that of the
    # other class on the original model (prop-faith-two-classes)
    v = {m: before[m] for m in unchanged} | {m: -before[m] for m in negated}
    v["drawn"] = data.draw(scores(n))
    orig, flip = _table(model, ids, v, ties=ties), _table(flipped, ids, v, ties=ties)
    orig_w = _table(model, ids, {m: before[m] for m in negated}, ties=ties)
    for pert in F.PERTURBATIONS:
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
