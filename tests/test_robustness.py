"""Issue 11, "Nothing silent": one test per case of its list of silent wrong results, on tiny
hand-built models (tests/conftest.py ``make_tiny``). Each wrong input must be refused with a
ValueError/TypeError that names the problem, or give the right answer.

Where the other cases are tested:
  * the cache (flipped byte, short vocab.json, edited or truncated header, racing writers and
    readers, two trainings at once, stale .tmp folders, read-only cache, ``info`` offline):
    tests/model/test_checkpoint.py;
  * random inputs to every public entry point (hypothesis): tests/test_properties.py;
  * ``lime_limit`` with ``kernel_width=0.5``, ``W_q`` x 100, NaN weights and its run-to-run ulp
    differences, and the runner's cases (``_meta.json``, NaN settings, workers after kill -9)
    belong to the theory and runner work (tests/theory/test_theory_lime.py, tests/experiment/test_experiment.py).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from conftest import make_tiny

import attnxai
from attnxai import explainers, fastlime, registry, theory
from attnxai.text import TruncationWarning


@pytest.fixture(scope="module")
def pre():
    return make_tiny()


# ---------------------------------------------------------------- predict_logits
@pytest.mark.parametrize("bad, exc, msg", [
    (-1, ValueError, "batch_size must be an int >= 1, got -1"),
    (0, ValueError, "batch_size must be an int >= 1, got 0"),
    (2.0, TypeError, "batch_size must be an int, got float"),
    ("8", TypeError, "batch_size must be an int, got str"),
    (True, TypeError, "batch_size must be an int, got bool"),
])
def test_predict_logits_refuses_a_bad_batch_size(pre, bad, exc, msg):
    """Before: batch_size=-1 returned the uninitialised array (the previous call's logits)."""
    truth = pre.predict_logits(["an awful boring film"])
    pre.predict_logits(["a good moving story"])                # leaves other logits behind
    with pytest.raises(exc, match=msg):
        pre.predict_logits(["an awful boring film"], batch_size=bad)
    np.testing.assert_array_equal(pre.predict_logits(["an awful boring film"], batch_size=1), truth)


def test_predict_logits_refuses_a_single_str(pre):
    """Before: one row per character."""
    with pytest.raises(TypeError, match=r"got a single str: wrap it, predict_logits\(\[text\]\)"):
        pre.predict_logits("a good film")
    with pytest.raises(TypeError, match="a list of str"):
        pre.predict_logits(42)
    assert pre.predict_logits(["a good film"]).shape == (1, 2)


def test_methods_given_as_one_str_are_refused(pre):
    """Found by the property tests: methods="LIME" was read as its letters ('unknown method(s)
    ['L', 'I', 'M', 'E']'). attnxai.explain: tests/methods/test_explanation.py."""
    with pytest.raises(TypeError, match="methods must be a list"):
        registry.position_scores(pre.model, pre.encode("good film"), methods="G-avg")


# ---------------------------------------------------------------- ids
@pytest.mark.parametrize("ids, msg", [
    ([[4, 5, 6]], r"do not start with \[CLS\]"),
    ([[1, 5, 1, 6]], r"\[CLS\] \(id 1\) appears after position 0"),
])
def test_ids_without_cls_or_with_cls_inside_are_refused(pre, ids, msg):
    """Before: accepted by explainers.attention and theory.lime_limit (the first word silently
    became the query)."""
    ids = torch.tensor(ids)
    calls = [lambda: explainers.attention(pre.model, ids),
             lambda: explainers.gradient(pre.model, ids),
             lambda: registry.position_scores(pre.model, ids),
             lambda: theory.gradient_closed_form(pre.model, ids),
             lambda: theory.lime_limit(pre.model, ids[0].numpy()),
             lambda: pre.model(ids)]
    for call in calls:
        with pytest.raises(ValueError, match=msg):
            call()


# ---------------------------------------------------------------- lime_limit settings
@pytest.mark.parametrize("kwargs, msg", [
    ({"bow": "false"}, "bow must be True"),
    ({"bow": 0}, "bow must be True"),
    ({"kernel_width": "25"}, "kernel_width must be a positive number, got str"),
    ({"kernel_width": True}, "kernel_width must be a positive number, got bool"),
])
def test_lime_settings_of_the_wrong_type_are_refused(pre, kwargs, msg):
    """Before: bow="false" computed bow=True; kernel_width "25" and True were accepted."""
    text = "good film bad plot"
    with pytest.raises(TypeError, match=msg):
        theory.lime_limit(pre, text, **kwargs)
    with pytest.raises(TypeError, match=msg):
        fastlime.explain_instance(pre, text, num_samples=20, **kwargs)


# ---------------------------------------------------------------- targets
def test_numpy_integer_targets_are_accepted_everywhere(pre):
    """Before: np.int64 was a TypeError in explainers.gradient, theory.gradient_closed_form and
    the text entry point (attnxai.explain; tested there, tests/methods/test_explanation.py)."""
    ids = pre.encode("good film bad plot")
    text = "good film bad plot"
    for t in (0, 1):
        for nt in (np.int64(t), np.int32(t), np.uint8(t)):
            assert torch.equal(explainers.gradient(pre.model, ids, nt),
                               explainers.gradient(pre.model, ids, t))
            assert torch.equal(theory.gradient_closed_form(pre.model, ids, nt),
                               theory.gradient_closed_form(pre.model, ids, t))
            np.testing.assert_array_equal(
                fastlime.explain_instance(pre, text, num_samples=40, random_state=0, target=nt).coef,
                fastlime.explain_instance(pre, text, num_samples=40, random_state=0, target=t).coef)
            np.testing.assert_array_equal(theory.lime_limit(pre, text, target=nt),
                                          theory.lime_limit(pre, text, target=t))
    for bad, exc in ((1.0, TypeError), (True, TypeError), ("1", TypeError), (2, ValueError),
                     (np.int64(-1), ValueError)):
        with pytest.raises(exc, match="target"):
            explainers.gradient(pre.model, ids, bad)


# ---------------------------------------------------------------- words the model does not know
@pytest.mark.parametrize("text", ["这部电影很好看", "هذا الفيلم رائع جدا", "zork blarg zork"])
@pytest.mark.parametrize("bow", [True, False])
def test_text_with_no_known_word_is_refused_by_lime(pre, text, bow):
    """Before: Chinese or Arabic gave coefficients around 1e-10 and no warning (the model read
    the text as [CLS] alone, or as UNK tokens only)."""
    with pytest.raises(ValueError, match="no word of .* is in the model's vocabulary"):
        fastlime.explain_instance(pre, text, num_samples=50, random_state=0, bow=bow)
    with pytest.raises(ValueError, match="in the model's vocabulary|none in A-Z"):
        attnxai.explain(pre, text, settings={"LIME": {"num_samples": 50, "bow": bow}})


def test_non_latin_text_is_read_as_unk_not_as_an_empty_text(pre):
    """The model reads a Chinese text as [CLS] + UNK tokens (its tokens), not as [CLS] alone, and
    a message says why normalize_for_lime leaves nothing of it."""
    v = pre.vocab
    assert pre.encode("这部电影很好看")[0].tolist() == [v.cls_id, v.unk_id]
    assert pre.encode("هذا الفيلم رائع")[0].tolist() == [v.cls_id] + [v.unk_id] * 3
    zh, empty, unk = pre.predict_logits(["这部电影很好看", "", "UNK"])
    np.testing.assert_array_equal(zh, unk)                # one UNK token
    assert not np.array_equal(zh, empty)                  # not the document [CLS] alone
    from attnxai import normalize_for_lime
    with pytest.raises(ValueError, match="letters but none in A-Z"):
        normalize_for_lime("这部电影很好看")
    # A text with one known word is explained as usual.
    res = fastlime.explain_instance(pre, "good 电影", num_samples=50, random_state=0)
    assert res.words == ["good", "电影"] and np.isfinite(res.coef).all()


# ---------------------------------------------------------------- truncation (deliverable 5)
def test_encode_and_predict_logits_say_when_they_truncate(pre):
    L = pre.model.max_len - 1
    long_text, short = "good " * (L + 7), "good film"
    for call in (lambda **k: pre.encode([short, long_text], **k),
                 lambda **k: pre.predict_logits([short, long_text], **k)):
        with pytest.warns(TruncationWarning, match=rf"1 of 2 text\(s\) longer than the model reads "
                                                   rf"\({L} tokens after \[CLS\]\) were cut: text 1 "
                                                   rf"has {L + 7} \(7 dropped\)"):
            call()
        with pytest.raises(ValueError, match=f"text has {L + 7} tokens but the model accepts {L}"):
            call(truncate=False)
    with pytest.warns(TruncationWarning):
        assert len(pre.tokens(long_text)) == L + 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")                    # nothing said when nothing is cut
        pre.encode([short, "good " * L])
        pre.predict_logits([short, "", "!!!"])


# ---------------------------------------------------------------- the runner's settings
@pytest.mark.parametrize("args, msg", [
    (["--num-samples", "1"], "num_samples must be >= 2"),
    (["--kernel-width", "0"], "kernel_width must be > 0"),
    (["--kernel-width", "nan"], "kernel_width must be > 0, got nan"),
    (["--mask-string", ""], "mask_string must be a non-empty str"),
    (["--mask-string", "good", "--bow", "false"], "mask_string 'good' is the vocabulary word"),
])
def test_runner_refuses_bad_settings_before_writing_anything(quick_model, tmp_path, capsys,
                                                             args, msg):
    """Before: _meta.json was written first, locking the folder against the corrected command
    (and --kernel-width nan made the folder refuse the very same command)."""
    from attnxai import cli

    out = tmp_path / "lime"
    base = ["lime-experiment", "--profile", "quick", "--reviews", "1", "--repeats", "1",
            "--num-samples", "20", "--bow", "true", "--approximations", "none", "--no-progress",
            "--out", str(out)]
    assert cli.main(base + args) == 2
    assert msg in capsys.readouterr().err
    assert not out.exists()                               # nothing written: not even _meta.json
    assert cli.main(base) == 0                            # the corrected command runs
    assert (out / "_meta.json").is_file()
