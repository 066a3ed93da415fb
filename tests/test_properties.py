"""Property-based tests (hypothesis) of the public entry points, on tiny hand-built models.

For any text, ids, target or setting, each entry point either raises the documented error
(``TypeError`` for a wrong type, ``ValueError`` for a wrong value, with a message) or returns a
finite answer of the documented shape; inputs the documentation says are valid (the predicates
``valid_*`` below, written from the docstrings) must be answered, so a regression that refuses
valid input fails; and the answer is right where a second computation can tell (logits that
do not depend on the batch, attention that sums to one, a zero gradient on padding, LIME's words
in lime's order). Examples are derandomised (the same ones on every run, so CI is reproducible)
and few (``ATTNXAI_HYPOTHESIS_EXAMPLES`` scales them up for a deeper local search).
"""

from __future__ import annotations

import math
import os
import warnings

import numpy as np
import pytest
import torch
from conftest import WORDS, make_tiny
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

import attnxai
from attnxai import explainers, fastlime, tokenize
from attnxai.registry import PAPER_METHODS
from attnxai.text import TruncationWarning

SCALE = float(os.environ.get("ATTNXAI_HYPOTHESIS_EXAMPLES", "1"))


def examples(n: int):
    return settings(max_examples=max(1, int(n * SCALE)), deadline=None, derandomize=True,
                    database=None, suppress_health_check=[HealthCheck.too_slow,
                                                          HealthCheck.function_scoped_fixture])


MODELS = {"mask": make_tiny("mask"), "unk": make_tiny("unk", seed=1)}
L = MODELS["mask"].model.max_len            # 40 ids, [CLS] included

# ---------------------------------------------------------------- strategies
def mostly(valid, invalid, odds: int = 4):
    """``valid`` ``odds`` times out of ``odds + 1``, else ``invalid``."""
    return st.integers(0, odds).flatmap(lambda i: invalid if i == odds else valid)


VOCAB_WORDS = list(WORDS)
ODD_WORDS = ["zork", "UNK", "unk", "电影", "رائع", "café", "don't", "!", "...", "3.5", "<br />",
             "[CLS]", "[PAD]", "_", "\t", "\n", "é"]
known_texts = st.lists(st.one_of(st.sampled_from(VOCAB_WORDS), st.sampled_from(VOCAB_WORDS),
                                 st.sampled_from(VOCAB_WORDS + ODD_WORDS)),
                       min_size=1, max_size=2 * L).map(" ".join)
word_texts = st.lists(st.sampled_from(VOCAB_WORDS + ODD_WORDS), max_size=2 * L).map(" ".join)
texts = mostly(known_texts, st.one_of(word_texts, st.text(max_size=30)), odds=2)
not_texts = st.one_of(st.none(), st.integers(), st.binary(max_size=5),
                      st.lists(st.text(), max_size=2))
bad_ints = st.sampled_from([1.0, 0.5, "1", True, False, None, math.nan, -1, -3, 10**6])
targets = mostly(st.sampled_from([0, 1, np.int64(1), np.int32(0), np.uint8(1)]), bad_ints)
batch_sizes = mostly(st.one_of(st.integers(1, 6), st.just(np.int64(2))), bad_ints)
heads = mostly(st.one_of(st.none(), st.integers(0, 2)), bad_ints)


def raises_documented(call, valid: bool):
    """(result, None, warnings) or (None, exception, []) for TypeError/ValueError; anything else
    propagates. ``valid``: the inputs are ones the documentation says are answered (the
    predicates below), so a refusal fails the test; otherwise either outcome may be right, but a
    refusal must say why."""
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = call()
    except (TypeError, ValueError) as exc:
        assert str(exc), f"{type(exc).__name__} without a message"
        assert not valid, f"refused a valid input: {type(exc).__name__}: {exc}"
        event(f"refused: {type(exc).__name__}: {str(exc)[:50]}")
        return None, exc, []
    event("answered (valid input)" if valid else "answered")
    return out, None, caught


# ---------------------------------------------------------------- what must be answered
# Written from the docstrings (attnxai.validate, Pretrained.encode, ClassifierBase.check_ids),
# not from the code that checks: each says which inputs an entry point may not refuse.
def is_int(x) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def has_word(text) -> bool:
    """A text in the documented sense: a str with a letter or digit."""
    return isinstance(text, str) and any(c.isalnum() or c == "_" for c in text)


