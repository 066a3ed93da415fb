"""What every method family shares: the :class:`Document` a method reads, the :class:`Method`
entry that registers it, and the helpers of the families' settings classes.

A family module (:mod:`~attnxai.methods.attention`, ...) defines its settings dataclasses, its
``compute(doc, settings)`` functions and a tuple ``METHODS`` of :class:`Method` entries;
:mod:`attnxai.registry` assembles the families' tuples, in :data:`attnxai.registry.FAMILIES`'
order, into :data:`attnxai.registry.METHODS`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from .. import validate
from ..model.textmodel import Pretrained
from ..words import Words

__all__ = ["Compared", "DEFAULT_SEED", "Document", "LEVELS", "Method", "NoSettings",
           "optional_positive", "set_fields"]

#: The seed of every random method (LIME's ``random_state``, the random baseline) when neither the
#: caller nor the method's settings give one.
DEFAULT_SEED = 0
LEVELS = ("token", "word")


@dataclass
class Document:
    """One text as the model reads it, and what the methods share on it.

    ``text``: in :func:`attnxai.normalize_for_lime` form and cut to the model's length (so that
    lime's words are the model's tokens); ``tokens`` (n,) its tokens; ``ids`` (n + 1,) int64,
    ``[CLS]`` first; ``words``: the word layout (:class:`attnxai.words.Words`); ``target``: the
    explained class; ``logits`` (C,) float64, the model's output on it. ``results`` keeps what a
    method returns besides its scores (``"LIME"``: the :class:`~attnxai.fastlime.LimeResult`).
    """

    pre: Pretrained
    text: str
    tokens: list[str]
    ids: np.ndarray
    words: Words
    target: int
    logits: np.ndarray
    results: dict[str, Any] = field(default_factory=dict)
    _shared: dict[Any, Any] = field(default_factory=dict, repr=False)

    @property
    def ids_tensor(self) -> torch.Tensor:
        """(1, n + 1) ids, as the explainers take them."""
        return torch.as_tensor(self.ids)[None]

    def shared(self, key: Any, compute: Callable[[], Any]) -> Any:
        """``compute()`` once per document and ``key`` (e.g. every gradient summary comes from one
        backward pass)."""
        if key not in self._shared:
            self._shared[key] = compute()
        return self._shared[key]

    def tokens_of(self, scores: torch.Tensor) -> np.ndarray:
        """(n,) float64 from a (1, T) position score ([CLS] dropped)."""
        return scores[0, 1:len(self.ids)].double().numpy()


@dataclass(frozen=True)
class NoSettings:
    """A method without settings."""


@dataclass(frozen=True)
class Compared:
    """A method's place in chapter 9's agreement study
    (:data:`attnxai.experiment.shapley_corpus.COMPARED`): its ``name`` there, its ``order``
    (pairs of methods are written ``a__b`` with ``a`` first in this order, so an existing results
    folder keeps its columns) and the removal ``mode`` it stands for (``"delete"``,
    ``"replace"``; None: both, the study sets its ``bow`` where it has one)."""

    name: str
    order: int
    mode: str | None = None


@dataclass(frozen=True)
class Method:
    """One explainer of :data:`attnxai.registry.METHODS`.

    ``level``: what ``compute`` returns, ``"token"`` (n,) or ``"word"`` (d,) float64 scores
    (a method whose level depends on its settings, LIME's ``bow``, says so in ``level_of``);
    ``group``: what is timed together; ``settings``: its settings class (a frozen dataclass
    whose fields have the defaults, checked in its ``__post_init__``; the command line's ``--set
    METHOD.FIELD=VALUE`` sets any field); ``about``: one line.

    Optional: ``batch(model, ids, target, settings, shared) -> (B, T)`` scores every position of a
    batch of ids (:func:`attnxai.registry.position_scores`; ``shared`` a dict the methods of one
    call share, e.g. one backward pass); ``follows``: ``(method, fields)``, settings that must
    agree with another method's (LIME's limit takes LIME's ``kernel_width`` and ``bow``);
    ``compared``: its place in chapter 9's agreement study (:class:`Compared`). For the corpus
    studies: ``study_seed`` maps a test review's index to the seed of a method that draws random
    numbers (its settings' ``seed``); ``recorded`` is ``(key, description)``, what a results
    folder records about the method (a key shared by several methods is written once; the
    folder's record is compared when it resumes, so an existing description is never
    reworded)."""

    name: str
    level: str
    group: str
    settings: type
    compute: Callable[[Document, Any], np.ndarray]
    about: str
    level_of: Callable[[Any], str] | None = None
    study_seed: Callable[[int], int] | None = None
    recorded: tuple[str, str] | None = None
    batch: Callable[..., torch.Tensor] | None = None
    follows: tuple[str, tuple[str, ...]] | None = None
    compared: Compared | None = None

    def __post_init__(self):
        validate.choice(self.level, "level", LEVELS)
        if not (dataclasses.is_dataclass(self.settings) and isinstance(self.settings, type)):
            raise TypeError(f"{self.name}: settings must be a dataclass, got {self.settings!r}")

    def level_for(self, settings: Any) -> str:
        return self.level if self.level_of is None else self.level_of(settings)


def bow_level(s: Any) -> str:
    """The level of a method with a ``bow`` setting: words when deleting, tokens when replacing."""
    return "word" if s.bow else "token"


def index_seed(i: int) -> int:
    """The study seed of test review ``i``: ``i``."""
    return i


def set_fields(settings: Any) -> dict[str, Any]:
    """The fields of a settings object that are not None (the closed forms' keywords)."""
    return {f.name: getattr(settings, f.name) for f in dataclasses.fields(settings)
            if getattr(settings, f.name) is not None}


def optional_positive(value: Any, name: str) -> None:
    """``value`` None or a positive int."""
    if value is not None:
        validate.positive_int(value, name)
