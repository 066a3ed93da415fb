"""The one entry point for a text (attnxai.explain), its Explanation, the method registry and the
one converter between token and word level (attnxai.words), on tiny hand-built models."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
import torch
from conftest import make_tiny, tiny_text

import attnxai
from attnxai import explainers, fastlime, registry, theory
from attnxai.registry import ALL_METHODS, DEFAULT_SEED, METHODS, PAPER_METHODS
from attnxai.text import TruncationWarning
from attnxai.words import Words


@pytest.fixture(scope="module")
def pre():
    return make_tiny(seed=1)


# ---------------------------------------------------------------- the converter
def test_words_sum_up_and_spread_down():
    w = Words.of(["good", "bad", "good", "film"])
    assert w.words == ("good", "bad", "film") and w.counts.tolist() == [2, 1, 1]
    np.testing.assert_array_equal(w.to_words([1.0, -2.0, 0.5, 3.0]), [1.5, -2.0, 3.0])
    np.testing.assert_array_equal(w.to_tokens([0.25, -1.0, 2.0]), [0.25, -1.0, 0.25, 2.0])
    np.testing.assert_array_equal(w.to_words(torch.tensor([1.0, -2.0, 0.5, 3.0])),
                                  [1.5, -2.0, 3.0])
    assert np.isnan(w.to_words([np.nan, 0.0, 1.0, 1.0])[0])       # NaN is never dropped
    # one rule: a word score spread to its tokens and summed back is counted once per occurrence
    np.testing.assert_array_equal(w.to_words(w.to_tokens([1.0, 1.0, 1.0])), w.counts)
    np.testing.assert_array_equal(w.align(["film", "good", "bad"], [3.0, 1.0, 2.0]),
                                  [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match=r"token-level scores must have shape \(4,\)"):
        w.to_words([1.0, 2.0])
    with pytest.raises(ValueError, match=r"word-level scores must have shape \(3,\)"):
        w.to_tokens(np.zeros((3, 1)))
    with pytest.raises(ValueError, match="no score for \\['film'\\]"):
        w.align(["good", "bad"], [1.0, 2.0])
    with pytest.raises(TypeError, match="list of str"):
        Words.of("good film")


def test_every_method_is_registered_once_with_valid_settings():
    assert ALL_METHODS == tuple(METHODS) == (*PAPER_METHODS, *registry.EXTRA_METHODS)
    for m in METHODS.values():
        assert m.level in registry.LEVELS and m.settings()                # defaults are valid
    for method, leader, keys in registry.SHARED:
        for k in keys:
            assert hasattr(METHODS[method].settings(), k) and hasattr(METHODS[leader].settings(), k)


# ---------------------------------------------------------------- the same numbers
def test_explain_gives_each_methods_own_numbers(pre):
    text = tiny_text(25, seed=9)
    ex = attnxai.explain(pre, text, ALL_METHODS,
                         settings={"LIME": {"num_samples": 300, "seed": 4}, "random": {"seed": 2}})
    tokens = text.split()
    assert ex.tokens == tokens and ex.methods == list(ALL_METHODS)
    assert ex.words == list(dict.fromkeys(tokens)) and ex.ids.tolist() == pre.vocab.encode(text)
    n, d = len(tokens), len(ex.words)
    assert all(v.shape == (n,) and np.isfinite(v).all() for v in ex.token_scores.values())
    assert all(v.shape == (d,) for v in ex.word_scores.values())
    ids = torch.as_tensor(ex.ids)[None]
    pos = registry.position_scores(pre.model, ids)
    for m in registry.POSITION_METHODS:
        np.testing.assert_array_equal(ex.token_scores[m], pos[m][0, 1:].numpy())
    res = fastlime.explain_instance(pre, text, num_samples=300, random_state=4)
    np.testing.assert_array_equal(ex.word_scores["LIME"], res.coef)
    assert ex.results["LIME"].coef.tolist() == res.coef.tolist()
    np.testing.assert_array_equal(ex.word_scores["LIME limit"], theory.lime_limit(pre, text))
    np.testing.assert_array_equal(ex.token_scores["random"],
                                  np.random.default_rng(2).standard_normal(n))
    # alpha x s is the value part of GxI (chapter 4): GxI minus the key part
    terms = theory.gradient_terms(pre.model, ids)
    value_part = (terms["value"] * pre.model.embed(ids)).sum(-1)[0, 1:].detach().numpy()
    np.testing.assert_allclose(ex.token_scores["alpha x s"], value_part, atol=1e-12)
    # both levels, by the one rule
    w = Words.of(tokens)
    for m in ALL_METHODS:
        if METHODS[m].level == "token":
            np.testing.assert_array_equal(ex.word_scores[m], w.to_words(ex.token_scores[m]))
        else:
            np.testing.assert_array_equal(ex.token_scores[m], w.to_tokens(ex.word_scores[m]))
    # chapter 9's game values and path integral, from their closed forms
    for bow, mode in ((True, "delete"), (False, "replace")):
        np.testing.assert_array_equal(ex.word_scores[f"Shapley ({mode})"] if bow else
                                      ex.token_scores[f"Shapley ({mode})"],
                                      theory.shapley(pre, text, bow=bow))
        np.testing.assert_array_equal(ex.word_scores[f"Banzhaf ({mode})"] if bow else
                                      ex.token_scores[f"Banzhaf ({mode})"],
                                      theory.banzhaf(pre, text, bow=bow))
    np.testing.assert_array_equal(ex.token_scores["IG"], theory.integrated_gradients(pre,
                                                                                     text).tokens)
    assert ex.results["IG"].n_nodes >= 16
    assert set(ex.seconds) == {METHODS[m].group for m in ALL_METHODS}      # each group timed


def test_one_default_seed_and_the_explanations_seed(pre):
    text = tiny_text(12, seed=3, unknown=False)
    ex = attnxai.explain(pre, text, ["LIME", "random"], settings={"LIME": {"num_samples": 200}})
    res = fastlime.explain_instance(pre, text, num_samples=200, random_state=DEFAULT_SEED)
    np.testing.assert_array_equal(ex.word_scores["LIME"], res.coef)
    np.testing.assert_array_equal(ex.token_scores["random"],
                                  np.random.default_rng(DEFAULT_SEED).standard_normal(12))
    again = attnxai.explain(pre, text, ["LIME", "random"], seed=7,
                            settings={"LIME": {"num_samples": 200}, "random": {"seed": 3}})
    assert again.settings["LIME"]["seed"] == 7 and again.settings["random"]["seed"] == 3
    assert again.settings["explanation"]["seed"] == 7


def test_lime_bow_false_scores_each_position(pre):
    """bow=False: each occurrence of a repeated word gets its own position's coefficient (lime's
    own numbers), summed to word level by the rule."""
    from lime.lime_text import LimeTextExplainer

    text = "good film good acting bad plot"
    ex = attnxai.explain(pre, text, ["LIME"], settings={"LIME": {"bow": False,
                                                                 "num_samples": 300}})
    exp = LimeTextExplainer(bow=False, mask_string="UNK", random_state=0).explain_instance(
        text, pre.predict_logits, labels=(1,), num_features=6, num_samples=300)
    by_position = dict(exp.as_map()[1])                   # lime: feature j = position j
    np.testing.assert_allclose(ex.token_scores["LIME"], [by_position[j] for j in range(6)],
                               rtol=0, atol=1e-8)
    assert ex.token_scores["LIME"][0] != ex.token_scores["LIME"][2]     # the two "good" differ
    assert ex.word_scores["LIME"][0] == ex.token_scores["LIME"][0] + ex.token_scores["LIME"][2]


# ---------------------------------------------------------------- one target, settings checked
def test_one_target_for_every_method(pre):
    """Issue 22: explain_text(pre, text, target=1, lime_kwargs={'target': 0}) explained logit 1
    by attention and gradients and logit 0 by LIME. Now the target is set once."""
    text = "good film bad plot"
    with pytest.raises(ValueError, match="sets a target: the explained class is one for every "
                                         "method; pass target= to explain"):
        attnxai.explain(pre, text, target=1, settings={"LIME": {"target": 0}})
    ex = attnxai.explain(pre, text, ["GxI", "LIME"], target=0,
                         settings={"LIME": {"num_samples": 100}})
    assert ex.target == 0 and ex.settings["explanation"]["target"] == 0
    assert ex.results["LIME"].target == 0
    np.testing.assert_array_equal(ex.token_scores["GxI"], explainers.gradient_summaries(
        pre.model, torch.as_tensor(ex.ids)[None], 0)["GxI"][0, 1:].numpy())
    pred = attnxai.explain(pre, text, ["GxI"], target="predicted")
    assert pred.target == pred.predicted
    for nt in (np.int64(0), np.uint8(0)):                 # numpy integers are class indices too
        np.testing.assert_array_equal(
            attnxai.explain(pre, text, ["GxI"], target=nt).token_scores["GxI"],
            ex.token_scores["GxI"])
    for bad, exc in ((2, ValueError), (1.0, TypeError), ("positive", TypeError)):
        with pytest.raises(exc, match="target"):
            attnxai.explain(pre, text, ["GxI"], target=bad)


@pytest.mark.parametrize("settings, exc, msg", [
    ({"LIME": {"num_sample": 10}}, ValueError, r"LIME has no setting \['num_sample'\]; its "
                                               r"settings are \['num_samples'"),
    ({"GxI": {"layer": 1}}, ValueError, r"GxI has no setting \['layer'\]; its settings are none"),
    ({"LIME limit": {"kernel_width": 10.0}, "LIME": {"kernel_width": 25.0}}, ValueError,
     "LIME limit and LIME must share kernel_width, but LIME limit was given 10.0 and LIME 25.0"),
    ({"random": {"seed": 1}}, ValueError, r"settings for 'random', which is not among the methods"),
    ({"SHAP": {}}, ValueError, "settings for an unknown method 'SHAP'"),
    ({"LIME": {"num_samples": 1}}, ValueError, "num_samples must be >= 2"),
    ({"LIME": {"bow": "false"}}, TypeError, "bow must be True"),
    ({"LIME": {"kernel_width": "25"}}, TypeError, "kernel_width must be a positive number"),
    ({"LIME": {"seed": -1}}, ValueError, "random_state must be an int in"),
    ({"LIME": 5000}, TypeError, r"settings\['LIME'\] must be a dict or a LimeSettings"),
    (["LIME"], TypeError, "settings must map a method's name"),
])
def test_bad_settings_are_refused(pre, settings, exc, msg):
    with pytest.raises(exc, match=msg):
        attnxai.explain(pre, "good film bad plot", ["LIME", "LIME limit", "GxI"],
                        settings=settings)


def test_shared_settings_are_given_once(pre):
    text = "good film bad plot"
    ex = attnxai.explain(pre, text, ["LIME", "LIME limit"],
                         settings={"LIME": {"kernel_width": 5.0, "num_samples": 100}})
    assert ex.settings["LIME"]["kernel_width"] == ex.settings["LIME limit"]["kernel_width"] == 5.0
    np.testing.assert_array_equal(ex.word_scores["LIME limit"],
                                  theory.lime_limit(pre, text, kernel_width=5.0))
    same = attnxai.explain(pre, text, ["LIME", "LIME limit"],
                           settings={"LIME": {"kernel_width": 5.0, "num_samples": 100},
                                     "LIME limit": registry.LimitSettings(kernel_width=5.0)})
    np.testing.assert_array_equal(same.word_scores["LIME"], ex.word_scores["LIME"])


@pytest.mark.parametrize("methods, exc, msg", [
    ("LIME", TypeError, r"methods must be a list of method names, got str .* \['LIME'\]"),
    ([], ValueError, "no method chosen"),
    (["LIME", "SHAP"], ValueError, r"unknown method\(s\) \['SHAP'\]"),
])
def test_bad_methods_are_refused(pre, methods, exc, msg):
    with pytest.raises(exc, match=msg):
        attnxai.explain(pre, "good film", methods)


# ---------------------------------------------------------------- the text
def test_the_text_is_read_once_with_clear_messages(pre):
    L = pre.model.max_len - 1
    text = " ".join(["good", "film"] * 30)                 # 60 tokens
    with pytest.warns(TruncationWarning, match=f"the text has 60 tokens and the model reads {L}: "
                                               f"the last {60 - L} were cut"):
        ex = attnxai.explain(pre, text, ["alpha-avg", "LIME"],
                             settings={"LIME": {"num_samples": 50}})
    assert (ex.n_tokens, ex.cut, len(ex.tokens)) == (60, 60 - L, L)
    assert f"the last {60 - L} were cut" in ex.summary()
    ex = attnxai.explain(pre, "Good zork film, blarg!", ["alpha-avg"])
    assert ex.tokens == ["good", "zork", "film", "blarg"] and ex.unknown == ["zork", "blarg"]
    assert "read as UNK: zork, blarg" in ex.summary()
    for text, msg in (("   ", "empty"), ("?! ...", "no letter or digit"),
                      ("zork blarg zork", "no word of .* is in the model's vocabulary"),
                      ("这部电影很好看", "none in A-Z")):
        with pytest.raises(ValueError, match=msg):
            attnxai.explain(pre, text)
    with pytest.raises(TypeError, match="must be an attnxai Pretrained"):
        attnxai.explain(pre.model, "good film")


# ---------------------------------------------------------------- renderings
def test_renderings(pre, tmp_path):
    text = "The film was good, but the plot was boring!"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ex = attnxai.explain(pre, text, settings={"LIME": {"num_samples": 300}})
    assert ex.tokens == "the film was good but the plot was boring".split()
    assert ex.methods == list(PAPER_METHODS)
    assert ex.probability.sum() == pytest.approx(1.0) and ex.cut == 0 and ex.unknown == []
    df = ex.table()
    assert list(df.columns) == ["token", *PAPER_METHODS] and len(df) == 9
    words = ex.table("word").set_index("word")
    assert words.loc["the", "count"] == 2 and len(words) == 7
    assert words.loc["the", "GxI"] == pytest.approx(df.loc[df.token == "the", "GxI"].sum())
    assert words.loc["the", "LIME"] == df.loc[df.token == "the", "LIME"].iloc[0]
    table = ex.to_text()
    assert table.splitlines()[0].split()[:3] == ["#", "token", "alpha-avg"]
    assert len(table.splitlines()) == 2 + len(ex.tokens)
    assert len(ex.to_text(level="word").splitlines()) == 2 + len(ex.words)
    assert "\x1b[" in ex.to_text(color=True) and "\x1b[" not in table
    doc = json.loads(json.dumps(ex.to_json()))
    assert doc["tokens"] == ex.tokens and list(doc["token_scores"]) == list(PAPER_METHODS)
    assert doc["word_scores"]["LIME"] == ex.word_scores["LIME"].tolist()
    assert doc["settings"]["LIME"] == {"num_samples": 300, "kernel_width": 25.0, "bow": True,
                                       "mask_string": "UNK", "seed": DEFAULT_SEED,
                                       "backend": "auto"}
    page = ex.to_html()
    assert page.startswith("<!DOCTYPE html>") and page.count("<tr>") == len(PAPER_METHODS)
    assert "LIME: 300 samples" in page and ">boring<" in page
    assert ex._repr_html_() == ex.to_html(page=False) and "<!DOCTYPE" not in ex._repr_html_()
    path = ex.write_html(tmp_path / "fig1.html")
    assert path.read_text(encoding="utf-8") == page and not list(tmp_path.glob(".tmp-*"))
    with pytest.raises(ValueError, match="level must be"):
        ex.table("sentence")


def test_a_profile_name_loads_the_cached_model(quick_model):
    ex = attnxai.explain("quick", "a good film", ["GxI"])
    assert ex.model == quick_model.path.name


def test_game_values_settings(pre):
    text = tiny_text(12, seed=3, unknown=False)
    ex = attnxai.explain(pre, text, ["Shapley (delete)", "Shapley (replace)", "IG"],
                         settings={"Shapley (delete)": {"positions": "exact"},
                                   "Shapley (replace)": {"method": "chain", "ksub": 3},
                                   "IG": {"n_nodes": 32}})
    np.testing.assert_array_equal(ex.word_scores["Shapley (delete)"],
                                  theory.shapley(pre, text, positions="exact"))
    np.testing.assert_array_equal(ex.token_scores["Shapley (replace)"],
                                  theory.shapley(pre, text, bow=False, method="chain", ksub=3))
    assert ex.results["IG"].n_nodes == 32
    with pytest.raises(ValueError, match="positions is a setting of deletion"):
        attnxai.explain(pre, text, ["Shapley (replace)"],
                        settings={"Shapley (replace)": {"positions": "binomial"}})
    for bad in ({"method": "kernel"}, {"n_nodes": 0}, {"positions": "mean"}):
        with pytest.raises((ValueError, TypeError)):
            attnxai.explain(pre, text, ["Shapley (delete)"], settings={"Shapley (delete)": bad})
    with pytest.raises(ValueError, match="tol"):
        attnxai.explain(pre, text, ["IG"], settings={"IG": {"tol": -1.0}})


def test_game_values_certified_by_settings(pre):
    """positions='sampled' reaches the deletion games through the registry (the faithfulness
    study's --set): the same numbers as theory's, and within a few standard errors of the exact
    route on a text with repeated words."""
    text = tiny_text(20, seed=3, unknown=False)
    assert len(set(text.split())) < len(text.split())              # words repeat
    ex = attnxai.explain(pre, text, ["Shapley (delete)", "Banzhaf (delete)"],
                         settings={"Shapley (delete)": {"positions": "sampled"},
                                   "Banzhaf (delete)": {"positions": "sampled"}})
    for name, fn, value in (("Shapley (delete)", theory.shapley, "shapley"),
                            ("Banzhaf (delete)", theory.banzhaf, "banzhaf")):
        got = ex.word_scores[name]
        np.testing.assert_array_equal(got, fn(pre, text, positions="sampled"))
        est = theory.deletion_game(pre, text, value, route="sampled")
        exact = theory.deletion_game(pre, text, value, route="exact")
        assert est.route == "sampled" and exact.route == "exact"
        np.testing.assert_allclose(got, est.values, rtol=0, atol=1e-12)
        assert np.max(np.abs(got - exact.values) / est.stderr) < 5
