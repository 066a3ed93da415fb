"""Write the small committed summary of the LIME corpus run that chapter 06 reads.

    python book/data/make_lime_corpus_summary.py results/lime_paper \
        --command "python -m attnxai lime-experiment ..." --commit <git commit> \
        --wall-time "1 h 23 min (2 workers, load average ...)"

Writes ``book/data/lime_corpus_summary.csv`` (the error table of
:func:`attnxai.experiment.summarize`) and ``book/data/lime_corpus_errors.csv`` (one row per
review and bow setting, only what chapter 06 plots: length, number of features, lime's spread
and norm, each approximation's norm-2 error, and the Spearman correlations of the paper's
formula, of the limits and of one LIME run with the mean of five), both with ``#`` header lines
recording the command, the git commit, the settings and the wall time (read them with
``pandas.read_csv(..., comment="#")``). Errors and spreads are rounded to 3 significant digits
and correlations to 3 decimals (the per-review file has 50,000 rows for the whole test set).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
from pathlib import Path

import numpy as np

from attnxai.experiment import approximation_names, load_results, summarize

HERE = Path(__file__).resolve().parent
#: Approximations whose Spearman correlation is kept per review.
SPEARMAN = ("paper", "limit", "limit_lime")


def _sig3(x: np.ndarray) -> np.ndarray:
    """Round to 3 significant digits (NaN kept)."""
    x = np.asarray(x, dtype=float)
    out = x.copy()
    ok = np.isfinite(x) & (x != 0)
    mag = np.floor(np.log10(np.abs(x[ok])))
    out[ok] = np.round(x[ok] / 10 ** (mag - 2)) * 10 ** (mag - 2)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results", help="the experiment folder (results/lime_paper)")
    ap.add_argument("--command", required=True, help="the command that produced it")
    ap.add_argument("--commit", required=True, help="git commit (and state) of the code that ran")
    ap.add_argument("--wall-time", required=True, help="the run's wall time (and machine load)")
    ap.add_argument("--out", default=str(HERE))
    args = ap.parse_args()
    df = load_results(args.results)
    meta = json.loads((Path(args.results) / "_meta.json").read_text())
    header = [f"# command: {args.command}", f"# code: {args.commit}",
              f"# settings: {json.dumps(meta, sort_keys=True)}",
              f"# wall time: {args.wall_time}",
              f"# reviews: {df['test_index'].nunique()} test reviews, rows: {len(df)}",
              f"# written: {dt.datetime.now(dt.timezone.utc).isoformat(timespec='seconds')}"]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    summ = summarize(df).reset_index()
    names = approximation_names(df)
    df["lime_norm"] = [float(np.linalg.norm(m)) for m in df["lime_mean"]]
    per = df[["test_index", "bow", "n_tokens", "n_features"]].copy()
    per["bow"] = per["bow"].astype(int)
    for col in ["lime_spread", "lime_norm"] + [f"{n}__err2" for n in names]:
        per[col] = _sig3(df[col])
    for col in ["lime_spearman"] + [f"{n}__spearman" for n in SPEARMAN if n in names]:
        per[col] = np.round(df[col].astype(float), 3)
    for path, frame, fmt in ((out / "lime_corpus_summary.csv", summ, "%.6g"),
                             (out / "lime_corpus_errors.csv", per, "%.4g")):
        with open(path, "w") as fh:
            fh.write("\n".join(header) + "\n")
            frame.to_csv(fh, index=False, float_format=fmt)
        print(f"wrote {path} ({len(frame)} rows, {path.stat().st_size / 1e6:.2f} MB)")


if __name__ == "__main__":
    main()
