"""The paper's reported numbers, in one table: chapters, metrics and tests cite them from here.

Lopardo, Precioso, Garreau, *Attention Meets Post-hoc Interpretability: A Mathematical
Perspective*, ICML 2024 (PMLR 235), arXiv:2402.03485, and the authors' public code
(``gianluigilopardo/attention_meets_xai``). Each entry says what was measured and where it comes
from; no number of the paper is typed anywhere else in the package or the book.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ARXIV", "AUTHORS_CODE", "FIGURE1_LOGITS", "FIGURE1_TEXT", "REPORTED", "Reported",
           "TITLE", "reported"]

TITLE = "Attention Meets Post-hoc Interpretability: A Mathematical Perspective"
ARXIV = "2402.03485"
AUTHORS_CODE = "https://github.com/gianluigilopardo/attention_meets_xai"

#: The gradient example of the paper (Figure 1).
FIGURE1_TEXT = "attention based explanations are popular but questionable"
#: The authors' model's logits on that text (negative, positive), "about" these values.
FIGURE1_LOGITS = (-0.64, 0.58)


@dataclass(frozen=True)
class Reported:
    """One number the paper reports: ``value`` (and ``std`` where a spread is given)."""

    key: str
    value: float | None
    what: str
    source: str
    std: float | None = None
    unit: str = ""

    def __str__(self) -> str:
        if self.value is None:
            return self.what
        if self.unit == "%":
            return f"{100 * self.value:.2f} %"
        return f"{self.value:g}" + (f" ± {self.std:g}" if self.std is not None else "")


REPORTED: dict[str, Reported] = {r.key: r for r in (
    Reported("single_layer_accuracy", 0.8019,
             "test accuracy of the single-layer, 6-head classifier on IMDb (25,000 test reviews)",
             "the authors' saved model", unit="%"),
    Reported("lime_approx_error", 0.808,
             "norm-2 distance between LIME's coefficients and the theorem's approximation, "
             "mean ± std over the test set", "paper, Section 5 experiments", std=0.219),
    Reported("multilayer_accuracy", 0.8222,
             "test accuracy of a 6-layer, 6-head classifier on IMDb (same split)",
             "paper, Appendix F (not available to us)", unit="%"),
    Reported("first_layer_alpha_lime_corr", 0.672,
             "|Pearson correlation| between first-layer alpha-avg and LIME's coefficients, "
             "absolute values", "paper, multi-layer experiments"),
    Reported("skip_connection_effect", None,
             "skip connections added to the single-layer model: no clear effect on accuracy",
             "paper, limitations / Appendix F"),
    Reported("gradient_theorem_error", None,
             "gradient theorem against automatic differentiation: equal up to rounding",
             "paper, Section 4"),
)}


def reported(key: str) -> Reported:
    """The entry ``key`` of :data:`REPORTED` (a clear error for an unknown key)."""
    try:
        return REPORTED[key]
    except KeyError:
        raise KeyError(f"no reported number {key!r}; known: {sorted(REPORTED)}") from None
