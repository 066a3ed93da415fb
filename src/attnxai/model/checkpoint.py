"""The checkpoint folder: its format, how it is written and how it is verified (safetensors +
JSON; never pickle).

A checkpoint is a folder::

    model.safetensors   the weights W_e, W_q, W_k, W_v, W_l
    config.json         the training configuration (TrainConfig) and the model's constructor args
    vocab.json          the vocabulary (words after the specials)
    metrics.json        accuracies, timings, per-epoch history
    manifest.json       sha256 and size of the four files above, the vocabulary size and the
                        sha256 of the config (canonical JSON): written last at save, checked at load
    origin.json         only in a downloaded checkpoint: where it came from (:func:`save_files`;
                        informative, not verified)

Where trained models are kept (one folder per profile and data, trained if missing) is
:mod:`attnxai.model.cache`; this module reads and writes any folder.

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
``<folder>.lock`` beside it; :mod:`attnxai.model.cache` holds it around training *and* saving, so two
processes asking for the same missing model train it once). :func:`save` writes a
``.tmp-<name>-*`` folder beside the target and swaps it in with one atomic exchange
(:func:`attnxai.store.files.replace_folder`): a reader always finds the folder, old or new, never a
missing or half-written one (saving through a symlink replaces the folder it points to). Readers
read every file through one open handle on the folder, so a swap during a read cannot mix two
versions. Stale ``.tmp-*`` folders (a writer killed mid-save) are removed by the next save.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import time
from pathlib import Path
from typing import Any

import torch
from filelock import Timeout
from safetensors.torch import load as load_safetensors
from safetensors.torch import save as save_safetensors

from ..store import files as _files
from .cache import FORMAT_VERSION, rebuild_hint
from ..data import check_writable
from ..errors import UserError
from ..store.files import sha256 as _sha256
from ..store.files import (SMALL_FILE_BYTES, TMP_PREFIX, atomic_write, open_regular, replace_folder,
                           writer_lock)
from .interface import ClassifierBase
from .single_layer import AttentionClassifier
from .multilayer import MultiLayerClassifier
from ..text import Vocab
from .textmodel import Pretrained

__all__ = ["CheckpointError", "CheckpointWarning", "FILES", "MANIFEST", "MODEL_CLASSES", "ORIGIN",
           "adopt", "check_replaceable", "checkpoint_files", "config_sha256", "describe",
           "from_files", "load", "origin", "save", "weights_sha256",
           "save_files"]

#: The model classes a checkpoint can hold, by the name its config.json records (``arch``).
MODEL_CLASSES: dict[str, type[ClassifierBase]] = {"AttentionClassifier": AttentionClassifier,
                                                   "MultiLayerClassifier": MultiLayerClassifier}
_FILES = ("model.safetensors", "config.json", "vocab.json", "metrics.json")
MANIFEST = "manifest.json"
#: Every file of a checkpoint folder, the manifest last (what is published and downloaded).
FILES = (*_FILES, MANIFEST)
#: Where a downloaded checkpoint came from (:func:`save_files`; not verified, not published).
ORIGIN = "origin.json"
MANIFEST_VERSION = 1
#: How many times a reader re-reads a folder that another process replaced while it was reading.
_READ_ATTEMPTS = 8
#: A ``.tmp-*`` folder of the old naming (no target name in it) older than this is stale.
_STALE_SECONDS = 3600.0
#: How long :func:`adopt` waits for a writer of the folder to finish.
_ADOPT_WAIT_SECONDS = 30.0


class CheckpointError(UserError, RuntimeError):
    """A checkpoint folder is damaged, inconsistent or cannot be written (the message says which
    file and how to rebuild it)."""


class CheckpointWarning(UserWarning):
    """Something about a checkpoint the reader should know."""


# ---------------------------------------------------------------------- manifest and messages
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
        m["adopted"] = ("written by `attnxai adopt` for a checkpoint without a manifest: its files "
                        "passed every check that needs no manifest and were trusted as found")
    return json.dumps(m, indent=2, sort_keys=True).encode()


def _damaged(path: Path, problems: list[str], profile: str | None) -> CheckpointError:
    what = "; ".join(problems)
    err = CheckpointError(f"checkpoint {path} is damaged: {what}. It cannot be trusted. "
                          f"{rebuild_hint(path, profile)}")
    err.problems = problems                 # what is wrong, without the advice (attnxai.model.hub)
    return err


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


def _ours(name: str, doc: Any) -> bool:
    """Whether ``doc``, the content of a checkpoint's ``manifest.json`` or ``config.json``, is one
    attnxai writes: a manifest with its version, file table of checkpoint files and config hash;
    a config naming an architecture attnxai knows, with the model's and the training's sections
    and the format (two common keys such as ``arch`` and ``model`` are not enough)."""
    if not isinstance(doc, dict):
        return False
    if name == MANIFEST:
        return isinstance(doc.get("manifest_version"), int) and isinstance(doc.get("files"), dict) \
            and set(doc["files"]) <= set(_FILES) and isinstance(doc.get("config_sha256"), str)
    return doc.get("arch", "AttentionClassifier") in MODEL_CLASSES and "arch" in doc \
        and isinstance(doc.get("model"), dict) and isinstance(doc.get("train"), dict) \
        and "format" in doc


def _looks_like_a_checkpoint(path: Path) -> bool:
    """Whether the folder's ``manifest.json`` or ``config.json`` is one attnxai writes
    (:func:`_ours`; names alone do not tell a checkpoint from a user's folder holding a
    ``config.json`` of its own)."""
    for name in (MANIFEST, "config.json"):
        try:
            doc = _files.read_json(path / name)
        except (OSError, ValueError):
            continue
        if _ours(name, doc):
            return True
    return False


def check_replaceable(path: Path) -> None:
    """Refuse to replace a folder that holds anything but a checkpoint's files (a save replaces
    the folder whole: what else it held would be deleted): every entry a file of a checkpoint's
    name (not a folder so named), and the folder recognised by its manifest or config."""
    if not path.is_dir():
        return
    ours = {*_FILES, MANIFEST, ORIGIN}
    entries = list(path.iterdir())
    other = sorted(p.name + ("/" if p.is_dir() and not p.is_symlink() else "") for p in entries
                   if p.name not in ours or (p.is_dir() and not p.is_symlink()))
    refuse = ("saving replaces the folder whole, so it refuses to replace this one (nothing was "
              "changed). Save into a new or empty folder, or into an existing checkpoint folder")
    if other:
        shown = ", ".join(other[:5]) + (f" and {len(other) - 5} more" if len(other) > 5 else "")
        raise CheckpointError(f"{path} holds files that are not a checkpoint's ({shown}): {refuse}")
    if entries and not _looks_like_a_checkpoint(path):
        raise CheckpointError(f"{path} is not recognised as an attnxai checkpoint (neither its "
                              f"{MANIFEST} nor its config.json is one attnxai writes): {refuse}")


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
    files[MANIFEST] = _manifest(files, pre.config, len(pre.vocab))
    _write(files, path)
    pre.path = path
    return path


def _write(files: dict[str, bytes], path: Path, extra: dict[str, bytes] | None = None) -> None:
    """Write the checkpoint files (then ``extra`` ones) into a new folder swapped in at ``path``,
    under its lock (:func:`save`)."""
    check_writable(path.parent)

    def fill(tmp: Path) -> None:
        for name in (*_FILES, MANIFEST):           # the manifest last
            _files.write_durably(tmp / name, files[name])
        for name, data in (extra or {}).items():
            _files.write_durably(tmp / name, data)

    lock = writer_lock(path)
    try:
        lock.acquire(timeout=_files.WAIT_SECONDS)
    except Timeout:
        raise CheckpointError(f"another process has been writing {path} for more than "
                              f"{_files.WAIT_SECONDS:.0f} s (it holds {lock.lock_file}): let it "
                              "finish, or stop it, then save again") from None
    try:
        check_replaceable(path)
        _clean_stale(path.parent, path.name)
        replace_folder(path, fill)
    finally:
        lock.release()


# ---------------------------------------------------------------------- loading
def _limits(manifest: bytes | None) -> dict[str, int]:
    """The most bytes to read of each file: what the manifest records (one more byte shows a
    file that grew), else the size of any file of its kind (JSON files: 64 MiB; the weights:
    the memory budget). Weights the manifest records as larger than the memory budget are
    refused as such (:class:`attnxai.errors.OverBudget`), not read short and called truncated."""
    from ..budget import budget, check

    limits = {n: SMALL_FILE_BYTES for n in (*_FILES, MANIFEST)}
    limits["model.safetensors"] = budget()[0]
    try:
        recorded = _files.loads_json(manifest, "manifest.json")["files"] \
            if manifest is not None else {}
        for n in _FILES:
            limits[n] = min(limits[n], max(0, int(recorded[n]["bytes"])))
        weights = int(recorded["model.safetensors"]["bytes"])
    except Exception:  # noqa: BLE001 - a damaged manifest is reported by _check
        return limits
    check(weights, f"this checkpoint's weights (model.safetensors: {weights} bytes, as its "
          "manifest records)", "raise the budget to load it (e.g. ATTNXAI_MEMORY_BUDGET=2G); "
          "the checkpoint itself was not checked, nor called damaged")
    return limits


def _read_one(name: str, dfd: int | None, folder: Path, limit: int) -> bytes | None:
    """The bytes of one file of the folder (at most ``limit + 1``), None if it is missing; a
    folder, FIFO or device in its place is refused as damage."""
    from ..errors import NotARegularFile

    try:
        fd = open_regular(name if dfd is not None else folder / name, dir_fd=dfd)
    except FileNotFoundError:
        return None
    except NotARegularFile as exc:
        raise _damaged(folder, [str(exc).replace(f"{folder / name}", name)], None) from None
    with os.fdopen(fd, "rb") as fh:
        return fh.read(limit + 1)


def _read_all(folder: Path, dfd: int | None) -> dict[str, bytes]:
    out: dict[str, bytes] = {}
    manifest = _read_one(MANIFEST, dfd, folder, SMALL_FILE_BYTES)
    limits = _limits(manifest)
    if manifest is not None:
        out[MANIFEST] = manifest
    for name in _FILES:
        data = _read_one(name, dfd, folder, limits[name])
        if data is not None:
            out[name] = data
    return out


def _read_files(path: Path) -> dict[str, bytes]:
    """The checkpoint's files, all read from the same folder (one open handle on it): a save that
    swaps the folder meanwhile cannot mix versions; files that vanish with a replaced folder are
    read again from the new one. The manifest is read first, and no file beyond the size it
    records."""
    names = (*_FILES, MANIFEST)
    if os.open not in os.supports_dir_fd:      # no dir_fd (Windows): plain reads
        return _read_all(path, None)
    for attempt in range(_READ_ATTEMPTS):
        try:
            dfd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
        except (FileNotFoundError, NotADirectoryError):
            raise FileNotFoundError(
                f"no checkpoint folder at {path}: train one with `python -m attnxai train "
                "--profile quick` or give the right path") from None
        try:
            out = _read_all(path, dfd)
            try:
                replaced = os.stat(path).st_ino != os.fstat(dfd).st_ino
            except FileNotFoundError:
                replaced = True
        finally:
            os.close(dfd)
        # a replaced folder is being deleted: a file may be missing from it (the manifest too,
        # which would read as a folder without one), so it counts only if nothing is missing;
        # every save writes a manifest, so the folder that replaced it has one
        if not replaced or all(n in out for n in names):
            return out
        time.sleep(0.01 * (attempt + 1))
    raise CheckpointError(f"{path} kept being replaced while it was read ({_READ_ATTEMPTS} "
                          "attempts): another process is saving it in a loop")


def _check(path: Path, files: dict[str, bytes]) -> tuple[dict, Vocab, dict, dict]:
    """Verify the files (manifest, then consistency); returns config, vocab, metrics, state."""
    profile = None
    try:
        profile = _files.loads_json(files["config.json"], "config.json")["train"]["profile"]
    except Exception:
        pass
    missing = [f for f in _FILES if f not in files]
    if len(missing) == len(_FILES) and MANIFEST not in files:
        raise FileNotFoundError(f"{path} is not an attnxai checkpoint folder: it holds none of "
                                f"{', '.join((*_FILES, MANIFEST))}. Give the folder a checkpoint "
                                "was saved in (attnxai.model.checkpoint.save, `python -m attnxai train`)")
    if missing:
        raise FileNotFoundError(f"{path} is not a complete attnxai checkpoint: missing {missing}. "
                                f"{rebuild_hint(path, profile)}")
    manifest = None
    if MANIFEST in files:
        try:
            manifest = _files.loads_json(files[MANIFEST], MANIFEST)
            recs = {n: (str(manifest["files"][n]["sha256"]), int(manifest["files"][n]["bytes"]))
                    for n in _FILES}
        except Exception as exc:
            raise _damaged(path, [f"{MANIFEST} cannot be read ({type(exc).__name__}: {exc})"],
                           profile) from None
        problems = []
        for name in _FILES:
            sha, size = recs[name]
            data = files[name]
            if len(data) > size:
                problems.append(f"{name} has more than the {size} bytes the manifest recorded "
                                "(extended)")
            elif len(data) != size:
                problems.append(f"{name} has {len(data)} bytes, the manifest recorded {size} "
                                "(truncated)")
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

    config = parse("config.json", lambda b: _files.loads_json(b, "config.json"))
    if not isinstance(config, dict) or not isinstance(config.get("model"), dict):
        raise _damaged(path, ["config.json has no 'model' section"], profile)
    vocab = parse("vocab.json", Vocab.from_json)
    metrics = parse("metrics.json", lambda b: _files.loads_json(b, "metrics.json"))
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


#: The largest size config.json may give any dimension of a model (a vocabulary of 16 million
#: words; the book's models have at most 50 000): larger is damage, refused before any tensor.
MAX_DIMENSION = 1 << 24


def _check_shapes(path: Path, arch: str, args: dict, state: dict, profile: str | None) -> None:
    """Refuse, before the model allocates anything, a config whose sizes are not sane (each a
    whole number within :data:`MAX_DIMENSION`) or whose weights' shapes (built on torch's
    ``meta`` device: shapes, no memory) are not those of ``state``, the weights in the file."""
    bad = [f"{k}={v!r}" for k, v in args.items() if isinstance(v, int)
           and not isinstance(v, bool) and not 0 <= v <= MAX_DIMENSION]
    if bad:
        raise _damaged(path, [f"config.json's model section gives sizes no model has "
                              f"({', '.join(bad)}; each must be a whole number from 0 to "
                              f"{MAX_DIMENSION})"], profile)
    try:
        with torch.device("meta"):
            wanted = {k: tuple(v.shape) for k, v in MODEL_CLASSES[arch](**args).state_dict().items()}
    except (TypeError, ValueError, RuntimeError) as exc:
        raise _damaged(path, [f"config.json's model section is not valid for {arch} "
                              f"({str(exc)[:200]})"], profile) from None
    have = {k: tuple(v.shape) for k, v in state.items()}
    differ = [f"{k}: {wanted.get(k)} in config.json, {have.get(k)} in model.safetensors"
              for k in sorted(set(wanted) | set(have)) if wanted.get(k) != have.get(k)]
    if differ:
        raise _damaged(path, ["model.safetensors does not hold the weights config.json describes "
                              f"({'; '.join(differ[:4])})"], profile)


def _build(path: Path, config: dict, vocab: Vocab, metrics: dict, state: dict,
           dtype: torch.dtype) -> Pretrained:
    """The model of verified checkpoint pieces (``path``: where they came from, for messages)."""
    arch = config.get("arch", "AttentionClassifier")
    if arch not in MODEL_CLASSES:
        raise ValueError(f"{path} holds a {arch!r} model, unknown to this version of attnxai "
                         f"(known: {sorted(MODEL_CLASSES)})")
    profile = (config.get("train") or {}).get("profile")
    _check_shapes(path, arch, config["model"], state, profile)
    try:
        model = MODEL_CLASSES[arch](**config["model"])
    except (TypeError, ValueError, RuntimeError) as exc:
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


def _unverified(path: Path, files: dict[str, bytes]) -> CheckpointError:
    """The refusal of a folder without a manifest: how to adopt it, or rebuild it."""
    profile = None
    try:
        profile = _files.loads_json(files["config.json"], "config.json")["train"]["profile"]
    except Exception:  # noqa: BLE001 - only for the hint
        pass
    hint = rebuild_hint(path, profile)
    return CheckpointError(
        f"checkpoint {path} has no {MANIFEST}, so its files cannot be verified (it was saved by an "
        "attnxai older than checkpoint verification, or its manifest was deleted). If you trust "
        f"its files as they are, adopt it: `python -m attnxai adopt {shlex.quote(str(path))}` "
        "(it checks everything that needs no manifest, then records the files' sha256). "
        f"Otherwise, {hint[0].lower()}{hint[1:]}")


def load(path: str | os.PathLike, *, dtype: torch.dtype = torch.float32) -> Pretrained:
    """Load and verify a checkpoint folder written by :func:`save` (module docstring).

    Raises ``FileNotFoundError`` for a missing folder or file and :class:`CheckpointError` for a
    damaged or inconsistent one, or one without a manifest (naming the file and how to rebuild
    or adopt it)."""
    path, files = _read_folder(path)
    if MANIFEST not in files and all(n in files for n in _FILES):
        raise _unverified(path, files)
    config, vocab, metrics, state = _check(path, files)
    return _build(path, config, vocab, metrics, state, dtype)


def adopt(path: str | os.PathLike) -> Path:
    """Give a checkpoint folder without a manifest one (what ``python -m attnxai adopt PATH``
    runs; module docstring): every check that needs no manifest, then a manifest recording the
    files as they are, marked ``adopted``, written under the folder's lock. It trusts that the
    files were not changed since they were saved. Returns the manifest's path.

    Refuses a folder that already has a manifest (it is verified at every load: nothing to
    adopt), a damaged or inconsistent one, and one whose files change while it is adopted."""
    path, files = _read_folder(path)
    if MANIFEST in files:
        raise ValueError(f"{path} already has a {MANIFEST}: it is verified at every load, there "
                         "is nothing to adopt (a damaged one is rebuilt, not adopted)")
    config, vocab, metrics, state = _check(path, files)
    _build(path, config, vocab, metrics, state, torch.float32)        # weights against the model
    lock = writer_lock(path)
    try:
        lock.acquire(timeout=_ADOPT_WAIT_SECONDS)
    except Timeout:
        raise CheckpointError(f"{path} is being written by another process (its lock "
                              f"{lock.lock_file} was held for {_ADOPT_WAIT_SECONDS:.0f} s): "
                              "adopt it once that process has finished") from None
    try:
        if _read_files(path) != files:
            raise CheckpointError(f"the files of {path} changed while it was adopted: adopt it "
                                  "again once nothing writes it")
        return atomic_write(path / MANIFEST, _manifest(files, config, len(vocab), adopted=True))
    finally:
        lock.release()


def weights_sha256(source: str | os.PathLike | dict[str, bytes]) -> str:
    """The digest of a checkpoint's weights as saved (:func:`attnxai.store.provenance.weights_sha256`
    of its ``model.safetensors``): a checkpoint folder (verified as :func:`load` verifies it) or
    the files :func:`checkpoint_files` returns. The same digest as the ``weights_sha256`` a
    training records in ``metrics.json``'s ``fingerprint``, whatever dtype the model is loaded
    in: equal digests mean bit-identical weights."""
    from ..store.provenance import weights_sha256 as digest

    files = source if isinstance(source, dict) else checkpoint_files(source)
    return digest(load_safetensors(files["model.safetensors"]))


# ---------------------------------------------------------------------- checkpoints in memory
def checkpoint_files(path: str | os.PathLike) -> dict[str, bytes]:
    """The bytes of a checkpoint folder's four files and of its ``manifest.json``, read once and
    verified exactly as :func:`load` verifies them: what a cluster worker receives instead of a
    path (:mod:`attnxai.experiment.transport`). A folder without a manifest is refused as
    :func:`load` refuses it."""
    path, files = _read_folder(path)
    if MANIFEST not in files and all(n in files for n in _FILES):
        raise _unverified(path, files)
    _check(path, files)
    return {name: files[name] for name in (*_FILES, MANIFEST)}


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
    _write({name: files[name] for name in FILES}, path, extra)
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
    config, vocab, metrics, state = _check(where, files)
    pre = _build(where, config, vocab, metrics, state, dtype)
    pre.path = None
    return pre
