"""Saving, loading and caching trained models (safetensors + JSON; never pickle).

A checkpoint is a folder::

    model.safetensors   the weights W_e, W_q, W_k, W_v, W_l
    config.json         the training configuration (TrainConfig) and the model's constructor args
    vocab.json          the vocabulary (words after the specials)
    metrics.json        accuracies, timings, per-epoch history
    manifest.json       sha256 and size of the four files above, the vocabulary size and the
                        sha256 of the config (canonical JSON): written last at save, checked at load

:func:`pretrained` keeps one such folder per (training config, IMDb archive checksum) under
``<cache>/models/`` (:func:`attnxai.data.cache_dir`), so the book trains a profile once and every
chapter reuses it.

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

**Concurrency.** Writers of one checkpoint folder take a lock (``<folder>.lock`` beside it, an OS
file lock from the ``filelock`` package: released by the kernel if its holder is killed; the empty
file stays): :func:`pretrained` holds it around training *and* saving, so two processes asking for
the same missing model train it once (the second waits, then loads). :func:`save` writes a
``.tmp-<name>-*`` folder beside the target and swaps it in with one atomic exchange
(``renameat2(RENAME_EXCHANGE)`` on Linux; elsewhere two renames, a window of microseconds): a
reader always finds the folder, old or new, never a missing or half-written one (saving through a
symlink replaces the folder it points to). Readers read every file through one open handle on the
folder, so a swap during a read cannot mix two versions. Stale ``.tmp-*`` folders (a writer
killed mid-save) are removed by the next save. The cache's writability is checked before
training.

**Offline.** :func:`pretrained` finds a cached model from the profile and the archive's checksum
without parsing the archive; with no archive given it looks for the model of either known IMDb
archive (:data:`attnxai.data.KNOWN_SHA256`), so it needs neither the archive nor the network.
"""

from __future__ import annotations

import ctypes
import errno
import hashlib
import json
import os
import re
import shutil
import sys
import tempfile
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from filelock import FileLock, Timeout
from safetensors.torch import load as load_safetensors
from safetensors.torch import save as save_safetensors

from .data import (ENV_ARCHIVE, ENV_CACHE, KNOWN_SHA256, OFFICIAL_SHA256, archive_path, cache_dir,
                   check_writable, default_cache_dir, file_sha256, load_imdb)
from .interface import ClassifierBase
from .model import AttentionClassifier
from .multilayer import MultiLayerClassifier
from .runconfig import profile as book_profile
from .text import TruncationWarning, Vocab, tokenize
from .train import PROFILES, TrainConfig, check_device, get_config, predict, train

__all__ = ["CheckpointError", "CheckpointWarning", "FORMAT_VERSION", "MANIFEST", "MODEL_CLASSES",
           "Pretrained", "cache_key", "checkpoint_files", "config_sha256", "from_files", "load",
           "pretrained", "save"]

#: The model classes a checkpoint can hold, by the name its config.json records (``arch``).
MODEL_CLASSES: dict[str, type[ClassifierBase]] = {"AttentionClassifier": AttentionClassifier,
                                                   "MultiLayerClassifier": MultiLayerClassifier}
#: Bump when a change to the code changes what a given config trains to.
FORMAT_VERSION = 1
_FILES = ("model.safetensors", "config.json", "vocab.json", "metrics.json")
MANIFEST = "manifest.json"
MANIFEST_VERSION = 1
#: How many times a reader re-reads a folder that another process replaced while it was reading.
_READ_ATTEMPTS = 8
#: A ``.tmp-*`` folder of the old naming (no target name in it) older than this is stale.
_STALE_SECONDS = 3600.0


class CheckpointError(RuntimeError):
    """A checkpoint folder is damaged, inconsistent or cannot be written (the message says which
    file and how to rebuild it)."""


class CheckpointWarning(UserWarning):
    """Something about a checkpoint the reader should know (a legacy folder got its manifest)."""


