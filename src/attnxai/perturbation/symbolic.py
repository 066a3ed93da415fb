"""The measures in SymPy (:func:`symbolic_measures`): the same rankings, sizes and averaging as
:func:`attnxai.perturbation.evaluate`, in the probabilities of the perturbed documents; and the sign
of a tau-LOO tie (:func:`loo_tie_sign`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .measures import rationale_measures
from .rankings import CURVE_FRACTIONS, LOO_TIE, curve_sizes, ranking



def symbolic_measures(scores: Any, *, selection: str = "positive", ties: str = "position",
                      fractions: Sequence[float] = CURVE_FRACTIONS, p: Any = None
                      ) -> dict[str, Any]:
    """Every measure of one explanation as a SymPy expression of the model's probabilities on the
    perturbed documents: the definitions of :func:`evaluate`, with the same rankings, sizes and
    rules, on a document small enough to enumerate (chapter 7 derives its propositions with it).

    ``scores``: one number per word position (``n`` of them); ``p``: a function from a kept set
    (a ``frozenset`` of 0-based positions; ``[CLS]`` always stays) to the probability of the
    explained class on that document, by default the symbol ``p_{...}`` of the set. The result
    has ``comprehensiveness``, ``sufficiency``, ``deletion_curve``, ``insertion_curve`` (object
    arrays), ``deletion_auc``, ``insertion_auc`` (trapezoidal rule at exact rational fractions),
    ``n_rationales``, ``tau_loo`` (Kendall's tau-b of the scores and the leave-one-out drops:
    ``sum_{i<j} sign(w_i - w_j) S(l_i - l_j)`` over the square root of the product of the numbers
    of untied pairs, ``S`` the sign with :data:`LOO_TIE`'s ties, :func:`loo_tie_sign`; NaN when
    every pair of scores ties, or, for numbers, every pair of drops) and ``symbols`` (kept set ->
    its expression). Its drops are differences of ``p``; :func:`evaluate` computes a two-class
    model's from the logit margins, equal to rounding (module docstring).
    """
    import sympy as sp

    s = np.asarray(scores, dtype=np.float64)
    n = s.size
    if s.ndim != 1 or n < 1 or n > 12:
        raise ValueError(f"give 1 to 12 scores (a document small enough to enumerate), got "
                         f"shape {s.shape}")
    names = {}

    def prob(kept: frozenset) -> Any:
        if kept not in names:
            names[kept] = p(kept) if p is not None else sp.Symbol(
                "p_{" + (",".join(str(t + 1) for t in sorted(kept)) or "\\emptyset") + "}")
        return names[kept]

    full = frozenset(range(n))
    order = ranking(s, selection, ties=ties)
    p_without = {k: prob(full - frozenset(order[:k].tolist())) for k in range(order.size + 1)}
    p_only = {k: prob(frozenset(order[:k].tolist())) for k in range(order.size + 1)}
    fr = np.array([sp.nsimplify(f) for f in fractions], dtype=object)
    out = rationale_measures(prob(full), p_without, p_only, order.size, n,
                              curve_sizes(n, fractions), fr)
    # exact numbers: np.trapezoid halves with a float, and ferret's 0 and 1 are floats
    for k in ("comprehensiveness", "sufficiency", "deletion_auc", "insertion_auc"):
        out[k] = sp.nsimplify(out[k], rational=True)
    loo = [prob(full) - prob(full - {t}) for t in range(n)]
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n)]
    sw = [int(np.sign(s[i] - s[j])) for i, j in pairs]
    S = loo_tie_sign()
    sl = [S(loo[i] - loo[j]) for i, j in pairs]
    untied_w, untied_l = sum(v * v for v in sw), sum(b ** 2 for b in sl)
    out["tau_loo"] = (sp.nan if untied_w == 0 or untied_l == 0 else    # (0: numbers, all tied)
                      sum(a * b for a, b in zip(sw, sl)) / sp.sqrt(untied_w * untied_l))
    out["symbols"] = dict(names)
    return out


_TIE_SIGN: Any = None


def loo_tie_sign() -> Any:
    """The SymPy function ``S(x)``: ``sign(x)``, and 0 where ``|x| <=`` :data:`LOO_TIE` (the ties
    of tau-LOO's drops). It evaluates on numbers, stays symbolic otherwise, and is odd
    (``S(-x) = -S(x)``), which is all the propositions of chapter 7 use."""
    global _TIE_SIGN
    if _TIE_SIGN is None:
        import sympy as sp

        class tie_sign(sp.Function):
            """sign with the ties of tau-LOO's drops (|x| <= LOO_TIE: 0)"""

            @classmethod
            def eval(cls, x):
                if x.is_number and x.is_real:
                    return sp.Integer(0) if abs(float(x)) <= LOO_TIE else sp.sign(x)
                if x.could_extract_minus_sign():
                    return -cls(-x)
                return None

            def _latex(self, printer, exp=None):
                arg = printer._print(self.args[0])
                base = r"\operatorname{sign}_{\delta}\left(%s\right)" % arg
                return base if exp is None else f"{base}^{{{exp}}}"

        _TIE_SIGN = tie_sign
    return _TIE_SIGN
