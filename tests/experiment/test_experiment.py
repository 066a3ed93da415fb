"""The corpus runner and the LIME study: rows, approximations, resuming, parallel workers, errors."""

from __future__ import annotations


import numpy as np
import pytest
import torch

import attnxai
import attnxai.fastlime
from attnxai import experiment as X
from attnxai.cli import main as cli_main

SMALL = dict(profile="quick", repeats=2, num_samples=60, progress=False)


def zeros(pre, text, *, bow, kernel_width):
    return np.zeros(len(dict.fromkeys(text.split())) if bow else len(text.split()))


def wrong_length(pre, text, *, bow, kernel_width):
    return np.zeros(3)


def boom(pre, text, *, bow, kernel_width):
    raise NotImplementedError("not for this bow")


def test_order_and_seeds():
    a, b = X.review_order(25_000), X.review_order(25_000)
    np.testing.assert_array_equal(a, b)
    assert sorted(a[:100]) != list(range(100))         # a shuffle, not the sorted test set
    assert X.lime_seed(12, 3) == 12_003
    with pytest.raises(ValueError, match="repeat"):
        X.lime_seed(1, 1000)


def test_full_length_reviews_follow_the_order():
    """The benchmarks' reviews: the first of the seeded order whose normalised text fills the
    model, in that order (fewer when the test set has fewer)."""
    import types

    texts = ["a b c", "a b", "x y z w", "q r s", "m n o"]
    data = types.SimpleNamespace(test=[types.SimpleNamespace(text=t) for t in texts])
    full = [i for i in X.review_order(5) if len(texts[i].split()) >= 3]
    got = X.full_length_reviews(data, 2, max_len=4)            # 3 tokens after [CLS]
    assert got == [" ".join(texts[i].split()[:3]) for i in full[:2]]
    assert len(X.full_length_reviews(data, 10, max_len=4)) == 4
    with pytest.raises(ValueError, match="n"):
        X.full_length_reviews(data, 0, max_len=4)


def test_resume_computes_only_new_reviews(quick_model, tmp_path):
    out = tmp_path / "res"
    first = X.run_lime_corpus(out, reviews=3, bow="true", approximations=[], **SMALL)
    assert (first.computed, first.skipped) == (3, 0)
    before = X.load_results(out)
    second = X.run_lime_corpus(out, reviews=5, bow="true", approximations=[], **SMALL)
    assert (second.computed, second.skipped) == (2, 3)
    after = X.load_results(out)
    assert list(after["rank"]) == [0, 1, 2, 3, 4]
    assert after["test_index"].tolist() == X.review_order(25_000)[:5].tolist()
    for col in ("lime_mean", "words"):
        assert [list(v) for v in after[col][:3]] == [list(v) for v in before[col]]
    third = X.run_lime_corpus(out, reviews=5, bow="both", approximations=[], **SMALL)
    assert (third.computed, third.skipped) == (5, 5)    # only the bow=False rows are new
    assert len(X.load_results(out)) == 10


def test_rows_match_lime_and_approximations(quick_model, imdb, tmp_path):
    out = tmp_path / "res"
    X.run_lime_corpus(out, reviews=2, bow="both", approximations={
        "zeros": zeros, "wrong_length": wrong_length, "boom": boom}, **SMALL)
    df = X.load_results(out)
    assert len(df) == 4 and df["bow"].tolist() == [True, False, True, False]
    row = df.iloc[1]
    text = attnxai.normalize_for_lime(imdb.test[int(row["test_index"])].text)
    assert list(row["seeds"]) == [X.lime_seed(row["test_index"], r) for r in range(2)]
    res = attnxai.fastlime.explain_instance(quick_model, text, bow=False, num_samples=60,
                               random_state=int(row["seeds"][1]))
    np.testing.assert_allclose(row["lime_coef"][1], res.coef, rtol=0, atol=1e-12)
    assert list(row["words"]) == res.words and row["n_features"] == len(res.words)
    coefs = np.stack(row["lime_coef"])
    mean = coefs.mean(0)
    np.testing.assert_allclose(row["lime_mean"], mean)
    assert row["lime_spread"] == pytest.approx(np.linalg.norm(coefs - mean, axis=1).mean())
    assert row["zeros__err2"] == pytest.approx(np.linalg.norm(mean))
    assert row["zeros__relerr"] == pytest.approx(1.0)
    assert np.isnan(row["wrong_length__err2"]) and "3 coefficients" in row["wrong_length__error"]
    assert row["boom__error"] == "NotImplementedError: not for this bow"
    table = X.lime_summary(df)
    assert table.loc[("zeros", True), "relerr_mean"] == pytest.approx(1.0)
    assert table.loc[("boom", False), "failed"] == 2
    assert ("lime (repeat vs mean)", True) in table.index


