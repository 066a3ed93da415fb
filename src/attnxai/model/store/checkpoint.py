"""The checkpoint folder: its format, how it is written and how it is verified (safetensors +
JSON; never pickle).

A checkpoint is a folder::

    model.safetensors   the weights W_e, W_q, W_k, W_v, W_l
    config.json         the training configuration (TrainConfig) and the model's configuration
                        (its ModelConfig's to_dict, under "model")
    vocab.json          the vocabulary (words after the specials)
    metrics.json        accuracies, timings, per-epoch history
    manifest.json       sha256 and size of the four files above, the vocabulary size and the
                        sha256 of the config (canonical JSON): written last at save, checked at load
    origin.json         only in a downloaded checkpoint: where it came from (:func:`save_files`;
                        informative, not verified)

Where trained models are kept (one folder per profile and data, trained if missing) is
:mod:`attnxai.model.store.cache`; this module reads and writes any folder.

**Verification.** :func:`load` reads every file once, checks it against the manifest and then
checks the pieces against each other (the vocabulary's size against the embedding's rows and the
config, the weights' names and shapes against the model, finite weights). Any mismatch raises
:class:`CheckpointError` naming the damaged file and saying how to rebuild the checkpoint (the
exact ``python -m attnxai train`` command for a cached profile); the bytes verified are the bytes
loaded.

**Folders without a manifest** (saved by an attnxai older than checkpoint verification, or whose
manifest was deleted) are refused: nothing could tell their files from edited ones. A user who
trusts such a folder adopts it explicitly, ``python -m attnxai adopt PATH`` (:func:`adopt`): every
check that needs no manifest is made (file set, readable files, vocabulary size against the
embedding and the config, weights against the model, finite weights), then a manifest recording
the files *as they are now* is written, marked ``adopted``; later loads verify against it. (A
change made inside the weights before the adoption cannot be detected: that is what adopting
trusts.)

**Reading** never waits on or reads without end what is not a checkpoint's file: a folder, a
FIFO or a device (``/dev/zero``) in a file's place is refused as damaged
(:func:`attnxai.store.files.open_regular`), and no file is read beyond the size its manifest records.

**Concurrency.** Writers of one checkpoint folder take its lock (:func:`attnxai.store.files.writer_lock`,
``<folder>.lock`` beside it; :mod:`attnxai.model.store.cache` holds it around training *and* saving, so two
processes asking for the same missing model train it once). :func:`save` writes a
``.tmp-<name>-*`` folder beside the target and swaps it in with one atomic exchange
(:func:`attnxai.store.files.replace_folder`): a reader always finds the folder, old or new, never a
missing or half-written one (saving through a symlink replaces the folder it points to). Readers
read every file through one open handle on the folder, so a swap during a read cannot mix two
versions. Stale ``.tmp-*`` folders (a writer killed mid-save) are removed by the next save.

This module is the checkpoint's API (save, load, adopt, in memory); the format and its manifest
are :mod:`~attnxai.model.store.manifest`, the folder's writing and reading
:mod:`~attnxai.model.store.folder`, the checks and the model built from them
:mod:`~attnxai.model.store.verify`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import torch
from filelock import Timeout
from safetensors.torch import load as load_safetensors
from safetensors.torch import save as save_safetensors

from ...store import files as _files
from ...store.files import sha256 as _sha256
from ...store.files import atomic_write, writer_lock
from ..textmodel import Pretrained
from .folder import check_replaceable, read_files, read_folder, write_folder
from .manifest import (CONTENT_FILES, FILES, MANIFEST, MODEL_CLASSES, ORIGIN, CheckpointError,
                       CheckpointWarning, config_sha256, manifest_bytes)
from .verify import build_model, unverified, verify_files

__all__ = ["CONTENT_FILES", "CheckpointError", "CheckpointWarning", "FILES", "MANIFEST",
           "MODEL_CLASSES", "ORIGIN", "adopt", "check_replaceable", "checkpoint_files",
           "config_sha256", "describe", "from_files", "load", "origin", "save", "save_files",
           "weights_sha256"]

#: How long :func:`adopt` waits for a writer of the folder to finish.
_ADOPT_WAIT_SECONDS = 30.0


def save(pre: Pretrained, path: str | os.PathLike) -> Path:
    """Write a checkpoint folder (with its manifest), atomically for readers and writers.

    Under the folder's lock: stale temporary folders are removed, the files are written to a
    ``.tmp-<name>-*`` folder beside ``path``, then swapped in
    (:func:`attnxai.store.files.replace_folder`: an existing folder is replaced in one atomic exchange
    and then deleted). A reader sees the old folder or the new one, never none. An existing folder
    is replaced only if it holds nothing but a checkpoint's files (else :class:`CheckpointError`,
    checked before and again under the lock).
    """
    path = Path(path).expanduser()
    if path.is_symlink():                      # replace the folder it points to, not the link
        path = path.resolve()
    if path.exists() and not path.is_dir():
        raise CheckpointError(f"{path} exists and is not a folder: cannot save a checkpoint there")
    check_replaceable(path)
    state = {k: v.detach().cpu().contiguous() for k, v in pre.model.state_dict().items()}
    files = {"model.safetensors": save_safetensors(state),
             "config.json": json.dumps(pre.config, indent=2, sort_keys=True).encode(),
             "vocab.json": json.dumps(pre.vocab.itos[3:], ensure_ascii=False).encode(),
             "metrics.json": json.dumps(pre.metrics, indent=2).encode()}
    files[MANIFEST] = manifest_bytes(files, pre.config, len(pre.vocab))
    write_folder(files, path)
    pre.path = path
    return path


def load(path: str | os.PathLike, *, dtype: torch.dtype = torch.float32) -> Pretrained:
    """Load and verify a checkpoint folder written by :func:`save` (module docstring).

    Raises ``FileNotFoundError`` for a missing folder or file and :class:`CheckpointError` for a
    damaged or inconsistent one, or one without a manifest (naming the file and how to rebuild
    or adopt it)."""
    path, files = read_folder(path)
    if MANIFEST not in files and all(n in files for n in CONTENT_FILES):
        raise unverified(path, files)
    config, vocab, metrics, state = verify_files(path, files)
    return build_model(path, config, vocab, metrics, state, dtype)


def adopt(path: str | os.PathLike) -> Path:
    """Give a checkpoint folder without a manifest one (what ``python -m attnxai adopt PATH``
    runs; module docstring): every check that needs no manifest, then a manifest recording the
    files as they are, marked ``adopted``, written under the folder's lock. It trusts that the
    files were not changed since they were saved. Returns the manifest's path.

    Refuses a folder that already has a manifest (it is verified at every load: nothing to
    adopt), a damaged or inconsistent one, and one whose files change while it is adopted."""
    path, files = read_folder(path)
    if MANIFEST in files:
        raise ValueError(f"{path} already has a {MANIFEST}: it is verified at every load, there "
                         "is nothing to adopt (a damaged one is rebuilt, not adopted)")
    config, vocab, metrics, state = verify_files(path, files)
    build_model(path, config, vocab, metrics, state, torch.float32)        # weights against the model
    lock = writer_lock(path)
    try:
        lock.acquire(timeout=_ADOPT_WAIT_SECONDS)
    except Timeout:
        raise CheckpointError(f"{path} is being written by another process (its lock "
                              f"{lock.lock_file} was held for {_ADOPT_WAIT_SECONDS:.0f} s): "
                              "adopt it once that process has finished") from None
    try:
        if read_files(path) != files:
            raise CheckpointError(f"the files of {path} changed while it was adopted: adopt it "
                                  "again once nothing writes it")
        return atomic_write(path / MANIFEST, manifest_bytes(files, config, len(vocab), adopted=True))
    finally:
        lock.release()


def weights_sha256(source: str | os.PathLike | dict[str, bytes]) -> str:
    """The digest of a checkpoint's weights as saved (:func:`attnxai.store.provenance.weights_sha256`
    of its ``model.safetensors``): a checkpoint folder (verified as :func:`load` verifies it) or
    the files :func:`checkpoint_files` returns. The same digest as the ``weights_sha256`` a
    training records in ``metrics.json``'s ``fingerprint``, whatever dtype the model is loaded
    in: equal digests mean bit-identical weights."""
    from ...store.provenance import weights_sha256 as digest

    files = source if isinstance(source, dict) else checkpoint_files(source)
    return digest(load_safetensors(files["model.safetensors"]))


# ---------------------------------------------------------------------- checkpoints in memory
def checkpoint_files(path: str | os.PathLike) -> dict[str, bytes]:
    """The bytes of a checkpoint folder's four files and of its ``manifest.json``, read once and
    verified exactly as :func:`load` verifies them: what a cluster worker receives instead of a
    path (:mod:`attnxai.experiment.transport`). A folder without a manifest is refused as
    :func:`load` refuses it."""
    path, files = read_folder(path)
    if MANIFEST not in files and all(n in files for n in CONTENT_FILES):
        raise unverified(path, files)
    verify_files(path, files)
    return {name: files[name] for name in (*CONTENT_FILES, MANIFEST)}


def save_files(files: dict[str, bytes], path: str | os.PathLike, *,
               where: str | os.PathLike | None = None, origin: dict[str, Any] | None = None
               ) -> Path:
    """Write a checkpoint held in memory (the bytes of :data:`FILES`, e.g. downloaded) to the
    folder ``path``, exactly these bytes, after verifying them as :func:`from_files` does (a
    failure raises and writes nothing); atomically for readers and writers, as :func:`save`.
    ``origin``: where the files came from, kept as ``origin.json`` in the folder (read by
    :func:`origin`; not part of the verified checkpoint). ``where`` names the copy in errors."""
    path = Path(path).expanduser()
    if path.exists() and not path.is_dir():
        raise CheckpointError(f"{path} exists and is not a folder: cannot save a checkpoint there")
    from_files(files, where=where if where is not None else path)
    extra = None if origin is None else \
        {ORIGIN: json.dumps(origin, indent=2, sort_keys=True).encode()}
    write_folder({name: files[name] for name in FILES}, path, extra)
    return path


def origin(path: str | os.PathLike) -> dict[str, Any] | None:
    """Where the checkpoint folder ``path`` came from when it was not trained here (its
    ``origin.json``, written by :func:`save_files`), else None."""
    try:
        record = _files.read_json(Path(path) / ORIGIN)   # never a FIFO
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def describe(pre: Pretrained) -> dict[str, Any]:
    """What ``python -m attnxai info`` prints about a loaded checkpoint (``pre.path``, verified
    at load): its folder and name, the sha256 of every file and of the manifest, where it came
    from, its data's sha256, its metrics and the fingerprint of the training machine with the
    weights' digest (:func:`weights_sha256`): so that a reader can tell which model answered
    (the command line, the book's explorer page)."""
    if pre.path is None:
        raise ValueError("the model was not loaded from a checkpoint folder (path is None): "
                         "nothing to describe")
    raw = _files.read_small_file(pre.path / MANIFEST)        # load() verified the files against it
    record = _files.loads_json(raw, str(pre.path / MANIFEST))
    verified = "files match their sha256 manifest"
    if record.get("adopted"):
        verified += (" (a manifest written by `attnxai adopt`: the files were trusted as found "
                     "then, and are verified against that record since)")
    return {"path": str(pre.path), "model": pre.path.name,
            "key": pre.path.name.rsplit("-", 1)[-1], "verified": verified,
            "sha256": {name: rec["sha256"] for name, rec in sorted(record["files"].items())},
            "manifest_sha256": _sha256(raw),
            "origin": origin(pre.path) or "trained on this machine (no origin.json)",
            "data_sha256": pre.config.get("data_sha256"),
            **{k: v for k, v in pre.metrics.items() if k not in ("history", "fingerprint")},
            "fingerprint": _fingerprint(pre)}


def _fingerprint(pre: Pretrained) -> dict[str, Any]:
    """The training machine's fingerprint from the metrics (None fields for a model trained
    before it was recorded), and the digest of the weights as saved (the one rule,
    :func:`weights_sha256`, whatever dtype loaded them): two machines compare ``weights_sha256``
    to know whether they trained the same weights."""
    recorded = pre.metrics.get("fingerprint") or {}
    now = weights_sha256(pre.path)
    out = {"weights_sha256": now,
           **{k: recorded.get(k) for k in ("torch", "torch_cpu_capability", "cpu", "threads")}}
    if not recorded:
        out["note"] = "trained before fingerprints were recorded: only the weights' sha256 is known"
    elif recorded.get("weights_sha256") != now:
        out["note"] = (f"the weights differ from those trained ({recorded.get('weights_sha256')}): "
                       "the model was changed after training")
    return out


def from_files(files: dict[str, bytes], *, where: str | os.PathLike = "<checkpoint in memory>",
               dtype: torch.dtype = torch.float32) -> Pretrained:
    """The model of a checkpoint held in memory (the bytes of :func:`checkpoint_files`, e.g.
    shipped to a cluster worker), verified as :func:`load` verifies a folder: every file against
    ``manifest.json`` (required here), then the pieces against each other. ``where`` names the
    copy in error messages. The result has ``path=None`` (no folder holds it)."""
    if not isinstance(files, dict) or not all(isinstance(k, str) and isinstance(v, bytes)
                                              for k, v in files.items()):
        raise TypeError("files must be a dict of file name -> bytes (checkpoint_files)")
    where = Path(where)
    if MANIFEST not in files:
        raise CheckpointError(f"{where}: no {MANIFEST} among the files {sorted(files)}: a "
                              "checkpoint in memory is verified against its manifest")
    config, vocab, metrics, state = verify_files(where, files)
    pre = build_model(where, config, vocab, metrics, state, dtype)
    pre.path = None
    return pre
