"""numba's own SLP vectoriser against the two hand-written LLVM-IR kernels of attnxai.fastlime.

    PYTHONPATH=src python benchmarks/bench_slp.py

The deletion sums (``kernels._group_sums``, inside ``kernels.delete_sums``) and the columns of
``X^T W X`` (``counts._gram_lanes`` / ``_gram_rows``, inside ``counts.count_gram``) are written as
llvmlite IR because numba runs LLVM without its SLP (superword-level parallelism) vectoriser.
numba has a switch for it, ``NUMBA_SLP_VECTORIZE`` (``numba.core.config.SLP_VECTORIZE``), off by
default since numba PR #8852 ("Disable SLP vectorisation due to miscompilations", xref numba
issues #8705, #8681). It is process-wide: numba reads it whenever it builds a pass pipeline
(``CPUCodegen._pass_builder`` in numba 0.68.1), there is no per-function option (numba issue
#9396 asks for one), and numba's on-disk cache key does not include it. This script sets
``numba.core.config.SLP_VECTORIZE`` only around the compilation of its own uncached copies, so
nothing else is compiled with it, and times in one process, one thread, interleaved (median of
15, CPU time), each variant first checked equal to the IR kernel to the bit:

* ``IR``: the package's kernel (``X^T W X``: eight rows a call, ``counts._ROWS``; ``IR, one row
  a call`` is the same intrinsic one row at a time, as the plain variants are written);
* ``loops``: plain numba loops (the heads or columns an inner loop of 8, the running sums in a
  small array), SLP off and on;
* ``scalars`` (deletion only): every running sum a scalar local (straight-line code, generated);
* ``flat uint``: straight-line code over flat arrays with unsigned indices (no negative-index
  wrap-around test, which stops the vectoriser), generated, SLP off and on.
"""

from __future__ import annotations

import os
import statistics
import time

import numba
import numpy as np
from numba.core import config

from attnxai.fastlime import counts as LC
from attnxai.fastlime import kernels as LK
from attnxai.fastlime.sampling import count_weights, draw

_GROUP, _LANES = LK._GROUP, LK._LANES
pop = LC._popcount


def group_loops(z, word_index, A8, B8, d, off1, off2, acc, cnt):
    # plain loops: sums in a small local array, lanes innermost
    T, stride = word_index.shape[0], A8.shape[1]
    num = np.zeros(_GROUP * _LANES)
    den = np.zeros(_GROUP * _LANES)
    q = np.zeros(_GROUP, dtype=np.int64)
    for t in range(T):
        wj = word_index[t] * _GROUP
        for s in range(_GROUP):
            keep = np.int64(z[wj + s])
            r = q[s] if keep else T
            for ll in range(_LANES):
                num[s * _LANES + ll] += A8[t, off1 + ll] * B8[r, off1 + ll] + A8[t, off2 + ll] * B8[r, off2 + ll]
                den[s * _LANES + ll] += A8[t, off2 + ll] * B8[r, off1 + ll]
            q[s] += keep
    for s in range(_GROUP):
        for ll in range(_LANES):
            acc[s * stride + off1 + ll] = num[s * _LANES + ll]
            acc[s * stride + off2 + ll] = den[s * _LANES + ll]
        cnt[s] = q[s]

def _scalar_source():
    # the same loop with every running sum a scalar local (straight-line code per token):
    # what the SLP vectoriser needs to pack lanes into vectors
    L = []
    L.append("def group_scalars(z, word_index, A8, B8, d, off1, off2, acc, cnt):")
    L.append("    T, stride = word_index.shape[0], A8.shape[1]")
    for s in range(_GROUP):
        L.append(f"    q{s} = 0")
        for ll in range(_LANES):
            L.append(f"    n{s}_{ll} = 0.0; d{s}_{ll} = 0.0")
    L.append("    for t in range(T):")
    L.append("        wj = word_index[t] * 4")
    L.append("        a = A8[t]")
    for s in range(_GROUP):
        L.append(f"        k{s} = np.int64(z[wj + {s}])")
        L.append(f"        r{s} = (q{s} - T) & (-k{s})")   # offset from the zero row, integer select
        L.append(f"        b{s} = B8[T + r{s}]")
        for ll in range(_LANES):
            L.append(f"        n{s}_{ll} += a[off1 + {ll}] * b{s}[off1 + {ll}] + a[off2 + {ll}] * b{s}[off2 + {ll}]")
            L.append(f"        d{s}_{ll} += a[off2 + {ll}] * b{s}[off1 + {ll}]")
        L.append(f"        q{s} += k{s}")
    for s in range(_GROUP):
        for ll in range(_LANES):
            L.append(f"    acc[{s} * stride + off1 + {ll}] = n{s}_{ll}; acc[{s} * stride + off2 + {ll}] = d{s}_{ll}")
        L.append(f"    cnt[{s}] = q{s}")
    ns = {"np": np}
    exec("\n".join(L), ns)
    return ns["group_scalars"]

