"""Toy text classifiers for lime: a model of the presence of a fixed list of words, for
chapter 5's checks of LIME's limit on models whose exact answer is known."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np


Classifier = Callable[[list[str]], np.ndarray]


def presence_classifier(words: Sequence[str],
                        score: Callable[[np.ndarray], np.ndarray]) -> Classifier:
    """A classifier for ``lime_text`` from a function of word presence: for each text,
    ``z[j] = 1`` when ``words[j]`` is one of its (space-separated) words, else 0, and the
    classifier returns the logits ``(-score(z), score(z))``, shape (texts, 2).
    ``score``: (texts, len(words)) 0/1 floats -> (texts,)."""
    words = list(words)
    if not words or len(set(words)) != len(words):
        raise ValueError("presence_classifier: distinct words, at least one")

    def classify(texts: list[str]) -> np.ndarray:
        z = np.array([[w in present for w in words] for present in map(set, map(str.split, texts))],
                     dtype=float)
        out = np.asarray(score(z), dtype=float)
        if out.shape != (len(texts),):
            raise ValueError(f"presence_classifier: score gave shape {out.shape}, expected "
                             f"({len(texts)},)")
        return np.stack([-out, out], axis=1)

    return classify