def _outside() -> int:
    """``stacklevel`` for a warning raised in this package: the first caller outside it."""
    pkg = os.path.dirname(os.path.abspath(__file__))
    frame, level = sys._getframe(1), 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(pkg):
        frame, level = frame.f_back, level + 1
    return level


@dataclass
class Pretrained:
    """A trained model with its vocabulary, training config and metrics."""

    model: ClassifierBase
    vocab: Vocab
    config: dict[str, Any]
    metrics: dict[str, Any]
    path: Path | None = None

    def _encode_all(self, texts: Sequence[str], truncate: bool, *,
                    empty_is_cls: bool = False) -> list[list[int]]:
        """Id lists for ``texts``; one :class:`TruncationWarning` for all the texts cut."""
        if not isinstance(truncate, (bool, np.bool_)):
            raise TypeError(f"truncate must be True or False, got {type(truncate).__name__}")
        L = self.model.max_len
        seqs, cut = [], []
        for i, t in enumerate(texts):
            try:
                ids = self.vocab.encode(t, L, truncate=bool(truncate))
            except ValueError:
                if not empty_is_cls or not isinstance(t, str) or re.search(r"[^\W_]", t):
                    raise
                ids = [self.vocab.cls_id]
            if len(ids) == L:
                n = len(tokenize(t))
                if n > L - 1:
                    cut.append((i, n))
            seqs.append(ids)
        if cut:
            shown = ", ".join(f"text {i} has {n} ({n - (L - 1)} dropped)" for i, n in cut[:3])
            more = f" and {len(cut) - 3} more" if len(cut) > 3 else ""
            warnings.warn(f"{len(cut)} of {len(seqs)} text(s) longer than the model reads "
                          f"({L - 1} tokens after [CLS]) were cut: {shown}{more}. The model sees "
                          "only their first tokens; pass truncate=False to refuse such texts",
                          TruncationWarning, stacklevel=_outside())
        return seqs

    def encode(self, texts: str | Sequence[str], *, truncate: bool = True) -> torch.Tensor:
        """(B, T) ids for one text or a list of texts, padded as the model expects.

        A text longer than the model reads (``max_len - 1`` tokens after ``[CLS]``) is cut to its
        first tokens with a :class:`~attnxai.text.TruncationWarning` saying how many were dropped
        (``truncate=False``: ``ValueError`` instead). A text with no letter or digit raises
        ``ValueError``.
        """
        if isinstance(texts, str):
            texts = [texts]
        if isinstance(texts, bytes) or not isinstance(texts, Sequence):
            raise TypeError(f"texts must be a str or a list of str, got {type(texts).__name__}")
        if len(texts) == 0:
            raise ValueError("no texts given")
        return self.model.collate(self._encode_all(texts, truncate))

    def predict_logits(self, texts: Sequence[str], batch_size: int = 256,
                       head: int | None = None, *, truncate: bool = True) -> np.ndarray:
        """Logits (n, n_classes) as float64 numpy: the ``classifier_fn`` to give lime.

        ``texts`` is a list of str (a single str is refused: it would be read as a list of
        characters). Texts with no word left (lime can delete every word: empty, blank or
        punctuation only) are the document ``[CLS]`` alone. A text longer than the model reads is
        cut, with a :class:`~attnxai.text.TruncationWarning` (``truncate=False``: ``ValueError``).
        ``head=i`` returns head ``i``'s own output ``W_l^(i) v~^(i)`` (explaining one head; the
        last layer's heads for a multi-layer model).
        """
        if isinstance(texts, (str, bytes)):
            raise TypeError("predict_logits takes a list of texts, got a single str: wrap it, "
                            "predict_logits([text])")
        if not isinstance(texts, (Sequence, np.ndarray)):
            raise TypeError(f"texts must be a list of str, got {type(texts).__name__}")
        seqs = self._encode_all(list(texts), truncate, empty_is_cls=True)
        return predict(self.model, seqs, batch_size=batch_size, head=head)

    def tokens(self, text: str) -> list[str]:
        """The tokens the model sees for ``text`` (with ``[CLS]``, after truncation, which is
        warned about)."""
        return self.vocab.decode(self._encode_all([text], True)[0])


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


