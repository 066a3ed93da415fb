"""The faithfulness study's tables (:mod:`attnxai.experiment.faithfulness`): the column of each
number, and the book's summaries of a results folder's rows, with percentile bootstrap intervals
over reviews (:func:`bootstrap_means`)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .. import validate
from ..perturbation import CURVE_FRACTIONS, PERTURBATIONS, SELECTIONS, TIES

__all__ = ["GROUPS", "SUMMARY_METRICS", "agreement_summary", "bootstrap_means", "curve_summary",
           "faithfulness_summary", "metric_column", "read_summary", "tie_spread"]

#: Per (method, perturbation, selection) numbers with a bootstrap interval in
#: :func:`faithfulness_summary`.
SUMMARY_METRICS = ("comprehensiveness", "sufficiency", "deletion_auc", "insertion_auc")
#: The groups of reviews :func:`faithfulness_summary` reports: all, and by predicted class.
GROUPS = ("all", "predicted positive", "predicted negative")


def metric_column(method: str, perturbation: str, metric: str, selection: str | None = None,
                  ties: str = "position") -> str:
    """The results column of one number (``selection=None`` for ``tau_loo``, which does not
    depend on the tie order; ``ties="ferret"``: the number under ferret's tie order)."""
    if metric == "tau_loo":
        return f"{method}__{perturbation}__tau_loo"
    col = f"{method}__{perturbation}__{selection}__{metric}"
    return col if ties == "position" else f"{col}__{ties}"


def bootstrap_means(X: np.ndarray, *, n_boot: int = 2000, seed: int = 0, level: float = 0.95
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Means of the columns of ``X`` (n reviews, c quantities) and their percentile bootstrap
    interval over reviews: ``n_boot`` resamples of the n reviews with replacement, the same
    resamples for every column (so differences between columns are paired). NaN entries (e.g. a
    tau of a constant explanation) are left out of their column's means."""
    X = np.asarray(X, dtype=np.float64)
    if X.ndim == 1:
        X = X[:, None]
    n = X.shape[0]
    if n == 0:
        nan = np.full(X.shape[1], np.nan)
        return nan, nan, nan
    n_boot = validate.positive_int(n_boot, "n_boot")
    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1), got {level!r}")
    rng = np.random.default_rng(seed)
    W = np.zeros((n_boot, n))
    idx = rng.integers(0, n, size=(n_boot, n))
    np.add.at(W, (np.repeat(np.arange(n_boot), n), idx.reshape(-1)), 1.0)
    ok = np.isfinite(X)
    X0 = np.where(ok, X, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = (W @ X0) / (W @ ok)
        mean = X0.sum(0) / ok.sum(0)
    a = (1 - level) / 2
    lo, hi = np.nanquantile(means, [a, 1 - a], axis=0)
    return mean, lo, hi


def _group_masks(df) -> dict[str, np.ndarray]:
    pred = df["predicted"].to_numpy()
    return {"all": np.ones(len(df), bool), "predicted positive": pred == 1,
            "predicted negative": pred == 0}


def _settings_of(df, methods, perturbations, selections):
    methods = methods or [c[len("scores__"):] for c in df.columns if c.startswith("scores__")]
    if not methods:
        methods = sorted({c.split("__")[0] for c in df.columns if c.endswith("__tau_loo")})
    perturbations = perturbations or [p for p in PERTURBATIONS
                                      if any(c.endswith(f"__{p}__tau_loo") for c in df.columns)]
    selections = selections or [s for s in SELECTIONS if any(
        f"__{s}__comprehensiveness" in c for c in df.columns)]
    return list(methods), list(perturbations), list(selections)


def faithfulness_summary(df, *, n_boot: int = 2000, seed: int = 0, level: float = 0.95,
              methods: Sequence[str] | None = None, perturbations: Sequence[str] | None = None,
              selections: Sequence[str] | None = None):
    """The book's table: per group of reviews (:data:`GROUPS`), method, perturbation, selection
    and metric (:data:`SUMMARY_METRICS` and ``tau_loo``, the latter with selection ``"-"``), the
    number of reviews, the mean and its percentile bootstrap interval (:func:`bootstrap_means`)."""
    import pandas as pd

    methods, perts, sels = _settings_of(df, methods, perturbations, selections)
    orders = [t for t in TIES if t == "position" or
              metric_column(methods[0], perts[0], SUMMARY_METRICS[0], sels[0], t) in df.columns]
    keys, cols = [], []
    for m in methods:
        for p in perts:
            for t in orders:
                for s in sels:
                    for metric in SUMMARY_METRICS:
                        keys.append((m, p, s, t, metric))
                        cols.append(metric_column(m, p, metric, s, t))
            keys.append((m, p, "-", "-", "tau_loo"))
            cols.append(metric_column(m, p, "tau_loo"))
    X = df[cols].to_numpy(dtype=np.float64)
    rows = []
    for g, mask in _group_masks(df).items():
        mean, lo, hi = bootstrap_means(X[mask], n_boot=n_boot, seed=seed, level=level)
        count = np.isfinite(X[mask]).sum(0)
        for (m, p, s, t, metric), c, mu, a, b in zip(keys, count, mean, lo, hi):
            rows.append({"group": g, "method": m, "perturbation": p, "selection": s, "ties": t,
                         "metric": metric, "n": int(c), "mean": mu, "ci_low": a, "ci_high": b})
    return pd.DataFrame(rows)


def read_summary(path):
    """A committed ``faithfulness_summary.csv`` as a DataFrame (``#`` header lines skipped, the
    target as a string). A summary written before both tie orders were recorded has no ``ties``
    column: every number there is the ``"position"`` order (``"-"`` for tau-LOO), and the column
    is added so."""
    import pandas as pd

    S = pd.read_csv(path, comment="#")
    S["target"] = S["target"].astype(str)
    if "ties" not in S.columns:
        S.insert(S.columns.get_loc("metric"), "ties",
                 np.where(S["metric"] == "tau_loo", "-", "position"))
    return S


def tie_spread(df, methods: Sequence[str] | None = None, *, perturbation: str = "delete",
               selection: str = "positive"):
    """What the tie order changes, per method and AOPC measure/area, over the reviews of ``df``
    (a results folder's rows): the mean under each order, the mean and the largest absolute
    per-review difference (ferret's minus the default), and the share of reviews where it is
    not zero. Methods without ties have no difference by construction."""
    import pandas as pd

    methods, _, _ = _settings_of(df, methods, None, None)
    rows = []
    for m in methods:
        for metric in SUMMARY_METRICS:
            a = df[metric_column(m, perturbation, metric, selection)].to_numpy(float)
            b = df[metric_column(m, perturbation, metric, selection, "ferret")].to_numpy(float)
            diff = b - a
            rows.append({"method": m, "metric": metric, "reviews": len(a),
                         "position": a.mean(), "ferret": b.mean(), "mean difference": diff.mean(),
                         "largest |difference|": float(np.abs(diff).max()),
                         "share of reviews changed": float((diff != 0).mean())})
    return pd.DataFrame(rows)


def curve_summary(df, *, n_boot: int = 1000, seed: int = 0, level: float = 0.95,
                  methods: Sequence[str] | None = None):
    """Mean deletion and insertion curves over reviews, per group, method, perturbation and
    selection, with bootstrap intervals: one row per fraction."""
    import pandas as pd

    methods, perts, sels = _settings_of(df, methods, None, None)
    rows = []
    groups = _group_masks(df)
    for m in methods:
        for p in perts:
            for s in sels:
                for kind in ("deletion", "insertion"):
                    C = np.stack([np.asarray(v, float) for v in df[f"{m}__{p}__{s}__{kind}_curve"]])
                    for g, mask in groups.items():
                        mean, lo, hi = bootstrap_means(C[mask], n_boot=n_boot, seed=seed,
                                                       level=level)
                        for f, mu, a, b in zip(CURVE_FRACTIONS, mean, lo, hi):
                            rows.append({"group": g, "method": m, "perturbation": p,
                                         "selection": s, "curve": kind, "fraction": float(f),
                                         "mean": mu, "ci_low": a, "ci_high": b})
    return pd.DataFrame(rows)


def agreement_summary(df, *, n_boot: int = 1000, seed: int = 0, level: float = 0.95,
                      methods: Sequence[str] | None = None):
    """Mean pairwise Kendall tau-b between methods over reviews (signed scores and absolute
    values), per group, with bootstrap intervals: one row per (group, kind, a, b), both orders
    and the diagonal (1) included so that it pivots into a full matrix."""
    import pandas as pd

    methods, _, _ = _settings_of(df, methods, None, None)
    rows = []
    for kind in ("agree", "agree_abs"):
        pairs = [(a, b) for i, a in enumerate(methods) for b in methods[i + 1:]]
        X = df[[f"{kind}__{a}__{b}" for a, b in pairs]].to_numpy(dtype=np.float64)
        for g, mask in _group_masks(df).items():
            mean, lo, hi = bootstrap_means(X[mask], n_boot=n_boot, seed=seed, level=level)
            label = "signed" if kind == "agree" else "absolute"
            for (a, b), mu, x, y in zip(pairs, mean, lo, hi):
                for u, v in ((a, b), (b, a)):
                    rows.append({"group": g, "scores": label, "a": u, "b": v, "mean": mu,
                                 "ci_low": x, "ci_high": y})
            for a in methods:
                rows.append({"group": g, "scores": label, "a": a, "b": a, "mean": 1.0,
                             "ci_low": 1.0, "ci_high": 1.0})
    return pd.DataFrame(rows)
