"""Write the committed summaries of the agreement study that chapter 9 reads.

    python book/data/make_shapley_summary.py results/shapley

The argument is a results folder of ``python -m attnxai shapley-experiment`` (both modes). Writes,
in ``book/data/``:

* ``shapley_agreement.csv``: per mode (delete: words; replace: tokens), agreement measure
  (Spearman and Kendall of the signed scores, Spearman and Pearson of their absolute values, the
  overlap of the five largest) and pair of methods, the number of reviews, the mean and its 95 %
  percentile bootstrap interval over reviews (1,000 resamples, seed 0), and the paired
  differences ``agreement(alpha-avg, Shapley) - agreement(alpha-avg, m)``
  (:func:`attnxai.experiment.shapley_corpus.agreement_table`);
* ``shapley_checks.csv``: per mode, the closed forms' own checks over the reviews (the
  efficiency gap of the Shapley values relative to ``|v(all) - v(empty)|``, IG's completeness
  gap, its nodes and error estimate: median, 90th and 99th percentiles, largest) and the mean
  wall and CPU seconds of every method per review.

With ``--paired-deletion BINOMIAL CERTIFIED`` instead (two results folders of the deletion mode
on the same reviews, ``--modes delete``, the second with ``--set "Shapley (delete).positions=
sampled" --set "Banzhaf (delete).positions=sampled" --set "LIME limit.positions=sampled"``), it
writes only

* ``shapley_agreement_routes.csv``: per agreement measure and pair of methods (deletion), the
  mean with the binomial positions, with the certified values, and their paired difference
  (certified minus binomial) with its 95 % percentile bootstrap interval over reviews;
* ``shapley_checks_routes.csv``: ``shapley_checks.csv``'s checks of either folder (column
  ``positions``).

Every file starts with ``#`` lines (read with ``pandas.read_csv(..., comment="#")``): the command,
the code (commit, uncommitted changes), the settings, the wall time with the jobs and the load
average (:func:`attnxai.experiment.runs_header`), and when the summary was written.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
from pathlib import Path

HERE = Path(__file__).resolve().parent


def checks(df):
    """The closed forms' checks and the times, per mode (module docstring)."""
    import numpy as np
    import pandas as pd

    rows = []
    for mode, sub in df.groupby("mode", sort=False):
        scale = np.maximum(np.abs(sub["logit"].to_numpy()), 1.0)
        quantities = {
            "|Shapley efficiency gap| / max(1, |logit|)":
                np.abs(sub["shapley_efficiency_gap"].to_numpy()) / scale,
            "|IG completeness gap|": np.abs(sub["ig_completeness_gap"].to_numpy()),
            "IG nodes": sub["ig_nodes"].to_numpy(float),
            "IG error estimate": sub["ig_error"].to_numpy(float),
        }
        for col in sorted(c for c in sub.columns if c.startswith("seconds__")):
            quantities[f"seconds: {col.split('__', 1)[1]}"] = sub[col].to_numpy(float)
        quantities["seconds: row"] = sub["seconds"].to_numpy(float)
        quantities["CPU seconds: row"] = sub["cpu_seconds"].to_numpy(float)
        for name, x in quantities.items():
            rows.append({"mode": mode, "quantity": name, "n": int(np.isfinite(x).sum()),
                         "mean": float(np.nanmean(x)), "median": float(np.nanmedian(x)),
                         "p90": float(np.nanpercentile(x, 90)),
                         "p99": float(np.nanpercentile(x, 99)), "max": float(np.nanmax(x))})
    return pd.DataFrame(rows)


def paired_deletion(binomial, certified, n_boot: int):
    """The agreement measures of deletion with either positions, paired by review (module
    docstring): a DataFrame, one row per measure and pair of methods."""
    import itertools

    import numpy as np
    import pandas as pd

    from attnxai.experiment.faithfulness import bootstrap_means
    from attnxai.experiment.shapley_corpus import COMPARED, METRICS

    a, b = (f[f["mode"] == "delete"] for f in (binomial, certified))
    if a.empty or list(a["test_index"]) != list(b["test_index"]):
        raise ValueError("--paired-deletion: the two folders must hold the deletion rows of the "
                         "same reviews (run both with the same --reviews)")
    rows = []
    for metric in METRICS:
        for m1, m2 in itertools.combinations(COMPARED, 2):
            col = f"{metric}__{m1}__{m2}"
            x, y = a[col].to_numpy(float), b[col].to_numpy(float)
            ok = np.isfinite(x) & np.isfinite(y)          # a constant explanation: left out
            mean, lo, hi = bootstrap_means(np.stack([x[ok], y[ok], y[ok] - x[ok]], axis=1),
                                           n_boot=n_boot, seed=0)
            rows.append({"metric": metric, "pair": f"{m1} ~ {m2}", "n": int(ok.sum()),
                         "binomial": mean[0], "certified": mean[1], "difference": mean[2],
                         "ci_low": lo[2], "ci_high": hi[2]})
    return pd.DataFrame(rows)


def _folder_header(folder: Path, df) -> list[str]:
    from attnxai.experiment import results_header

    return results_header(folder, f", {df['test_index'].nunique()} test reviews, rows {len(df)}",
                          "rows")


def main() -> None:
    from attnxai.experiment import load_results, write_summary
    from attnxai.experiment.shapley_corpus import agreement_table
    from attnxai.store.provenance import code_label

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results", nargs="?",
                    help="results folder of python -m attnxai shapley-experiment")
    ap.add_argument("--paired-deletion", nargs=2, metavar=("BINOMIAL", "CERTIFIED"),
                    default=None, help="two results folders of the deletion mode (module "
                                       "docstring)")
    ap.add_argument("--out", default=str(HERE), help="where to write (default book/data)")
    ap.add_argument("--n-boot", type=int, default=1000)
    args = ap.parse_args()
    written = (f"# written: {dt.datetime.now(dt.timezone.utc).isoformat(timespec='seconds')} "
               f"by book/data/make_shapley_summary.py at {code_label()}")
    out = Path(args.out)
    if args.paired_deletion:
        import pandas as pd

        folders = [Path(f) for f in args.paired_deletion]
        frames = [load_results(f, keys=("test_index", "mode"), sort=("rank", "mode"))
                  for f in folders]
        header = sum((_folder_header(f, df) for f, df in zip(folders, frames)), []) + [written]
        write_summary(out / "shapley_agreement_routes.csv", header,
                      paired_deletion(*frames, args.n_boot), "%.6g")
        both = pd.concat([checks(df[df["mode"] == "delete"]).assign(positions=name)
                          for name, df in zip(("binomial", "certified"), frames)])
        write_summary(out / "shapley_checks_routes.csv", header,
                      both[["positions", *both.columns[:-1]]], "%.6g")
        print(f"wrote {out / 'shapley_agreement_routes.csv'} and "
              f"{out / 'shapley_checks_routes.csv'}")
        return
    if args.results is None:
        ap.error("give a results folder (or --paired-deletion BINOMIAL CERTIFIED)")
    folder = Path(args.results)
    df = load_results(folder, keys=("test_index", "mode"), sort=("rank", "mode"))
    header = _folder_header(folder, df) + [written]
    write_summary(out / "shapley_agreement.csv", header,
                  agreement_table(df, n_boot=args.n_boot, seed=0), "%.6g")
    write_summary(out / "shapley_checks.csv", header, checks(df), "%.6g")
    print(f"wrote {out / 'shapley_agreement.csv'} and {out / 'shapley_checks.csv'}")


if __name__ == "__main__":
    main()
