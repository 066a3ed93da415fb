"""`attnxai explain`: the function (attnxai.faithfulness.explain), the command, its HTML Figure 1,
JSON, explainer choice and the messages for empty, unknown and too long texts."""

from __future__ import annotations

import json
import re
import warnings

import numpy as np
import pytest
from conftest import make_tiny, tiny_text

from attnxai import explainers, paper
from attnxai import faithfulness as F
from attnxai.cli import main as cli_main
from attnxai.plots import figure1_page


@pytest.fixture
def tiny_cached(monkeypatch):
    """`attnxai explain` on the tiny model instead of a cached profile."""
    pre = make_tiny(seed=3)
    monkeypatch.setattr(F, "cached_pretrained", lambda profile="paper", progress=True: pre)
    return pre


def test_explain_function_gives_the_seven_explainers(tiny):
    text = "The film was good, but the plot was boring!"
    ex = F.explain(text, pre=tiny, num_samples=300)
    assert ex.tokens == "the film was good but the plot was boring".split()
    assert list(ex.scores) == list(explainers.METHODS)
    assert all(v.shape == (len(ex.tokens),) for v in ex.scores.values())
    assert ex.probability.sum() == pytest.approx(1.0) and ex.cut == 0 and ex.unknown == []
    # the same numbers as the package's explainers
    df = explainers.explain_text(tiny, text, lime_kwargs={"random_state": 42,
                                                          "num_samples": 300})
    for m in explainers.METHODS:
        np.testing.assert_allclose(ex.scores[m], df[m].to_numpy(), atol=1e-12)
    table = ex.to_text()
    assert table.splitlines()[0].split()[:3] == ["#", "token", "alpha-avg"]
    assert len(table.splitlines()) == 2 + len(ex.tokens)
    assert "\x1b[" in ex.to_text(color=True) and "\x1b[" not in table
    doc = json.loads(json.dumps(ex.to_json()))
    assert doc["tokens"] == ex.tokens and set(doc["scores"]) == set(explainers.METHODS)


def test_explain_messages(tiny):
    long = tiny_text(60, seed=1, unknown=False)
    with pytest.warns(UserWarning, match="60 tokens and the model reads 39: the last 21 were cut"):
        ex = F.explain(long, pre=tiny, methods=["GxI"])
    assert (ex.n_tokens, ex.cut, len(ex.tokens)) == (60, 21, 39)
    assert "the last 21 were cut" in ex.summary()
    ex = F.explain("good zork film blarg", pre=tiny, methods=["alpha-avg", "LIME"],
                   num_samples=100)
    assert ex.unknown == ["zork", "blarg"] and "read as UNK: zork, blarg" in ex.summary()
    with pytest.raises(ValueError, match="empty"):
        F.explain("   ", pre=tiny)
    with pytest.raises(ValueError, match="no letter or digit"):
        F.explain("?! ...", pre=tiny)
    with pytest.raises(ValueError, match="none of the 2 distinct words .* vocabulary"):
        F.explain("zork blarg zork", pre=tiny)
    with pytest.raises(ValueError, match="unknown explainer"):
        F.explain("good film", pre=tiny, methods=["SHAP"])


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
    assert cli_main(["explain", "a good film with a boring plot", "--num-samples", "200"]) == 0
    out = capsys.readouterr().out
    assert "P(class 1)" in out and all(m in out for m in explainers.METHODS)
    assert "\x1b[" not in out                          # not a terminal: no colours
    html = tmp_path / "fig1.html"
    assert cli_main(["explain", "a good film with a boring plot", "--json", "--html", str(html),
                     "--explainers", "lime,GXI", "--num-samples", "200"]) == 0
    cap = capsys.readouterr()
    doc = json.loads(cap.out)
    assert list(doc["scores"]) == ["LIME", "GxI"] and doc["tokens"][1] == "good"
    assert f"wrote {html}" in cap.err
    page = html.read_text()
    assert page.count("<tr>") == 2 and ">boring<" in page
    assert cli_main(["explain", "good film", "--explainers", "all", "--json",
                     "--num-samples", "100"]) == 0
    assert list(json.loads(capsys.readouterr().out)["scores"]) == list(F.ALL_METHODS)


def test_cli_messages(tiny_cached, capsys):
    assert cli_main(["explain", ""]) == 2
    assert "text is empty" in capsys.readouterr().err
    assert cli_main(["explain", "zork blarg"]) == 2
    assert "vocabulary" in capsys.readouterr().err
    assert cli_main(["explain", "good film", "--explainers", "alpha,shap"]) == 2
    assert "unknown explainer(s) ['alpha', 'shap']" in capsys.readouterr().err
    assert cli_main(["explain", "good film", "--num-samples", "1"]) == 2
    assert "num_samples" in capsys.readouterr().err
    long = tiny_text(50, seed=2, unknown=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")                 # the CLI turns the warning into a note
        assert cli_main(["explain", long, "--explainers", "GxI"]) == 0
    cap = capsys.readouterr()
    assert re.search(r"note: the text has 50 tokens .* the last 11 were cut", cap.err)
    assert len(cap.out.splitlines()) == 2 + 2 + 39      # summary (2 lines), header, rule, rows


def test_cli_on_the_cached_quick_model(quick_model, capsys):
    assert F.cached_pretrained("quick").path == quick_model.path
    assert cli_main(["explain", paper.FIGURE1_TEXT, "--model", "quick", "--json",
                     "--no-progress"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["model"] == quick_model.path.name and len(doc["tokens"]) == 7


def test_cached_pretrained_says_when_it_must_train(tmp_path, monkeypatch, capsys):
    import attnxai.checkpoint
    import attnxai.data

    monkeypatch.setattr(attnxai.data, "cache_dir", lambda: tmp_path)
    trained = []
    monkeypatch.setattr(attnxai.checkpoint, "pretrained",
                        lambda profile, progress=True: trained.append(profile) or "model")
    assert F.cached_pretrained("quick") == "model" and trained == ["quick"]
    assert "no cached 'quick' model" in capsys.readouterr().err
    assert F.cached_pretrained("quick", progress=False) == "model"
    assert capsys.readouterr().err == ""
