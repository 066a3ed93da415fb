"""The reference for deletion with repeated words (lime's ``bow=True``), by enumeration: the model
run on every one of the ``2^d`` perturbed documents (its torch forward pass, which neither route
uses) and the defining sums of the Shapley value, the effects (Banzhaf at p = 1/2) and lime's
n -> infinity fit, written out here. It shares no code with :mod:`attnxai.theory.lime_repeats`,
:mod:`~attnxai.theory.deletion_routes` or :mod:`~attnxai.theory.deletion_sampled`
(``tests/theory/test_theory_deletion_exact.py``, ``tests/results/test_results_deletion.py``)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import torch


def words_of(ids: np.ndarray) -> list[np.ndarray]:
    """The distinct ids' positions (1-based), in order of first occurrence."""
    seen: dict[int, list[int]] = {}
    for pos, x in enumerate(np.asarray(ids)[1:].tolist(), start=1):
        seen.setdefault(x, []).append(pos)
    return [np.array(v) for v in seen.values()]


def game(model, ids, feats, target: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """(Z (2^d, d) 0/1, v (2^d,)): the logit ``target`` with the words of each row kept, the others
    deleted with every occurrence."""
    ids = np.asarray(ids)
    d = len(feats)
    Z = np.array(list(itertools.product((0, 1), repeat=d)))
    docs = []
    for z in Z:
        keep = np.ones(ids.size, bool)
        for j in np.flatnonzero(z == 0):
            keep[feats[j]] = False
        docs.append(ids[keep].tolist())
    with torch.no_grad():
        v = model(model.collate(docs))[:, target].double().numpy()
    return Z, v


def ref_shapley(Z, v):
    """The Shapley value by its definition: ``sum_S |S|! (d-1-|S|)! / d! [v(S + j) - v(S)]``."""
    d = Z.shape[1]
    key = {tuple(z): i for i, z in enumerate(Z)}
    out = np.zeros(d)
    for i, z in enumerate(Z):
        s = int(z.sum())
        for j in np.flatnonzero(z == 0):
            zj = z.copy()
            zj[j] = 1
            out[j] += math.factorial(s) * math.factorial(d - 1 - s) / math.factorial(d) * (
                v[key[tuple(zj)]] - v[i])
    return out


def ref_effects(Z, v, p):
    """(delta_j(p) = E[v | j kept] - E[v | j dropped] under independent removal at p, E v)."""
    prob = np.prod(np.where(Z == 1, p, 1 - p), axis=1)
    on = (prob * v) @ Z / (prob @ Z)
    off = (prob * v) @ (1 - Z) / (prob @ (1 - Z))
    return on - off, float(prob @ v)


def ref_lime(Z, v, nu):
    """lime's n -> infinity fit: the number s of removed words uniform in 1..d, the removed set
    uniform given s, weights sqrt(exp(-D^2 / nu^2)) with D = 100 x the cosine distance to the
    document; weighted least squares with an intercept."""
    d = Z.shape[1]
    kept = Z.sum(axis=1)
    s = d - kept
    prob = np.where(s >= 1, 1.0 / d / np.array([math.comb(d, int(x)) for x in s]), 0.0)
    cos = np.where(kept > 0, kept / np.sqrt(np.maximum(kept, 1) * d), 0.0)
    dist = 100 * (1 - cos)
    pi = np.ones_like(dist) if math.isinf(nu) else np.sqrt(np.exp(-dist ** 2 / nu ** 2))
    w = np.sqrt(prob * pi)
    X = np.hstack([np.ones((len(Z), 1)), Z])
    return np.linalg.lstsq(X * w[:, None], v * w, rcond=None)[0][1:]


def reference(value: str, Z, v, nu: float = 25.0, p: float = 0.5):
    """The reference of ``theory.deletion_game``'s ``value``: ``"shapley"``, ``"banzhaf"``,
    ``"lime"`` (kernel width ``nu``) or ``"effects"`` (``[E v, delta_1(p), ...]``)."""
    if value == "shapley":
        return ref_shapley(Z, v)
    if value == "banzhaf":
        return ref_effects(Z, v, 0.5)[0]
    if value == "effects":
        delta, mean = ref_effects(Z, v, p)
        return np.concatenate([[mean], delta])
    return ref_lime(Z, v, nu)