def test_the_approximations_are_one_explicit_table(quick_model, imdb):
    from attnxai.theory import APPROXIMATIONS

    assert list(APPROXIMATIONS) == ["paper", "limit", "limit_lime", "meanfield", "limit_wide",
                                    "limit_meanpos"]
    text = attnxai.normalize_for_lime(imdb.test[0].text)
    d = len(dict.fromkeys(text.split()))
    for a in APPROXIMATIONS.values():
        assert a.label and a.description
    assert APPROXIMATIONS["paper"](quick_model, text, bow=True, kernel_width=25.0).shape == (d,)
    with pytest.raises(ValueError, match="identifiers"):
        X.run_lime_corpus("unused", reviews=1, approximations={"not a name": zeros}, **SMALL)


def test_cli_parallel_run(quick_model, tmp_path, capsys):
    out = tmp_path / "cli"
    code = cli_main(["lime-experiment", "--profile", "quick", "--reviews", "2", "--repeats", "1",
                     "--num-samples", "40", "--bow", "both", "--out", str(out), "--jobs", "2",
                     "--chunk", "1", "--approximations", "none", "--no-progress"])
    assert code == 0
    assert "4 rows computed" in capsys.readouterr().out
    df = X.load_results(out)
    assert len(df) == 4 and set(df["path"]) == {"fast"}


def test_settings_must_match_when_resuming(quick_model, tmp_path):
    out = tmp_path / "res"
    X.run_lime_corpus(out, reviews=1, bow="true", approximations=[], **SMALL)
    with pytest.raises(ValueError, match="num_samples: 60 there, 80 now"):
        X.run_lime_corpus(out, reviews=1, bow="true", approximations=[],
                         **{**SMALL, "num_samples": 80})


def test_bad_arguments(quick_model, tmp_path):
    with pytest.raises(ValueError, match="bow must be true, false or both"):
        X.run_lime_corpus(tmp_path / "a", reviews=1, bow="sometimes", **SMALL)
    with pytest.raises(ValueError, match="reviews must be an int >= 1"):
        X.run_lime_corpus(tmp_path / "a", reviews=0, **SMALL)
    with pytest.raises(ValueError, match="unknown approximations"):
        X.run_lime_corpus(tmp_path / "a", reviews=1, approximations=["nope"], **SMALL)
    for bad in (dict(num_samples=1), dict(kernel_width=0.0), dict(kernel_width=float("nan")),
                dict(mask_string="the")):
        with pytest.raises(ValueError):
            X.run_lime_corpus(tmp_path / "b", reviews=1, bow="both", **{**SMALL, **bad})
        assert not (tmp_path / "b").exists()          # refused before anything was written
    (tmp_path / "file").write_text("x")
    with pytest.raises(ValueError, match="not a folder"):
        X.run_lime_corpus(tmp_path / "file", reviews=1, approximations=[], **SMALL)
    with pytest.raises(FileNotFoundError):
        X.load_results(tmp_path / "missing")


def test_scheduler_without_distributed(tmp_path, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "distributed", None)     # as if it were not installed
    # and as if no earlier test had imported the Dask runner (it imports distributed at the top)
    monkeypatch.delitem(sys.modules, "attnxai.experiment.cluster", raising=False)
    import attnxai.experiment as experiment_pkg
    monkeypatch.delattr(experiment_pkg, "cluster", raising=False)
    with pytest.raises(RuntimeError, match=r"pip install .*attnxai\[dask\]"):
        X.run_lime_corpus(tmp_path / "d", reviews=1, scheduler="tcp://127.0.0.1:1", **SMALL)


