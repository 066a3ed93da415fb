"""Training throughput of the paper model: the step of its recipe against the machine's floor and
against the previous recipe, measured in the same run.

    python benchmarks/bench_train.py [--steps 150] [--rounds 5] [--threads 1,2]

On the paper profile's shapes (batch 16, the training reviews in the profile's first-epoch order,
89,568-word vocabulary, 6 heads), for each thread count (torch's and BLAS's):

* ``lazy``: a training step of the paper profile's recipe as ``train_epoch`` runs it
  (``batch_loss``: the model's ``forward_rows`` on the embedding rows the batch uses; backward;
  ``LazyAdamW``'s step); ``lazy-bucketed``: the same on length-bucketed batches;
  ``previous``: the previous recipe's step (``model(ids)``, dense AdamW over all 11.6 M weights);
* where a step's time goes: the batch's ids, the forward pass (with the loss), the backward
  pass, the optimiser (with ``zero_grad`` and the sparse gradient);
* ``floor``: the step's matrix products timed alone, for the same batches (those torch runs in
  the forward and backward passes, as ``torch.utils.flop_counter`` counts them, in preallocated
  tensors); for the lazy step also ``floor + rows``: those plus the gather and scatter of the
  rows it updates (the weights and both moments: the memory traffic the update cannot avoid);
* the validation pass (``predict`` on the 5,000 validation reviews), which the profile runs after
  every epoch;

``--rounds`` rounds, each running every variant on every thread count once for ``--steps``
steps (interleaved, so that a change of the machine's load falls on all of them), the median of
the rounds reported, wall and CPU time. A ratio is the median over rounds of the ratio of the
same round's times (wall, and CPU: the steadier one on a loaded machine). ``12,500 steps``
extrapolates the paper profile's 10 epochs of 1,250 steps (``train_seconds`` of its metrics,
without the validations). Issue 43's target: the paper profile trained in at most 120 s on two
idle cores (``python -m attnxai train --profile paper --no-download`` prints its
``train_seconds``).

Last output (commit 8dae820; AMD EPYC, 2 cores shared with other sessions' jobs, load average 2.3
at the start, 1.6 at the end). The previous recipe's step is mostly its dense embedding gradient:
46 MB allocated, page-faulted and filled at every step, then read by AdamW with both moments; its
cost depends on the machine's state (the 358-484 s of its trainings in November are 29-39 ms a
step, against 60 ms here). One thread is the recipe's choice: two gain 7 % here, while on two
cores another job keeps busy they made the step 20 times slower (an earlier run at load 8-14:
449 ms a step against 18 ms on one thread).


    IMDb loaded and encoded in 19 s; vocabulary 89568; load average 2.3
    threads 1:
                      lazy:    8.38 ms/step wall,    8.20 ms CPU  (  1909 reviews/s; 12,500 steps:   105 s)
                            ids 2 %, forward 32 %, backward 39 %, optimiser 27 %
             lazy-bucketed:    7.36 ms/step wall,    7.34 ms CPU  (  2173 reviews/s; 12,500 steps:    92 s)
                            ids 2 %, forward 31 %, backward 38 %, optimiser 29 %
                  previous:   61.59 ms/step wall,   59.58 ms CPU  (   260 reviews/s; 12,500 steps:   770 s)
                            ids 1 %, forward 6 %, backward 73 %, optimiser 21 %
              floor (lazy):    0.90 ms/step wall,    0.84 ms CPU  ( 17750 reviews/s; 12,500 steps:    11 s)
                            9.0 M multiply-adds a step, 19.9 GFLOP/s
       floor + rows (lazy):    1.74 ms/step wall,    1.66 ms CPU  (  9187 reviews/s; 12,500 steps:    22 s)
                            9.0 M multiply-adds a step, 10.3 GFLOP/s
          floor (previous):    2.49 ms/step wall,    2.44 ms CPU  (  6418 reviews/s; 12,500 steps:    31 s)
                            26.0 M multiply-adds a step, 20.9 GFLOP/s
      lazy / floor (lazy): 10.42x (CPU 10.55x);  lazy / (floor + rows): 4.68x (CPU 4.71x)
      previous / floor (previous): 24.71x (CPU 24.39x)
      previous / lazy: 7.51x (CPU 7.38x);  lazy-bucketed / lazy: 0.95x (CPU 0.96x)
      validation pass (5,000 reviews): 1.24 s
    threads 2:
                      lazy:    7.81 ms/step wall,   15.10 ms CPU  (  2049 reviews/s; 12,500 steps:    98 s)
                            ids 3 %, forward 32 %, backward 40 %, optimiser 25 %
             lazy-bucketed:    7.29 ms/step wall,   14.35 ms CPU  (  2196 reviews/s; 12,500 steps:    91 s)
                            ids 3 %, forward 32 %, backward 40 %, optimiser 25 %
                  previous:   42.73 ms/step wall,   82.79 ms CPU  (   374 reviews/s; 12,500 steps:   534 s)
                            ids 1 %, forward 8 %, backward 71 %, optimiser 21 %
              floor (lazy):    0.66 ms/step wall,    1.27 ms CPU  ( 24169 reviews/s; 12,500 steps:     8 s)
                            9.0 M multiply-adds a step, 27.2 GFLOP/s
       floor + rows (lazy):    1.19 ms/step wall,    2.21 ms CPU  ( 13474 reviews/s; 12,500 steps:    15 s)
                            9.0 M multiply-adds a step, 15.1 GFLOP/s
          floor (previous):    1.38 ms/step wall,    2.63 ms CPU  ( 11626 reviews/s; 12,500 steps:    17 s)
                            26.0 M multiply-adds a step, 37.8 GFLOP/s
      lazy / floor (lazy): 11.27x (CPU 11.53x);  lazy / (floor + rows): 6.00x (CPU 6.02x)
      previous / floor (previous): 33.01x (CPU 32.64x)
      previous / lazy: 5.85x (CPU 5.66x);  lazy-bucketed / lazy: 0.99x (CPU 0.99x)
      validation pass (5,000 reviews): 0.82 s
    2 threads / 1: lazy 0.93x (CPU 1.87x);  previous 0.71x (CPU 1.40x);  floor (lazy) 0.82x (CPU 1.53x)
    load average at the end 1.6
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import time
from collections.abc import Iterator

import torch

from attnxai import load_imdb
from attnxai.model.interface import predict
from attnxai.model.profiles import get_config
from attnxai.model.train import (EncodedSplit, batch_loss, bucketed_batches, encode_split,
                                 epoch_batches, padded_train_ids, start)
from attnxai.model.train_state import TrainState

PAPER_STEPS = 12_500                     # 10 epochs of 20,000 reviews in batches of 16


@contextlib.contextmanager
def threads(n: int) -> Iterator[None]:
    """torch and BLAS on ``n`` threads inside the block."""
    from threadpoolctl import threadpool_limits

    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        with threadpool_limits(limits=n):
            yield
    finally:
        torch.set_num_threads(before)


class Timing:
    """Wall and CPU seconds of ``steps`` steps, and the parts of the wall time."""

    def __init__(self, wall: float, cpu: float, steps: int,
                 parts: dict[str, float] | None = None):
        self.wall, self.cpu, self.steps, self.parts = wall, cpu, steps, parts or {}

    def ms(self) -> float:
        return 1e3 * self.wall / self.steps


# ---------------------------------------------------------------------- the steps
class Stepper:
    """A recipe's training state and its batches; ``run(n)`` times the next ``n`` steps."""

    def __init__(self, split: EncodedSplit, extra: dict, bucketed: bool = False):
        self.config = get_config("paper", extra=extra)
        self.lazy = extra.get("optimizer") == "lazy-adamw"
        self.state: TrainState = start(self.config, split, torch.device("cpu"))
        self.ids, self.lengths = padded_train_ids(self.state, split)
        self.y = torch.tensor(split.labels["train"])
        lengths = [len(x) for x in split.ids["train"]]
        gen = torch.Generator().manual_seed(self.config.seed)
        self.batches = (bucketed_batches(lengths, self.config.batch_size, gen) if bucketed
                        else epoch_batches(self.config, lengths, gen))
        self.next = 0

    def batch(self, idx: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
        rows = torch.tensor(idx)
        return self.ids[rows, :int(self.lengths[rows].max())], self.y[rows]

    def take(self, n: int) -> list[list[int]]:
        out = [self.batches[(self.next + i) % len(self.batches)] for i in range(n)]
        self.next += n
        return out

    def run(self, n: int) -> Timing:
        model, opt = self.state.model, self.state.opt
        model.train()
        parts = dict.fromkeys(("ids", "forward", "backward", "optimiser"), 0.0)
        pc = time.perf_counter
        c0, w0 = time.process_time(), pc()
        for idx in self.take(n):
            t0 = pc()
            ids, y = self.batch(idx)
            t1 = pc()
            _, loss, _, after = batch_loss(model, ids, y, lazy=self.lazy)
            t2 = pc()
            opt.zero_grad(set_to_none=True)
            loss.backward()
            t3 = pc()
            if after is not None:
                after()
            opt.step()
            loss.item()
            t4 = pc()
            for k, a, b in (("ids", t0, t1), ("forward", t1, t2), ("backward", t2, t3),
                            ("optimiser", t3, t4)):
                parts[k] += b - a
        return Timing(pc() - w0, time.process_time() - c0, n, parts)


# ---------------------------------------------------------------------- the floor
Product = tuple[int, int, int, int, bool]      # (batch, m, k, n, A needs its gradient)


def forward_products(lazy: bool, B: int, T: int, U: int, d: int, K: int, a: int, v: int, C: int
                     ) -> list[Product]:
    """The matrix products C = A B of a training batch's forward pass, as torch runs them:
    ``forward_rows`` (lazy; the attention-weighted sum of the tokens' logits is elementwise) or
    ``forward_embeddings`` (previous). ``B`` documents of ``T`` tokens, ``U`` distinct ids."""
    if lazy:
        n = K * (1 + C)
        return [(1, K * a, d, 1, True),       # q_1 = W_q e_1
                (K, 1, a, d, True),           # u = W_k^T q_1
                (K, C, v, d, True),           # W_l W_v
                (1, U, d, n, True),           # rows @ W
                (1, T, d, n, False)]          # positions @ W (the positions are constants)
    return [(1, B, d, K * a, True),           # q_1
            (K, B, a, d, True),               # u
            (B, K, d, T, True),               # scores u . e_t
            (B, K, T, d, True),               # e_bar = sum_t alpha_t e_t
            (K, B, d, v, True),               # v~ = W_v e_bar
            (K, B, v, C, True)]               # W_l v~


def products_with_backward(forward: list[Product]) -> list[tuple[int, int, int, int]]:
    """Each product C = A B (batch, m, k, n) and those of its backward pass: dB = A^T dC
    (batch, k, m, n), and dA = dC B^T (batch, m, n, k) when A needs its gradient."""
    out = []
    for b, m, k, n, grad_a in forward:
        out += [(b, m, k, n), (b, k, m, n)] + ([(b, m, n, k)] if grad_a else [])
    return out


def macs(products: list[tuple[int, int, int, int]]) -> int:
    return sum(b * m * k * n for b, m, k, n in products)


class Floor:
    """The matrix products of a recipe's steps on given batches, in preallocated tensors (made on
    a first, untimed pass), timed alone; ``rows=True`` adds the lazy update's gather and scatter
    of the rows (weights, both moments)."""

    def __init__(self, stepper: Stepper, rows: bool = False):
        self.stepper, self.rows = stepper, rows
        m = stepper.state.model
        self.dims = dict(d=m.d_embed, K=m.n_heads, a=m.d_attn, v=m.d_value, C=m.n_classes)
        self.table = torch.randn(m.W_e.shape)
        self.buffers: dict[tuple[int, int, int, int], tuple[torch.Tensor, ...]] = {}

    def _shapes(self, idx: list[int]) -> tuple[list[tuple[int, int, int, int]], torch.Tensor]:
        ids, _ = self.stepper.batch(idx)
        uniq = torch.unique(ids)
        fwd = forward_products(self.stepper.lazy, ids.shape[0], ids.shape[1], uniq.numel(),
                               **self.dims)
        return products_with_backward(fwd), uniq

    def _buffer(self, shape: tuple[int, int, int, int]) -> tuple[torch.Tensor, ...]:
        if shape not in self.buffers:
            b, m, k, n = shape
            self.buffers[shape] = (torch.randn(b, m, k), torch.randn(b, k, n),
                                   torch.empty(b, m, n))
        return self.buffers[shape]

    def run(self, n: int) -> Timing:
        work = [self._shapes(idx) for idx in self.stepper.take(n)]
        for prods, _ in work:                               # allocation, untimed
            for s in prods:
                self._buffer(s)
        self.macs = sum(macs(prods) for prods, _ in work) / n
        c0, w0 = time.process_time(), time.perf_counter()
        for prods, uniq in work:
            for s in prods:
                A, Bm, out = self.buffers[s]
                torch.bmm(A, Bm, out=out)
            if self.rows:
                for _ in range(3):                          # weights, exp_avg, exp_avg_sq
                    self.table.index_copy_(0, uniq, self.table.index_select(0, uniq))
        return Timing(time.perf_counter() - w0, time.process_time() - c0, n)


def validation_seconds(stepper: Stepper, split: EncodedSplit) -> float:
    t = time.perf_counter()
    predict(stepper.state.model, split.ids["valid"])
    return time.perf_counter() - t


# ---------------------------------------------------------------------- report
def run(split: EncodedSplit, thread_counts: list[int], steps: int, rounds: int
        ) -> tuple[dict[int, dict[str, list[Timing]]], dict[str, float]]:
    """Every variant for ``steps`` steps on each thread count, ``rounds`` times: within a round,
    the thread counts one after the other and, for each, the variants one after the other (a
    floor replays the batches its recipe's stepper has just run). The steppers keep training
    from round to round."""
    lazy = {"optimizer": "lazy-adamw"}
    steppers = {"lazy": Stepper(split, lazy), "lazy-bucketed": Stepper(split, lazy, True),
                "previous": Stepper(split, {})}
    variants = {**steppers, "floor (lazy)": Floor(steppers["lazy"]),
                "floor + rows (lazy)": Floor(steppers["lazy"], rows=True),
                "floor (previous)": Floor(steppers["previous"])}
    out = {n: {**{k: [] for k in variants}, "validation": []} for n in thread_counts}
    for s in steppers.values():
        s.run(5)                                             # warm-up
    for _ in range(rounds):
        for n in thread_counts:
            with threads(n):
                for name, v in variants.items():
                    if isinstance(v, Floor):
                        v.stepper.next -= steps
                    out[n][name].append(v.run(steps))
                out[n]["validation"].append(
                    Timing(validation_seconds(steppers["lazy"], split), 0.0, 1))
    return out, {k: v.macs for k, v in variants.items() if isinstance(v, Floor)}


def median_ms(ts: list[Timing]) -> float:
    return statistics.median(t.ms() for t in ts)


def ratio(num: list[Timing], den: list[Timing]) -> str:
    """The median over rounds of num / den, of the same round's wall times and of their CPU
    times (the steady one on a loaded machine, where the wall time waits for a core)."""
    wall = statistics.median(a.ms() / b.ms() for a, b in zip(num, den))
    cpu = statistics.median((a.cpu / a.steps) / (b.cpu / b.steps) for a, b in zip(num, den))
    return f"{wall:.2f}x (CPU {cpu:.2f}x)"


def report(res: dict[str, list[Timing]], variants_macs: dict[str, float], n_threads: int
           ) -> list[str]:
    lines = [f"threads {n_threads}:"]
    for name, ts in res.items():
        if name == "validation":
            continue
        cpu = statistics.median(1e3 * t.cpu / t.steps for t in ts)
        line = (f"  {name:>20}: {median_ms(ts):7.2f} ms/step wall, {cpu:7.2f} ms CPU"
                f"  ({16e3 / median_ms(ts):6.0f} reviews/s; 12,500 steps: "
                f"{PAPER_STEPS * median_ms(ts) / 1e3:5.0f} s)")
        if name.startswith("floor"):
            gflops = 2 * variants_macs[name] / (median_ms(ts) * 1e6)
            line += f"\n{'':24}{variants_macs[name] / 1e6:.1f} M multiply-adds a step, {gflops:.1f} GFLOP/s"
        if ts[0].parts:
            tot = sum(sum(t.parts.values()) for t in ts)
            share = {k: sum(t.parts[k] for t in ts) / tot for k in ts[0].parts}
            line += "\n" + " " * 24 + ", ".join(f"{k} {100 * v:.0f} %" for k, v in share.items())
        lines.append(line)
    lines += [f"  lazy / floor (lazy): {ratio(res['lazy'], res['floor (lazy)'])};  "
              f"lazy / (floor + rows): {ratio(res['lazy'], res['floor + rows (lazy)'])}",
              f"  previous / floor (previous): {ratio(res['previous'], res['floor (previous)'])}",
              f"  previous / lazy: {ratio(res['previous'], res['lazy'])};  "
              f"lazy-bucketed / lazy: {ratio(res['lazy-bucketed'], res['lazy'])}",
              f"  validation pass (5,000 reviews): "
              f"{statistics.median(t.wall for t in res['validation']):.2f} s"]
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=150, help="steps per variant and round")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--threads", default="1,2", help="thread counts, comma-separated")
    args = ap.parse_args()
    t = time.perf_counter()
    split = encode_split(get_config("paper"), load_imdb())
    print(f"IMDb loaded and encoded in {time.perf_counter() - t:.0f} s; vocabulary "
          f"{len(split.vocab)}; load average {os.getloadavg()[0]:.1f}")
    counts = [int(x) for x in args.threads.split(",")]
    res, floor_macs = run(split, counts, args.steps, args.rounds)
    for n in counts:
        print("\n".join(report(res[n], floor_macs, n)))
    for n in counts[1:]:
        print(f"{n} threads / {counts[0]}: " + ";  ".join(
            f"{name} {ratio(res[n][name], res[counts[0]][name])}"
            for name in ("lazy", "previous", "floor (lazy)")))
    print(f"load average at the end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
