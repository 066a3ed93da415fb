"""Where the time of deletion's closed form goes (repeated words: binomial positions), and how
accurate the profile form's rule in ``p`` is in each mode, on the trained model.

    ATTNXAI_IMDB_ARCHIVE=... python benchmarks/deletion_cost.py [--reviews 6] [--profile paper]

Takes the first ``--reviews`` 255-token test reviews (the order of ``bench_lime_limit.py``) and
prints, one thread:

* **the rule in p**: the relative error (norm) of ``lime_limit``'s coefficients with
  ``n_nodes`` Chebyshev nodes against lime's exact discrete law of ``p`` (``n_nodes`` above the
  number of words: every value of ``p`` is a node), both modes. Replacement's effects are
  polynomials of low degree in ``p``; deletion's binomial position windows make its effects vary
  on the scale ``sqrt(p (1 - p) / n)``, so it needs many more nodes for the same accuracy.
* **the work of :func:`attnxai.theory.lime_kernels.binomial_delete`**: the (head, node ``p``,
  level ``lambda``) triples it evaluates (after the truncation of each node's rule), the window
  terms ``sum_t length(window of token t)`` they sum (four sums each: ``m0, m1, h0, h1``), and
  the share of these terms by regime of ``s = lambda e_t`` over the window of positions:
  ``dead`` (``s min eb > 40``: every term below ``e^-40``), ``flat`` (``s (max eb - min eb) <
  0.02``: an expansion in ``s`` to a few terms would replace the window) and ``full`` (the rest:
  the terms vary by a factor of order one across the window, and nothing but the sum gives it);
* **what the parts cost**, next to the whole kernel's time:

  - ``full sums``: the ``full`` terms alone in a compiled loop that does only the four window
    sums (the same lengths, on tables as large as the kernel's): what a method that did nothing
    but these sums would still cost;
  - ``tables``: the kernel with no node ``p`` at all: it still builds every level's tables
    ``exp(-lambda G_t(q))`` (each head, each level, every token and position), and nothing else;
  - ``logs``: the kernel's logarithms alone (``2 n + 2 d`` per evaluation: two per token, two per
    word) in a compiled loop that does nothing else;
  - ``1-term windows``: the kernel itself, unchanged, on windows cut to their first term (every
    window sum one product; the evaluations it made are printed, to compare): everything the
    kernel does but the window sums.

  The last line prints the kernel's time less its tables per (head, node ``p``, level
  ``lambda``, token) evaluation, with and without the window sums: what one evaluation costs as
  the kernel stands (:mod:`attnxai.theory.lime_binomial` says what a rearrangement could save).
  Compiled loops here are made per run (not numba-cached): a function made inside another has no
  importable module for numba's cache to reload it from.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import time


def _window_sums_kernel():
    import numba

    @numba.njit(fastmath=True)                          # not cached (module docstring)
    def sums(lengths, pmf, e, h, reps):             # four dot products per window, as the kernel
        size = e.shape[0] - 2 * 4096                    # tables as large as the kernel's
        acc = 0.0
        for _ in range(reps):
            o = 0
            for ln in lengths:
                pw, e0, e1, f0, f1 = pmf[o:o + ln], e[o:o + ln], e[o + 1:o + 1 + ln], \
                    h[o:o + ln], h[o + 1:o + 1 + ln]
                m0 = m1 = g0 = g1 = 0.0
                for k in range(ln):
                    m0 += pw[k] * e0[k]
                    m1 += pw[k] * e1[k]
                    g0 += pw[k] * f0[k]
                    g1 += pw[k] * f1[k]
                acc += m0 + m1 + g0 + g1
                o = (o + 97 * ln) % size          # a new place in the table each time
        return acc

    return sums


def _logs_kernel():
    import math

    import numba

    @numba.njit                                         # not cached (module docstring)
    def logs(x, reps):                           # one logarithm per value, as the kernel takes them
        acc = 0.0
        for _ in range(reps):
            for v in x:
                acc += math.log(v)
        return acc

    return logs


@contextlib.contextmanager
def _windows_cut_to_one_term(lk):
    """``lk.binomial_windows`` cuts every window to its first term while inside: the kernel then
    does one product per window sum and everything else as usual."""
    import numpy as np

    full = lk.binomial_windows

    def cut(n_other, nodes, tol, lo, length, offset, pmf):
        used = full(n_other, nodes, tol, lo, length, offset, pmf)
        length[...] = np.minimum(length, 1)
        return used

    lk.binomial_windows = cut
    try:
        yield
    finally:
        lk.binomial_windows = full


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reviews", type=int, default=6)
    p.add_argument("--profile", default="paper")
    args = p.parse_args(argv)

    import numpy as np
    import torch

    import attnxai
    from attnxai import experiment, theory
    from attnxai.theory import lime_binomial as lb
    from attnxai.theory import lime_inputs as li
    from attnxai.theory import lime_quadrature as lq
    from attnxai.threads import single_threaded

    torch.set_num_threads(1)
    pre = attnxai.pretrained(args.profile, progress=False)
    data = attnxai.load_imdb()
    limit = pre.model.max_len - 1
    texts = experiment.full_length_reviews(data, args.reviews, pre.model.max_len)
    sums, logs = _window_sums_kernel(), _logs_kernel()
    nodes_list = (13, 17, 25, 33)
    print(f"model {args.profile} ({pre.path.name}), {len(texts)} reviews of {limit} tokens, one "
          "thread\n\nrule in p: relative error of lime_limit's coefficients against lime's exact "
          "discrete law, by n_nodes (Chebyshev)")
    print(f"{'bow':>5} {'d':>4} " + " ".join(f"{n:>8}" for n in nodes_list))
    work = []
    with single_threaded():
        for text in texts:
            for bow in (True, False):
                exact = theory.lime_limit(pre, text, bow=bow, n_nodes=400)
                errs = [np.linalg.norm(theory.lime_limit(pre, text, bow=bow, n_nodes=n) - exact)
                        / np.linalg.norm(exact) for n in nodes_list]
                print(f"{str(bow):>5} {exact.size:>4} " + " ".join(f"{e:>8.1e}" for e in errs))
            work.append(_work(pre, text, li, lq, lb, np, sums, logs))
    print("\nbinomial positions (deletion, default n_nodes=25): work per review; times in ms")
    print(f"{'d':>4} {'evals':>7} {'terms (M)':>9} {'dead':>6} {'flat':>6} {'full':>6} "
          f"{'kernel':>7} {'tables':>7} {'full sums':>9} {'logs':>6} {'1-term windows':>14} "
          f"{'(evals)':>8}")
    for w in work:
        tot = w["terms"].sum()
        print(f"{w['d']:>4} {w['evals']:>7,} {tot / 1e6:>9.1f} "
              + " ".join(f"{w['terms'][i] / tot:>6.1%}" for i in range(3))
              + f" {w['kernel'] * 1e3:>7.1f} {w['tables'] * 1e3:>7.1f} {w['floor'] * 1e3:>9.1f}"
              f" {w['logs'] * 1e3:>6.1f}"
              f" {w['cut'] * 1e3:>14.1f} {w['cut_evals']:>8,}")
    keys = ("kernel", "tables", "floor", "logs", "cut")
    med = {k: statistics.median(w[k] for w in work) * 1e3 for k in keys}
    share = statistics.median(w["terms"][2] / w["terms"].sum() for w in work)
    evals = statistics.median(w["evals"] * w["n"] for w in work)
    per_eval = {k: statistics.median((w[k] - w["tables"]) / (w[e] * w["n"]) for w in work) * 1e9
                for k, e in (("kernel", "evals"), ("cut", "cut_evals"))}
    print(f"\nmedians: the kernel {med['kernel']:.1f} ms for {evals / 1e6:.2f} million "
          f"(head, p, lambda, token) evaluations; its tables alone {med['tables']:.1f} ms; its "
          f"'full' window sums alone ({share:.0%} of the terms) {med['floor']:.1f} ms; its "
          f"logarithms alone {med['logs']:.1f} ms; the kernel on 1-term windows {med['cut']:.1f} ms"
          f"\nper evaluation, tables left out: {per_eval['kernel']:.0f} ns with the window sums, "
          f"{per_eval['cut']:.0f} ns with 1-term windows")
    return 0


def _work(pre, text, li, lq, lb, np, sums, logs) -> dict:
    """One review's evaluations, window terms by regime (dead, flat, full), the kernel's time and
    the time of the 'full' window sums alone."""
    from attnxai.theory import lime_kernels as lk

    model, arr, feats = li.resolve(pre, text, True, None)
    tb = li.tables(model, arr, 1)
    pw = lq.profile_weights(len(feats), 25.0, "discrete", 25)
    K, n = tb.n_heads, tb.T - 1
    counts = np.zeros((K, pw.nodes.size), np.int64)
    lb.binomial_effects(tb, feats, pw.nodes, 1, counts=counts)
    t0 = time.perf_counter()
    for _ in range(3):
        lb.binomial_effects(tb, feats, pw.nodes, 1)
    kernel = (time.perf_counter() - t0) / 3
    owner, o, n_other = li.token_layout(feats, tb.T)
    lo = np.zeros((pw.nodes.size, n), np.int64)
    length, offset = np.zeros_like(lo), np.zeros_like(lo)
    pmf = np.empty(pw.nodes.size * (int(n_other.sum()) + 2 * n))
    lk.binomial_windows(n_other, pw.nodes, 1e-14, lo, length, offset, pmf)
    terms = np.zeros(3)
    full_lengths = []
    for k in range(K):                     # the kernel's scaling (binomial_effects)
        a = tb.a_tok[k, 1:]
        ea = np.exp(a - a.max())
        eb = np.exp(tb.b[k, :n + 2] - tb.b[k, :n + 2].max())
        g0 = float(np.exp(tb.a_tok[k, 0] + tb.b[k, 0] - a.max() - tb.b[k, :n + 2].max()))
        best = np.maximum.accumulate(eb[1:n + 2])
        lam = lq.lambda_rule_doubling(g0, g0 + float(np.sum(ea * best[1:n + 1])), 1).lam
        for i in range(pw.nodes.size):
            first = 1 + o + lo[i]                                   # window positions
            mn = np.array([eb[q:q + m + 1].min() for q, m in zip(first, length[i])])
            mx = np.array([eb[q:q + m + 1].max() for q, m in zip(first, length[i])])
            for lm in lam[:counts[k, i]]:
                s = lm * ea
                dead = s * mn > 40
                flat = ~dead & (s * (mx - mn) < 0.02)
                full = ~(dead | flat)
                terms += [length[i][dead].sum(), length[i][flat].sum(), length[i][full].sum()]
                full_lengths.append(length[i][full & (length[i] > 0)])
    lengths = np.concatenate(full_lengths).astype(np.int64)
    rng = np.random.default_rng(0)
    cells = n * (n + 3) // 2 + 1                                   # the kernel's table size
    buf = [rng.random(cells + 2 * 4096) for _ in range(3)]
    sums(lengths[:10], *buf, 1)                                     # compile before timing
    t0 = time.perf_counter()
    sums(lengths, *buf, 3)
    floor = (time.perf_counter() - t0) / 3
    # 2 n + 2 d logarithms per evaluation, of values near 1 as the kernel's mostly are
    values = 1.0 + rng.random(int(counts.sum()) * (2 * n + 2 * len(feats))) * 1e-3
    logs(values[:10], 1)
    t0 = time.perf_counter()
    logs(values, 3)
    log_time = (time.perf_counter() - t0) / 3
    t0 = time.perf_counter()
    for _ in range(3):                         # no node p: the tables of every level, nothing else
        lb.binomial_effects(tb, feats, np.empty(0), 1)
    tables = (time.perf_counter() - t0) / 3
    cut_counts = np.zeros_like(counts)
    with _windows_cut_to_one_term(lk):
        lb.binomial_effects(tb, feats, pw.nodes, 1, counts=cut_counts)
        t0 = time.perf_counter()
        for _ in range(3):
            lb.binomial_effects(tb, feats, pw.nodes, 1)
        cut = (time.perf_counter() - t0) / 3
    return {"d": len(feats), "n": n, "evals": int(counts.sum()), "terms": terms, "kernel": kernel,
            "floor": floor, "tables": tables, "logs": log_time, "cut": cut,
            "cut_evals": int(cut_counts.sum())}


if __name__ == "__main__":
    sys.exit(main())