def test_new_approximations_fill_finished_rows(quick_model, tmp_path):
    out = tmp_path / "res"
    X.run_lime_corpus(out, reviews=3, bow="true", approximations=[], **SMALL)
    before = X.load_results(out)
    report = X.run_lime_corpus(out, reviews=3, bow="true", approximations={"zeros2": zeros},
                               **SMALL)
    assert (report.computed, report.skipped, report.finished) == (0, 3, 3)
    after = X.load_results(out)
    assert [list(v) for v in after["lime_mean"]] == [list(v) for v in before["lime_mean"]]
    np.testing.assert_allclose(after["zeros2__relerr"], 1.0)
    again = X.run_lime_corpus(out, reviews=3, bow="true", approximations={"zeros2": zeros},
                              **SMALL)
    assert again.finished == 0


def test_cli_selects_approximations(quick_model, tmp_path, capsys):
    out = tmp_path / "sel"
    assert cli_main(["lime-experiment", "--profile", "quick", "--reviews", "1", "--repeats", "1",
                     "--num-samples", "30", "--bow", "true", "--out", str(out),
                     "--approximations", "paper", "--no-progress"]) == 0
    df = X.load_results(out)
    assert X.approximation_names(df) == ["paper"]
    assert cli_main(["lime-experiment", "--profile", "quick", "--reviews", "1", "--out",
                     str(tmp_path / "n"), "--approximations", "nope", "--no-progress"]) == 2
    assert "unknown approximations" in capsys.readouterr().err


def test_book_data_finds_the_committed_summary(tmp_path):
    from pathlib import Path

    from attnxai.experiment import book_data

    root = Path(__file__).resolve().parents[2]
    assert book_data("lime_corpus_summary.csv", root / "notebooks") == \
        root / "book" / "data" / "lime_corpus_summary.csv"
    with pytest.raises(FileNotFoundError, match="book/data/nothing.csv not found"):
        book_data("nothing.csv", tmp_path)


def test_runs_header_from_the_run_log(tmp_path):
    """runs_header reads the runner's log (_runs.jsonl): two lines per run, oldest first, with the
    command as given, or a note where a run started from Python recorded none."""
    from attnxai.experiment import runs_header
    from attnxai.store.results import log_run

    base = {"commit": "abc", "dirty": False, "seconds": 61.6, "computed": 4, "skipped": 0,
            "jobs": 1, "loadavg_before": [0.25, 0, 0], "loadavg_after": [1.0, 0, 0]}
    log_run(tmp_path, {**base, "study": "s", "command": ["x", "lime-experiment", "--out", "r"],
                       "started": "2026-02-01T00:00:00+00:00"})
    log_run(tmp_path, {**base, "study": "s", "command": None, "dirty": True,
                       "started": "2026-01-01T00:00:00+00:00"})
    lines = runs_header(tmp_path, "rows")
    assert lines[0] == "# run: s started from Python (no command recorded)"
    assert lines[1].startswith("#   code: abc (with uncommitted changes!); started 2026-01-01")
    assert lines[2] == "# command: python -m attnxai lime-experiment --out r"
    assert lines[3] == ("#   code: abc; started 2026-02-01T00:00:00+00:00; wall time 62 s for "
                        "4 rows (0 already there), jobs 1; load average before 0.25, after 1.00")


