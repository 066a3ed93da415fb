"""What a perturbation removes: the settings' names and defaults, the inputs checked (the model,
the document, a score vector), the ranking a rationale is cut from and the rationales' sizes
(module docstring of :mod:`attnxai.perturbation`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import torch

from .. import validate
from ..model.interface import ClassifierBase
from ..model.textmodel import Pretrained

PERTURBATIONS = ("replace", "delete")
SELECTIONS = ("abs", "positive", "signed")
#: Tie orders of a ranking: earlier position first (default), later position first (ferret's).
TIES = ("position", "ferret")
#: The rules the book compares: largest |score|, and ferret's default (positive scores only).
DEFAULT_SELECTIONS = ("abs", "positive")
#: ferret's rationale fractions q (``np.arange(0.1, 1.1, 0.1)``), as tenths.
QUANTILES = tuple(k / 10 for k in range(1, 11))
#: Fractions of the words removed (deletion) or kept (insertion) along a curve.
CURVE_FRACTIONS = np.arange(21) / 20
BACKENDS = ("auto", "fast", "model")
#: The per-(explainer, perturbation, selection) numbers of :class:`Faithfulness`.
METRICS = ("comprehensiveness", "sufficiency", "tau_loo", "deletion_auc", "insertion_auc")
#: Two leave-one-out drops this close (absolute: they are differences of probabilities) tie in
#: tau-LOO: 2^17 units of 2^-53 (module docstring, "tau-LOO and ties").
LOO_TIE = 2.0 ** -36


# ====================================================================== inputs
def model_of(model: Any) -> ClassifierBase:
    if isinstance(model, Pretrained):
        model = model.model
    if not isinstance(model, ClassifierBase):
        raise TypeError(f"model must be an attnxai Pretrained or classifier (ClassifierBase), got "
                        f"{type(model).__name__}")
    return model


def document(model: ClassifierBase, ids: Any, *, words: bool = True) -> np.ndarray:
    """One document's ids as a 1-D int64 array, ``[CLS]`` first, checked by the model.

    Accepts a 1-D sequence/array/tensor or a (1, T) tensor; trailing ``pad_id`` (``padding="mask"``)
    is dropped. With ``padding="unk"`` pass the unpadded ids (``pre.vocab.encode(text)``): UNK
    padding cannot be told from UNK words.
    """
    t = ids if isinstance(ids, torch.Tensor) else torch.as_tensor(np.asarray(ids))
    if t.dtype.is_floating_point or t.dtype == torch.bool:
        raise TypeError(f"ids must be integer token ids, got {t.dtype}")
    if t.dim() == 2 and t.shape[0] == 1:
        t = t[0]
    if t.dim() != 1:
        raise ValueError(f"give one document: ids of shape (T,) or (1, T), got {tuple(t.shape)}")
    t = t.long()
    model.ids_and_mask(t[None])                  # the model's own checks: [CLS], range, padding
    arr = t.numpy().astype(np.int64)
    if model.padding == "mask":
        arr = arr[arr != model.pad_id]
    if words and arr.size < 2:
        raise ValueError("the document has no word after [CLS]: nothing to remove or keep")
    return arr


def score_vector(name: str, scores: Any, n: int) -> np.ndarray:
    if isinstance(scores, torch.Tensor):
        if scores.is_complex():
            raise TypeError(f"scores of {name!r} must be real numbers, got a complex tensor")
        s = scores.detach().cpu().double().numpy()
    else:
        s = validate.real_scores(scores, f"scores of {name!r}")
    if s.shape != (n,):
        raise ValueError(f"scores of {name!r} must have one entry per word position ({n}, [CLS] "
                         f"excluded), got shape {s.shape}")
    if not np.all(np.isfinite(s)):
        raise ValueError(f"scores of {name!r} hold NaN or inf at positions "
                         f"{np.flatnonzero(~np.isfinite(s))[:5].tolist()}: every word needs a score")
    return s


def choices(values: str | Iterable[str], name: str, options: tuple[str, ...]) -> tuple[str, ...]:
    if isinstance(values, str):
        values = (values,)
    out = tuple(validate.choice(v, name, options) for v in values)
    if not out:
        raise ValueError(f"{name}: give at least one of {options}")
    return tuple(dict.fromkeys(out))


# ====================================================================== rankings and sizes
def ranking(scores: Any, selection: str = "positive", *, ties: str = "position") -> np.ndarray:
    """The word positions (0-based, [CLS] excluded) in the order a rationale takes them.

    ``"positive"``: positions with a score > 0, largest first; ``"abs"``: all, largest ``|score|``
    first; ``"signed"``: all, largest score first. ``ties`` (:data:`TIES`): ``"position"``, the
    earlier of two equal keys first; ``"ferret"``, the later first (module docstring).
    """
    validate.choice(selection, "selection", SELECTIONS)
    validate.choice(ties, "ties", TIES)
    s = validate.real_scores(scores)
    if s.ndim != 1:
        raise ValueError(f"scores must be 1-D (one per word position), got shape {s.shape}")
    key = np.abs(s) if selection == "abs" else s
    if ties == "position":
        order = np.argsort(-key, kind="stable")
    else:                                       # ferret: ascending and stable, then reversed
        order = np.argsort(key, kind="stable")[::-1]
    if selection == "positive":
        order = order[s[order] > 0]
    return order


def rationale_sizes(n: int) -> np.ndarray:
    """ferret's rationale sizes ``k_q = int(q * n)``, q = 0.1, ..., 1.0 (computed exactly as
    ``(10 q) * n // 10``, which equals ferret's float expression for every n <= 20,000)."""
    n = validate.positive_int(n, "n")
    return np.array([(k * n) // 10 for k in range(1, 11)], dtype=np.int64)


def curve_sizes(n: int, fractions: Sequence[float] = CURVE_FRACTIONS) -> np.ndarray:
    """``floor(f n)`` for the curve fractions ``f`` (exact for multiples of 1/20)."""
    n = validate.positive_int(n, "n")
    f = np.asarray(fractions, dtype=np.float64)
    if f.ndim != 1 or f.size < 2 or np.any((f < 0) | (f > 1)) or np.any(np.diff(f) <= 0):
        raise ValueError("fractions must increase within [0, 1] (at least two)")
    return np.floor(f * n + 1e-9).astype(np.int64)


def aopc_sizes(n_ranked: int, n: int) -> list[int]:
    """The effective sizes ferret averages over: k_q capped by the ranking's length, k = 0 and a
    rationale equal to the previous one (same prefix length) left out."""
    out: list[int] = []
    for k in rationale_sizes(n):
        kk = int(min(k, n_ranked))
        if kk == 0 or (out and out[-1] == kk):
            continue
        out.append(kk)
    return out
