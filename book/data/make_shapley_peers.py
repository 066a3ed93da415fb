"""Measure chapter 9's closed forms against brute force, shap and captum, and write the tables
the chapter reads.

    python book/data/make_shapley_peers.py [--profile paper] [--reviews 3]

Needs the test peers (``pip install -e '.[test]'``: shap 0.51.0, captum 0.9.0). One thread. Writes,
in ``book/data/``:

* ``shapley_exactness.csv``: the largest error of the closed forms (default settings, and the
  tightest lambda rule) against the sum over all ``2^d`` coalitions, on random float64 models
  (``theory.lime_exhaustive.random_model``, ``d`` = 4, 8, 12, distinct words) and on the trained
  model (deletion: the longest beginning of a test review with at most 12 distinct words, so
  with repeated words; replacement: its first 12 words); shap's exact explainer
  against the same sums;
* ``shapley_convergence.csv``: shap's permutation and kernel explainers on full-length (255-token)
  reviews, both modes: their error (norm 2, relative) against the closed form as their
  evaluations grow (one seed per budget; a second seed at the largest budget gives the spread of
  the estimate itself), with wall and CPU seconds, and the closed form's own time;
* ``ig_captum.csv``: Integrated Gradients on the same reviews (the model in float64, the UNK
  baseline): the error of captum's IntegratedGradients (every rule it offers) and of the closed
  form's Gauss-Legendre rule against the converged closed form, as the steps (nodes) grow, with
  their times.

Every file starts with ``#`` lines: the command, the code, the versions, the wall time.
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib.util
import math
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


def _bench():
    """benchmarks/bench_shapley.py (its shap helpers: one definition of the peers' games)."""
    spec = importlib.util.spec_from_file_location("bench_shapley",
                                                  ROOT / "benchmarks" / "bench_shapley.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _max_rel(a, b) -> float:
    import numpy as np

    return float(np.abs(np.asarray(a) - b).max() / max(np.abs(b).max(), 1e-300))


def exactness(pre, data, rows_out: list, bench) -> None:
    import numpy as np
    import shap

    from attnxai import experiment, theory
    from attnxai.theory import lime_exhaustive as lx
    from attnxai.theory import shapley_exhaustive as sx
    from attnxai.theory.lime_inputs import resolve

    def shap_exact(v_fn, d):
        masker = shap.maskers.Independent(np.zeros((1, d)), max_samples=1)
        return shap.explainers.Exact(v_fn, masker)(np.ones((1, d))).values[0]

    def check(case, model_or_pre, ids, mode, d, distinct):
        bow = mode == "delete"
        model, arr, feats = resolve(model_or_pre, ids, bow, None)
        v, _ = sx.game_table(model, arr, feats, bow=bow)
        ref_s, ref_b = sx.shapley_from_table(v), sx.banzhaf_from_table(v)
        coal = sx.coalitions(len(feats))
        lookup = {tuple(r.astype(int)): x for r, x in zip(coal, v)}
        got_shap = shap_exact(lambda Z: np.array([lookup[tuple(z.astype(int))] for z in Z]),
                              len(feats))
        routes = {"Shapley (default)": theory.shapley(model, arr, bow=bow, features=feats),
                  "Shapley (ksub=4)": theory.shapley(model, arr, bow=bow, features=feats, ksub=4),
                  "Banzhaf (default)": theory.banzhaf(model, arr, bow=bow, features=feats),
                  "shap Exact": got_shap}
        for route, got in routes.items():
            ref = ref_b if route.startswith("Banzhaf") else ref_s
            rows_out.append({"case": case, "mode": mode, "d": len(feats),
                             "distinct": distinct, "route": route,
                             "max_rel_error": _max_rel(got, ref),
                             "norm_rel_error": bench.relative_error(got, ref)})

    for seed in range(6):
        model = lx.random_model(seed)
        for d in (4, 8, 12):
            ids = lx.random_document(100 * seed + d, d, d)
            for mode in ("delete", "replace"):
                check("random model", model, ids, mode, d, True)
    model64 = pre.model.double()
    order = experiment.review_order(len(data.test))
    done = 0
    for idx in order:
        words = experiment.lime_corpus.review_text(data, int(idx), pre.model.max_len).split()
        for n in range(len(words), 0, -1):            # the longest prefix with <= 12 words
            if len(set(words[:n])) <= 12:
                break
        prefix = words[:n]
        if len(prefix) < 13 or len(set(prefix)) == len(prefix):
            continue                                   # want repeats: deletion's hard case
        for mode, part in (("delete", prefix), ("replace", words[:12])):
            ids = np.asarray(pre.vocab.encode(" ".join(part), pre.model.max_len))
            check("trained model, first words of a review", model64, ids, mode,
                  len(set(part)), len(set(part)) == len(part))
        done += 1
        if done == 6:
            break
    pre.model.float()


def convergence(pre, texts, rows_out: list, bench, perm_max: int, kernel_max: int) -> None:
    import numpy as np

    from attnxai import theory

    for i, text in enumerate(texts):
        for mode, bow in (("replace", False), ("delete", True)):
            wall, cpu = bench.timed(lambda: theory.shapley(pre, text, bow=bow), 3)
            ours = theory.shapley(pre, text, bow=bow)
            base = {"review": i, "mode": mode, "d": ours.size}
            rows_out.append(base | {"estimator": "closed form", "budget": 0, "evaluations": 0,
                                    "seconds": wall, "cpu_seconds": cpu, "error": 0.0,
                                    "error_vs_last": math.nan})
            game = bench.PeerGame(pre, text, bow=bow)
            bench.permutation_values(game, 1000)                   # compile shap's loops
            for name, run, budgets in (
                    ("permutation", bench.permutation_values,
                     [2 ** k for k in range(12, int(math.log2(perm_max)) + 1)]),
                    ("kernel", bench.kernel_values,
                     [2 ** k for k in range(10, int(math.log2(kernel_max)) + 1)])):
                est = {}
                for b in budgets:
                    values, w, c, n = run(game, b)
                    est[b] = values
                    rows_out.append(base | {"estimator": name, "budget": b, "evaluations": n,
                                            "seconds": w, "cpu_seconds": c,
                                            "error": bench.relative_error(values, ours)})
                    print(f"  review {i} {mode} {name} {b}: error "
                          f"{rows_out[-1]['error']:.3g} in {w:.2f} s", flush=True)
                last = budgets[-1]
                other, w, c, n = run(game, last, seed=1)
                rows_out.append(base | {"estimator": name + " (seed 1)", "budget": last,
                                        "evaluations": n, "seconds": w, "cpu_seconds": c,
                                        "error": bench.relative_error(other, ours),
                                        "error_vs_last": bench.relative_error(other, est[last])})


def captum_table(pre, texts, rows_out: list, bench, max_steps: int) -> None:
    import numpy as np
    import torch
    from captum.attr import IntegratedGradients

    from attnxai import theory

    pre64 = pre.model.double()
    for i, text in enumerate(texts):
        ref = theory.integrated_gradients(pre, text, tol=1e-14)
        ids = torch.as_tensor(pre.encode(text)).reshape(1, -1)
        base = ids.clone()
        base[:, 1:] = pre64.unk_id
        e, e0 = pre64.embed(ids).detach(), pre64.embed(base).detach()
        wall, cpu = bench.timed(lambda: theory.integrated_gradients(pre, text), 3)
        rows_out.append({"review": i, "tool": "closed form (adaptive)", "rule": "gausslegendre",
                         "steps": theory.integrated_gradients(pre, text).n_nodes,
                         "seconds": wall, "cpu_seconds": cpu,
                         "error": bench.relative_error(theory.integrated_gradients(
                             pre, text).tokens, ref.tokens)})
        ig = IntegratedGradients(lambda x: pre64.forward_embeddings(x)[:, 1])
        steps = [2 ** k for k in range(1, int(math.log2(max_steps)) + 1)]
        for n in steps:
            got = theory.integrated_gradients(pre, text, n_nodes=n).tokens
            w, c = bench.timed(lambda n=n: theory.integrated_gradients(pre, text, n_nodes=n))
            rows_out.append({"review": i, "tool": "closed form", "rule": "gausslegendre",
                             "steps": n, "seconds": w, "cpu_seconds": c,
                             "error": bench.relative_error(got, ref.tokens)})
        for rule in ("gausslegendre", "riemann_trapezoid", "riemann_middle", "riemann_left",
                     "riemann_right"):
            for n in steps:
                out = {}

                def call(n=n, rule=rule):
                    out["a"] = ig.attribute(e, baselines=e0, n_steps=n, method=rule,
                                            internal_batch_size=256)
                w, c = bench.timed(call)
                got = out["a"][0].sum(-1)[1:].detach().numpy()
                rows_out.append({"review": i, "tool": "captum", "rule": rule, "steps": n,
                                 "seconds": w, "cpu_seconds": c,
                                 "error": bench.relative_error(got, ref.tokens),
                                 "max_abs_vs_closed_form": float(np.abs(got - ref.tokens).max())})
            print(f"  review {i} captum {rule}: error at {steps[-1]} steps "
                  f"{rows_out[-1]['error']:.3g}", flush=True)
    pre.model.float()


def main(argv: list[str] | None = None) -> None:
    import numpy as np
    import pandas as pd
    import captum
    import shap
    import torch

    import attnxai
    from attnxai import experiment
    from attnxai.experiment import write_summary
    from attnxai.store.provenance import code_label, loadavg
    from attnxai.threads import single_threaded

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--profile", default="paper")
    ap.add_argument("--reviews", type=int, default=3, help="full-length reviews")
    ap.add_argument("--perm-max", type=int, default=2 ** 24, help="shap permutation's budget")
    ap.add_argument("--kernel-max", type=int, default=2 ** 17, help="shap kernel's budget")
    ap.add_argument("--captum-max", type=int, default=4096, help="captum's most steps")
    ap.add_argument("--out", default=str(HERE))
    args = ap.parse_args(argv)
    code = code_label()                               # the code as it starts
    torch.set_num_threads(1)
    bench = _bench()
    pre = attnxai.pretrained(args.profile, progress=False)
    data = attnxai.load_imdb()
    texts = experiment.full_length_reviews(data, args.reviews, pre.model.max_len)
    t0, load0 = time.time(), loadavg()
    ex, conv, cap = [], [], []
    with single_threaded():
        exactness(pre, data, ex, bench)
        print("exactness done", flush=True)
        captum_table(pre, texts, cap, bench, args.captum_max)
        convergence(pre, texts, conv, bench, args.perm_max, args.kernel_max)
    header = [f"# command: python book/data/make_shapley_peers.py "
              + " ".join(argv if argv is not None else sys.argv[1:]),
              f"#   code: {code}; model {pre.path.name}; shap {shap.__version__}, "
              f"captum {captum.__version__}, torch {torch.__version__}, numpy {np.__version__}; "
              f"one thread; wall time {time.time() - t0:.0f} s; load average before {load0}, "
              f"after {loadavg()}",
              f"# written: {dt.datetime.now(dt.timezone.utc).isoformat(timespec='seconds')}"]
    out = Path(args.out)
    for name, rows in (("shapley_exactness.csv", ex), ("shapley_convergence.csv", conv),
                       ("ig_captum.csv", cap)):
        write_summary(out / name, header, pd.DataFrame(rows), "%.6g")
        print("wrote", out / name)


if __name__ == "__main__":
    main()
