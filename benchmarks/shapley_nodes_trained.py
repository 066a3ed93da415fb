"""The default Shapley route's error on trained weights (``attnxai.theory.shapley_values``'s
docstring): replacement's 25 Gauss-Legendre nodes against the chain with ``ksub=3`` (exact in
``p``), ``max_j |error_j| / max_j |phi_j|``, on the first ``--reviews`` test reviews of full length
(255 tokens) for each cached model given, in float64.

    .venv/bin/python benchmarks/shapley_nodes_trained.py [--reviews 20] [MODEL_DIR ...]

Without MODEL_DIR: every ``quick-*`` and ``paper-*`` model in the cache (``$ATTNXAI_CACHE/models``).
Prints each model's median and worst, then the population's. Not a test: which models a cache
holds is the machine's, and the 25 nodes' error is the weights' (the docstring quotes one run).

The run the docstring quotes (2026-12-03, models quick-4e6b3081e1427e08, quick-6468f19043c3e6d1,
quick-a38b822220344841, quick-d28b9c1f8bd57f47, paper-18193740e80fd2ae, paper-021e5c13bbf2fc33):
medians 1.7e-10, 7.0e-12, 9.6e-12, 9.4e-12, 3.3e-12, 2.7e-12; worst 1.8e-09, 1.2e-11, 2.0e-11,
1.4e-11, 9.1e-12, 1.9e-11; all 120 cases: median 7.7e-12, worst 1.8e-09.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import torch

from attnxai import load, load_imdb
from attnxai.data import cache_dir
from attnxai.experiment.lime_corpus import review_text
from attnxai.theory import shapley_values as sv


def errors(path: Path, imdb, n_reviews: int) -> list[float]:
    pre = load(path, dtype=torch.float64)
    full = pre.model.max_len - 1
    texts = (review_text(imdb, i, pre.model.max_len) for i in range(len(imdb.test)))
    out = []
    for text in texts:
        if len(text.split()) != full:
            continue
        default = sv.shapley(pre, text, bow=False)
        exact = sv.shapley(pre, text, bow=False, method="chain", ksub=3)
        out.append(float(np.abs(default - exact).max() / np.abs(exact).max()))
        if len(out) == n_reviews:
            break
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="*", type=Path)
    ap.add_argument("--reviews", type=int, default=20)
    args = ap.parse_args()
    models = args.models or sorted(p for p in (cache_dir(create=False) / "models").iterdir()
                                   if p.is_dir() and p.name.split("-")[0] in ("quick", "paper"))
    if not models:
        raise SystemExit("no cached quick or paper model: name MODEL_DIRs or train one first")
    imdb = load_imdb()
    every = []
    for path in models:
        e = errors(path, imdb, args.reviews)
        every += e
        print(f"{path.name}: {len(e)} reviews, median {np.median(e):.1e}, worst {max(e):.1e}",
              flush=True)
    print(f"all: {len(every)} cases on {len(models)} models, median {np.median(every):.1e}, "
          f"worst {max(every):.1e}")


if __name__ == "__main__":
    main()