def valid_target(t, n_classes: int = 2) -> bool:
    return is_int(t) and 0 <= int(t) < n_classes


def valid_texts(batch) -> bool:
    """A text or a non-empty list of texts, each with a word."""
    items = [batch] if isinstance(batch, str) else batch
    return isinstance(items, list) and len(items) > 0 and all(has_word(t) for t in items)


def valid_ids(ids, pre) -> bool:
    """(B, T) integer ids, B >= 1, 1 <= T <= max_len, each row [CLS], words, then padding."""
    m = pre.model
    if not isinstance(ids, torch.Tensor) or ids.dim() != 2 or \
            ids.dtype not in (torch.int64, torch.int32) or min(ids.shape) == 0 or \
            ids.shape[1] > m.max_len:
        return False
    for row in ids.long().tolist():
        n = sum(x != m.pad_id for x in row)
        if row[0] != m.cls_id or any(x == m.pad_id for x in row[:n]) or \
                not all(0 < x < m.vocab_size and x != m.cls_id for x in row[1:n]):
            return False
    return True


def n_tokens(text: str) -> int:
    return len(tokenize(text))


# ---------------------------------------------------------------- Pretrained.encode
@examples(60)
@given(padding=st.sampled_from(["mask", "unk"]),
       batch=mostly(st.one_of(texts, st.lists(texts, min_size=1, max_size=4)),
                    st.one_of(st.lists(st.one_of(texts, not_texts), max_size=3), not_texts)),
       truncate=mostly(st.booleans(), st.sampled_from([0, "no", None])))
def test_encode(padding, batch, truncate):
    pre = MODELS[padding]
    ids, exc, caught = raises_documented(lambda: pre.encode(batch, truncate=truncate),
                                         valid_texts(batch) and isinstance(truncate, bool))
    if exc is not None:
        return
    items = [batch] if isinstance(batch, str) else list(batch)
    assert ids.dtype == torch.long and ids.shape[0] == len(items)
    assert ids.shape[1] <= L and bool((ids[:, 0] == pre.vocab.cls_id).all())
    assert int(ids.min()) >= 0 and int(ids.max()) < len(pre.vocab)
    cut = any(n_tokens(t) > L - 1 for t in items)
    assert cut == any(issubclass(w.category, TruncationWarning) for w in caught)
    pre.model.check_ids(ids)                             # what encode makes, the model accepts


# ---------------------------------------------------------------- Pretrained.predict_logits
@examples(50)
@given(padding=st.sampled_from(["mask", "unk"]),
       batch=mostly(st.lists(texts, min_size=1, max_size=5), st.one_of(texts, not_texts)),
       batch_size=batch_sizes, head=heads)
def test_predict_logits(padding, batch, batch_size, head):
    pre = MODELS[padding]
    valid = (isinstance(batch, list) and len(batch) > 0 and all(isinstance(t, str) for t in batch)
             and is_int(batch_size) and batch_size >= 1
             and (head is None or (is_int(head) and 0 <= head < pre.model.n_heads)))
    out, exc, _ = raises_documented(lambda: pre.predict_logits(batch, batch_size=batch_size,
                                                               head=head), valid)
    if exc is not None:
        return
    assert isinstance(batch, list) and out.shape == (len(batch), pre.model.n_classes)
    assert out.dtype == np.float64 and np.isfinite(out).all()
    # The answer does not depend on the batch: each text alone gives the same logits.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TruncationWarning)
        alone = np.concatenate([pre.predict_logits([t], batch_size=1, head=head) for t in batch])
    np.testing.assert_allclose(out, alone, rtol=0, atol=1e-12)


# ---------------------------------------------------------------- ids: forward, attention, gradient
@st.composite
def id_tensors(draw):
    """Mostly valid (B, T) ids ([CLS], words, padding at the end), sometimes broken."""
    vocab = len(MODELS["mask"].vocab)
    B = draw(mostly(st.integers(1, 3), st.just(0)))
    T = draw(mostly(st.integers(1, L), st.integers(0, L + 2)))
    valid = draw(mostly(st.just(True), st.just(False)))
    rows = []
    for _ in range(B):
        if valid and T > 0:
            n = draw(st.integers(1, T))
            row = [1] + draw(st.lists(st.integers(2, vocab - 1), min_size=n - 1, max_size=n - 1))
            rows.append(row + [0] * (T - n))
        else:
            rows.append(draw(st.lists(st.integers(-1, vocab + 1), min_size=T, max_size=T)))
    dtype = draw(mostly(st.sampled_from([torch.long, torch.int32]),
                        st.sampled_from([torch.float32, torch.bool])))
    t = torch.tensor(rows, dtype=torch.long).reshape(B, T)
    if draw(mostly(st.just(False), st.just(True))) and B > 0:
        t = t[0]                                          # 1-D: the wrong shape
    return t.to(dtype) if dtype != torch.bool else t.bool()


