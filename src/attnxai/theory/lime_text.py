"""What LIME for text computes when it has seen infinitely many samples (Mardaoui & Garreau 2021).

lime's ``LimeTextExplainer`` (0.2.0.1), for a document with ``d`` features (distinct words when
``bow=True``, word positions when ``bow=False``):

* sample 0 is the document itself (``z = 1``); each of the other ``n - 1`` samples draws the number
  of removed features ``s`` uniformly from ``{1, ..., d}`` and then which ``s`` features to remove,
  uniformly (``z_j = 0`` for removed features, 1 for kept ones);
* the distance of ``z`` to the document is ``D = 100 * cosine_distance(z, 1)``, which for ``s``
  removed features is ``D(s) = 100 (1 - sqrt((d - s) / d))``;
* the sample weight is ``pi = sqrt(exp(-D^2 / nu^2)) = exp(-D^2 / (2 nu^2))``, ``nu`` the kernel
  width (25 by default);
* the coefficients come from ``Ridge(alpha=1, fit_intercept=True)`` fitted with these weights.

As ``n -> infinity`` the penalty and sample 0 wash out and the coefficients converge to

    (b0, beta)^inf = argmin E[pi (f(z) - b0 - beta^T z)^2] = Sigma^{-1} Gamma,
    Sigma = E[pi x x^T],  Gamma = E[pi x f(z)],  x = (1, z).

``Sigma`` only depends on ``d`` and ``nu`` through three numbers (:func:`moments`); its inverse has a
closed form (:func:`sigma_inverse`). With ``m = P_pi(z_j = 1)`` and the weighted effect
``Delta_j = E_pi[f | z_j = 1] - E_pi[f | z_j = 0]``, the exact finite-``d`` answer is

    beta_j = scale * (Delta_j - shrink * mean_k Delta_k)                         (:func:`beta_from_delta`)

and for a wide kernel ``scale = (3/2)(1 - 1/d)``, ``shrink = (d - 3)/(d - 1)``: the paper's 3/2 as
``d -> infinity``. Conditioning on the kept fraction ``p = (d - s)/d`` gives a second exact form,
used for the attention model (:func:`beta_from_effects`).

Everything here is float64 numpy; :func:`symbolic_moments` gives the same sums in SymPy.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .. import validate
from ..limit_settings import LimeSettings

#: lime's default kernel width for text (:class:`attnxai.limit_settings.LimeSettings`', written
#: there once).
DEFAULT_KERNEL_WIDTH = LimeSettings.kernel_width
#: Largest ``d`` for which :func:`gamma_exact` enumerates the 2^d perturbations.
MAX_ENUMERATE = 20
#: The closed forms refuse a kernel for which ``a + d b = d Var_pi(p)`` (the eigenvalue of Sigma's
#: z-block along the all-ones vector) falls below this fraction of ``a``: the error of ``Sigma^{-1} Gamma``
#: in float64 is about ``1e-15 a / (a + d b)`` of the function's scale (measured against a 40-digit
#: solve, ``tests/test_results_lime.py``), so this bound keeps every returned limit within about
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


def _regular_moments(d: int, kernel_width: float) -> Moments:
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
    mo = _regular_moments(d, kernel_width)
    d, a, b, m, a0 = mo.d, mo.a, mo.b, mo.m, mo.alpha0
    c = a + d * b  # = d Var_pi(kept fraction)
    inv = np.empty((d + 1, d + 1))
    inv[0, 0] = 1 + m * m * d / c
    inv[0, 1:] = inv[1:, 0] = -m / c
    inv[1:, 1:] = -b / (a * c)
    inv[np.arange(1, d + 1), np.arange(1, d + 1)] += 1 / a
    return inv / a0


# --------------------------------------------------------------------------- limits
def beta_from_gamma(gamma, kernel_width: float = DEFAULT_KERNEL_WIDTH) -> tuple[float, np.ndarray]:
    """``(b0, beta) = Sigma^{-1} Gamma`` for ``Gamma = (E[pi f], E[pi z_1 f], ..., E[pi z_d f])``."""
    gamma = np.asarray(gamma, dtype=float)
    if gamma.ndim != 1 or gamma.size < 2:
        raise ValueError(f"gamma must be a vector of length d + 1 >= 2, got shape {gamma.shape}")
    out = sigma_inverse(gamma.size - 1, kernel_width) @ gamma
    return float(out[0]), out[1:]


def beta_from_delta(delta, kernel_width: float = DEFAULT_KERNEL_WIDTH) -> np.ndarray:
    """Exact ``beta^inf_j = scale (Delta_j - shrink * mean(Delta))`` from the weighted effects
    ``Delta_j = E_pi[f | z_j = 1] - E_pi[f | z_j = 0]`` of a document with ``d = len(delta)``."""
    delta = np.asarray(delta, dtype=float)
    if delta.ndim != 1 or delta.size < 1:
        raise ValueError(f"delta must be a non-empty vector, got shape {delta.shape}")
    if delta.size == 1:
        raise ValueError("d = 1: a single feature is always removed, LIME's fit is degenerate")
    mo = _regular_moments(delta.size, kernel_width)
    return mo.scale * (delta - mo.shrink * delta.mean())


def three_halves(delta) -> np.ndarray:
    """The paper's large-d, wide-kernel reading ``(3/2)(Delta_j - mean Delta)``."""
    delta = np.asarray(delta, dtype=float)
    if delta.ndim != 1 or delta.size < 1:
        raise ValueError(f"delta must be a non-empty vector, got shape {delta.shape}")
    return 1.5 * (delta - delta.mean())


