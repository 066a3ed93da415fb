"""The training loop (AdamW or lazy AdamW, best validation checkpoint, JSON metrics), resumable
epoch by epoch.

:func:`train` runs a configuration of :mod:`attnxai.model.profiles` in steps: the data split is
encoded (:func:`encode_split`), the model, optimiser, schedule and batch generator are made
(:func:`start`), restored from a saved state if one matches
(:func:`attnxai.model.train_state.resume`), trained one epoch at a time (:func:`train_epoch`:
:func:`batch_loss` on each batch, backward, the optimiser's step; then validation), saved after
every epoch when a ``state_dir`` is given (:func:`attnxai.model.train_state.save_state`), and
finished on the best validation weights (:func:`final_metrics`).
``on_epoch(epoch)`` is called after each epoch (and after its state is saved): tests interrupt a
training there, a caller can report progress.

``device`` (:func:`attnxai.model.devices.check_device`: ``"cpu"``, the default, ``"cuda"``,
``"cuda:1"``, ``"mps"``) puts the model and the batches on an accelerator torch can see; the
weights and the batch order are drawn on the CPU, so another device gives the CPU's result to
float rounding (not bit for bit), and :func:`train` returns the model on the CPU.
"""

from __future__ import annotations

import copy
from contextlib import nullcontext
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ..data import IMDb, Review, load_imdb
from .devices import check_device
from .interface import ClassifierBase, predict
from ..progress import bar as progress_bar
from ..progress import write as progress_write
from .config import AttentionConfig, MultiLayerConfig
from .single_layer import AttentionClassifier
from .multilayer import MultiLayerClassifier
from .optim import LazyAdamW
from .profiles import TrainConfig, recipe
from ..store.provenance import cpu, loadavg, source_state, weights_sha256
from ..text import Vocab, tokenize
from ..threads import single_threaded
from .train_state import StateWriter, TrainState, resume

__all__ = ["EncodedSplit", "accuracy", "batch_loss", "bucketed_batches", "build_model",
           "encode_reviews", "encode_split", "final_metrics", "fingerprint", "lr_factor",
           "padded_train_ids", "start", "train", "train_epoch"]


def encode_reviews(reviews: list[Review], vocab: Vocab, max_len: int) -> list[list[int]]:
    """Id lists ``[CLS] + tokens[:max_len-1]`` (reviews always have words, so no check here)."""
    return [[vocab.cls_id] + vocab.lookup(tokenize(r.text)[: max_len - 1]) for r in reviews]


def accuracy(model: ClassifierBase, seqs: list[list[int]], labels: list[int]) -> float:
    return float((predict(model, seqs).argmax(1) == np.asarray(labels)).mean())


