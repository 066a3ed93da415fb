"""Saving, loading and caching trained models (safetensors + JSON; never pickle).

A checkpoint is a folder::

    model.safetensors   the weights W_e, W_q, W_k, W_v, W_l
    config.json         the training configuration (TrainConfig) and the model's constructor args
    vocab.json          the vocabulary (words after the specials)
    metrics.json        accuracies, timings, per-epoch history

:func:`pretrained` keeps one such folder per (training config, IMDb archive checksum) under
``<cache>/models/``, so the book trains a profile once and every chapter reuses it.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors.torch import load_file, save_file

from .data import cache_dir, load_imdb
from .interface import ClassifierBase
from .model import AttentionClassifier
from .runconfig import profile as book_profile
from .text import Vocab
from .train import TrainConfig, get_config, predict, train

#: The model classes a checkpoint can hold, by the name its config.json records (``arch``).
MODEL_CLASSES: dict[str, type[ClassifierBase]] = {"AttentionClassifier": AttentionClassifier}
#: Bump when a change to the code changes what a given config trains to.
FORMAT_VERSION = 1
_FILES = ("model.safetensors", "config.json", "vocab.json", "metrics.json")


@dataclass
class Pretrained:
    """A trained model with its vocabulary, training config and metrics."""

    model: ClassifierBase
    vocab: Vocab
    config: dict[str, Any]
    metrics: dict[str, Any]
    path: Path | None = None

    def encode(self, texts: str | Sequence[str], *, truncate: bool = True) -> torch.Tensor:
        """(B, T) ids for one text or a list of texts, padded as the model expects."""
        if isinstance(texts, str):
            texts = [texts]
        if len(texts) == 0:
            raise ValueError("no texts given")
        return self.model.collate([self.vocab.encode(t, self.model.max_len, truncate=truncate)
                                   for t in texts])

    def predict_logits(self, texts: Sequence[str], batch_size: int = 256,
                       head: int | None = None) -> np.ndarray:
        """Logits (n, n_classes) as float64 numpy: the ``classifier_fn`` to give lime.

        ``texts`` is a list of str (a single str is refused: it would be read as a list of
        characters). Texts with no word left (lime can delete every word) are the document
        ``[CLS]`` alone. ``head=i`` returns head ``i``'s own output ``W_l^(i) v~^(i)`` (explaining
        one head; the last layer's heads for a multi-layer model).
        """
        if isinstance(texts, (str, bytes)):
            raise TypeError("predict_logits takes a list of texts, got a single str: wrap it, "
                            "predict_logits([text])")
        seqs = []
        for t in texts:
            try:
                seqs.append(self.vocab.encode(t, self.model.max_len))
            except ValueError:
                seqs.append([self.vocab.cls_id])
        return predict(self.model, seqs, batch_size=batch_size, head=head)

    def tokens(self, text: str) -> list[str]:
        """The tokens the model sees for ``text`` (with ``[CLS]``, after truncation)."""
        return self.vocab.decode(self.vocab.encode(text, self.model.max_len))


def save(pre: Pretrained, path: str | os.PathLike) -> Path:
    """Write a checkpoint folder atomically (a half-written folder is never left behind)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=path.parent, prefix=".tmp-"))
    try:
        state = {k: v.detach().cpu().contiguous() for k, v in pre.model.state_dict().items()}
        save_file(state, tmp / "model.safetensors")
        (tmp / "config.json").write_text(json.dumps(pre.config, indent=2, sort_keys=True))
        pre.vocab.save(tmp / "vocab.json")
        (tmp / "metrics.json").write_text(json.dumps(pre.metrics, indent=2))
        if path.exists():
            shutil.rmtree(path)
        tmp.rename(path)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp)
    pre.path = path
    return path


def load(path: str | os.PathLike, *, dtype: torch.dtype = torch.float32) -> Pretrained:
    """Load a checkpoint folder written by :func:`save`."""
    path = Path(path).expanduser()
    if not path.is_dir():
        raise FileNotFoundError(f"no checkpoint folder at {path}: train one with "
                                "`python -m attnxai train --profile quick` or give the right path")
    missing = [f for f in _FILES if not (path / f).is_file()]
    if missing:
        raise FileNotFoundError(f"{path} is not a complete attnxai checkpoint: missing {missing}")
    config = json.loads((path / "config.json").read_text())
    vocab = Vocab.load(path / "vocab.json")
    arch = config.get("arch", "AttentionClassifier")
    if arch not in MODEL_CLASSES:
        raise ValueError(f"{path} holds a {arch!r} model, unknown to this version of attnxai "
                         f"(known: {sorted(MODEL_CLASSES)})")
    model = MODEL_CLASSES[arch](**config["model"])
    state = load_file(path / "model.safetensors")
    model.load_state_dict(state)
    model.to(dtype).eval()
    return Pretrained(model, vocab, config, json.loads((path / "metrics.json").read_text()), path)


def cache_key(config: TrainConfig, data_checksum: str) -> str:
    blob = json.dumps({"config": config.to_dict(), "data": data_checksum, "format": FORMAT_VERSION},
                      sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def pretrained(profile: str | TrainConfig | None = None, *, archive: str | None = None,
               train_if_missing: bool = True, progress: bool = True,
               dtype: torch.dtype = torch.float32) -> Pretrained:
    """The model trained with ``profile`` ("paper", "quick" or a TrainConfig), from the cache,
    training it first if needed. ``profile=None`` reads ``ATTNXAI_PROFILE`` (default "paper"):
    this is how the test build of the book runs every chapter on the quick model."""
    profile = profile or book_profile()
    config = get_config(profile)
    data = load_imdb(archive)
    folder = cache_dir() / "models" / f"{config.profile}-{cache_key(config, data.checksum)}"
    if not folder.is_dir():
        if not train_if_missing:
            raise FileNotFoundError(f"no cached model for profile {config.profile!r} at {folder}; "
                                    f"run `python -m attnxai train --profile {config.profile}`")
        model, vocab, metrics = train(config, data, progress=progress)
        conf = {"arch": type(model).__name__, "train": config.to_dict(), "model": model.config,
                "data_sha256": data.checksum,
                "format": FORMAT_VERSION}
        save(Pretrained(model, vocab, conf, metrics), folder)
    return load(folder, dtype=dtype)
