"""The closed forms' accuracy against a 40-digit reference, on named populations of random
float64 models: what the docstrings and the README quote as the error of LIME's limit and of the
Shapley values for each rule in lambda (``ksub``). Writes ``book/data/accuracy_bounds.csv``:
one row per case and setting, the error ``max_j |got_j - ref_j| / max_j |ref_j|`` (the largest
error over the values relative to the largest value).

The reference shares no code with the closed forms: the model's torch forward pass on each of the
``2^d`` perturbed documents (:func:`attnxai.theory.lime_exhaustive.perturbed_outputs`, float64),
then, in 40-digit arithmetic (mpmath), lime's weighted normal equations (its law of the removed
words and its kernel written out here) or the Shapley value's defining sum. Populations:

* ``random models, distinct words``: :func:`attnxai.theory.lime_exhaustive.random_model` of seeds
  0..31 (2 heads, weights U(-1, 1)), each on a document of d = 4 + seed mod 7 distinct words (4 to
  10), under both removals (64 cases): the chain (``law="lime"``) for LIME's limit at kernel
  width 25 and ``ksub`` 1, 2, 4, 8; ``theory.shapley`` with its defaults and ``ksub`` 1, 2, 3.
* ``random models, 255 tokens``: models of seeds 100..107 (256 positions) on documents of 255
  tokens, replacement (8 cases): ``theory.shapley``'s defaults (Gauss-Legendre in p, 25 nodes,
  exact in p up to 50 positions only) against the chain with ``ksub=3`` (exact in p; beyond
  enumeration, this measures the rule in p alone).
* ``random models, repeated words``: the same models on documents of d = 4 + seed mod 6 words and
  3 more tokens repeating some of them, deletion (32 cases): the exact route
  (``theory.deletion_game(..., route="exact")``) for LIME's limit (kernel width 25) and the
  Shapley value, ``ksub`` 1, 2, 3, 4, 8.

    python book/data/make_accuracy_bounds.py [--out book/data/accuracy_bounds.csv]

About a minute on one core. The file starts with ``#`` lines: the command, the code, the wall time.
"""

from __future__ import annotations

import argparse
import itertools
import math
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
DIGITS = 40
KERNEL_WIDTH = 25.0
#: The rules in lambda measured for the exact route (``ksub``).
EXACT_KSUB = (1, 2, 3, 4, 8)


def lime_reference(y: np.ndarray, Z: np.ndarray, nu: float) -> np.ndarray:
    """lime's n -> infinity coefficients by its definition, in 40 digits: the number s of removed
    features uniform in 1..d, which ones uniform given s (probability 1 / (d C(d, s))), the kernel
    ``sqrt(exp(-D^2 / nu^2))`` of D = 100 x the cosine distance to the document; the weighted
    normal equations of ``y`` on ``[1, z]`` solved by LU."""
    import mpmath

    mpmath.mp.dps = DIGITS
    d = Z.shape[1]
    S = mpmath.matrix(d + 1, d + 1)
    G = mpmath.matrix(d + 1, 1)
    for z, v in zip(Z, y):
        kept = int(z.sum())
        if kept == d:                        # sample 0: probability 0 as n -> infinity
            continue
        prob = mpmath.mpf(1) / (d * math.comb(d, d - kept))
        cos = mpmath.mpf(kept) / (mpmath.sqrt(kept) * mpmath.sqrt(d)) if kept else 0
        dist = 100 * (1 - cos)
        q = prob * mpmath.sqrt(mpmath.exp(-dist ** 2 / mpmath.mpf(nu) ** 2))
        x = (1, *(int(a) for a in z))
        for a in range(d + 1):
            if x[a]:
                G[a] += q * mpmath.mpf(float(v))
                for b in range(d + 1):
                    if x[b]:
                        S[a, b] += q
    sol = mpmath.lu_solve(S, G)
    return np.array([float(sol[j]) for j in range(1, d + 1)])


def shapley_reference(y: np.ndarray, Z: np.ndarray) -> np.ndarray:
    """The Shapley value by its definition, in 40 digits: ``sum_S |S|! (d-1-|S|)! / d! [v(S + j) -
    v(S)]`` over the coalitions ``S`` without ``j``."""
    import mpmath

    mpmath.mp.dps = DIGITS
    d = Z.shape[1]
    value = {tuple(int(a) for a in z): mpmath.mpf(float(v)) for z, v in zip(Z, y)}
    out = []
    for j in range(d):
        acc = mpmath.mpf(0)
        for z, v in value.items():
            if z[j]:
                continue
            s = sum(z)
            w = mpmath.mpf(math.factorial(s) * math.factorial(d - 1 - s)) / math.factorial(d)
            acc += w * (value[z[:j] + (1,) + z[j + 1:]] - v)
        out.append(float(acc))
    return np.array(out)