def _flat_source():
    L = []
    L.append("def group_flat(z, word_index, A8, B8, d, off1, off2, acc, cnt):")
    L.append("    T, stride = word_index.shape[0], A8.shape[1]")
    L.append("    Af = A8.reshape(-1); Bf = B8.reshape(-1)")
    L.append("    o1 = np.uint64(off1); o2 = np.uint64(off2); st = np.uint64(stride)")
    L.append("    zrow = np.uint64(T) * st")
    for s in range(_GROUP):
        L.append(f"    u{s} = np.uint64(0)")
        for ll in range(_LANES):
            L.append(f"    n{s}_{ll} = 0.0; d{s}_{ll} = 0.0")
    L.append("    for t in range(T):")
    L.append("        wj = np.uint64(word_index[t]) * np.uint64(4)")
    L.append("        ar = np.uint64(t) * st")
    for s in range(_GROUP):
        L.append(f"        k{s} = np.uint64(z[wj + np.uint64({s})])")
        L.append(f"        br{s} = (u{s} & (np.uint64(0) - k{s})) | (zrow & (k{s} - np.uint64(1)))")
        for ll in range(_LANES):
            L.append(f"        n{s}_{ll} += Af[ar + o1 + np.uint64({ll})] * Bf[br{s} + o1 + np.uint64({ll})] + Af[ar + o2 + np.uint64({ll})] * Bf[br{s} + o2 + np.uint64({ll})]")
            L.append(f"        d{s}_{ll} += Af[ar + o2 + np.uint64({ll})] * Bf[br{s} + o1 + np.uint64({ll})]")
        L.append(f"        u{s} += st & (np.uint64(0) - k{s})")
    for s in range(_GROUP):
        for ll in range(_LANES):
            L.append(f"    acc[{s} * stride + off1 + {ll}] = n{s}_{ll}; acc[{s} * stride + off2 + {ll}] = d{s}_{ll}")
        L.append(f"    cnt[{s}] = np.int64(u{s} // st)")
    ns = {"np": np}
    exec("\n".join(L), ns)
    return ns["group_flat"]