def _cache_of(path: Path) -> Path | None:
    """The cache root holding ``path`` (``<cache>/models/<name>``), or None."""
    return path.parent.parent if path.parent.name == "models" else None


def rebuild_hint(path: Path, profile: str | None = None) -> str:
    """How to rebuild the checkpoint at ``path``: the exact command for a cached profile."""
    path = Path(path)
    if profile is None:
        m = re.fullmatch(r"(.+)-[0-9a-f]{16}", path.name)
        profile = m.group(1) if m else None
    cache = _cache_of(path)
    if cache is not None and profile in PROFILES:
        env = os.environ.get(ENV_CACHE)
        current = Path(env).expanduser() if env else default_cache_dir()
        prefix = "" if current.resolve() == cache.resolve() else f"ATTNXAI_CACHE={cache} "
        return (f"Rebuild it: delete the folder (rm -rf '{path}') and run "
                f"`{prefix}python -m attnxai train --profile {profile}`")
    return ("Delete the folder (rm -rf '{0}') and save the model again (attnxai.checkpoint.save), "
            "or restore the folder from a good copy").format(path)


def _damaged(path: Path, problems: list[str], profile: str | None) -> CheckpointError:
    what = "; ".join(problems)
    return CheckpointError(f"checkpoint {path} is damaged: {what}. It cannot be trusted. "
                           f"{rebuild_hint(path, profile)}")


# ---------------------------------------------------------------------- saving
def _lock(path: Path) -> FileLock:
    """The writers' lock of the checkpoint folder ``path`` (one object per path: reentrant)."""
    return FileLock(str(path.parent / f"{path.name}.lock"), is_singleton=True)


def _exchange(a: Path, b: Path) -> bool:
    """Swap two existing paths in one atomic step (Linux ``renameat2(RENAME_EXCHANGE)``).
    False where the system or file system cannot (the caller falls back)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        fn = ctypes.CDLL(None, use_errno=True).renameat2
    except (AttributeError, OSError):
        return False
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    fn.restype = ctypes.c_int
    at_fdcwd, rename_exchange = -100, 2
    if fn(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP):
        return False
    raise OSError(err, os.strerror(err), str(b))


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _clean_stale(parent: Path, name: str) -> list[Path]:
    """Remove the ``.tmp-<name>-*`` folders of killed writers of ``name`` (call with its lock
    held: no live writer owns one then) and ``.tmp-*`` folders of the old naming older than an
    hour. Returns what was removed."""
    removed = []
    now = time.time()
    for p in parent.glob(".tmp-*"):
        ours = p.name.startswith(f".tmp-{name}-")
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


def _write(folder: Path, name: str, data: bytes) -> None:
    with open(folder / name, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())


def save(pre: Pretrained, path: str | os.PathLike) -> Path:
    """Write a checkpoint folder (with its manifest), atomically for readers and writers.

    Under the folder's lock: stale temporary folders are removed, the files are written to a
    ``.tmp-<name>-*`` folder beside ``path``, then swapped in (an existing folder is replaced in
    one atomic exchange and then deleted). A reader sees the old folder or the new one, never none.
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
    with _lock(path):
        _clean_stale(path.parent, path.name)
        tmp = Path(tempfile.mkdtemp(dir=path.parent, prefix=f".tmp-{path.name}-"))
        try:
            for name in (*_FILES, MANIFEST):  # the manifest last
                _write(tmp, name, files[name])
            os.chmod(tmp, 0o755)
            _fsync_dir(tmp)
            if not path.exists():
                os.rename(tmp, path)
            elif _exchange(tmp, path):
                pass                           # tmp now holds the old folder: deleted below
            else:                              # no atomic exchange here: the shortest window
                aside = Path(tempfile.mkdtemp(dir=path.parent, prefix=f".tmp-{path.name}-old-"))
                os.rename(path, aside / "old")
                os.rename(tmp, path)
                shutil.rmtree(aside, ignore_errors=True)
            _fsync_dir(path.parent)
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)
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
        if not replaced or all(n in out for n in _FILES):
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
    lock = _lock(path)
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
                fd, tmp = tempfile.mkstemp(dir=path, prefix=".manifest-")
                with os.fdopen(fd, "wb") as fh:
                    fh.write(_manifest(files, config, len(vocab), adopted=True))
                    fh.flush()
                    os.fsync(fh.fileno())
                os.chmod(tmp, 0o644)
                os.replace(tmp, path / MANIFEST)
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
    warnings.warn(msg, CheckpointWarning, stacklevel=_outside())


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