def real_lengths(pre, ids):
    return [int((row != pre.model.pad_id).sum()) for row in ids]


@examples(60)
@given(padding=st.sampled_from(["mask", "unk"]), ids=mostly(id_tensors(), not_texts))
def test_forward(padding, ids):
    pre = MODELS[padding]
    out, exc, _ = raises_documented(lambda: pre.model(ids), valid_ids(ids, pre))
    if exc is not None:
        return
    assert out.shape == (ids.shape[0], pre.model.n_classes) and torch.isfinite(out).all()
    for b, n in enumerate(real_lengths(pre, ids)):       # no dependence on batch or padding
        torch.testing.assert_close(out[b], pre.model(ids[b:b + 1, :n].long())[0], rtol=0,
                                   atol=1e-12)


@examples(50)
@given(padding=st.sampled_from(["mask", "unk"]), ids=id_tensors(),
       reduce=mostly(st.sampled_from(["mean", "max", "none"]), st.sampled_from(["avg", 1, None])),
       layer=mostly(st.sampled_from([0, -1, "all", np.int64(0)]), bad_ints))
def test_attention(padding, ids, reduce, layer):
    pre = MODELS[padding]
    valid = valid_ids(ids, pre) and reduce in ("mean", "max", "none") and \
        (isinstance(layer, str) and layer == "all" or is_int(layer) and layer in (0, -1))
    out, exc, _ = raises_documented(lambda: explainers.attention(pre.model, ids, reduce,
                                                                 layer=layer), valid)
    if exc is not None:
        return
    B = ids.shape[0]
    T = ids.shape[1] if padding == "mask" else L
    K = pre.model.n_heads
    shape = {"mean": (B, T), "max": (B, T), "none": (B, K, T)}[reduce]
    if layer == "all":
        shape = shape[:1] + (1,) + shape[1:]
    assert tuple(out.shape) == shape
    valid = explainers.valid_mask(pre.model, ids)
    scores = out.reshape(B, -1, T) if reduce != "none" else out.reshape(B, K, T)
    for b in range(B):
        v = scores[b][:, valid[b]]
        assert torch.isfinite(v).all() and (v >= 0).all()
        if reduce != "max":                               # each head's weights sum to one
            torch.testing.assert_close(v.sum(-1), torch.ones(v.shape[0], dtype=v.dtype))
        if reduce != "none":                              # padding is NaN, never 0
            assert torch.isnan(scores[b][:, ~valid[b]]).all()


@examples(50)
@given(padding=st.sampled_from(["mask", "unk"]), ids=id_tensors(), target=targets)
def test_gradient(padding, ids, target):
    pre = MODELS[padding]
    g, exc, _ = raises_documented(lambda: explainers.gradient(pre.model, ids, target),
                                  valid_ids(ids, pre) and valid_target(target))
    if exc is not None:
        return
    T = ids.shape[1] if padding == "mask" else L
    assert tuple(g.shape) == (ids.shape[0], T, pre.model.d_embed) and torch.isfinite(g).all()
    valid = explainers.valid_mask(pre.model, ids)
    assert (g[~valid] == 0).all()                         # padding takes no part


# ---------------------------------------------------------------- attnxai.explain, fastlime.explain_instance
lime_settings = st.fixed_dictionaries({}, optional={
    "num_samples": mostly(st.integers(2, 40), st.sampled_from([-1, 0, 1, 2.0, "20", None, True])),
    "kernel_width": mostly(st.one_of(st.floats(0.05, 1e4), st.integers(1, 50)),
                           st.one_of(st.floats(allow_nan=True, allow_infinity=True),
                                     st.sampled_from([0, -1, "25", True, None]))),
    "bow": mostly(st.booleans(), st.sampled_from(["false", 0, None])),
    "mask_string": mostly(st.sampled_from(["UNK", "zork"]),
                          st.sampled_from(["good", "a b", "", "!", None])),
    "random_state": mostly(st.one_of(st.integers(0, 3), st.none(),
                                     st.builds(np.random.RandomState, st.integers(0, 3))),
                           st.sampled_from([-1, 1.5, "0", 2**33])),
})


