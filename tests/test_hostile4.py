"""Hostile input, round 4 (issue 34): the cases an outside probe found failing, one test each.
Nothing is written where it should not be (no device, FIFO or link target replaced), no path
spelling reaches a results folder twice, no settings are relabelled, no download runs past its
size or without end, nothing is allocated before it is verified.

Stand-ins only: a FIFO made here stands for a device (no real device is touched), network tests
talk to servers on 127.0.0.1 that the test starts, tiny models in temporary caches.
"""

from __future__ import annotations

import http.server
import io
import json
import os
import socket
import sys
import threading
from pathlib import Path

import pytest
from checkpoints import LABELLED_SHA, cached_folder, tiny_pretrained
from hostile_kit import Squares, _one_line, holder, tiny_cli  # noqa: F401 - fixtures

from attnxai.model import trained
from attnxai.model.store import checkpoint
from attnxai import cli
from attnxai.store import files
from attnxai.store import download as dl
from attnxai.model.store.checkpoint import MANIFEST, CheckpointError
from attnxai.errors import NotARegularFile
from attnxai.store import results as store
from attnxai.experiment.runner import run


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


def test_a_character_device_in_place_of_an_output_is_refused(tmp_path, monkeypatch):
    """The same for a character device (`/dev/null`, `/dev/full`), made by mocking the file's
    kind: no real device is touched."""
    import stat

    target, real_stat = tmp_path / "null", os.stat
    target.write_text("")

    def as_device(path, *a, **k):
        st = real_stat(path, *a, **k)
        if os.fspath(path) == str(target):
            return os.stat_result((stat.S_IFCHR | 0o666, *tuple(st)[1:]))
        return st

    monkeypatch.setattr(os, "stat", as_device)
    for write in (lambda: files.atomic_write(target, "x"), lambda: files.probe_writable(target)):
        with pytest.raises(NotARegularFile, match="null is a character device, not a regular "
                                                  "file"):
            write()
    monkeypatch.undo()
    assert target.read_text() == "" and sorted(p.name for p in tmp_path.iterdir()) == ["null"]


# ====================================================================== 2. one folder, one writer
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


