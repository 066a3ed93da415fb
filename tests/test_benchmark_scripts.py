"""The benchmark scripts' own arithmetic, on a tiny model (their timings are not tested)."""

from __future__ import annotations

import numpy as np

from attnxai.theory import lime_binomial as lb, lime_kernels as lk
from attnxai.theory import lime_inputs as li
from attnxai.theory import lime_quadrature as lq
from conftest import load_script, make_tiny, random_model, tiny_text


def test_deletion_cost_counts_every_window_term_once():
    """deletion_cost splits the binomial kernel's window terms into dead / flat / full: the three
    add up to the terms of the (head, node, level) triples the kernel evaluated, counted here
    independently from its windows and its per-node level counts."""
    mod = load_script("benchmarks/deletion_cost.py")
    pre = make_tiny(seed=5, n_heads=2, max_len=60, scale=2.0)
    text = tiny_text(50, seed=5, unknown=False)
    w = mod._work(pre, text, li, lq, lb, np, mod._window_sums_kernel(), mod._logs_kernel())
    model, arr, feats = li.resolve(pre, text, True, None)
    tb = li.tables(model, arr, 1)
    pw = lq.profile_weights(len(feats), 25.0, "discrete", 25)
    counts = np.zeros((tb.n_heads, pw.nodes.size), np.int64)
    lb.binomial_effects(tb, feats, pw.nodes, 1, counts=counts)
    _, _, n_other = li.token_layout(feats, tb.T)
    n = tb.T - 1
    lo = np.zeros((pw.nodes.size, n), np.int64)
    length, offset = np.zeros_like(lo), np.zeros_like(lo)
    pmf = np.empty(pw.nodes.size * (int(n_other.sum()) + 2 * n))
    lk.binomial_windows(n_other, pw.nodes, 1e-14, lo, length, offset, pmf)
    assert w["evals"] == counts.sum() > 0 and w["d"] == len(feats) < n
    assert w["terms"].sum() == sum(counts[k, i] * length[i].sum() for k in range(tb.n_heads)
                                   for i in range(pw.nodes.size))
    assert w["terms"][1] > 0 and w["terms"][2] > 0            # both regimes occur here
    assert w["kernel"] > 0 and w["floor"] > 0 and w["logs"] > 0 and w["cut"] > 0 and w["tables"] > 0
    assert w["n"] == n and w["cut_evals"] > 0


def test_deletion_cost_cuts_windows_to_one_term_only_inside():
    """The '1-term windows' timing runs the kernel on windows of length <= 1 (other words before a
    token: one term; none: no term), and the module's own binomial_windows is back afterwards."""
    mod = load_script("benchmarks/deletion_cost.py")
    n_other = np.array([0, 1, 5, 40, 200], dtype=np.int64)
    nodes = np.array([0.0, 0.3, 0.5, 1.0])

    def windows():
        lo = np.zeros((nodes.size, n_other.size), np.int64)
        length, offset = np.zeros_like(lo), np.zeros_like(lo)
        pmf = np.empty(nodes.size * (int(n_other.sum()) + 2 * n_other.size))
        lk.binomial_windows(n_other, nodes, 1e-14, lo, length, offset, pmf)
        return length

    full = windows()
    assert full.max() > 1
    original = lk.binomial_windows
    with mod._windows_cut_to_one_term(lk):
        assert np.array_equal(windows(), np.minimum(full, 1))
    assert lk.binomial_windows is original
    assert np.array_equal(windows(), full)


def test_every_mutant_still_applies_to_the_source():
    """benchmarks/mutation.py's mutants name expressions of src/attnxai: each must occur exactly
    once, or the next mutation run reports it stale instead of testing it (a change to a closed
    form updates its mutant in the same commit)."""
    import importlib.util
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    spec = importlib.util.spec_from_file_location("mutation_script", root / "benchmarks" / "mutation.py")
    mutation = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mutation                  # its dataclasses look their module up
    spec.loader.exec_module(mutation)
    src = root / "src" / "attnxai"
    stale = {m.id: (src / m.file).read_text().count(m.before) for m in mutation.MUTANTS
             if (src / m.file).read_text().count(m.before) != 1}
    assert not stale, f"mutants whose expression is not once in its file: {stale}"
    assert len({m.id for m in mutation.MUTANTS}) == len(mutation.MUTANTS)


def test_full_review_rows_resume_from_their_part_file(tmp_path, quick_model64, imdb):
    """make_deletion_errors keeps each full review's rows as it finishes: a rerun with the same
    part file recomputes nothing it holds (the rows come back equal), a longer run computes only
    the new reviews, and another tolerance, model or rule of the certified route is not taken
    from it."""
    mod = load_script("book/data/make_deletion_errors.py")
    part = tmp_path / "part.jsonl"
    rows = mod.full_review_rows(quick_model64, imdb, 2, 0.2, 1, part)
    assert len(part.read_text().splitlines()) == 2
    assert [r["value"] for r in rows] == ["LIME", "Shapley", "Banzhaf"] * 2
    assert all(r["reference_converged"] and r["reference_rel_se"] <= 0.2
               and r["reference_evaluations"] > 0 and r["reference_cpu_s"] > 0 for r in rows)
    calls = []
    real = mod.full_review_row

    def counted(pre, text, i, tol):
        calls.append(i)
        return real(pre, text, i, tol)

    mod.full_review_row = counted
    assert mod.full_review_rows(quick_model64, imdb, 2, 0.2, 1, part) == rows and calls == []
    more = mod.full_review_rows(quick_model64, imdb, 3, 0.2, 1, part)
    assert calls == [2] and more[:6] == rows and len(more) == 9
    mod.full_review_rows(quick_model64, imdb, 1, 0.3, 1, part)
    assert calls == [2, 0]
    # rows another rule of the certified route made (before its 95 % intervals), or another
    # model, are recomputed, not resumed
    import json

    lines = [json.loads(x) for x in part.read_text().splitlines()]
    part.write_text("".join(json.dumps({**rec, "rule": "one standard error"}) + "\n"
                            for rec in lines[:1])
                    + "".join(json.dumps({**rec, "model": "another"}) + "\n"
                              for rec in lines[1:2]))
    mod.full_review_rows(quick_model64, imdb, 2, 0.2, 1, part)
    assert calls == [2, 0, 0, 1]
    assert all(r["reference_rule"] == mod.sampled_rule() for r in rows)


def test_bench_train_floor_is_the_products_torch_runs():
    """bench_train's floor times the matrix products of a training step: the same multiply-adds
    as torch's flop counter counts in the forward and backward passes of both recipes (model(ids)
    and forward_rows), on a small model with padding."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    bt = load_script("benchmarks/bench_train.py")
    m = random_model(50, n_heads=3, max_len=20, init_range=0.1, dtype=torch.float32).train()
    ids = m.check_ids(m.collate([[1, 5, 6, 7, 8], [1, 9, 10], [1, 11, 12, 13, 5, 5, 16]]))
    uniq, index = torch.unique(ids, return_inverse=True)
    dims = dict(d=8, K=3, a=4, v=5, C=2)
    rows = m.W_e.detach()[uniq].clone().requires_grad_()
    for lazy, run in ((False, lambda: m(ids)),
                      (True, lambda: m.forward_rows(rows, index, m.pad_mask(ids)))):
        with FlopCounterMode(display=False) as fc:
            run().sum().backward()
        fwd = bt.forward_products(lazy, *ids.shape, uniq.numel(), **dims)
        assert 2 * bt.macs(bt.products_with_backward(fwd)) == fc.get_total_flops(), lazy
