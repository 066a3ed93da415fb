"""A parsed copy of the IMDb archive's reviews, kept in the cache beside the archive's data.

Reading the 84 MB ``.tar.gz`` means decompressing it and parsing 50,000 tar headers: 4-5 s of one
core in every process that loads IMDb (each chapter's kernel, the training, the tests' workers).
The same reviews as arrays load in about 0.2 s. :func:`attnxai.data.load_imdb` reads the archive
once, writes this copy, and reads the copy afterwards.

One uncompressed ``.npz`` per archive, named by the archive's sha256 and :data:`FORMAT`: the
texts' UTF-8 bytes end to end (``text``), their byte ``offsets`` (n + 1), and per review its
``label``, ``rating``, ``id`` and official ``split`` (0 train, 1 test), in the order given. It is
written atomically; a copy that cannot be read, or whose arrays do not hold what they promise
(offsets out of order or past the text, lengths that differ, a label or split out of range, bytes
that are not UTF-8), is reported as missing, so the archive is read again and the copy rewritten.
"""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

import numpy as np

from .files import atomic_write

__all__ = ["FORMAT", "Row", "copy_path", "load", "save"]

#: The layout's version, part of the file's name: a new layout never reads an old file.
FORMAT = 1
#: One review: (text, label, rating, id, split), split "train" or "test".
Row = tuple[str, int, int, int, str]
SPLITS = ("train", "test")
_FIELDS = ("text", "offsets", "label", "rating", "id", "split")


def copy_path(folder: str | os.PathLike, archive_sha256: str) -> Path:
    """Where the copy of the archive with this sha256 lives in ``folder``."""
    return Path(folder) / f"reviews-{archive_sha256[:32]}-v{FORMAT}.npz"


def save(path: str | os.PathLike, rows: list[Row]) -> Path:
    """Write ``rows`` to ``path`` (atomically: a reader sees the old file or the whole new one)."""
    blobs = [text.encode("utf-8") for text, *_ in rows]
    offsets = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum([len(b) for b in blobs], out=offsets[1:])
    arrays = {"text": np.frombuffer(b"".join(blobs), dtype=np.uint8), "offsets": offsets,
              "label": np.array([r[1] for r in rows], dtype=np.int8),
              "rating": np.array([r[2] for r in rows], dtype=np.int8),
              "id": np.array([r[3] for r in rows], dtype=np.int64),
              "split": np.array([SPLITS.index(r[4]) for r in rows], dtype=np.int8)}

    def write(tmp: Path) -> None:
        with open(tmp, "wb") as fh:          # a file object: np.savez would add ".npz" to a name
            np.savez(fh, **arrays)

    Path(path).parent.mkdir(parents=True, exist_ok=True)
    return atomic_write(path, write)


def load(path: str | os.PathLike) -> list[Row] | None:
    """The rows :func:`save` wrote to ``path``, in their order; None when there is no usable copy
    (missing, unreadable, or inconsistent: module docstring)."""
    try:
        with np.load(path, allow_pickle=False) as z:
            a = {k: z[k] for k in _FIELDS}
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile):
        return None
    if not _consistent(a):
        return None
    text, offsets = a["text"].tobytes(), a["offsets"].tolist()
    try:
        texts = [text[i:j].decode("utf-8") for i, j in zip(offsets[:-1], offsets[1:])]
    except UnicodeDecodeError:
        return None
    return [(t, label, rating, rid, SPLITS[split]) for t, label, rating, rid, split in
            zip(texts, a["label"].tolist(), a["rating"].tolist(), a["id"].tolist(),
                a["split"].tolist())]


def _consistent(a: dict[str, np.ndarray]) -> bool:
    """Whether the arrays hold what :func:`save` writes (module docstring)."""
    offsets = a["offsets"]
    n = offsets.size - 1
    if a["text"].dtype != np.uint8 or a["text"].ndim != 1 or offsets.dtype != np.int64 \
            or offsets.ndim != 1 or n < 0:
        return False
    if any(a[k].shape != (n,) for k in ("label", "rating", "id", "split")):
        return False
    if offsets[0] != 0 or offsets[-1] != a["text"].size or np.any(np.diff(offsets) < 0):
        return False
    return bool(np.isin(a["label"], (0, 1)).all() and np.isin(a["split"], (0, 1)).all())
