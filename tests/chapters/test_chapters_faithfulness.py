"""attnxai.chapters.faithfulness: chapter 7 reads its committed study through it and sorts the
explainers into kinds of score from their scores and the registry; checked on small tables
written here, on the committed files, and on the scores of a random model."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from attnxai.chapters import faithfulness as FH
from conftest import tiny_text

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def summary():
    rows = []
    for method, mean in (("LIME", 0.3), ("alpha-avg", -0.1), ("random", 0.0)):
        for metric in ("comprehensiveness", "sufficiency"):
            rows.append(("1", "all", "delete", "positive", metric, method, "position",
                         mean, mean - 0.05, mean + 0.05))
        rows.append(("1", "all", "delete", "-", "tau_loo", method, "-", mean / 2, mean / 2 - 0.1,
                     mean / 2 + 0.1))
    return pd.DataFrame(rows, columns=["target", "group", "perturbation", "selection", "metric",
                                       "method", "ties", "mean", "ci_low", "ci_high"])


def test_one_number_an_interval_and_the_table(summary):
    s = FH.Summary(summary, ["LIME", "alpha-avg", "random"])
    assert s.value("comprehensiveness", "LIME") == 0.3
    assert s.value("tau_loo", "LIME", what="ci_high") == pytest.approx(0.25)     # no rule: "-"
    assert s.ci("comprehensiveness", "alpha-avg") == pytest.approx((-0.15, -0.05))
    t = s.table()
    assert list(t.index) == ["LIME", "alpha-avg", "random"]
    assert t.loc["LIME", "comprehensiveness"] == "+0.300 [+0.250, +0.350]"
    assert t.loc["alpha-avg", "tau_loo"] == "-0.050 [-0.150, +0.050]"
    with pytest.raises(KeyError, match="0 rows for comprehensiveness of GxI"):
        s.value("comprehensiveness", "GxI")
    with pytest.raises(ValueError, match="what"):
        s.value("comprehensiveness", "LIME", what="median")
    with pytest.raises(KeyError, match="no rows for \\['GxI'\\]"):
        FH.Summary(summary, ["GxI"]).table()


def test_comprehensiveness_rows_in_the_order_asked(summary):
    rows = FH.comprehensiveness_rows(summary, ["random", "LIME"])
    assert list(rows.index) == ["random", "LIME"] and list(rows["mean"]) == [0.0, 0.3]
    with pytest.raises(KeyError, match="GxI"):
        FH.comprehensiveness_rows(summary, ["GxI"])


def test_curves_and_signs_tables():
    curves = pd.DataFrame({"target": ["1", "1"], "method": ["LIME", "LIME"],
                           "curve": ["deletion", "deletion"], "selection": ["positive"] * 2,
                           "perturbation": ["delete"] * 2, "fraction": [0.0, 0.05],
                           "mean": [0.6, 0.4]})
    assert FH.curve_at(curves, "LIME", "deletion") == 0.4
    assert FH.curve_at(curves, "LIME", "deletion", 0.0) == 0.6
    with pytest.raises(KeyError, match="insertion"):
        FH.curve_at(curves, "LIME", "insertion")
    signs = pd.DataFrame({"score": ["LIME"], "k": [5], "group": ["predicted positive"],
                          "mean": [0.45]})
    assert FH.share_negative(signs, 5, "predicted positive") == 0.45
    with pytest.raises(KeyError):
        FH.share_negative(signs, 1, "predicted positive")


def test_unsigned_scores_are_those_never_negative():
    scores = {"alpha-avg": np.array([0.2, 0.5, 0.3]), "G-l2": [0.0, 1.2, 0.4],
              "GxI": np.array([0.1, -0.2, 0.3]), "zeros": np.zeros(3)}
    assert FH.unsigned_methods(scores) == ["alpha-avg", "G-l2"]
    with pytest.raises(ValueError, match="finite"):
        FH.unsigned_methods({"x": np.array([np.nan, 1.0])})


def test_the_kinds_of_the_registry_methods_on_a_model(tiny):
    """On any model, attention and the gradient's norms are unsigned, GxI, LIME and alpha x s are
    not; the one-pass block is the registry's attention and gradient methods."""
    import attnxai
    from attnxai.registry import METHODS

    names = ["alpha-avg", "alpha-max", "G-l1", "G-l2", "GxI", "alpha x s", "LIME", "random"]
    texts = [tiny_text(30, seed) for seed in range(3)]
    exps = [attnxai.explain(tiny, t, names, settings={"LIME": {"num_samples": 300}})
            for t in texts]
    scores = {m: np.concatenate([e.token_scores[m] for e in exps]) for m in names}
    assert FH.unsigned_methods(scores) == ["alpha-avg", "alpha-max", "G-l1", "G-l2"]
    groups = {n: m.group for n, m in METHODS.items()}
    assert FH.one_pass_methods(groups, names) == ["alpha-avg", "alpha-max", "G-l1", "G-l2", "GxI",
                                                  "alpha x s"]
    with pytest.raises(KeyError, match="not in the registry"):
        FH.one_pass_methods(groups, ["nope"])


def test_the_committed_study_reads_whole():
    from attnxai.experiment import faithfulness as XF

    S = XF.read_summary(ROOT / "book" / "data" / "faithfulness_summary.csv")
    S = S[S.ties.isin(["position", "-"])]
    methods = ["alpha-avg", "LIME", "GxI", "random"]
    t = FH.Summary(S, methods).table()
    assert t.shape == (4, 3) and t.notna().all().all()
    A = pd.read_csv(ROOT / "book" / "data" / "faithfulness_agreement.csv", comment="#")
    A["target"] = A["target"].astype(str)
    ag = A[(A.target == "1") & (A.group == "all")
           & (A.scores == "absolute")].set_index(["a", "b"])["mean"]
    assert -1 <= FH.block_min(ag, ["alpha-avg", "GxI", "G-l2"]) <= 1
    with pytest.raises(ValueError, match="two"):
        FH.block_min(ag, ["GxI"])
