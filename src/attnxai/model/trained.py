"""A profile's trained model: :func:`pretrained` finds it in the cache (:mod:`attnxai.model.store.cache`),
loads and verifies it (:mod:`attnxai.model.store.checkpoint`); when it is missing, downloads the book's
published model of the same cache key (:mod:`attnxai.model.store.hub`: verified, unless offline or no
published location is configured), and only then trains and saves it (:mod:`attnxai.model.train`),
saying why at each step.

**Concurrency.** The training and the save run under the checkpoint folder's lock
(:func:`attnxai.store.files.writer_lock`), so two processes that need the same missing model train it
once: the second waits (at most :data:`attnxai.store.files.WAIT_SECONDS`, saying for whom), then
loads. The training state is kept after every epoch beside the folder (``.partial-<name>``), so
a killed training resumes where it stopped. The cache's
writability is checked before anything is downloaded or trained.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import torch
from filelock import Timeout

from .store.cache import FORMAT_VERSION, candidates, folder_name, rebuild_hint
from .store.checkpoint import CheckpointError, load, save
from ..data import CacheError, check_writable, load_imdb
from .devices import check_device
from ..store.files import WAIT_SECONDS, writer_lock
from .store.hub import HubError, fetch
from .profiles import TrainConfig, get_config
from ..settings import DEFAULT_PROFILE, Session
from .textmodel import Pretrained
from .train import train

__all__ = ["ModelNotCached", "load_cached", "pretrained"]


class ModelNotCached(FileNotFoundError):
    """No cached model, none downloaded, and ``train_if_missing=False``; ``reason`` says why it
    was not downloaded."""

    def __init__(self, message: str, reason: str):
        super().__init__(message)
        self.reason = reason


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


def pretrained(profile: str | TrainConfig | Session = DEFAULT_PROFILE, *,
               archive: str | None = None, train_if_missing: bool = True, download: bool = True,
               progress: bool = True, dtype: torch.dtype = torch.float32,
               device: str | torch.device = "cpu",
               wait_seconds: float = WAIT_SECONDS) -> Pretrained:
    """The model trained with ``profile`` ("paper", "quick", another name of
    :data:`attnxai.model.profiles.PROFILES`, a TrainConfig, or a chapter's
    :class:`~attnxai.settings.Session`: its profile at its seed), from the cache, training it first
    if needed. Without an argument, the paper's model (``"paper"``, the authors' settings), in
    every process alike: no session setting is read here. A chapter passes the session its launch
    cell returned (``attnxai.pretrained(session)``): this is how the test build of the book runs
    every chapter on the quick model, and on other seeds.

    The lookup, in this order: the cache (found and loaded without reading the IMDb archive's
    reviews and without the network, :func:`attnxai.model.store.cache.candidates`); then, with ``download``,
    the book's published model of the same cache key (:func:`attnxai.model.store.hub.fetch`: nothing when
    ``ATTNXAI_OFFLINE=1`` or no published location is configured; verified against the index
    and its manifest before it enters the cache); then training, which alone needs the data
    (downloaded if no archive is given). ``train_if_missing=False`` raises
    :class:`ModelNotCached` (a ``FileNotFoundError``) instead of training. With ``progress``,
    each step says why it is taken. ``device``: where a training runs
    (:func:`attnxai.model.devices.check_device`, checked first); the model returned is on the CPU.
    ``wait_seconds``: how long to wait for another process that is training the same model
    (then :class:`~attnxai.model.store.checkpoint.CheckpointError`, naming its lock)."""
    device = check_device(device)
    on = {} if device.type == "cpu" else {"device": device}     # train()'s default is the CPU
    config = get_config(profile)
    found = candidates(config, archive)
    for folder, _ in found:
        if folder.is_dir():
            return load_cached(folder, config, dtype)
        if folder.exists() or folder.is_symlink():       # before training, not after it
            raise CheckpointError(f"{folder} is in the place of the cached {config.profile!r} "
                                  "model but is not a folder: move it away (nothing was trained)")
    models = found[0][0].parent
    reason = "downloading was not asked for"
    if download:
        try:
            check_writable(models)             # before downloading anything
            return load_cached(fetch(config, [f for f, _ in found], progress=progress,
                                     wait_seconds=wait_seconds), config, dtype)
        except (HubError, CacheError) as exc:
            reason = str(exc)
    if not train_if_missing:
        cached = sorted(p.name for p in models.iterdir() if p.is_dir()
                        and not p.name.startswith(".")) if models.is_dir() else []
        raise ModelNotCached(
            f"no cached model for profile {config.profile!r} in {models} (looked for "
            + ", ".join(f"{f.name} ({name})" for f, name in found)
            + f"; cached: {', '.join(cached) or 'none'}) and none downloaded ({reason}); run "
            f"`python -m attnxai train --profile {config.profile}`", reason)
    check_writable(models)                     # before training anything
    if progress:
        print(f"attnxai: no cached {config.profile!r} model under {models}, and the book's was "
              f"not downloaded ({reason}): training it first (it is cached for the next time)",
              file=sys.stderr, flush=True)
    data = load_imdb(archive)
    folder = models / folder_name(config, data.checksum)
    if folder.exists() and not folder.is_dir():
        raise CheckpointError(f"{folder} is in the place of the cached {config.profile!r} model "
                              "but is not a folder: move it away (nothing was trained)")
    lock = writer_lock(folder)
    try:
        lock.acquire(timeout=0)
    except Timeout:
        if progress:
            print(f"another process is training {folder.name}; waiting for it (at most "
                  f"{wait_seconds:.0f} s; lock {lock.lock_file})", file=sys.stderr, flush=True)
        try:
            lock.acquire(timeout=wait_seconds)
        except Timeout:
            raise CheckpointError(
                f"another process has been training {folder.name} for more than "
                f"{wait_seconds:.0f} s (it holds {lock.lock_file}): let it finish and run this "
                "again, or stop it (its training resumes at its last finished epoch)") from None
    try:
        if not folder.is_dir():                # else another process trained it while we waited
            # the state after every epoch: a killed training resumes there (same weights)
            partial = folder.parent / f".partial-{folder.name}"
            model, vocab, metrics = train(config, data, progress=progress, state_dir=partial,
                                          **on)
            conf = {"arch": type(model).__name__, "train": config.to_dict(), "model": model.config.to_dict(),
                    "data_sha256": data.checksum, "format": FORMAT_VERSION}
            save(Pretrained(model, vocab, conf, metrics), folder)
            shutil.rmtree(partial, ignore_errors=True)
    finally:
        lock.release()
    return load_cached(folder, config, dtype)
