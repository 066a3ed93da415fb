"""The three weightings of the effect curve ``delta_j(p)`` (:mod:`attnxai.theory.shapley_values`):
Gauss-Legendre nodes on [0, 1] (:func:`gauss_nodes`; Shapley's uniform weight), LIME's
kernel-weighted law of the kept fraction ``p`` (:func:`lime_weight`), and the three weight
functions side by side (:func:`weight_functions`; chapter 9).
"""

from __future__ import annotations

import functools
import math

import numpy as np

from .. import validate
from .lime_text import DEFAULT_KERNEL_WIDTH, check_kernel_width, kernel, removal_law

__all__ = ["gauss_nodes", "lime_weight", "weight_functions"]


def gauss_nodes(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Gauss-Legendre nodes and weights on [0, 1]: (n,) each (read-only), exact for polynomials
    of degree ``2n - 1`` (``scipy.special.roots_legendre``: asymptotic formulas beyond 150 nodes,
    where numpy's eigenvalue route costs ``O(n^3)``)."""
    return _gauss_nodes(validate.positive_int(n, "n_nodes"))


@functools.lru_cache(maxsize=64)
def _gauss_nodes(n: int) -> tuple[np.ndarray, np.ndarray]:
    from scipy.special import roots_legendre

    x, w = roots_legendre(n)
    x, w = (x + 1) / 2, w / 2
    x.flags.writeable = False
    w.flags.writeable = False
    return x, w


def lime_weight(p, kernel_width: float = DEFAULT_KERNEL_WIDTH) -> np.ndarray:
    """The density on [0, 1] with which LIME's limit (``d -> infinity``, lime's uniform number of
    removed words) averages the centred effects ``delta_j(p) - mean_k delta_k(p)``:
    ``pi(p) p (1 - p)`` normalised, ``pi(p) = exp(-(100 (1 - sqrt p))^2 / (2 nu^2))``
    (:func:`attnxai.theory.lime_text.beta_from_effects`). ``nu = inf``: ``6 p (1 - p)``."""
    nu = check_kernel_width(kernel_width)
    p = np.asarray(p, dtype=float)
    if np.any((p < 0) | (p > 1)) or not np.all(np.isfinite(p)):
        raise ValueError("p must lie in [0, 1]")

    def raw(q):
        return kernel(100 * (1 - np.sqrt(q)), nu) * q * (1 - q)

    x, w = gauss_nodes(200)
    u = x                                     # p = u^2 resolves the kernel's sqrt near p = 0
    norm = float(np.sum(w * raw(u ** 2) * 2 * u))
    if not norm > 0:
        raise ValueError(f"kernel_width={nu}: lime's weights underflow on (0, 1)")
    return raw(p) / norm


def weight_functions(d: int, kernel_width: float = DEFAULT_KERNEL_WIDTH) -> dict[str, tuple]:
    """The three explainers as weights on the kept fraction, for a document of ``d`` features:
    ``{name: (p, w)}`` with ``sum w g(p)`` the explainer's average of a curve ``g``:
    ``"Shapley"`` Gauss-Legendre on [0, 1] with ``ceil(d/2)`` nodes (uniform weight, exact for
    the effects' degree ``d - 1``), ``"Banzhaf"`` the point ``p = 1/2``, ``"LIME"`` lime's law of
    the kept fraction for this ``d`` weighted by ``p (1 - p)`` (``U`` of
    :func:`~attnxai.theory.lime_quadrature.profile_weights`, applied to the centred effects)."""
    d = validate.positive_int(d, "d")
    law = removal_law(d, kernel_width)
    q = law.tilted * law.p * (1 - law.p)
    if not q.sum() > 0:
        raise ValueError(f"d={d}: lime's weighted law of p has no mass inside (0, 1)")
    return {"Shapley": gauss_nodes(max(1, math.ceil(d / 2))),
            "Banzhaf": (np.array([0.5]), np.array([1.0])),
            "LIME": (law.p.copy(), q / q.sum())}
