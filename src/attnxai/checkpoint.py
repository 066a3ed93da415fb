"""The checkpoint folder: its format, how it is written and how it is verified (safetensors +
JSON; never pickle).

A checkpoint is a folder::

    model.safetensors   the weights W_e, W_q, W_k, W_v, W_l
    config.json         the training configuration (TrainConfig) and the model's constructor args
    vocab.json          the vocabulary (words after the specials)
    metrics.json        accuracies, timings, per-epoch history
    manifest.json       sha256 and size of the four files above, the vocabulary size and the
                        sha256 of the config (canonical JSON): written last at save, checked at load

Where trained models are kept (one folder per profile and data, trained if missing) is
:mod:`attnxai.cache`; this module reads and writes any folder.

**Verification.** :func:`load` reads every file once, checks it against the manifest and then
checks the pieces against each other (the vocabulary's size against the embedding's rows and the
config, the weights' names and shapes against the model, finite weights). Any mismatch raises
:class:`CheckpointError` naming the damaged file and saying how to rebuild the checkpoint (the
exact ``python -m attnxai train`` command for a cached profile); the bytes verified are the bytes
loaded.

**Legacy checkpoints** (written before manifests existed, same ``FORMAT_VERSION``) are accepted:
every check that needs no manifest is made (file set, readable files, vocabulary size against the
embedding and the config, weights against the model, finite weights), then, if the folder is
writable, a manifest of the files as they are is written into it, with one
:class:`CheckpointWarning` saying so; later loads verify them fully. (A byte flipped *inside* the
weights of a legacy checkpoint before its manifest was written cannot be detected.)

**Concurrency.** Writers of one checkpoint folder take its lock (:func:`attnxai.files.writer_lock`,
``<folder>.lock`` beside it; :mod:`attnxai.cache` holds it around training *and* saving, so two
processes asking for the same missing model train it once). :func:`save` writes a
``.tmp-<name>-*`` folder beside the target and swaps it in with one atomic exchange
(:func:`attnxai.files.replace_folder`): a reader always finds the folder, old or new, never a
missing or half-written one (saving through a symlink replaces the folder it points to). Readers
read every file through one open handle on the folder, so a swap during a read cannot mix two
versions. Stale ``.tmp-*`` folders (a writer killed mid-save) are removed by the next save.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import time
import warnings
from pathlib import Path
from typing import Any

import torch
from filelock import Timeout
from safetensors.torch import load as load_safetensors
from safetensors.torch import save as save_safetensors

from . import files as _files
from .cache import FORMAT_VERSION, rebuild_hint
from .data import check_writable
from .errors import UserError, stacklevel
from .files import TMP_PREFIX, atomic_write, replace_folder, writer_lock
from .interface import ClassifierBase
from .model import AttentionClassifier
from .multilayer import MultiLayerClassifier
from .text import Vocab
from .textmodel import Pretrained

__all__ = ["CheckpointError", "CheckpointWarning", "MANIFEST", "MODEL_CLASSES", "checkpoint_files",
           "config_sha256", "from_files", "load", "save"]

#: The model classes a checkpoint can hold, by the name its config.json records (``arch``).
MODEL_CLASSES: dict[str, type[ClassifierBase]] = {"AttentionClassifier": AttentionClassifier,
                                                   "MultiLayerClassifier": MultiLayerClassifier}
_FILES = ("model.safetensors", "config.json", "vocab.json", "metrics.json")
MANIFEST = "manifest.json"
MANIFEST_VERSION = 1
#: How many times a reader re-reads a folder that another process replaced while it was reading.
_READ_ATTEMPTS = 8
#: A ``.tmp-*`` folder of the old naming (no target name in it) older than this is stale.
_STALE_SECONDS = 3600.0


class CheckpointError(UserError, RuntimeError):
    """A checkpoint folder is damaged, inconsistent or cannot be written (the message says which
    file and how to rebuild it)."""


class CheckpointWarning(UserWarning):
    """Something about a checkpoint the reader should know (a legacy folder got its manifest)."""


# ---------------------------------------------------------------------- manifest and messages
def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def config_sha256(config: dict[str, Any]) -> str:
    """sha256 of a checkpoint config as canonical JSON (sorted keys, no spaces)."""
    return _sha256(json.dumps(config, sort_keys=True, separators=(",", ":")).encode())


def _manifest(files: dict[str, bytes], config: dict[str, Any], vocab_size: int, *,
              adopted: bool = False) -> bytes:
    m = {"manifest_version": MANIFEST_VERSION,
         "format": config.get("format", FORMAT_VERSION),
         "files": {name: {"sha256": _sha256(files[name]), "bytes": len(files[name])}
                   for name in _FILES},
         "vocab_size": int(vocab_size),
         "config_sha256": config_sha256(config)}
    if adopted:
        m["adopted"] = ("written at load for a checkpoint saved without a manifest (attnxai before "
                        "issue 11): the files were checked for consistency, not against a record")
    return json.dumps(m, indent=2, sort_keys=True).encode()


def _damaged(path: Path, problems: list[str], profile: str | None) -> CheckpointError:
    what = "; ".join(problems)
    return CheckpointError(f"checkpoint {path} is damaged: {what}. It cannot be trusted. "
                           f"{rebuild_hint(path, profile)}")


# ---------------------------------------------------------------------- saving
def _clean_stale(parent: Path, name: str) -> list[Path]:
    """Remove the ``.tmp-<name>-*`` folders of killed writers of ``name`` (call with its lock
    held: no live writer owns one then) and ``.tmp-*`` folders of the old naming older than an
    hour. Returns what was removed."""
    removed = []
    now = time.time()
    for p in parent.glob(f"{TMP_PREFIX}*"):
        ours = p.name.startswith(f"{TMP_PREFIX}{name}-")
        old_style = re.fullmatch(r"\.tmp-[A-Za-z0-9_]{8}", p.name) is not None
        try:
            stale = ours or (old_style and now - p.lstat().st_mtime > _STALE_SECONDS)
        except FileNotFoundError:
            continue
        if stale:
            if p.is_symlink() or not p.is_dir():         # a swapped-out link to a folder
                p.unlink(missing_ok=True)
            else:
                shutil.rmtree(p, ignore_errors=True)
            removed.append(p)
    return removed


def save(pre: Pretrained, path: str | os.PathLike) -> Path:
    """Write a checkpoint folder (with its manifest), atomically for readers and writers.

    Under the folder's lock: stale temporary folders are removed, the files are written to a
    ``.tmp-<name>-*`` folder beside ``path``, then swapped in
    (:func:`attnxai.files.replace_folder`: an existing folder is replaced in one atomic exchange
    and then deleted). A reader sees the old folder or the new one, never none.
    """
    path = Path(path).expanduser()
    if path.is_symlink():                      # replace the folder it points to, not the link
        path = path.resolve()
    if path.exists() and not path.is_dir():
        raise CheckpointError(f"{path} exists and is not a folder: cannot save a checkpoint there")
    state = {k: v.detach().cpu().contiguous() for k, v in pre.model.state_dict().items()}
    files = {"model.safetensors": save_safetensors(state),
             "config.json": json.dumps(pre.config, indent=2, sort_keys=True).encode(),
             "vocab.json": json.dumps(pre.vocab.itos[3:], ensure_ascii=False).encode(),
             "metrics.json": json.dumps(pre.metrics, indent=2).encode()}
    files[MANIFEST] = _manifest(files, pre.config, len(pre.vocab))
    check_writable(path.parent)

    def fill(tmp: Path) -> None:
        for name in (*_FILES, MANIFEST):           # the manifest last
            _files.write_durably(tmp / name, files[name])

    with writer_lock(path):
        _clean_stale(path.parent, path.name)
        replace_folder(path, fill)
    pre.path = path
    return path


# ---------------------------------------------------------------------- loading
def _read_files(path: Path) -> dict[str, bytes]:
    """The checkpoint's files, all read from the same folder (one open handle on it): a save that
    swaps the folder meanwhile cannot mix versions; files that vanish with a replaced folder are
    read again from the new one."""
    names = (*_FILES, MANIFEST)
    if os.open not in os.supports_dir_fd:      # no dir_fd (Windows): plain reads
        return {n: (path / n).read_bytes() for n in names if (path / n).is_file()}
    for attempt in range(_READ_ATTEMPTS):
        try:
            dfd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
        except (FileNotFoundError, NotADirectoryError):
            raise FileNotFoundError(
                f"no checkpoint folder at {path}: train one with `python -m attnxai train "
                "--profile quick` or give the right path") from None
        try:
            out: dict[str, bytes] = {}
            for name in names:
                try:
                    fd = os.open(name, os.O_RDONLY, dir_fd=dfd)
                except FileNotFoundError:
                    continue
                with os.fdopen(fd, "rb") as fh:
                    out[name] = fh.read()
            try:
                replaced = os.stat(path).st_ino != os.fstat(dfd).st_ino
            except FileNotFoundError:
                replaced = True
        finally:
            os.close(dfd)
        # a replaced folder is being deleted: a file may be missing from it (the manifest too,
        # which would read as a legacy folder), so it counts only if nothing is missing; every
        # save writes a manifest, so the folder that replaced it has one
        if not replaced or all(n in out for n in names):
            return out
        time.sleep(0.01 * (attempt + 1))
    raise CheckpointError(f"{path} kept being replaced while it was read ({_READ_ATTEMPTS} "
                          "attempts): another process is saving it in a loop")


_WARNED: set[str] = set()


def _check(path: Path, files: dict[str, bytes]) -> tuple[dict, Vocab, dict, dict]:
    """Verify the files (manifest, then consistency); returns config, vocab, metrics, state."""
    profile = None
    try:
        profile = json.loads(files["config.json"])["train"]["profile"]
    except Exception:
        pass
    missing = [f for f in _FILES if f not in files]
    if missing:
        raise FileNotFoundError(f"{path} is not a complete attnxai checkpoint: missing {missing}. "
                                f"{rebuild_hint(path, profile)}")
    manifest = None
    if MANIFEST in files:
        try:
            manifest = json.loads(files[MANIFEST])
            recs = {n: (str(manifest["files"][n]["sha256"]), int(manifest["files"][n]["bytes"]))
                    for n in _FILES}
        except Exception as exc:
            raise _damaged(path, [f"{MANIFEST} cannot be read ({type(exc).__name__}: {exc})"],
                           profile) from None
        problems = []
        for name in _FILES:
            sha, size = recs[name]
            data = files[name]
            if len(data) != size:
                problems.append(f"{name} has {len(data)} bytes, the manifest recorded {size} "
                                f"({'truncated' if len(data) < size else 'extended'})")
            elif _sha256(data) != sha:
                problems.append(f"{name} does not match its manifest (sha256 "
                                f"{_sha256(data)[:12]}..., recorded {sha[:12]}...): its content "
                                "changed since it was saved")
        if problems:
            raise _damaged(path, problems, profile)

    def parse(name: str, fn):
        try:
            return fn(files[name])
        except Exception as exc:
            raise _damaged(path, [f"{name} cannot be read ({type(exc).__name__}: "
                                  f"{str(exc)[:200]})"], profile) from None

    config = parse("config.json", json.loads)
    if not isinstance(config, dict) or not isinstance(config.get("model"), dict):
        raise _damaged(path, ["config.json has no 'model' section"], profile)
    vocab = parse("vocab.json", Vocab.from_json)
    metrics = parse("metrics.json", json.loads)
    state = parse("model.safetensors", load_safetensors)
    W_e = state.get("W_e")
    n_emb = int(W_e.shape[0]) if W_e is not None and W_e.dim() == 2 else None
    n_cfg = config["model"].get("vocab_size")
    if not (len(vocab) == n_emb == n_cfg):
        votes = {"vocab.json": len(vocab), "model.safetensors": n_emb, "config.json": n_cfg}
        odd = [f for f, v in votes.items() if list(votes.values()).count(v) == 1]
        raise _damaged(path, [f"the vocabulary sizes disagree: vocab.json has {len(vocab)} words "
                              f"(with the 3 specials), the embedding W_e in model.safetensors has "
                              f"{n_emb} rows, config.json says {n_cfg}"
                              + (f" ({', '.join(odd)} is the odd one out)" if len(odd) == 1
                                 else "")], profile)
    if manifest is not None:
        if manifest.get("vocab_size") != len(vocab) or \
                manifest.get("config_sha256") != config_sha256(config):
            raise _damaged(path, [f"{MANIFEST} disagrees with the files it lists (vocabulary size "
                                  "or config hash): it was edited"], profile)
    # A NaN or inf makes the sum non-finite (fast); only then look element by element.
    bad = [k for k, v in state.items() if v.is_floating_point() and v.numel()
           and not bool(torch.isfinite(v.sum())) and not bool(torch.isfinite(v).all())]
    if bad:
        raise _damaged(path, [f"model.safetensors holds NaN or infinite weights in {bad}"], profile)
    return config, vocab, metrics, state


def _adopt_legacy(path: Path, files: dict[str, bytes], config: dict, vocab: Vocab) -> None:
    """Write the manifest of a legacy folder (no manifest) that passed every other check, under
    the folder's lock, into the very folder that was read; say so once per folder and process."""
    written, why = False, ""
    lock = writer_lock(path)
    try:
        lock.acquire(timeout=0)
    except (Timeout, OSError) as exc:
        why = ("another process holds its lock" if isinstance(exc, Timeout) else
               f"the folder is not writable ({exc.strerror or exc})")
    else:
        try:
            if (path / MANIFEST).exists():
                return                                   # another process adopted it meanwhile
            current = {n: (path / n).read_bytes() for n in _FILES}
            if current != {n: files[n] for n in _FILES}:
                why = "its files changed while it was read"
            else:
                atomic_write(path / MANIFEST, _manifest(files, config, len(vocab), adopted=True))
                written = True
        except OSError as exc:
            why = f"the folder is not writable ({exc.strerror or exc})"
        finally:
            lock.release()
    key = str(path.resolve())
    if key in _WARNED:
        return
    _WARNED.add(key)
    if written:
        msg = (f"checkpoint {path} had no {MANIFEST} (saved by an attnxai older than checkpoint "
               "verification): its files passed every check that needs no manifest (file set, "
               "vocabulary size against the embedding and the config, weights against the model, "
               f"finite weights) and a {MANIFEST} recording their sha256 was written, so any later "
               "change to them will be detected")
    else:
        msg = (f"checkpoint {path} has no {MANIFEST} (saved by an attnxai older than checkpoint "
               "verification): its files passed every check that needs no manifest, but no "
               f"manifest could be written ({why}), so a change inside its weights cannot be "
               "detected")
    warnings.warn(msg, CheckpointWarning, stacklevel=stacklevel())


