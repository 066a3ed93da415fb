"""Training profiles and the training loop (AdamW, best validation checkpoint, JSON metrics).

``paper`` is the authors' setting (their code: AdamW, lr 1e-4, batch 16, 10 epochs, best
validation checkpoint, seed 42, 20,000 / 5,000 / 25,000 reviews); ``quick`` trains in under a
minute on a laptop core and is what the tests and the test build of the book use.
``multilayer`` is our reconstruction of the paper's 6-layer x 6-head model
(:class:`~attnxai.multilayer.MultiLayerClassifier`, chapter 8) with its recipe (warm-up then linear
decay, gradient clipping, dropout, length-bucketed batches); ``multilayer-quick`` the same recipe
on 2 layers and the quick profile's data (about a minute on one core); ``paper-skip`` the paper
profile with the single-layer skip connection (chapter 9). The recipe lives in
``TrainConfig.extra`` (:func:`recipe`), so the paper and quick profiles keep their cache keys.

``device`` (:func:`check_device`: ``"cpu"``, the default, ``"cuda"``, ``"cuda:1"``, ``"mps"``)
puts the model and the batches of :func:`train` and :func:`predict` on an accelerator torch can
see; the weights and the batch order are drawn on the CPU, so another device gives the CPU's
result to float rounding (not bit for bit), and :func:`train` returns the model on the CPU.
"""

from __future__ import annotations

import copy
import time
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np
import torch
from tqdm import tqdm

from . import validate
from .data import IMDb, Review, load_imdb
from .interface import ClassifierBase
from .model import AttentionClassifier
from .multilayer import MultiLayerClassifier
from .text import Vocab, tokenize


@dataclass(frozen=True)
class TrainConfig:
    """Everything that determines the trained weights (and so the cache key).

    ``extra`` holds what the single-layer profiles of the paper never set (so that their cache
    keys stay what they were): the model class and its options, and the training recipe beyond
    plain AdamW (:data:`EXTRA_DEFAULTS`, :func:`recipe`). An empty ``extra`` is the paper's
    single-layer model trained as the authors train it."""

    profile: str
    n_train: int = 20_000
    n_valid: int = 5_000
    n_test: int = 25_000
    epochs: int = 10
    batch_size: int = 16
    lr: float = 1e-4
    weight_decay: float = 0.01  # AdamW's default
    seed: int = 42
    min_freq: int = 1
    d_embed: int = 128
    d_attn: int = 64
    d_value: int = 64
    n_heads: int = 6
    max_len: int = 256
    padding: str = "mask"
    extra: dict[str, Any] = field(default_factory=dict)

    def model_kwargs(self) -> dict[str, Any]:
        kw = dict(d_embed=self.d_embed, d_attn=self.d_attn, d_value=self.d_value,
                  n_heads=self.n_heads, max_len=self.max_len, padding=self.padding)
        r = recipe(self)
        if r["arch"] == "multilayer":
            kw.update(n_layers=r["n_layers"], residual=r["residual"], norm=r["norm"],
                      d_ff=r["d_ff"], dropout=r["dropout"])
        elif r["skip"]:
            kw["skip"] = True
        return kw

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


#: The keys ``TrainConfig.extra`` may hold and their values when absent (the paper's recipe):
#: ``arch`` "single" (:class:`~attnxai.model.AttentionClassifier`) or "multilayer"
#: (:class:`~attnxai.multilayer.MultiLayerClassifier`, with ``n_layers``, ``residual``, ``norm``,
#: ``d_ff``, ``dropout``); ``skip`` the single-layer skip connection; ``warmup`` the fraction of
#: the steps of linear warm-up; ``schedule`` "constant" or "linear" (decay to 0 at the last step
#: of ``epochs``); ``clip`` the gradient-norm clip (None: none); ``batching`` "random" (a
#: permutation cut into batches) or "bucketed" (length buckets, :func:`bucketed_batches`);
#: ``stop_after`` epochs actually trained of the ``epochs``-long schedule (None: all; screens).
EXTRA_DEFAULTS: dict[str, Any] = dict(arch="single", n_layers=1, residual=False, norm="none",
                                      d_ff=0, dropout=0.0, skip=False, warmup=0.0,
                                      schedule="constant", clip=None, batching="random",
                                      stop_after=None)


