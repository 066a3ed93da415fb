"""The perturbed documents and the model's probability of each (:class:`Perturber`; the fast
single-layer backend and the plain forward pass), and :func:`probability`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from .. import validate
from ..model.single_layer import AttentionClassifier
from .rankings import BACKENDS, PERTURBATIONS, document, model_of



# ====================================================================== the model on perturbations
def softmax(logits: np.ndarray, target: int) -> np.ndarray:
    z = logits - logits.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e[:, target] / e.sum(axis=1)


def _sigmoid(a: np.ndarray) -> np.ndarray:
    """``1 / (1 + exp(-a))`` in float64, without overflow; the same bits for the same ``a``."""
    out = np.empty_like(a)
    pos = a >= 0
    out[pos] = 1.0 / (1.0 + np.exp(-a[pos]))
    e = np.exp(a[~pos])
    out[~pos] = e / (1.0 + e)
    return out


def drops_of(full: np.ndarray, others: np.ndarray, target: int) -> np.ndarray:
    """``p(x) - p(x')`` for the logits ``full`` (C,) of x and ``others`` (m, C) of the documents
    x'. Two classes: from the margins ``z = f_c - f_other`` as ``sigmoid(z) - sigmoid(z')``, taken
    on the side of the smaller probabilities (``sigmoid(-z') - sigmoid(-z)`` when ``z + z' > 0``):
    accurate where the probabilities are close to 1 (no cancellation of two numbers near 1), and
    odd in the margins bit for bit (the other class's drops are exactly these negated: the same
    four arrays of sigmoids, swapped). Other numbers of classes: the difference of the softmaxes."""
    if others.shape[1] != 2:
        return softmax(full[None], target)[0] - softmax(others, target)
    z = np.full(len(others), full[target] - full[1 - target])
    zs = others[:, target] - others[:, 1 - target]
    return np.where(z + zs > 0, _sigmoid(-zs) - _sigmoid(-z), _sigmoid(z) - _sigmoid(zs))


class Perturber:
    """``p(target | x perturbed)`` for keep-masks over a document's word positions.

    ``keep`` is ``(m, n)`` bool, True = the word at that position stays; ``[CLS]`` always stays.
    ``perturbation="replace"`` puts UNK at the other positions; ``"delete"`` removes them (the
    kept words move forward; every-word-removed is the document ``[CLS]`` alone).
    ``backend="fast"``: the float64 projections of a single-layer
    :class:`~attnxai.model.single_layer.AttentionClassifier` (:mod:`attnxai.fastlime.evaluate`, one evaluator
    per class); ``"model"``: ``model(ids)`` on the collated batch, ``batch_size`` documents per
    call; ``"auto"``: fast when possible (single-layer model without the skip connection,
    attention logits in range).
    ``backend_used`` says which ran.
    """

    def __init__(self, model: Any, ids: Any, *, perturbation: str, target: int = 1,
                 backend: str = "auto", batch_size: int = 512):
        self.model = model_of(model)
        self.ids = document(self.model, ids)
        self.n = self.ids.size - 1
        self.perturbation = validate.choice(perturbation, "perturbation", PERTURBATIONS)
        self.target = validate.target(target, self.model.n_classes)
        validate.choice(backend, "backend", BACKENDS)
        self.batch_size = validate.positive_int(batch_size, "batch_size")
        self.calls = 0
        self._evaluators = None
        if backend in ("auto", "fast"):
            reason = self._prepare_fast()
            if reason and backend == "fast":
                raise ValueError(f"backend='fast' is not possible: {reason}")
        self.backend_used = "fast" if self._evaluators is not None else "model"

    def _prepare_fast(self) -> str:
        from ..fastlime.evaluate import DeleteEvaluator, ReplaceEvaluator
        from ..model.network import Projections

        if not isinstance(self.model, AttentionClassifier):
            return (f"the projections are derived for the single-layer AttentionClassifier, not "
                    f"{type(self.model).__name__}")
        if self.model.skip:
            return "the projections describe the model without the skip connection (skip=True)"
        proj = Projections.of(self.model)
        evs = []
        for c in range(self.model.n_classes):
            tab = proj.document(self.ids, c)
            evs.append(ReplaceEvaluator(tab) if self.perturbation == "replace"
                       else DeleteEvaluator(tab, np.arange(self.n)))
        if not all(ev.ok for ev in evs):
            return "the attention logits of this document span too wide a range (exp underflow)"
        self._evaluators = evs
        return ""

    def __call__(self, keep: np.ndarray) -> np.ndarray:
        """``p(target | x perturbed)`` for each row of ``keep``: (m,) float64."""
        return softmax(self.logits(keep), self.target)

    def logits(self, keep: np.ndarray) -> np.ndarray:
        """The model's logits on each perturbed document, in float64: (m, n_classes)."""
        keep = np.asarray(keep)
        if keep.ndim != 2 or keep.shape[1] != self.n or keep.dtype != bool:
            raise ValueError(f"keep must be an (m, {self.n}) bool array, got {keep.dtype} "
                             f"{keep.shape}")
        self.calls += 1
        if self._evaluators is not None:
            return np.stack([ev(keep) for ev in self._evaluators], axis=1)
        return self._model_logits(keep)

    def _model_logits(self, keep: np.ndarray) -> np.ndarray:
        m = self.model
        words = self.ids[1:]
        out = np.empty((len(keep), m.n_classes))
        with torch.no_grad():
            for s in range(0, len(keep), self.batch_size):
                block = keep[s:s + self.batch_size]
                if self.perturbation == "replace":
                    body = np.where(block, words[None, :], m.unk_id)
                    ids = torch.as_tensor(np.concatenate(
                        [np.full((len(block), 1), self.ids[0]), body], axis=1))
                else:
                    ids = m.collate([[int(self.ids[0])] + words[row].tolist() for row in block])
                out[s:s + len(block)] = m(ids).double().numpy()
        return out


def probability(model: Any, ids: Any, target: int = 1) -> float:
    """``p(x)``: the model's probability of class ``target`` on one document (float64 softmax of
    the logits; ``[CLS]`` alone is a document too)."""
    model = model_of(model)
    arr = document(model, ids, words=False)
    target = validate.target(target, model.n_classes)
    with torch.no_grad():
        logits = model(torch.as_tensor(arr)[None]).double().numpy()
    return float(softmax(logits, target)[0])