# ---------------------------------------------------------------------- the cache
def cache_key(config: TrainConfig, data_checksum: str) -> str:
    blob = json.dumps({"config": config.to_dict(), "data": data_checksum, "format": FORMAT_VERSION},
                      sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _candidates(config: TrainConfig, archive: str | os.PathLike | None) -> list[tuple[Path, str]]:
    """The cache folders that can hold ``config``'s model, with the data they were trained on.

    With an archive (argument or ``$ATTNXAI_IMDB_ARCHIVE``): the one folder of that archive's
    sha256 (the file is hashed, not parsed, and nothing is downloaded). Without one: the folders of
    the known archives (the official one, then the labelled copy), so that a cached model is found
    offline, without the archive."""
    models = cache_dir(create=False) / "models"
    if archive is not None or os.environ.get(ENV_ARCHIVE):
        path = archive_path(archive)
        shas = [(file_sha256(path), str(path))]
    else:
        shas = [(OFFICIAL_SHA256, KNOWN_SHA256[OFFICIAL_SHA256])]
        shas += [(s, n) for s, n in KNOWN_SHA256.items() if s != OFFICIAL_SHA256]
    return [(models / f"{config.profile}-{cache_key(config, sha)}", name) for sha, name in shas]


def _load_cached(folder: Path, config: TrainConfig, dtype: torch.dtype) -> Pretrained:
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
    """The model trained with ``profile`` ("paper", "quick" or a TrainConfig), from the cache,
    training it first if needed. ``profile=None`` reads ``ATTNXAI_PROFILE`` (default "paper"):
    this is how the test build of the book runs every chapter on the quick model.

    Offline first: a cached model is found and loaded without reading the IMDb archive's reviews
    and without the network; with no archive given (argument or ``$ATTNXAI_IMDB_ARCHIVE``) the model
    trained on either known IMDb archive is used. Only training needs the data (then downloaded if
    no archive is given). Before training, the cache is checked to be writable; the training and
    the save run under the folder's lock, so concurrent callers train once. ``device``: where a
    training runs (:func:`attnxai.train.check_device`, checked first); the model returned is on
    the CPU."""
    device = check_device(device)
    on = {} if device.type == "cpu" else {"device": device}     # train()'s default is the CPU
    profile = profile or book_profile()
    config = get_config(profile)
    candidates = _candidates(config, archive)
    for folder, _ in candidates:
        if folder.is_dir():
            return _load_cached(folder, config, dtype)
    models = candidates[0][0].parent
    if not train_if_missing:
        cached = sorted(p.name for p in models.iterdir() if p.is_dir()
                        and not p.name.startswith(".")) if models.is_dir() else []
        raise FileNotFoundError(
            f"no cached model for profile {config.profile!r} in {models} (looked for "
            + ", ".join(f"{f.name} ({name})" for f, name in candidates)
            + f"; cached: {', '.join(cached) or 'none'}); run "
            f"`python -m attnxai train --profile {config.profile}`")
    check_writable(models)                     # before downloading or training anything
    data = load_imdb(archive)
    folder = models / f"{config.profile}-{cache_key(config, data.checksum)}"
    lock = _lock(folder)
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
    return _load_cached(folder, config, dtype)
