import gzip
import io
import os
import shutil
import tarfile
import time

import pytest

from attnxai import data
from attnxai.data import DataError, archive_path, load_imdb, read_archive


def test_split_sizes_and_labels(imdb):
    assert (len(imdb.train), len(imdb.valid), len(imdb.test)) == (20_000, 5_000, 25_000)
    assert sum(r.label for r in imdb.test) == 12_500
    # validation and train are disjoint and come from the official train folder
    ids_t = {(r.id, r.label) for r in imdb.train}
    assert not ids_t & {(r.id, r.label) for r in imdb.valid}
    assert all(r.split == "train" for r in imdb.valid)
    # labels agree with ratings: positive reviews are rated >= 7, negative <= 4
    assert all((r.rating >= 7) == bool(r.label) for r in imdb.test[:2000] + imdb.train[:2000])
    assert 0.45 < sum(r.label for r in imdb.train) / len(imdb.train) < 0.55


def test_split_is_deterministic(imdb, archive):
    data._CACHE.clear()
    again = load_imdb(archive)
    assert [r.id for r in again.valid[:50]] == [r.id for r in imdb.valid[:50]]
    assert again.checksum == imdb.checksum


def test_loading_is_fast(archive):
    data._CACHE.clear()
    t = time.perf_counter()
    load_imdb(archive)
    assert time.perf_counter() - t < 60  # the target (15 s) lives in benchmarks/; this is a guard