def rel(got, ref) -> float:
    return float(np.abs(np.asarray(got) - ref).max() / np.abs(ref).max())


def cases():
    """(population, case, model, ids, features, bow)."""
    from attnxai.theory import lime_exhaustive as lx
    from attnxai.theory.lime_inputs import document_features

    for seed in range(32):
        model = lx.random_model(seed)
        d = 4 + seed % 7
        ids = lx.random_document(1000 + seed, d, d)
        for bow in (True, False):
            feats = document_features(ids[1:].tolist(), bow)
            yield ("random models, distinct words",
                   f"seed={seed} d={d} {'delete' if bow else 'replace'}", model, ids, feats, bow)
    for seed in range(8):
        model = lx.random_model(100 + seed, max_len=256)
        ids = lx.random_document(3000 + seed, 60, 255)
        feats = document_features(ids[1:].tolist(), False)
        yield ("random models, 255 tokens", f"seed={100 + seed} replace, 255 positions", model,
               ids, feats, False)
    for seed in range(32):
        model = lx.random_model(seed)
        d = 4 + seed % 6
        ids = lx.random_document(2000 + seed, d, d + 3)
        feats = document_features(ids[1:].tolist(), True)
        yield ("random models, repeated words", f"seed={seed} d={d} delete, {d + 3} tokens",
               model, ids, feats, True)


def rows_of(population, case, model, ids, feats, bow) -> list[dict]:
    from attnxai import theory
    from attnxai.theory import lime_exhaustive as lx

    d = len(feats)
    if population.endswith("255 tokens"):            # beyond enumeration: the rule in p alone
        ref = theory.shapley(model, ids, bow=False, features=feats, method="chain", ksub=3)
        got = theory.shapley(model, ids, bow=False, features=feats)
        return [{"population": population, "case": case, "d": d, "removal": "replace",
                 "quantity": "Shapley, defaults against the chain (ksub=3)", "ksub": "default",
                 "rel_error": rel(got, ref)}]
    Z = np.array(list(itertools.product((0.0, 1.0), repeat=d)))
    y = lx.perturbed_outputs(model, ids, feats, Z, bow)
    ref_lime, ref_shap = lime_reference(y, Z, KERNEL_WIDTH), shapley_reference(y, Z)
    base = {"population": population, "case": case, "d": d,
            "removal": "delete" if bow else "replace"}
    out = []
    if population.endswith("repeated words"):
        for value, what, ref in (("lime", "LIME limit, exact route", ref_lime),
                                 ("shapley", "Shapley, exact route", ref_shap)):
            for ksub in EXACT_KSUB:
                got = theory.deletion_game(model, ids, value, features=feats, route="exact",
                                           kernel_width=KERNEL_WIDTH, ksub=ksub)
                out.append({**base, "quantity": what, "ksub": ksub,
                            "rel_error": rel(got.values, ref)})
        return out
    kw = dict(bow=bow, features=feats)
    for ksub in (1, 2, 4, 8):
        got = theory.lime_limit(model, ids, law="lime", ksub=ksub, **kw)
        out.append({**base, "quantity": "LIME limit, chain", "ksub": ksub,
                    "rel_error": rel(got, ref_lime)})
    for ksub in (None, 1, 2, 3):
        extra = {} if ksub is None else {"ksub": ksub}
        got = theory.shapley(model, ids, **kw, **extra)
        out.append({**base, "quantity": "Shapley, defaults",
                    "ksub": "default" if ksub is None else ksub, "rel_error": rel(got, ref_shap)})
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=HERE / "accuracy_bounds.csv")
    args = ap.parse_args(argv)
    import pandas as pd
    import torch

    from attnxai.store.provenance import code_label

    torch.set_num_threads(1)
    code = code_label()                  # before the file is opened (which would make it dirty)
    t0 = time.perf_counter()
    rows = [r for c in cases() for r in rows_of(*c)]
    df = pd.DataFrame(rows)
    summary = (df.groupby(["quantity", "population", "ksub"], sort=False)["rel_error"]
               .agg(cases="count", median="median", worst="max"))
    print(summary.to_string(float_format=lambda x: f"{x:.2e}"))
    with args.out.open("w", encoding="utf-8") as fh:
        fh.write(f"# python book/data/make_accuracy_bounds.py {' '.join(argv or sys.argv[1:])}\n"
                 f"# code: {code}\n"
                 f"# wall seconds: {time.perf_counter() - t0:.0f}\n")
        df.to_csv(fh, index=False)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