def make_driver(group):
    def delete_sums(masks, word_index, A, B, out, counts):
        n, d = masks.shape
        T = word_index.shape[0]
        K = A.shape[1] // 2
        P = -(-K // _LANES) * _LANES
        A8 = np.zeros((T, 2 * P)); B8 = np.zeros((T + 1, 2 * P))
        for t in range(T):
            for k in range(K):
                A8[t, k] = A[t, k]; A8[t, P + k] = A[t, K + k]
                B8[t, k] = B[t, k]; B8[t, P + k] = B[t, K + k]
        z = np.zeros(_GROUP * d, dtype=np.uint8)
        acc = np.empty(_GROUP * 2 * P); cnt = np.empty(_GROUP, dtype=np.int64)
        for i0 in range(0, n, _GROUP):
            g = min(_GROUP, n - i0)
            for s in range(g):
                for j in range(d):
                    z[j * _GROUP + s] = masks[i0 + s, j] != 0
            for s in range(g, _GROUP):
                for j in range(d):
                    z[j * _GROUP + s] = 0
            for b in range(0, P, _LANES):
                group(z, word_index, A8, B8, d, b, P + b, acc, cnt)
            for s in range(g):
                counts[i0 + s] = cnt[s]
                for k in range(K):
                    out[i0 + s, k] = acc[s * 2 * P + k]; out[i0 + s, K + k] = acc[s * 2 * P + P + k]
    return delete_sums

def lanes_loops(bits, bits_t, starts, wg, j, l0, out):
    acc = np.zeros(_LANES)
    ci = np.zeros(_LANES, dtype=np.uint64)
    for g in range(starts.shape[0] - 1):
        lo, hi = starts[g], starts[g + 1]
        if lo < hi:
            for ll in range(_LANES):
                ci[ll] = 0
            for w in range(lo, hi):
                v = bits_t[j, w]
                for ll in range(_LANES):
                    ci[ll] += pop(v & bits[w, l0 + ll])
            for ll in range(_LANES):
                acc[ll] += wg[g] * np.float64(np.int64(ci[ll]))
    for ll in range(_LANES):
        out[ll] = acc[ll]

def _flat_source_gram():
    L = ["def lanes_flat(bits, bits_t, starts, wg, j, l0, out):",
         "    bf = bits.reshape(-1); tf = bits_t.reshape(-1)",
         "    st = np.uint64(bits.shape[1]); nw = np.uint64(bits_t.shape[1])",
         "    tr = np.uint64(j) * nw; col0 = np.uint64(l0)"]
    for ll in range(_LANES):
        L.append(f"    a{ll} = 0.0")
    L.append("    for g in range(starts.shape[0] - 1):")
    L.append("        lo = np.uint64(starts[g]); hi = np.uint64(starts[g + 1])")
    L.append("        if lo < hi:")
    for ll in range(_LANES):
        L.append(f"            c{ll} = np.uint64(0)")
    L.append("            w = lo")
    L.append("            while w < hi:")
    L.append("                v = tf[tr + w]; r = w * st + col0")
    for ll in range(_LANES):
        L.append(f"                c{ll} += pop(v & bf[r + np.uint64({ll})])")
    L.append("                w += np.uint64(1)")
    L.append("            x = wg[g]")
    for ll in range(_LANES):
        L.append(f"            a{ll} += x * np.float64(np.int64(c{ll}))")
    for ll in range(_LANES):
        L.append(f"    out[{ll}] = a{ll}")
    ns = {"np": np, "pop": pop}
    exec("\n".join(L), ns)
    return ns["lanes_flat"]

def make_gram_driver(lanes_fn):
    def count_gram(bits, bits_t, starts, wg, gram):
        d = gram.shape[0]
        lanes = np.empty(_LANES)
        for l0 in range(0, d, _LANES):
            for j in range(l0, d):
                lanes_fn(bits, bits_t, starts, wg, j, l0, lanes)
                for ll in range(min(_LANES, j + 1 - l0)):
                    gram[j, l0 + ll] = lanes[ll]
        for j in range(d):
            for ll in range(j):
                gram[ll, j] = gram[j, ll]
    return count_gram


def compile_with(slp, make, fn, args):
    """``make(njit(fn))`` compiled now (uncached) with numba's SLP vectoriser ``slp``."""
    old = config.SLP_VECTORIZE
    config.SLP_VECTORIZE = slp
    try:
        drv = numba.njit(make(numba.njit(fn)))
        drv(*args)
    finally:
        config.SLP_VECTORIZE = old
    return drv


def race(title, variants, args, fresh, same):
    ref = fresh()
    variants["IR"](*args, *ref)
    for name, f in variants.items():
        out = fresh()
        f(*args, *out)
        assert same(out, ref), name
    times = {k: [] for k in variants}
    for _ in range(15):
        for name, f in variants.items():
            out = fresh()
            t0 = time.process_time()
            f(*args, *out)
            times[name].append(time.process_time() - t0)
    base = statistics.median(times["IR"])
    print(f"{title} (load average {os.getloadavg()[0]:.2f})")
    for name, v in times.items():
        m = statistics.median(v)
        print(f"  {name:18s} {m * 1e3:7.3f} ms = {m / base:5.2f}x the IR (equal to the bit)")


def main() -> None:
    rng = np.random.default_rng(0)
    T, d, K, n = 255, 150, 6, 5000
    word_index = np.concatenate([np.arange(d), rng.integers(0, d, T - d)]).astype(np.int64)
    A, B = rng.random((T, 2 * K)), rng.random((T, 2 * K))
    masks, kept, _ = draw(d, n, np.random.RandomState(1), "auto")
    z = masks.view(np.uint8)
    args = (z, word_index, A, B)

    def fresh():
        return np.empty((n, 2 * K)), np.empty(n, dtype=np.int64)

    probe = (*args, *fresh())
    variants = {"IR": LK.delete_sums}
    for slp in (0, 1):
        variants[f"loops, SLP={slp}"] = compile_with(slp, make_driver, group_loops, probe)
        variants[f"scalars, SLP={slp}"] = compile_with(slp, make_driver, _scalar_source(), probe)
        variants[f"flat uint, SLP={slp}"] = compile_with(slp, make_driver, _flat_source(), probe)
    race(f"deletion sums, T={T}, d={d}, K={K}, n={n}", variants, args, fresh,
         lambda a, b: np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1]))

    d = 168
    masks, kept, _ = draw(d, n, np.random.RandomState(2), "auto")
    w, y = count_weights(kept, d, 25.0), rng.random(n)
    _, starts = LC.count_groups(kept, d)
    W = int(starts[-1])
    bits = np.zeros((W, LC._row_stride(d)), dtype=np.uint64)
    bits_t = np.zeros((d, W), dtype=np.uint64)
    wg, xtwy = np.zeros(d + 1), np.zeros(d)
    LC.pack_rows(masks.view(np.uint8), kept, w, y, starts, bits, bits_t, wg, xtwy)
    args = (bits, bits_t, starts, wg)
    probe = (*args, np.zeros((d, d)))
    variants = {"IR": LC.count_gram}
    one_row = numba.njit(make_gram_driver(LC._gram_lanes))      # the IR, one row a call, as the
    one_row(*probe)                                             # plain variants below
    variants["IR, one row a call"] = one_row
    for slp in (0, 1):
        variants[f"loops, SLP={slp}"] = compile_with(slp, make_gram_driver, lanes_loops, probe)
        variants[f"flat uint, SLP={slp}"] = compile_with(slp, make_gram_driver, _flat_source_gram(),
                                                         probe)
    race(f"X^T W X, d={d}, n={n}", variants, args, lambda: (np.zeros((d, d)),),
         lambda a, b: np.array_equal(a[0], b[0]))


if __name__ == "__main__":
    main()
