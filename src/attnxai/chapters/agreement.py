"""Reading the committed agreement study of chapter 9 (``book/data/shapley_agreement.csv``): one
row per mode (``delete``, ``replace``), metric (``spearman``, ``pearson_abs``, ...) and pair of
explainers (``"a ~ b"``, the two in the study's order) or paired difference
(``"alpha-avg: Shapley - b"``), with its mean and 95 % interval (``ci_low``, ``ci_high``).

A missing row is an error that names what was asked (never a silent NaN)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd


def _one(table: pd.DataFrame, mode: str, metric: str, pair: str, what: str) -> float:
    if what not in ("mean", "ci_low", "ci_high"):
        raise ValueError(f"what: 'mean', 'ci_low' or 'ci_high', not {what!r}")
    rows = table[(table["mode"] == mode) & (table.metric == metric) & (table.pair == pair)]
    if len(rows) != 1:
        raise KeyError(f"agreement study: {len(rows)} rows for mode {mode!r}, metric {metric!r}, "
                       f"pair {pair!r} (expected one)")
    return float(rows[what].item())


def pair_agreement(table: pd.DataFrame, names: Sequence[str], mode: str, metric: str, a: str,
                   b: str, what: str = "mean") -> float:
    """The agreement of explainers ``a`` and ``b`` (either order): the study writes a pair in the
    order of ``names``."""
    for m in (a, b):
        if m not in names:
            raise KeyError(f"{m!r} is not one of the study's explainers {list(names)}")
    x, y = sorted((a, b), key=list(names).index)
    return _one(table, mode, metric, f"{x} ~ {y}", what)


def agreement_matrix(table: pd.DataFrame, names: Sequence[str], mode: str,
                     metric: str) -> pd.DataFrame:
    """The symmetric matrix of mean agreements between ``names`` (1 on the diagonal)."""
    names = list(names)
    out = pd.DataFrame(np.eye(len(names)), index=names, columns=names)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            out.loc[a, b] = out.loc[b, a] = pair_agreement(table, names, mode, metric, a, b)
    return out


def shapley_minus(table: pd.DataFrame, mode: str, metric: str, other: str,
                  what: str = "mean") -> float:
    """The paired difference, per review, of attention's agreement with Shapley minus its
    agreement with ``other``."""
    return _one(table, mode, metric, f"alpha-avg: Shapley - {other}", what)
