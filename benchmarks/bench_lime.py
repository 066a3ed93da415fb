"""LIME's cost: lime 0.2.0.1, attnxai.fastlime (numba and numpy loops) and the floor of any exact
LIME on all features, the Gram product X^T W X, measured in the same run.

    ATTNXAI_IMDB_ARCHIVE=... python benchmarks/bench_lime.py [--reviews 2] [--profile paper]

For each of the ``--reviews`` first test reviews that fill the model (normalised with
``normalize_for_lime``: 255 tokens plus [CLS]), both ``bow`` settings and ``--num-samples``
samples, it times, in wall-clock seconds with one thread for torch and BLAS (as in a
one-process-per-core experiment, and as a fair comparison):

* ``lime``: ``LimeTextExplainer(...).explain_instance`` with the model's batched forward
  (``Pretrained.predict_logits``) as ``classifier_fn``;
* ``fast``: :func:`attnxai.fastlime.explain_instance` (numba loops) with the same seed, and
  ``numpy``: the same with ``backend="numpy"``;
* ``gram``: ``(sqrt(W) X)^T (sqrt(W) X)`` on the same masks, the one product every exact ridge on
  all ``d`` features must form.

Each fast timing is the median of ``--repeats`` runs, interleaved with the Gram product so that a
busy machine slows both alike. It prints the ratios ``fast / gram`` (the target: at most 2) and
``lime / fast``, and the largest coefficient difference to lime (the model runs in float64, so
both compute the same numbers); the exit status is 1 if a coefficient differs by more than 1e-8.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np
import torch


def _gram(masks: np.ndarray, w: np.ndarray) -> float:
    t0 = time.perf_counter()
    xs = np.multiply(masks, np.sqrt(w)[:, None], dtype=np.float64)
    _ = xs.T @ xs
    return time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reviews", type=int, default=2, help="number of 255-token reviews")
    p.add_argument("--num-samples", type=int, default=5000)
    p.add_argument("--profile", default=os.environ.get("ATTNXAI_PROFILE", "paper"),
                   help="model profile (default: $ATTNXAI_PROFILE or paper)")
    p.add_argument("--repeats", type=int, default=7, help="runs per fast timing (median)")
    args = p.parse_args(argv)

    import attnxai
    from attnxai import fastlime
    from attnxai.threads import one_blas_thread
    from lime.lime_text import LimeTextExplainer

    torch.set_num_threads(1)
    pre = attnxai.pretrained(args.profile, progress=False, dtype=torch.float64)
    data = attnxai.load_imdb()
    limit = pre.model.max_len - 1
    texts = [t for t in (attnxai.normalize_for_lime(r.text, limit) for r in data.test)
             if len(t.split(" ")) == limit][: args.reviews]
    backend, why = fastlime.backend_status()
    print(f"model {args.profile} ({pre.path.name}), {len(texts)} reviews of {limit} tokens, "
          f"{args.num_samples} samples, one thread, wall time; compiled loops: {backend} ({why}); "
          f"load average {os.getloadavg()[0]:.1f}")
    print(f"{'bow':>5} {'d':>4} {'lime s':>8} {'fast ms':>8} {'numpy ms':>9} {'gram ms':>8} "
          f"{'fast/gram':>9} {'numpy/gram':>10} {'lime/fast':>9} {'max |diff|':>11}")
    rows = []
    with one_blas_thread():
        for bow in (True, False):
            for i, text in enumerate(texts):
                seed = 1000 + i
                kw = dict(bow=bow, num_samples=args.num_samples, random_state=seed, keep_data=True)
                res = fastlime.explain_instance(pre, text, **kw)        # warm up (compile)
                fastlime.explain_instance(pre, text, backend="numpy", **kw)
                assert res.path == "fast", res.reason
                fast, slow, gram = [], [], []
                for _ in range(args.repeats):
                    t0 = time.perf_counter()
                    fastlime.explain_instance(pre, text, bow=bow, num_samples=args.num_samples,
                                     random_state=seed)
                    fast.append(time.perf_counter() - t0)
                    gram.append(_gram(res.masks, res.weights))
                    t0 = time.perf_counter()
                    fastlime.explain_instance(pre, text, bow=bow, num_samples=args.num_samples,
                                     random_state=seed, backend="numpy")
                    slow.append(time.perf_counter() - t0)
                    gram.append(_gram(res.masks, res.weights))
                t0 = time.perf_counter()
                exp = LimeTextExplainer(bow=bow, mask_string="UNK", random_state=seed)
                e = exp.explain_instance(text, pre.predict_logits, labels=(1,),
                                         num_features=res.num_features,
                                         num_samples=args.num_samples)
                t_lime = time.perf_counter() - t0
                coef = np.zeros(res.num_features)
                for j, c in e.local_exp[1]:
                    coef[j] = c
                diff = float(np.abs(coef - res.coef).max())
                f, s, g = (statistics.median(x) for x in (fast, slow, gram))
                rows.append((bow, f, s, g, t_lime, diff))
                print(f"{str(bow):>5} {res.num_features:>4} {t_lime:>8.3f} {f * 1e3:>8.1f} "
                      f"{s * 1e3:>9.1f} {g * 1e3:>8.1f} {f / g:>9.2f} {s / g:>10.2f} "
                      f"{t_lime / f:>9.0f} {diff:>11.1e}")
    print("\nmeans over reviews")
    for bow in (True, False):
        r = [x for x in rows if x[0] == bow]
        f, s, g, tl = (statistics.mean(x[k] for x in r) for k in (1, 2, 3, 4))
        print(f"  bow={bow!s:5}: fast {f * 1e3:.1f} ms = {f / g:.2f} x the Gram product "
              f"({g * 1e3:.1f} ms); numpy loops {s * 1e3:.1f} ms = {s / g:.2f} x; "
              f"lime {tl:.2f} s = {tl / f:.0f} x fast, {tl / s:.0f} x numpy")
    return 0 if max(x[5] for x in rows) < 1e-8 else 1


if __name__ == "__main__":
    sys.exit(main())
