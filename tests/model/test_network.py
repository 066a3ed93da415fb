"""The float64 projections (attnxai.model.network) against the model's own forward pass, on tiny
hand-built models: the one description of the single-layer network that fast LIME and the closed
forms evaluate must agree with ``model.forward`` to rounding."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attnxai.fastlime.evaluate import DeleteEvaluator, ReplaceEvaluator
from attnxai.fastlime.problem import lime_features
from attnxai.model.network import Projections
from conftest import make_tiny, tiny_text

TOL = 1e-12


@pytest.fixture(params=["mask", "unk"])
def pre(request):
    return make_tiny(request.param, seed=3, max_len=24, scale=1.5)


def _forward(model, seqs):
    with torch.no_grad():
        return model(model.collate(seqs)).numpy()


def test_logits_equal_the_forward_pass(pre):
    m = pre.model
    rng = np.random.default_rng(0)
    for n in (1, 5, 23):
        ids = np.concatenate([[m.cls_id], rng.integers(3, m.vocab_size, n)])
        proj = Projections.of(m)
        want = _forward(m, [ids.tolist()])[0]
        np.testing.assert_allclose(proj.logits(ids), want, rtol=0, atol=TOL)
        with torch.no_grad():
            heads = m(torch.as_tensor(ids)[None], per_head=True)[0].numpy()
        np.testing.assert_allclose(proj.logits(ids, per_head=True), heads, rtol=0, atol=TOL)


def test_document_tables_are_the_model_scores(pre):
    """score(x_t, t) = word_score[t] + pos_score[t] equals q_1 . k_t / sqrt(d_att), and the value
    part equals W_l v_t, for every token and head."""
    m = pre.model
    ids = np.asarray(pre.vocab.encode(tiny_text(12, 4), m.max_len))
    tab = Projections.of(m).document(ids, target=1)
    with torch.no_grad():
        it = m(torch.as_tensor(ids)[None], return_internals=True)
    T = len(ids)
    s = (tab.word_score + tab.pos_score[:T]).T                       # (K, T)
    v = (tab.word_value + tab.pos_value[:T]).T
    np.testing.assert_allclose(s, it.scores[0, :, :T].numpy(), rtol=0, atol=TOL)
    np.testing.assert_allclose(v, it.token_scores[0, :, :T, 1].numpy(), rtol=0, atol=TOL)
    np.testing.assert_allclose(tab.cls_score, s[:, 0], rtol=0, atol=TOL)
    np.testing.assert_allclose(tab.logits, it.logits[0].numpy(), rtol=0, atol=TOL)


@pytest.mark.parametrize("target", [0, 1])
@pytest.mark.parametrize("n_words", [1, 5, 12])
def test_logits_given_is_the_forward_pass(pre, target, n_words):
    """logits_given (the fast LIME's prediction: the target's logit given, the other classes from
    the tables, the UNK fill included) equals model.forward on the document, every class; the
    given logit is returned as given."""
    m = pre.model
    ids = np.asarray(pre.vocab.encode(tiny_text(n_words, 4), m.max_len))
    tab = Projections.of(m).document(ids, target=target)
    with torch.no_grad():
        want = m(torch.as_tensor(ids)[None], return_internals=True).logits[0].numpy()
    got = tab.logits_given(float(want[target]))
    assert got[target] == want[target]
    np.testing.assert_allclose(got, want, rtol=0, atol=TOL)
    np.testing.assert_allclose(got, tab.logits, rtol=0, atol=TOL)


def _perturbed(pre, words, z, bow):
    """What lime sends the model: features dropped (deleted, or replaced by UNK in place)."""
    names, feats = lime_features(words, bow)
    keep = np.ones(len(words), bool)
    for j, pos in enumerate(feats):
        if not z[j]:
            keep[pos - 1] = False
    m = pre.model
    ids = np.asarray(pre.vocab.lookup(words))
    if bow:
        return [m.cls_id] + ids[keep].tolist()
    return [m.cls_id] + np.where(keep, ids, m.unk_id).tolist()


@pytest.mark.parametrize("bow", [True, False])
def test_evaluators_equal_the_model_on_perturbed_documents(pre, bow):
    text = tiny_text(20, 5)
    words = text.split()
    ids = np.asarray(pre.vocab.encode(text, pre.model.max_len))
    tab = Projections.of(pre.model).document(ids, target=1)
    names, feats = lime_features(words, bow)
    rng = np.random.default_rng(1)
    z = rng.random((40, len(names))) < 0.5
    z[0] = True
    z[1] = False                                                    # everything removed
    if bow:
        word_index = np.empty(len(words), dtype=np.int64)
        for j, pos in enumerate(feats):
            word_index[pos - 1] = j
        ev = DeleteEvaluator(tab, word_index)
    else:
        ev = ReplaceEvaluator(tab)
    assert ev.ok
    want = _forward(pre.model, [_perturbed(pre, words, row, bow) for row in z])[:, 1]
    np.testing.assert_allclose(ev(z), want, rtol=0, atol=TOL)


def test_projections_follow_the_weights(pre):
    """Computed from the current weights: a change to the model is seen by every consumer."""
    m = pre.model
    ids = np.asarray(pre.vocab.encode("good film", m.max_len))
    before = Projections.of(m).logits(ids)
    with torch.no_grad():
        m.W_l.mul_(-1)
    after = Projections.of(m).logits(ids)
    with torch.no_grad():
        m.W_l.mul_(-1)
    np.testing.assert_allclose(after, -before, rtol=0, atol=TOL)


def test_only_the_single_layer_model():
    with pytest.raises(TypeError, match="single-layer AttentionClassifier"):
        Projections.of(torch.nn.Linear(2, 2))


def test_fast_evaluators_on_peaked_attention():
    """Weights up to 30: a head's attention can sit almost entirely on UNK at a position whose word
    gets almost none. Both evaluators must still equal the forward pass on every mask (the
    replacement evaluator used to fold kept and replaced positions into one difference and lost the
    denominator to cancellation: NaN or wrong logits)."""
    from hypothesis import given
    from hypothesis import strategies as st
    from hypo import documents, examples, models

    @examples(100)
    @given(spec=models(scales=(30.0,), heads=(1, 2), d_embed=(2, 4)), ids=documents(max_size=6))
    def check(spec, ids):
        m = spec.build()
        n = ids.size - 1
        z = np.array([[bool(b) for b in np.binary_repr(i, n)] for i in range(2 ** n)])
        tab = Projections.of(m).document(ids, target=1)
        evs = [ReplaceEvaluator(tab)]
        if m.padding == "mask":
            evs.append(DeleteEvaluator(tab, np.arange(n)))
        for ev, bow in zip(evs, (False, True)):
            if not ev.ok:
                continue
            docs = [ids[np.r_[True, row]].tolist() if bow else
                    np.where(np.r_[True, row], ids, m.unk_id).tolist() for row in z]
            want = _forward(m, docs)[:, 1]
            np.testing.assert_allclose(ev(z), want, rtol=1e-9, atol=1e-9 * np.abs(want).max())

    check()
