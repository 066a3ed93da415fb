"""Quadrature rules of the LIME closed forms: ``1/N`` as an integral over lambda, and the law of
lime's kept fraction ``p`` folded into a few nodes.

**lambda.** ``1/N = int_0^inf exp(-lambda N) d lambda``; with ``lambda = e^y`` the integrand
``e^{y - N e^y}`` is entire and bounded in a strip of half-width pi/2, and the trapezoidal rule in
``y`` with step ``h`` has a relative error about ``2 |Gamma(1 + 2 pi i / h)|``, i.e.
``sqrt(8 pi^2 / h) exp(-pi^2 / h)``, uniformly in ``N``: 7e-6 at ``h = log 2``, 6e-12 at
``h = log(2)/2``, far below rounding for smaller steps. What the rules reach in float64, the ends
and the fold below included, is :data:`RULE_ERRORS` (measured: 9.9e-6 at ``ksub=1``, 9.2e-12 at
2, then 4.7e-11 to 6.0e-10 for ``ksub`` 3 to 8, where rounding, not the step, dominates). A rule
must cover every configuration's ``N``, from ``n_min`` to ``n_max``:

* **upper end**: stop once ``lambda n_min >= 20`` (``exp(-20) = 2e-9`` relative);
* **lower end**: below ``lambda_0 = 0.002 / n_max`` every ``lambda N <= 0.002``, the integrand
  ``F(lambda) = E[M exp(-lambda N)]`` is a polynomial of degree 3 to within
  ``(lambda N)^4 / 4!``, and the (infinitely many) trapezoid nodes below ``lambda_0`` are folded
  into the four lowest nodes through the Lagrange interpolant of ``F`` there
  (:func:`_tail_weights`). The folded nodes cost nothing; the profile rule's fold changes its
  answers by at most 1e-11 relative (``tests/theory/test_theory_lime_chain.py``). Without the fold the
  rule needs ``log(n_max / 1e-10)`` more nodes, about 25 at ``h = 0.7``.

:func:`lambda_rule_profile` keeps the nodes of the original implementation (``y`` from
``log(1e-10 / n_max)`` by steps ``h``: the same floating-point values) and folds its lowest ones,
so that its answers equal the original ones to 1e-11 (tested). :func:`lambda_rule_doubling` uses steps
``h = log(2) / ksub`` so that every node is twice the one ``ksub`` nodes before: the dynamic
programme of deletion then updates its ``exp(-lambda G)`` table by squaring instead of calling
``exp`` (:mod:`attnxai.theory.lime_kernels`).

**p.** The profile form of LIME's limit (:func:`attnxai.theory.lime_text.beta_from_effects`)
averages ``delta_j(p)`` and ``Phi(p)`` over lime's kernel-weighted law of the kept fraction.
Everything is smooth in ``p``: for ``law="discrete"`` with more than ``n_nodes`` values of ``p``
the effects are evaluated at ``n_nodes`` Chebyshev-Lobatto points and interpolated (barycentric)
to the ``d`` values; the interpolation and the law's averages are folded into two weight
vectors ``U``, ``V`` (:func:`profile_weights`).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from .lime_text import SIGMA_RTOL, RemovalLaw, continuous_law, removal_law

__all__ = ["LAWS", "RULE_ERRORS", "LambdaRule", "ProfileWeights", "lambda_rule_doubling",
           "lambda_rule_profile", "profile_law", "profile_weights"]

#: Laws of the kept fraction for the profile form (``"lime"``, the chain's exact law, is
#: handled by :mod:`attnxai.theory.lime_chain`).
LAWS = ("lime", "discrete", "continuous")
#: Below ``X_LOW / n_max`` the trapezoid nodes are folded into four interpolation nodes.
X_LOW = 0.002
#: The rule stops once ``lambda n_min >= X_HIGH``.
X_HIGH = 20.0
#: The rules refuse ranges ``n_max / n_min`` beyond this (the configurations' softmax
#: denominators would not all be representable in float64 at one scale).
MAX_RANGE = 1e250
#: A rule never has more nodes than this (a clear error instead of a huge allocation).
MAX_NODES = 4000
#: The rules' relative error on ``1/N`` in float64 (``|rule(N) N - 1|``), the worst over ``N`` on
#: 2,000-point geometric grids of five ranges ``[n_min, n_max]`` (0.3 to 4e4, 1 to 300, 1e-3 to
#: 1e6, 0.05 to 2e3, 2 to 2.5), rounded up to two digits: ``{("doubling", ksub) or ("profile",
#: step): error}``. ``tests/theory/test_theory_lime_chain.py`` measures them again. An expectation
#: ``E[M/N]`` inherits this relative error (its weights are positive); a value computed from
#: several (differences, a linear solve) may lose more: the values' own errors are measured
#: against a 40-digit reference in ``book/data/accuracy_bounds.csv``.
RULE_ERRORS = {("doubling", 1): 9.9e-6, ("doubling", 2): 9.2e-12, ("doubling", 3): 4.7e-11,
               ("doubling", 4): 6.9e-11, ("doubling", 8): 6.0e-10, ("profile", 0.7): 1.2e-5,
               ("profile", 0.25): 8.9e-11}


@dataclass(frozen=True)
class LambdaRule:
    """Nodes ``lam`` and weights ``wts`` with ``1/N ~ sum_l wts[l] exp(-lam[l] N)`` for every
    ``N`` in ``[n_min, n_max]``; ``ksub`` > 0 when ``lam[l + ksub] == 2 lam[l]`` exactly."""

    lam: np.ndarray
    wts: np.ndarray
    ksub: int = 0

    def with_offset(self, g0: float) -> np.ndarray:
        """The weights times ``exp(-lambda g0)`` (a constant part ``g0`` of every ``N``)."""
        return self.wts * np.exp(-self.lam * g0)


def _check_range(n_min: float, n_max: float) -> None:
    if not (np.isfinite(n_min) and np.isfinite(n_max)) or not n_min > 0:
        raise ValueError(
            "the attention scores of this model span too wide a range: some configuration's "
            f"softmax denominator is not representable in float64 (n_min={n_min!r}, "
            f"n_max={n_max!r} at a common scale, exp under- or overflow); the closed forms "
            "cannot integrate it (is a weight matrix scaled by a huge factor?)")
    if n_max / n_min > MAX_RANGE:
        raise ValueError(
            f"the attention scores of this model span too wide a range: softmax denominators "
            f"differ by a factor {n_max / n_min:.3g} > {MAX_RANGE:.0e} between configurations "
            "(hard attention); the lambda integral would need thousands of nodes")


def _count(nodes: int) -> int:
    if nodes > MAX_NODES:
        raise ValueError(f"the lambda rule would need {nodes} nodes (> {MAX_NODES}): the "
                         "attention scores span too wide a range for the closed forms")
    return nodes


def _tail_weights(u_nodes: np.ndarray, u_tail: np.ndarray, w_tail: np.ndarray) -> np.ndarray:
    """``sum_k w_tail[k] l_i(u_tail[k])`` for the Lagrange basis ``l_i`` on ``u_nodes``."""
    out = np.zeros(u_nodes.size)
    for i in range(u_nodes.size):
        li = np.ones_like(u_tail)
        for m in range(u_nodes.size):
            if m != i:
                li = li * (u_tail - u_nodes[m]) / (u_nodes[i] - u_nodes[m])
        out[i] = float(np.sum(w_tail * li))
    return out


def lambda_rule_profile(n_min: float, n_max: float, step: float) -> LambdaRule:
    """The original implementation's nodes ``exp(y)``, ``y`` from ``log(1e-10 / n_max)`` to
    ``log(40 / n_min)`` by ``step``, with those below ``X_LOW / n_max`` folded into the four
    lowest remaining ones (trapezoid weights ``step * lambda``)."""
    _check_range(n_min, n_max)
    lo, hi = math.log(1e-10 / n_max), math.log(40.0 / n_min)
    _count(int((hi - lo) / step) + 2)
    lam = np.exp(np.arange(lo, hi + step, step))
    wts = step * lam
    first = int(np.searchsorted(lam, X_LOW / n_max))
    first = min(first, max(lam.size - 4, 0))
    if first == 0:
        return LambdaRule(lam, wts)
    keep = lam[first:]
    w = wts[first:].copy()
    u0 = keep[0]
    k = min(4, keep.size)
    w[:k] += _tail_weights(keep[:k] / u0, lam[:first] / u0, wts[:first])
    return LambdaRule(keep, w)


@functools.lru_cache(maxsize=64)
def _doubling_tail(ksub: int) -> tuple[float, ...]:
    """Tail weights (in units of ``lambda_0``) of the nodes ``lambda_0 2^(-k/ksub)``, k >= 1,
    folded into the four lowest nodes ``lambda_0 2^(i/ksub)``."""
    h = math.log(2.0) / ksub
    u_tail = np.exp(-h * np.arange(1, int(80 / h) + 1))
    u_nodes = np.exp(h * np.arange(4))
    return tuple(_tail_weights(u_nodes, u_tail, h * u_tail))


def lambda_rule_doubling(n_min: float, n_max: float, ksub: int = 1) -> LambdaRule:
    """Nodes ``lambda_0 2^(l/ksub)`` (step ``h = log(2)/ksub``) from ``lambda_0 = X_LOW / n_max``
    until ``lambda n_min >= X_HIGH``, the infinite tail below ``lambda_0`` folded in; node
    ``l + ksub`` is exactly twice node ``l``."""
    _check_range(n_min, n_max)
    if int(ksub) < 1:
        raise ValueError(f"ksub must be >= 1, got {ksub!r}")
    ksub = int(ksub)
    h = math.log(2.0) / ksub
    lam0 = X_LOW / n_max
    # in logs: X_HIGH / n_min alone overflows for a subnormal n_min
    span = math.log(X_HIGH / X_LOW) + math.log(n_max) - math.log(n_min)
    n = _count(max(int(math.ceil(span / h)) + 1, 4))
    first = lam0 * np.exp(h * np.arange(ksub))
    lam = np.array([first[l % ksub] * 2.0 ** (l // ksub) for l in range(n)])
    wts = h * lam
    wts[:4] += lam0 * np.array(_doubling_tail(ksub))
    return LambdaRule(lam, wts, ksub)


def profile_law(d: int, kernel_width: float, law: str, n_nodes: int) -> RemovalLaw:
    """lime's law of the kept fraction: exact for ``d`` (``"discrete"``) or ``d -> infinity``
    (``"continuous"``, ``n_nodes`` Gauss nodes)."""
    if law == "discrete":
        return removal_law(d, kernel_width)
    if law == "continuous":
        return continuous_law(kernel_width, n_nodes)
    raise ValueError(f"law must be 'discrete' or 'continuous' for the profile form, got {law!r}")


def _barycentric_matrix(nodes: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``B[q, i]``: the polynomial through ``(nodes, y)`` at ``x[q]`` is ``B[q] @ y``, for
    Chebyshev-Lobatto ``nodes`` (barycentric weights ``(-1)^i``, halved at both ends, in closed
    form: no random ordering, the same bits in every process)."""
    n = nodes.size
    w = (-1.0) ** np.arange(n)
    w[0] *= 0.5
    w[-1] *= 0.5
    B = np.zeros((x.size, n))
    for q, xq in enumerate(x):
        diff = xq - nodes
        hit = np.flatnonzero(diff == 0)
        if hit.size:
            B[q, hit[0]] = 1.0
            continue
        c = w / diff
        B[q] = c / np.sum(c)
    return B


