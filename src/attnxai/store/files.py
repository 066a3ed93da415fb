"""Writing files so that no reader ever sees half of one: the one place the package writes
atomically.

:func:`atomic_write` writes a file's bytes (or lets a writer such as ``DataFrame.to_parquet``
write them) to a temporary file beside the target, flushes it to disk and renames it over the
target in one step (``os.replace``): a reader finds the old file or the new one, never a
truncated one, and a writer killed half-way leaves only a ``.tmp-*`` file, which nothing reads.
:func:`replace_folder` does the same for a whole folder (a checkpoint): one atomic exchange of
the new folder with the old (``renameat2(RENAME_EXCHANGE)`` on Linux; elsewhere two renames, a
window of microseconds). Every writer of results, checkpoints, training states, book summaries
and pages goes through these two; neither ever replaces what is not a regular file (a device such
as ``/dev/null``, a FIFO: refused, :func:`output_target`) and a symlink stays a symlink (the file
it names is replaced). :func:`writer_lock` keeps two writers of one path apart (an OS file lock,
released by the kernel if its holder is killed), named by the real path so that no spelling of
it (a symlink) lets a second writer in. :func:`open_regular` and :func:`read_small_file` are how
stored files are opened for reading: a FIFO, a folder or a device put in a file's place is
refused instead of blocking the reader forever or being read without end; :func:`read_json` and
:func:`loads_json` read JSON bounded in size and in depth (no ``RecursionError``).
"""

from __future__ import annotations

import ctypes
import errno
import hashlib
import json
import os
import re
import shutil
import stat
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

__all__ = ["JSON_DEPTH", "SMALL_FILE_BYTES", "TMP_PREFIX", "WAIT_SECONDS", "atomic_write",
           "fsync_dir", "json_depth", "loads_json", "open_regular", "output_target",
           "probe_writable", "read_json", "read_small_file", "replace_folder", "sha256",
           "write_durably", "writer_lock"]

#: Temporary files and folders start with this (``.tmp-<target name>-<random>``): readers that
#: list a folder skip them.
TMP_PREFIX = ".tmp-"
#: How long a writer waits for another process writing the same path (a training of the
#: paper's model takes about 10 minutes on 2 cores, the multi-layer one hours on a CPU).
WAIT_SECONDS = 12 * 3600.0
#: The most :func:`read_small_file` reads (settings, manifests, configurations, vocabularies).
SMALL_FILE_BYTES = 64 << 20


def sha256(data: bytes) -> str:
    """The hex sha256 of ``data`` (the checkpoints' manifests, the published index, a model
    shipped to workers: one digest everywhere)."""
    return hashlib.sha256(data).hexdigest()


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def open_regular(path: str | os.PathLike, *, dir_fd: int | None = None) -> int:
    """A file descriptor for reading the regular file ``path`` (relative to ``dir_fd`` if given).

    Anything else in its place (a folder, a FIFO, a device such as ``/dev/zero``, also behind a
    symlink) raises :class:`attnxai.errors.NotARegularFile` without reading or waiting: the file
    is opened non-blocking (opening a FIFO otherwise waits for a writer) and checked with
    ``fstat`` on the descriptor itself, so a swap after the check cannot slip through."""
    from ..errors import NotARegularFile

    mode = os.stat(path, dir_fd=dir_fd).st_mode
    if not stat.S_ISREG(mode):
        raise NotARegularFile(f"{path} is {_kind(mode)}, not a regular file: it cannot be the "
                              "stored file expected there; put the right file back")
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    fd = os.open(path, flags, dir_fd=dir_fd)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotARegularFile(f"{path} is {_kind(mode)}, not a regular file")
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def output_target(path: str | os.PathLike) -> Path:
    """The file that writing ``path`` replaces: ``path`` with every symlink followed (a link
    stays a link; the file it names gets the new content). Raises
    :class:`attnxai.errors.NotARegularFile` when something other than a regular file is there (a
    device such as ``/dev/null``, a FIFO, a socket, also behind a link): an atomic write would
    replace it by a regular file (root may), so it is refused, nothing written."""
    from ..errors import NotARegularFile

    real = Path(os.path.realpath(Path(path).expanduser()))
    try:
        mode = os.stat(real).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return real
    if not stat.S_ISREG(mode) and not stat.S_ISDIR(mode):
        shown = f"{path} (a link to {real})" if Path(path).absolute() != real else f"{path}"
        raise NotARegularFile(f"{shown} is {_kind(mode)}, not a regular file: the package writes "
                              "its outputs as whole files and never in place of a device or a "
                              "pipe; give a file name (nothing was written)")
    return real