def _build(path: Path, config: dict, vocab: Vocab, metrics: dict, state: dict,
           dtype: torch.dtype) -> Pretrained:
    """The model of verified checkpoint pieces (``path``: where they came from, for messages)."""
    arch = config.get("arch", "AttentionClassifier")
    if arch not in MODEL_CLASSES:
        raise ValueError(f"{path} holds a {arch!r} model, unknown to this version of attnxai "
                         f"(known: {sorted(MODEL_CLASSES)})")
    profile = (config.get("train") or {}).get("profile")
    try:
        model = MODEL_CLASSES[arch](**config["model"])
    except (TypeError, ValueError) as exc:
        raise _damaged(path, [f"config.json's model section is not valid for {arch} ({exc})"],
                       profile) from None
    try:
        model.load_state_dict(state)
    except RuntimeError as exc:
        raise _damaged(path, ["model.safetensors does not hold the weights config.json describes "
                              f"({str(exc)[:300]})"], profile) from None
    model.to(dtype).eval()
    return Pretrained(model, vocab, config, metrics, path)


def _read_folder(path: str | os.PathLike) -> tuple[Path, dict[str, bytes]]:
    """The checkpoint folder ``path`` and its files' bytes; a clear error when it is missing."""
    path = Path(path).expanduser()
    if not path.is_dir():
        raise FileNotFoundError(f"no checkpoint folder at {path}: train one with "
                                "`python -m attnxai train --profile quick` or give the right path")
    return path, _read_files(path)