def test_a_summary_names_its_weights_and_a_chapter_compares_only_the_same(tmp_path, tiny):
    """A run logs its model's weights digest; the summary's header names it; same_weights is
    true for exactly those weights: not for the same key with other weights (another CPU trains
    others), nor for a summary of runs that recorded no digest (the committed ones before)."""
    import pandas as pd

    from attnxai import save
    from attnxai.model.store.checkpoint import weights_sha256
    from attnxai.experiment import runs_header, same_weights, write_summary
    from attnxai.experiment.bookdata import recorded_weights
    from attnxai.store.results import log_run

    saved = save(tiny, tmp_path / "tiny-0123456789abcdef")
    digest = weights_sha256(saved)
    base = {"study": "s", "commit": "abc", "dirty": False, "seconds": 1.0, "computed": 1,
            "skipped": 0, "jobs": 1, "command": ["x", "faithfulness"]}
    (tmp_path / "run").mkdir()
    log_run(tmp_path / "run", {**base, "model": {"name": saved.name, "weights_sha256": digest}})
    header = runs_header(tmp_path / "run")
    assert header[-1] == f"#   model: {saved.name}; weights sha256 {digest}"
    summary = write_summary(tmp_path / "s.csv", header, pd.DataFrame({"x": [1]}), "%g")
    assert recorded_weights(summary) == {digest} and same_weights(tiny, summary)
    with torch.no_grad():
        tiny.model.W_q.mul_(1.0 + 1e-12)             # the same folder name, other weights
    other = save(tiny, tmp_path / "other" / saved.name)
    assert weights_sha256(other) != digest and not same_weights(tiny, summary)
    old = write_summary(tmp_path / "old.csv", header[:-1], pd.DataFrame({"x": [1]}), "%g")
    assert recorded_weights(old) == set() and not same_weights(tiny, old)


def test_summary_header_and_runs(tmp_path):
    """write_summary: '#' lines, then the CSV (read back with comment='#'); runs_header: two lines
    per run the attnxai command logged in a folder's older _runs.json (whose runner lines of the
    time, without a command, are the same runs and are left out), none without a log."""
    import json

    import pandas as pd

    from attnxai.experiment import runs_header, write_summary
    from attnxai.store.results import log_run

    assert runs_header(tmp_path) == []
    log_run(tmp_path, {"study": "s", "seconds": 12.4, "computed": 3, "skipped": 1, "jobs": 2})
    assert runs_header(tmp_path)[0] == "# run: s started from Python (no command recorded)"
    (tmp_path / "_runs.json").write_text(json.dumps([{
        "argv": ["attnxai", "faithfulness", "--out", "a b"], "commit": "abc", "dirty": True,
        "started": "2026-01-01T00:00:00+00:00", "seconds": 12.4, "computed": 3, "skipped": 1,
        "jobs": 2, "loadavg_before": [0.5, 0, 0], "loadavg_after": [1.25, 0, 0]}]))
    command, code = runs_header(tmp_path, "items")
    assert command == "# command: python -m attnxai faithfulness --out 'a b'"
    assert code.startswith("#   code: abc (with uncommitted changes!); started 2026-01-01")
    assert "wall time 12 s for 3 items (1 already there), jobs 2" in code
    assert code.endswith("load average before 0.50, after 1.25")
    frame = pd.DataFrame({"x": [1.0 / 3, 2.0], "name": ["a", "b"]})
    path = write_summary(tmp_path / "s.csv", [command, code], frame, "%.3g")
    assert path.read_text().splitlines()[:2] == [command, code]
    back = pd.read_csv(path, comment="#")
    assert back["x"].tolist() == [0.333, 2.0] and back["name"].tolist() == ["a", "b"]


def test_check_lime_corpus_finds_a_changed_value(quick_model, tmp_path, capsys):
    """book/data/check_lime_corpus.py: a rerun of a run's first reviews is the same bit for bit
    (exit 0); after one coefficient of one part is changed by 1e-15 (relative), it names that
    column (exit 1); a run made with another model is refused (exit 2)."""
    import json

    import pandas as pd

    from conftest import load_script

    check = load_script("book/data/check_lime_corpus.py")
    out = tmp_path / "run"
    X.run_lime_corpus(out, reviews=2, bow="both", approximations=["paper", "limit"], **SMALL)
    assert check.main([str(out), "--reviews", "2"]) == 0
    assert "every value is the same, bit for bit" in capsys.readouterr().out
    from attnxai.store import results as store

    part = sorted(out.glob("part-*.parquet"))[0]
    df = pd.read_parquet(part)
    coef = [np.array(c, dtype=float) for c in df["limit__coef"]]
    coef[0][0] *= 1 + 1e-15
    df["limit__coef"] = coef
    store.rewrite_part(part, df)            # a rerun that computed another value (not damage)
    assert check.main([str(out), "--reviews", "2"]) == 1
    text = capsys.readouterr().out
    assert "limit__coef" in text and "1 columns differ" in text and "paper__coef" not in text
    import types

    import attnxai

    with pytest.MonkeyPatch.context() as mp:       # this checkout's quick profile: another model
        mp.setattr(attnxai, "pretrained", lambda *a, **k: types.SimpleNamespace(
            path=__import__("pathlib").Path("quick-0000")))
        assert check.main([str(out), "--reviews", "2"]) == 2
    meta = json.loads((out / "_meta.json").read_text())
    (out / "_meta.json").write_text(json.dumps({**meta, "model": "quick-0000"}))
    with pytest.raises(store.DamagedResults, match="does not hold the settings its parts"):
        check.main([str(out), "--reviews", "2"])  # a relabelled run: its parts say otherwise


