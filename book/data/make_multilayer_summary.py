"""Write the committed summaries of the study "Beyond one layer" that chapter 8 reads.

    python book/data/make_multilayer_summary.py --results results

``--results`` is the folder the study script (``book/data/run_multilayer_study.sh``) wrote into:
``ml_lime`` (6 x 6 model, bf16, 200 reviews), ``ml_lime_paper`` (the paper's single-layer
model), ``ml_lime_fp32`` (6 x 6 model, fp32, 10 reviews), ``skip`` and ``skip_b`` (the
skip-connection ablation, the two lanes), ``ml_screens*`` (optional) and ``logs/study.log``. A
missing folder is left out (and said so in the headers). Writes, in ``book/data/``:

* ``multilayer_training.csv``: per epoch of the 6 x 6 model's training (from the cached model's
  metrics.json): training loss, running training accuracy, validation accuracy and loss, seconds,
  load average; the header has the test, validation and training accuracy of the best epoch;
* ``multilayer_lime_summary.csv``: per model (and precision) and explainer ("layer 1" ...,
  "rollout", "|G x I|"): number of reviews, mean, standard deviation, median, mean absolute value
  of the per-review Pearson correlation with |LIME| and a 95 % percentile bootstrap interval of the
  mean (2,000 resamples of the reviews, seed 0);
* ``multilayer_lime_reviews.csv``: one row per model and review: length, number of distinct
  words, the correlation of each layer, rollout and |G x I|, wall and CPU seconds;
* ``multilayer_precision.csv``: per review of the fp32 run, what bf16 changes: Pearson
  correlation and relative L2 distance of the LIME coefficients, the share of the top-10 words in
  common, the largest change of a layer's correlation, and the wall time of LIME in both;
* ``skip_ablation.csv``: one row per training run (skip or not, seed): test, validation and
  training accuracy, best epoch, the validation curve, training seconds, the cached model;
* ``multilayer_screens.csv`` when screens ran;
* ``multilayer_study_log.csv``: the study's log (start and end of every command, load average).

Every file starts with ``#`` lines (``pandas.read_csv(..., comment="#")``): the commands that ran
with the git commit of their code and whether it had uncommitted changes, the wall time, jobs and
load average of each run (from each folder's run log, :func:`attnxai.experiment.runs_header`, and
from ``logs/study.log``), the settings (``_meta.json``) and when the summary was written.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
LIME_RUNS = (("ml_lime", "6x6, bf16"), ("ml_lime_paper", "1 layer (paper model)"),
             ("ml_lime_fp32", "6x6, fp32"))


def _study_log(results: Path, *words: str) -> list[str]:
    """The lines of logs/study.log (start/end stamps, with load average) mentioning all words."""
    log = results / "logs" / "study.log"
    if not log.is_file():
        return []
    return [f"# study.log: {line}" for line in log.read_text().splitlines()
            if all(w in line for w in words)]


NOTES: list[str] = []


def _write(path: Path, header: list[str], df) -> None:
    from attnxai.experiment import write_summary

    header = [*header, *(f"# note: {n}" for n in NOTES)]
    written = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    write_summary(path, [*header, f"# written: {written}"], df, "%.6g")
    print(f"wrote {path} ({len(df)} rows)")


def _bootstrap(x: np.ndarray, n_boot: int = 2000, seed: int = 0) -> tuple[float, float]:
    if len(x) < 2:
        return float("nan"), float("nan")
    rng = np.random.default_rng(seed)
    means = x[rng.integers(0, len(x), size=(n_boot, len(x)))].mean(axis=1)
    return float(np.quantile(means, 0.025)), float(np.quantile(means, 0.975))


def training(results: Path, out: Path, profile: str = "multilayer") -> None:
    import pandas as pd

    from attnxai import pretrained

    pre = pretrained(profile, train_if_missing=False)
    m = pre.metrics
    hist = pd.DataFrame(m["history"])
    hist.insert(0, "model", pre.path.name)
    code = m.get("code") or {}
    header = [f"# model: {pre.path.name} ({type(pre.model).__name__}, "
              f"{json.dumps(pre.model.config.to_dict(), sort_keys=True)})",
              f"# recipe: {json.dumps(pre.config['train'], sort_keys=True)}",
              f"# code: {code.get('commit')}{' (with uncommitted changes!)' if code.get('dirty') else ''}",
              f"# test accuracy {m['test_accuracy']:.5f} on {m['n_test']} reviews; validation "
              f"{m['valid_accuracy']:.5f} (best epoch {m['best_epoch']}); training "
              f"{m['train_accuracy']:.5f}",
              f"# parameters {m['n_parameters']}; training {m['train_seconds']:.0f} s "
              f"({m['train_reviews_per_second']:.1f} reviews/s), validation passes "
              f"{m['valid_seconds']:.0f} s, test pass {m['test_seconds']:.0f} s, all "
              f"{m['total_seconds']:.0f} s; torch threads {m['torch_threads']}; resumed at "
              f"{m['resumed_at']}",
              *_study_log(results, f"train --profile {profile}")]
    _write(out / "multilayer_training.csv", header, hist)


def lime(results: Path, out: Path) -> None:
    import pandas as pd

    from attnxai.experiment import load_results, runs_header
    from attnxai.experiment.beyond_one_layer import layer_summary

    header, summ, per_review, frames = [], [], [], {}
    for name, label in LIME_RUNS:
        folder = results / name
        if not (folder / "_meta.json").is_file():
            header.append(f"# {name}: not run")
            continue
        df = load_results(folder, keys=("test_index",), sort=("rank",))
        frames[name] = df
        meta = json.loads((folder / "_meta.json").read_text())
        header.append(f"# results: {name} = {label}, {len(df)} test reviews (the first of the "
                      f"seeded test order, seed {meta['order_seed']})")
        header += runs_header(folder, "items")
        header += _study_log(results, f"--out results/{name} ")
        header.append(f"# settings: {json.dumps(meta, sort_keys=True)}")
        s = layer_summary(df)
        corr = np.asarray([list(c) for c in df["corr_layers"]], dtype=float)
        cols = {f"layer {i + 1}": corr[:, i] for i in range(corr.shape[1])}
        cols["rollout"] = df["corr_rollout"].to_numpy(float)
        cols["|G x I|"] = df["corr_gxi"].to_numpy(float)
        lo, hi = zip(*(_bootstrap(x[~np.isnan(x)]) for x in cols.values()))
        s["ci_low"], s["ci_high"] = lo, hi
        s.insert(0, "model", label)
        s.insert(1, "n_layers", int(meta["n_layers"]))
        s.insert(2, "precision", meta["precision"] if meta["arch"] != "AttentionClassifier"
                 else "float64 closed form (fast LIME)")
        summ.append(s)
        r = pd.DataFrame({"model": label, "rank": df["rank"], "test_index": df["test_index"],
                          "label": df["label"], "n_tokens": df["n_tokens"],
                          "n_words": df["n_words"]})
        for k, v in cols.items():
            r[f"corr {k}"] = v
        for k in ("seconds", "cpu_seconds", "lime_seconds", "lime_cpu_seconds"):
            r[k] = df[k].to_numpy(float)
        per_review.append(r)
    if summ:
        _write(out / "multilayer_lime_summary.csv", header, pd.concat(summ, ignore_index=True))
        _write(out / "multilayer_lime_reviews.csv", header,
               pd.concat(per_review, ignore_index=True))
    if "ml_lime_fp32" in frames and "ml_lime" in frames:
        precision(frames["ml_lime_fp32"], frames["ml_lime"], header, out)


def precision(fp32, bf16, header: list[str], out: Path) -> None:
    import pandas as pd

    b = bf16.set_index("test_index")
    rows = []
    for _, r in fp32.iterrows():
        if r["test_index"] not in b.index:
            continue
        q = b.loc[r["test_index"]]
        assert list(r["words"]) == list(q["words"])
        c32, c16 = np.asarray(r["lime_coef"], float), np.asarray(q["lime_coef"], float)
        top32 = set(np.argsort(-np.abs(c32), kind="stable")[:10])
        top16 = set(np.argsort(-np.abs(c16), kind="stable")[:10])
        d = np.abs(np.asarray(r["corr_layers"], float) - np.asarray(q["corr_layers"], float))
        rows.append({"rank": r["rank"], "test_index": r["test_index"], "n_tokens": r["n_tokens"],
                     "coef_pearson": float(np.corrcoef(c32, c16)[0, 1]),
                     "coef_rel_l2": float(np.linalg.norm(c16 - c32) / np.linalg.norm(c32)),
                     "top10_shared": len(top32 & top16) / 10,
                     "max_layer_corr_change": float(np.nanmax(d)),
                     "rollout_corr_change": abs(float(r["corr_rollout"]) -
                                                float(q["corr_rollout"])),
                     "lime_seconds_fp32": float(r["lime_seconds"]),
                     "lime_seconds_bf16": float(q["lime_seconds"]),
                     "lime_cpu_seconds_fp32": float(r["lime_cpu_seconds"]),
                     "lime_cpu_seconds_bf16": float(q["lime_cpu_seconds"])})
    _write(out / "multilayer_precision.csv", header, pd.DataFrame(rows))


def training_runs(results: Path, out: Path, prefix: str, file: str) -> None:
    import pandas as pd

    from attnxai.experiment import load_results, runs_header

    header, frames = [], []
    for folder in sorted(p for p in results.glob(f"{prefix}*") if p.is_dir()):   # not locks
        if not (folder / "_meta.json").is_file() or not list(folder.glob("part-*.parquet")):
            header.append(f"# results: {folder.name}: no finished run")
            continue
        df = load_results(folder, keys=("run",), sort=("rank",))
        header.append(f"# results: {folder.name}, {len(df)} runs")
        header += runs_header(folder, "items")
        header += _study_log(results, f"--out results/{folder.name} ")
        df.insert(0, "lane", folder.name)
        frames.append(df)
    if not frames:
        print(f"no {prefix}* folder: {file} not written")
        return
    df = pd.concat(frames, ignore_index=True)
    # a model trained by one lane and loaded by the other appears twice: keep the training row
    df["trained_now"] = df["trained_now"].astype(bool)
    df = (df.sort_values(["run", "trained_now"], ascending=[True, False])
            .drop_duplicates("run").sort_values(["skip", "seed"] if "skip" in df else "rank"))
    keep = [c for c in ("run", "description", "skip", "seed", "test_accuracy", "valid_accuracy",
                        "train_accuracy", "best_epoch", "valid_curve", "train_loss_curve",
                        "train_seconds", "trained_now", "lane", "model", "code") if c in df]
    df = df[keep].copy()
    for c in ("valid_curve", "train_loss_curve"):
        df[c] = [" ".join(f"{v:.4f}" for v in x) for x in df[c]]
    _write(out / file, header, df)


def study_log(results: Path, out: Path) -> None:
    """``multilayer_study_log.csv``: every line of logs/study.log (time, load averages, event)."""
    import pandas as pd

    log = results / "logs" / "study.log"
    if not log.is_file():
        print("no logs/study.log: multilayer_study_log.csv not written")
        return
    rows = []
    for line in log.read_text().splitlines():
        when, _, l1, l5, l15, event = line.split(" ", 5)
        rows.append({"time": when, "load1": float(l1), "load5": float(l5),
                     "load15": float(l15), "event": event})
    _write(out / "multilayer_study_log.csv",
           [f"# {log.name} of the study (book/data/run_multilayer_study.sh): one line per start "
            "and end of a command and per lane"], pd.DataFrame(rows))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", default="results", help="the study's results folder")
    ap.add_argument("--out", default=str(HERE))
    ap.add_argument("--profile", default="multilayer", help="the multi-layer model's profile")
    ap.add_argument("--note", action="append", default=[],
                    help="a line added to every header (e.g. about the code of a run)")
    ap.add_argument("--only", choices=("training", "lime", "skip", "screens", "log"),
                    action="append",
                    help="write only these summaries (e.g. --only skip after a rerun of the skip "
                         "ablation alone); default: all")
    args = ap.parse_args()
    NOTES.extend(args.note)
    results, out = Path(args.results), Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    writers = {"training": lambda: training(results, out, args.profile),
               "lime": lambda: lime(results, out),
               "skip": lambda: training_runs(results, out, "skip", "skip_ablation.csv"),
               "screens": lambda: training_runs(results, out, "ml_screens",
                                                "multilayer_screens.csv"),
               "log": lambda: study_log(results, out)}
    for name, write in writers.items():
        if args.only is None or name in args.only:
            write()


if __name__ == "__main__":
    main()
