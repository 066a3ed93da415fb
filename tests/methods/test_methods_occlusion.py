"""Occlusion (leave-one-out, attnxai.methods.baselines), added in one file: its scores against a
reference built from texts (each word deleted, or each position replaced by UNK, and the model run
on that text alone), and the registry, explain(), the command line and the faithfulness study
picking it up with nothing else edited."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from conftest import make_tiny, tiny_text

import attnxai
from attnxai import registry
from attnxai.cli import main as cli_main
from attnxai.model import trained


def _logit(pre, text: str, target: int) -> float:
    """The model on one text, alone: ``f_target``, [CLS] alone for an empty text."""
    ids = pre.encode(text) if text else torch.tensor([[pre.model.cls_id]])
    with torch.no_grad():
        return float(pre.model(ids)[0, target])


@pytest.mark.parametrize("padding", ["mask", "unk"])
@pytest.mark.parametrize("target", [0, 1])
def test_occlusion_is_the_drop_of_the_logit(padding, target):
    pre = make_tiny(padding, seed=5)
    text = tiny_text(12, seed=2, unknown=False)
    tokens = text.split()
    assert len(set(tokens)) < len(tokens)                       # a repeated word
    ex = attnxai.explain(pre, text, ["occlusion"], target=target)
    full = _logit(pre, text, target)
    words = list(dict.fromkeys(tokens))
    ref = [full - _logit(pre, " ".join(t for t in tokens if t != w), target) for w in words]
    assert ex.words == words
    np.testing.assert_allclose(ex.word_scores["occlusion"], ref, rtol=0, atol=1e-12)
    # replacement: one position by the unknown word, one score per token
    ex = attnxai.explain(pre, text, ["occlusion"], target=target,
                         settings={"occlusion": {"bow": False}})
    ref = [full - _logit(pre, " ".join(tokens[:t] + ["zork"] + tokens[t + 1:]), target)
           for t in range(len(tokens))]
    np.testing.assert_allclose(ex.token_scores["occlusion"], ref, rtol=0, atol=1e-12)


def test_occlusion_of_a_one_word_text_is_the_whole_logit_over_cls():
    pre = make_tiny(seed=1)
    ex = attnxai.explain(pre, "good good", ["occlusion"])
    assert ex.word_scores["occlusion"][0] == pytest.approx(
        _logit(pre, "good good", 1) - _logit(pre, "", 1), abs=1e-12)


def test_occlusion_settings_are_checked():
    with pytest.raises(TypeError):
        attnxai.explain(make_tiny(), "good film", ["occlusion"],
                        settings={"occlusion": {"bow": "yes"}})
    assert registry.parse_settings(["occlusion.bow=false"]) == {"occlusion": {"bow": False}}


def test_the_registry_and_its_readers_pick_it_up(monkeypatch, capsys):
    assert "occlusion" in registry.ALL_METHODS and "occlusion" in registry.EXTRA_METHODS
    assert registry.METHODS["occlusion"].level_for(registry.METHODS["occlusion"].settings()) \
        == "word"
    assert "occlusion" in registry.study_records(["occlusion"])
    pre = make_tiny(seed=3)
    monkeypatch.setattr(trained, "pretrained",
                        lambda profile="paper", archive=None, progress=True: pre)
    text = tiny_text(6, seed=4, unknown=False)
    assert cli_main(["explain", text, "--methods", "occlusion,GxI", "--json",
                     "--set", "occlusion.bow=false"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert list(doc["token_scores"]) == ["occlusion", "GxI"]
    assert doc["settings"]["occlusion"] == {"bow": False}
    from attnxai.experiment import faithfulness as XF

    row = XF.faithfulness_row(pre, text, test_index=0, methods=["occlusion", "random"],
                              perturbations=["delete"], selections=["positive"])
    assert "occlusion__delete__positive__comprehensiveness" in row
