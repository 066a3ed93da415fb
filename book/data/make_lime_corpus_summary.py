"""Write the small committed summaries of the LIME corpus run that chapter 06 reads.

    python book/data/make_lime_corpus_summary.py results/lime_full

Every file starts with ``#`` header lines recording the command, the git commit, the settings and
the wall time (read them with ``pandas.read_csv(..., comment="#")``), from the run log the
runner keeps in the results folder (:func:`attnxai.experiment.runs_header`), and the commit of
the checkout that wrote the summary. A run logged before the runner recorded its command (before
2026-11-30) takes them by hand: ``--command "python -m attnxai lime-experiment ..." --commit
<git commit> --wall-time "..."``. Everything is computed from all the rows of the run (the
whole test set); only the per-review file is a sample.

* ``lime_corpus_summary.csv``: the error table of :func:`attnxai.experiment.lime_summary`, plus, per
  (approximation, bow), ``err2_ms`` (mean squared norm-2 error), ``floor_ms`` (mean squared half
  spread of LIME's runs) and ``norm_mean`` (mean norm of LIME's mean coefficients), from which
  the chapter estimates each approximation's systematic error.
* ``lime_corpus_bins.csv``: the same statistics and the median and quartiles of the error per bin
  of review length (``by="tokens"``) and of the share of repeated tokens (``by="repeated"``).
* ``lime_corpus_spearman.csv``: the Spearman correlations with the mean of the five runs (of one
  LIME run, and of the approximations in :data:`SPEARMAN`): their quantiles over the reviews
  (``by="quantile"``) and median and quartiles per length bin (``by="tokens"``).
* ``lime_corpus_errors.csv``: one row per review and bow setting for the first
  :data:`SAMPLE` reviews of the run's order (a uniform random sample of the test set: the order
  is a seeded permutation), rounded to 4 significant digits (the whole run has 50,000 rows).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
from pathlib import Path

import numpy as np
import pandas as pd

from attnxai.experiment import (approximation_names, lime_summary, load_results, runs_header,
                                write_summary)
from attnxai.store.provenance import code_label

HERE = Path(__file__).resolve().parent
#: Approximations whose Spearman correlations are summarised.
SPEARMAN = ("paper", "limit", "limit_lime")
#: Reviews kept per review in lime_corpus_errors.csv (the first ranks of the run's order).
SAMPLE = 2500
TOKEN_BINS = [0, 50, 100, 150, 200, 254, 256]
REPEATED_BINS = [-0.001, 0.0, 0.2, 0.3, 0.4, 0.5, 1.0]
QUANTILES = np.round(np.linspace(0.01, 0.99, 99), 2)


def _stats(g: pd.DataFrame, name: str) -> dict:
    err = g[f"{name}__err2"]
    return {"reviews": int(err.notna().sum()), "median_err2": err.median(),
            "q25_err2": err.quantile(0.25), "q75_err2": err.quantile(0.75),
            "err2_ms": float((err ** 2).mean()), "floor_ms": float(((g.lime_spread / 2) ** 2).mean()),
            "norm_mean": float(g.lime_norm.mean())}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results", help="the experiment folder (results/lime_full)")
    ap.add_argument("--command", help="the command that produced it (default: the run log)")
    ap.add_argument("--commit", help="git commit (and state) of the code that ran (default: the "
                    "run log)")
    ap.add_argument("--wall-time", help="the run's wall time and machine load (default: the run "
                    "log)")
    ap.add_argument("--out", default=str(HERE))
    args = ap.parse_args()
    df = load_results(args.results)
    meta = json.loads((Path(args.results) / "_meta.json").read_text())
    by_hand = (args.command, args.commit, args.wall_time)
    if any(by_hand) and not all(by_hand):
        ap.error("give --command, --commit and --wall-time together (or none: the run log)")
    if all(by_hand):
        runs = [f"# command: {args.command}", f"# code: {args.commit}",
                f"# wall time: {args.wall_time}"]
    else:
        runs = runs_header(args.results, "rows")
        if not any(line.startswith("# command:") for line in runs):
            ap.error(f"{args.results}'s run log records no command (a run from before the runner "
                     "kept one, or from Python): give --command, --commit and --wall-time")
    header = [*runs[:2], f"# settings: {json.dumps(meta, sort_keys=True)}", *runs[2:],
              f"# reviews: {df['test_index'].nunique()} test reviews, rows: {len(df)}",
              f"# written: {dt.datetime.now(dt.timezone.utc).isoformat(timespec='seconds')} by "
              f"book/data/make_lime_corpus_summary.py at {code_label()}"]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    names = approximation_names(df)
    df["lime_norm"] = [float(np.linalg.norm(m)) for m in df["lime_mean"]]
    df["repeated_share"] = 1 - df["n_features"] / df["n_tokens"]

    summ = lime_summary(df).reset_index()
    extra = [{"approximation": n, "bow": bool(b)} | _stats(g, n) for b, g in df.groupby("bow")
             for n in names]
    extra += [{"approximation": "lime (repeat vs mean)", "bow": bool(b), "err2_ms":
               float((g.lime_spread ** 2).mean()), "floor_ms": float(((g.lime_spread / 2) ** 2).mean()),
               "norm_mean": float(g.lime_norm.mean())} for b, g in df.groupby("bow")]
    summ = summ.merge(pd.DataFrame(extra)[["approximation", "bow", "err2_ms", "floor_ms",
                                           "norm_mean"]], on=["approximation", "bow"])

    bins = []
    for by, col, edges in (("tokens", "n_tokens", TOKEN_BINS),
                           ("repeated", "repeated_share", REPEATED_BINS)):
        cut = pd.cut(df[col], edges)
        for (b, iv), g in df.groupby(["bow", cut], observed=True):
            for n in names:
                bins.append({"by": by, "bow": bool(b), "lo": iv.left, "hi": iv.right,
                             "approximation": n, "median_tokens": g.n_tokens.median()}
                            | _stats(g, n))
    bins = pd.DataFrame(bins)

    spear = []
    who = {"lime": "lime_spearman"} | {n: f"{n}__spearman" for n in SPEARMAN if n in names}
    for b, g in df.groupby("bow"):
        for w, col in who.items():
            vals = g[col].dropna()
            for q, v in zip(QUANTILES, np.quantile(vals, QUANTILES)):
                spear.append({"by": "quantile", "bow": bool(b), "who": w, "q": q, "value": v})
            for iv, gg in g.groupby(pd.cut(g.n_tokens, TOKEN_BINS), observed=True):
                v = gg[col].dropna()
                spear.append({"by": "tokens", "bow": bool(b), "who": w, "lo": iv.left,
                              "hi": iv.right, "reviews": len(v), "median": v.median(),
                              "q25": v.quantile(0.25), "q75": v.quantile(0.75)})
    spear = pd.DataFrame(spear)

    sample = df[df["rank"] < SAMPLE]
    cols = (["rank", "test_index", "bow", "n_tokens", "n_features", "lime_spread", "lime_norm"]
            + [f"{n}__err2" for n in names] + ["lime_spearman"]
            + [f"{n}__spearman" for n in SPEARMAN if n in names])
    per = sample[cols].copy()
    per["bow"] = per["bow"].astype(int)

    for name, frame, fmt in (("lime_corpus_summary.csv", summ, "%.6g"),
                             ("lime_corpus_bins.csv", bins, "%.6g"),
                             ("lime_corpus_spearman.csv", spear, "%.4g"),
                             ("lime_corpus_errors.csv", per, "%.4g")):
        path = write_summary(out / name, header, frame, fmt)
        print(f"wrote {path} ({len(frame)} rows, {path.stat().st_size / 1e6:.2f} MB)")


if __name__ == "__main__":
    main()