def probe_writable(path: str | os.PathLike) -> Path:
    """Check that ``path`` (a file or folder to be written, existing or not) can be created:
    nothing but a regular file or a folder there (:func:`output_target`, symlinks followed), and
    its nearest existing parent folder must accept a new file (tried with a temporary file,
    removed at once: permissions, read-only file systems and root's rights all count). Returns
    that parent; raises ``NotADirectoryError`` when a parent is a file, else the ``OSError`` of
    the attempt."""
    path = output_target(path).absolute()
    parent = path.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise NotADirectoryError(errno.ENOTDIR, f"{parent} is a file, not a folder, so {path} "
                                 "cannot be created", str(parent))
    fd, probe = tempfile.mkstemp(dir=parent, prefix=f"{TMP_PREFIX}write-test-")
    os.close(fd)
    os.unlink(probe)
    return parent


def read_small_file(path: str | os.PathLike, limit: int = SMALL_FILE_BYTES, *,
                    dir_fd: int | None = None) -> bytes:
    """The bytes of the regular file ``path`` (:func:`open_regular`), refused with
    :class:`attnxai.errors.NotARegularFile` when it holds more than ``limit`` bytes."""
    from ..errors import NotARegularFile

    with os.fdopen(open_regular(path, dir_fd=dir_fd), "rb") as fh:
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise NotARegularFile(f"{path} holds more than {limit} bytes, more than any file of its "
                              "kind: it is not the file expected there")
    return data


#: The deepest nesting of a JSON file the package reads (its own are at most 5 levels deep).
JSON_DEPTH = 64
_JSON_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')


def json_depth(data: bytes) -> int:
    """How deeply arrays and objects nest in the JSON text ``data`` (strings skipped), counted
    without parsing it (parsing a deeply nested text is what overflows the stack)."""
    import numpy as np

    a = np.frombuffer(_JSON_STRING.sub(b'""', data), dtype=np.uint8)
    step = np.isin(a, (0x5B, 0x7B)).astype(np.int64) - np.isin(a, (0x5D, 0x7D))
    return int(np.cumsum(step).max()) if step.size else 0


def loads_json(data: bytes | str, what: str, *, max_depth: int = JSON_DEPTH):
    """``json.loads(data)`` for a file the package stored or was sent (``what`` names it in the
    error): a text nested deeper than ``max_depth`` is refused with a ``ValueError`` before it is
    parsed, as is one that is not JSON (the error every caller already handles)."""
    blob = data.encode() if isinstance(data, str) else bytes(data)
    depth = json_depth(blob)
    if depth > max_depth:
        raise ValueError(f"{what} nests {depth} levels deep, more than any file of its kind "
                         f"({max_depth}): it is not the file expected there")
    try:
        return json.loads(blob)
    except RecursionError:                       # not reachable within max_depth; kept safe
        raise ValueError(f"{what} nests too deeply to be read") from None


def read_json(path: str | os.PathLike, limit: int = SMALL_FILE_BYTES, *,
              dir_fd: int | None = None):
    """A stored JSON file, read as :func:`read_small_file` reads it and parsed as
    :func:`loads_json` parses it (bounded in size and in depth)."""
    return loads_json(read_small_file(path, limit, dir_fd=dir_fd), str(path))


