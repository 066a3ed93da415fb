"""Training throughput: our forward (no k, v tensors) against the textbook forward, same run.

    python benchmarks/bench_train.py [--batches 60]

Prints reviews per second for a training step (forward, backward, fused AdamW) with the paper's
settings (batch 16, 256 tokens, full vocabulary), the ratio of the two, the time to load IMDb,
and the extrapolated time of the `paper` profile (10 epochs of 20,000 reviews). Targets: IMDb in
under 15 s, the paper profile in under 20 minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import time

import torch

from attnxai import data
from attnxai.model.single_layer import AttentionClassifier
from attnxai.text import Vocab
from attnxai.model.train import encode_reviews


def steps_per_second(model: AttentionClassifier, batches, textbook: bool) -> float:
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    y = torch.zeros(16, dtype=torch.long)
    t0 = None
    for n, ids in enumerate(batches):
        if n == 3:  # warm-up excluded
            t0 = time.perf_counter()
        out = model(ids, return_internals=textbook)
        logits = out.logits if textbook else out
        loss = torch.nn.functional.cross_entropy(logits, y[: len(ids)])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    return (len(batches) - 3) / (time.perf_counter() - t0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batches", type=int, default=60)
    args = ap.parse_args()
    data._CACHE.clear()
    t = time.perf_counter()
    imdb = data.load_imdb()
    t_load = time.perf_counter() - t
    vocab = Vocab.build(r.text for r in imdb.train)
    seqs = encode_reviews(imdb.train[: 16 * args.batches], vocab, 256)
    torch.manual_seed(0)
    proto = AttentionClassifier(len(vocab))
    rates = {}
    for name, textbook in (("textbook forward (k, v formed)", True), ("attnxai forward", False)):
        model = AttentionClassifier(len(vocab))
        model.load_state_dict(proto.state_dict())
        batches = [model.collate(seqs[i:i + 16]) for i in range(0, len(seqs), 16)]
        rates[name] = 16 * steps_per_second(model, batches, textbook)
    print(f"IMDb load (50,000 reviews from the .tar.gz): {t_load:.1f} s (target < 15 s)")
    print(f"vocabulary: {len(vocab)} words, torch threads: {torch.get_num_threads()}")
    for name, r in rates.items():
        print(f"{name:>32}: {r:7.0f} reviews/s  -> paper profile ~{200_000 / r / 60:.1f} min")
    ref, ours = rates.values()
    print(f"ratio attnxai / textbook: {ours / ref:.2f}x (target: paper profile < 20 min)")


if __name__ == "__main__":
    main()
