"""lime's perturbations and their weights, exactly: masks drawn with lime's own ``RandomState``
calls, in lime's order, and the kernel weights bitwise as sklearn computes them for lime."""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from .. import budget, validate
from . import kernels

__all__ = ["BACKENDS", "NarrowKernelWarning", "count_weights", "kernel_weights",
           "narrow_kernel_note", "sample", "sample_masks", "weights_by_count"]


class NarrowKernelWarning(UserWarning):
    """LIME's kernel is so narrow that every perturbed sample weighs 0: the fit sees only the
    document and every coefficient is 0 (lime 0.2.0.1 gives the same zeros, silently)."""

BACKENDS = ("auto", "numba", "numpy")


def sample_masks(d: int, num_samples: int, random_state: Any = None, *,
                 backend: str = "auto") -> tuple[np.ndarray, str]:
    """lime's perturbation masks: ``((num_samples, d) bool, backend used)``, True = feature kept,
    row 0 all True.

    Consumes ``random_state`` exactly as lime's ``LimeTextExplainer.__data_labels_distances``:
    ``randint(1, d + 1, num_samples - 1)``, then one ``choice(range(d), size, replace=False)`` per
    sample, i.e. a Fisher-Yates shuffle of ``arange(d)`` by numpy's legacy ``random_interval``
    whose first ``size`` entries are dropped. ``backend="numba"`` runs the same MT19937 stream in
    compiled code from the state's key and position and writes the advanced state back;
    ``"numpy"`` calls ``RandomState.shuffle`` row by row; ``"auto"`` uses numba when installed
    (bit-identical results, tested).
    """
    masks, _, used = sample(d, num_samples, random_state, backend=backend)
    return masks, used


def sample(d: int, num_samples: int, random_state: Any = None, *,
           backend: str = "auto") -> tuple[np.ndarray, np.ndarray, str]:
    """:func:`sample_masks` and each mask's number of kept features: ``(masks (num_samples, d)
    bool, kept (num_samples,) int64, backend used)``, ``kept = d - `` lime's drawn size (``d`` for
    row 0), so nobody counts the masks again."""
    d = validate.positive_int(d, "d")
    num_samples = validate.num_samples(num_samples)
    validate.choice(backend, "backend", BACKENDS)
    budget.check(num_samples * (d + 24), f"{num_samples} lime masks of {d} features",
                 "lower num_samples, or raise the budget")
    return draw(d, num_samples, validate.random_state(random_state), backend)


def draw(d: int, num_samples: int, rs: np.random.RandomState,
         backend: str) -> tuple[np.ndarray, np.ndarray, str]:
    """:func:`sample` for checked arguments (a caller that has checked the memory budget for
    more than the masks, as :class:`~attnxai.fastlime.problem.Problem` does)."""
    masks, sizes, used = kernels.sample_masks_sizes(d, num_samples, rs, backend=backend)
    kept = np.empty(num_samples, dtype=np.int64)
    kept[0] = d
    np.subtract(d, sizes, out=kept[1:])
    return masks, kept, used


@functools.lru_cache(maxsize=512)
def _cosine_distance_by_count(d: int) -> np.ndarray:
    """100 * cosine distance between a 0/1 vector with k ones and the all-ones vector, k = 0..d,
    computed the way sklearn does for lime's sparse matrix (so the result is bitwise lime's):
    rows normalised by division, products summed one by one, ``1 - S`` clipped to [0, 2]."""
    k = np.arange(1, d + 1, dtype=np.float64)
    term = (1.0 / np.sqrt(k)) * (1.0 / np.sqrt(float(d)))            # (d,)
    sim = np.zeros(d + 1)
    block = max(1, 4_000_000 // d)                                     # bounded memory
    for lo in range(0, d, block):
        hi = min(d, lo + block)
        partial = np.cumsum(np.broadcast_to(term[lo:hi, None], (hi - lo, hi)), axis=1)
        sim[lo + 1:hi + 1] = partial[np.arange(hi - lo), np.arange(lo, hi)]  # k = lo+1..hi
    dist = np.clip(1.0 - sim, 0.0, 2.0) * 100
    dist.setflags(write=False)
    return dist


def kernel_weights(masks: np.ndarray, kernel_width: float) -> np.ndarray:
    """lime's sample weights ``sqrt(exp(-D^2 / width^2))``, ``D = 100 * cosine distance to row 0``
    (which must be all ones, as lime's is): (num_samples,)."""
    kept = masks.view(np.uint8).sum(axis=1, dtype=np.int64) if masks.dtype == bool \
        else np.count_nonzero(masks, axis=1)
    return count_weights(kept, masks.shape[1], kernel_width)


def count_weights(kept: np.ndarray, d: int, kernel_width: float) -> np.ndarray:
    """:func:`kernel_weights` of masks of ``d`` features from their rows' numbers of kept
    features ``kept`` (n,) (what lime's distance depends on): (n,), the same floats. The width is
    checked here (:func:`attnxai.validate.kernel_width`); a run whose width was checked when its
    :class:`~attnxai.limit_settings.LimeSettings` was built calls :func:`weights_by_count`."""
    return weights_by_count(kept, d, validate.kernel_width(kernel_width))


def weights_by_count(kept: np.ndarray, d: int, kernel_width: float) -> np.ndarray:
    """LIME's kernel: :func:`count_weights` of a width already checked (a float > 0)."""
    dist = _cosine_distance_by_count(d)[kept]
    # width * width, not width ** 2: the same float (both correctly rounded), but inf instead of
    # an OverflowError beyond 1.3e154, where every weight is 1 (lime itself raises there)
    w2 = kernel_width * kernel_width
    if w2 == 0.0:                      # below 1.5e-162 the square underflows: only the document
        return (kept == d).astype(np.float64)      # (every feature kept) keeps a weight
    return np.sqrt(np.exp(-(dist ** 2) / w2))


def narrow_kernel_note(weights: np.ndarray, masks: np.ndarray, kernel_width: float) -> str:
    """'' if some perturbed sample (rows 1..) has a weight above 0; else why every coefficient
    is 0 and the narrowest width that gives the nearest sample a weight."""
    if weights.size < 2 or np.any(weights[1:] > 0):
        return ""
    d = masks.shape[1]
    nearest = float(_cosine_distance_by_count(d)[d - 1]) if d > 1 else 100.0
    # sqrt(exp(-D^2 / w^2)) is 0 in float64 once D^2 / w^2 > about 1490
    needed = nearest / math.sqrt(1490.0)
    return (f"kernel_width={kernel_width:g} is so narrow that every perturbed sample weighs 0 "
            f"(the nearest is at lime's distance {nearest:.3g}, whose weight underflows): the fit "
            "sees the document alone and every coefficient is 0, as lime 0.2.0.1 gives them "
            f"too. A width above about {needed:.2g} gives the nearest samples a weight; lime's "
            "default is 25")
