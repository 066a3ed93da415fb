"""Closed forms from the paper (and beyond it), each checked against the package's explainers.

:mod:`~attnxai.theory.gradient_theorem` (Section 4; ``theory.gradient_closed_form(model, ids)``),
:mod:`~attnxai.theory.lime_text` (LIME's large-sample limit for any text model, Section 5: the
kernel and removal law, Sigma, the limits and their references, one module each),
:mod:`~attnxai.theory.lime_attention` (LIME on the attention classifier: the paper's formula and
this book's limit; built from :mod:`~attnxai.theory.lime_inputs`,
:mod:`~attnxai.theory.lime_formula`, :mod:`~attnxai.theory.lime_quadrature`,
:mod:`~attnxai.theory.lime_chain`, :mod:`~attnxai.theory.lime_independent`,
:mod:`~attnxai.theory.lime_binomial`, :mod:`~attnxai.theory.lime_kernels` (their compiled
loops, one kernel family per module) and
:mod:`~attnxai.theory.lime_symbolic`; :mod:`~attnxai.theory.lime_exhaustive` computes the limit by
brute force on short documents and maps where the closed forms hold),
:mod:`~attnxai.theory.approximations` (the table the corpus experiment compares with LIME);
deletion with repeated words, exact or certified (:mod:`~attnxai.theory.lime_repeats`, the
exact route; :mod:`~attnxai.theory.deletion_sampled`, the certified one;
:mod:`~attnxai.theory.deletion_routes` chooses; ``theory.deletion_game(pre, text, "shapley")``
says which route ran and its error);
beyond the paper (chapter 9): :mod:`~attnxai.theory.shapley_values` (Shapley and Banzhaf values of the
words, ``theory.shapley(pre, text, bow=...)``, ``theory.banzhaf``, the curves ``delta_j(p)``;
their weightings of ``p`` in :mod:`~attnxai.theory.shapley_weights`),
:mod:`~attnxai.theory.ig_theorem` (``theory.integrated_gradients(pre, text)``), their
SymPy derivations (:mod:`~attnxai.theory.shapley_symbolic`) and brute-force references
(:mod:`~attnxai.theory.shapley_exhaustive`).
"""

from . import (approximations, gradient_theorem, ig_theorem, lime_attention, lime_text,
               shapley_values)
from .approximations import APPROXIMATIONS
from .deletion_routes import GameResult, SamplingSettings, deletion_game
from .gradient_theorem import gradient_closed_form, gradient_terms, gradient_x_input
from .ig_theorem import IntegratedGradients, integrated_gradients
from .lime_attention import LimitApproximationWarning, lime_limit, lime_limit_heads, lime_paper
from .shapley_values import banzhaf, banzhaf_heads, effect_curves, shapley, shapley_heads

__all__ = ["APPROXIMATIONS", "GameResult", "IntegratedGradients", "deletion_game", "LimitApproximationWarning", "SamplingSettings", "approximations",
           "banzhaf", "banzhaf_heads", "effect_curves", "gradient_closed_form", "gradient_terms",
           "gradient_theorem", "gradient_x_input", "ig_theorem", "integrated_gradients",
           "lime_attention", "lime_limit", "lime_limit_heads", "lime_paper", "lime_text", "shapley",
           "shapley_heads", "shapley_values"]
