"""Attention as an explanation: the ``[CLS]`` attention weights of one layer, averaged or maxed
over the heads (alpha-avg, alpha-max: the paper's Figure 1), and attention times the token's own
score (``alpha x s``, the value part of GxI, chapter 4). The computations are
:func:`attnxai.explainers.attention` and :func:`attnxai.explainers.alpha_times_score`."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import explainers, validate
from .base import Compared, Document, Method, NoSettings

__all__ = ["AttentionSettings", "METHODS"]


@dataclass(frozen=True)
class AttentionSettings:
    """``layer``: the layer whose ``[CLS]`` attention is read (multi-layer models; default the
    first)."""

    layer: int = 0

    def __post_init__(self):
        validate.integer(self.layer, "layer")


def _attention(reduce: str):
    def compute(doc: Document, s: AttentionSettings) -> np.ndarray:
        return doc.tokens_of(explainers.attention(doc.pre.model, doc.ids_tensor, reduce,
                                                  layer=s.layer))

    def batch(model, ids, target, s: AttentionSettings, shared):
        return explainers.attention(model, ids, reduce, layer=s.layer)
    return compute, batch


def _alpha_times_score(doc: Document, s: NoSettings) -> np.ndarray:
    return doc.tokens_of(explainers.alpha_times_score(doc.pre.model, doc.ids_tensor, doc.target))


_GROUP = "attention+gradients"
_AVG, _MAX = _attention("mean"), _attention("max")

METHODS = (
    Method("alpha-avg", "token", _GROUP, AttentionSettings, _AVG[0],
           "the [CLS] attention weight, mean over heads", batch=_AVG[1],
           compared=Compared("alpha-avg", 6)),
    Method("alpha-max", "token", _GROUP, AttentionSettings, _MAX[0],
           "the [CLS] attention weight, max over heads", batch=_MAX[1]),
    Method("alpha x s", "token", _GROUP, NoSettings, _alpha_times_score,
           "attention times the token's own score (the value part of GxI)"),
)
