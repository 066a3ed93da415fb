"""lime's weighted ridge fit in closed form (what ``Ridge(alpha=1).fit(X, y, sample_weight=w)``
computes) from the normal equations' moments: :func:`solve_moments`. The moments come from the
integer co-occurrence counts of :mod:`~attnxai.fastlime.counts` on lime's masks, or from one
dense symmetric product (:func:`weighted_ridge`, any ``X``)."""

from __future__ import annotations

import numpy as np
import scipy.linalg

__all__ = ["solve_moments", "weighted_ridge"]


def solve_moments(gram: np.ndarray, xtw: np.ndarray, xtwy: np.ndarray, y: np.ndarray,
                  w: np.ndarray, x0: np.ndarray, alpha: float = 1.0
                  ) -> tuple[np.ndarray, float, float, float]:
    """``Ridge(alpha, fit_intercept=True).fit(X, y, sample_weight=w)`` from ``gram = X^T W X``
    (d, d), ``xtw = X^T w`` (d,) and ``xtwy = X^T W y`` (d,): centre by the weighted means
    ``xbar``, ``ybar``, solve ``(Xc^T W Xc + alpha I) beta = Xc^T W yc`` (Cholesky),
    ``intercept = ybar - xbar . beta``.

    Returns ``(coef (d,), intercept, score, local_pred)``: ``score`` is sklearn's ``score(X, y,
    sample_weight)``, the weighted R^2 ``1 - SSR / SST`` with ``SSR = SST - beta . b - alpha
    |beta|^2`` (``b = Xc^T W yc``, an identity of the normal equations, so no second pass over
    ``X``); ``local_pred`` is the prediction at ``x0`` (d,), the document's row."""
    if not (np.all(np.isfinite(y)) and np.all(np.isfinite(w))):
        raise ValueError("the model's outputs or the sample weights are not finite (NaN or inf): "
                         "the fit would be NaN")
    d = gram.shape[0]
    wsum = w.sum()
    if not wsum > 0:
        raise ValueError("every sample weight is 0 (kernel_width too small for this document): "
                         "the weighted fit is undefined")
    ybar = (w @ y) / wsum
    xbar = xtw / wsum
    a = gram - wsum * np.outer(xbar, xbar)
    a.flat[:: d + 1] += alpha
    b = xtwy - wsum * xbar * ybar
    # LAPACK's Cholesky solve called directly (scipy.linalg.solve's checks cost as much as the
    # solve at d ~ 150); a matrix it finds not positive definite goes to the general solver
    _, coef, info = scipy.linalg.lapack.dposv(a, b, lower=False)
    if info != 0:
        coef = scipy.linalg.solve(a, b, check_finite=False)
    intercept = float(ybar - xbar @ coef)
    sst = float(w @ (y - ybar) ** 2)
    ssr = max(sst - float(coef @ b) - alpha * float(coef @ coef), 0.0)
    if sst == 0.0:  # sklearn's r2_score(force_finite=True)
        score = 1.0 if ssr == 0.0 else 0.0
    else:
        score = 1.0 - ssr / sst
    local_pred = float(np.asarray(x0, dtype=np.float64) @ coef + intercept)
    return coef, intercept, score, local_pred


def weighted_ridge(X: np.ndarray, y: np.ndarray, weights: np.ndarray, alpha: float = 1.0, *,
                   chunk_size: int = 8192) -> tuple[np.ndarray, float, float, float]:
    """``sklearn.linear_model.Ridge(alpha, fit_intercept=True).fit(X, y, sample_weight=weights)``
    for any ``X`` (n, d) (bool masks are fine), ``y`` and ``weights`` (n,): :func:`solve_moments`
    of the moments formed by one symmetric product of the augmented ``[sqrt(W) X, sqrt(w),
    sqrt(W) y]`` (its blocks are ``X^T W X``, ``X^T w`` and ``X^T W y``), ``chunk_size`` rows at a
    time (numpy calls syrk for ``a.T @ a``); ``local_pred`` is the prediction for ``X[0]``."""
    X = np.asarray(X)
    y = np.asarray(y, dtype=np.float64)
    w = np.asarray(weights, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D, got shape {X.shape}")
    n, d = X.shape
    if y.shape != (n,) or w.shape != (n,):
        raise ValueError(f"X is {X.shape} but y is {y.shape} and weights {w.shape}")
    sw = np.sqrt(w)
    gram = np.zeros((d + 2, d + 2))
    for start in range(0, n, chunk_size):
        stop = min(start + chunk_size, n)
        xs = np.empty((stop - start, d + 2))
        np.multiply(X[start:stop], sw[start:stop, None], out=xs[:, :d], dtype=np.float64)
        xs[:, d] = sw[start:stop]
        xs[:, d + 1] = sw[start:stop] * y[start:stop]
        gram += xs.T @ xs
    return solve_moments(gram[:d, :d], gram[d, :d], gram[d + 1, :d], y, w, X[0], alpha)
