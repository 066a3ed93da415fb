"""Shapley and Banzhaf values by brute force: the model run on all ``2^d`` coalitions of a short
document (deleted or replaced as lime does, :func:`attnxai.theory.lime_exhaustive.perturbed_outputs`)
and the defining sums. The reference of :mod:`attnxai.theory.shapley_values`'s closed forms in the tests
and in chapter 9 (``d`` up to :data:`MAX_PLAYERS`)."""

from __future__ import annotations

import math

import numpy as np

from ..model.single_layer import AttentionClassifier
from .lime_exhaustive import perturbed_outputs
from .lime_inputs import resolve

__all__ = ["MAX_PLAYERS", "banzhaf_from_table", "coalitions", "exact_banzhaf", "exact_shapley",
           "game_table", "shapley_from_table"]

#: The largest number of features the brute force enumerates (2^16 model evaluations).
MAX_PLAYERS = 16


def coalitions(d: int) -> np.ndarray:
    """(2^d, d) 0/1: row ``b`` keeps feature ``j`` when bit ``j`` of ``b`` is set."""
    if not 1 <= d <= MAX_PLAYERS:
        raise ValueError(f"the brute force enumerates 2^d coalitions for 1 <= d <= {MAX_PLAYERS}, "
                         f"got d={d}")
    b = np.arange(2 ** d)
    return ((b[:, None] >> np.arange(d)) & 1).astype(np.float64)


def game_table(model: AttentionClassifier, ids, features=None, *, bow: bool = True,
               target: int = 1, head: int | None = None) -> tuple[np.ndarray, list]:
    """``(v, features)``: the logit ``target`` (or one head's output) on every coalition, ``v[b]``
    for the coalition of :func:`coalitions` row ``b``, and the features (lime's, or those given)."""
    model, arr, feats = resolve(model, ids, bow, features)
    Z = coalitions(len(feats))
    return perturbed_outputs(model, arr, feats, Z, bow, target, head), feats


def _marginals(v: np.ndarray) -> tuple[int, np.ndarray, np.ndarray]:
    v = np.asarray(v, dtype=np.float64)
    d = int(round(math.log2(v.size)))
    if v.ndim != 1 or 2 ** d != v.size:
        raise ValueError(f"a game table has 2^d entries, got shape {v.shape}")
    b = np.arange(v.size)
    size = np.array([bin(x).count("1") for x in b])
    return d, b, size


def shapley_from_table(v) -> np.ndarray:
    """(d,) the Shapley values ``sum_{S not containing j} s!(d-1-s)!/d! [v(S+j) - v(S)]``."""
    d, b, size = _marginals(v)
    w = np.array([math.factorial(s) * math.factorial(d - 1 - s) / math.factorial(d)
                  if s < d else 0.0 for s in range(d + 1)])
    out = np.zeros(d)
    for j in range(d):
        out_j = (b >> j) & 1 == 0
        S = b[out_j]
        out[j] = float(np.sum(w[size[S]] * (v[S | (1 << j)] - v[S])))
    return out


def banzhaf_from_table(v) -> np.ndarray:
    """(d,) the Banzhaf values ``2^-(d-1) sum_{S not containing j} [v(S+j) - v(S)]``."""
    d, b, _ = _marginals(v)
    out = np.zeros(d)
    for j in range(d):
        S = b[(b >> j) & 1 == 0]
        out[j] = float(np.mean(v[S | (1 << j)] - v[S]))
    return out


def exact_shapley(model: AttentionClassifier, ids, features=None, *, bow: bool = True,
                  target: int = 1) -> np.ndarray:
    """Shapley values by enumerating the 2^d coalitions (``d <= 16``)."""
    return shapley_from_table(game_table(model, ids, features, bow=bow, target=target)[0])


def exact_banzhaf(model: AttentionClassifier, ids, features=None, *, bow: bool = True,
                  target: int = 1) -> np.ndarray:
    """Banzhaf values by enumerating the 2^d coalitions (``d <= 16``)."""
    return banzhaf_from_table(game_table(model, ids, features, bow=bow, target=target)[0])
