"""IMDb (Large Movie Review Dataset v1.0): download, verification, reading, the paper's split.

The archive is never extracted: reviews are streamed straight out of the ``.tar.gz`` once, and
kept in the cache as arrays (:mod:`attnxai.store.reviews`), which later loads read instead.

Where the archive comes from, in order of precedence:

1. the ``archive=`` argument of :func:`archive_path` / :func:`load_imdb`;
2. the environment variable ``ATTNXAI_IMDB_ARCHIVE`` (tests and CI point it at
   ``../shared/data/aclImdb_v1_labeled.tar.gz``);
3. the official archive, downloaded once (md5 checked; :mod:`attnxai.store.download`, never under
   ``ATTNXAI_OFFLINE=1``) into ``<cache>/data``.

The cache (:func:`cache_dir`: downloads, trained models) is the same for every way of starting:
``ATTNXAI_CACHE`` if set; else, when the package runs from a source checkout (``make book``,
``jupyter lab``, plain ``python``, ``pip install -e .``), the repository's ``.cache/``, found from
the package's own location; else (an installed wheel) the user cache folder (``platformdirs``,
e.g. ``~/.cache/attnxai``).
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import platformdirs

from .errors import UserError

#: The official archive and its published md5.
IMDB_URL = "https://ai.stanford.edu/~amaas/data/sentiment/aclImdb_v1.tar.gz"
IMDB_MD5 = "7c2ac02c03563afcf9b574c7e56c153a"
#: The most a download of it may give (it is 84.1 MB): anything longer is refused as it streams.
IMDB_BYTES = 96 << 20
#: sha256 of the official archive and of the labelled-only copy that CI uses.
KNOWN_SHA256 = {
    "c40f74a18d3b61f90feba1e17730e0d38e8b97c05fde7008942e91923d1658fe": "aclImdb_v1.tar.gz",
    "7662598ed0b34375977d4bdc14cdd7fb158dd2be7b43b99dd1f985a23f868066": "aclImdb_v1_labeled.tar.gz",
}
#: sha256 of the official archive (what a download gives; the md5 above is the published one).
OFFICIAL_SHA256 = "c40f74a18d3b61f90feba1e17730e0d38e8b97c05fde7008942e91923d1658fe"
ENV_ARCHIVE = "ATTNXAI_IMDB_ARCHIVE"
ENV_CACHE = "ATTNXAI_CACHE"

#: The paper's split of the official train set.
N_TRAIN, N_VALID, N_TEST = 20_000, 5_000, 25_000
SPLIT_SEED = 42

_MEMBER = re.compile(r"^aclImdb/(train|test)/(pos|neg)/(\d+)_(\d+)\.txt$")


class DataError(UserError, RuntimeError):
    """The IMDb archive is missing, truncated or not the expected file."""


class CacheError(UserError, RuntimeError):
    """The cache folder cannot be created or written."""


def source_checkout() -> Path | None:
    """The repository root when the package is imported from a source checkout
    (``<root>/src/attnxai`` beside ``<root>/pyproject.toml`` naming attnxai), else None (an
    installed wheel lives in site-packages, with no pyproject.toml two levels up)."""
    root = Path(__file__).resolve().parents[2]
    try:
        text = (root / "pyproject.toml").read_text(encoding="utf-8")
    except OSError:
        return None
    return root if re.search(r'(?m)^name\s*=\s*"attnxai"', text) else None


def default_cache_dir() -> Path:
    """The cache without ``ATTNXAI_CACHE``: ``<repository>/.cache`` from a source checkout, the
    user cache folder for an installed wheel (module docstring)."""
    root = source_checkout()
    return root / ".cache" if root is not None else Path(platformdirs.user_cache_dir("attnxai"))


def cache_dir(*, create: bool = True) -> Path:
    """Root of everything attnxai caches (data, trained models): ``ATTNXAI_CACHE`` if set, else
    :func:`default_cache_dir`. Created if missing (``create=True``); a folder that cannot be
    created raises :class:`CacheError` naming it."""
    env = os.environ.get(ENV_CACHE)
    path = Path(env).expanduser() if env else default_cache_dir()
    if create and not path.is_dir():
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise CacheError(f"cannot create the cache folder {path} ({exc.strerror or exc}); "
                             f"{_cache_hint(env)}") from exc
    return path


def _cache_hint(env: str | None) -> str:
    return (f"it comes from ${ENV_CACHE}={env}: point it at a writable folder" if env else
            f"set {ENV_CACHE} to a writable folder")


def check_writable(folder: str | os.PathLike) -> Path:
    """Make sure files can be created in ``folder`` (created if missing): done *before* a long
    computation whose result goes there. Raises :class:`CacheError` naming the folder."""
    folder = Path(folder)
    env = os.environ.get(ENV_CACHE)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(dir=folder, prefix=".write-test-")
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise CacheError(f"the cache folder {folder} is not writable ({exc.strerror or exc}): "
                         f"nothing could be saved there, so nothing was computed; "
                         f"{_cache_hint(env)}") from exc
    return folder


_SHA_MEMO: dict[tuple[str, int, int, int], str] = {}


def file_sha256(path: str | os.PathLike) -> str:
    """sha256 of a file, memoised per (path, inode, size, mtime) for the life of the process."""
    st = os.stat(path)
    key = (str(Path(path).resolve()), st.st_ino, st.st_size, st.st_mtime_ns)
    if key in _SHA_MEMO:
        return _SHA_MEMO[key]
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    _SHA_MEMO[key] = h.hexdigest()
    return _SHA_MEMO[key]


def file_md5(path: str | os.PathLike) -> str:
    h = hashlib.md5()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def download_imdb(dest: str | os.PathLike | None = None) -> Path:
    """Download the official archive (84 MB) once, check its md5, return its path (under
    ``ATTNXAI_OFFLINE=1``, no network: :class:`DataError` naming the archive variable)."""
    from .store.download import DownloadError, refuse_offline
    from .store.files import atomic_write

    folder = Path(dest) if dest is not None else cache_dir() / "data"
    path = folder / "aclImdb_v1.tar.gz"
    if path.is_file() and file_md5(path) == IMDB_MD5:
        return path
    instead = (f"set {ENV_ARCHIVE}=/path/to/aclImdb_v1.tar.gz (or pass archive=...) to read the "
               "archive from disk")
    try:
        refuse_offline(f"the IMDb archive ({IMDB_URL})", instead)
    except DownloadError as exc:
        raise DataError(str(exc)) from None
    folder.mkdir(parents=True, exist_ok=True)

    def fetch(tmp: Path) -> None:
        from .store.download import download

        with open(tmp, "wb") as sink:
            download(IMDB_URL, sink, max_bytes=IMDB_BYTES, what=f"the IMDb archive {IMDB_URL}",
                     progress=True)
        if file_md5(tmp) != IMDB_MD5:
            raise DataError(f"the file downloaded from {IMDB_URL} does not have the archive's "
                            f"published md5 ({IMDB_MD5}): refused, nothing was kept")

    try:
        atomic_write(path, fetch)
    except DownloadError as exc:
        raise DataError(f"could not download the IMDb archive ({exc}). If you have the archive "
                        f"on disk, {instead}.") from None
    return path


def archive_path(archive: str | os.PathLike | None = None, *, verify: bool = True) -> Path:
    """Resolve and check the IMDb archive (see module docstring for the precedence).

    With ``verify=True`` a local archive must have the official md5 or the sha256 of the
    labelled copy; anything else (a truncated download, another file) raises :class:`DataError`.
    """
    source = "archive argument"
    if archive is None and os.environ.get(ENV_ARCHIVE):
        archive, source = os.environ[ENV_ARCHIVE], f"${ENV_ARCHIVE}"
    if archive is None:
        return download_imdb()
    path = Path(archive).expanduser()
    if not path.is_file():
        what = "not found" if not path.exists() else "not a regular file"
        raise DataError(
            f"IMDb archive {what}: {path} (from the {source}). Point {ENV_ARCHIVE} at "
            "aclImdb_v1.tar.gz, or unset it to download the official archive."
        )
    if verify:
        sha = file_sha256(path)
        if sha not in KNOWN_SHA256 and file_md5(path) != IMDB_MD5:
            raise DataError(
                f"{path} is not the IMDb archive this book expects (sha256 {sha[:16]}..., "
                f"size {path.stat().st_size} bytes): it may be truncated or a different file. "
                f"Download it again from {IMDB_URL} (md5 {IMDB_MD5}), or pass verify=False to "
                "read it anyway."
            )
    return path


@dataclass(frozen=True)
class Review:
    """One review: ``label`` is 1 for positive, ``rating`` the star rating in the file name."""

    text: str
    label: int
    rating: int
    id: int
    split: str  # "train" or "test": the official folder it came from


def read_archive(path: str | os.PathLike) -> dict[str, list[Review]]:
    """All labelled reviews of the archive, ``{"train": [...], "test": [...]}``, sorted by path."""
    out: dict[str, list[tuple[str, Review]]] = {"train": [], "test": []}
    try:
        with tarfile.open(path, "r:gz") as tar:
            for member in tar:
                m = _MEMBER.match(member.name)
                if m is None or not member.isfile():
                    continue
                split, pol, rid, rating = m.groups()
                raw = tar.extractfile(member).read()  # type: ignore[union-attr]
                review = Review(raw.decode("utf-8"), int(pol == "pos"), int(rating), int(rid), split)
                out[split].append((member.name, review))
    except (tarfile.TarError, EOFError, OSError, UnicodeDecodeError) as exc:
        raise DataError(f"could not read the IMDb archive {path}: {exc}. It may be truncated: "
                        "download it again.") from exc
    if not out["train"] or not out["test"]:
        raise DataError(f"{path} holds no aclImdb/{{train,test}}/{{pos,neg}}/*.txt reviews: "
                        "is it the IMDb archive?")
    return {k: [r for _, r in sorted(v, key=lambda p: p[0])] for k, v in out.items()}


def read_reviews(path: str | os.PathLike, checksum: str) -> dict[str, list[Review]]:
    """:func:`read_archive`'s reviews of the archive at ``path`` (sha256 ``checksum``), from the
    cache's parsed copy when it has a usable one (:mod:`attnxai.store.reviews`); else read from
    the archive, and the copy written for the next process (unless the cache cannot be written:
    then the next process reads the archive too). Processes that find no copy at once (`make
    book`'s two trainings, `make test`'s workers) read the archive one at a time under the copy's
    writer lock, so the archive is read once and the others load the copy it left."""
    from .store import reviews
    from .store.files import writer_lock

    try:
        copy = reviews.copy_path(cache_dir() / "data", checksum)
    except CacheError:
        return read_archive(path)
    rows = reviews.load(copy)
    if rows is None:
        try:
            lock = writer_lock(copy)
            lock.acquire()
        except OSError:                      # a cache where no lock file can be written
            lock = None
        try:
            rows = reviews.load(copy)        # written by the process that held the lock
            if rows is None:
                return _read_and_keep(path, copy)
        finally:
            if lock is not None:
                lock.release()
    out: dict[str, list[Review]] = {split: [] for split in reviews.SPLITS}
    for text, label, rating, rid, split in rows:
        out[split].append(Review(text, label, rating, rid, split))
    return out


def _read_and_keep(path: str | os.PathLike, copy: Path) -> dict[str, list[Review]]:
    """:func:`read_archive`, and its parsed copy written to ``copy`` when the cache allows."""
    from .store import reviews

    parts = read_archive(path)
    try:
        reviews.save(copy, [(r.text, r.label, r.rating, r.id, r.split)
                            for split in reviews.SPLITS for r in parts[split]])
    except OSError:
        pass
    return parts


@dataclass
class IMDb:
    """The paper's three splits; ``checksum`` identifies the archive (used in cache keys)."""

    train: list[Review]
    valid: list[Review]
    test: list[Review]
    checksum: str

    def __repr__(self) -> str:
        return (f"IMDb(train={len(self.train)}, valid={len(self.valid)}, test={len(self.test)}, "
                f"checksum={self.checksum[:12]})")


_CACHE: dict[tuple[str, int], IMDb] = {}


def load_imdb(archive: str | os.PathLike | None = None, *, seed: int = SPLIT_SEED,
              verify: bool = True) -> IMDb:
    """Load the paper's split: 20,000 train / 5,000 validation (from the official train set,
    shuffled with ``seed``) and the 25,000 official test reviews.

    Results are memoised per (archive, seed) for the life of the process.
    """
    path = archive_path(archive, verify=verify)
    key = (str(path.resolve()), seed)
    if key in _CACHE:
        return _CACHE[key]
    checksum = file_sha256(path)
    parts = read_reviews(path, checksum)
    train_all = parts["train"]
    perm = np.random.default_rng(seed).permutation(len(train_all))
    n_valid = len(train_all) * N_VALID // (N_TRAIN + N_VALID)
    valid = [train_all[i] for i in perm[:n_valid]]
    train = [train_all[i] for i in perm[n_valid:]]
    data = IMDb(train, valid, parts["test"], checksum=checksum)
    _CACHE[key] = data
    return data