def valid_lime(pre, text, target, kw) -> bool:
    """fastlime.explain_instance's documented inputs: a text with a word the vocabulary knows
    (else the model sees UNK alone), lime's settings as attnxai.validate states them."""
    known = has_word(text) and any(i != pre.vocab.unk_id for i in pre.vocab.lookup(tokenize(text)))
    n, nu = kw.get("num_samples", 5000), kw.get("kernel_width", 25)
    rs = kw.get("random_state")
    return (known and valid_target(target) and is_int(n) and n >= 2
            and isinstance(nu, (int, float)) and not isinstance(nu, bool) and 0 < nu < math.inf
            and isinstance(kw.get("bow", True), bool) and kw.get("mask_string", "UNK") in
            ("UNK", "zork")
            and (rs is None or isinstance(rs, np.random.RandomState) or is_int(rs) and
                 0 <= rs < 2**32))


@examples(40)
@given(text=mostly(known_texts, st.one_of(word_texts, st.text(max_size=20), not_texts)),
       target=targets, kw=lime_settings)
@example(text="good film", target=1, kw={"num_samples": 2})     # the smallest valid budget
@example(text="bad", target=np.int64(0), kw={"kernel_width": 1e-3, "random_state": 2**32 - 1})
def test_fastlime_explain(text, target, kw):
    pre = MODELS["mask"]
    kw.setdefault("num_samples", 30)
    res, exc, _ = raises_documented(lambda: fastlime.explain_instance(pre, text, target=target, **kw),
                                    valid_lime(pre, text, target, kw))
    if exc is not None:
        return
    d = len(res.words)
    assert d >= 1 and res.coef.shape == (d,) and np.isfinite(res.coef).all()
    assert np.isfinite([res.intercept, res.score, res.local_pred]).all()
    assert res.prediction.shape == (pre.model.n_classes,) and res.target == int(target)
    if res.bow:
        assert len(set(res.words)) == d                   # one feature per distinct word
    assert any(i != pre.vocab.unk_id for i in pre.vocab.lookup(tokenize(text)))


@examples(30)
@given(text=mostly(known_texts, st.one_of(word_texts, st.text(max_size=20), not_texts)),
       target=targets,
       methods=mostly(st.one_of(st.none(), st.lists(st.sampled_from(list(PAPER_METHODS)),
                                                    min_size=1, max_size=3, unique=True)),
                      st.sampled_from([["lime"], [], "LIME"])),
       bow=mostly(st.booleans(), st.sampled_from(["false", None])),
       seed=mostly(st.integers(0, 5), st.sampled_from([-1, 1.5, "0"])))
def test_explain(text, target, methods, bow, seed):
    pre = MODELS["mask"]
    valid = (valid_lime(pre, text, target, {"bow": bow, "num_samples": 30}) and is_int(seed)
             and 0 <= seed < 2**32 and (methods is None or isinstance(methods, list)
                                        and 0 < len(methods) and set(methods) <= set(PAPER_METHODS)))
    ex, exc, caught = raises_documented(lambda: attnxai.explain(
        pre, text, methods, target=target, seed=seed,
        settings={"LIME": {"num_samples": 30, "bow": bow}} if methods is None or
        "LIME" in methods else None), valid)
    if exc is not None:
        return
    cols = list(PAPER_METHODS if methods is None else methods)
    assert 1 <= len(ex.tokens) <= L - 1 and ex.n_tokens == len(ex.tokens) + ex.cut
    assert (ex.cut > 0) == any(issubclass(w.category, TruncationWarning) for w in caught)
    assert ex.methods == cols and ex.target == int(target)
    assert list(ex.table().columns) == ["token", *cols]
    assert list(ex.table("word").columns) == ["word", "count", *cols]
    assert ex.table("word")["count"].sum() == len(ex.tokens)
    for m in cols:
        assert ex.token_scores[m].shape == (len(ex.tokens),), m
        assert ex.word_scores[m].shape == (len(ex.words),), m
        assert np.isfinite(ex.token_scores[m]).all() and np.isfinite(ex.word_scores[m]).all(), m


def test_properties_run_on_both_padding_modes():
    assert {p.model.padding for p in MODELS.values()} == {"mask", "unk"}
    with pytest.raises(TypeError):
        MODELS["mask"].predict_logits("one str")
