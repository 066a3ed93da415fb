"""What the closed forms are checked against: LIME's limit by enumerating the ``2^d`` perturbations
(small ``d``), the same in 40-digit arithmetic, the expected ridge at finite ``n``, and the moments
and constants in SymPy.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable

import numpy as np

from .law import DEFAULT_KERNEL_WIDTH, MAX_ENUMERATE, check_d, check_kernel_width, distance, kernel
from .limits import beta_from_gamma
from .sigma import sigma


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
    exponentials): ``J_j = int_0^1 v^j exp(-c v^2) dv`` by SymPy for ``j = 0, 1``, and above by
    parts, ``2 c J_j = (j - 1) J_(j-2) - exp(-c)`` (the derivative of ``v^(j-1) exp(-c v^2)``,
    checked here, integrated over [0, 1]; SymPy's own integration of ``J_4`` takes a minute).
    Returns a dict with ``c``, the three moments ``I0, I1, I2`` and ``m``, ``E_p(1-p)``,
    ``Var_p``, ``scale``.
    """
    import sympy as sp

    v, c = sp.symbols("v c", positive=True)
    gauss = sp.exp(-c * v ** 2)
    mono = {}

    def monomial(j: int):
        if j not in mono:
            if j < 2:
                mono[j] = sp.integrate(v ** j * gauss, (v, 0, 1))
            else:
                by_parts = sp.diff(v ** (j - 1) * gauss, v) - ((j - 1) * v ** (j - 2) - 2 * c * v ** j) * gauss
                if sp.simplify(by_parts) != 0:              # pragma: no cover - an identity
                    raise ArithmeticError(f"integration by parts fails for v^{j}")
                mono[j] = ((j - 1) * monomial(j - 2) - sp.exp(-c)) / (2 * c)
        return mono[j]

    def moment(k: int):
        poly = sp.Poly(sp.expand(2 * (1 - v) ** (2 * k + 1)), v)
        return sp.simplify(sum(coef * monomial(j) for (j,), coef in poly.terms()))

    I0, I1, I2 = (moment(k) for k in range(3))
    m = I1 / I0
    epp = (I1 - I2) / I0
    return {"c": c, "I0": I0, "I1": I1, "I2": I2, "m": m, "E_p(1-p)": epp,
            "Var_p": I2 / I0 - m ** 2, "scale": m * (1 - m) / epp}
