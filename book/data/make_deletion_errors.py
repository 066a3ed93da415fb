"""Deletion with repeated words: the binomial positions' error against the exact route, and the
exact route's regime map on real reviews. Writes, in ``book/data/``:

* ``deletion_errors.csv``: ``|approx - exact| / |exact|`` (norm 2) of the binomial positions
  (``positions="binomial"``) for LIME's limit (lime's kernel width 25), Shapley and Banzhaf
  values, against the exact route (every configuration of the repeated words,
  :mod:`attnxai.theory.deletion_routes`, itself tested against enumeration to 1e-9), on named
  populations: ``random models`` (:func:`attnxai.theory.lime_exhaustive.random_model`, word
  scale 1 and 3) and ``random models, position-heavy`` (word scale 0.1 and 0.3), documents of
  6 to 12 words with a quarter or half of the tokens repeated; ``trained model, review
  beginnings`` (the first ``--tokens`` tokens of the first ``--reviews`` test reviews in the
  book's order, normalised); ``trained model, full reviews`` (the first ``--full-reviews``
  full-length test reviews, against the certified route to ``--tol``, whose own stated error
  is in ``reference_rel_se`` (its ``rel_error``: the relative half-width, norm 2, of its 95 %
  intervals; before issue 42, one standard error) and its cost in ``reference_cpu_s`` (CPU seconds, one thread) and
  ``reference_evaluations``: the exact route cannot reach them; for Shapley also the efficiency
  gap ``|sum phi - (v(all) - v(empty))| / max(1, |logit|)`` of both; and, for every value, the
  paper's agreement measure with attention (Spearman's rho of the absolute values against
  alpha-avg's word scores) on either values).
* ``deletion_regime.csv``: per test review (the first ``--regime`` of the book's order,
  normalised, 255 tokens at most): tokens, distinct words ``d``, repeated words ``R`` (the exact
  route's ``2^R`` configurations), the largest number of "open" repeated words at once (first
  occurrence behind, last ahead), and the exact route's cost in chain cells.

    python book/data/make_deletion_errors.py [--profile paper] [--reviews 20] [--tokens 50]
        [--regime 3000] [--full-reviews 1000] [--tol 1e-2] [--jobs 2]

One thread per process (``--jobs`` processes for the full reviews, which take about 5 s each;
their rows are kept as they finish, so an interrupted run resumes). Every file starts with ``#`` lines: the command, the code, the wall time.
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _rel(a, b) -> float:
    import numpy as np

    return float(np.linalg.norm(np.asarray(a) - b) / np.linalg.norm(b))


def errors_on(model, ids, feats, population: str, doc: str) -> list[dict]:
    """The binomial positions against the exact route for one document: one row per value."""
    from attnxai import theory

    kw = dict(bow=True, features=feats)
    pairs = {
        "LIME": (theory.lime_limit(model, ids, positions="binomial", **kw),
                 theory.lime_limit(model, ids, positions="exact", **kw)),
        "Shapley": (theory.shapley(model, ids, positions="binomial", **kw),
                    theory.shapley(model, ids, positions="exact", **kw)),
        "Banzhaf": (theory.banzhaf(model, ids, positions="binomial", **kw),
                    theory.banzhaf(model, ids, positions="exact", **kw)),
    }
    R = sum(f.size > 1 for f in feats)
    return [{"population": population, "doc": doc, "d": len(feats), "n_repeated": R,
             "tokens": ids.size - 1, "value": v, "approximation": "binomial positions",
             "rel_error": _rel(a, e)} for v, (a, e) in pairs.items()]


def random_rows() -> list[dict]:
    from attnxai.theory import lime_exhaustive as lx
    from attnxai.theory.lime_inputs import document_features

    rows = []
    for d, share, ws, seed in itertools.product((6, 8, 10, 12), (0.25, 0.5), (0.1, 0.3, 1.0, 3.0),
                                                (0, 1)):
        n_tokens = int(round(d / (1.0 - share)))
        model = lx.random_model(1000 * seed + int(100 * ws), word_scale=ws, max_len=40)
        ids = lx.random_document(seed * 7919 + d * 31 + n_tokens, d, n_tokens)
        feats = document_features(ids[1:].tolist(), True)
        if all(f.size == 1 for f in feats):
            continue
        pop = "random models, position-heavy" if ws < 1 else "random models"
        rows += errors_on(model, ids, feats, pop, f"d={d} tokens={n_tokens} ws={ws} seed={seed}")
    return rows


def trained_rows(pre, data, n_reviews: int, n_tokens: int) -> list[dict]:
    import numpy as np

    from attnxai import experiment
    from attnxai.theory.lime_inputs import resolve

    rows, done = [], 0
    for idx in experiment.review_order(len(data.test)):
        words = experiment.lime_corpus.review_text(data, int(idx), pre.model.max_len).split()
        text = " ".join(words[:n_tokens])
        model, ids, feats = resolve(pre, text, True, None)
        if all(f.size == 1 for f in feats):
            continue
        rows += errors_on(model, np.asarray(ids), feats, "trained model, review beginnings",
                          f"test review {int(idx)}, first {n_tokens} tokens")
        done += 1
        if done == n_reviews:
            break
    return rows


def full_review_row(pre, text: str, i: int, tol: float) -> list[dict]:
    """The binomial positions on one full-length review (255 tokens), where the exact route is
    out of reach, against the certified route (``route="sampled"``, its 95 % intervals within a
    relative ``tol``, seed ``i``; its stated error is in ``reference_rel_se``, its CPU seconds in
    ``reference_cpu_s``)."""
    import numpy as np
    from scipy.stats import spearmanr

    import attnxai
    from attnxai import theory
    from attnxai.theory import shapley_values as sv
    from attnxai.theory.lime_inputs import resolve, tables

    model, ids, _ = resolve(pre, text, True, None)
    full, empty = sv.endpoint_values(tables(model, ids, 1), "delete")
    span = float((full - empty).mean())              # v(all) - v(empty), the logit's
    scale = max(1.0, abs(float(full.mean())))
    attention = np.abs(attnxai.explain(pre, text, ["alpha-avg"]).word_scores["alpha-avg"])
    approx = {"LIME": theory.lime_limit(pre, text, bow=True, positions="binomial"),
              "Shapley": theory.shapley(pre, text, bow=True, positions="binomial"),
              "Banzhaf": theory.banzhaf(pre, text, bow=True, positions="binomial")}
    rows = []
    for value, a in approx.items():
        c0 = time.process_time()
        ref = theory.deletion_game(pre, text, value.lower(), route="sampled",
                                   sampling=theory.SamplingSettings(tol=tol, seed=i))
        cpu_s = time.process_time() - c0
        rows.append({"population": "trained model, full reviews",
                     "doc": f"full-length test review {i}", "d": ref.values.size,
                     "n_repeated": ref.n_repeated, "tokens": len(text.split(" ")),
                     "value": value, "approximation": "binomial positions",
                     "rel_error": _rel(a, ref.values), "reference_rel_se": ref.rel_error,
                     "reference_rule": sampled_rule(),
                     "reference_converged": ref.converged,
                     "reference_evaluations": ref.evaluations, "reference_cpu_s": cpu_s,
                     # the paper's agreement measure with attention, on either values
                     "attention_spearman_abs": spearmanr(attention, np.abs(a))[0],
                     "reference_attention_spearman_abs":
                         spearmanr(attention, np.abs(ref.values))[0],
                     **({"efficiency_gap": abs(float(a.sum()) - span) / scale,
                         "reference_efficiency_gap": abs(float(ref.values.sum()) - span)
                         / scale} if value == "Shapley" else {})})
    return rows


def _review_task(job) -> tuple[int, list[dict]]:
    """One review in whatever process the workers run it (the model the run shipped)."""
    ref, i, text, tol = job
    return i, full_review_row(ref.load(), text, i, tol)


def full_review_rows(pre, data, n_reviews: int, tol: float, jobs: int = 1,
                     part: Path | None = None) -> list[dict]:
    """:func:`full_review_row` on the first ``n_reviews`` full-length test reviews, in ``jobs``
    processes (:func:`attnxai.experiment.runner.open_workers`, as the studies; each row's numbers
    do not depend on which process made it: one thread, seed ``i``). Rows are appended to
    ``part`` (JSON lines) as reviews finish, and a rerun with the same ``part`` skips the reviews
    already there for the same model, tolerance and rule of the certified route
    (:func:`sampled_rule`: rows made by another model, or before the route's 95 % intervals, are
    recomputed)."""
    import json

    from tqdm.auto import tqdm

    from attnxai.experiment.lime_corpus import full_length_reviews
    from attnxai.experiment.runner import open_workers
    from attnxai.experiment.transport import ModelBundle

    texts = full_length_reviews(data, n_reviews, pre.model.max_len)
    done: dict[int, list[dict]] = {}
    key = {"tol": tol, "model": pre.path.name, "rule": sampled_rule()}
    if part is not None and part.exists():
        for line in part.read_text().splitlines():
            rec = json.loads(line)
            if all(rec.get(k) == v for k, v in key.items()):
                done[rec["i"]] = rec["rows"]
    todo = [(i, t, tol) for i, t in enumerate(texts) if i not in done]

    def keep(i: int, rows: list[dict]) -> None:
        done[i] = rows
        if part is not None:
            with open(part, "a") as fh:
                fh.write(json.dumps({"i": i, **key, "rows": rows}) + "\n")

    bar = tqdm(total=len(texts), initial=len(texts) - len(todo), desc="full reviews",
               file=sys.stderr)
    bundle = ModelBundle.read(pre)
    with open_workers(jobs) as workers:        # the studies' processes: one thread each
        workers.install(bundle)
        for i, rows in workers.map_unordered(_review_task,
                                             [(bundle.ref, *job) for job in todo]):
            keep(i, rows)
            bar.update()
    bar.close()
    return [row for i in sorted(done) for row in done[i]]


def sampled_rule() -> str:
    """The certified route's stopping rule and interval, as the part file records them."""
    from attnxai.theory import deletion_sampled as ds

    return f"Stein, {ds.MIN_BATCHES} first batches of {ds.BATCH}, level {ds.LEVEL}"


