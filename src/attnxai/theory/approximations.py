"""The approximations of LIME's coefficients that the corpus experiment compares with LIME: one
explicit table (name -> function, label), nothing registered by import side effect.

Every function takes ``(pre, text, *, bow, kernel_width)`` — a :class:`attnxai.Pretrained`, a text
in :func:`attnxai.normalize_for_lime` form, lime's settings — and returns one coefficient per lime
feature of ``text`` in lime's order (the distinct words for ``bow=True``, the positions for
``bow=False``).
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..model.textmodel import Pretrained
from .lime_attention import lime_limit_heads_by_width, lime_paper, text_inputs
from .lime_text import DEFAULT_KERNEL_WIDTH

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


# Entries that coincide for one mode (limit and limit_lime for deletion of distinct words, limit
# and limit_meanpos for replacement) or share their effects (limit and limit_wide: the profile
# form's effects do not depend on the kernel width) are computed once: the last few answers are
# kept, for lime's width and the wide kernel together.
_CACHE: OrderedDict = OrderedDict()
_CACHE_SIZE = 8


def _limit(pre: Pretrained, text: str, bow: bool, kernel_width: float, **kw) -> np.ndarray:
    ids, feats = text_inputs(pre, text, bow)
    nu = float(kernel_width)
    key = (id(pre.model), text, bool(bow), tuple(sorted(kw.items())))
    hit = _CACHE.get(key)
    if hit is not None and hit[0] is pre.model and nu in hit[1]:
        _CACHE.move_to_end(key)
        return hit[1][nu].copy()
    widths = [nu] if kw.get("law") == "lime" else sorted({nu, DEFAULT_KERNEL_WIDTH, math.inf})
    heads = lime_limit_heads_by_width(pre.model, ids, widths, bow=bow, features=feats, **kw)
    _CACHE[key] = (pre.model, {w: h.mean(axis=0) for w, h in heads.items()})
    while len(_CACHE) > _CACHE_SIZE:
        _CACHE.popitem(last=False)
    return _CACHE[key][1][nu].copy()


def paper(pre: Pretrained, text: str, *, bow: bool, kernel_width: float) -> np.ndarray:
    """The paper's (3/2) per-token formula (``kernel_width`` unused: 3/2 is its wide kernel)."""
    ids, feats = text_inputs(pre, text, bow)
    return lime_paper(pre.model, ids, bow=bow, features=feats)


def limit(pre: Pretrained, text: str, *, bow: bool, kernel_width: float, **kw) -> np.ndarray:
    """This book's large-sample limit (:func:`attnxai.theory.lime_limit` with its defaults:
    deletion of distinct words, lime's own law by the exact chain; with repeated words,
    independent binomial positions; replacement, independent removal)."""
    return _limit(pre, text, bow, kernel_width, **kw)


def limit_lime(pre: Pretrained, text: str, *, bow: bool, kernel_width: float) -> np.ndarray:
    """The limit under lime's own law by the chain, in both modes: exact for replacement and for
    deletion of distinct words; for deletion with repeated words, each occurrence is treated as
    its own feature (the token approximation)."""
    return _limit(pre, text, bow, kernel_width, law="lime")


def meanfield(pre: Pretrained, text: str, *, bow: bool, kernel_width: float) -> np.ndarray:
    """The limit with every softmax denominator replaced by its mean (concentration argument)."""
    return _limit(pre, text, bow, kernel_width, law="discrete", method="meanfield")


def limit_wide(pre: Pretrained, text: str, *, bow: bool, kernel_width: float) -> np.ndarray:
    """The limit for a wide kernel (the paper's assumption), whatever lime's width."""
    return limit(pre, text, bow=bow, kernel_width=math.inf)


def limit_meanpos(pre: Pretrained, text: str, *, bow: bool, kernel_width: float) -> np.ndarray:
    """Independent removal with every kept token at its mean position (deletion; = limit for
    bow=False)."""
    if not bow:
        return limit(pre, text, bow=bow, kernel_width=kernel_width)
    return _limit(pre, text, bow, kernel_width, law="discrete", positions="mean")


#: The approximations the LIME corpus experiment compares, in the book's order.
APPROXIMATIONS: dict[str, Approximation] = {a.name: a for a in (
    Approximation("paper", "paper (3/2, per token)", paper, paper.__doc__ or ""),
    Approximation("limit", "our limit", limit, limit.__doc__ or ""),
    Approximation("limit_lime", "limit, lime's law (chain)", limit_lime, limit_lime.__doc__ or ""),
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
