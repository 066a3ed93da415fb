"""The agreement study of chapter 9 (experiment.shapley_corpus) and its summary script, on the
quick model: rows against a direct computation, resuming, the table's shape and paired
differences."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import load_script, make_tiny, tiny_text
from scipy.stats import spearmanr

from attnxai import theory
from attnxai.experiment import load_results, review_order
from attnxai.experiment import shapley_corpus as SC
from attnxai.experiment.lime_corpus import review_text


@pytest.fixture(scope="module")
def small_run(tmp_path_factory, quick_model):
    out = tmp_path_factory.mktemp("shapley") / "run"
    report = SC.run_shapley_corpus(out, profile="quick", reviews=3, num_samples=200, chunk=2,
                                   progress=False)
    return out, report


def test_rows_resume_and_table(small_run, quick_model, imdb):
    out, report = small_run
    assert (report.computed, report.skipped) == (6, 0)                 # 3 reviews x 2 modes
    df = load_results(out, keys=("test_index", "mode"), sort=("rank", "mode"))
    order = review_order(len(imdb.test))[:3].tolist()
    assert sorted(set(df["test_index"])) == sorted(order) and set(df["mode"]) == set(SC.MODES)
    assert set(SC.pair_columns()) <= set(df.columns)
    row = df[(df["test_index"] == order[0]) & (df["mode"] == "replace")].iloc[0]
    text = review_text(imdb, order[0], quick_model.model.max_len)
    phi = theory.shapley(quick_model, text, bow=False)
    ig = theory.integrated_gradients(quick_model, text)
    assert row["spearman__Shapley__IG"] == pytest.approx(spearmanr(phi, ig.tokens).statistic,
                                                         abs=1e-9)
    assert abs(row["ig_completeness_gap"]) < 1e-9 and row["ig_nodes"] == ig.n_nodes
    assert abs(row["shapley_efficiency_gap"]) < 1e-8                   # replacement: exact
    meta = json.loads((out / "_meta.json").read_text())
    assert meta["num_samples"] == 200 and meta["modes"] == list(SC.MODES)
    again = SC.run_shapley_corpus(out, profile="quick", reviews=4, num_samples=200, chunk=2,
                                  progress=False)
    assert (again.computed, again.skipped) == (2, 6)
    df = load_results(out, keys=("test_index", "mode"), sort=("rank", "mode"))
    table = SC.agreement_table(df, n_boot=50)
    n_pairs = len(SC.COMPARED) * (len(SC.COMPARED) - 1) // 2
    assert len(table) == 2 * len(SC.METRICS) * (n_pairs + len(SC.COMPARED) - 2)
    sub = df[df["mode"] == "delete"]
    diff = table[(table["mode"] == "delete") & (table["metric"] == "spearman")
                 & (table["pair"] == "alpha-avg: Shapley - LIME")]["mean"].item()
    assert diff == pytest.approx((sub["spearman__Shapley__alpha-avg"]
                                  - sub["spearman__LIME__alpha-avg"]).mean())


def test_summary_script(small_run, tmp_path):
    out, _ = small_run
    mod = load_script("book/data/make_shapley_summary.py")
    import sys

    argv = sys.argv
    sys.argv = ["make_shapley_summary.py", str(out), "--out", str(tmp_path), "--n-boot", "20"]
    try:
        mod.main()
    finally:
        sys.argv = argv
    import pandas as pd

    text = (tmp_path / "shapley_agreement.csv").read_text()
    assert text.startswith("# results:") and "# command: python -m attnxai shapley-experiment" not in text
    agree = pd.read_csv(tmp_path / "shapley_agreement.csv", comment="#")
    checks = pd.read_csv(tmp_path / "shapley_checks.csv", comment="#")
    reviews = load_results(out, keys=("test_index", "mode"))["test_index"].nunique()
    assert set(agree["mode"]) == {"delete", "replace"} and agree["n"].max() == reviews
    q = checks.set_index(["mode", "quantity"])
    assert q.loc[("replace", "|Shapley efficiency gap| / max(1, |logit|)"), "max"] < 1e-8


def test_one_row_on_a_tiny_model():
    pre = make_tiny(max_len=40, seed=1)
    text = tiny_text(30, seed=1, unknown=False)
    row = SC.agreement_row(pre, text, test_index=7, mode="delete", num_samples=100)
    assert row["n_features"] == len(set(text.split())) and row["mode"] == "delete"
    assert all(-1 - 1e-12 <= row[c] <= 1 + 1e-12 for c in SC.pair_columns()
               if np.isfinite(row[c]))
    with pytest.raises(ValueError, match="mode"):
        SC.agreement_row(pre, text, test_index=7, mode="swap")


def test_command_line(tmp_path, quick_model, capsys):
    from attnxai.cli import main

    out = tmp_path / "cli"
    assert main(["shapley-experiment", "--profile", "quick", "--reviews", "2", "--num-samples",
                 "100", "--out", str(out), "--no-progress"]) == 0
    text = capsys.readouterr().out
    assert "4 rows computed" in text and "alpha-avg: Shapley - LIME" in text
    runs = (out / "_runs.jsonl").read_text()
    assert '"shapley-experiment"' in runs


def test_budget_to_reach_a_target_measured_or_extrapolated():
    """The first budget at the target when one reaches it; else the power laws, here exact by
    construction (error 10 / sqrt(n), CPU time 1e-6 n): n = (10 / target)^2 evaluations."""
    import pandas as pd

    from attnxai.experiment.shapley_corpus import budget_to_reach

    n = 2.0 ** np.arange(12, 21)
    curve = pd.DataFrame({"budget": n, "evaluations": n, "error": 10 / np.sqrt(n),
                          "cpu_seconds": 1e-6 * n})
    evals, secs, measured = budget_to_reach(curve, 10 / np.sqrt(2.0 ** 14) * 1.01)
    assert measured and evals == 2.0 ** 14 and secs == pytest.approx(1e-6 * 2 ** 14)
    evals, secs, measured = budget_to_reach(curve, 1e-3)
    assert not measured
    assert evals == pytest.approx(1e8, rel=1e-9) and secs == pytest.approx(100.0, rel=1e-9)
    with pytest.raises(ValueError, match="too few"):
        budget_to_reach(curve[curve.budget < 2 ** 16], 1e-3)
    with pytest.raises(ValueError, match="positive"):
        budget_to_reach(curve, 0.0)


def test_further_settings_reach_the_row_and_are_checked():
    """``settings`` (the command's --set) reach the methods: on a short text with repeated words
    the defaults take the exact route (efficiency gap 0), the binomial positions asked by name
    leave it open; settings the study cannot take are refused by name."""
    pre = make_tiny(max_len=40, seed=1)
    text = tiny_text(30, seed=1, unknown=False)
    assert len(set(text.split())) < len(text.split())                 # a word repeats
    binomial = {"Shapley (delete)": {"positions": "binomial"}}
    row = SC.agreement_row(pre, text, test_index=7, mode="delete", num_samples=100,
                           settings=binomial)
    plain = SC.agreement_row(pre, text, test_index=7, mode="delete", num_samples=100)
    assert abs(plain["shapley_efficiency_gap"]) < 1e-9 < 1e-4 < abs(row["shapley_efficiency_gap"])
    # a mode the setting does not concern runs as before
    other = SC.agreement_row(pre, text, test_index=7, mode="replace", num_samples=100,
                             settings=binomial)
    assert abs(other["shapley_efficiency_gap"]) < 1e-8
    with pytest.raises(ValueError, match="does not run"):
        SC.method_settings({"Shapley (delete)": {"positions": "exact"}}, ("replace",))
    with pytest.raises(ValueError, match="does not run"):
        SC.method_settings({"SmoothGrad": {"n_samples": 3}})
    with pytest.raises(ValueError, match="num_samples.*study's own"):
        SC.method_settings({"LIME": {"num_samples": 10}})
    with pytest.raises(ValueError, match="positions"):
        SC.method_settings({"Banzhaf (delete)": {"positions": "nowhere"}})
    with pytest.raises(TypeError, match="settings must map"):
        SC.method_settings(["Shapley (delete)"])


def test_command_line_modes_and_set(tmp_path, quick_model, capsys):
    from attnxai.cli import main

    out = tmp_path / "cli_set"
    assert main(["shapley-experiment", "--profile", "quick", "--reviews", "2", "--num-samples",
                 "100", "--modes", "delete", "--set", "Banzhaf (delete).positions=binomial",
                 "--out", str(out), "--no-progress"]) == 0
    assert "2 rows computed" in capsys.readouterr().out
    meta = json.loads((out / "_meta.json").read_text())
    assert meta["modes"] == ["delete"]
    assert meta["method settings"] == {"Banzhaf (delete)": {"positions": "binomial"}}
    df = load_results(out, keys=("test_index", "mode"), sort=("rank", "mode"))
    assert set(df["mode"]) == {"delete"}
    with pytest.raises(ValueError, match="unknown method"):
        main(["shapley-experiment", "--profile", "quick", "--reviews", "2", "--set",
              "Shap.positions=exact", "--out", str(tmp_path / "bad"), "--no-progress",
              "--debug"])


def test_paired_deletion_summary_is_the_paired_difference(small_run, tmp_path, monkeypatch):
    """make_shapley_summary.py --paired-deletion: with a copy of a run whose Spearman of Shapley
    and alpha-avg is 0.1 higher on every review, that pair's difference is 0.1 with an interval
    holding it, every other pair's 0; folders of other reviews are refused."""
    import pandas as pd

    out, _ = small_run
    script = load_script("book/data/make_shapley_summary.py")
    df = load_results(out, keys=("test_index", "mode"), sort=("rank", "mode"))
    shifted = df.copy()
    col = "spearman__Shapley__alpha-avg"
    shifted[col] = shifted[col] + 0.1
    table = script.paired_deletion(df, shifted, 50).set_index(["metric", "pair"])
    row = table.loc[("spearman", "Shapley ~ alpha-avg")]
    assert row["difference"] == pytest.approx(0.1) and row["ci_low"] <= 0.1 + 1e-12 <= row["ci_high"] + 2e-12
    assert row["certified"] - row["binomial"] == pytest.approx(0.1)
    rest = table.drop(index=("spearman", "Shapley ~ alpha-avg"))
    assert np.allclose(rest["difference"].to_numpy(), 0) and len(rest) == len(table) - 1
    with pytest.raises(ValueError, match="same reviews"):
        script.paired_deletion(df, shifted.iloc[:1], 50)
    monkeypatch.setattr("sys.argv", ["make_shapley_summary.py", "--paired-deletion", str(out),
                                     str(out), "--out", str(tmp_path), "--n-boot", "20"])
    script.main()
    routes = pd.read_csv(tmp_path / "shapley_agreement_routes.csv", comment="#")
    assert np.allclose(routes["difference"], 0) and routes["n"].max() == df["test_index"].nunique()
    checks = pd.read_csv(tmp_path / "shapley_checks_routes.csv", comment="#")
    assert set(checks["positions"]) == {"binomial", "certified"}
    assert set(checks["mode"]) == {"delete"}


def test_compared_methods_come_from_the_registry_in_the_folders_order():
    # the columns of the committed results name pairs in this order: it must not move
    assert SC.COMPARED == {
        "Shapley": {"delete": "Shapley (delete)", "replace": "Shapley (replace)"},
        "Banzhaf": {"delete": "Banzhaf (delete)", "replace": "Banzhaf (replace)"},
        "LIME": {"delete": "LIME", "replace": "LIME"},
        "LIME limit": {"delete": "LIME limit", "replace": "LIME limit"},
        "IG": {"delete": "IG", "replace": "IG"},
        "GxI": {"delete": "GxI", "replace": "GxI"},
        "alpha-avg": {"delete": "alpha-avg", "replace": "alpha-avg"},
    }
    assert list(SC.COMPARED) == list(SC.compared_methods())
    assert SC.pair_columns()[0] == "spearman__Shapley__Banzhaf"
