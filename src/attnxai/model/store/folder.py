"""Writing and reading a checkpoint folder, whatever it holds (checked by
:mod:`attnxai.model.store.verify`).

**Writing.** Writers of one folder take its lock (:func:`attnxai.store.files.writer_lock`,
``<folder>.lock`` beside it); the files are written into a ``.tmp-<name>-*`` folder beside the
target and swapped in with one atomic exchange (:func:`attnxai.store.files.replace_folder`): a
reader always finds the folder, old or new, never a missing or half-written one. A folder that
holds anything but a checkpoint's files is never replaced (:func:`check_replaceable`). Stale
``.tmp-*`` folders (a writer killed mid-save) are removed by the next save.

**Reading** goes through one open handle on the folder, so a swap during a read cannot mix two
versions; it never waits on or reads without end what is not a checkpoint's file (a folder, a FIFO
or a device in a file's place is refused as damaged, :func:`attnxai.store.files.open_regular`), and
no file is read beyond the size its manifest records.
"""

from __future__ import annotations

import os
import re
import shutil
import time
from pathlib import Path

from filelock import Timeout

from ...data import check_writable
from ...store import files as _files
from ...store.files import SMALL_FILE_BYTES, TMP_PREFIX, open_regular, replace_folder, writer_lock
from .manifest import CONTENT_FILES, MANIFEST, ORIGIN, CheckpointError, damaged, is_ours

__all__ = ["check_replaceable", "read_files", "read_folder", "write_folder"]

#: How many times a reader re-reads a folder that another process replaced while it was reading.
_READ_ATTEMPTS = 8
#: A ``.tmp-*`` folder of the old naming (no target name in it) older than this is stale.
_STALE_SECONDS = 3600.0


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


def _looks_like_a_checkpoint(path: Path) -> bool:
    """Whether the folder's ``manifest.json`` or ``config.json`` is one attnxai writes
    (:func:`_ours`; names alone do not tell a checkpoint from a user's folder holding a
    ``config.json`` of its own)."""
    for name in (MANIFEST, "config.json"):
        try:
            doc = _files.read_json(path / name)
        except (OSError, ValueError):
            continue
        if is_ours(name, doc):
            return True
    return False


def check_replaceable(path: Path) -> None:
    """Refuse to replace a folder that holds anything but a checkpoint's files (a save replaces
    the folder whole: what else it held would be deleted): every entry a file of a checkpoint's
    name (not a folder so named), and the folder recognised by its manifest or config."""
    if not path.is_dir():
        return
    ours = {*CONTENT_FILES, MANIFEST, ORIGIN}
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


def write_folder(files: dict[str, bytes], path: Path, extra: dict[str, bytes] | None = None) -> None:
    """Write the checkpoint files (then ``extra`` ones) into a new folder swapped in at ``path``,
    under its lock (:func:`save`)."""
    check_writable(path.parent)

    def fill(tmp: Path) -> None:
        for name in (*CONTENT_FILES, MANIFEST):           # the manifest last
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


def _limits(manifest: bytes | None) -> dict[str, int]:
    """The most bytes to read of each file: what the manifest records (one more byte shows a
    file that grew), else the size of any file of its kind (JSON files: 64 MiB; the weights:
    the memory budget). Weights the manifest records as larger than the memory budget are
    refused as such (:class:`attnxai.errors.OverBudget`), not read short and called truncated."""
    from ...budget import budget, check

    limits = {n: SMALL_FILE_BYTES for n in (*CONTENT_FILES, MANIFEST)}
    limits["model.safetensors"] = budget()[0]
    try:
        recorded = _files.loads_json(manifest, "manifest.json")["files"] \
            if manifest is not None else {}
        for n in CONTENT_FILES:
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
    from ...errors import NotARegularFile

    try:
        fd = open_regular(name if dfd is not None else folder / name, dir_fd=dfd)
    except FileNotFoundError:
        return None
    except NotARegularFile as exc:
        raise damaged(folder, [str(exc).replace(f"{folder / name}", name)], None) from None
    with os.fdopen(fd, "rb") as fh:
        return fh.read(limit + 1)


def _read_all(folder: Path, dfd: int | None) -> dict[str, bytes]:
    out: dict[str, bytes] = {}
    manifest = _read_one(MANIFEST, dfd, folder, SMALL_FILE_BYTES)
    limits = _limits(manifest)
    if manifest is not None:
        out[MANIFEST] = manifest
    for name in CONTENT_FILES:
        data = _read_one(name, dfd, folder, limits[name])
        if data is not None:
            out[name] = data
    return out


def read_files(path: Path) -> dict[str, bytes]:
    """The checkpoint's files, all read from the same folder (one open handle on it): a save that
    swaps the folder meanwhile cannot mix versions; files that vanish with a replaced folder are
    read again from the new one. The manifest is read first, and no file beyond the size it
    records."""
    names = (*CONTENT_FILES, MANIFEST)
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


def read_folder(path: str | os.PathLike) -> tuple[Path, dict[str, bytes]]:
    """The checkpoint folder ``path`` and its files' bytes; a clear error when it is missing."""
    path = Path(path).expanduser()
    if not path.is_dir():
        raise FileNotFoundError(f"no checkpoint folder at {path}: train one with "
                                "`python -m attnxai train --profile quick` or give the right path")
    return path, read_files(path)
