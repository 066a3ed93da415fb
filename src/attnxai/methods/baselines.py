"""Baselines: what an explanation should beat or match without any knowledge of the model's
insides. ``random``: i.i.d. standard normal scores (the floor of every faithfulness metric).
``occlusion``: leave-one-out (Zeiler & Fergus, 2014; Li, Monroe & Jurafsky, 2016, "erasure"):
a feature's score is how much the explained logit drops when that feature alone is removed,

    s_j = f_target(x) - f_target(x without feature j),

with the features and the removal of LIME's ``bow`` setting: ``bow=True`` (default) deletes a
word with all its occurrences (one score per distinct word), ``bow=False`` replaces one position
by UNK (one score per token). It needs only the model's outputs (d + 1 of them, one batch) and is
exact; positive means the feature pushes the logit up. It is the first-order term of the deletion
game (a word's Shapley value averages this drop over every context, occlusion takes it in the full
text only), so it agrees with the Shapley values where the words act independently.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import validate
from ..model.interface import predict
from .base import Document, Method, bow_level, index_seed

__all__ = ["METHODS", "OcclusionSettings", "RandomSettings", "occlusion"]


@dataclass(frozen=True)
class RandomSettings:
    """``seed`` of ``numpy.random.default_rng`` (None: the explanation's seed)."""

    seed: int | None = None

    def __post_init__(self):
        if self.seed is not None and validate.integer(self.seed, "seed") < 0:
            raise ValueError(f"seed must be >= 0, got {self.seed}")


@dataclass(frozen=True)
class OcclusionSettings:
    """``bow``: True (default) deletes a word with all its occurrences, one score per distinct
    word; False replaces one position by UNK, one score per token (LIME's two removal modes)."""

    bow: bool = True

    def __post_init__(self):
        validate.bow(self.bow)


def _random(doc: Document, s: RandomSettings) -> np.ndarray:
    return np.random.default_rng(s.seed).standard_normal(len(doc.tokens))


def occlusion(doc: Document, s: OcclusionSettings) -> np.ndarray:
    """The leave-one-out scores of ``doc`` (module docstring): (d,) per distinct word with
    ``s.bow``, else (n,) per token; float64."""
    model = doc.pre.model
    ids = [int(i) for i in doc.ids]
    cls, body = ids[:1], ids[1:]
    if s.bow:
        owner = doc.words.owner
        variants = [cls + [t for t, o in zip(body, owner) if o != j] for j in range(doc.words.d)]
    else:
        variants = [cls + body[:t] + [model.unk_id] + body[t + 1:] for t in range(len(body))]
    logits = predict(model, [ids, *variants])[:, doc.target]
    return logits[0] - logits[1:]


METHODS = (
    Method("random", "token", "random", RandomSettings, _random,
           "i.i.d. standard normal scores (a baseline)", study_seed=index_seed,
           recorded=("random", "numpy default_rng(test_index).standard_normal(n)")),
    Method("occlusion", "word", "occlusion", OcclusionSettings, occlusion,
           "leave-one-out: the drop of the explained logit when one word is deleted (bow=False: "
           "one position replaced by UNK)", bow_level,
           recorded=("occlusion", "methods.baselines.occlusion: f(x) - f(x without the word), "
                                  "OcclusionSettings defaults unless 'method settings' says "
                                  "otherwise")),
)
