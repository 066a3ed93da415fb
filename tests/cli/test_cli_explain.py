"""`attnxai explain`: the command (attnxai.explain behind it), its HTML Figure 1, JSON, method
choice, uniform flags (old spellings accepted with a note) and the messages for empty, unknown and
too long texts; `--debug` and what counts as a user's mistake."""

from __future__ import annotations

import json
import re
import warnings

import numpy as np
import pytest
from conftest import make_tiny, tiny_text

import attnxai
from attnxai.chapters import paper
from attnxai.model import trained
from attnxai.cli import main as cli_main
from attnxai.shading import figure1_page
from attnxai.registry import ALL_METHODS, PAPER_METHODS


@pytest.fixture
def tiny_cached(monkeypatch):
    """`attnxai explain` on the tiny model instead of a cached profile."""
    pre = make_tiny(seed=3)
    monkeypatch.setattr(trained, "pretrained",
                        lambda profile="paper", archive=None, progress=True: pre)
    return pre


def test_figure1_page_is_offline_and_shaded_per_row():
    page = figure1_page(["<b>", "good", "bad"], {"A": [0.5, 1.0, -0.25], "B": [np.nan, 2, -4]},
                        title="t", subtitle="s", notes=["n"])
    assert page.startswith("<!DOCTYPE html>") and page.count("<tr>") == 2
    assert "&lt;b&gt;" in page and "<b>" not in page.split("<body>")[1]
    for external in ("http://", "https://", "<script", "<link", "@import", "url("):
        assert external not in page
    assert "rgba(46,125,50,1.000)" in page and "rgba(198,40,40,0.250)" in page   # row A
    assert "rgba(198,40,40,1.000)" in page and "rgba(46,125,50,0.500)" in page   # row B
    assert "background:transparent" in page                                     # NaN
    with pytest.raises(ValueError):
        figure1_page(["a"], {"A": [1.0, 2.0]})