def beta_from_effects(law: RemovalLaw, delta_p, phi_p) -> np.ndarray:
    """Exact ``beta^inf`` from quantities conditional on the kept fraction ``p``.

    ``delta_p`` (n_nodes, d): ``delta_j(p)``, the effect of keeping rather than removing feature j
    when the kept fraction is p; ``phi_p`` (n_nodes,): ``E[f | p]``. Then

        beta_j = E_pi[p(1-p)(delta_j(p) - mean_k delta_k(p))] / E_pi[p(1-p)]
                 + Cov_pi(p, E[f|p]) / (d Var_pi(p)),

    which is exact (for the discrete law of ``s``) when ``delta_j(p) = E[f | s, z_j=1] -
    E[f | s, z_j=0] + (1/(d-1)) sum_{k != j} (that of k)``, i.e. to first order the plain effect,
    and exact for every linear f. ``d`` is the number of columns of ``delta_p``.
    """
    delta_p = np.asarray(delta_p, dtype=float)
    phi_p = np.asarray(phi_p, dtype=float)
    if delta_p.ndim != 2 or delta_p.shape[0] != law.p.size:
        raise ValueError(f"delta_p must have shape (n_nodes={law.p.size}, d), got {delta_p.shape}")
    if phi_p.shape != (law.p.size,):
        raise ValueError(f"phi_p must have shape ({law.p.size},), got {phi_p.shape}")
    d = delta_p.shape[1]
    p = law.p
    w = p * (1 - p)
    centred = delta_p - delta_p.mean(axis=1, keepdims=True)
    main = law.mean(w[:, None] * centred) / law.mean(w)
    mp = law.mean(p)
    var = law.mean((p - mp) ** 2)
    slope = law.mean((p - mp) * phi_p) / var
    return main + slope / d


def law_constants(law: RemovalLaw) -> dict[str, float]:
    """``E_pi[p]``, ``E_pi[p(1-p)]``, ``Var_pi(p)`` and ``scale = m(1-m)/E_pi[p(1-p)]``."""
    p = law.p
    m = float(law.mean(p))
    epp = float(law.mean(p * (1 - p)))
    return {"m": m, "E_p(1-p)": epp, "Var_p": float(law.mean((p - m) ** 2)), "scale": m * (1 - m) / epp}


def limit_constants(kernel_width: float = DEFAULT_KERNEL_WIDTH) -> dict[str, float]:
    """The ``d -> infinity`` constants for a kernel width, in closed form (error functions).

    With ``u = sqrt(p)`` and ``c = 5000 / nu^2``, ``E[p^k pi] = int_0^1 2 u^(2k+1) exp(-c (1-u)^2) du``.
    ``scale`` is the factor that replaces the paper's 3/2: 3/2 for a wide kernel, about 1.25 for 25.
    """
    nu = check_kernel_width(kernel_width)
    if math.isinf(nu):
        return {"m": 0.5, "E_p(1-p)": 1 / 6, "Var_p": 1 / 12, "scale": 1.5}
    c = 5000.0 / (nu * nu)
    mom = [_gauss_moment(2 * k + 1, c) * 2 for k in range(3)]
    m, e2 = mom[1] / mom[0], mom[2] / mom[0]
    epp = m - e2
    return {"m": m, "E_p(1-p)": epp, "Var_p": e2 - m * m, "scale": m * (1 - m) / epp}