@dataclass(frozen=True)
class ProfileWeights:
    """Nodes ``p`` and weights: ``beta_j = sum_i U_i (delta_j(p_i) - mean_k delta_k(p_i)) +
    sum_i V_i Phi(p_i) / d``."""

    law: RemovalLaw
    nodes: np.ndarray
    U: np.ndarray
    V: np.ndarray
    B: np.ndarray   # (law values, nodes): interpolation from the nodes to the law's values of p


def gauss_rule(x: np.ndarray, w: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Gauss quadrature for the discrete measure ``sum_q w_q delta(x_q)``: ``n`` nodes and weights
    exact for polynomials of degree ``2n - 1`` (Stieltjes procedure with normalised
    polynomials, then the Jacobi matrix's eigen-decomposition)."""
    w = w / w.sum()
    prev = np.zeros_like(x)
    cur = np.ones_like(x)
    a, b = np.zeros(n), np.zeros(n)
    norm_prev = 1.0
    for k in range(n):
        nrm = float(np.sum(w * cur * cur))
        a[k] = float(np.sum(w * x * cur * cur)) / nrm
        b[k] = nrm / norm_prev if k else 0.0
        nxt = (x - a[k]) * cur - (b[k] * prev if k else 0.0)
        prev, cur, norm_prev = cur, nxt, nrm
        scale = math.sqrt(float(np.sum(w * cur * cur))) or 1.0   # keep the polynomials O(1)
        prev, cur, norm_prev = prev / scale, cur / scale, norm_prev / scale ** 2
    J = np.diag(a) + np.diag(np.sqrt(np.maximum(b[1:], 0.0)), 1) + np.diag(np.sqrt(np.maximum(b[1:], 0.0)), -1)
    vals, vecs = np.linalg.eigh(J)
    return vals, vecs[0] ** 2


@functools.lru_cache(maxsize=256)
def profile_weights(d: int, kernel_width: float, law: str = "discrete",
                    n_nodes: int = 25, rule: str = "chebyshev") -> ProfileWeights:
    """The nodes in ``p`` and the weights ``U``, ``V`` of the profile form (module docstring).
    ``rule="chebyshev"``: Chebyshev-Lobatto nodes and interpolation (the original
    implementation's); ``rule="gauss"``: Gauss nodes of lime's weighted law of ``p`` (exact for
    polynomials of degree ``2 n_nodes - 1``: fewer nodes for the same accuracy). Refuses a kernel
    so narrow that the weighted law of ``p`` degenerates (underflow)."""
    lw = profile_law(d, kernel_width, law, n_nodes)
    p, q = lw.p, lw.tilted
    if rule == "gauss" and law == "discrete" and p.size > n_nodes:
        nodes, v = gauss_rule(p, q, n_nodes)
        mp = float(np.sum(q * p))
        var = float(np.sum(q * (p - mp) ** 2))
        epp = float(np.sum(q * p * (1 - p)))
        if not (var > SIGMA_RTOL * max(epp, 1e-300) and epp > 0):
            raise ValueError(f"kernel_width={kernel_width} is so narrow for d={d} features that "
                             "lime's weights underflow: LIME's limit is undefined (widen it)")
        U = v * nodes * (1 - nodes) / epp
        V = v * (nodes - mp) / var
        return ProfileWeights(lw, np.ascontiguousarray(nodes), U, V, np.full((p.size, n_nodes), np.nan))
    if law == "discrete" and p.size > n_nodes:
        lo, hi = p.min(), p.max()
        nodes = lo + (hi - lo) * (1 - np.cos(np.pi * np.arange(n_nodes) / (n_nodes - 1))) / 2
        B = _barycentric_matrix(nodes, p)                                  # (d_values, n_nodes)
    else:
        nodes, B = p, np.eye(p.size)
    w = p * (1 - p)
    mp = float(np.sum(q * p))
    var = float(np.sum(q * (p - mp) ** 2))
    epp = float(np.sum(q * w))
    if not (var > SIGMA_RTOL * max(epp, 1e-300) and epp > 0):
        raise ValueError(
            f"kernel_width={kernel_width} is so narrow for d={d} features that lime's weights of "
            "all but (almost) one number of removed features underflow to 0: the weighted law "
            "of the kept fraction has no variance and LIME's limit is undefined (widen the "
            "kernel)")
    U = np.array([float(np.sum(q * w * B[:, i])) for i in range(nodes.size)]) / epp
    V = np.array([float(np.sum(q * (p - mp) * B[:, i])) for i in range(nodes.size)]) / var
    return ProfileWeights(lw, np.ascontiguousarray(nodes), U, V, B)
