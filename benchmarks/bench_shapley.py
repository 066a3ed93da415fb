"""Chapter 9's speed targets, ratios measured in one run with one thread each: the closed-form
Shapley values of a 255-token review (:func:`attnxai.theory.shapley`) against

* LIME's closed-form limit for the same review and mode (:func:`attnxai.theory.lime_limit`):
  target at most 2x its time;
* shap's permutation explainer (shap 0.51.0, a test peer) run to a relative error of 1e-2
  (norm 2, against the exact values of replacement): target at least 100x faster.

    ATTNXAI_IMDB_ARCHIVE=... python benchmarks/bench_shapley.py [--reviews 3] [--profile paper] \\
        [--repeats 5] [--out book/data/shapley_speed.csv]

shap is given the fastest model evaluation the package has, the fast LIME's float64 evaluator of
perturbed documents (:class:`attnxai.fastlime.problem.Problem`: the game ``v(z)`` for a 0/1 mask
of lime's features, exactly the logit of the perturbed document), so that what is compared is the
algorithms, not two implementations of the network. Its error falls about as the inverse square
root of its evaluations; they grow from ``2^17`` by factors sqrt(2) until the error is below the target
(the time of that one run is reported), for ``--seeds`` seeds: the medians over the seeds of the
evaluations and the time are reported, the estimate's randomness making one seed's crossing
noisy. The times are medians of ``--repeats`` calls, interleaved
(lime_limit, shapley, lime_limit, ...) so that a busy machine slows both alike; CPU time is
recorded too, and the ratios are of CPU times (on a shared machine the wall time also counts the
time a process waits for a core). Exit status 1 when a target is missed.

``book/data/make_shapley_peers.py`` uses the helpers below for chapter 9's error curves.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time


def timed(fn, repeats: int = 1) -> tuple[float, float]:
    """Median wall and CPU seconds of ``repeats`` calls of ``fn``."""
    wall, cpu = [], []
    for _ in range(repeats):
        w0, c0 = time.perf_counter(), time.process_time()
        fn()
        wall.append(time.perf_counter() - w0)
        cpu.append(time.process_time() - c0)
    return statistics.median(wall), statistics.median(cpu)


def relative_error(a, b) -> float:
    import numpy as np

    return float(np.linalg.norm(np.asarray(a) - b) / np.linalg.norm(b))


class PeerGame:
    """The game of one review for shap: ``self(Z)`` the explained logit on every 0/1 mask row of
    lime's features (``bow``: delete words; else replace positions by UNK), counting the
    evaluations."""

    def __init__(self, pre, text: str, bow: bool, target: int = 1):
        from attnxai.fastlime.problem import Problem

        self.problem = Problem(pre, text, bow=bow, mask_string="UNK", target=target,
                               path="fast", chunk_size=8192, backend="auto")
        self.d = len(self.problem.words)
        self.calls = 0

    def __call__(self, Z):
        import numpy as np

        Z = np.asarray(Z)
        self.calls += len(Z)
        return np.concatenate([self.problem.evaluator(Z[s:s + 8192])
                               for s in range(0, len(Z), 8192)])


def permutation_values(game: PeerGame, evals: int, seed: int = 0):
    """shap's PermutationExplainer with ``max_evals=evals``: (values (d,), wall s, CPU s,
    evaluations)."""
    import numpy as np
    import shap

    masker = shap.maskers.Independent(np.zeros((1, game.d)), max_samples=1)
    ex = shap.PermutationExplainer(game, masker, seed=seed)
    game.calls = 0
    t0, c0 = time.perf_counter(), time.process_time()
    out = ex(np.ones((1, game.d)), max_evals=int(evals), silent=True)
    return out.values[0], time.perf_counter() - t0, time.process_time() - c0, game.calls


def kernel_values(game: PeerGame, nsamples: int, seed: int = 0):
    """shap's KernelExplainer with ``nsamples`` coalitions, no l1 selection (``l1_reg=False``:
    the plain weighted regression, unbiased): (values (d,), wall s, CPU s, evaluations)."""
    import numpy as np
    import shap

    np.random.seed(seed)                         # KernelExplainer draws from numpy's global RNG
    ex = shap.KernelExplainer(game, np.zeros((1, game.d)))
    game.calls = 0
    t0, c0 = time.perf_counter(), time.process_time()
    v = ex.shap_values(np.ones((1, game.d)), nsamples=int(nsamples), silent=True, l1_reg=False)
    return (np.asarray(v).reshape(-1), time.perf_counter() - t0, time.process_time() - c0,
            game.calls)


def evaluations_to(run, exact, target: float, start: int, cap: int):
    """Grow the evaluations from ``start`` by sqrt(2) until ``run(evals)`` is within ``target``
    of ``exact``: ``(evals, wall s, CPU s, error)`` of the first run that is, or of the last one
    (at most ``cap``) when none is."""
    evals = float(start)
    while True:
        values, wall, cpu, _ = run(int(evals))
        err = relative_error(values, exact)
        if err <= target or evals * 2 ** 0.5 > cap:
            return int(evals), wall, cpu, err
        evals *= 2 ** 0.5


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reviews", type=int, default=3, help="number of 255-token reviews")
    p.add_argument("--profile", default=os.environ.get("ATTNXAI_PROFILE", "paper"))
    p.add_argument("--repeats", type=int, default=5, help="calls per timing (median)")
    p.add_argument("--target-error", type=float, default=1e-2)
    p.add_argument("--seeds", type=int, default=3,
                   help="shap runs (seeds) per review; their median evaluations and time")
    p.add_argument("--max-evals", type=int, default=2 ** 25, help="shap's largest budget")
    p.add_argument("--out", default=None, help="also write the rows as CSV (with a # header)")
    args = p.parse_args(argv)
    from attnxai.store.provenance import code_label

    code = code_label()                               # the code as it starts

    import numpy as np
    import pandas as pd
    import torch

    import attnxai
    from attnxai import experiment, theory
    from attnxai.store.provenance import code_label, loadavg
    from attnxai.threads import single_threaded

    torch.set_num_threads(1)
    pre = attnxai.pretrained(args.profile, progress=False)
    texts = experiment.full_length_reviews(attnxai.load_imdb(), args.reviews, pre.model.max_len)
    load0 = loadavg()
    started = time.time()
    print(f"model {args.profile} ({pre.path.name}), {len(texts)} reviews of "
          f"{pre.model.max_len - 1} tokens, one thread, median of {args.repeats}; load average "
          f"{load0}")
    rows = []
    with single_threaded():
        for i, text in enumerate(texts):
            for bow in (True, False):
                theory.lime_limit(pre, text, bow=bow)                 # warm up (compile)
                theory.shapley(pre, text, bow=bow)
                lw, lc, sw, sc = [], [], [], []
                for _ in range(args.repeats):
                    w, c = timed(lambda: theory.lime_limit(pre, text, bow=bow))
                    lw.append(w)
                    lc.append(c)
                    w, c = timed(lambda: theory.shapley(pre, text, bow=bow))
                    sw.append(w)
                    sc.append(c)
                row = {"review": i, "mode": "delete" if bow else "replace",
                       "d": len(theory.shapley(pre, text, bow=bow)),
                       "limit_ms": statistics.median(lw) * 1e3,
                       "limit_cpu_ms": statistics.median(lc) * 1e3,
                       "shapley_ms": statistics.median(sw) * 1e3,
                       "shapley_cpu_ms": statistics.median(sc) * 1e3}
                # the ratios on CPU time: on a shared machine the wall time also counts the
                # time the process waited for a core
                row["shapley_over_limit"] = row["shapley_cpu_ms"] / row["limit_cpu_ms"]
                if not bow:                  # replacement: the exact values are the reference
                    exact = theory.shapley(pre, text, bow=False, method="chain", ksub=3)
                    game = PeerGame(pre, text, bow=False)
                    permutation_values(game, 1000)                    # warm up (shap's numba)
                    runs = [evaluations_to(lambda n, sd=sd: permutation_values(game, n, sd),
                                           exact, args.target_error, 2 ** 17, args.max_evals)
                            for sd in range(args.seeds)]           # the median over seeds
                    evals, wall, cpu = (statistics.median(r[k] for r in runs) for k in (0, 1, 2))
                    row |= {"shap_permutation_evals": evals, "shap_permutation_s": wall,
                            "shap_permutation_cpu_s": cpu,
                            "shap_permutation_error": max(r[3] for r in runs),
                            "shap_seeds": args.seeds,
                            "shap_over_shapley": cpu / (row["shapley_cpu_ms"] / 1e3)}
                rows.append(row)
                print("  " + ", ".join(f"{k} {v:.4g}" if isinstance(v, float) else f"{k} {v}"
                                       for k, v in row.items()), flush=True)
    df = pd.DataFrame(rows)
    load1 = loadavg()
    ratio = df.groupby("mode")["shapley_over_limit"].max()
    faster = df["shap_over_shapley"].dropna()
    reached = (df["shap_permutation_error"].dropna() <= args.target_error).all()
    ok_limit = bool((ratio <= 2.0).all())
    ok_shap = bool(reached and (faster >= 100).all())
    print(f"\nshapley / lime_limit (CPU time), largest over reviews: "
          + ", ".join(f"{m} {r:.2f}" for m, r in ratio.items())
          + f"  (target <= 2: {'met' if ok_limit else 'MISSED'})")
    print(f"shap permutation to {args.target_error:g} / shapley (replace, CPU time): "
          f"{faster.min():.0f}x to {faster.max():.0f}x  (target >= 100: "
          f"{'met' if ok_shap else 'MISSED'})")
    print(f"load average after: {load1}")
    if args.out:
        from attnxai.experiment.bookdata import write_summary

        header = [f"# command: python benchmarks/bench_shapley.py "
                  + " ".join(argv if argv is not None else sys.argv[1:]),
                  f"#   code: {code}; wall time {time.time() - started:.0f} s; "
                  f"load average before {load0}, after {load1}; one thread",
                  f"# targets: shapley <= 2 x lime_limit (met: {ok_limit}); shap permutation "
                  f"to {args.target_error:g} >= 100 x shapley (met: {ok_shap})"]
        write_summary(args.out, header, df, "%.6g")
    return 0 if ok_limit and ok_shap else 1


if __name__ == "__main__":
    sys.exit(main())