def _gauss_moment(n: int, c: float) -> float:
    """``int_0^1 u^n exp(-c (1-u)^2) du`` exactly: expand ``u^n = (1 - v)^n`` with ``v = 1 - u``."""
    from scipy.special import gammainc, gamma as G

    total = 0.0
    for k in range(n + 1):
        # int_0^1 v^k exp(-c v^2) dv = Gamma((k+1)/2) P((k+1)/2, c) / (2 c^((k+1)/2))
        ik = G((k + 1) / 2) * gammainc((k + 1) / 2, c) / (2 * c ** ((k + 1) / 2))
        total += math.comb(n, k) * (-1) ** k * ik
    return float(total)


# --------------------------------------------------------------------------- brute force (small d)
def _all_z(d: int) -> np.ndarray:
    return np.array(list(itertools.product((0.0, 1.0), repeat=d)))


def perturbation_law(d: int, kernel_width: float = DEFAULT_KERNEL_WIDTH) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """All 2^d perturbations ``z`` with their probability (lime's draw) and their weight pi."""
    d = check_d(d)
    if d > MAX_ENUMERATE:
        raise ValueError(f"d={d} is too large to enumerate 2^d perturbations (max {MAX_ENUMERATE})")
    z = _all_z(d)
    s = d - z.sum(axis=1)
    prob = np.where(s >= 1, 1.0 / (d * np.array([math.comb(d, int(k)) for k in s])), 0.0)
    return z, prob, kernel(distance(d, s), kernel_width)


def gamma_exact(f: Callable[[np.ndarray], np.ndarray], d: int,
                kernel_width: float = DEFAULT_KERNEL_WIDTH) -> np.ndarray:
    """``Gamma = E[pi x f(z)]`` by enumerating the 2^d perturbations (``f`` maps (N, d) 0/1 -> (N,))."""
    z, prob, w = perturbation_law(d, kernel_width)
    y = np.asarray(f(z), dtype=float).reshape(-1)
    if y.shape != (z.shape[0],):
        raise ValueError(f"f must return one value per row of z: expected {z.shape[0]}, got {y.shape}")
    x = np.hstack([np.ones((z.shape[0], 1)), z])
    return (prob * w * y) @ x


def delta_exact(f: Callable[[np.ndarray], np.ndarray], d: int,
                kernel_width: float = DEFAULT_KERNEL_WIDTH) -> np.ndarray:
    """``Delta_j = E_pi[f | z_j = 1] - E_pi[f | z_j = 0]`` by enumeration (small d)."""
    z, prob, w = perturbation_law(d, kernel_width)
    y = np.asarray(f(z), dtype=float).reshape(-1)
    q = prob * w
    if not (np.all(q @ z > 0) and np.all(q @ (1 - z) > 0)):
        raise ValueError(f"kernel_width={kernel_width} is so narrow for d={d} features that "
                         "lime's weights underflow: a word is never kept (or never removed) with "
                         "positive weight, and its effect Delta_j is undefined (widen the kernel)")
    on = (q * y) @ z / (q @ z)
    off = (q * y) @ (1 - z) / (q @ (1 - z))
    return on - off


def beta_exact(f: Callable[[np.ndarray], np.ndarray], d: int,
               kernel_width: float = DEFAULT_KERNEL_WIDTH) -> tuple[float, np.ndarray]:
    """LIME's ``n -> infinity`` limit ``(b0, beta)`` for any ``f`` on a small document (enumeration)."""
    return beta_from_gamma(gamma_exact(f, d, kernel_width), kernel_width)


def beta_high_precision(f: Callable[[np.ndarray], np.ndarray], d: int,
                        kernel_width: float = DEFAULT_KERNEL_WIDTH, *, digits: int = 40
                        ) -> np.ndarray:
    """LIME's limit ``beta`` from its definition, the weighted normal equations ``Sigma beta =
    Gamma`` over the 2^d perturbations, solved in ``digits``-digit arithmetic (mpmath, a SymPy
    dependency): a reference for the float64 closed forms, whatever the conditioning of Sigma
    (``d`` up to 12)."""
    import mpmath

    d = check_d(d)
    if d > 12:
        raise ValueError(f"d={d}: the high-precision reference enumerates 2^d perturbations, d <= 12")
    nu = check_kernel_width(kernel_width)
    z = _all_z(d)
    y = np.asarray(f(z), dtype=float).reshape(-1)
    with mpmath.workdps(int(digits)):
        S, G = mpmath.matrix(d + 1, d + 1), mpmath.matrix(d + 1, 1)
        for row, value in zip(z, y):
            s = d - int(row.sum())
            if s == 0:                     # z = 1, sample 0: probability 0 as n -> infinity
                continue
            dist = 100 * (1 - mpmath.sqrt(mpmath.mpf(d - s) / d))
            w = mpmath.mpf(1) if math.isinf(nu) else mpmath.exp(-dist ** 2 / (2 * mpmath.mpf(nu) ** 2))
            q = w / (d * math.comb(d, s))
            x = [1, *row.astype(int).tolist()]
            for a in range(d + 1):
                G[a] += q * x[a] * mpmath.mpf(value)
                for b in range(d + 1):
                    S[a, b] += q * x[a] * x[b]
        sol = mpmath.lu_solve(S, G)
        return np.array([float(sol[j]) for j in range(1, d + 1)])


