"""Throughput of the multi-layer model (chapter 8): training, batched inference and LIME.

    python benchmarks/bench_multilayer.py [--profile multilayer] [--csv book/data/multilayer_benchmark.csv]

On real IMDb training reviews (the profile's vocabulary and architecture; the weights are the
cached model's if it is trained, else freshly initialised: speed does not depend on them):

* **training**: reviews per second of a training step (forward, backward, clip, fused AdamW) on
  batches of 32 reviews of similar length (the profile's length buckets), float32 and bfloat16
  autocast;
* **inference**: reviews per second of ``predict`` (``torch.no_grad``, batches of 256 sorted by
  length) on 1,024 reviews, float32 weights and bfloat16 weights;
* **LIME**: seconds per review of :func:`attnxai.fastlime.explain_instance` (lime's generic path,
  5,000 samples, ``bow=True``) on reviews of about 60, 130 and 255 tokens, float32 and bfloat16,
  with the relative error and correlation of the bfloat16 coefficients against float32;

each with 1 and 2 torch threads. Prints a table and writes it as CSV (with ``#`` header lines:
the command, the commit, the machine's load average) when ``--csv`` is given.
"""

from __future__ import annotations

import argparse
import copy
import datetime as dt
import os
import sys
import time

import numpy as np
import torch


def _train_rate(model, batches, labels, autocast: bool, seconds: float) -> float:
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    model.train()
    n, t0, i = 0, None, 0
    while True:
        ids, y = batches[i % len(batches)], labels[i % len(labels)]
        if i == 2:                                    # warm-up excluded
            t0, n = time.perf_counter(), 0
        if autocast:
            with torch.autocast("cpu", dtype=torch.bfloat16):
                logits = model(ids)
        else:
            logits = model(ids)
        loss = torch.nn.functional.cross_entropy(logits.float(), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        n += len(y)
        i += 1
        if t0 is not None and time.perf_counter() - t0 > seconds and i > 4:
            return n / (time.perf_counter() - t0)


def main(argv: list[str] | None = None) -> int:
    from attnxai import Pretrained, fastlime, load_imdb, pretrained
    from attnxai.model.interface import predict
    from attnxai.model.profiles import get_config
    from attnxai.text import Vocab, normalize_for_lime
    from attnxai.model.train import bucketed_batches, build_model, encode_reviews

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--profile", default="multilayer")
    p.add_argument("--seconds", type=float, default=20.0, help="per training measurement")
    p.add_argument("--threads", default="1,2")
    p.add_argument("--csv", default=None)
    args = p.parse_args(argv)
    cfg = get_config(args.profile)
    imdb = load_imdb()
    try:
        pre = pretrained(cfg, train_if_missing=False, progress=False)
        source = f"cached model {pre.path.name}"
    except FileNotFoundError:
        vocab = Vocab.build((r.text for r in imdb.train[: cfg.n_train]), min_freq=cfg.min_freq)
        torch.manual_seed(0)
        pre = Pretrained(build_model(cfg, vocab).eval(), vocab, {}, {})
        source = "untrained model (the profile's architecture)"
    model32 = pre.model.float().eval()
    seqs = encode_reviews(imdb.train[:2048], pre.vocab, cfg.max_len)
    labels_all = [r.label for r in imdb.train[:2048]]
    gen = torch.Generator().manual_seed(0)
    idx = bucketed_batches([len(s) for s in seqs], 32, gen)[:40]
    batches = [model32.collate([seqs[i] for i in b]) for b in idx]
    labels = [torch.tensor([labels_all[i] for i in b]) for b in idx]
    texts = {}
    for r in imdb.test:
        n = len(normalize_for_lime(r.text, 10**9).split())
        for want in (60, 130, 255):
            if want not in texts and (want - 5 <= n <= want + 5 or (want == 255 and n > 300)):
                texts[want] = normalize_for_lime(r.text, cfg.max_len - 1)
        if len(texts) == 3:
            break
    rows = []
    before = os.getloadavg()[0]
    for threads in [int(t) for t in args.threads.split(",")]:
        torch.set_num_threads(threads)
        for prec in ("fp32", "bf16"):
            m = copy.deepcopy(model32)
            rows.append({"what": "training", "precision": prec + (" autocast" if prec == "bf16"
                                                                   else ""),
                         "threads": threads, "value": _train_rate(m, batches, labels,
                                                                  prec == "bf16", args.seconds),
                         "unit": "reviews/s"})
            print(rows[-1], flush=True)
        for prec in ("fp32", "bf16"):
            m = model32 if prec == "fp32" else copy.deepcopy(model32).to(torch.bfloat16)
            predict(m, seqs[:256])
            t0 = time.perf_counter()
            predict(m, seqs[:1024])
            rows.append({"what": "inference", "precision": prec + (" weights" if prec == "bf16"
                                                                    else ""),
                         "threads": threads, "value": 1024 / (time.perf_counter() - t0),
                         "unit": "reviews/s"})
            print(rows[-1], flush=True)
        for n, text in texts.items():
            coefs = {}
            for prec in ("fp32", "bf16"):
                m = model32 if prec == "fp32" else copy.deepcopy(model32).to(torch.bfloat16)
                lp = Pretrained(m, pre.vocab, pre.config, pre.metrics, None)
                t0 = time.perf_counter()
                res = fastlime.explain_instance(lp, text, num_samples=5000, random_state=0)
                sec = time.perf_counter() - t0
                coefs[prec] = np.asarray(res.coef)
                row = {"what": f"LIME, {len(text.split())} tokens", "precision": prec,
                       "threads": threads, "value": sec, "unit": "s/review", "path": res.path}
                if prec == "bf16":
                    a, b = coefs["fp32"], coefs["bf16"]
                    row["rel_err_vs_fp32"] = float(np.linalg.norm(b - a) / np.linalg.norm(a))
                    row["corr_vs_fp32"] = float(np.corrcoef(a, b)[0, 1])
                rows.append(row)
                print(rows[-1], flush=True)
    after = os.getloadavg()[0]
    import pandas as pd

    df = pd.DataFrame(rows)
    with pd.option_context("display.width", 140, "display.max_columns", 10):
        print(df.round(4).to_string(index=False))
    if args.csv:
        from attnxai.store.provenance import code_label

        header = [f"# command: python {' '.join(sys.argv)}",
                  f"# code: {code_label()}",
                  f"# model: {source}; profile {cfg.profile}; torch {torch.__version__}",
                  f"# load average before {before:.2f}, after {after:.2f}; written "
                  f"{dt.datetime.now(dt.timezone.utc).isoformat(timespec='seconds')}"]
        with open(args.csv, "w") as fh:
            fh.write("\n".join(header) + "\n")
            df.to_csv(fh, index=False, float_format="%.5g")
        print(f"wrote {args.csv}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