def load(path: str | os.PathLike, *, dtype: torch.dtype = torch.float32) -> Pretrained:
    """Load and verify a checkpoint folder written by :func:`save` (module docstring).

    Raises ``FileNotFoundError`` for a missing folder or file and :class:`CheckpointError` for a
    damaged or inconsistent one (naming the file and how to rebuild it)."""
    path, files = _read_folder(path)
    config, vocab, metrics, state = _check(path, files)
    pre = _build(path, config, vocab, metrics, state, dtype)
    if MANIFEST not in files:
        _adopt_legacy(path, files, config, vocab)
    return pre


# ---------------------------------------------------------------------- checkpoints in memory
def checkpoint_files(path: str | os.PathLike) -> dict[str, bytes]:
    """The bytes of a checkpoint folder's four files and of its ``manifest.json``, read once and
    verified exactly as :func:`load` verifies them: what a cluster worker receives instead of a
    path (:mod:`attnxai.experiment.transport`). A legacy folder (no manifest) gets, in memory, the
    manifest :func:`load` would write for it after its consistency checks."""
    path, files = _read_folder(path)
    config, vocab, _, _ = _check(path, files)
    if MANIFEST not in files:
        files[MANIFEST] = _manifest(files, config, len(vocab), adopted=True)
    return {name: files[name] for name in (*_FILES, MANIFEST)}


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
    config, vocab, metrics, state = _check(where, files)
    pre = _build(where, config, vocab, metrics, state, dtype)
    pre.path = None
    return pre