def beta_expected_ridge(gamma, f_doc: float, n: int, kernel_width: float = DEFAULT_KERNEL_WIDTH,
                        alpha: float = 1.0) -> tuple[float, np.ndarray]:
    """The ridge fit with the normal equations replaced by their expectation at ``n`` samples:
    sample 0 (``z = 1``, weight 1, value ``f_doc``) plus ``n - 1`` draws, penalty ``alpha`` on
    the coefficients only (as sklearn's ``Ridge(fit_intercept=True)``). Tends to
    :func:`beta_from_gamma` as ``n -> infinity``; shows the size of the 1/n bias."""
    gamma = np.asarray(gamma, dtype=float)
    d = gamma.size - 1
    if n < 2:
        raise ValueError(f"n must be >= 2, got {n}")
    A = (n - 1) * sigma(d, kernel_width) + 1.0  # sample 0: x0 x0^T = all ones
    A[np.arange(1, d + 1), np.arange(1, d + 1)] += alpha
    rhs = (n - 1) * gamma + f_doc
    sol = np.linalg.solve(A, rhs)
    return float(sol[0]), sol[1:]


# --------------------------------------------------------------------------- SymPy
def symbolic_moments():
    """The moments as SymPy sums in ``d``, ``s`` and ``nu`` (the kernel width).

    Returns a dict with the symbols ``d, s, nu``, the distance ``D``, the weight ``pi`` and
    ``alpha0, alpha1, alpha2`` (unevaluated ``Sum`` objects), plus their wide-kernel closed forms
    ``alpha0_wide, alpha1_wide, alpha2_wide`` (pi = 1, evaluated by SymPy).
    """
    import sympy as sp

    d = sp.Symbol("d", integer=True, positive=True)
    s = sp.Symbol("s", integer=True, positive=True)
    nu = sp.Symbol("nu", positive=True)
    D = 100 * (1 - sp.sqrt((d - s) / d))
    pi = sp.exp(-D ** 2 / (2 * nu ** 2))
    kept1 = (d - s) / d
    kept2 = (d - s) * (d - s - 1) / (d * (d - 1))
    out = {"d": d, "s": s, "nu": nu, "D": D, "pi": pi}
    for name, g in (("alpha0", 1), ("alpha1", kept1), ("alpha2", kept2)):
        out[name] = sp.Sum(pi * g, (s, 1, d)) / d
        out[name + "_wide"] = sp.factor(sp.simplify(sp.summation(g, (s, 1, d)) / d))
    return out


def symbolic_limit_constants():
    """The ``d -> infinity`` constants as closed forms in ``c = 5000 / nu^2`` (SymPy).

    With ``p = u^2`` and ``v = 1 - u``, ``E[p^k pi] = int_0^1 2 (1 - v)^(2k+1) exp(-c v^2) dv``: a
    polynomial in ``v`` against a Gaussian, integrated monomial by monomial (error functions and
    exponentials). Returns a dict with ``c``, the three moments ``I0, I1, I2`` and ``m``,
    ``E_p(1-p)``, ``Var_p``, ``scale``.
    """
    import sympy as sp

    v, c = sp.symbols("v c", positive=True)
    mono = {}

    def moment(k: int):
        poly = sp.Poly(sp.expand(2 * (1 - v) ** (2 * k + 1)), v)
        total = 0
        for (j,), coef in poly.terms():
            if j not in mono:
                mono[j] = sp.integrate(v ** j * sp.exp(-c * v ** 2), (v, 0, 1))
            total += coef * mono[j]
        return sp.simplify(total)

    I0, I1, I2 = (moment(k) for k in range(3))
    m = I1 / I0
    epp = (I1 - I2) / I0
    return {"c": c, "I0": I0, "I1": I1, "I2": I2, "m": m, "E_p(1-p)": epp,
            "Var_p": I2 / I0 - m ** 2, "scale": m * (1 - m) / epp}
