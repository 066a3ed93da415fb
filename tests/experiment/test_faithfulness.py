"""Faithfulness metrics (attnxai.perturbation) against a literal port of ferret's code, the two
model backends against each other, the provable properties of chapter 7, and the corpus study."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from conftest import make_tiny, random_model, tiny_text
from scipy.stats import kendalltau

import attnxai
from attnxai import explainers, registry
from attnxai import perturbation as F
from attnxai.experiment import faithfulness as XF
from attnxai.experiment import load_results, review_order
from attnxai.limit_settings import LimeSettings
from attnxai.registry import ALL_METHODS, METHODS

ROOT = Path(__file__).resolve().parents[2]


def _doc(pre, n=18, seed=1):
    ids = pre.vocab.encode(tiny_text(n, seed=seed), pre.model.max_len)
    return np.asarray(ids)


def _probs(model, docs, target=1):
    with torch.no_grad():
        logits = model(model.collate(docs)).double()
    return torch.softmax(logits, -1)[:, target].numpy()


def ferret_port(model, ids, scores, *, remove_tokens=True, only_pos=True, target=1,
                kind=None):
    """ferret 0.5 (g8a9/ferret 22935f8, evaluators/faithfulness_measures.py and
    utils_from_soft_to_discrete.py), transcribed for a model whose only special token is [CLS]:
    rationales from np.argsort, sizes int(q * n), q = np.arange(0.1, 1.1, 0.1), a rationale equal
    to the previous one skipped, comprehensiveness 0 / sufficiency 1 when none; tau-LOO with
    deletion (ferret's 'remove' strategy). ``kind``: the argsort ferret calls (None: numpy's
    default, as ferret; "stable": the same with ties in position order). The signed branch is
    ferret's as meant: ferret's own ``id_top_k == []`` on an array raises ValueError on numpy >=
    1.25 (tests/experiment/test_faithfulness_ferret.py runs ferret's code itself and checks that)."""
    cls, unk = int(ids[0]), model.unk_id
    baseline = _probs(model, [list(ids)], target)[0]
    input_ids = list(ids[1:])
    comp_docs, suff_docs, last = [], [], None
    for v in np.arange(0.1, 1.1, 0.1):
        k = int(v * len(scores))
        id_top = None
        if 0 < k <= len(scores):
            if only_pos:
                id_top = [i for i in np.array(scores).argsort(kind=kind)[-k:][::-1]
                          if scores[i] > 0]
                if id_top == []:
                    id_top = None
            else:
                id_top = np.array(scores).argsort(kind=kind)[-k:][::-1]
        if id_top is not None and last is not None and set(id_top) == last:
            id_top = None
        if id_top is None:
            continue
        last = set(id_top)
        sample = np.array(input_ids)
        if remove_tokens:
            comp = np.delete(sample, id_top)
            suff = sample[np.sort(id_top)]
        else:
            comp = sample.copy()
            comp[id_top] = unk
            keep = np.zeros(sample.size, bool)
            keep[id_top] = True
            suff = np.where(keep, sample, unk)
        comp_docs.append([cls] + comp.tolist())
        suff_docs.append([cls] + suff.tolist())
    comp = float(np.mean(baseline - _probs(model, comp_docs, target))) if comp_docs else 0.0
    suff = float(np.mean(baseline - _probs(model, suff_docs, target))) if suff_docs else 1.0
    loo_docs = [[cls] + input_ids[:i] + input_ids[i + 1:] for i in range(len(input_ids))]
    loo = -(_probs(model, loo_docs, target) - baseline)
    tau = kendalltau(loo, scores)[0]
    return comp, suff, tau


@pytest.mark.parametrize("padding", ["mask", "unk"])
def test_metrics_equal_a_literal_port_of_ferret(padding):
    pre = make_tiny(padding, seed=3)
    ids = _doc(pre, 23, seed=4)
    n = ids.size - 1
    rng = np.random.default_rng(5)
    scores = {"normal": rng.standard_normal(n), "mostly negative": rng.standard_normal(n) - 1.5,
              "nonnegative": rng.random(n)}
    res = F.evaluate(pre, ids, scores, selections=("positive", "signed"))
    for name, s in scores.items():
        for pert, remove in (("delete", True), ("replace", False)):
            for sel, only_pos in (("positive", True), ("signed", False)):
                comp, suff, tau = ferret_port(pre.model, ids, s, remove_tokens=remove,
                                              only_pos=only_pos)
                row = res.table.loc[(name, pert, sel)]
                assert row["comprehensiveness"] == pytest.approx(comp, abs=1e-12)
                assert row["sufficiency"] == pytest.approx(suff, abs=1e-12)
                if pert == "delete":            # ferret's tau-LOO always deletes
                    assert row["tau_loo"] == pytest.approx(tau, abs=1e-12)


@pytest.mark.parametrize("padding", ["mask", "unk"])
def test_fast_and_model_backends_agree_with_one_call_per_perturbation(padding, monkeypatch):
    pre = make_tiny(padding, seed=2)
    ids = _doc(pre, 30, seed=6)
    rng = np.random.default_rng(0)
    scores = {"a": rng.standard_normal(30), "b": rng.random(30), "c": rng.standard_normal(30)}
    fast = F.evaluate(pre, ids, scores, backend="fast")
    calls = []
    forward = type(pre.model).forward

    def counting(self, *a, **k):
        calls.append(a[0].shape[0] if a else None)
        return forward(self, *a, **k)

    monkeypatch.setattr(type(pre.model), "forward", counting)
    slow = F.evaluate(pre, ids, scores, backend="model", batch_size=10_000)
    assert fast.backend == {"replace": "fast", "delete": "fast"}
    assert slow.backend == {"replace": "model", "delete": "model"}
    assert fast.calls == slow.calls == {"replace": 1, "delete": 1}
    assert len(calls) == 2 and calls[0] == slow.documents["replace"]   # one batch each
    pd.testing.assert_frame_equal(fast.table, slow.table, atol=1e-12, rtol=0)
    for key, (d, i) in fast.curves.items():
        np.testing.assert_allclose(d, slow.curves[key][0], atol=1e-12, rtol=0)
        np.testing.assert_allclose(i, slow.curves[key][1], atol=1e-12, rtol=0)


@pytest.mark.parametrize("pert", F.PERTURBATIONS)
def test_curves_and_areas_against_the_model_on_every_prefix(pert):
    """The deletion and insertion curves (the book's own measures: ferret has none) against the
    model run here on the documents without / with only each prefix of the ranking, and their
    areas against the trapezoidal rule written out."""
    pre = make_tiny(seed=5)
    ids = _doc(pre, 13, seed=2)
    n = ids.size - 1
    s = np.random.default_rng(1).standard_normal(n)
    res = F.evaluate(pre, ids, {"s": s}, selections="abs", perturbations=pert)
    order = np.argsort(-np.abs(s), kind="stable")
    fr = F.CURVE_FRACTIONS
    cls, words, unk = int(ids[0]), [int(w) for w in ids[1:]], pre.model.unk_id

    def doc(keep):
        if pert == "delete":
            return [cls] + [w for w, k in zip(words, keep) if k]
        return [cls] + [w if k else unk for w, k in zip(words, keep)]

    without, only = [], []
    for f in fr:
        top = np.zeros(n, bool)
        top[order[:int(round(f * 20)) * n // 20]] = True
        without.append(doc(~top))
        only.append(doc(top))
    want = {"deletion": _probs(pre.model, without), "insertion": _probs(pre.model, only)}
    curves = dict(zip(("deletion", "insertion"), res.curves[("s", pert, "abs")]))
    for kind, y in want.items():
        np.testing.assert_allclose(curves[kind], y, rtol=0, atol=1e-12)
        area = sum((fr[i + 1] - fr[i]) * (y[i] + y[i + 1]) / 2 for i in range(fr.size - 1))
        assert res.value("s", f"{kind}_auc", perturbation=pert, selection="abs") == \
            pytest.approx(area, abs=1e-12), kind


def test_cls_is_never_removed_and_curve_endpoints():
    pre = make_tiny(seed=1)
    ids = _doc(pre, 15)
    n = ids.size - 1
    s = np.random.default_rng(1).standard_normal(n)
    res = F.evaluate(pre, ids, {"s": s}, selections=("abs", "positive"))
    assert res.p["delete"] == pytest.approx(F.probability(pre, ids), abs=1e-12)
    assert res.p_empty["delete"] == pytest.approx(F.probability(pre, ids[:1]), abs=1e-12)
    all_unk = np.concatenate([ids[:1], np.full(n, pre.model.unk_id)])
    assert res.p_empty["replace"] == pytest.approx(F.probability(pre, all_unk), abs=1e-12)
    for pert in ("replace", "delete"):
        d, i = res.curves[("s", pert, "abs")]
        assert d[0] == pytest.approx(res.p[pert]) and d[-1] == pytest.approx(res.p_empty[pert])
        assert i[0] == pytest.approx(res.p_empty[pert]) and i[-1] == pytest.approx(res.p[pert])
        # the positive rule stops at the positive scores
        d, i = res.curves[("s", pert, "positive")]
        keep = np.ones(n, bool)
        keep[s > 0] = False
        P = F.Perturber(pre, ids, perturbation=pert)
        assert d[-1] == pytest.approx(P(keep[None])[0], abs=1e-12)
        assert i[-1] == pytest.approx(P(~keep[None])[0], abs=1e-12)
    # leave-one-out drops are p(x) - p(x without t)
    P = F.Perturber(pre, ids, perturbation="delete", backend="model")
    np.testing.assert_allclose(res.loo["delete"], res.p["delete"] - P(~np.eye(n, dtype=bool)),
                               atol=1e-12)


def test_rankings_sizes_and_ties():
    s = np.array([0.5, -1.0, 0.5, 0.0, 2.0])
    assert F.ranking(s, "abs").tolist() == [4, 1, 0, 2, 3]
    assert F.ranking(s, "positive").tolist() == [4, 0, 2]
    assert F.ranking(s, "signed").tolist() == [4, 0, 2, 3, 1]
    for n in (1, 3, 7, 10, 19, 255):
        assert F.rationale_sizes(n).tolist() == [int(q * n) for q in np.arange(0.1, 1.1, 0.1)]
    assert F.curve_sizes(20).tolist() == list(range(21))
    assert F.aopc_sizes(3, 3) == [1, 2, 3]           # int(q*3) = 0,0,0,1,1,1,2,2,2,3
    assert F.aopc_sizes(1, 10) == [1]                # one positive score: counted once
    with pytest.raises(ValueError):
        F.ranking(s, "largest")
    with pytest.raises(ValueError):
        F.curve_sizes(5, [0.5, 0.2])


def test_tied_words_enter_rationales_in_reading_order():
    pre = make_tiny(seed=0)
    ids = _doc(pre, 12)
    n = ids.size - 1
    s = np.zeros(n)
    s[[2, 5, 9]] = 1.0                                # one word at three positions (LIME-like)
    keep = np.ones(n, bool)
    keep[[2, 5]] = False                              # the first two occurrences
    P = F.Perturber(pre, ids, perturbation="delete")
    fr = np.array([0.0, 2 / n, 1.0])
    x, d = F.deletion_curve(pre, ids, s, fractions=fr)
    assert d[1] == pytest.approx(P(keep[None])[0], abs=1e-12)


def test_unsigned_scores_positive_rule_equals_abs_rule():
    pre = make_tiny(seed=4)
    ids = _doc(pre, 20, seed=2)
    pos = registry.position_scores(pre.model, torch.as_tensor(ids)[None])
    scores = {m: pos[m][0, 1:].numpy() for m in ("alpha-avg", "alpha-max", "G-l1", "G-l2")}
    res = F.evaluate(pre, ids, scores)
    for m in scores:
        for pert in F.PERTURBATIONS:
            a, b = res.table.loc[(m, pert, "abs")], res.table.loc[(m, pert, "positive")]
            pd.testing.assert_series_equal(a, b, check_names=False)


def test_flipping_the_output_layer_negates_every_metric_of_attention():
    pre = make_tiny(seed=5)
    flipped = explainers.flip_output_layer(pre.model)
    ids = _doc(pre, 25, seed=3)
    T = torch.as_tensor(ids)[None]
    pos, pos_f = (registry.position_scores(m, T) for m in (pre.model, flipped))
    np.testing.assert_allclose(pos["alpha-avg"], pos_f["alpha-avg"])          # unchanged
    np.testing.assert_allclose(pos["GxI"], -pos_f["GxI"], atol=1e-12)         # negated
    s = {m: pos[m][0, 1:].numpy() for m in pos}
    s_f = {m: pos_f[m][0, 1:].numpy() for m in pos_f}
    r, r_f = F.evaluate(pre.model, ids, s), F.evaluate(flipped, ids, s_f)
    for pert in F.PERTURBATIONS:
        assert r_f.p[pert] == pytest.approx(1 - r.p[pert], abs=1e-12)
        for m in ("alpha-avg", "alpha-max", "G-l1", "G-l2"):
            for sel in ("abs", "positive"):
                a, b = r.table.loc[(m, pert, sel)], r_f.table.loc[(m, pert, sel)]
                for metric in ("comprehensiveness", "sufficiency", "tau_loo"):
                    assert b[metric] == pytest.approx(-a[metric], abs=1e-12)
                d, i = r.curves[(m, pert, sel)]
                d_f, i_f = r_f.curves[(m, pert, sel)]
                np.testing.assert_allclose(d_f, 1 - d, atol=1e-12)
        # a signed explainer under the |score| rule: same rationale, negated metric
        a, b = r.table.loc[("GxI", pert, "abs")], r_f.table.loc[("GxI", pert, "abs")]
        assert b["comprehensiveness"] == pytest.approx(-a["comprehensiveness"], abs=1e-12)
        assert b["tau_loo"] == pytest.approx(a["tau_loo"], abs=1e-12)       # both flip


def test_two_classes_the_other_class_negates_a_fixed_rationale():
    """p_0 = 1 - p_1: for scores that do not depend on the class (attention), every metric
    w.r.t. class 0 is minus the metric w.r.t. class 1 (chapter 7)."""
    pre = make_tiny(seed=6)
    ids = _doc(pre, 21, seed=5)
    alpha = explainers.attention(pre.model, torch.as_tensor(ids)[None])[0, 1:].numpy()
    r1 = F.evaluate(pre, ids, {"a": alpha}, target=1)
    r0 = F.evaluate(pre, ids, {"a": alpha}, target=0)
    for metric in ("comprehensiveness", "sufficiency", "tau_loo"):
        np.testing.assert_allclose(r0.table[metric], -r1.table[metric], atol=1e-12)
    for key in r1.curves:
        np.testing.assert_allclose(r0.curves[key][0], 1 - r1.curves[key][0], atol=1e-12)


def test_ferret_tie_order_takes_the_later_position_first():
    s = np.array([1.0, 1.0, 1.0, 0.5])
    assert np.array(s).argsort()[-2:][::-1].tolist() == [2, 1]          # ferret's expression
    assert F.ranking(s, "signed", ties="ferret")[:2].tolist() == [2, 1]
    assert F.ranking(s, "signed")[:2].tolist() == [0, 1]                # the default
    assert F.ranking(s, "positive", ties="ferret").tolist() == [2, 1, 0, 3]
    assert F.ranking(-s, "abs", ties="ferret").tolist() == [2, 1, 0, 3]
    with pytest.raises(ValueError, match="ties"):
        F.ranking(s, ties="random")


def test_ferret_ties_equal_ferrets_rationales():
    """ties="ferret" against the transcription of ferret: always equal to it with a stable
    argsort, and equal to ferret's own (numpy's default) argsort on every array where that sort
    leaves ties in position order; how often it does not is counted, not assumed."""
    from hypothesis import event, given
    from hypothesis import strategies as st
    from hypo import documents, examples, models, scores

    @examples(40)
    @given(spec=models(paddings=("mask",)), ids=documents(min_size=2), data=st.data())
    def check(spec, ids, data):
        model = spec.build()
        n = ids.size - 1
        s = data.draw(scores(n))
        res = F.evaluate(model, ids, {"s": s}, selections=("positive", "signed"), ties="ferret",
                         perturbations="delete")
        stable = np.array_equal(np.argsort(s), np.argsort(s, kind="stable"))
        event("numpy's default argsort keeps ties in order" if stable else
              "numpy's default argsort reorders ties")
        for sel, only_pos in (("positive", True), ("signed", False)):
            for kind in ("stable", None):
                if kind is None and not stable:
                    continue
                comp, suff, _ = ferret_port(model, ids, s, only_pos=only_pos, kind=kind)
                row = res.table.loc[("s", "delete", sel)]
                assert row["comprehensiveness"] == pytest.approx(comp, abs=1e-12)
                assert row["sufficiency"] == pytest.approx(suff, abs=1e-12)

    check()


def test_tie_orders_agree_without_ties():
    pre = make_tiny(seed=2)
    ids = _doc(pre, 14, seed=3)
    s = np.random.default_rng(4).standard_normal(14)
    a, b = (F.evaluate(pre, ids, {"s": s}, selections=F.SELECTIONS, ties=t) for t in F.TIES)
    pd.testing.assert_frame_equal(a.table, b.table)
    assert (a.ties, b.ties) == ("position", "ferret")


def test_symbolic_measures_are_evaluates():
    """The SymPy measures, with the model's probabilities substituted, are evaluate's numbers,
    tau-LOO with its ties (LOO_TIE) included."""
    from hypothesis import given
    from hypothesis import strategies as st
    from hypo import documents, examples, models, scores

    @examples(25)
    @given(spec=models(paddings=("mask",)), ids=documents(min_size=1, max_size=5),
           pert=st.sampled_from(F.PERTURBATIONS), sel=st.sampled_from(F.SELECTIONS),
           ties=st.sampled_from(F.TIES), data=st.data())
    def check(spec, ids, pert, sel, ties, data):
        model = spec.build()
        n = ids.size - 1
        s = data.draw(scores(n))
        P = F.Perturber(model, ids, perturbation=pert, backend="model")

        def prob(kept):
            keep = np.zeros((1, n), bool)
            keep[0, sorted(kept)] = True
            return float(P(keep)[0])

        sym = F.symbolic_measures(s, selection=sel, ties=ties, p=prob)
        res = F.evaluate(model, ids, {"s": s}, perturbations=pert, selections=sel, ties=ties,
                         backend="model")
        row = res.table.loc[("s", pert, sel)]
        for k in ("comprehensiveness", "sufficiency", "deletion_auc", "insertion_auc"):
            assert float(sym[k]) == pytest.approx(row[k], abs=1e-12), k
        assert sym["n_rationales"] == row["n_rationales"]
        tau = float(sym["tau_loo"])                 # NaN when every pair ties (one word too)
        assert (np.isnan(tau) and np.isnan(row["tau_loo"])) or \
            tau == pytest.approx(row["tau_loo"], abs=1e-12)

    check()


def test_a_skip_model_is_evaluated_on_its_forward_pass():
    """The projections describe the model without the skip connection: evaluate falls back to
    the model's own forward pass (it used to raise TypeError), and refuses backend='fast'."""
    m = random_model(40, d_embed=6, d_attn=3, d_value=4, max_len=16, init_range=0.1, skip=True)
    ids = np.array([1, 5, 6, 7, 5, 9, 10])
    s = {"s": np.random.default_rng(0).standard_normal(6)}
    auto, model = F.evaluate(m, ids, s), F.evaluate(m, ids, s, backend="model")
    assert auto.backend == {"replace": "model", "delete": "model"}
    pd.testing.assert_frame_equal(auto.table, model.table)
    with pytest.raises(ValueError, match="skip"):
        F.evaluate(m, ids, s, backend="fast")


def test_no_positive_score_gets_ferrets_values():
    pre = make_tiny(seed=0)
    ids = _doc(pre, 10)
    res = F.evaluate(pre, ids, {"neg": -np.arange(1.0, 11.0)})
    row = res.table.loc[("neg", "delete", "positive")]
    assert (row["comprehensiveness"], row["sufficiency"], row["n_rationales"]) == (0.0, 1.0, 0)
    assert F.comprehensiveness(pre, ids, -np.arange(1.0, 11.0)) == 0.0
    assert F.sufficiency(pre, ids, -np.arange(1.0, 11.0)) == 1.0


def test_single_metric_helpers_match_evaluate():
    pre = make_tiny(seed=7)
    ids = _doc(pre, 16, seed=8)
    s = np.random.default_rng(3).standard_normal(16)
    r = F.evaluate(pre, ids, {"s": s}, selections=F.SELECTIONS)
    # (the batch differs, so the float64 sums may differ in the last bit)
    assert F.comprehensiveness(pre, ids, s) == pytest.approx(r.value("s", "comprehensiveness"),
                                                             abs=1e-14)
    assert F.sufficiency(pre, ids, s, perturbation="replace", selection="abs") == pytest.approx(
        r.value("s", "sufficiency", perturbation="replace", selection="abs"), abs=1e-14)
    assert F.tau_loo(pre, ids, s) == pytest.approx(r.value("s", "tau_loo", selection="abs"),
                                                   abs=1e-14)
    x, d = F.deletion_curve(pre, ids, s)
    np.testing.assert_array_equal(x, F.CURVE_FRACTIONS)
    np.testing.assert_allclose(d, r.curves[("s", "delete", "positive")][0], atol=1e-14)
    _, i = F.insertion_curve(pre, ids, s, selection="signed")
    np.testing.assert_allclose(i, r.curves[("s", "delete", "signed")][1], atol=1e-14)
    assert r.value("s", "deletion_auc") == pytest.approx(
        np.trapezoid(r.curves[("s", "delete", "positive")][0], F.CURVE_FRACTIONS))


def test_bad_inputs_are_refused():
    pre = make_tiny()
    ids = _doc(pre, 8)
    good = np.ones(8)
    with pytest.raises(ValueError, match="one entry per word position"):
        F.evaluate(pre, ids, {"s": np.ones(9)})
    with pytest.raises(ValueError, match="NaN"):
        F.evaluate(pre, ids, {"s": np.r_[np.nan, np.ones(7)]})
    with pytest.raises(ValueError, match="non-empty mapping"):
        F.evaluate(pre, ids, {})
    with pytest.raises(ValueError, match="perturbation"):
        F.evaluate(pre, ids, {"s": good}, perturbations=("mask",))
    with pytest.raises(ValueError, match="selection"):
        F.evaluate(pre, ids, {"s": good}, selections="top")
    with pytest.raises(ValueError, match="backend"):
        F.evaluate(pre, ids, {"s": good}, backend="gpu")
    with pytest.raises(ValueError, match="CLS"):
        F.evaluate(pre, ids[1:], {"s": good[1:]})
    with pytest.raises(ValueError, match="no word after"):
        F.evaluate(pre, ids[:1], {"s": np.ones(0)})
    with pytest.raises(TypeError):
        F.evaluate("model", ids, {"s": good})
    with pytest.raises(ValueError, match="target class 2"):
        F.evaluate(pre, ids, {"s": good}, target=2)
    P = F.Perturber(pre, ids, perturbation="delete")
    with pytest.raises(ValueError, match="bool"):
        P(np.ones((2, 8)))


def test_agreement_matrix():
    s = {"a": np.array([1.0, 2, 3, 4]), "b": np.array([4.0, 3, 2, 1]), "c": np.ones(4),
         "d": np.array([-4.0, -3, 2, 1])}
    A = F.agreement(s)
    assert A.loc["a", "b"] == pytest.approx(-1) and np.isnan(A.loc["a", "c"])
    assert np.allclose(np.diag(A), 1) and A.equals(A.T)
    assert F.agreement(s, absolute=True).loc["b", "d"] == pytest.approx(1)


def test_bootstrap_means():
    X = np.column_stack([np.full(50, 2.0), np.r_[np.arange(49.0), np.nan]])
    mean, lo, hi = XF.bootstrap_means(X, n_boot=300, seed=1)
    assert (mean[0], lo[0], hi[0]) == (2.0, 2.0, 2.0)
    assert mean[1] == pytest.approx(24.0) and lo[1] < 24 < hi[1]
    assert hi[1] - lo[1] == pytest.approx(2 * 1.96 * np.std(np.arange(49.0)) / 7, rel=0.25)
    with pytest.raises(ValueError):
        XF.bootstrap_means(X, level=1.5)


@pytest.fixture(scope="module")
def small_run(quick_model, tmp_path_factory):
    out = tmp_path_factory.mktemp("faith") / "res"
    report = XF.run_faithfulness(out, profile="quick", reviews=3,
                                 lime=LimeSettings(num_samples=200), chunk=2, progress=False)
    return out, report


def test_study_rows_resume_and_summaries(small_run, quick_model, imdb):
    out, report = small_run
    assert (report.computed, report.skipped) == (3, 0)
    df = load_results(out, keys=("test_index",), sort=("rank",))
    assert df["test_index"].tolist() == review_order(len(imdb.test))[:3].tolist()
    meta = json.loads((out / "_meta.json").read_text())
    assert meta["p"] == "softmax probability of class 1" and meta["num_samples"] == 200
    row = df.iloc[1]
    text = __import__("attnxai").normalize_for_lime(imdb.test[int(row["test_index"])].text)
    rs = XF.review_explanation(quick_model, text, test_index=int(row["test_index"]),
                               num_samples=200)
    np.testing.assert_allclose(row["scores__LIME"], rs.token_scores["LIME"], rtol=1e-6, atol=1e-7)
    r = F.evaluate(quick_model, rs.ids, rs.token_scores)
    assert row[XF.metric_column("GxI", "replace", "comprehensiveness", "positive")] == \
        pytest.approx(r.value("GxI", "comprehensiveness", perturbation="replace"), abs=1e-9)
    assert row["agree__alpha-avg__GxI"] == pytest.approx(
        F.agreement(rs.token_scores).loc["alpha-avg", "GxI"], abs=1e-9)
    # both tie orders in one run: ferret's evaluated where the scores tie, the same elsewhere
    rf = F.evaluate(quick_model, rs.ids, rs.token_scores, ties="ferret")
    for m in ("LIME", "LIME limit", "GxI"):
        for metric in XF.SUMMARY_METRICS:
            col = XF.metric_column(m, "delete", metric, "positive", "ferret")
            assert row[col] == pytest.approx(rf.value(m, metric), abs=1e-9), (m, metric)
    assert row[XF.metric_column("GxI", "delete", "sufficiency", "abs", "ferret")] == \
        row[XF.metric_column("GxI", "delete", "sufficiency", "abs")]
    assert "ferret" in meta["ties"]
    again = XF.run_faithfulness(out, profile="quick", reviews=4,
                                lime=LimeSettings(num_samples=200), chunk=2, progress=False)
    assert (again.computed, again.skipped) == (1, 3)
    with pytest.raises(ValueError, match="num_samples: 200 there, 300 now"):
        XF.run_faithfulness(out, profile="quick", reviews=4, lime=LimeSettings(num_samples=300),
                            progress=False)
    df = load_results(out, keys=("test_index",), sort=("rank",))
    table = XF.faithfulness_summary(df, n_boot=100)
    assert set(table["group"]) == set(XF.GROUPS)
    n_methods, n_metrics = len(ALL_METHODS), len(XF.SUMMARY_METRICS)
    assert len(table) == 3 * n_methods * 2 * (2 * 2 * n_metrics + 1)     # 2 rules, 2 tie orders
    assert set(table["ties"]) == {"position", "ferret", "-"}
    spread = XF.tie_spread(df)
    word_level = [m for m in ALL_METHODS if METHODS[m].level == "word"]   # their words tie
    assert {"LIME", "LIME limit", "Shapley (delete)", "Banzhaf (delete)"} <= set(word_level)
    untied = spread[~spread.method.isin(word_level)]
    assert (untied["largest |difference|"] == 0).all()
    # a summary written before the tie orders (no ties column) reads as the default order
    old_csv = out.parent / "old_summary.csv"
    table.query("ties != 'ferret'").drop(columns="ties").assign(target=1).to_csv(old_csv, index=False)
    back = XF.read_summary(old_csv)
    assert set(back["ties"]) == {"position", "-"} and (back["target"] == "1").all()
    sel = table[(table.group == "all") & (table.method == "LIME") & (table.metric == "tau_loo")
                & (table.perturbation == "delete")]
    assert sel["mean"].item() == pytest.approx(df["LIME__delete__tau_loo"].mean())
    curves = XF.curve_summary(df, n_boot=50)
    assert len(curves) == 3 * n_methods * 2 * 2 * 2 * len(F.CURVE_FRACTIONS)
    agree = XF.agreement_summary(df, n_boot=50)
    m = agree[(agree.group == "all") & (agree.scores == "signed")].pivot(
        index="a", columns="b", values="mean")
    assert m.shape == (n_methods, n_methods) and np.allclose(m.values, m.values.T, equal_nan=True)


def test_summary_script_keeps_both_tie_orders(small_run, tmp_path, monkeypatch):
    """book/data/make_faithfulness_summary.py on the small run: the committed files' format, with
    both tie orders, read back by the chapter's reader."""
    from conftest import load_script

    out, _ = small_run
    script = load_script("book/data/make_faithfulness_summary.py")
    monkeypatch.setattr("sys.argv", ["make_faithfulness_summary.py", str(out), "--out",
                                     str(tmp_path), "--n-boot", "50"])
    script.main()
    S = XF.read_summary(tmp_path / "faithfulness_summary.csv")
    lime = S[(S.group == "all") & (S.method == "LIME") & (S.metric == "comprehensiveness")
             & (S.perturbation == "delete") & (S.selection == "positive")]
    assert set(lime["ties"]) == {"position", "ferret"}
    R = pd.read_csv(tmp_path / "faithfulness_reviews.csv", comment="#")
    assert XF.metric_column("LIME", "delete", "comprehensiveness", "positive", "ferret") in R


def test_paired_deletion_summary_is_the_paired_difference(quick_model, tmp_path, monkeypatch):
    """make_faithfulness_summary.py --paired-deletion: the deletion games' study with the binomial
    positions and with the certified values (the registry's --set), on the same reviews; the
    difference is the mean of the per-review differences, and folders of other reviews are
    refused. The certified values are drawn to a relative 5e-2 instead of the default 1e-2 (25
    times fewer draws): what this checks is the pairing, and the route's accuracy at any
    tolerance is tests/results/test_results_deletion.py's."""
    from conftest import load_script

    from attnxai.theory.deletion_routes import SamplingSettings

    loose = SamplingSettings(tol=5e-2)
    monkeypatch.setattr(SamplingSettings, "of",
                        classmethod(lambda cls, s: loose if s is None else s))
    games = "Shapley (delete),Banzhaf (delete)"
    sampled = {"Shapley (delete)": {"positions": "sampled"},
               "Banzhaf (delete)": {"positions": "sampled"}}
    folders = {}
    for name, settings in (("binomial", None), ("sampled", sampled)):
        folders[name] = tmp_path / name
        XF.run_faithfulness(folders[name], profile="quick", reviews=2, methods=games,
                            settings=settings, progress=False)
    script = load_script("book/data/make_faithfulness_summary.py")
    monkeypatch.setattr("sys.argv", ["make_faithfulness_summary.py", "--paired-deletion",
                                     str(folders["binomial"]), str(folders["sampled"]), "--out",
                                     str(tmp_path), "--n-boot", "50"])
    script.main()
    T = pd.read_csv(tmp_path / "faithfulness_deletion_routes.csv", comment="#")
    assert set(T.method) == set(games.split(",")) and (T.n == 2).all()
    a, b = (load_results(folders[k], keys=("test_index",), sort=("rank",))
            for k in ("binomial", "sampled"))
    col = XF.metric_column("Banzhaf (delete)", "delete", "comprehensiveness", "positive")
    row = T[(T.method == "Banzhaf (delete)") & (T.perturbation == "delete")
            & (T.selection == "positive") & (T.metric == "comprehensiveness")].iloc[0]
    assert row.difference == pytest.approx((b[col] - a[col]).mean(), rel=1e-4, abs=1e-9)
    assert row.ci_low <= row.difference <= row.ci_high
    assert any(not np.allclose(x, y) for x, y in zip(a["scores__Banzhaf (delete)"],
                                                    b["scores__Banzhaf (delete)"]))
    with pytest.raises(ValueError, match="different reviews"):
        script.paired_deletion(a, b.iloc[:1], 50)


def test_study_explaining_the_predicted_class(quick_model, tmp_path):
    out = tmp_path / "pred"
    XF.run_faithfulness(out, profile="quick", reviews=3, lime=LimeSettings(num_samples=100),
                        target="predicted", methods="alpha-avg,GxI", progress=False)
    df = load_results(out, keys=("test_index",), sort=("rank",))
    assert (df["target"] == df["predicted"]).all()
    np.testing.assert_allclose(df["p"], np.where(df["target"] == 1, df["p1"], 1 - df["p1"]))
    assert json.loads((out / "_meta.json").read_text())["target"] == "predicted"


def test_study_refuses_bad_arguments(quick_model, tmp_path):
    """A bad argument of the study, or of a settings object it takes whole (refused, by name,
    when that is built): nothing is written."""
    for bad in (lambda: dict(reviews=0), lambda: dict(methods="alpha-avg,SHAP"),
                lambda: dict(metrics=XF.MetricSettings(perturbations="mask")),
                lambda: dict(metrics=XF.MetricSettings(selections="top")),
                lambda: dict(metrics=XF.MetricSettings(backend="gpu")),
                lambda: dict(metrics={"backend": "fast"}),
                lambda: dict(lime=LimeSettings(num_samples=1)), lambda: dict(num_samples=200),
                lambda: dict(target=2), lambda: dict(target="largest")):
        with pytest.raises((ValueError, TypeError)):
            XF.run_faithfulness(tmp_path / "x", profile="quick", progress=False,
                                **{"reviews": 1, **bad()})
        assert not (tmp_path / "x").exists()
    m = XF.MetricSettings("delete", ["positive"], "model")
    assert (m.perturbations, m.selections, m.backend) == (["delete"], ["positive"], "model")
    assert XF.MetricSettings().perturbations == list(F.PERTURBATIONS)
    with pytest.raises(ValueError, match="perturbation"):
        XF.MetricSettings(perturbations="mask")


def test_the_committed_studies_settings_are_still_recorded_word_for_word(quick_model):
    """Each method's record now lives in its registry entry: a study of the committed run's
    methods records what that run recorded (book/data's header), so the folder resumes (only
    the model differs: the quick one here)."""
    from attnxai.store import results as store

    for csv in ("faithfulness_summary.csv",):
        header = (ROOT / "book" / "data" / csv).read_text().splitlines()
        old = json.loads(next(ln for ln in header if ln.startswith("# settings: "))[12:])
        study = XF.FaithfulnessStudy(profile="quick", reviews=1, methods=old["methods"],
                                     target=old["target"])
        new = study.settings()
        differ = [k for k, v in new.items() if not store.same_value(old.get(k), v)]
        assert differ == ["profile", "model"]


@pytest.mark.filterwarnings("ignore::attnxai.text.TruncationWarning")
def test_a_study_sets_any_methods_settings_and_seeds_it_per_review(quick_model, imdb, tmp_path):
    out = tmp_path / "sg"
    XF.run_faithfulness(out, profile="quick", reviews=2, methods="SmoothGrad,GxI",
                        metrics=XF.MetricSettings(selections="positive"),
                        settings={"SmoothGrad": {"n_samples": 3}}, progress=False)
    meta = json.loads((out / "_meta.json").read_text())
    assert meta["method settings"] == {"SmoothGrad": {"n_samples": 3}} and "smoothgrad" in meta
    assert "lime" not in meta                          # only the methods the study runs
    assert "num_samples" not in meta and "kernel_width" not in meta      # LIME's, not run
    df = load_results(out, keys=("test_index",), sort=("rank",))
    for _, row in df.iterrows():
        ex = attnxai.explain(quick_model, imdb.test[int(row.test_index)].text, ["SmoothGrad"],
                             settings={"SmoothGrad": {"n_samples": 3,
                                                      "seed": int(row.test_index)}})
        np.testing.assert_allclose(row["scores__SmoothGrad"], ex.token_scores["SmoothGrad"],
                                   rtol=1e-6)
    with pytest.raises(ValueError, match="seed is the study's"):
        XF.run_faithfulness(tmp_path / "y", profile="quick", reviews=1, methods="SmoothGrad",
                            settings={"SmoothGrad": {"seed": 3}}, progress=False)
    with pytest.raises(ValueError, match="SmoothGrad has no setting"):
        XF.run_faithfulness(tmp_path / "y", profile="quick", reviews=1, methods="SmoothGrad",
                            settings={"SmoothGrad": {"samples": 3}}, progress=False)
    with pytest.raises(ValueError, match=r"settings for \['LIME'\], which the study does not"):
        XF.run_faithfulness(tmp_path / "y", profile="quick", reviews=1, methods="SmoothGrad",
                            settings={"LIME": {"num_samples": 30}}, progress=False)
    with pytest.raises(ValueError, match="LIME limit and LIME must share kernel_width"):
        XF.run_faithfulness(tmp_path / "y", profile="quick", reviews=1,
                            methods="LIME,LIME limit", lime=LimeSettings(kernel_width=25.0),
                            settings={"LIME limit": {"kernel_width": 5.0}}, progress=False)
    assert not (tmp_path / "y").exists()


def test_perturber_model_backend_for_any_classifier():
    """A model the projections do not describe takes the model backend (auto) and is refused by
    backend='fast'."""
    pre = make_tiny(seed=2)

    class Wrapped(type(pre.model)):
        pass

    m = Wrapped(pre.model.config).double()
    m.load_state_dict(pre.model.state_dict())
    ids = _doc(pre, 10)
    # a subclass is still an AttentionClassifier: the fast path applies and agrees
    assert F.Perturber(m, ids, perturbation="delete").backend_used == "fast"
    from attnxai.model.config import ModelConfig
    from attnxai.model.interface import ClassifierBase

    class Other(ClassifierBase):
        def __init__(self, inner):
            super().__init__(ModelConfig(inner.vocab_size, d_embed=inner.d_embed,
                                         max_len=inner.max_len, n_classes=inner.n_classes,
                                         n_heads=inner.n_heads))
            self.inner = inner

        def forward_embeddings(self, e, mask=None, *, per_head=False):
            return self.inner.forward_embeddings(e, mask, per_head=per_head)

        def cls_attention(self, e, mask):
            return self.inner.cls_attention(e, mask)

    other = Other(pre.model).double()
    with torch.no_grad():
        other.W_e.copy_(pre.model.W_e)
    P = F.Perturber(other, ids, perturbation="replace")
    assert P.backend_used == "model"
    with pytest.raises(ValueError, match="backend='fast' is not possible"):
        F.Perturber(other, ids, perturbation="replace", backend="fast")
    keep = np.random.default_rng(0).random((7, 10)) > 0.4
    np.testing.assert_allclose(P(keep), F.Perturber(pre, ids, perturbation="replace")(keep),
                               atol=1e-12)
    assert math.isfinite(F.probability(other, ids))


def test_cli_faithfulness_records_the_run(quick_model, tmp_path, capsys):
    from attnxai.cli import main as cli_main

    out = tmp_path / "cli"
    code = cli_main(["faithfulness", "--profile", "quick", "--reviews", "2", "--num-samples",
                     "100", "--methods", "alpha-avg,LIME,random", "--selections", "positive",
                     "--out", str(out), "--jobs", "2", "--chunk", "1", "--no-progress"])
    assert code == 0
    text = capsys.readouterr().out
    assert "2 reviews computed" in text and "alpha-avg" in text
    from attnxai.store.results import runs as logged_runs

    runs = logged_runs(out)                       # the one run log, with the command as given
    assert len(runs) == 1 and runs[0]["computed"] == 2 and "commit" in runs[0]
    assert runs[0]["command"][:3] == ["attnxai", "faithfulness", "--profile"]
    assert not (out / "_runs.json").exists()
    df = load_results(out, keys=("test_index",), sort=("rank",))
    assert "LIME__replace__positive__comprehensiveness" in df and \
        "LIME__replace__abs__comprehensiveness" not in df
    assert cli_main(["faithfulness", "--profile", "quick", "--reviews", "1", "--out",
                     str(tmp_path / "bad"), "--methods", "SHAP", "--no-progress"]) == 2
    assert "unknown method(s) ['SHAP']" in capsys.readouterr().err
