"""Time the numba kernels of :mod:`attnxai.fastlime.kernels` against their numpy twins.

    python benchmarks/bench_lime_kernels.py [--d 255] [--num-samples 5000] [--T 255] [--K 6]

Two operations, as one LIME explanation of a 255-word review with lime's default 5000 samples
does them: lime's mask sampling (:func:`sample_masks`: ``randint`` plus one Fisher-Yates
shuffle per sample) and the ``bow=True`` deletion sums (:func:`deletion_sums`, ``T`` tokens,
``K`` heads; the numpy path's table, built once per document, is timed apart). Times are
wall-clock seconds (``time.perf_counter``), the best of ``--repeats`` interleaved runs, on one thread, with
the numba/numpy ratio measured in the same run; the results of both backends are checked equal.

The first call of a numba kernel compiles it or loads it from numba's on-disk cache; both are
reported separately, each measured in a fresh child process whose ``NUMBA_CACHE_DIR`` is a new
empty folder (first child: compile and write the cache; second: load it), after numba's own
one-time start-up in that process (timed on a trivial function, reported too), besides this
process's own first calls (which use the cache next to the module).
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402


def _inputs(d: int, num_samples: int, T: int, K: int):
    """Masks' seed, word_index (T tokens over d words) and the A, B tables of a document."""
    rng = np.random.default_rng(0)
    word_index = np.concatenate([np.arange(min(d, T)), rng.integers(0, d, max(0, T - d))])
    A = np.concatenate([rng.normal(size=(T, K)), np.exp(-rng.exponential(2, (T, K)))], 1)
    A[:, :K] *= A[:, K:]
    B = np.concatenate([np.exp(-rng.exponential(2, (T, K))), rng.normal(size=(T, K))], 1)
    B[:, K:] *= B[:, :K]
    return word_index.astype(np.int64), A, B


def _first_call(args) -> dict:
    """Child process: time the first numba call of each kernel (compile or cache load)."""
    from attnxai.fastlime import kernels as LK

    word_index, A, B = _inputs(args.d, args.num_samples, args.T, args.K)
    t = time.perf_counter()
    LK.numba.njit(lambda x: x + 1)(1)        # numba's one-time start-up, on a trivial function
    t0 = time.perf_counter()
    masks, used = LK.sample_masks(args.d, args.num_samples, np.random.RandomState(0), "numba")
    t1 = time.perf_counter()
    LK.deletion_sums(masks, word_index, A, B, backend="numba")
    t2 = time.perf_counter()
    hits = sum(sum(f.stats.cache_hits.values())
               for f in (LK.shuffle_masks, LK.delete_sums, LK._mt_twist, LK._temper))
    return {"init": t0 - t, "masks": t1 - t0, "sums": t2 - t1, "cache_hits": hits,
            "backend": used}


