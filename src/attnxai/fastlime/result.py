"""The result of one LIME explanation (lime's ``Explanation`` for the full-feature fit)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["LimeResult"]


@dataclass
class LimeResult:
    """One LIME explanation.

    ``coef[j]`` (shape ``(d,)``) is the weight of feature ``j`` in lime's order: ``words[j]`` is
    the ``j``-th distinct word (``bow=True``) or the word at the ``j``-th position (``bow=False``).
    ``intercept``, ``score`` (weighted R^2) and ``local_pred`` (the surrogate at the document) are
    lime's ``intercept[target]``, ``score`` and ``local_pred[0]``; ``prediction`` (C,) is the
    model's output for the document, every class (lime's ``predict_proba``). ``path`` is
    ``"fast"`` (the model evaluated from its float64 projections) or ``"generic"`` (perturbed
    strings scored by a ``classifier_fn``, as lime does); ``reason`` says why the generic path was
    taken; ``backend`` is ``"numba"`` or ``"numpy"``, the implementation of the two compiled loops
    (same numbers either way). With ``keep_data=True``, ``masks`` (num_samples, d) bool,
    ``labels`` (num_samples,) and ``weights`` (num_samples,) are kept.
    """

    words: list[str]
    coef: np.ndarray
    intercept: float
    score: float
    local_pred: float
    prediction: np.ndarray
    target: int
    bow: bool
    num_samples: int
    kernel_width: float
    mask_string: str
    path: str
    backend: str
    reason: str = ""
    masks: np.ndarray | None = field(default=None, repr=False)
    labels: np.ndarray | None = field(default=None, repr=False)
    weights: np.ndarray | None = field(default=None, repr=False)

    @property
    def num_features(self) -> int:
        return len(self.words)

    def as_map(self) -> list[tuple[int, float]]:
        """lime's ``local_exp[target]``: (feature id, weight), largest ``|weight|`` first."""
        return sorted(((j, float(c)) for j, c in enumerate(self.coef)), key=lambda p: -abs(p[1]))

    def as_list(self) -> list[tuple[str, float]]:
        """lime's ``as_list(label=target)``: (word, weight), largest ``|weight|`` first."""
        return [(self.words[j], c) for j, c in self.as_map()]

    def as_dict(self) -> dict[str, float]:
        """Word -> coefficient. With ``bow=True`` the words are distinct; with ``bow=False`` a word
        that occurs several times has one coefficient per position, so this refuses (use
        :attr:`coef`, aligned with the positions)."""
        if not self.bow and len(set(self.words)) != len(self.words):
            raise ValueError("with bow=False every position is a feature and some words repeat: "
                             "a word -> coefficient map would keep only one of their "
                             "coefficients; use .words and .coef (aligned with positions)")
        return {w: float(c) for w, c in zip(self.words, self.coef)}