def open_words(tokens: list[str]) -> int:
    """The largest number of repeated words whose first occurrence is at or before a token and
    whose last is after it."""
    first, last = {}, {}
    for i, w in enumerate(tokens):
        first.setdefault(w, i)
        last[w] = i
    delta = [0] * (len(tokens) + 1)
    for w in first:
        if last[w] > first[w]:
            delta[first[w]] += 1
            delta[last[w]] -= 1
    best = cur = 0
    for x in delta:
        cur += x
        best = max(best, cur)
    return best


def regime_rows(pre, data, n: int) -> list[dict]:
    from attnxai import experiment
    from attnxai.theory.deletion_routes import exact_cost
    from attnxai.theory.lime_inputs import document_features

    rows = []
    for idx in experiment.review_order(len(data.test))[:n]:
        words = experiment.lime_corpus.review_text(data, int(idx), pre.model.max_len).split()
        feats = document_features(words, True)
        R = sum(f.size > 1 for f in feats)
        rows.append({"review": int(idx), "tokens": len(words), "d": len(feats), "n_repeated": R,
                     "open_max": open_words(words),
                     "exact_cost": exact_cost(feats, len(words) + 1)})
    return rows


def write(path: Path, rows: list[dict], argv: list[str], seconds: float, code: str) -> None:
    """``rows`` as CSV with a ``#`` header: the command, ``code`` (the code's label when the run
    started: a long run must not take the label of commits made while it ran) and the wall time."""
    import pandas as pd

    with open(path, "w") as fh:
        fh.write(f"# python book/data/make_deletion_errors.py {' '.join(argv)}\n")
        fh.write(f"# code: {code}\n# wall seconds: {seconds:.0f}\n")
        pd.DataFrame(rows).to_csv(fh, index=False)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--profile", default="paper")
    ap.add_argument("--reviews", type=int, default=20)
    ap.add_argument("--tokens", type=int, default=50)
    ap.add_argument("--regime", type=int, default=3000)
    ap.add_argument("--full-reviews", type=int, default=1000,
                    help="full-length reviews measured against the sampled route")
    ap.add_argument("--tol", type=float, default=1e-2, help="the sampled reference's tolerance")
    ap.add_argument("--jobs", type=int, default=1,
                    help="processes for the full reviews (one thread each)")
    ap.add_argument("--part", type=Path, default=None,
                    help="JSON-lines file the full reviews' rows are kept in as they finish; "
                         "a rerun with it resumes (default: in attnxai's cache)")
    ap.add_argument("--out", type=Path, default=HERE)
    args = ap.parse_args(argv)
    import torch

    import attnxai
    from attnxai.store.provenance import code_label
    from attnxai.threads import single_threaded

    code = code_label()
    with single_threaded():
        pre = attnxai.load(attnxai.pretrained(args.profile, progress=False).path,
                           dtype=torch.float64)
        data = attnxai.load_imdb()
        t0 = time.time()
        write(args.out / "deletion_regime.csv", regime_rows(pre, data, args.regime), argv,
              time.time() - t0, code)
        t0 = time.time()
        part = args.part or attnxai.data.cache_dir() / "deletion_full_reviews.part.jsonl"
        rows = (random_rows() + trained_rows(pre, data, args.reviews, args.tokens)
                + full_review_rows(pre, data, args.full_reviews, args.tol, args.jobs, part))
        write(args.out / "deletion_errors.csv", rows, argv, time.time() - t0, code)
    return 0


if __name__ == "__main__":
    sys.exit(main())