def fsync_dir(folder: str | os.PathLike) -> None:
    """Flush a folder's entries to disk (a rename is durable once its folder is); a no-op where
    folders cannot be opened (Windows)."""
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


def write_durably(path: str | os.PathLike, data: bytes) -> None:
    """Write ``data`` to ``path`` and flush it to disk before returning (not atomic by itself:
    for files inside a temporary folder that :func:`replace_folder` swaps in)."""
    with open(path, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())


def atomic_write(path: str | os.PathLike, data: bytes | str | Callable[[Path], object], *,
                 encoding: str = "utf-8", mode: int = 0o644) -> Path:
    """Replace the file ``path`` by new content in one step; returns ``path``.

    ``data``: the bytes, a str (written with ``encoding``), or a callable that writes the file
    it is given (e.g. ``lambda tmp: frame.to_parquet(tmp)``). The content goes to
    ``.tmp-<name>-*`` beside ``path``, is flushed to disk, given ``mode`` and renamed over
    ``path``; on any error the temporary file is removed and ``path`` is untouched. A symlink
    at ``path`` stays: the file it names is replaced (:func:`output_target`); a device, FIFO or
    socket there is refused before anything is written.
    """
    given, path = Path(path), output_target(path)
    if path.is_dir():
        raise IsADirectoryError(errno.EISDIR, f"{path} is a folder, not a file", str(path))
    fd, name = tempfile.mkstemp(dir=path.parent, prefix=f"{TMP_PREFIX}{path.name}-")
    tmp = Path(name)
    try:
        if callable(data):
            os.close(fd)
            data(tmp)
            with open(tmp, "rb+") as fh:
                os.fsync(fh.fileno())
        else:
            blob = data.encode(encoding) if isinstance(data, str) else bytes(data)
            with os.fdopen(fd, "wb") as fh:
                fh.write(blob)
                fh.flush()
                os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)
    return given


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


def replace_folder(path: str | os.PathLike, fill: Callable[[Path], object]) -> Path:
    """Replace the folder ``path`` (or create it) by a new one that ``fill(tmp)`` writes.

    ``fill`` writes every file into the empty temporary folder ``tmp`` (beside ``path``, named
    ``.tmp-<name>-*``; use :func:`write_durably`); the folder is then swapped in with one atomic
    exchange and the old one deleted. A reader sees the old folder or the new one, never none
    and never a mixture. The caller holds whatever lock keeps two writers of ``path`` apart.
    """
    path = Path(path)
    tmp = Path(tempfile.mkdtemp(dir=path.parent, prefix=f"{TMP_PREFIX}{path.name}-"))
    try:
        fill(tmp)
        os.chmod(tmp, 0o755)
        fsync_dir(tmp)
        if not path.exists():
            os.rename(tmp, path)
        elif _exchange(tmp, path):
            pass                           # tmp now holds the old folder: deleted below
        else:                              # no atomic exchange here: the shortest window
            aside = Path(tempfile.mkdtemp(dir=path.parent, prefix=f"{TMP_PREFIX}{path.name}-old-"))
            os.rename(path, aside / "old")
            os.rename(tmp, path)
            shutil.rmtree(aside, ignore_errors=True)
        fsync_dir(path.parent)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return path


def writer_lock(path: str | os.PathLike):
    """The writers' lock of ``path``: ``<path>.lock`` beside it (a ``filelock.FileLock``, one
    object per path in a process, so it is reentrant; the empty file stays). The lock is named
    by the real path (symlinks followed, ``..`` resolved): two spellings of one folder (a link
    to it, a relative path) take the same lock, so no spelling lets a second writer in."""
    from filelock import FileLock

    path = Path(os.path.realpath(Path(path).expanduser()))
    return FileLock(str(path.parent / f"{path.name}.lock"), is_singleton=True)
