"""Hypothesis settings and strategies shared by the property-based tests: random float64 models of
the paper's single-layer classifier, documents, score vectors and kernel widths.

**Settings** (:func:`examples`). ``derandomize=True``: the examples are a fixed function of the test
(its source and its strategies), so every run, here and in CI, tries the same cases and a failure
is reproduced by running the test again, with nothing to share; ``database=None``: no example
saved by an earlier run changes what a later run tries (a seed database would make a run depend
on the machine's history); ``deadline=None``: a test never fails for being slow (timing is not a
property). ``max_examples`` per test is sized so that the whole suite stays within ``make test``'s
budget; ``ATTNXAI_HYPOTHESIS_EXAMPLES=10`` multiplies every count for a deeper local search (with
``derandomize`` the first cases are the same, more come after them).

**Models** (:func:`models`): float64 :class:`~attnxai.model.single_layer.AttentionClassifier` s with 1 to 3 heads,
small widths, the 30-entry vocabulary of ``conftest.WORDS`` (``[PAD]`` 0, ``[CLS]`` 1, ``UNK`` 2), both padding modes, and
weights ``U(-scale, scale)`` for scales from 0.1 to 30: at 30 the attention logits of a head span
thousands, so attention weights underflow to exactly 0 in float64 (the regime some statements
exclude). Word embeddings are ``N(0, 1)`` times ``word_scale``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np
import torch
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st

SCALE = float(os.environ.get("ATTNXAI_HYPOTHESIS_EXAMPLES", "1"))
VOCAB = 30                   # ids: 0 [PAD], 1 [CLS], 2 UNK, 3..29 conftest.WORDS
MAX_LEN = 12                 # [CLS] + up to 11 words


#: ``ATTNXAI_HYPOTHESIS_NO_SHRINK=1``: report the first failing example without shrinking or
#: explaining it (benchmarks/mutation.py, where only whether a test fails matters: the explain
#: phase reruns hundreds of variants of a failing example, which made slow tests time out).
PHASES = tuple(p for p in Phase if not (p in (Phase.shrink, Phase.explain) and
                                        os.environ.get("ATTNXAI_HYPOTHESIS_NO_SHRINK") == "1"))


def examples(n: int):
    """The settings of a property-based test: ``n`` examples (times ``ATTNXAI_HYPOTHESIS_EXAMPLES``),
    derandomised, no database, no deadline (module docstring)."""
    return settings(max_examples=max(1, int(n * SCALE)), deadline=None, derandomize=True,
                    database=None, phases=PHASES,
                    suppress_health_check=[HealthCheck.too_slow,
                                           HealthCheck.function_scoped_fixture,
                                           HealthCheck.data_too_large])


@dataclass(frozen=True)
class ModelSpec:
    """Everything that determines a random model (hypothesis shrinks these, not tensors)."""

    seed: int
    n_heads: int
    d_embed: int
    d_attn: int
    d_value: int
    scale: float
    word_scale: float
    padding: str
    n_classes: int
    skip: bool

    def build(self, query_gain: float = 1.0):
        """The float64 model (``query_gain``: its queries multiplied, attention pushed towards
        one-hot; conftest.random_model)."""
        from conftest import random_model

        with torch.random.fork_rng():            # leaves the global generator as it was
            return random_model(VOCAB, seed=self.seed, d_embed=self.d_embed, d_attn=self.d_attn,
                                d_value=self.d_value, n_heads=self.n_heads, max_len=MAX_LEN,
                                n_classes=self.n_classes, padding=self.padding,
                                init_range=self.scale, skip=self.skip,
                                word_scale=self.word_scale, query_gain=query_gain)

    def pretrained(self):
        """The model with the vocabulary of ``conftest.WORDS`` (for the text entry points)."""
        from conftest import WORDS

        from attnxai import Pretrained, Vocab

        m = self.build()
        return Pretrained(m, Vocab(list(WORDS)), {"train": {"profile": "hypothesis"},
                                                  "model": m.config.to_dict()}, {})

    def without_skip(self):
        """The same weights without the skip connection (W_s is drawn after the others)."""
        from dataclasses import replace

        return replace(self, skip=False).build()


def models(*, heads=(1, 3), scales=(0.1, 1.0, 3.0, 30.0), paddings=("mask", "unk"),
           n_classes=(2,), skip=(False,), d_embed=(2, 4, 6)):
    """Random model specifications (:class:`ModelSpec`; ``.build()`` the float64 model)."""
    return st.builds(ModelSpec, seed=st.integers(0, 2**16), n_heads=st.integers(*heads),
                     d_embed=st.sampled_from(d_embed), d_attn=st.integers(1, 3),
                     d_value=st.integers(1, 3), scale=st.sampled_from(scales),
                     word_scale=st.sampled_from((0.3, 1.0, 3.0)),
                     padding=st.sampled_from(paddings), n_classes=st.sampled_from(n_classes),
                     skip=st.sampled_from(skip))


def words(min_size: int = 1, max_size: int = MAX_LEN - 1, *, distinct: bool = False,
          unk: bool = True):
    """Word ids of a document after ``[CLS]``: from the whole vocabulary, or from a pool of a few
    words (repeats), UNK (id 2) included when ``unk``; ``distinct``: no word twice."""
    low = 2 if unk else 3
    if distinct:
        return st.lists(st.integers(low, VOCAB - 1), min_size=min_size, max_size=max_size,
                        unique=True)
    pool = st.lists(st.integers(low, VOCAB - 1), min_size=1, max_size=4, unique=True)
    few = pool.flatmap(lambda p: st.lists(st.sampled_from(p), min_size=min_size,
                                          max_size=max_size))
    many = st.lists(st.integers(low, VOCAB - 1), min_size=min_size, max_size=max_size)
    return st.one_of(many, few)


def documents(**kw):
    """``[CLS]`` followed by :func:`words`, as a 1-D int64 array."""
    return words(**kw).map(lambda w: np.array([1, *w], dtype=np.int64))


#: Score values that tie, vanish and change sign, mixed with arbitrary floats.
score_values = st.one_of(st.sampled_from([-2.0, -1.0, -0.5, 0.0, 0.5, 1.0, 2.0]),
                         st.floats(-3, 3, allow_nan=False, width=64))


def scores(n: int):
    """A score vector of length ``n`` (ties, zeros, signs), as a float64 array."""
    return st.lists(score_values, min_size=n, max_size=n).map(lambda v: np.array(v, float))


def narrowest_width(d: int) -> float:
    """The narrowest kernel width the closed forms accept for ``d`` features."""
    from attnxai.theory import lime_text as lt

    return lt.narrowest_kernel_width(d)


def kernel_widths(d: int):
    """Kernel widths for ``d`` features: lime's 25, wider ones, the wide-kernel limit, arbitrary
    ones from 0.3 (mostly refused for small ``d``) and widths at the refusal limit (the narrowest
    accepted one times 1 + 1e-6 to 2, and just below it)."""
    edge = narrowest_width(d)
    at_limit = st.sampled_from([1 + 1e-6, 1.01, 1.3, 2.0, 1 - 1e-6]).map(lambda k: edge * k)
    return st.one_of(st.sampled_from([25.0, 100.0, float("inf"), 8.0]), st.floats(0.3, 200.0),
                     at_limit, at_limit)             # (twice: a third of the widths or more)


def tensor(ids: np.ndarray) -> torch.Tensor:
    return torch.as_tensor(ids)[None]


def relative(a, b, scale: float = 0.0) -> float:
    """``max |a - b| / max(max |b|, scale, tiny)``: ``scale`` is the size of what ``b`` is computed
    from (e.g. the largest value of the explained function), when ``b`` itself may cancel."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    s = max(float(np.abs(b).max(initial=0.0)), float(scale), 1e-300)
    return float(np.abs(a - b).max(initial=0.0)) / s