def test_missing_archive(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNXAI_IMDB_ARCHIVE", str(tmp_path / "nope.tar.gz"))
    with pytest.raises(DataError, match=r"not found: .*nope.tar.gz.*ATTNXAI_IMDB_ARCHIVE"):
        archive_path()


def test_truncated_archive(tmp_path, archive):
    bad = tmp_path / "trunc.tar.gz"
    with open(archive, "rb") as src, open(bad, "wb") as dst:
        dst.write(src.read(1_000_000))
    with pytest.raises(DataError, match="truncated"):
        archive_path(bad)
    with pytest.raises(DataError, match="truncated"):
        read_archive(bad)


def _make_archive(path, files):
    with tarfile.open(path, "w:gz") as tar:
        for name, text in files.items():
            raw = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(raw)
            tar.addfile(info, io.BytesIO(raw))


def test_wrong_file_and_small_archive(tmp_path):
    small = tmp_path / "small.tar.gz"
    _make_archive(small, {
        "aclImdb/train/pos/1_9.txt": "good", "aclImdb/train/neg/2_1.txt": "bad",
        "aclImdb/test/pos/3_8.txt": "fine", "aclImdb/test/neg/4_2.txt": "awful",
        "aclImdb/train/unsup/5_0.txt": "ignored", "aclImdb/README": "x",
    })
    with pytest.raises(DataError, match="not the IMDb archive"):
        archive_path(small)
    parts = read_archive(archive_path(small, verify=False))
    assert [(r.text, r.label, r.rating) for r in parts["train"]] == [("bad", 0, 1), ("good", 1, 9)]
    other = tmp_path / "other.tar.gz"
    _make_archive(other, {"something/else.txt": "x"})
    with pytest.raises(DataError, match="holds no aclImdb"):
        read_archive(other)


def test_download_failure_says_what_to_do(tmp_path, monkeypatch):
    from attnxai.store import download

    def unreachable(*a, **k):
        raise download.DownloadError("could not connect (network is unreachable)")

    monkeypatch.setattr(download, "download", unreachable)
    monkeypatch.setenv("ATTNXAI_OFFLINE", "0")
    monkeypatch.setenv("ATTNXAI_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("ATTNXAI_IMDB_ARCHIVE", raising=False)
    with pytest.raises(DataError, match=r"could not download.*unreachable.*ATTNXAI_IMDB_ARCHIVE"):
        archive_path()
    assert sorted(p.name for p in (tmp_path / "cache" / "data").iterdir()) == []


def test_download_checks_md5(tmp_path, monkeypatch):
    import hashlib

    from attnxai.store import download

    seen = {}

    def fake_download(url, sink, *, max_bytes, what=None, progress=False):
        seen.update(url=url, max_bytes=max_bytes)
        sink.write(b"an archive")
        return 10

    monkeypatch.setattr(download, "download", fake_download)
    monkeypatch.setenv("ATTNXAI_OFFLINE", "0")
    with pytest.raises(DataError, match="does not have the archive's published md5"):
        data.download_imdb(tmp_path)
    assert seen == {"url": data.IMDB_URL, "max_bytes": data.IMDB_BYTES}
    assert list(tmp_path.iterdir()) == []                         # nothing kept
    monkeypatch.setattr(data, "IMDB_MD5", hashlib.md5(b"an archive").hexdigest())
    assert data.download_imdb(tmp_path).read_bytes() == b"an archive"


# ---------------------------------------------------------------- the parsed copy in the cache
def test_the_parsed_copy_gives_the_archives_reviews(tmp_path, monkeypatch, archive):
    """The first load reads the archive and writes the copy; a later process (the memo cleared)
    reads the copy alone (the archive's reader broken) and gets the same split, review for
    review: text, label, rating, id and folder."""
    from attnxai.store import reviews

    monkeypatch.setenv("ATTNXAI_CACHE", str(tmp_path))
    data._CACHE.clear()
    first = load_imdb(archive)
    copy = reviews.copy_path(tmp_path / "data", first.checksum)
    assert copy.is_file()
    data._CACHE.clear()

    def no_archive(path):
        raise AssertionError("the archive was read although the cache holds its copy")

    monkeypatch.setattr(data, "read_archive", no_archive)
    again = load_imdb(archive)
    for split in ("train", "valid", "test"):
        assert getattr(again, split) == getattr(first, split), split
    assert again.checksum == first.checksum
    data._CACHE.clear()


def _small_archive(path):
    _make_archive(path, {
        "aclImdb/train/pos/1_9.txt": "good \u00e9t\u00e9 \u2014 fine", "aclImdb/train/neg/2_1.txt": "bad",
        "aclImdb/test/pos/3_8.txt": "fine", "aclImdb/test/neg/4_2.txt": "awful \u4e2d",
    })
    return path


@pytest.mark.parametrize("damage", ["garbage", "truncated", "offsets past the text",
                                    "a split out of range", "not utf-8", "a missing array"])
def test_a_damaged_copy_is_read_again_from_the_archive(tmp_path, monkeypatch, damage):
    """A copy that cannot be read or does not hold what it promises is not used: the reviews
    come from the archive (the same as read_archive's) and the copy is written again."""
    import numpy as np

    from attnxai.store import reviews

    small = _small_archive(tmp_path / "small.tar.gz")
    cache = tmp_path / "cache"
    monkeypatch.setenv("ATTNXAI_CACHE", str(cache))
    checksum = data.file_sha256(small)
    truth = read_archive(small)
    assert data.read_reviews(small, checksum) == truth
    copy = reviews.copy_path(cache / "data", checksum)
    good = copy.read_bytes()
    with np.load(copy) as z:
        arrays = {k: z[k] for k in z.files}
    if damage == "garbage":
        copy.write_bytes(b"not an npz")
    elif damage == "truncated":
        copy.write_bytes(good[: len(good) // 2])
    else:
        if damage == "offsets past the text":
            arrays["offsets"][-1] += 5
        elif damage == "a split out of range":
            arrays["split"][0] = 2
        elif damage == "not utf-8":
            arrays["text"] = arrays["text"].copy()
            arrays["text"][0] = 0xFF
        else:
            del arrays["rating"]
        with open(copy, "wb") as fh:
            np.savez(fh, **arrays)
    assert reviews.load(copy) is None
    assert data.read_reviews(small, checksum) == truth
    assert reviews.load(copy) is not None and copy.read_bytes() == good


def test_a_read_only_cache_still_loads(tmp_path, monkeypatch):
    """Where the copy cannot be written, the reviews still come from the archive."""
    from attnxai.store import reviews

    small = _small_archive(tmp_path / "small.tar.gz")
    monkeypatch.setenv("ATTNXAI_CACHE", str(tmp_path / "cache"))

    def refuse(path, rows):
        raise PermissionError(13, "read-only", str(path))

    monkeypatch.setattr(reviews, "save", refuse)
    checksum = data.file_sha256(small)
    assert data.read_reviews(small, checksum) == read_archive(small)


_READ_ONCE = """
import sys, time
from attnxai import data
original = data.read_archive

def counted(path):
    with open(sys.argv[3], "a") as f:
        f.write("read\\n")
    time.sleep(1.0)                  # the others start meanwhile (the lock must hold them)
    return original(path)

data.read_archive = counted
print(repr(data.read_reviews(sys.argv[1], sys.argv[2])))
"""


def test_processes_that_start_at_once_read_the_archive_once(tmp_path):
    """Three processes that find no parsed copy at once (as `make book`'s two trainings do on a
    fresh clone): one reads the archive, the others wait for its copy and load it, whenever each
    starts; all get read_archive's reviews."""
    import os
    import subprocess
    import sys

    small = _small_archive(tmp_path / "small.tar.gz")
    script, count = tmp_path / "read.py", tmp_path / "reads.txt"
    script.write_text(_READ_ONCE)
    env = {**os.environ, "ATTNXAI_CACHE": str(tmp_path / "cache")}
    procs = [subprocess.Popen([sys.executable, str(script), str(small), data.file_sha256(small),
                               str(count)], env=env, stdout=subprocess.PIPE, text=True)
             for _ in range(3)]
    outs = [p.communicate(timeout=120)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0]
    assert count.read_text().splitlines() == ["read"]
    assert set(outs) == {repr(read_archive(small)) + "\n"}