def _accuracy_and_loss(model: ClassifierBase, seqs: list[list[int]],
                       labels: list[int]) -> tuple[float, float]:
    """Accuracy and mean cross-entropy (from the float64 logits of :func:`predict`)."""
    logits = predict(model, seqs)
    y = np.asarray(labels)
    z = logits - logits.max(axis=1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    return float((logits.argmax(1) == y).mean()), float(-logp[np.arange(len(y)), y].mean())


def build_model(config: TrainConfig, vocab: Vocab) -> ClassifierBase:
    """The untrained model of ``config`` (weights drawn from torch's global generator)."""
    kw = dict(config.model_kwargs(), pad_id=vocab.pad_id, cls_id=vocab.cls_id,
              unk_id=vocab.unk_id)
    if recipe(config)["arch"] == "multilayer":
        return MultiLayerClassifier(MultiLayerConfig(len(vocab), **kw))
    return AttentionClassifier(AttentionConfig(len(vocab), **kw))


def bucketed_batches(lengths: list[int], batch_size: int, gen: torch.Generator, *,
                     chunk_batches: int = 50) -> list[list[int]]:
    """Batches of similar length (less padding, same randomness): a random permutation cut into
    chunks of ``chunk_batches`` batches, each chunk sorted by length (stable) and cut into
    batches, then the batches in a random order. Both draws come from ``gen``."""
    n = len(lengths)
    perm = torch.randperm(n, generator=gen).tolist()
    lens = np.asarray(lengths)
    batches: list[list[int]] = []
    size = chunk_batches * batch_size
    for start in range(0, n, size):
        idx = np.asarray(perm[start:start + size])
        idx = idx[np.argsort(lens[idx], kind="stable")].tolist()
        batches += [idx[i:i + batch_size] for i in range(0, len(idx), batch_size)]
    order = torch.randperm(len(batches), generator=gen).tolist()
    return [batches[i] for i in order]


def lr_factor(step: int, total: int, warmup: float, schedule: str) -> float:
    """The learning-rate multiplier at ``step`` (0-based) of ``total``: linear warm-up over the
    first ``max(1, int(warmup * total))`` steps (if ``warmup > 0``), then constant or a linear
    decay reaching 0 after the last step."""
    warm = max(1, int(warmup * total)) if warmup > 0 else 0
    if step < warm:
        return (step + 1) / warm
    if schedule == "constant":
        return 1.0
    return max(0.0, (total - step) / max(1, total - warm))



# ---------------------------------------------------------------------- the steps
@dataclass
class EncodedSplit:
    """The reviews of a configuration's split, encoded with the vocabulary of its training set:
    ``ids[part]`` id lists and ``labels[part]`` for ``part`` in train, valid, test."""

    vocab: Vocab
    ids: dict[str, list[list[int]]]
    labels: dict[str, list[int]]


def encode_split(config: TrainConfig, data: IMDb) -> EncodedSplit:
    """The first ``n_train`` / ``n_valid`` reviews of the paper's split and a fixed, balanced
    subset of ``n_test`` test reviews (the test set is sorted negative then positive), with the
    vocabulary built on the training reviews."""
    parts = {"train": data.train[: config.n_train], "valid": data.valid[: config.n_valid],
             "test": data.test}
    if config.n_test < len(parts["test"]):
        idx = np.random.default_rng(config.seed).permutation(len(parts["test"]))[: config.n_test]
        parts["test"] = [parts["test"][i] for i in np.sort(idx)]
    vocab = Vocab.build((r.text for r in parts["train"]), min_freq=config.min_freq)
    return EncodedSplit(vocab=vocab,
                        ids={k: encode_reviews(rs, vocab, config.max_len) for k, rs in parts.items()},
                        labels={k: [r.label for r in rs] for k, rs in parts.items()})


def start(config: TrainConfig, split: EncodedSplit, device: torch.device) -> TrainState:
    """A fresh training: ``torch.manual_seed(config.seed)``, the model's weights (drawn on the CPU,
    then moved to ``device``), AdamW, the learning-rate schedule of the recipe (none for the
    paper's constant rate) and the batch generator."""
    r = recipe(config)
    torch.manual_seed(config.seed)
    model = build_model(config, split.vocab)
    model.to(device)                  # initialised on the CPU: the same weights on every device
    if r["optimizer"] == "lazy-adamw":
        opt = LazyAdamW(model.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    else:
        opt = torch.optim.AdamW(model.parameters(), lr=config.lr,
                                weight_decay=config.weight_decay, fused=True)
    gen = torch.Generator().manual_seed(config.seed)
    total = -(-len(split.ids["train"]) // config.batch_size) * config.epochs
    sched = None
    if r["warmup"] > 0 or r["schedule"] != "constant":
        sched = torch.optim.lr_scheduler.LambdaLR(
            opt, lambda s: lr_factor(s, total, float(r["warmup"]), r["schedule"]))
    return TrainState(model=model, opt=opt, sched=sched, gen=gen)


def epoch_batches(config: TrainConfig, lengths: list[int], gen: torch.Generator
                  ) -> list[list[int]]:
    """One epoch's batches of training-review indices, drawn from ``gen``: a permutation cut
    into batches, or length buckets (:func:`bucketed_batches`) for the ``bucketed`` recipe."""
    if recipe(config)["batching"] == "bucketed":
        return bucketed_batches(lengths, config.batch_size, gen)
    perm = torch.randperm(len(lengths), generator=gen).tolist()
    return [perm[s:s + config.batch_size] for s in range(0, len(perm), config.batch_size)]


def padded_train_ids(state: TrainState, split: EncodedSplit) -> tuple[torch.Tensor, torch.Tensor]:
    """Every training review collated once, ``(n_train, T)`` ids checked by the model
    (:meth:`~attnxai.model.interface.ClassifierBase.check_ids`), and their lengths ``(n_train,)``:
    a batch is ``ids[idx, :lengths[idx].max()]``, the tensor ``collate`` would give it (kept in
    ``state.padded``, on the model's device)."""
    if state.padded is None:
        model = state.model
        device = next(model.parameters()).device
        ids = model.check_ids(model.collate(split.ids["train"]))
        lengths = torch.tensor([len(x) for x in split.ids["train"]])
        if model.padding == "unk":
            lengths = torch.full_like(lengths, ids.shape[1])
        state.padded = (ids.to(device), lengths.to(device))
    return state.padded


Leaves = list[torch.Tensor]


def batch_loss(model: ClassifierBase, ids: torch.Tensor, y: torch.Tensor, *, lazy: bool
               ) -> tuple[torch.Tensor, torch.Tensor, Leaves, Callable[[], None] | None]:
    """A training batch's (logits, cross-entropy, the gradient leaves a clip acts on, what to run
    after ``backward`` or None): through ``model(ids)``, or for the lazy optimiser through
    ``model.forward_rows`` (the function :func:`train_epoch` and ``benchmarks/bench_train.py``
    call)."""
    return (_loss_rows if lazy else _loss_dense)(model, ids, y)


def _loss_dense(model: ClassifierBase, ids: torch.Tensor, y: torch.Tensor
                ) -> tuple[torch.Tensor, torch.Tensor, Leaves, Callable[[], None] | None]:
    """(logits, loss, the gradient leaves to clip, what to run after ``backward``: nothing) of a
    batch through ``model(ids)``."""
    logits = model(ids)
    return logits, torch.nn.functional.cross_entropy(logits, y), list(model.parameters()), None


def _loss_rows(model: ClassifierBase, ids: torch.Tensor, y: torch.Tensor
               ) -> tuple[torch.Tensor, torch.Tensor, Leaves, Callable[[], None] | None]:
    """The same through ``model.forward_rows`` on the embedding rows the batch uses (a leaf
    ``rows`` (U, d_embed)); after ``backward``, the returned function makes ``W_e.grad`` a sparse
    COO tensor of those rows (coalesced: distinct, sorted), what
    :class:`~attnxai.model.optim.LazyAdamW` updates."""
    uniq, index = torch.unique(ids, return_inverse=True)
    rows = model.W_e.detach().index_select(0, uniq).requires_grad_()
    logits = model.forward_rows(rows, index, model.pad_mask(ids))

    def sparse_grad() -> None:
        model.W_e.grad = torch.sparse_coo_tensor(uniq[None], rows.grad, model.W_e.shape,
                                                 is_coalesced=True, check_invariants=False)

    leaves = [rows] + [p for name, p in model.named_parameters() if name != "W_e"]
    return logits, torch.nn.functional.cross_entropy(logits, y), leaves, sparse_grad


def train_epoch(state: TrainState, config: TrainConfig, split: EncodedSplit, *,
                progress: bool = False, desc: str = "") -> dict[str, float]:
    """One pass over the training reviews (cross-entropy, the optimiser's step, the recipe's
    gradient clip and schedule step per batch); returns the epoch's mean loss and running
    accuracy. With the ``lazy-adamw`` optimizer the logits come from the model's
    ``forward_rows`` and ``W_e`` gets a sparse gradient of the rows the batch used."""
    r = recipe(config)
    clip = None if r["clip"] is None else float(r["clip"])
    lazy = r["optimizer"] == "lazy-adamw"
    model = state.model
    device = next(model.parameters()).device
    y_all = torch.tensor(split.labels["train"], device=device)
    ids_all, lengths = padded_train_ids(state, split)
    batches = epoch_batches(config, [len(x) for x in split.ids["train"]], state.gen)
    model.train()
    bar = progress_bar(batches, desc=desc, disable=not progress, per_step=False, leave=False)
    total, n, correct = 0.0, 0, 0
    for idx in bar:
        rows_t = torch.tensor(idx, device=device)
        ids = ids_all[rows_t, :int(lengths[rows_t].max())]
        logits, loss, leaves, after = batch_loss(model, ids, y_all[rows_t], lazy=lazy)
        state.opt.zero_grad(set_to_none=True)
        loss.backward()
        if clip is not None:
            torch.nn.utils.clip_grad_norm_(leaves, clip)
        if after is not None:
            after()
        state.opt.step()
        if state.sched is not None:
            state.sched.step()
        total, n = total + loss.item() * len(idx), n + len(idx)
        correct += int((logits.detach().argmax(1) == y_all[rows_t]).sum())
        bar.set_postfix(loss=f"{total / n:.4f}", refresh=False)
    return {"train_loss": total / n, "train_accuracy_running": correct / n}


def _record_epoch(state: TrainState, split: EncodedSplit, stats: dict[str, float],
                  seconds: float) -> float:
    """Validate after an epoch, append it to the history, keep the best weights; returns the
    validation accuracy."""
    t_valid = time.perf_counter()
    val, val_loss = _accuracy_and_loss(state.model, split.ids["valid"], split.labels["valid"])
    state.timing["train_seconds"] += seconds
    state.timing["valid_seconds"] += time.perf_counter() - t_valid
    state.epoch += 1
    load = loadavg()
    state.history.append({"epoch": state.epoch, "train_loss": stats["train_loss"],
                          "valid_accuracy": val,
                          "train_accuracy_running": stats["train_accuracy_running"],
                          "valid_loss": val_loss, "seconds": seconds,
                          "loadavg": None if load is None else load[0]})
    if val > state.best:
        state.best, state.best_state = val, copy.deepcopy(state.model.state_dict())
    return val


def fingerprint(model: torch.nn.Module) -> dict[str, Any]:
    """What decides whether two machines train the same weights from the same seed, recorded
    with every trained model (``metrics.json``, shown by ``python -m attnxai info``): the
    weights' sha256 (:func:`attnxai.store.provenance.weights_sha256`), torch's version and the CPU
    kernels it chose, the processor and its instruction-set flags, and the thread count."""
    return {"weights_sha256": weights_sha256(model.state_dict()),
            "torch": torch.__version__,
            "torch_cpu_capability": torch.backends.cpu.get_cpu_capability(),
            "cpu": cpu(),
            "threads": torch.get_num_threads()}


def final_metrics(state: TrainState, config: TrainConfig, split: EncodedSplit,
                  device: torch.device, started: float) -> dict[str, Any]:
    """Load the best validation weights into the model and measure it: the metrics a checkpoint
    records (accuracies, timings, the history, the code it was trained with). A screen
    (``stop_after`` < ``epochs``) is judged on validation only: no test or train pass."""
    model = state.model
    model.load_state_dict(state.best_state)
    model.eval()
    screen = len(state.history) < config.epochs
    t_test = time.perf_counter()
    test_acc = None if screen else accuracy(model, split.ids["test"], split.labels["test"])
    test_seconds = time.perf_counter() - t_test
    train_seconds = state.timing["train_seconds"]
    n_train = len(split.ids["train"])
    return {
        "profile": config.profile,
        "best_epoch": 1 + int(np.argmax([h["valid_accuracy"] for h in state.history])),
        "train_accuracy": None if screen else accuracy(model, split.ids["train"],
                                                       split.labels["train"]),
        "valid_accuracy": state.best,
        "test_accuracy": test_acc,
        "n_train": n_train, "n_valid": len(split.ids["valid"]), "n_test": len(split.ids["test"]),
        "vocab_size": len(split.vocab),
        "train_seconds": train_seconds,
        "train_reviews_per_second": len(state.history) * n_train / train_seconds,
        "valid_seconds": state.timing["valid_seconds"],
        "test_seconds": test_seconds,
        "total_seconds": time.perf_counter() - started,
        "resumed_at": state.timing["resumed_at"],
        "torch_threads": torch.get_num_threads(),
        "device": str(device),
        "n_parameters": sum(p.numel() for p in model.parameters()),
        "code": source_state(),
        "fingerprint": fingerprint(model),
        "history": state.history,
    }


def train(config: TrainConfig, data: IMDb | None = None, *, progress: bool = True,
          device: str | torch.device = "cpu", state_dir: str | Path | None = None,
          on_epoch: Callable[[int], None] | None = None
          ) -> tuple[ClassifierBase, Vocab, dict[str, Any]]:
    """Train from scratch (on ``device``); returns the best-validation model (on the CPU), its
    vocabulary and metrics.

    ``config.extra`` picks the model and the recipe (:func:`attnxai.model.profiles.recipe`); with an
    empty ``extra`` this is the authors' loop (AdamW, random batches, no schedule, no clipping).
    ``state_dir``: a folder where the training state is saved after every epoch; a later call
    with the same config and folder resumes after the last saved epoch and ends with the same
    weights as an uninterrupted run (on the CPU). ``on_epoch(epochs_done)`` is called after every
    epoch, once its state is saved.

    The ``lazy-adamw`` recipe trains on one thread (torch's and BLAS's; restored after): its
    steps are a few hundred small operations, which a second thread slows down
    (``benchmarks/bench_train.py`` measures both), and the weights then do not depend on the
    machine's core count."""
    threads = single_threaded() if recipe(config)["optimizer"] == "lazy-adamw" else nullcontext()
    with threads:
        return _train(config, data, progress=progress, device=device, state_dir=state_dir,
                      on_epoch=on_epoch)


def _train(config: TrainConfig, data: IMDb | None, *, progress: bool,
           device: str | torch.device, state_dir: str | Path | None,
           on_epoch: Callable[[int], None] | None
           ) -> tuple[ClassifierBase, Vocab, dict[str, Any]]:
    device = check_device(device)
    r = recipe(config)
    data = data or load_imdb()
    started = time.perf_counter()
    split = encode_split(config, data)
    state = start(config, split, device)
    if state_dir is not None and resume(state, config, state_dir, device) and progress:
        progress_write(f"resuming after epoch {state.epoch} (state in {state_dir})")
    stop = config.epochs if r["stop_after"] is None else int(r["stop_after"])
    writer = None if state_dir is None else StateWriter(state_dir, config)
    try:
        while state.epoch < stop:
            t_epoch = time.perf_counter()
            stats = train_epoch(state, config, split, progress=progress,
                                desc=f"epoch {state.epoch + 1}/{stop}")
            val = _record_epoch(state, split, stats, time.perf_counter() - t_epoch)
            if progress:
                progress_write(f"epoch {state.epoch}: train loss {stats['train_loss']:.4f}, "
                               f"validation accuracy {val:.4f}")
            if writer is not None:
                writer.submit(state)          # written while the next epoch trains
            if on_epoch is not None:
                if writer is not None:
                    writer.wait()             # on_epoch is called once the state is on disk
                on_epoch(state.epoch)
    finally:
        if writer is not None:
            writer.wait()
    metrics = final_metrics(state, config, split, device, started)
    return state.model.cpu(), split.vocab, metrics
