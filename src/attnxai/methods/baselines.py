"""Baselines: what an explanation should beat or match without any knowledge of the model's
insides. ``random``: i.i.d. standard normal scores (the floor of every faithfulness metric).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import validate
from .base import Document, Method, index_seed

__all__ = ["METHODS", "RandomSettings"]


@dataclass(frozen=True)
class RandomSettings:
    """``seed`` of ``numpy.random.default_rng`` (None: the explanation's seed)."""

    seed: int | None = None

    def __post_init__(self):
        if self.seed is not None and validate.integer(self.seed, "seed") < 0:
            raise ValueError(f"seed must be >= 0, got {self.seed}")


def _random(doc: Document, s: RandomSettings) -> np.ndarray:
    return np.random.default_rng(s.seed).standard_normal(len(doc.tokens))


METHODS = (
    Method("random", "token", "random", RandomSettings, _random,
           "i.i.d. standard normal scores (a baseline)", study_seed=index_seed,
           recorded=("random", "numpy default_rng(test_index).standard_normal(n)")),
)