def recipe(config: TrainConfig) -> dict[str, Any]:
    """``config.extra`` completed with :data:`EXTRA_DEFAULTS` and checked."""
    unknown = sorted(set(config.extra) - set(EXTRA_DEFAULTS))
    if unknown:
        raise ValueError(f"unknown TrainConfig.extra keys {unknown}; known: "
                         f"{sorted(EXTRA_DEFAULTS)}")
    r = {**EXTRA_DEFAULTS, **config.extra}
    validate.choice(r["arch"], "arch", ("single", "multilayer"))
    validate.choice(r["schedule"], "schedule", ("constant", "linear"))
    validate.choice(r["batching"], "batching", ("random", "bucketed"))
    if r["skip"] and r["arch"] != "single":
        raise ValueError("skip is the single-layer ablation; the multi-layer model has residual")
    if not 0.0 <= float(r["warmup"]) < 1.0:
        raise ValueError(f"warmup is a fraction of the steps in [0, 1), got {r['warmup']!r}")
    if r["clip"] is not None and not float(r["clip"]) > 0:
        raise ValueError(f"clip must be None or > 0, got {r['clip']!r}")
    if r["stop_after"] is not None:
        stop = validate.positive_int(r["stop_after"], "stop_after")
        if stop > config.epochs:
            raise ValueError(f"stop_after={stop} is more than the {config.epochs} epochs")
    return r


_MULTILAYER = dict(arch="multilayer", n_layers=6, residual=True, norm="pre", d_ff=0, dropout=0.1,
                   warmup=0.05, schedule="linear", clip=1.0, batching="bucketed")

PROFILES: dict[str, TrainConfig] = {
    # The authors' settings: 20k/5k/25k, 10 epochs, batch 16, AdamW lr 1e-4, seed 42.
    "paper": TrainConfig(profile="paper"),
    # A few thousand reviews, a larger step, two epochs: ~1 minute on 2 cores.
    "quick": TrainConfig(profile="quick", n_train=4_000, n_valid=1_000, n_test=5_000, epochs=2,
                         batch_size=32, lr=2e-3, min_freq=2),
    # Our reconstruction of the paper's 6-layer x 6-head model (chapter 8): pre-LN residual
    # blocks without feed-forward, 32-wide heads, the paper's layer as the read-out; AdamW lr 1e-3,
    # 5 % warm-up then linear decay, clip 1.0, batch 32 in length buckets, 4 epochs.
    "multilayer": TrainConfig(profile="multilayer", epochs=4, batch_size=32, lr=1e-3, d_attn=32,
                              d_value=32, extra=dict(_MULTILAYER)),
    # The same recipe on 2 layers x 4 heads and the quick profile's data: about a minute on one
    # core (the book's live version of chapter 8 and the tests).
    "multilayer-quick": TrainConfig(profile="multilayer-quick", n_train=4_000, n_valid=1_000,
                                    n_test=5_000, epochs=2, batch_size=32, lr=2e-3, min_freq=2,
                                    d_attn=16, d_value=16, n_heads=4,
                                    extra={**_MULTILAYER, "n_layers": 2}),
    # The single-layer skip-connection ablation (chapter 9): the paper profile plus skip=True.
    "paper-skip": TrainConfig(profile="paper-skip", extra={"skip": True}),
}


def get_config(profile: str | TrainConfig, **overrides: Any) -> TrainConfig:
    if isinstance(profile, TrainConfig):
        return replace(profile, **overrides)
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}; choose one of {sorted(PROFILES)}")
    return replace(PROFILES[profile], **overrides)


def check_device(device: str | torch.device = "cpu") -> torch.device:
    """``device`` as a ``torch.device`` this torch can use: ``"cpu"``, ``"cuda"``/``"cuda:N"`` or
    ``"mps"``; ``ValueError`` naming the device and what this torch sees otherwise."""
    if isinstance(device, torch.device):
        dev = device
    elif isinstance(device, str):
        try:
            dev = torch.device(device.strip().lower())
        except (RuntimeError, ValueError):
            raise ValueError(f"device must be cpu, cuda, cuda:N or mps, got {device!r}") from None
    else:
        raise TypeError(f"device must be a str such as 'cpu' or 'cuda', got "
                        f"{type(device).__name__}")
    if dev.type == "cpu":
        return torch.device("cpu")
    if dev.type == "cuda":
        n = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if n == 0:
            raise ValueError(f"device {device!r} is not available: torch {torch.__version__} sees "
                             "no CUDA device here (torch.cuda.is_available() is False); use cpu")
        if dev.index is not None and dev.index >= n:
            raise ValueError(f"device {device!r} is not available: torch sees {n} CUDA "
                             f"device(s), cuda:0 to cuda:{n - 1}")
        return dev
    if dev.type == "mps":
        if not torch.backends.mps.is_available():
            raise ValueError(f"device {device!r} is not available: torch {torch.__version__} sees "
                             "no Apple GPU (torch.backends.mps.is_available() is False); use cpu")
        return dev
    raise ValueError(f"device must be cpu, cuda, cuda:N or mps, got {device!r}")


