"""``Sigma = E[pi x x^T]``: its three moments (:func:`moments`), the matrix, its closed-form
inverse, and the narrowest kernel width whose ``Sigma`` the closed forms accept.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .law import DEFAULT_KERNEL_WIDTH, SIGMA_RTOL, check_d, removal_law


# --------------------------------------------------------------------------- moments and Sigma
@dataclass(frozen=True)
class Moments:
    """``alpha0 = E[pi]``, ``alpha1 = E[pi z_j]``, ``alpha2 = E[pi z_j z_k]`` (j != k), and the
    derived constants of the closed forms.

    ``m = alpha1/alpha0`` (weighted P(z_j = 1)), ``a = (alpha1 - alpha2)/alpha0`` and
    ``b = alpha2/alpha0 - m^2`` (the weighted covariance of z is ``a I + b 1 1^T``),
    ``scale = m (1 - m) / a`` and ``shrink = d b / (a + d b)`` (:func:`beta_from_delta`).
    """

    d: int
    kernel_width: float
    alpha0: float
    alpha1: float
    alpha2: float

    @property
    def m(self) -> float:
        return self.alpha1 / self.alpha0

    @property
    def a(self) -> float:
        return (self.alpha1 - self.alpha2) / self.alpha0

    @property
    def b(self) -> float:
        return self.alpha2 / self.alpha0 - self.m ** 2

    @property
    def scale(self) -> float:
        return self.m * (1 - self.m) / self.a

    @property
    def shrink(self) -> float:
        return self.d * self.b / (self.a + self.d * self.b)


def moments(d: int, kernel_width: float = DEFAULT_KERNEL_WIDTH) -> Moments:
    """Exact weighted moments of lime's perturbations (sample 0 left out), as finite sums over s.

    ``E[pi] = (1/d) sum_s pi(s)``, ``E[pi z_j] = (1/d) sum_s pi(s) (d-s)/d`` and
    ``E[pi z_j z_k] = (1/d) sum_s pi(s) (d-s)(d-s-1) / (d(d-1))`` (0 when d = 1).
    """
    law = removal_law(d, kernel_width)
    d = law.d
    k = d - law.s  # kept features
    a0 = float(np.mean(law.weight))
    a1 = float(np.mean(law.weight * k / d))
    a2 = float(np.mean(law.weight * k * (k - 1) / (d * (d - 1)))) if d > 1 else 0.0
    return Moments(d, law.kernel_width, a0, a1, a2)


def wide_constants(d: int) -> dict[str, float]:
    """The closed forms for ``nu = inf`` (pi = 1): ``m = (d-1)/(2d)``, ``a = (d+1)/(6d)``,
    ``b = (d-3)(d+1)/(12 d^2)``, ``scale = (3/2)(1 - 1/d)``, ``shrink = (d-3)/(d-1)``."""
    d = check_d(d)
    out = {"m": (d - 1) / (2 * d), "a": (d + 1) / (6 * d), "b": (d - 3) * (d + 1) / (12 * d * d),
           "scale": 1.5 * (1 - 1 / d)}
    out["shrink"] = (d - 3) / (d - 1) if d > 1 else 0.0
    return out


def sigma(d: int, kernel_width: float = DEFAULT_KERNEL_WIDTH) -> np.ndarray:
    """``Sigma = E[pi x x^T]`` with ``x = (1, z)``: (d+1, d+1), intercept first.

    ``[[alpha0, alpha1 1^T], [alpha1 1, (alpha1 - alpha2) I + alpha2 1 1^T]]``.
    """
    mo = moments(d, kernel_width)
    d = mo.d
    S = np.empty((d + 1, d + 1))
    S[0, 0] = mo.alpha0
    S[0, 1:] = S[1:, 0] = mo.alpha1
    S[1:, 1:] = mo.alpha2
    S[np.arange(1, d + 1), np.arange(1, d + 1)] = mo.alpha1
    return S


def regular_moments(d: int, kernel_width: float) -> Moments:
    """:func:`moments`, refused (``ValueError``) when ``a + d b = d Var_pi(p)`` is lost to rounding
    against ``a``: the kernel then puts all the weight on one number of removed features, Sigma is
    numerically singular and ``shrink`` would be rounding noise."""
    mo = moments(d, kernel_width)
    if not mo.a + mo.d * mo.b > SIGMA_RTOL * mo.a:
        raise ValueError(f"Sigma is numerically singular for d={mo.d}, kernel_width={mo.kernel_width}: "
                         "the kernel puts all the weight on one number of removed features")
    return mo


def narrowest_kernel_width(d: int) -> float:
    """The narrowest kernel width for which the closed forms accept ``d`` features (the
    :data:`SIGMA_RTOL` condition), by bisection to 1e-9 relative; narrower ones are refused."""
    d = check_d(d)
    if d < 2:
        raise ValueError("d = 1: Sigma is singular for every kernel width")

    def accepted(nu: float) -> bool:
        try:
            mo = moments(d, nu)
        except ValueError:                       # every weight underflows
            return False
        return mo.a + d * mo.b > SIGMA_RTOL * mo.a

    lo, hi = 1e-4, 1e4
    while hi / lo > 1 + 1e-9:
        mid = math.sqrt(lo * hi)
        lo, hi = (lo, mid) if accepted(mid) else (mid, hi)
    return hi


def sigma_inverse(d: int, kernel_width: float = DEFAULT_KERNEL_WIDTH) -> np.ndarray:
    """``Sigma^{-1}`` in closed form (Schur complement + Sherman-Morrison), no matrix inversion.

    With ``C = a I + b 1 1^T`` (the weighted covariance of z), ``C^{-1} = (I - b/(a + d b) 1 1^T)/a``
    and ``Sigma^{-1} = (1/alpha0) [[1 + m^2 d/(a + d b), -m/(a + d b) 1^T],
    [-m/(a + d b) 1, C^{-1}]]``. Wide kernel: the z-block is exactly
    ``(6d/(d+1)) (I - (d-3)/(d(d-1)) 1 1^T)``, about ``6 I - (6/d) 1 1^T`` for large d.
    """
    if check_d(d) == 1:
        raise ValueError("Sigma is singular for d=1 (every perturbation removes the only feature)")
    mo = regular_moments(d, kernel_width)
    d, a, b, m, a0 = mo.d, mo.a, mo.b, mo.m, mo.alpha0
    c = a + d * b  # = d Var_pi(kept fraction)
    inv = np.empty((d + 1, d + 1))
    inv[0, 0] = 1 + m * m * d / c
    inv[0, 1:] = inv[1:, 0] = -m / c
    inv[1:, 1:] = -b / (a * c)
    inv[np.arange(1, d + 1), np.arange(1, d + 1)] += 1 / a
    return inv / a0
