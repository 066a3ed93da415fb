"""The approximations of LIME's coefficients that the corpus experiment compares with LIME: one
explicit table (name -> function, label), nothing registered by import side effect.

Every function takes ``(pre, text, *, bow, kernel_width)`` — a :class:`attnxai.Pretrained`, a text
in :func:`attnxai.normalize_for_lime` form, lime's settings — and returns one coefficient per lime
feature of ``text`` in lime's order (the distinct words for ``bow=True``, the positions for
``bow=False``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..checkpoint import Pretrained
from .lime_attention import lime_limit, lime_paper, text_inputs

__all__ = ["APPROXIMATIONS", "Approximation", "approximation"]

ApproxFn = Callable[..., np.ndarray]


@dataclass(frozen=True)
class Approximation:
    """One closed-form approximation of LIME's coefficients."""

    name: str       # a column prefix in the experiment's results
    label: str      # how the book's tables and figures name it
    fn: ApproxFn
    description: str

    def __call__(self, pre: Pretrained, text: str, *, bow: bool, kernel_width: float) -> np.ndarray:
        return self.fn(pre, text, bow=bow, kernel_width=kernel_width)


def paper(pre: Pretrained, text: str, *, bow: bool, kernel_width: float) -> np.ndarray:
    """The paper's (3/2) per-token formula (``kernel_width`` unused: 3/2 is its wide kernel)."""
    ids, feats = text_inputs(pre, text, bow)
    return lime_paper(pre.model, ids, bow=bow, features=feats)


def limit(pre: Pretrained, text: str, *, bow: bool, kernel_width: float, **kw) -> np.ndarray:
    """This book's large-sample limit (:func:`attnxai.theory.lime_limit`)."""
    ids, feats = text_inputs(pre, text, bow)
    return lime_limit(pre.model, ids, bow=bow, kernel_width=kernel_width, features=feats, **kw)


def meanfield(pre: Pretrained, text: str, *, bow: bool, kernel_width: float) -> np.ndarray:
    """The limit with every softmax denominator replaced by its mean (concentration argument)."""
    return limit(pre, text, bow=bow, kernel_width=kernel_width, method="meanfield")


def limit_wide(pre: Pretrained, text: str, *, bow: bool, kernel_width: float) -> np.ndarray:
    """The limit for a wide kernel (the paper's assumption), whatever lime's width."""
    return limit(pre, text, bow=bow, kernel_width=math.inf)


def limit_meanpos(pre: Pretrained, text: str, *, bow: bool, kernel_width: float) -> np.ndarray:
    """The limit with every kept token at its mean position (deletion; = limit for bow=False)."""
    return limit(pre, text, bow=bow, kernel_width=kernel_width, positions="mean", shift=False)


#: The approximations the LIME corpus experiment compares, in the book's order.
APPROXIMATIONS: dict[str, Approximation] = {a.name: a for a in (
    Approximation("paper", "paper (3/2, per token)", paper, paper.__doc__ or ""),
    Approximation("limit", "our limit", limit, limit.__doc__ or ""),
    Approximation("meanfield", "mean field", meanfield, meanfield.__doc__ or ""),
    Approximation("limit_wide", "limit, wide kernel", limit_wide, limit_wide.__doc__ or ""),
    Approximation("limit_meanpos", "limit, mean positions", limit_meanpos,
                  limit_meanpos.__doc__ or ""),
)}


def approximation(name: str) -> Approximation:
    """The entry ``name`` of :data:`APPROXIMATIONS` (a clear error otherwise)."""
    try:
        return APPROXIMATIONS[name]
    except KeyError:
        raise ValueError(f"unknown approximation {name!r}; known: {list(APPROXIMATIONS)}") from None