def test_cli_table_json_html_and_choice(tiny_cached, tmp_path, capsys):
    text = "a good film with a boring plot"
    assert cli_main(["explain", text, "--num-samples", "200"]) == 0
    out = capsys.readouterr().out
    assert "P(class 1)" in out and all(m in out for m in PAPER_METHODS)
    assert "\x1b[" not in out                          # not a terminal: no colours
    html = tmp_path / "fig1.html"
    assert cli_main(["explain", text, "--json", "--html", str(html), "--methods", "lime,GXI",
                     "--num-samples", "200"]) == 0
    cap = capsys.readouterr()
    doc = json.loads(cap.out)
    assert list(doc["token_scores"]) == ["LIME", "GxI"] and doc["tokens"][1] == "good"
    assert f"wrote {html}" in cap.err
    page = html.read_text()
    assert page.count("<tr>") == 2 and ">boring<" in page
    # the command's numbers are the function's, with its one default seed
    ex = attnxai.explain(tiny_cached, text, ["LIME", "GxI"],
                         settings={"LIME": {"num_samples": 200}})
    assert doc["token_scores"]["LIME"] == ex.token_scores["LIME"].tolist()
    assert cli_main(["explain", text, "--methods", "all", "--json",
                     "--num-samples", "100", "--seed", "5", "--kernel-width", "50"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert list(doc["token_scores"]) == list(ALL_METHODS)
    assert doc["settings"]["LIME"]["seed"] == 5 and doc["settings"]["random"]["seed"] == 5
    assert doc["settings"]["LIME limit"]["kernel_width"] == 50.0
    assert cli_main(["explain", "good good film", "--methods", "GxI", "--level", "word"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 1 + 2 + 2        # 2 distinct words
    assert cli_main(["explain", "good film", "--methods", "GxI", "--target", "predicted",
                     "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["target"] == doc["predicted"]


def test_old_flag_spellings_still_work_and_say_which_to_use(tiny_cached, capsys):
    assert cli_main(["explain", "good film", "--explainers", "GxI", "--model", "quick",
                     "--json"]) == 0
    cap = capsys.readouterr()
    assert list(json.loads(cap.out)["token_scores"]) == ["GxI"]
    assert "--explainers is deprecated, use --methods" in cap.err
    assert "--model is deprecated, use --profile" in cap.err


def test_cli_messages(tiny_cached, capsys):
    assert cli_main(["explain", ""]) == 2
    assert "text is empty" in capsys.readouterr().err
    assert cli_main(["explain", "zork blarg"]) == 2
    assert "vocabulary" in capsys.readouterr().err
    assert cli_main(["explain", "good film", "--methods", "alpha,shap"]) == 2
    assert "unknown method(s) ['alpha', 'shap']" in capsys.readouterr().err
    assert cli_main(["explain", "good film", "--num-samples", "1"]) == 2
    assert "num_samples" in capsys.readouterr().err
    assert cli_main(["explain", "good film", "--target", "positive"]) == 2
    assert "target must be a class index or 'predicted'" in capsys.readouterr().err
    long = tiny_text(50, seed=2, unknown=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")                 # the CLI turns the warning into a note
        assert cli_main(["explain", long, "--methods", "GxI"]) == 0
    cap = capsys.readouterr()
    assert re.search(r"note: the text has 50 tokens .* the last 11 were cut", cap.err)
    assert len(cap.out.splitlines()) == 2 + 2 + 39      # summary (2 lines), header, rule, rows


def test_debug_shows_the_traceback_and_a_bug_is_not_a_users_mistake(tiny_cached, monkeypatch,
                                                                      capsys):
    with pytest.raises(ValueError, match="text is empty"):
        cli_main(["explain", "", "--debug"])
    with pytest.raises(ValueError, match="text is empty"):
        cli_main(["--debug", "explain", ""])
    assert cli_main(["explain", ""]) == 2               # without --debug: one line

    def broken(*a, **k):
        raise TypeError("an internal bug")

    monkeypatch.setattr(attnxai.explanation, "read_document", broken)
    with pytest.raises(TypeError, match="an internal bug"):   # never hidden as a user error
        cli_main(["explain", "good film"])


def test_skip_ablation_help_names_its_chapter(capsys):
    with pytest.raises(SystemExit):
        cli_main(["--help"])
    assert "the single-layer model with and without the skip connection, per seed (chapter 8)" \
        in " ".join(capsys.readouterr().out.split())


def test_cli_on_the_cached_quick_model(quick_model, capsys):
    assert cli_main(["explain", paper.FIGURE1_TEXT, "--profile", "quick", "--json",
                     "--no-progress"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["model"] == quick_model.path.name and len(doc["tokens"]) == 7


def test_set_gives_any_methods_settings(tiny_cached, capsys):
    """Before: the command could set LIME's samples and width only."""
    assert cli_main(["explain", "good film but a bad plot", "--methods", "SmoothGrad,LIME limit",
                     "--set", "smoothgrad.n_samples=3", "--set", "SmoothGrad.summary=GxI",
                     "--set", "LIME limit.n_nodes=8", "--seed", "5", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["settings"]["SmoothGrad"] == {"n_samples": 3, "noise": 0.15, "summary": "GxI",
                                             "seed": 5}
    assert got["settings"]["LIME limit"]["n_nodes"] == 8
    want = attnxai.explain(tiny_cached, "good film but a bad plot", ["SmoothGrad"], seed=5,
                           settings={"SmoothGrad": {"n_samples": 3, "summary": "GxI"}})
    np.testing.assert_array_equal(got["token_scores"]["SmoothGrad"],
                                  want.token_scores["SmoothGrad"])
    for spec, msg in (("SmoothGrad.n_samples=three", "'three' is not of type int"),
                      ("SmoothGrad.samples=3", "SmoothGrad has no setting 'samples'"),
                      ("Smooth.n_samples=3", "unknown method 'Smooth'"),
                      ("n_samples=3", "--set takes METHOD.FIELD=VALUE"),
                      ("SmoothGrad.n_samples=0", "n_samples must be an int >= 1"),
                      ("LIME.num_samples=50", "not among the methods asked")):
        assert cli_main(["explain", "good film", "--methods", "SmoothGrad",
                         "--set", spec]) == 2
        assert msg in capsys.readouterr().err, spec


def test_settings_as_text_follow_the_fields_types():
    from attnxai.registry import parse_settings

    assert parse_settings(["LIME.bow=False", "LIME.seed=none", "LIME.kernel_width=2.5",
                           "LIME limit.kernel_width=inf", "LIME limit.law=beta"]) == {
        "LIME": {"bow": False, "seed": None, "kernel_width": 2.5},
        "LIME limit": {"kernel_width": float("inf"), "law": "beta"}}
    with pytest.raises(ValueError, match="'yes' is not of type bool"):
        parse_settings(["LIME.bow=yes"])
    with pytest.raises(ValueError, match="'none' is not of type int"):
        parse_settings(["LIME.num_samples=none"])          # a field that cannot be None


def test_lime_flags_are_generated_from_the_settings_and_checked_before_any_work(
        monkeypatch, tmp_path, capsys):
    import argparse

    from attnxai.cli.flags import add_settings_flags, settings_from_args
    from attnxai.limit_settings import LimeSettings

    p = argparse.ArgumentParser()
    add_settings_flags(p, LimeSettings, ("num_samples", "kernel_width", "mask_string"))
    args = p.parse_args([])
    assert settings_from_args(args, LimeSettings, ("num_samples", "kernel_width",
                                                   "mask_string")) == LimeSettings()
    args = p.parse_args(["--kernel-width", "2.5", "--num-samples", "40"])
    assert settings_from_args(args, LimeSettings, ("num_samples", "kernel_width")) == \
        LimeSettings(num_samples=40, kernel_width=2.5)
    with pytest.raises(TypeError, match="no flag"):
        add_settings_flags(argparse.ArgumentParser(), LimeSettings, ("bow",))

    def no_model(*a, **k):
        raise AssertionError("the model was loaded before the settings were checked")

    monkeypatch.setattr(trained, "pretrained", no_model)
    for argv in (["explain", "good film", "--kernel-width", "0"],
                 ["faithfulness", "--out", str(tmp_path / "f"), "--kernel-width", "-1"],
                 ["shapley-experiment", "--out", str(tmp_path / "s"), "--num-samples", "1"],
                 ["lime-experiment", "--out", str(tmp_path / "l"), "--kernel-width", "nan"]):
        assert cli_main(argv) == 2, argv
        err = capsys.readouterr().err
        assert re.search(r"kernel_width must be > 0|num_samples", err), err
        if argv[0] != "explain":
            assert not (tmp_path / argv[2]).exists()            # no results folder begun
