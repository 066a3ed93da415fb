"""Reading chapter 7's committed faithfulness study (``book/data/faithfulness_*.csv``) and the
kinds of score its sentences sort the explainers into.

* :class:`Summary`: one number of the summary table (a mean or an end of its 95 % interval), an
  interval, the main table of means with their intervals, and the comprehensiveness rows of a
  summary (committed or live).
* :func:`curve_at` and :func:`share_negative`: a point of the mean deletion/insertion curves and a
  share of the attention-signs table.
* :func:`unsigned_methods`: the explainers whose scores are never negative (attention, the
  gradient's norms), read off their scores; :func:`one_pass_methods`: the explainers computed
  from one forward and backward pass, read off the registry's groups the chapter passes in.

A selection that matches no row, or more than one, raises ``KeyError`` naming it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from functools import partial

import numpy as np
import pandas as pd

from .tables import mean_interval

#: the registry's group of the methods read from one forward and backward pass
ONE_PASS_GROUP = "attention+gradients"


def _item(rows: pd.DataFrame, column: str, what: str) -> float:
    if len(rows) != 1:
        raise KeyError(f"{len(rows)} rows for {what} (expected one)")
    return float(rows[column].item())


class Summary:
    """The summary table of a faithfulness study (``XF.read_summary``: columns target, group,
    perturbation, selection, metric, method, ties, mean, ci_low, ci_high), read for ``methods``."""

    def __init__(self, summary: pd.DataFrame, methods: Sequence[str]):
        self.summary, self.methods = summary, list(methods)

    def value(self, metric: str, method: str, target: str = "1", group: str = "all",
              perturbation: str = "delete", selection: str = "positive",
              what: str = "mean") -> float:
        """One number: ``what`` is ``mean``, ``ci_low`` or ``ci_high`` (tau-LOO has no rule)."""
        if what not in ("mean", "ci_low", "ci_high"):
            raise ValueError(f"what: 'mean', 'ci_low' or 'ci_high', not {what!r}")
        S = self.summary
        sel = "-" if metric == "tau_loo" else selection
        rows = S[(S.target == target) & (S.group == group) & (S.perturbation == perturbation)
                 & (S.selection == sel) & (S.metric == metric) & (S.method == method)]
        return _item(rows, what, f"{metric} of {method} (target {target}, {group}, "
                                 f"{perturbation}, {sel})")

    def ci(self, metric: str, method: str, perturbation: str = "delete",
           target: str = "1") -> tuple[float, float]:
        """The 95 % interval (low, high) of ``metric`` for ``method`` over all reviews."""
        return (self.value(metric, method, target, "all", perturbation, what="ci_low"),
                self.value(metric, method, target, "all", perturbation, what="ci_high"))

    def table(self, target: str = "1", group: str = "all", perturbation: str = "delete",
              selection: str = "positive",
              metrics: Sequence[str] = ("comprehensiveness", "sufficiency", "tau_loo"),
              ) -> pd.DataFrame:
        """Methods by metrics, each cell ``"+0.123 [+0.100, +0.150]"`` (mean [95 % interval])."""
        S = self.summary
        sub = S[(S.target == target) & (S.group == group) & (S.perturbation == perturbation)
                & S.selection.isin([selection, "-"]) & S.metric.isin(metrics)]
        out = sub.assign(value=sub.apply(partial(mean_interval, signed=True), axis=1)).pivot(
            index="method", columns="metric", values="value")
        missing = [m for m in self.methods if m not in out.index]
        if missing:
            raise KeyError(f"the summary has no rows for {missing}")
        return out.loc[self.methods, list(metrics)]


def comprehensiveness_rows(summary: pd.DataFrame, methods: Sequence[str]) -> pd.DataFrame:
    """The comprehensiveness rows (all reviews, deletion, positive rule, position ties) of a
    summary, one per method of ``methods``, indexed by method."""
    T = summary
    rows = T[(T.group == "all") & (T.metric == "comprehensiveness") & (T.perturbation == "delete")
             & (T.selection == "positive") & (T.ties == "position")].set_index("method")
    missing = [m for m in methods if m not in rows.index]
    if missing:
        raise KeyError(f"no comprehensiveness row for {missing}")
    return rows.loc[list(methods)]


def curve_at(curves: pd.DataFrame, method: str, curve: str, fraction: float = 0.05,
             selection: str = "positive", perturbation: str = "delete") -> float:
    """The mean P(positive) of ``method``'s ``curve`` (deletion, insertion) at ``fraction`` of the
    words, explained class 1."""
    C = curves
    rows = C[(C.target == "1") & (C.method == method) & (C.curve == curve)
             & (C.selection == selection) & (C.perturbation == perturbation)
             & np.isclose(C.fraction, fraction)]
    return _item(rows, "mean", f"the {curve} curve of {method} at {fraction} ({selection}, "
                               f"{perturbation})")


def share_negative(signs: pd.DataFrame, k: int, group: str, score: str = "LIME") -> float:
    """The share of the ``k`` words attention ranks first whose ``score`` is negative, on the
    reviews of ``group``."""
    rows = signs[(signs.score == score) & (signs.k == k) & (signs.group == group)]
    return _item(rows, "mean", f"{score} signs of the first {k} words, {group}")


def unsigned_methods(token_scores: Mapping[str, Iterable[float]]) -> list[str]:
    """The methods whose scores are all >= 0 (and not all 0): unsigned scores, such as attention
    weights and norms. ``token_scores``: per method, its scores on one or more texts (several
    texts: concatenate them). The registry does not record whether a method is signed; its
    scores say it."""
    out = []
    for name, scores in token_scores.items():
        x = np.asarray(list(scores) if not isinstance(scores, np.ndarray) else scores, float)
        if x.size == 0 or not np.isfinite(x).all():
            raise ValueError(f"{name}: scores must be finite and not empty")
        if (x >= 0).all() and (x > 0).any():
            out.append(name)
    return out


def one_pass_methods(groups: Mapping[str, str], methods: Iterable[str]) -> list[str]:
    """The methods of ``methods`` whose registry group (``groups``: name -> group, from
    ``attnxai.registry.METHODS``) is the one forward and backward pass (:data:`ONE_PASS_GROUP`)."""
    methods = list(methods)
    unknown = [m for m in methods if m not in groups]
    if unknown:
        raise KeyError(f"not in the registry: {unknown}")
    return [m for m in methods if groups[m] == ONE_PASS_GROUP]


def block_min(agreement: pd.Series, block: Sequence[str]) -> float:
    """The smallest mean agreement between two different methods of ``block`` (``agreement``:
    indexed by the pairs ``(a, b)``, both orders)."""
    if len(block) < 2:
        raise ValueError("a block of at least two methods")
    return min(float(agreement[(a, b)]) for a in block for b in block if a != b)
