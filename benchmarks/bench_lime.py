"""Time lime 0.2.0.1 against :func:`attnxai.lime.explain` on the same reviews.

    ATTNXAI_IMDB_ARCHIVE=... python benchmarks/bench_lime.py [--reviews 2] [--profile quick]

For each of the ``--reviews`` longest-possible test reviews (normalised with
``normalize_for_lime``: 255 tokens plus [CLS] = 256), both ``bow`` settings and
``--num-samples`` samples, it runs lime with the model's ordinary batched forward
(``Pretrained.predict_logits``) as classifier_fn and then ``attnxai.lime.explain`` with the same
seed, and prints seconds per explanation for each, the ratio, and the largest coefficient
difference. The model is loaded in float64 so that both compute the same numbers (the fast path
always works in float64). Everything runs on one thread (torch and BLAS), as in a
one-process-per-core experiment, and times are CPU seconds of this process
(``time.process_time``), which a busy shared machine distorts less than wall-clock time (both are
still slowed by contention for caches and memory). The exit status is 1 if a coefficient differs
by more than 1e-8.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np
import torch
from threadpoolctl import threadpool_limits


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reviews", type=int, default=2, help="number of 255-token reviews (default 2)")
    p.add_argument("--num-samples", type=int, default=5000)
    p.add_argument("--profile", default=os.environ.get("ATTNXAI_PROFILE", "quick"),
                   help="model profile (default: $ATTNXAI_PROFILE or quick)")
    p.add_argument("--fast-repeats", type=int, default=3,
                   help="time the fast path as the median of this many runs")
    p.add_argument("--threads", type=int, default=1)
    args = p.parse_args(argv)

    import attnxai
    from attnxai.lime import explain
    from lime.lime_text import LimeTextExplainer

    # after the imports: threadpoolctl only limits the BLAS libraries already loaded
    torch.set_num_threads(args.threads)
    threadpool_limits(args.threads)

    pre = attnxai.pretrained(args.profile, train_if_missing=args.profile == "quick",
                             progress=False, dtype=torch.float64)
    data = attnxai.load_imdb()
    limit = pre.model.max_len - 1
    texts = []
    for r in data.test:
        t = attnxai.normalize_for_lime(r.text, limit)
        if len(t.split(" ")) == limit:
            texts.append(t)
        if len(texts) == args.reviews:
            break
    from attnxai.lime import native_status

    native, why = native_status()
    print(f"model {args.profile} ({pre.path.name}), {len(texts)} reviews of {limit} tokens, "
          f"{args.num_samples} samples, {args.threads} thread(s), CPU seconds; native helper: "
          f"{'yes' if native else 'no'} ({why}); load average {os.getloadavg()[0]:.1f}")
    print(f"{'bow':>5} {'review':>6} {'d':>4} {'lime s':>8} {'fast s':>8} {'ratio':>7} "
          f"{'max |coef diff|':>16}")
    summary = {}
    for bow in (True, False):
        lime_t, fast_t, diffs = [], [], []
        for i, text in enumerate(texts):
            seed = 1000 + i
            res = explain(pre, text, bow=bow, num_samples=args.num_samples, random_state=seed)
            assert res.path == "fast", res.reason
            times = []
            for _ in range(args.fast_repeats):
                t0 = time.process_time()
                res = explain(pre, text, bow=bow, num_samples=args.num_samples, random_state=seed)
                times.append(time.process_time() - t0)
            t_fast = statistics.median(times)
            t0 = time.process_time()
            exp = LimeTextExplainer(bow=bow, mask_string="UNK", random_state=seed)
            e = exp.explain_instance(text, pre.predict_logits, labels=(1,),
                                     num_features=res.num_features, num_samples=args.num_samples)
            t_lime = time.process_time() - t0
            coef = np.zeros(res.num_features)
            for j, c in e.local_exp[1]:
                coef[j] = c
            diff = float(np.abs(coef - res.coef).max())
            lime_t.append(t_lime), fast_t.append(t_fast), diffs.append(diff)
            print(f"{str(bow):>5} {i:>6} {res.num_features:>4} {t_lime:>8.3f} {t_fast:>8.4f} "
                  f"{t_lime / t_fast:>7.1f} {diff:>16.2e}")
        summary[bow] = (statistics.mean(lime_t), statistics.mean(fast_t), max(diffs))
    print("\nmean seconds per explanation")
    worst = 0.0
    for bow, (tl, tf, dmax) in summary.items():
        print(f"  bow={bow!s:5}: lime {tl:.3f} s, attnxai.lime {tf * 1e3:.1f} ms, "
              f"{tl / tf:.0f}x faster, max coefficient difference {dmax:.1e}")
        worst = max(worst, dmax)
    return 0 if worst < 1e-8 else 1


if __name__ == "__main__":
    sys.exit(main())
