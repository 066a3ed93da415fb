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
