"""Cooperative games and paths, in closed form (chapter 9): the Shapley and Banzhaf values of the
words (deletion, ``bow=True``) or of the positions (replacement by UNK, ``bow=False``)
(:func:`attnxai.theory.shapley`, :func:`attnxai.theory.banzhaf`), and Integrated Gradients from
the UNK baseline (:func:`attnxai.theory.integrated_gradients`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import validate
from .base import Compared, Document, Method, optional_positive, set_fields

__all__ = ["BanzhafSettings", "DELETION_POSITIONS", "IGSettings", "METHODS", "ShapleySettings"]

#: The deletion games' ``positions`` a method's settings may ask for: the exact route, its certified
#: estimate (``"sampled"``, its 95 % intervals within a relative 1e-2,
#: :mod:`attnxai.theory.deletion_routes`) or the binomial approximation.
DELETION_POSITIONS = ("exact", "sampled", "binomial")


@dataclass(frozen=True)
class ShapleySettings:
    """The closed form of the Shapley values (:func:`attnxai.theory.shapley`): ``method``
    (``"chain"``, exact in ``p``, or ``"gauss"``), ``n_nodes`` (Gauss-Legendre nodes), ``ksub``
    (the lambda rule's steps per octave) and, for deletion, ``positions`` (one of
    :data:`DELETION_POSITIONS`); each None for the function's own default (chapter 9 measures
    them)."""

    method: str | None = None
    n_nodes: int | None = None
    ksub: int | None = None
    positions: str | None = None

    def __post_init__(self):
        if self.method is not None:
            validate.choice(self.method, "method", ("chain", "gauss"))
        if self.positions is not None:
            validate.choice(self.positions, "positions", DELETION_POSITIONS)
        optional_positive(self.n_nodes, "n_nodes")
        optional_positive(self.ksub, "ksub")

    def kwargs(self) -> dict[str, Any]:
        return set_fields(self)


@dataclass(frozen=True)
class BanzhafSettings:
    """The closed form of the Banzhaf values (:func:`attnxai.theory.banzhaf`): ``ksub`` and, for
    deletion, ``positions``; None for the function's defaults."""

    ksub: int | None = None
    positions: str | None = None

    def __post_init__(self):
        if self.positions is not None:
            validate.choice(self.positions, "positions", DELETION_POSITIONS)
        optional_positive(self.ksub, "ksub")

    def kwargs(self) -> dict[str, Any]:
        return set_fields(self)


@dataclass(frozen=True)
class IGSettings:
    """Integrated Gradients from the UNK baseline in closed form
    (:func:`attnxai.theory.integrated_gradients`): ``n_nodes`` (None: doubled until ``tol``)."""

    n_nodes: int | None = None
    tol: float = 1e-12

    def __post_init__(self):
        optional_positive(self.n_nodes, "n_nodes")
        if not (isinstance(self.tol, (int, float)) and not isinstance(self.tol, bool)
                and self.tol > 0):
            raise ValueError(f"tol must be a positive number, got {self.tol!r}")


def _game(value: str, bow: bool):
    """Shapley or Banzhaf values of one removal mode (chapter 9): per word for deletion, per
    position for replacement (lime's features of that mode)."""
    def compute(doc: Document, s: Any) -> np.ndarray:
        from .. import theory                 # (imports SymPy: only when asked)

        if not bow and s.positions is not None:
            raise ValueError(f"positions is a setting of deletion: {value} with replacement "
                             "keeps every position")
        fn = theory.shapley if value == "Shapley" else theory.banzhaf
        values = fn(doc.pre, doc.text, bow=bow, target=doc.target, **s.kwargs())
        if not bow:
            return np.asarray(values, dtype=np.float64)
        return doc.words.align(doc.words.words, values)
    return compute


def _integrated_gradients(doc: Document, s: IGSettings) -> np.ndarray:
    from .. import theory

    ig = theory.integrated_gradients(doc.pre, doc.text, target=doc.target, n_nodes=s.n_nodes,
                                     tol=s.tol)
    doc.results["IG"] = ig
    return np.asarray(ig.tokens, dtype=np.float64)


# the record of the existing results folders, word for word: a resumed folder compares it
_GAMES = ("game values", "theory.shapley, theory.banzhaf (bow=True: delete, bow=False: replace), "
                         "theory.integrated_gradients: default settings")


def _value(value: str, mode: str, order: int, settings: type, about: str) -> Method:
    bow = mode == "delete"
    return Method(f"{value} ({mode})", "word" if bow else "token", value, settings,
                  _game(value, bow), about, recorded=_GAMES,
                  compared=Compared(value, order, mode))


METHODS = (
    _value("Shapley", "delete", 0, ShapleySettings,
           "Shapley values of the words, deleted with all their occurrences (closed form)"),
    _value("Shapley", "replace", 0, ShapleySettings,
           "Shapley values of the positions, replaced by UNK in place (closed form)"),
    _value("Banzhaf", "delete", 1, BanzhafSettings,
           "Banzhaf values of the words, deleted (closed form: the effect at p = 1/2)"),
    _value("Banzhaf", "replace", 1, BanzhafSettings,
           "Banzhaf values of the positions, replaced by UNK (closed form)"),
    Method("IG", "token", "IG", IGSettings, _integrated_gradients,
           "Integrated Gradients from the UNK baseline (closed form, Gauss-Legendre)",
           recorded=_GAMES, compared=Compared("IG", 4)),
)
