"""Deletion with repeated words on full reviews: what the exact route would cost
(:mod:`attnxai.theory.deletion_routes`), against one fast-LIME run at n = 5000 and the binomial
positions, one thread. (The certified route: ``bench_deletion_sampled.py``.)

    ATTNXAI_IMDB_ARCHIVE=... python benchmarks/bench_deletion_exact.py [--reviews 3]
        [--profile paper] [--out book/data/deletion_speed.csv]

Per full-length (255-token) test review: its repeated words ``R`` (the exact route needs
``2^R`` configurations) and the exact route's cost against its budget; the time of one
configuration (one chain pass, every head) and of all ``2^R`` (``exact_seconds``, extrapolated
from it: labelled as such); one fast-LIME run at n = 5000 and the binomial positions' Shapley
values, measured. Prints a table; writes it as CSV with ``--out``.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings


def run(pre, text: str) -> dict:
    import numpy as np

    from attnxai import fastlime, theory
    from attnxai.theory import deletion_routes as dr
    from attnxai.theory import lime_repeats as lr
    from attnxai.theory.lime_inputs import resolve, tables

    model, ids, feats = resolve(pre, text, True, None)
    tb = tables(model, ids, 1)
    lay = lr.repeat_layout(feats, tb.T)
    W = dr.size_weight("shapley", len(feats))
    lr.config_sums(tb, feats, W, np.zeros((1, lay.R)), 1)              # compile
    t0 = time.perf_counter()
    lr.config_sums(tb, feats, W, np.random.default_rng(0).integers(0, 2, (8, lay.R)), 1)
    per_config = (time.perf_counter() - t0) / 8
    row = {"tokens": tb.T - 1, "d": len(feats), "n_repeated": lay.R,
           "exact_cost": dr.exact_cost(feats, tb.T), "budget": dr.DEFAULT_BUDGET,
           "seconds_per_config": per_config}
    fastlime.explain_instance(pre, text, random_state=0)
    t0 = time.perf_counter()
    fastlime.explain_instance(pre, text, num_samples=5000, random_state=1)
    row["lime_5000_seconds"] = time.perf_counter() - t0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.perf_counter()
        theory.shapley(pre, text, bow=True, positions="binomial")
        row["binomial_seconds"] = time.perf_counter() - t0
    row["exact_seconds (extrapolated)"] = per_config * 2.0 ** lay.R
    return row


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reviews", type=int, default=3)
    ap.add_argument("--profile", default="paper")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    import pandas as pd
    import torch

    import attnxai
    from attnxai.experiment.lime_corpus import full_length_reviews
    from attnxai.threads import single_threaded

    with single_threaded():
        pre = attnxai.load(attnxai.pretrained(args.profile, progress=False).path,
                           dtype=torch.float64)
        texts = full_length_reviews(attnxai.load_imdb(), args.reviews, pre.model.max_len)
        rows = [run(pre, t) | {"review": i} for i, t in enumerate(texts)]
    df = pd.DataFrame(rows)
    pd.set_option("display.width", 200)
    print(df.T.to_string())
    if args.out:
        with open(args.out, "w") as fh:
            fh.write(f"# python benchmarks/bench_deletion_exact.py {' '.join(argv or sys.argv[1:])}\n")
            df.to_csv(fh, index=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
