"""The low modules every writer, reader and runner shares: atomic writes (attnxai.store.files), the
device parser (attnxai.model.devices), provenance and the cache's naming rule (attnxai.model.store.cache)."""

from __future__ import annotations

import os

import pytest

from attnxai.model import devices
from attnxai.model.store import cache
from attnxai import data
from attnxai.store import files, provenance
from attnxai.model.profiles import get_config


def test_atomic_write_replaces_or_leaves_the_old_file(tmp_path):
    path = tmp_path / "out.json"
    files.atomic_write(path, "old")
    files.atomic_write(path, b"new bytes")
    assert path.read_bytes() == b"new bytes" and oct(path.stat().st_mode & 0o777) == "0o644"
    files.atomic_write(path, lambda tmp: tmp.write_text("by a writer"))
    assert path.read_text() == "by a writer"

    def fails(tmp):
        tmp.write_text("half")
        raise RuntimeError("killed half-way")

    with pytest.raises(RuntimeError, match="half-way"):
        files.atomic_write(path, fails)
    assert path.read_text() == "by a writer"                  # untouched
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json"]   # no temporary left


def test_replace_folder_swaps_in_the_new_folder(tmp_path):
    target = tmp_path / "ckpt"
    files.replace_folder(target, lambda tmp: files.write_durably(tmp / "a", b"1"))
    files.replace_folder(target, lambda tmp: files.write_durably(tmp / "b", b"2"))
    assert sorted(p.name for p in target.iterdir()) == ["b"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ckpt"]
    with files.writer_lock(target):
        assert (tmp_path / "ckpt.lock").exists()


@pytest.mark.parametrize("given, want", [("cpu", "cpu"), (" CUDA:1 ", "cuda:1"), ("mps", "mps"),
                                         ("cpu:0", "cpu")])
def test_one_device_parser(given, want):
    assert devices.parse_device(given) == want


@pytest.mark.parametrize("given, exc", [("gpu", ValueError), ("cuda:x", ValueError),
                                        ("", ValueError), (0, TypeError), (None, TypeError)])
def test_the_device_parser_refuses(given, exc):
    with pytest.raises(exc, match="device must be"):
        devices.parse_device(given)


def test_provenance():
    src = provenance.source_state()
    assert set(src) == {"commit", "dirty"}
    load = provenance.loadavg()
    assert load is None or (len(load) == 3 and all(x >= 0 for x in load))
    assert provenance.code_label("abc", True) == "abc (with uncommitted changes!)"
    assert provenance.code_label("abc", False) == "abc"
    assert provenance.code_label() == provenance.code_label(src["commit"], src["dirty"])
    assert isinstance(provenance.package_version(), str) and provenance.host()


def test_the_cache_names_and_reads_back_a_profiles_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNXAI_CACHE", str(tmp_path))
    monkeypatch.delenv("ATTNXAI_IMDB_ARCHIVE", raising=False)
    cfg = get_config("quick")
    folders = [f for f, _ in cache.candidates(cfg)]
    assert len(folders) == 2 and all(f.parent == tmp_path / "models" for f in folders)
    assert all(cache.profile_of(f) == "quick" for f in folders)
    assert folders[0].name == cache.folder_name(cfg, data.OFFICIAL_SHA256)
    assert cache.profile_of(tmp_path / "models" / "nope-0123456789abcdef") is None
    assert cache.profile_of(tmp_path / "elsewhere" / folders[0].name) is None
    hint = cache.rebuild_hint(folders[0])
    assert "python -m attnxai train --profile quick" in hint and "ATTNXAI_CACHE" not in hint
    monkeypatch.setenv("ATTNXAI_CACHE", os.fspath(tmp_path / "other"))
    assert f"ATTNXAI_CACHE={tmp_path} " in cache.rebuild_hint(folders[0])
    assert "Save the model into that folder again" in cache.rebuild_hint(tmp_path / "somewhere")
    assert "rm " not in cache.rebuild_hint(tmp_path / "somewhere")
