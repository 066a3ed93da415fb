"""The cost of LIME's closed-form limit (:func:`attnxai.theory.lime_limit`) next to one LIME run
(:func:`attnxai.fastlime.explain_instance`, 5,000 samples) on the same reviews, measured in the same
run.

    ATTNXAI_IMDB_ARCHIVE=... python benchmarks/bench_lime_limit.py [--reviews 12] [--profile paper]

Takes the first ``--reviews`` test reviews (in ``experiment.review_order``) that fill the model
(255 tokens after :func:`attnxai.normalize_for_lime`) and, for each and both ``bow`` settings,
times with one thread for torch and BLAS (as a corpus worker runs):

* ``limit``: ``theory.lime_limit(pre, text, bow=bow)`` with its defaults (deletion: lime's own law
  by the chain over kept tokens; replacement: independent removal, the profile form);
* ``lime``: ``fastlime.explain_instance(pre, text, bow=bow, num_samples=5000)``;

each the median of ``--repeats`` calls, the two interleaved so that a busy machine slows both
alike. Wall-clock and CPU (process) times are printed, with the load average before and after:
on a shared machine the CPU time is the steadier measure. ``--approximations`` also times every
entry of ``theory.APPROXIMATIONS`` once per review (what a corpus row costs beyond LIME).
``benchmarks/deletion_cost.py`` shows where deletion's time goes and how accurate the rule in
``p`` is in each mode.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import warnings


def _timed(fn, repeats: int) -> tuple[float, float]:
    wall, cpu = [], []
    for _ in range(repeats):
        w0, c0 = time.perf_counter(), time.process_time()
        fn()
        wall.append(time.perf_counter() - w0)
        cpu.append(time.process_time() - c0)
    return statistics.median(wall), statistics.median(cpu)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reviews", type=int, default=12, help="number of 255-token reviews")
    p.add_argument("--profile", default=os.environ.get("ATTNXAI_PROFILE", "paper"))
    p.add_argument("--repeats", type=int, default=7, help="calls per timing (median)")
    p.add_argument("--num-samples", type=int, default=5000)
    p.add_argument("--approximations", action="store_true",
                   help="also time every entry of theory.APPROXIMATIONS")
    args = p.parse_args(argv)

    import numpy as np
    import torch

    import attnxai
    from attnxai import experiment, fastlime, theory
    from attnxai.threads import single_threaded

    torch.set_num_threads(1)
    # the defaults are timed knowingly (binomial positions for repeated words): not warned per call
    warnings.simplefilter("ignore", theory.LimitApproximationWarning)
    pre = attnxai.pretrained(args.profile, progress=False)
    data = attnxai.load_imdb()
    limit = pre.model.max_len - 1
    texts = experiment.full_length_reviews(data, args.reviews, pre.model.max_len)
    load0 = os.getloadavg()
    print(f"model {args.profile} ({pre.path.name}), {len(texts)} reviews of {limit} tokens, "
          f"one thread, median of {args.repeats}; load average {load0[0]:.2f} {load0[1]:.2f}")
    print(f"{'bow':>5} {'d':>4} {'limit ms':>9} {'(cpu)':>7} {'lime ms':>8} {'(cpu)':>7} "
          f"{'lime/limit':>10}")
    rows = []
    with single_threaded():
        for bow in (True, False):
            for text in texts:
                beta = theory.lime_limit(pre, text, bow=bow)           # warm up (compile)
                fastlime.explain_instance(pre, text, bow=bow, num_samples=args.num_samples,
                                          random_state=0)
                lw, lc, xw, xc = [], [], [], []
                for r in range(args.repeats):
                    w, c = _timed(lambda: theory.lime_limit(pre, text, bow=bow), 1)
                    lw.append(w)
                    lc.append(c)
                    w, c = _timed(lambda r=r: fastlime.explain_instance(
                        pre, text, bow=bow, num_samples=args.num_samples, random_state=r), 1)
                    xw.append(w)
                    xc.append(c)
                lim_w, lim_c, lime_w, lime_c = (statistics.median(x) for x in (lw, lc, xw, xc))
                rows.append((bow, lim_w, lim_c, lime_w, lime_c))
                print(f"{str(bow):>5} {beta.size:>4} {lim_w * 1e3:>9.1f} {lim_c * 1e3:>7.1f} "
                      f"{lime_w * 1e3:>8.1f} {lime_c * 1e3:>7.1f} {lime_w / lim_w:>10.2f}")
        if args.approximations:
            print("\nper approximation, one call per review (ms, wall / cpu), both bow settings")
            for name, ap in theory.APPROXIMATIONS.items():
                for bow in (True, False):
                    ts = [_timed(lambda t=t: ap(pre, t, bow=bow, kernel_width=25.0), 1)
                          for t in texts]
                    w = statistics.median(x[0] for x in ts)
                    c = statistics.median(x[1] for x in ts)
                    print(f"  {name:>14} bow={bow!s:5}: {w * 1e3:7.1f} / {c * 1e3:7.1f}")
    load1 = os.getloadavg()
    print("\nmedians over reviews (ms): wall time, then CPU time")
    for bow in (True, False):
        r = [x for x in rows if x[0] == bow]
        med = [statistics.median(x[k] for x in r) * 1e3 for k in (1, 2, 3, 4)]
        print(f"  bow={bow!s:5}: lime_limit {med[0]:.1f} (cpu {med[1]:.1f}) | "
              f"fastlime.explain_instance {args.num_samples} samples {med[2]:.1f} "
              f"(cpu {med[3]:.1f})")
    print(f"load average after: {load1[0]:.2f} {load1[1]:.2f}")
    return 0 if np.isfinite([x[1] for x in rows]).all() else 1


if __name__ == "__main__":
    sys.exit(main())