def _device_of(model: torch.nn.Module) -> torch.device:
    return next(model.parameters()).device


def encode_reviews(reviews: list[Review], vocab: Vocab, max_len: int) -> list[list[int]]:
    """Id lists ``[CLS] + tokens[:max_len-1]`` (reviews always have words, so no check here)."""
    return [[vocab.cls_id] + vocab.lookup(tokenize(r.text)[: max_len - 1]) for r in reviews]


@torch.no_grad()
def predict(model: ClassifierBase, seqs: list[list[int]], batch_size: int = 256,
            head: int | None = None) -> np.ndarray:
    """Logits (n, n_classes) for id lists, in batches of similar length (fast, same result).

    ``head=i`` gives head ``i``'s own output ``W_l^(i) v~^(i)`` instead of the average. The
    batches run on the model's device; the logits come back as float64 numpy on the CPU."""
    batch_size = validate.positive_int(batch_size, "batch_size")
    if head is not None:
        head = validate.integer(head, "head")
        if not 0 <= head < model.n_heads:
            raise ValueError(f"head {head} does not exist: the model has {model.n_heads} heads")
    if len(seqs) == 0:
        raise ValueError("no documents to predict")
    model.eval()
    device = _device_of(model)
    order = np.argsort([len(s) for s in seqs], kind="stable")
    out = np.empty((len(seqs), model.n_classes))
    for start in range(0, len(seqs), batch_size):
        idx = order[start:start + batch_size]
        ids = model.collate([seqs[i] for i in idx]).to(device)
        logits = model(ids) if head is None else model(ids, per_head=True)[:, head]
        out[idx] = logits.double().cpu().numpy()
    return out


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
        return MultiLayerClassifier(len(vocab), **kw)
    return AttentionClassifier(len(vocab), **kw)


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


# ---------------------------------------------------------------------- resumable state
_STATE_TENSORS = "state.safetensors"
_STATE_JSON = "state.json"
#: Called as ``_EPOCH_HOOK(epoch)`` after each epoch's state is saved (tests interrupt there).
_EPOCH_HOOK = None


def _save_state(folder, *, config, model, best_state, opt, sched, gen, epoch, history, best,
                timing) -> None:
    """The training state after ``epoch`` epochs (safetensors + JSON, written atomically; the
    JSON, written last, records the sha256 of the tensors)."""
    import hashlib
    import json
    import os
    from pathlib import Path

    from safetensors.torch import save as save_safetensors

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    tensors = {f"model.{k}": v.detach().cpu().contiguous() for k, v in model.state_dict().items()}
    if best_state is not None:
        tensors.update({f"best.{k}": v.detach().cpu().contiguous() for k, v in best_state.items()})
    osd = opt.state_dict()
    for idx, st in osd["state"].items():
        for name, v in st.items():
            tensors[f"opt.{idx}.{name}"] = torch.as_tensor(v).detach().cpu().contiguous()
    tensors["rng.gen"] = gen.get_state()
    tensors["rng.torch"] = torch.get_rng_state()
    blob = save_safetensors(tensors)
    meta = {"config": config.to_dict(), "epoch": epoch, "history": history, "best": best,
            "has_best": best_state is not None, "param_groups": osd["param_groups"],
            "sched": None if sched is None else {"last_epoch": sched.last_epoch,
                                                 "_step_count": sched._step_count},
            "timing": timing, "sha256": hashlib.sha256(blob).hexdigest()}
    for name, data in ((_STATE_TENSORS, blob), (_STATE_JSON, json.dumps(meta).encode())):
        tmp = folder / f".{name}.tmp"
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, folder / name)


