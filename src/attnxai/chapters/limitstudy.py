"""Reading chapter 6's committed LIME-limit study (``book/data/lime_*.csv``): one row per
approximation and removal mode (``bow``: True for deletion, False for replacement), with the
mean distance to the mean of five LIME runs (``err2_mean``, ``err2_ms``: its mean square), the
floor (``floor_ms``: the mean square of half the spread of the runs) and the mean norm of LIME's
coefficients (``norm_mean``)."""

from __future__ import annotations

import numpy as np
import pandas as pd


def study_row(corpus: pd.DataFrame, approximation: str, bow: bool) -> pd.Series:
    """The row of ``approximation`` in one mode (``KeyError`` naming it when there is none or
    several)."""
    rows = corpus[(corpus.approximation == approximation) & (corpus.bow == bow)]
    if len(rows) != 1:
        raise KeyError(f"{len(rows)} rows for {approximation!r} with bow={bow} (expected one)")
    return rows.iloc[0]


def systematic(corpus: pd.DataFrame, approximation: str, bow: bool) -> float:
    """The approximation's systematic error, the part above LIME's noise, as a share of the norm
    of LIME's coefficients: sqrt(mean err^2 - mean floor^2) / mean |LIME| over the reviews of
    ``corpus`` (the whole study, or one bin of it); 0 when the error is within the floor."""
    row = study_row(corpus, approximation, bow)
    return float(np.sqrt(max(row.err2_ms - row.floor_ms, 0.0)) / row.norm_mean)
