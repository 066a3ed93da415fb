"""Write the committed summaries of the faithfulness runs that chapter 7 reads.

    python book/data/make_faithfulness_summary.py results/faithfulness results/faithfulness_pred

Each argument is a results folder of ``python -m attnxai faithfulness`` (one per explained-class
setting: ``--target 1``, ``--target predicted``). Writes, in ``book/data/``:

* ``faithfulness_summary.csv``: per target setting, group of reviews (all, predicted positive,
  predicted negative), method, perturbation, selection, tie order (``position``, ``ferret``;
  ``-`` for tau-LOO, which has none) and metric, the number of reviews, the mean and its 95 %
  percentile bootstrap interval over reviews (2,000 resamples, seed 0;
  :func:`attnxai.experiment.faithfulness.faithfulness_summary`);
* ``faithfulness_curves.csv``: the mean deletion and insertion curves (all reviews) with intervals;
* ``faithfulness_agreement.csv``: the mean pairwise Kendall tau-b of the methods (signed and
  absolute scores), per group, with intervals;
* ``faithfulness_attention_signs.csv``: in the first folder, per group, the share of the ``k``
  positions attention (alpha-avg) ranks first (k = 1, 5, 10) whose LIME coefficient, resp.
  alpha x s, is negative for class 1 (mean over reviews, bootstrap interval);
* ``faithfulness_reviews.csv``: one row per review of the first folder (explained class 1):
  length, probability, predicted class, label, and per method and perturbation the AOPC
  comprehensiveness (positive rule, both tie orders) and tau-LOO, for the chapter's own (paired)
  comparisons.

With ``--paired-deletion BINOMIAL SAMPLED`` instead (two results folders of the deletion games
on the same reviews, ``--methods "Shapley (delete),Banzhaf (delete)"``, the second with
``--set "Shapley (delete).positions=sampled" --set "Banzhaf (delete).positions=sampled"``), it
writes only ``faithfulness_deletion_routes.csv``: per method, perturbation, selection and metric
(the AOPC measures, the curves' areas, tau-LOO), the mean with the binomial positions, with the
certified values, and their paired difference (certified minus binomial) with its 95 % bootstrap
interval over reviews.

Every file starts with ``#`` lines (read with ``pandas.read_csv(..., comment="#")``): the commands
that ran, the git commit of the code and whether it had uncommitted changes (from the folder's
run log, :func:`attnxai.experiment.runs_header`), the settings (``_meta.json``), the wall time
of each run with the jobs and load average, and when the summary was written.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _header(folder: Path, df) -> list[str]:
    from attnxai.experiment import results_header

    meta = json.loads((folder / "_meta.json").read_text())
    return results_header(folder, f" (explained class: {meta['target']}), "
                                  f"{df['test_index'].nunique()} test reviews")


def _attention_signs(df, n_boot: int):
    """Share of the top-k attended positions whose LIME / alpha x s score is negative."""
    import numpy as np
    import pandas as pd

    from attnxai.experiment import faithfulness as XF

    groups = {"all": np.ones(len(df), bool), "predicted positive": df["predicted"].eq(1).to_numpy(),
              "predicted negative": df["predicted"].eq(0).to_numpy()}
    rows = []
    for other in ("LIME", "alpha x s"):
        for k in (1, 5, 10):
            share = []
            for a, o in zip(df["scores__alpha-avg"], df[f"scores__{other}"]):
                top = np.argsort(-np.asarray(a, float), kind="stable")[:k]
                share.append(float((np.asarray(o, float)[top] < 0).mean()))
            share = np.asarray(share)
            for g, m in groups.items():
                mean, lo, hi = XF.bootstrap_means(share[m], n_boot=n_boot, seed=0)
                rows.append({"score": other, "k": k, "group": g, "n": int(m.sum()),
                             "mean": mean[0], "ci_low": lo[0], "ci_high": hi[0]})
    return pd.DataFrame(rows)


def paired_deletion(binomial, sampled, n_boot: int):
    """The deletion games' faithfulness with either positions, paired by review (module
    docstring): a DataFrame, one row per method, perturbation, selection and metric."""
    import numpy as np
    import pandas as pd

    from attnxai.experiment import faithfulness as XF
    from attnxai.perturbation import DEFAULT_SELECTIONS, PERTURBATIONS

    if list(binomial["test_index"]) != list(sampled["test_index"]):
        raise ValueError("--paired-deletion: the two folders hold different reviews (run both "
                         "with the same --reviews)")
    methods = [c[len("scores__"):] for c in binomial.columns if c.startswith("scores__")]
    rows = []
    for m in methods:
        if f"scores__{m}" not in sampled:
            raise ValueError(f"--paired-deletion: {m} is not in the second folder")
        for pert in PERTURBATIONS:
            cols = [(sel, metric, XF.metric_column(m, pert, metric, sel))
                    for sel in DEFAULT_SELECTIONS for metric in XF.SUMMARY_METRICS]
            cols.append(("-", "tau_loo", XF.metric_column(m, pert, "tau_loo")))
            for sel, metric, col in cols:
                a, b = binomial[col].to_numpy(float), sampled[col].to_numpy(float)
                mean, lo, hi = XF.bootstrap_means(np.stack([a, b, b - a], axis=1),
                                                  n_boot=n_boot, seed=0)
                rows.append({"method": m, "perturbation": pert, "selection": sel,
                             "metric": metric, "n": int(np.isfinite(b - a).sum()),
                             "binomial": mean[0], "certified": mean[1], "difference": mean[2],
                             "ci_low": lo[2], "ci_high": hi[2]})
    return pd.DataFrame(rows)


def main() -> None:
    from attnxai.experiment import load_results, write_summary
    from attnxai.experiment import faithfulness as XF

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results", nargs="*", help="results folders (first: explained class 1)")
    ap.add_argument("--paired-deletion", nargs=2, metavar=("BINOMIAL", "SAMPLED"), default=None,
                    help="two results folders of the deletion games (module docstring)")
    ap.add_argument("--out", default=str(HERE))
    ap.add_argument("--n-boot", type=int, default=2000)
    ap.add_argument("--note", action="append", default=[],
                    help="a line added to every header (e.g. about the code of a run)")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.paired_deletion:
        folders = [Path(f) for f in args.paired_deletion]
        frames = [load_results(f, keys=("test_index",), sort=("rank",)) for f in folders]
        header = _header(folders[0], frames[0]) + _header(folders[1], frames[1])
        header += [f"# note: {n}" for n in args.note]
        header.append(f"# written: {dt.datetime.now(dt.timezone.utc).isoformat(timespec='seconds')}")
        frame = paired_deletion(*frames, args.n_boot)
        path = write_summary(out / "faithfulness_deletion_routes.csv", header, frame, "%.5g")
        print(f"wrote {path} ({len(frame)} rows)")
        return
    if not args.results:
        ap.error("give the results folders (or --paired-deletion BINOMIAL SAMPLED)")
    header, summ, curves, agree = [], [], [], []
    first = None
    for folder in map(Path, args.results):
        df = load_results(folder, keys=("test_index",), sort=("rank",))
        meta = json.loads((folder / "_meta.json").read_text())
        target = str(meta["target"])
        header += _header(folder, df)
        t = XF.faithfulness_summary(df, n_boot=args.n_boot)
        t.insert(0, "target", target)
        summ.append(t)
        c = XF.curve_summary(df, n_boot=args.n_boot // 2)
        c = c[c["group"] == "all"].drop(columns="group")
        c.insert(0, "target", target)
        curves.append(c)
        a = XF.agreement_summary(df, n_boot=args.n_boot // 2)
        a.insert(0, "target", target)
        agree.append(a)
        if first is None:
            first = df
    import pandas as pd

    header += [f"# note: {n}" for n in args.note]
    header.append(f"# written: {dt.datetime.now(dt.timezone.utc).isoformat(timespec='seconds')}")
    methods = [c[len("scores__"):] for c in first.columns if c.startswith("scores__")]
    cols = ["rank", "test_index", "label", "rating", "n_tokens", "p1", "predicted", "target", "p"]
    for m in methods:
        for pert in ("replace", "delete"):
            for ties in ("position", "ferret"):
                cols.append(XF.metric_column(m, pert, "comprehensiveness", "positive", ties))
            cols.append(XF.metric_column(m, pert, "tau_loo"))
    reviews = first[[c for c in cols if c in first.columns]]
    signs = _attention_signs(first, args.n_boot)
    for name, frame, fmt in (("faithfulness_summary.csv", pd.concat(summ), "%.5g"),
                             ("faithfulness_curves.csv", pd.concat(curves), "%.4g"),
                             ("faithfulness_agreement.csv", pd.concat(agree), "%.4g"),
                             ("faithfulness_attention_signs.csv", signs, "%.4g"),
                             ("faithfulness_reviews.csv", reviews, "%.3g")):
        path = write_summary(out / name, header, frame, fmt)
        print(f"wrote {path} ({len(frame)} rows, {path.stat().st_size // 1024} KiB)")


if __name__ == "__main__":
    main()
