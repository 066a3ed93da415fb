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

The room's modules: :mod:`~attnxai.theory.lime_text.law` (checks, distance, kernel, the removal
law), :mod:`~attnxai.theory.lime_text.sigma` (the moments, Sigma and its inverse),
:mod:`~attnxai.theory.lime_text.limits` (the limits from the effects) and
:mod:`~attnxai.theory.lime_text.reference` (enumeration, high precision, SymPy).
"""

from __future__ import annotations

from .law import (DEFAULT_KERNEL_WIDTH, MAX_ENUMERATE, SIGMA_RTOL, WIDE, RemovalLaw, check_d,
                  check_kernel_width, continuous_law, distance, kernel, removal_law)
from .sigma import (Moments, moments, narrowest_kernel_width, sigma, sigma_inverse,
                    wide_constants)
from .limits import (beta_from_delta, beta_from_effects, beta_from_gamma, law_constants,
                     limit_constants, three_halves)
from .reference import (beta_exact, beta_expected_ridge, beta_high_precision, delta_exact,
                        gamma_exact, perturbation_law, symbolic_limit_constants, symbolic_moments)

__all__ = ["DEFAULT_KERNEL_WIDTH", "MAX_ENUMERATE", "Moments", "RemovalLaw", "SIGMA_RTOL", "WIDE",
           "beta_exact", "beta_expected_ridge", "beta_from_delta", "beta_from_effects",
           "beta_from_gamma", "beta_high_precision", "check_d", "check_kernel_width",
           "continuous_law", "delta_exact", "distance", "gamma_exact", "kernel", "law_constants",
           "limit_constants", "moments", "narrowest_kernel_width", "perturbation_law",
           "removal_law", "sigma", "sigma_inverse", "symbolic_limit_constants", "symbolic_moments",
           "three_halves", "wide_constants"]
