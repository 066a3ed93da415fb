"""Write the small committed summary of the LIME corpus run that chapter 06 reads.

    python book/data/make_lime_corpus_summary.py results/lime_paper \
        --command "python -m attnxai lime-experiment ..." --commit <git commit>

Writes ``book/data/lime_corpus_summary.csv`` (the error table of
:func:`attnxai.experiment.summarize`) and ``book/data/lime_corpus_errors.csv`` (one row per
review and bow setting: length, lime's spread and each approximation's norm-2 error and
Spearman correlation), both with ``#`` header lines recording the command, the git commit and
the settings (read them with ``pandas.read_csv(..., comment="#")``).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
from pathlib import Path

from attnxai.experiment import approximation_names, load_results, summarize

HERE = Path(__file__).resolve().parent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results", help="the experiment folder (results/lime_paper)")
    ap.add_argument("--command", required=True, help="the command that produced it")
    ap.add_argument("--commit", required=True, help="git commit (and state) of the code that ran")
    ap.add_argument("--out", default=str(HERE))
    args = ap.parse_args()
    df = load_results(args.results)
    meta = json.loads((Path(args.results) / "_meta.json").read_text())
    header = [f"# command: {args.command}", f"# code: {args.commit}",
              f"# settings: {json.dumps(meta, sort_keys=True)}",
              f"# reviews: {df['test_index'].nunique()} test reviews, rows: {len(df)}",
              f"# written: {dt.datetime.now(dt.timezone.utc).isoformat(timespec='seconds')}"]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    summ = summarize(df).reset_index()
    names = approximation_names(df)
    cols = ["rank", "test_index", "bow", "n_tokens", "n_features", "logit", "lime_spread",
            "lime_spread_rel", "lime_norm"]
    import numpy as np

    df["lime_norm"] = [float(np.linalg.norm(m)) for m in df["lime_mean"]]
    for n in names:
        cols += [f"{n}__err2", f"{n}__spearman"]
    per = df[cols]
    for path, frame in ((out / "lime_corpus_summary.csv", summ), (out / "lime_corpus_errors.csv", per)):
        with open(path, "w") as fh:
            fh.write("\n".join(header) + "\n")
            frame.to_csv(fh, index=False, float_format="%.6g" if frame is summ else "%.4g")
        print(f"wrote {path} ({len(frame)} rows)")


if __name__ == "__main__":
    main()
