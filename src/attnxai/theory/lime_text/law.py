"""LIME's ingredients for text: the checks of ``d`` and the kernel width, the distance and kernel
of ``s`` removed features, and the law of the kept fraction under the kernel
(:class:`RemovalLaw`), for ``d`` features or in the continuous limit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ... import validate
from ...limit_settings import LimeSettings

#: lime's default kernel width for text (:class:`attnxai.limit_settings.LimeSettings`', written
#: there once).
DEFAULT_KERNEL_WIDTH = LimeSettings.kernel_width
#: Largest ``d`` for which :func:`gamma_exact` enumerates the 2^d perturbations.
MAX_ENUMERATE = 20
#: The closed forms refuse a kernel for which ``a + d b = d Var_pi(p)`` (the eigenvalue of Sigma's
#: z-block along the all-ones vector) falls below this fraction of ``a``: the error of ``Sigma^{-1} Gamma``
#: in float64 is about ``1e-15 a / (a + d b)`` of the function's scale (measured against a 40-digit
#: solve, ``tests/results/test_results_lime.py``), so this bound keeps every returned limit within about
#: 1e-6 of it. For lime's default width 25 every ``d >= 2`` passes; the narrowest accepted width
#: is about 15 for ``d = 2``, 1.8 for ``d = 8``, 0.27 for ``d = 50`` and 0.05 for ``d = 255``.
SIGMA_RTOL = 1e-9
WIDE = math.inf


# --------------------------------------------------------------------------- checks
def check_d(d) -> int:
    """``d`` must be a positive integer (the number of features of the document)."""
    if isinstance(d, bool) or not isinstance(d, (int, np.integer)):
        if isinstance(d, (float, np.floating)) and float(d).is_integer():
            d = int(d)
        else:
            raise TypeError(f"d (number of features) must be an integer, got {d!r}")
    if d < 1:
        raise ValueError(f"d (number of features) must be >= 1, got {d}")
    return int(d)


def check_kernel_width(kernel_width) -> float:
    """A kernel width is a positive number; ``math.inf`` means the wide-kernel limit (pi = 1)
    (:func:`attnxai.validate.kernel_width`, the one validator)."""
    return validate.kernel_width(kernel_width, allow_inf=True)


# --------------------------------------------------------------------------- lime's ingredients
def distance(d: int, s) -> np.ndarray:
    """lime's distance ``100 * cosine_distance(z, 1)`` for ``s`` removed features out of ``d``."""
    d = check_d(d)
    s = np.asarray(s, dtype=float)
    if np.any(s < 0) or np.any(s > d):
        raise ValueError(f"s (removed features) must lie in [0, d={d}]")
    return 100.0 * (1.0 - np.sqrt((d - s) / d))


def kernel(dist, kernel_width: float = DEFAULT_KERNEL_WIDTH) -> np.ndarray:
    """lime's weight ``sqrt(exp(-D^2 / nu^2)) = exp(-D^2 / (2 nu^2))``; 1 for ``nu = inf``."""
    nu = check_kernel_width(kernel_width)
    dist = np.asarray(dist, dtype=float)
    if math.isinf(nu):
        return np.ones_like(dist)
    if nu * nu == 0.0:                  # the square underflows: only D = 0 keeps a weight
        return (dist == 0).astype(float)
    return np.sqrt(np.exp(-dist ** 2 / (nu * nu)))      # nu * nu: inf, not OverflowError


@dataclass(frozen=True)
class RemovalLaw:
    """The law of the number of removed features for samples ``1..n-1``.

    ``s`` = 1..d, ``p = (d - s)/d`` the kept fraction, ``weight`` = pi(s), ``prob`` = 1/d (lime's
    uniform draw), ``tilted`` = pi(s) / sum pi: the law of ``s`` once the samples are weighted.
    """

    d: int
    kernel_width: float
    s: np.ndarray
    p: np.ndarray
    weight: np.ndarray
    prob: np.ndarray
    tilted: np.ndarray

    def mean(self, values) -> float | np.ndarray:
        """``E_pi[g(p)]`` for values ``g`` given at the nodes (first axis)."""
        return np.tensordot(self.tilted, np.asarray(values, dtype=float), axes=(0, 0))


def removal_law(d: int, kernel_width: float = DEFAULT_KERNEL_WIDTH) -> RemovalLaw:
    """The exact law of ``s`` and of the kept fraction ``p`` for a document of ``d`` features."""
    d, nu = check_d(d), check_kernel_width(kernel_width)
    s = np.arange(1, d + 1, dtype=float)
    w = kernel(distance(d, s), nu)
    if not w.sum() > 0:
        raise ValueError(f"kernel_width={nu} is so small that every perturbation of a {d}-feature "
                         "document gets weight 0 (underflow): LIME's fit is undefined")
    prob = np.full(d, 1.0 / d)
    return RemovalLaw(d, nu, s, (d - s) / d, w, prob, w / w.sum())


def continuous_law(kernel_width: float = DEFAULT_KERNEL_WIDTH, n_nodes: int = 64) -> RemovalLaw:
    """The ``d -> infinity`` law of the kept fraction ``p`` on [0, 1], as a quadrature rule.

    ``p`` has density proportional to ``pi(p) = exp(-(100 (1 - sqrt p))^2 / (2 nu^2))``. The nodes are
    Gauss-Legendre in ``u = sqrt(p)`` (``dp = 2u du``), exact for polynomials in ``u`` times the
    smooth weight. Returned as a :class:`RemovalLaw` with ``d = 0`` and ``s = 1 - p``.
    """
    nu = check_kernel_width(kernel_width)
    if n_nodes < 2:
        raise ValueError(f"n_nodes must be >= 2, got {n_nodes}")
    x, wq = np.polynomial.legendre.leggauss(int(n_nodes))
    u = (x + 1) / 2
    p = u ** 2
    dens = 2 * u * kernel(100 * (1 - u), nu) * wq / 2
    return RemovalLaw(0, nu, 1 - p, p, kernel(100 * (1 - u), nu), wq / 2 * 2 * u, dens / dens.sum())