def _load_state(folder, config: TrainConfig) -> tuple[dict, dict] | None:
    """(meta, tensors) of a saved state of ``config``'s training, or None (no state, another
    config, or files that do not match)."""
    import hashlib
    import json
    from pathlib import Path

    from safetensors.torch import load as load_safetensors

    folder = Path(folder)
    try:
        meta = json.loads((folder / _STATE_JSON).read_text())
        blob = (folder / _STATE_TENSORS).read_bytes()
    except (OSError, ValueError):
        return None
    if meta.get("config") != json.loads(json.dumps(config.to_dict())) or \
            hashlib.sha256(blob).hexdigest() != meta.get("sha256"):
        return None
    return meta, load_safetensors(blob)


def train(config: TrainConfig, data: IMDb | None = None, *, progress: bool = True,
          device: str | torch.device = "cpu", state_dir=None
          ) -> tuple[ClassifierBase, Vocab, dict[str, Any]]:
    """Train from scratch (on ``device``, :func:`check_device`); returns the best-validation
    model (on the CPU), its vocabulary and metrics.

    ``config.extra`` picks the model and the recipe (:func:`recipe`); with an empty ``extra``
    this is the authors' loop (AdamW, random batches, no schedule, no clipping). ``state_dir``:
    a folder where the training state is saved after every epoch; a later call with the same
    config and folder resumes after the last saved epoch and ends with the same weights as an
    uninterrupted run (on the CPU)."""
    device = check_device(device)
    r = recipe(config)
    data = data or load_imdb()
    t0 = time.perf_counter()
    train_r, valid_r, test_r = data.train[: config.n_train], data.valid[: config.n_valid], data.test
    if config.n_test < len(test_r):  # a fixed, balanced subset: the test set is sorted neg/pos
        idx = np.random.default_rng(config.seed).permutation(len(test_r))[: config.n_test]
        test_r = [test_r[i] for i in np.sort(idx)]
    vocab = Vocab.build((r_.text for r_ in train_r), min_freq=config.min_freq)
    enc = {name: encode_reviews(rs, vocab, config.max_len)
           for name, rs in (("train", train_r), ("valid", valid_r), ("test", test_r))}
    labels = {name: [x.label for x in rs]
              for name, rs in (("train", train_r), ("valid", valid_r), ("test", test_r))}

    torch.manual_seed(config.seed)
    model = build_model(config, vocab)
    model.to(device)                  # initialised on the CPU: the same weights on every device
    opt = torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=config.weight_decay,
                            fused=True)  # fused: ~9x faster step over the 12.8M embedding weights
    gen = torch.Generator().manual_seed(config.seed)
    n_batches = -(-len(enc["train"]) // config.batch_size)
    total_steps = n_batches * config.epochs
    sched = None
    if r["warmup"] > 0 or r["schedule"] != "constant":
        sched = torch.optim.lr_scheduler.LambdaLR(
            opt, lambda s: lr_factor(s, total_steps, float(r["warmup"]), r["schedule"]))
    clip = None if r["clip"] is None else float(r["clip"])
    stop = config.epochs if r["stop_after"] is None else int(r["stop_after"])
    y_all = torch.tensor(labels["train"], device=device)
    lengths = [len(x) for x in enc["train"]]
    history, best, best_state = [], -1.0, None
    timing = {"train_seconds": 0.0, "valid_seconds": 0.0, "resumed_at": []}
    first = 0
    saved = _load_state(state_dir, config) if state_dir is not None else None
    if saved is not None:
        meta, tensors = saved
        model.load_state_dict({k[6:]: v for k, v in tensors.items() if k.startswith("model.")})
        if meta["has_best"]:
            best_state = {k[5:]: v for k, v in tensors.items() if k.startswith("best.")}
        osd = {"state": {}, "param_groups": meta["param_groups"]}
        for k, v in tensors.items():
            if k.startswith("opt."):
                _, idx, name = k.split(".", 2)
                osd["state"].setdefault(int(idx), {})[name] = v.to(device) \
                    if name != "step" else v
        for g in osd["param_groups"]:
            g["betas"] = tuple(g["betas"])
        opt.load_state_dict(osd)
        if sched is not None:
            sched.last_epoch = meta["sched"]["last_epoch"]
            sched._step_count = meta["sched"]["_step_count"]
        gen.set_state(tensors["rng.gen"])
        torch.set_rng_state(tensors["rng.torch"])
        history, best, first = meta["history"], meta["best"], meta["epoch"]
        timing = meta["timing"]
        timing["resumed_at"].append(first)
        if progress:
            tqdm.write(f"resuming after epoch {first} (state in {state_dir})")
    for epoch in range(first, stop):
        t_epoch = time.perf_counter()
        model.train()
        if r["batching"] == "bucketed":
            batches = bucketed_batches(lengths, config.batch_size, gen)
        else:
            perm = torch.randperm(len(enc["train"]), generator=gen).tolist()
            batches = [perm[s:s + config.batch_size]
                       for s in range(0, len(perm), config.batch_size)]
        bar = tqdm(batches, desc=f"epoch {epoch + 1}/{stop}", disable=not progress, leave=False)
        total, n, correct = 0.0, 0, 0
        for idx in bar:
            ids = model.collate([enc["train"][i] for i in idx]).to(device)
            logits = model(ids)
            loss = torch.nn.functional.cross_entropy(logits, y_all[idx])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            if clip is not None:
                torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
            opt.step()
            if sched is not None:
                sched.step()
            total, n = total + loss.item() * len(idx), n + len(idx)
            correct += int((logits.detach().argmax(1) == y_all[idx]).sum())
            bar.set_postfix(loss=f"{total / n:.4f}", refresh=False)
        seconds = time.perf_counter() - t_epoch
        t_valid = time.perf_counter()
        val, val_loss = _accuracy_and_loss(model, enc["valid"], labels["valid"])
        timing["train_seconds"] += seconds
        timing["valid_seconds"] += time.perf_counter() - t_valid
        history.append({"epoch": epoch + 1, "train_loss": total / n, "valid_accuracy": val,
                        "train_accuracy_running": correct / n, "valid_loss": val_loss,
                        "seconds": seconds, "loadavg": _loadavg()})
        if progress:
            tqdm.write(f"epoch {epoch + 1}: train loss {total / n:.4f}, validation accuracy {val:.4f}")
        if val > best:
            best, best_state = val, copy.deepcopy(model.state_dict())
        if state_dir is not None:
            _save_state(state_dir, config=config, model=model, best_state=best_state, opt=opt,
                        sched=sched, gen=gen, epoch=epoch + 1, history=history, best=best,
                        timing=timing)
            if _EPOCH_HOOK is not None:
                _EPOCH_HOOK(epoch + 1)
    train_seconds = timing["train_seconds"]
    model.load_state_dict(best_state)
    model.eval()
    # A screen (stop_after < epochs) is judged on validation only: no test or train pass.
    screen = stop < config.epochs
    t_test = time.perf_counter()
    test_acc = None if screen else accuracy(model, enc["test"], labels["test"])
    test_seconds = time.perf_counter() - t_test
    metrics = {
        "profile": config.profile,
        "best_epoch": 1 + int(np.argmax([h["valid_accuracy"] for h in history])),
        "train_accuracy": None if screen else accuracy(model, enc["train"], labels["train"]),
        "valid_accuracy": best,
        "test_accuracy": test_acc,
        "n_train": len(train_r), "n_valid": len(valid_r), "n_test": len(test_r),
        "vocab_size": len(vocab),
        "train_seconds": train_seconds,
        "train_reviews_per_second": len(history) * len(train_r) / train_seconds,
        "valid_seconds": timing["valid_seconds"],
        "test_seconds": test_seconds,
        "total_seconds": time.perf_counter() - t0,
        "resumed_at": timing["resumed_at"],
        "torch_threads": torch.get_num_threads(),
        "device": str(device),
        "n_parameters": sum(p.numel() for p in model.parameters()),
        "code": source_state(),
        "history": history,
    }
    return model.cpu(), vocab, metrics


def source_state() -> dict[str, Any]:
    """The git commit of the package's source and whether tracked files differ from it (None
    outside a git checkout): recorded in the metrics of every model trained."""
    import subprocess
    from pathlib import Path

    src = Path(__file__).resolve().parent
    try:
        head = subprocess.run(["git", "-C", str(src), "rev-parse", "HEAD"], capture_output=True,
                              text=True, timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(src), "status", "--porcelain",
                                "--untracked-files=no"], capture_output=True, text=True,
                               timeout=10, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "dirty": None}
    return {"commit": head, "dirty": bool(dirty)}


def _loadavg() -> float | None:
    try:
        import os

        return round(os.getloadavg()[0], 2)
    except OSError:
        return None
