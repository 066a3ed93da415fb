"""Gradients as explanations: the four summaries of ``grad_{e_t} f_target`` of the paper's
Figure 1 (G-avg, G-l1, G-l2, GxI; one backward pass for all four,
:func:`attnxai.explainers.gradient_summaries`) and SmoothGrad (Smilkov et al., 2017: the gradient
averaged over noisy copies of the embeddings, :func:`attnxai.explainers.smoothgrad`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import explainers, validate
from .base import Compared, Document, Method, NoSettings, index_seed

__all__ = ["METHODS", "SmoothGradSettings"]


@dataclass(frozen=True)
class SmoothGradSettings:
    """SmoothGrad (:func:`attnxai.explainers.smoothgrad`): ``n_samples`` noisy copies of the
    embeddings, noise of standard deviation ``noise`` times the range of the review's embedding
    coordinates, ``summary`` of the averaged gradient (one of
    :data:`attnxai.explainers.GRADIENT_METHODS`: ``"G-l2"``, its norm, by default) and ``seed`` of
    the noise (None: the explanation's seed)."""

    n_samples: int = 50
    noise: float = 0.15
    summary: str = "G-l2"
    seed: int | None = None

    def __post_init__(self):
        validate.positive_int(self.n_samples, "n_samples")
        validate.nonnegative(self.noise, "noise")
        validate.choice(self.summary, "summary", explainers.GRADIENT_METHODS)
        if self.seed is not None:
            validate.seed(self.seed)


def _gradient(name: str):
    def compute(doc: Document, s: NoSettings) -> np.ndarray:
        summaries = doc.shared("gradient summaries", lambda: explainers.gradient_summaries(
            doc.pre.model, doc.ids_tensor, doc.target))
        return doc.tokens_of(summaries[name])

    def batch(model, ids, target, s: NoSettings, shared):
        if "gradient summaries" not in shared:
            shared["gradient summaries"] = explainers.gradient_summaries(model, ids, target)
        return shared["gradient summaries"][name]
    return compute, batch


def _smoothgrad(doc: Document, s: SmoothGradSettings) -> np.ndarray:
    grad, e = explainers.smoothgrad(doc.pre.model, doc.ids_tensor, doc.target,
                                    n_samples=s.n_samples, noise=s.noise, seed=s.seed)
    return doc.tokens_of(explainers.summarize_gradient(grad, e)[s.summary])


_GROUP = "attention+gradients"
_ABOUT = {"G-avg": "mean of the gradient's coordinates", "G-l1": "l1 norm of the gradient",
          "G-l2": "l2 norm of the gradient", "GxI": "gradient times input"}



def _summary(name: str) -> Method:
    compute, batch = _gradient(name)
    return Method(name, "token", _GROUP, NoSettings, compute, _ABOUT[name], batch=batch,
                  compared=Compared("GxI", 5) if name == "GxI" else None)


METHODS = (
    *(_summary(name) for name in _ABOUT),
    Method("SmoothGrad", "token", "SmoothGrad", SmoothGradSettings, _smoothgrad,
           "the gradient averaged over noisy copies of the embeddings (SmoothGrad), summarised "
           "by its l2 norm", study_seed=index_seed,
           recorded=("smoothgrad", "explainers.smoothgrad, seed = test_index, SmoothGradSettings "
                                   "defaults unless 'method settings' says otherwise")),
)