def _best(fns: dict, repeats: int) -> dict:
    """Best wall time of each function over ``repeats`` rounds, the functions interleaved in
    every round so that a busy spell of a shared machine hits them alike."""
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(repeats):
        for name, fn in fns.items():
            t = time.perf_counter()
            fn()
            best[name] = min(best[name], time.perf_counter() - t)
    return best


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--d", type=int, default=255, help="features (distinct words), default 255")
    p.add_argument("--num-samples", type=int, default=5000)
    p.add_argument("--T", type=int, default=255, help="tokens of the document, default 255")
    p.add_argument("--K", type=int, default=6, help="heads, default 6")
    p.add_argument("--repeats", type=int, default=7, help="best of this many runs (default 7)")
    p.add_argument("--first-call", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.first_call:
        print(json.dumps(_first_call(args)))
        return 0

    from attnxai.fastlime import kernels as LK

    print(f"d={args.d} num_samples={args.num_samples} T={args.T} K={args.K} "
          f"best of {args.repeats}, one thread; {LK.backend_status()[1]}")
    if LK.numba is None:
        print("numba is not installed: nothing to compare")
        return 1

    # ---- first calls: compile, then cache load, each in a fresh process on an empty cache dir
    print("\nfirst call of the numba kernels (fresh process each):")
    with tempfile.TemporaryDirectory(prefix="attnxai-numba-cache-") as cache_dir:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache_dir)
        env.pop("ATTNXAI_NATIVE", None)
        cmd = [sys.executable, os.path.abspath(__file__), "--first-call", "--d", str(args.d),
               "--num-samples", str(args.num_samples), "--T", str(args.T), "--K", str(args.K)]
        for label in ("compile (empty cache)", "cache load"):
            res = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
            if res.returncode != 0:
                print(res.stderr)
                return 1
            r = json.loads(res.stdout.strip().splitlines()[-1])
            print(f"  {label:22s} masks {r['masks']:7.3f} s   deletion sums {r['sums']:7.3f} s"
                  f"   (cache hits {r['cache_hits']}; after numba's start-up, "
                  f"{r['init']:.3f} s)")

    word_index, A, B = _inputs(args.d, args.num_samples, args.T, args.K)
    t = time.perf_counter()
    LK.sample_masks(args.d, args.num_samples, np.random.RandomState(0), "numba")
    t1 = time.perf_counter()
    masks, _ = LK.sample_masks(args.d, args.num_samples, np.random.RandomState(0), "numpy")
    t2 = time.perf_counter()
    LK.deletion_sums(masks, word_index, A, B, backend="numba")
    t3 = time.perf_counter()
    print(f"  {'this process':22s} masks {t1 - t:7.3f} s   deletion sums {t3 - t2:7.3f} s"
          f"   (cache next to the module; masks include numba's start-up)")
    print("  (times include one run of each kernel on the inputs below)")

    # ---- steady state, both backends in this run
    def masks_with(backend):
        return lambda: LK.sample_masks(args.d, args.num_samples, np.random.RandomState(0),
                                       backend)

    m_numba, _ = masks_with("numba")()
    m_numpy, _ = masks_with("numpy")()
    table = LK.delete_table(A, B)
    s_numba = LK.deletion_sums(masks, word_index, A, B, backend="numba")
    s_numpy = LK.deletion_sums(masks, word_index, A, B, backend="numpy", table=table)
    if not (np.array_equal(m_numba, m_numpy) and np.array_equal(s_numba[0], s_numpy[0])
            and np.array_equal(s_numba[1], s_numpy[1])):
        print("the backends' results differ")
        return 1

    best = _best({
        "masks numba": masks_with("numba"),
        "masks numpy": masks_with("numpy"),
        "sums numba": lambda: LK.deletion_sums(masks, word_index, A, B, backend="numba"),
        "sums numpy": lambda: LK.deletion_sums(masks, word_index, A, B, backend="numpy",
                                               table=table),
        "table": lambda: LK.delete_table(A, B),
    }, args.repeats)
    tm_numba, tm_numpy = best["masks numba"], best["masks numpy"]
    ts_numba, ts_numpy, t_table = best["sums numba"], best["sums numpy"], best["table"]

    print("\nsteady state (best of {}):".format(args.repeats))
    print(f"  {'':28s}{'numba':>10s}{'numpy':>10s}{'numpy/numba':>13s}")
    print(f"  {'mask sampling':28s}{tm_numba * 1e3:8.2f}ms{tm_numpy * 1e3:8.2f}ms"
          f"{tm_numpy / tm_numba:12.1f}x")
    print(f"  {'deletion sums (table given)':28s}{ts_numba * 1e3:8.2f}ms{ts_numpy * 1e3:8.2f}ms"
          f"{ts_numpy / ts_numba:12.1f}x")
    print(f"  {'  + numpy table, per doc':28s}{'':10s}{t_table * 1e3:8.2f}ms"
          f"{(ts_numpy + t_table) / ts_numba:12.1f}x")
    print("results equal to the bit: yes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
