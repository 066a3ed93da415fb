"""LIME's ``n -> infinity`` coefficients from the weighted effects: ``Sigma^{-1} Gamma``, the
finite-``d`` form ``scale (Delta - shrink mean Delta)``, the paper's 3/2, the form conditioned on
the kept fraction (:func:`beta_from_effects`) and the constants of the limits.
"""

from __future__ import annotations

import math

import numpy as np

from .law import DEFAULT_KERNEL_WIDTH, RemovalLaw, check_kernel_width
from .sigma import regular_moments, sigma_inverse


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
    mo = regular_moments(delta.size, kernel_width)
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
