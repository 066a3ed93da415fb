"""Hostile input, round 4 (issue 34): the cases an outside probe found failing, one test each.
Nothing is written where it should not be (no device, FIFO or link target replaced), no path
spelling reaches a results folder twice, no settings are relabelled, no download runs past its
size or without end, nothing is allocated before it is verified.

Stand-ins only: a FIFO made here stands for a device (no real device is touched), network tests
talk to servers on 127.0.0.1 that the test starts, tiny models in temporary caches.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import make_tiny
from test_hostile import HOLDER, Squares, _env

from attnxai import cli, files, trained
from attnxai.errors import NotARegularFile
from attnxai.experiment import store
from attnxai.experiment.runner import run


def _one_line(capsys) -> str:
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if "error:" in line]
    assert "Traceback" not in err and len(lines) == 1, err
    return lines[0]


@pytest.fixture
def tiny_cli(monkeypatch):
    pre = make_tiny(seed=3)
    monkeypatch.setattr(trained, "pretrained", lambda profile="paper", progress=True: pre)
    return pre


# ====================================================================== 1. outputs
def test_an_output_never_replaces_a_fifo_a_device_or_a_link(tiny_cli, tmp_path, monkeypatch,
                                                             capsys):
    """Before (case 1): `explain --html /dev/null` as root replaced the device with a regular
    file (written beside it and renamed over it), as it did a FIFO or a symlink. Now what is not
    a regular file is refused before anything is computed, and a link stays a link: the file it
    names gets the page. (A FIFO stands in for a device: the same check refuses both.)"""
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    (tmp_path / "to-pipe").symlink_to(fifo)
    import attnxai.explanation

    real_explain = attnxai.explanation.explain
    monkeypatch.setattr(attnxai.explanation, "explain",
                        lambda *a, **k: pytest.fail("it computed"))
    for target in (fifo, tmp_path / "to-pipe"):
        assert cli.main(["explain", "a good film", "--methods", "alpha-avg",
                         "--html", str(target)]) == 2
        assert "is a FIFO (named pipe), not a regular file" in _one_line(capsys)
    assert fifo.is_fifo() and (tmp_path / "to-pipe").is_symlink()
    with pytest.raises(NotARegularFile, match="is a FIFO"):      # every writer, not only --html
        files.atomic_write(tmp_path / "to-pipe", "x")
    assert fifo.is_fifo() and sorted(p.name for p in tmp_path.iterdir()) == ["pipe", "to-pipe"]

    monkeypatch.setattr(attnxai.explanation, "explain", real_explain)
    page = tmp_path / "page.html"
    page.write_text("old")
    (tmp_path / "link.html").symlink_to(page)
    assert cli.main(["explain", "a good film", "--methods", "alpha-avg", "--html",
                     str(tmp_path / "link.html")]) == 0
    assert (tmp_path / "link.html").is_symlink() and "<html" in page.read_text().lower()


# ====================================================================== 2. one folder, one writer
@pytest.fixture
def holder():
    procs = []

    def start(out: Path, settings: dict):
        p = subprocess.Popen([sys.executable, "-c", HOLDER, str(out), json.dumps(settings)],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=_env())
        assert p.stdout.readline().strip() == "held"           # an event, not a sleep
        procs.append(p)
        return p

    yield start
    for p in procs:
        p.stdin.close()
        p.wait(timeout=60)


def test_a_second_writer_cannot_come_in_through_a_link(tmp_path, holder):
    """Before (case 2): `--out rs` and `--out rs_link` (a link to rs) ran at once, each with its
    own lock beside the path it was given; the folder mixed both runs' rows. Now the lock is
    named by the real path: the second spelling finds the folder held."""
    out = tmp_path / "rs"
    (tmp_path / "rs_link").symlink_to(out, target_is_directory=True)
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "parent_link").symlink_to(tmp_path, target_is_directory=True)
    holder(out, Squares(offset=3000).settings())
    for spelling in (tmp_path / "rs_link", tmp_path / "elsewhere" / "parent_link" / "rs_link"):
        with pytest.raises(store.ResultsBusy, match="being written by process"):
            run(Squares(offset=100), spelling, progress=False)
    assert not store.parts(out)
    assert files.writer_lock(tmp_path / "rs_link").lock_file == str(tmp_path / "rs.lock")


# ====================================================================== 3. settings per part
def test_an_edited_or_deleted_meta_cannot_relabel_the_rows(tmp_path):
    """Before (case 3): with `_meta.json` deleted or edited, a rerun with other settings said "0
    rows computed, 6 already there" (the checksums covered the rows, not the settings). Now each
    part records its settings under its checksum: the rerun is refused, and so is reading the
    folder while its `_meta.json` says otherwise."""
    out = tmp_path / "r"
    run(Squares(offset=1), out, progress=False)
    (out / "_meta.json").unlink()
    with pytest.raises(ValueError, match=r"other settings than this run's \(offset: 1 there, "
                                         r"2 now; recorded in each part\)"):
        run(Squares(offset=2), out, progress=False)
    assert run(Squares(offset=1), out, progress=False).computed == 0   # the same: resumes
    assert json.loads((out / "_meta.json").read_text())["offset"] == 1

    (out / "_meta.json").write_text(json.dumps({**Squares(offset=2).settings()}))
    with pytest.raises(ValueError, match="offset: 1 there, 2 now"):
        run(Squares(offset=2), out, progress=False)
    with pytest.raises(store.DamagedResults, match=r"_meta.json does not hold the settings its "
                                                   r"parts were computed with .*Restore it"):
        store.load_results(out, keys=("i",))


def test_a_part_copied_in_from_other_settings_is_named_and_refused(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    run(Squares(n=6, offset=1), a, progress=False)
    run(Squares(n=6, offset=2), b, progress=False)
    foreign = max(store.parts(b))                              # rows 4 and 5, made with offset 2
    (a / foreign.name).write_bytes(foreign.read_bytes())
    with pytest.raises(store.DamagedResults, match=rf"1 part\(s\) of {a} were computed with other "
                                                   rf"settings .*rm .*{foreign.name}"):
        run(Squares(n=6, offset=1), a, progress=False)
    with pytest.raises(store.DamagedResults, match=foreign.name):
        store.load_results(a, keys=("i",))


def test_parts_from_before_settings_were_recorded_are_refused_until_adopted(tmp_path, capsys):
    """Existing folders: a part with a valid checksum but no settings (written before this
    change) is refused with the command that migrates the folder; after `attnxai adopt` the
    parts record the folder's settings and the run resumes."""
    import pyarrow.parquet as pq

    out = tmp_path / "old"
    run(Squares(), out, progress=False)
    for part in store.parts(out):                             # as the previous version wrote it
        table = pq.read_table(part)
        meta = {k: v for k, v in table.schema.metadata.items() if k != store.SETTINGS_KEY}
        table = table.replace_schema_metadata(meta)
        meta[store.CHECKSUM_KEY] = store.rows_digest(table).encode()
        pq.write_table(table.replace_schema_metadata(meta), part)
    with pytest.raises(store.DamagedResults, match=r"records no settings .*python -m attnxai "
                                                   r"adopt"):
        run(Squares(), out, progress=False)
    with pytest.raises(store.DamagedResults, match="records no settings"):
        store.load_results(out, keys=("i",))
    assert cli.main(["adopt", str(out)]) == 0
    capsys.readouterr()
    assert run(Squares(), out, progress=False).computed == 0
    assert len(store.load_results(out, keys=("i",))) == 6
