"""A profile's trained model: :func:`pretrained` finds it in the cache (:mod:`attnxai.cache`),
loads and verifies it (:mod:`attnxai.checkpoint`), and trains and saves it first when it is
missing (:mod:`attnxai.train`).

**Concurrency.** The training and the save run under the checkpoint folder's lock
(:func:`attnxai.files.writer_lock`), so two processes that need the same missing model train it
once: the second waits, then loads. The training state is kept after every epoch beside the
folder (``.partial-<name>``), so a killed training resumes where it stopped. The cache's
writability is checked before anything is downloaded or trained.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import torch
from filelock import Timeout

from .cache import FORMAT_VERSION, candidates, folder_name, rebuild_hint
from .checkpoint import CheckpointError, load, save
from .data import check_writable, load_imdb
from .devices import check_device
from .files import writer_lock
from .profiles import TrainConfig, get_config
from .runconfig import profile as book_profile
from .textmodel import Pretrained
from .train import train

__all__ = ["load_cached", "pretrained"]


def load_cached(folder: Path, config: TrainConfig, dtype: torch.dtype = torch.float32
                ) -> Pretrained:
    """Load the cached checkpoint ``folder`` and check that it holds ``config``'s model."""
    pre = load(folder, dtype=dtype)
    want = json.loads(json.dumps(config.to_dict()))
    if pre.config.get("train") != want:
        raise CheckpointError(f"checkpoint {folder} holds a model trained with another "
                              f"configuration than profile {config.profile!r} asks for: its folder "
                              f"was renamed or its config.json edited. "
                              f"{rebuild_hint(folder, config.profile)}")
    return pre


def pretrained(profile: str | TrainConfig | None = None, *, archive: str | None = None,
               train_if_missing: bool = True, progress: bool = True,
               dtype: torch.dtype = torch.float32, device: str | torch.device = "cpu"
               ) -> Pretrained:
    """The model trained with ``profile`` ("paper", "quick", another name of
    :data:`attnxai.profiles.PROFILES`, or a TrainConfig), from the cache, training it first if
    needed. ``profile=None`` reads ``ATTNXAI_PROFILE`` (default "paper"): this is how the test
    build of the book runs every chapter on the quick model.

    Offline first: a cached model is found and loaded without reading the IMDb archive's reviews
    and without the network (:func:`attnxai.cache.candidates`). Only training needs the data (then
    downloaded if no archive is given). ``train_if_missing=False`` raises ``FileNotFoundError``
    instead of training. ``device``: where a training runs
    (:func:`attnxai.devices.check_device`, checked first); the model returned is on the CPU."""
    device = check_device(device)
    on = {} if device.type == "cpu" else {"device": device}     # train()'s default is the CPU
    config = get_config(profile or book_profile())
    found = candidates(config, archive)
    for folder, _ in found:
        if folder.is_dir():
            return load_cached(folder, config, dtype)
    models = found[0][0].parent
    if not train_if_missing:
        cached = sorted(p.name for p in models.iterdir() if p.is_dir()
                        and not p.name.startswith(".")) if models.is_dir() else []
        raise FileNotFoundError(
            f"no cached model for profile {config.profile!r} in {models} (looked for "
            + ", ".join(f"{f.name} ({name})" for f, name in found)
            + f"; cached: {', '.join(cached) or 'none'}); run "
            f"`python -m attnxai train --profile {config.profile}`")
    check_writable(models)                     # before downloading or training anything
    if progress:
        print(f"attnxai: no cached {config.profile!r} model under {models}: training it first "
              "(it is cached for the next time)", file=sys.stderr, flush=True)
    data = load_imdb(archive)
    folder = models / folder_name(config, data.checksum)
    lock = writer_lock(folder)
    try:
        lock.acquire(timeout=0)
    except Timeout:
        if progress:
            print(f"another process is training {folder.name}; waiting for it (lock "
                  f"{lock.lock_file})", file=sys.stderr, flush=True)
        lock.acquire()
    try:
        if not folder.is_dir():                # else another process trained it while we waited
            # the state after every epoch: a killed training resumes there (same weights)
            partial = folder.parent / f".partial-{folder.name}"
            model, vocab, metrics = train(config, data, progress=progress, state_dir=partial,
                                          **on)
            conf = {"arch": type(model).__name__, "train": config.to_dict(), "model": model.config,
                    "data_sha256": data.checksum, "format": FORMAT_VERSION}
            save(Pretrained(model, vocab, conf, metrics), folder)
            shutil.rmtree(partial, ignore_errors=True)
    finally:
        lock.release()
    return load_cached(folder, config, dtype)