# ====================================================================== 4, 7. checkpoints
@pytest.fixture
def cached(tmp_path, monkeypatch):
    """A tiny quick-profile checkpoint where pretrained('quick') looks for it, in a fresh cache
    (no archive: it is found by the labelled archive's checksum)."""
    monkeypatch.setenv("ATTNXAI_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("ATTNXAI_IMDB_ARCHIVE", raising=False)
    return checkpoint.save(tiny_pretrained(), cached_folder(tmp_path / "cache"))


def test_a_budget_too_small_for_a_healthy_model_says_so(cached, monkeypatch, capsys):
    """Before (case 4): `ATTNXAI_MEMORY_BUDGET=8M attnxai info --profile quick` read the 11.6 MB
    weights only up to the budget, called the healthy checkpoint "damaged (truncated)" and
    advised `rm -rf` of it. Now the budget is named as what is too small."""
    size = (cached / "model.safetensors").stat().st_size
    monkeypatch.setenv("ATTNXAI_MEMORY_BUDGET", str(size // 2))
    assert cli.main(["info", "--profile", "quick"]) == 2
    line = _one_line(capsys)
    assert f"this checkpoint's weights (model.safetensors: {size} bytes" in line
    assert "more than the budget" in line and "raise the budget" in line
    assert "damaged" not in line.replace("nor called damaged", "") and "rm -rf" not in line
    monkeypatch.setenv("ATTNXAI_MEMORY_BUDGET", str(size * 4))
    assert checkpoint.load(cached).model.d_attn == 4                  # the same files load


def rewrite_config(folder: Path, **model) -> None:
    """Change the model section of a checkpoint's config.json and rewrite its manifest so that
    it agrees (what a careful tamperer, or a buggy writer, leaves)."""
    import hashlib

    conf = json.loads((folder / "config.json").read_text())
    conf["model"].update(model)
    blob = json.dumps(conf, indent=2, sort_keys=True).encode()
    (folder / "config.json").write_bytes(blob)
    manifest = json.loads((folder / MANIFEST).read_text())
    manifest["files"]["config.json"] = {"sha256": hashlib.sha256(blob).hexdigest(),
                                        "bytes": len(blob)}
    manifest["config_sha256"] = checkpoint.config_sha256(conf)
    (folder / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True))


def download_from(monkeypatch, cache: Path, url: str) -> None:
    """A fresh cache, models downloaded from ``url`` (a local server), no IMDb archive."""
    monkeypatch.setenv("ATTNXAI_CACHE", str(cache))
    monkeypatch.setenv("ATTNXAI_MODELS_URL", url)
    monkeypatch.setenv("ATTNXAI_OFFLINE", "0")
    monkeypatch.delenv("ATTNXAI_IMDB_ARCHIVE", raising=False)


@pytest.fixture
def no_allocation(monkeypatch):
    """Fail if a checkpoint's model is built anywhere but on torch's meta device (shapes, no
    memory) before its shapes are verified."""
    import torch

    real = checkpoint.MODEL_CLASSES["AttentionClassifier"]
    built = []

    def build(**kwargs):
        if torch.get_default_device().type != "meta":
            built.append(kwargs)
        return real(**kwargs)

    monkeypatch.setitem(checkpoint.MODEL_CLASSES, "AttentionClassifier", build)
    return built


@pytest.mark.parametrize("change, msg", [
    ({"d_attn": 300_000}, r"W_k: \(2, 300000, 8\) in config.json, \(2, 4, 8\) in model"),
    ({"d_attn": 10**12}, r"sizes no model has \(d_attn=1000000000000"),
    ({"n_heads": -1}, r"sizes no model has \(n_heads=-1"),
])
def test_a_config_is_checked_against_the_weights_before_anything_is_allocated(
        cached, no_allocation, capsys, change, msg):
    """Before (case 7): a config.json saying d_attn=300000 (manifest consistent) built the model
    (2.3 GB) before calling the checkpoint damaged; d_attn=10**12 or n_heads=-1 gave a
    RuntimeError traceback. Now the sizes are bounded and the shapes compared first."""
    rewrite_config(cached, **change)
    with pytest.raises(CheckpointError, match=msg):
        checkpoint.load(cached)
    assert no_allocation == []
    assert cli.main(["info", "--profile", "quick"]) == 2
    assert "is damaged" in _one_line(capsys)


def test_a_served_checkpoint_with_impossible_shapes_falls_back_to_training(
        tmp_path, monkeypatch, capsys, no_allocation):
    """Before (case 7): such a checkpoint served by the hub made `train` crash (RuntimeError)
    instead of refusing the download and training."""
    from hubserver import TINY, Server, _synthetic

    from attnxai import Pretrained
    from attnxai.model.store import hub
    from attnxai.model.store.cache import cache_key

    pre = tiny_pretrained()
    pre = Pretrained(pre.model, pre.vocab, {**pre.config, "train": TINY.to_dict()}, pre.metrics)
    src = checkpoint.save(pre, tmp_path / "src" / f"quick-{cache_key(TINY, LABELLED_SHA)}")
    rewrite_config(src, n_heads=-1)
    hub.publish([src], tmp_path / "www" / "models")
    server = Server(tmp_path / "www")
    try:
        download_from(monkeypatch, tmp_path / "cache", server.url)
        monkeypatch.setattr(trained, "load_imdb", lambda archive=None: _synthetic())
        got = trained.pretrained(TINY)
        assert server.files_requested() > 0                     # it was offered, and refused
    finally:
        server.close()
    err = capsys.readouterr().err
    assert "sizes no model has (n_heads=-1" in err and "training it first" in err
    assert got.model.n_heads == TINY.n_heads and got.metrics["n_train"] == 40


# ====================================================================== 8. no tracebacks
DEEP = b"[" * 100_000 + b"]" * 100_000


def test_deeply_nested_json_is_refused_wherever_it_is_read(tmp_path, cached, capsys):
    """Before (case 8): a deeply nested `_meta.json`, scheduler file, `config.json` or index
    gave a RecursionError traceback. Every stored JSON is now read through one reader bounded in
    size and depth."""
    import hashlib

    from attnxai.errors import ClusterError
    from attnxai.experiment.cluster import scheduler_address

    out = tmp_path / "r"
    run(Squares(), out, progress=False)
    (out / "_meta.json").write_bytes(DEEP)
    with pytest.raises(store.DamagedResults, match=r"_meta.json cannot be read .*nests 100000 "
                                                   r"levels deep"):
        run(Squares(), out, progress=False)
    (tmp_path / "scheduler.json").write_bytes(DEEP)
    with pytest.raises(ClusterError, match="is not a Dask scheduler file .*nests"):
        scheduler_address(str(tmp_path / "scheduler.json"))
    (cached / "config.json").write_bytes(DEEP)
    manifest = json.loads((cached / MANIFEST).read_text())
    manifest["files"]["config.json"] = {"sha256": hashlib.sha256(DEEP).hexdigest(),
                                        "bytes": len(DEEP)}
    (cached / MANIFEST).write_text(json.dumps(manifest))
    assert cli.main(["info", "--profile", "quick"]) == 2
    assert "config.json" in (line := _one_line(capsys)) and "nests 100000 levels deep" in line
    (cached / MANIFEST).write_bytes(DEEP)
    assert cli.main(["info", "--profile", "quick"]) == 2
    assert "manifest.json cannot be read" in _one_line(capsys)


def test_an_empty_scheduler_or_a_superscript_target_is_one_line(tiny_cli, monkeypatch, capsys):
    """Before (case 8): `--scheduler ""` raised a TypeError traceback; `--target ²` said "invalid
    literal for int()" (str.isdigit takes '²')."""
    with pytest.raises(ValueError, match="the scheduler's address is empty"):
        run(Squares(), Path("never"), scheduler="", progress=False)
    assert not Path("never").exists()
    for target in ("²", "١"):                                   # a superscript, an Arabic digit
        assert cli.main(["explain", "a good film", "--methods", "alpha-avg",
                         "--target", target]) == 2
        assert "target must be a class index or 'predicted'" in _one_line(capsys)


# ====================================================================== 5, 6. the network
class Hostile:
    """An HTTP server on 127.0.0.1 (a thread) serving the files under ``root``, except the paths
    of ``routes``, answered by ``routes[path](handler)`` (a hostile answer). ``stop`` ends the
    answers that would otherwise go on."""

    def __init__(self, root: Path | None = None):
        self.routes, self.stop, self.requests = {}, threading.Event(), []
        server = self

        class Handler(http.server.SimpleHTTPRequestHandler):
            def __init__(self, *a, **k):
                super().__init__(*a, directory=str(root or "/nonexistent"), **k)

            def log_message(self, *a):
                pass

            def do_GET(self):
                server.requests.append(self.path)
                route = server.routes.get(self.path)
                try:
                    route(self) if route else super().do_GET()
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.stop.set()
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def hostile(monkeypatch):
    monkeypatch.setenv("ATTNXAI_OFFLINE", "0")
    server = Hostile()
    yield server
    server.close()


def endless(handler, headers=()):
    """200, no Content-Length, bytes until the client hangs up (or the test ends)."""
    handler.send_response(200)
    for k, v in headers:
        handler.send_header(k, v)
    handler.end_headers()
    block = b"x" * (1 << 16)
    while not handler.server_stop.is_set():
        handler.wfile.write(block)


def test_a_download_stops_at_its_size_whatever_the_server_sends(hostile):
    """Before (case 6): a file with no Content-Length streaming 1.5 GB (the index said 11.6 MB)
    was written whole into the cache (1.8 GB RSS) before being refused; a gzip bomb likewise; a
    1 GB index.json took 2.3 GB. Now every download is capped at its size while it streams, and
    a compressed answer is expanded a bounded step at a time."""
    import gzip
    import tracemalloc

    from attnxai.model.store import hub

    def forever(h):
        h.server_stop = hostile.stop
        endless(h)

    bomb = gzip.compress(b"\0" * (64 << 20), 9)                # 64 MiB in about 64 KiB

    def gzipped(h):
        h.send_response(200)
        h.send_header("Content-Encoding", "gzip")
        h.send_header("Content-Length", str(len(bomb)))
        h.end_headers()
        h.wfile.write(bomb)

    hostile.routes.update({"/endless": forever, "/bomb": gzipped, "/models/index.json": forever})
    for path, msg in (("/endless", "gave more than the 1048576 bytes expected"),
                      ("/bomb", r"gave more than the 1048576 bytes expected \(decompressed\)")):
        sink = io.BytesIO()
        tracemalloc.start()
        with pytest.raises(dl.DownloadError, match=msg):
            dl.download(hostile.url + path, sink, max_bytes=1 << 20)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert len(sink.getvalue()) <= 1 << 20 and peak < 16 << 20, (path, peak)
    with pytest.raises(hub.HubError, match=rf"more than the {hub.INDEX_BYTES} bytes expected"):
        hub.read_index(hostile.url + "/models/index.json")


def test_every_network_wait_is_bounded(hostile, monkeypatch):
    """Before (case 5): a server sending one byte every 20 s kept a download (and the lock that
    others wait on for up to 12 h) alive past 75 s; a silent server was waited on by the read
    timeout alone. Now a download has a rate floor after a grace time and a total deadline
    (made small here: the drip is 200 times slower than the floor)."""
    import time

    monkeypatch.setattr(dl, "GRACE_SECONDS", 0.3)
    monkeypatch.setattr(dl, "READ_SECONDS", 0.5)
    monkeypatch.setattr(dl, "MIN_RATE", 4000)

    def drip(h):
        h.send_response(200)
        h.send_header("Content-Length", "1000")
        h.end_headers()
        for _ in range(1000):
            if hostile.stop.wait(0.05):
                return
            h.wfile.write(b"x")
            h.wfile.flush()

    def silent(h):
        hostile.stop.wait(30)

    hostile.routes.update({"/drip": drip, "/silent": silent})
    with pytest.raises(dl.DownloadError, match=r"too slow \(\d+ bytes in \d+ s; the floor is 3 "
                                               r"KiB/s after 0 s\)"):
        dl.download(hostile.url + "/drip", io.BytesIO(), max_bytes=1000)
    with pytest.raises(dl.DownloadError, match="ReadTimeout"):
        dl.download(hostile.url + "/silent", io.BytesIO(), max_bytes=1000)
    from attnxai.model.store import hub

    with pytest.raises(hub.HubError, match="could not read the published index .* too slow"):
        hub.read_index(hostile.url + "/drip")                  # the index and the files alike


@pytest.mark.timeout(60)
def test_a_scheduler_that_accepts_and_never_answers_is_refused_in_time():
    """Before (case 5): `--scheduler tcp://127.0.0.1:PORT` to a listener that accepts and never
    answers hung 541 s in distributed's Client.start. Now the scheduler is asked who it is, and
    the answer waited for `connect_seconds` at most."""
    pytest.importorskip("distributed")
    from attnxai.errors import ClusterError
    from attnxai.experiment.cluster import DaskWorkers

    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(4)
        port = listener.getsockname()[1]
        with pytest.raises(ClusterError, match=rf"cannot reach the Dask scheduler at "
                                               rf"tcp://127.0.0.1:{port} within 0.5 s \(no "
                                               r"answer\)"):
            DaskWorkers(f"tcp://127.0.0.1:{port}", connect_seconds=0.5)


# ====================================================================== 10, 11.
def test_offline_means_no_network_at_all(tmp_path, monkeypatch):
    """Before (case 10): ATTNXAI_OFFLINE=1 stopped model downloads only; a corpus command
    without ATTNXAI_IMDB_ARCHIVE still tried to download IMDb. Now nothing goes on the network,
    and the message names the archive variable."""
    from attnxai import data

    monkeypatch.setenv("ATTNXAI_OFFLINE", "1")
    monkeypatch.setenv("ATTNXAI_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("ATTNXAI_IMDB_ARCHIVE", raising=False)

    def no_network(*a, **k):
        raise AssertionError("a connection was attempted offline")

    monkeypatch.setattr(socket, "create_connection", no_network)
    monkeypatch.setattr(socket, "getaddrinfo", no_network)
    with pytest.raises(data.DataError, match=r"ATTNXAI_OFFLINE=1 is set, so the IMDb archive .* "
                                             r"is not downloaded .*ATTNXAI_IMDB_ARCHIVE="):
        data.load_imdb()
    with pytest.raises(dl.DownloadError, match="nothing goes on the network"):
        dl.download("http://127.0.0.1:9/x", io.BytesIO(), max_bytes=10)
    assert not (tmp_path / "cache" / "data").exists()


def test_credentials_in_the_models_url_are_never_shown_nor_stored(tmp_path, monkeypatch, capsys):
    """Before (case 11): the user and password of ATTNXAI_MODELS_URL were printed and stored in
    origin.json. Now they are used for the download and shown as ***."""
    from hubserver import publish_tiny

    from attnxai.model.store.checkpoint import ORIGIN

    publish_tiny(tmp_path, tiny_pretrained(seed=3))
    server = Hostile(tmp_path / "www")
    try:
        download_from(monkeypatch, tmp_path / "cache",
                      server.url.replace("http://", "http://reader:s3cr3t-token@") + "/models/")
        got = trained.pretrained("quick", train_if_missing=False)
    finally:
        server.close()
    err = capsys.readouterr().err
    stored = (got.path / ORIGIN).read_text()
    assert "s3cr3t" not in err + stored and "reader" not in err + stored
    assert "http://***@127.0.0.1:" in stored and "http://***@127.0.0.1:" in err
    assert dl.redact("https://u:p@[::1]:8443/m/?q=1") == "https://***@[::1]:8443/m/?q=1"


def test_stdin_past_its_limit_and_dropped_characters_are_said(tiny_cli, monkeypatch, capsys):
    """Before (case 11): input over 1 MB on stdin was cut silently; Hebrew and emoji were dropped
    without a note. Now the first is refused in one line, the second noted."""
    monkeypatch.setattr(sys, "stdin", io.StringIO("good film " * 120_000))
    assert cli.main(["explain", "-", "--methods", "alpha-avg"]) == 2
    assert "standard input holds more than 1048576 characters" in _one_line(capsys)
    monkeypatch.setattr(sys, "stdin", io.StringIO("a good film \u05e9\u05dc\u05d5\u05dd \U0001F600"))
    assert cli.main(["explain", "-", "--methods", "alpha-avg", "--json"]) == 0
    err = capsys.readouterr().err
    assert "note: the text holds 5 distinct character(s) outside A-Z and 0-9" in err
    assert "'\U0001F600'" in err and "no explanation scores them" in err


# ====================================================================== 9. publishing, saving
def test_publishing_never_replaces_what_attnxai_did_not_write(tmp_path):
    """Before (case 9): `publish-models --out` overwrote an existing index.json or
    `<profile>-<key>/` folder there (a user's thesis.tex inside was deleted), unlike `save`; and
    `save` replaced a folder whose own config.json merely had the keys `arch` and `model`."""
    from hubserver import publish_tiny

    from attnxai.model.store import hub

    published = publish_tiny(tmp_path, tiny_pretrained(seed=3))      # the package's own: fine
    source = tmp_path / "src-cache" / "models" / published.name
    out = tmp_path / "site"
    (out / published.name).mkdir(parents=True)
    (out / published.name / "thesis.tex").write_text("\\documentclass{article}")
    with pytest.raises(hub.HubError, match=r"cannot publish .* holds files that are not a "
                                           r"checkpoint's \(thesis.tex\)"):
        hub.publish([source], out)
    assert (out / published.name / "thesis.tex").is_file() and not (out / "index.json").exists()
    (out / published.name / "thesis.tex").unlink()
    (out / "index.json").write_text('{"my": "own index"}')
    with pytest.raises(hub.HubError, match="index.json exists and is not an index of published "
                                           "models that attnxai wrote"):
        hub.publish([source], out)
    assert (out / "index.json").read_text() == '{"my": "own index"}'
    (out / "index.json").unlink()
    hub.publish([source], out)
    hub.publish([source], out)                                 # its own output is replaced
    assert json.loads((out / "index.json").read_text())["models"].keys() == {published.name}

    own = tmp_path / "project"
    own.mkdir()
    (own / "config.json").write_text('{"arch": "transformer", "model": "bert-base"}')
    with pytest.raises(CheckpointError, match="is not recognised as an attnxai checkpoint"):
        checkpoint.save(tiny_pretrained(), own)
    assert json.loads((own / "config.json").read_text())["model"] == "bert-base"