def test_header_lines_hide_the_machines_folders(tmp_path):
    """A committed summary's header, shown in a chapter, names no folder of the machine that
    made it: an absolute path in the recorded command is shown by its last part."""
    summary = tmp_path / "s.csv"
    summary.write_text("# command: python -m attnxai lime-experiment --out /home/me/results/run_1 "
                       "--x ./rel/dir\n#   code: abc; https://example.org/a/b\nn\n1\n")
    lines = X.header_lines(summary)
    assert lines[0] == ("command: python -m attnxai lime-experiment --out …/run_1 --x ./rel/dir")
    assert lines[1] == "  code: abc; https://example.org/a/b"
    committed = X.header_lines(X.book_data("lime_corpus_summary.csv"))
    assert committed and not any(" /" in line for line in committed)


def test_a_summary_is_read_with_its_header_apart(tmp_path, monkeypatch):
    """read_summary skips the '#' header; summary_header gives it without the settings lines
    and with the machine's folders masked (the chapters' one reader of committed summaries)."""
    from attnxai.experiment import bookdata

    path = tmp_path / "t.csv"
    path.write_text("# command: run --out /srv/x/run_2\n# settings: {\"a\": 1}\n# wall: 3 s\n"
                    "method,mean\nLIME,0.5\nGxI,-0.25\n")
    monkeypatch.setattr(bookdata, "book_data", lambda name, start=None: tmp_path / name)
    frame = bookdata.read_summary("t.csv")
    assert list(frame.columns) == ["method", "mean"] and frame["mean"].tolist() == [0.5, -0.25]
    assert bookdata.summary_header("t.csv") == ["command: run --out …/run_2", "wall: 3 s"]


def test_provenance_lists_every_summary_once_with_its_header(tmp_path):
    """The reproducibility page's list (bookdata.provenance): one group per distinct header, the
    files that share it named on its first row, every header line but the settings, files
    without a header left out; and over the committed summaries, every one with a header."""
    from attnxai.experiment import bookdata

    (tmp_path / "a.csv").write_text("# command: run --out /srv/x/r\n# settings: {}\n"
                                    "#   code: 1234567abc; load average before 2.5\nx\n1\n")
    (tmp_path / "b.csv").write_text((tmp_path / "a.csv").read_text())
    (tmp_path / "c.csv").write_text("# python make_c.py\nx\n2\n")
    (tmp_path / "d.csv").write_text("x\n3\n")
    table = bookdata.provenance(tmp_path)
    assert table.to_dict("records") == [
        {"summaries": "a.csv, b.csv", "recorded": "command: run --out …/r"},
        {"summaries": "", "recorded": "code: 1234567abc; load average before 2.5"},
        {"summaries": "c.csv", "recorded": "python make_c.py"}]
    committed = bookdata.provenance()
    folder = bookdata.book_data("weights_fingerprints.csv").parent
    with_header = {p.name for p in folder.glob("*.csv") if p.read_text().startswith("#")}
    named = {n for cell in committed.summaries if cell for n in cell.split(", ")}
    assert named == with_header
    assert not committed.recorded.str.startswith("settings").any()
