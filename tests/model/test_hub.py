"""The book's models, published and downloaded (issue 25): every test serves a tiny checkpoint
(saved with attnxai.model.store.checkpoint.save, published with the package's own command) from an HTTP
server on 127.0.0.1 and downloads it into a fresh cache. Nothing reaches the internet, and no
check depends on timing: the concurrent test is ordered by events (a request the server holds,
a line the waiting process prints)."""

from __future__ import annotations

import hashlib
import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from attnxai import cli, course
from attnxai.model import trained
from attnxai.model.store import hub
from attnxai.store import repository
from attnxai.model.store.checkpoint import FILES, ORIGIN, load, save
from attnxai.model.profiles import get_config
from attnxai.settings import Session
from hubserver import TINY, Server, _synthetic, publish_tiny
from checkpoints import (LABELLED_SHA, cached_folder, child_env, flip_byte, same_weights,
                         tiny_pretrained)

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def served(tmp_path, monkeypatch):
    """A tiny quick-profile model published on a local server; a fresh, empty cache to download
    into; downloading on, from that server only; no IMDb archive."""
    pre = tiny_pretrained(seed=3)
    published = publish_tiny(tmp_path, pre)
    server = Server(tmp_path / "www")
    cache = tmp_path / "cache"
    monkeypatch.setenv("ATTNXAI_CACHE", str(cache))
    monkeypatch.setenv("ATTNXAI_MODELS_URL", server.url)
    monkeypatch.setenv("ATTNXAI_OFFLINE", "0")
    monkeypatch.delenv("ATTNXAI_IMDB_ARCHIVE", raising=False)
    yield pre, published, server, cache
    server.close()


def left_in(cache: Path) -> list[str]:
    """What the cache holds besides lock files (a refused download must leave nothing)."""
    models = cache / "models"
    return sorted(p.name for p in models.iterdir() if not p.name.endswith(".lock")) \
        if models.is_dir() else []


def edit_index(published: Path, edit) -> None:
    index_path = published.parent / hub.INDEX
    index = json.loads(index_path.read_text())
    edit(index["models"][published.name])
    index_path.write_text(json.dumps(index))


def refused(match: str) -> str:
    """The message of the download refused for pretrained('quick') with train_if_missing=False."""
    with pytest.raises(FileNotFoundError, match=match) as info:
        trained.pretrained("quick", train_if_missing=False, progress=False)
    return str(info.value)


# ---------------------------------------------------------------- a download that works
def test_a_fresh_cache_downloads_the_published_model_bit_identical(served, capsys, monkeypatch):
    pre, published, server, cache = served
    got = trained.pretrained("quick", train_if_missing=False)
    assert got.path == cached_folder(cache) and same_weights(pre, got)
    for name in FILES:
        assert (got.path / name).read_bytes() == (published / name).read_bytes(), name
    err = capsys.readouterr().err
    assert f"downloading the book's 'quick' model {got.path.name}" in err
    assert "verified (every file against the published index and the checkpoint's manifest)" in err
    came = json.loads((got.path / ORIGIN).read_text())
    assert came["url"] == f"{server.url}{got.path.name}/" and came["index"] == server.url + "index.json"
    assert left_in(cache) == [got.path.name]
    # now it is cached: no second download, and the model loads offline
    n = server.files_requested()
    monkeypatch.setenv("ATTNXAI_OFFLINE", "1")
    assert same_weights(trained.pretrained("quick", train_if_missing=False), pre)
    assert server.files_requested() == n == len(FILES)


def test_info_shows_the_key_the_sha256_and_the_origin_and_compares_with_the_published(served,
                                                                                       capsys):
    _, published, server, cache = served
    trained.pretrained("quick", train_if_missing=False, progress=False)
    assert cli.main(["info", "--profile", "quick", "--published"]) == 0
    out = json.loads(capsys.readouterr().out)
    index = json.loads((published.parent / hub.INDEX).read_text())["models"][published.name]
    assert out["model"] == published.name and out["key"] == index["key"]
    assert out["sha256"] == {n: index["files"][n]["sha256"] for n in FILES if n != "manifest.json"}
    assert out["manifest_sha256"] == index["files"]["manifest.json"]["sha256"]
    assert out["origin"]["url"].startswith(server.url)
    assert out["published"].startswith(f"{published.name} is the model published at")
    # a checkpoint trained here (no origin.json) is reported as such, and one that differs from
    # the published model is told apart (exit status 1)
    other = tiny_pretrained(seed=4)
    save(other, cached_folder(cache))
    assert cli.main(["info", "--profile", "quick", "--published"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["origin"].startswith("trained on this machine")
    assert "differs from the model published" in out["published"] and "model.safetensors" in \
        out["published"]


# ---------------------------------------------------------------- downloads that are refused
def test_a_tampered_file_is_refused(served):
    _, published, _, cache = served
    flip_byte(published / "model.safetensors", -1)
    msg = refused("model.safetensors does not match the published index")
    assert "it is not the file that was published" in msg and "nothing was saved" in msg
    assert left_in(cache) == []


def test_a_file_and_index_changed_together_fail_the_checkpoints_own_manifest(served):
    _, published, _, cache = served
    weights = published / "model.safetensors"
    flip_byte(weights, -1)
    edit_index(published, lambda e: e["files"]["model.safetensors"].update(
        sha256=hashlib.sha256(weights.read_bytes()).hexdigest()))
    msg = refused("not consistent with its own manifest")
    assert "model.safetensors does not match its manifest" in msg and "Refused" in msg
    assert left_in(cache) == []


def test_a_truncated_file_and_a_download_broken_off_are_refused(served):
    _, published, server, cache = served
    vocab = published / "vocab.json"
    full = vocab.read_bytes()
    vocab.write_bytes(full[:len(full) // 3])                    # a short file, honestly served
    msg = refused(rf"vocab.json gave {len(full) // 3} bytes, the published index records "
                  rf"{len(full)} \(truncated\)")
    assert "nothing was saved" in msg and left_in(cache) == []
    vocab.write_bytes(full)
    server.break_off.add(f"/models/{published.name}/vocab.json")  # the connection drops
    msg = refused(rf"the download of {server.url}{published.name}/vocab.json failed")
    assert "nothing was saved" in msg and left_in(cache) == []


def test_a_wrong_size_in_the_index_is_refused(served):
    _, published, _, cache = served
    edit_index(published, lambda e: e["files"]["metrics.json"].update(
        bytes=e["files"]["metrics.json"]["bytes"] - 7))
    # the server says how long it is: refused before a byte is read (else: as it streams)
    refused(r"metrics.json is \d+ bytes, more than the \d+ expected: refused before downloading")
    assert left_in(cache) == []


def test_an_index_for_another_key_is_never_downloaded(served, tmp_path):
    pre, published, server, cache = served
    # 1. the index publishes only a model of another key (another recipe): nothing is asked for
    index_path = published.parent / hub.INDEX
    good = index_path.read_text()
    index = json.loads(good)
    other = published.name.replace("quick-", "quick-0")[:len(published.name)]
    index["models"] = {other: index["models"][published.name]}
    index_path.write_text(json.dumps(index))
    msg = refused(f"publishes {other}, not .*{published.name}")
    assert "other code, with another recipe or on other data" in msg
    assert server.files_requested() == 0 and left_in(cache) == []
    # 2. an entry under the right name that records another training configuration
    index_path.write_text(good)
    edit_index(published, lambda e: e["train"].update(lr=0.5, epochs=3))
    refused(r"records another model than this code asks for \(another training configuration "
            r"\(differs in epochs, lr\)\): refused, nothing downloaded")
    assert server.files_requested() == 0 and left_in(cache) == []
    # 3. the files of another model (a paper-profile checkpoint) under the right name, with an
    #    index that lists them faithfully but claims the quick recipe: its config.json tells
    paper = tiny_pretrained(seed=3, profile="paper")
    impostor = publish_tiny(tmp_path / "impostor", paper)
    for name in FILES:
        (published / name).write_bytes((impostor / name).read_bytes())
    index_path.write_text(good)
    theirs = json.loads((impostor.parent / hub.INDEX).read_text())["models"][impostor.name]
    edit_index(published, lambda e: e.update(files=theirs["files"]))
    refused(r"config.json describes another model than the index says \(another training "
            r"configuration \(differs in .*lr.*profile")
    assert left_in(cache) == []


# ---------------------------------------------------------------- no download: training, offline
def _dead_url() -> str:
    """The URL of a port nothing listens on (bound, then closed)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/models/"


def test_a_dead_server_falls_back_to_training_or_says_so(served, monkeypatch, capsys):
    *_, cache = served
    monkeypatch.setenv("ATTNXAI_MODELS_URL", _dead_url())
    msg = refused("could not read the published index http://127.0.0.1:")
    assert "none downloaded" in msg and "python -m attnxai train --profile quick" in msg
    monkeypatch.setattr(trained, "load_imdb", lambda archive=None: _synthetic())
    got = trained.pretrained(TINY)
    err = capsys.readouterr().err
    assert "the book's was not downloaded (could not read the published index" in err
    assert "training it first" in err
    assert got.path.is_dir() and not (got.path / ORIGIN).exists()
    assert got.metrics["n_train"] == 40


def test_offline_or_no_published_location_downloads_nothing_and_says_how(served, monkeypatch):
    *_, server, cache = served
    monkeypatch.setenv("ATTNXAI_OFFLINE", "1")
    refused(r"downloading is off: ATTNXAI_OFFLINE=1 is set \(unset it to download\)")
    monkeypatch.setenv("ATTNXAI_OFFLINE", "maybe")
    with pytest.raises(ValueError, match="ATTNXAI_OFFLINE must be 1 or 0"):
        trained.pretrained("quick", train_if_missing=False, progress=False)
    # the book's placeholder repository: off, and the message says how to turn it on
    monkeypatch.setenv("ATTNXAI_OFFLINE", "0")
    monkeypatch.delenv("ATTNXAI_MODELS_URL")
    monkeypatch.delenv("ATTNXAI_REPOSITORY", raising=False)
    (server.root / "_config.yml").write_text("repository:\n  url: https://github.com/OWNER/REPOSITORY\n")
    monkeypatch.setattr(hub, "source_checkout", lambda: server.root)
    msg = refused("downloading is off: this copy of the book names no repository")
    assert "set ATTNXAI_REPOSITORY=owner/name" in msg and "ATTNXAI_MODELS_URL=" in msg
    assert server.files_requested() == 0 and sum(server.counts.values()) == 0
    assert left_in(cache) == []
    # info never downloads
    monkeypatch.setenv("ATTNXAI_MODELS_URL", server.url)
    assert cli.main(["info", "--profile", "quick"]) == 2
    assert sum(server.counts.values()) == 0


def test_the_published_location_comes_from_the_repository_setting(tmp_path, monkeypatch):
    for var in ("ATTNXAI_OFFLINE", "ATTNXAI_MODELS_URL", "ATTNXAI_REPOSITORY"):
        monkeypatch.delenv(var, raising=False)
    book = tmp_path / "book"
    book.mkdir()
    monkeypatch.setattr(hub, "source_checkout", lambda: book)
    monkeypatch.setattr(repository, "installed_from", lambda: pytest.fail("read pip's record"))
    for url in ("", "https://github.com/OWNER/REPOSITORY"):
        (book / "_config.yml").write_text(f"repository:\n  url: {url!r}\n")
        assert hub.index_url()[0] is None
    (book / "_config.yml").write_text("repository:\n  url: https://github.com/Some-One/the-book/\n")
    assert hub.index_url() == ("https://some-one.github.io/the-book/models/index.json",
                               "the GitHub Pages site of https://github.com/Some-One/the-book "
                               "(from _config.yml's repository.url)")
    assert course.repository_url(book) == "https://github.com/Some-One/the-book"
    (book / "_config.yml").write_text("repository:\n  url: https://gitlab.com/a/b\n")
    assert hub.index_url()[0] is None and "not on GitHub" in hub.index_url()[1]
    monkeypatch.setenv("ATTNXAI_REPOSITORY", "me/me.github.io")
    assert hub.index_url()[0] == "https://me.github.io/models/index.json"
    monkeypatch.setenv("ATTNXAI_REPOSITORY", "not a repository")
    with pytest.raises(ValueError, match="ATTNXAI_REPOSITORY must be owner/name"):
        hub.index_url()
    monkeypatch.setenv("ATTNXAI_MODELS_URL", "https://example.org/m/index.json")
    assert hub.index_url()[0] == "https://example.org/m/index.json"
    monkeypatch.setenv("ATTNXAI_MODELS_URL", "ftp://example.org/m/")
    with pytest.raises(ValueError, match="must be an http"):
        hub.index_url()
    # an installed attnxai (no _config.yml): the git URL pip installed it from (Colab)
    monkeypatch.delenv("ATTNXAI_MODELS_URL")
    monkeypatch.delenv("ATTNXAI_REPOSITORY")
    monkeypatch.setattr(hub, "source_checkout", lambda: None)
    monkeypatch.setattr(repository, "installed_from", lambda: "https://github.com/o/n.git")
    assert hub.index_url()[0] == "https://o.github.io/n/models/index.json"
    monkeypatch.setattr(repository, "installed_from", lambda: None)
    assert hub.index_url()[0] is None and "not installed from a repository" in hub.index_url()[1]


def test_pip_records_the_git_url_it_installed_from(monkeypatch):
    class Dist:
        def __init__(self, text):
            self.text = text

        def read_text(self, name):
            assert name == "direct_url.json"
            return self.text

    import importlib.metadata as md

    for text, want in [(json.dumps({"url": "https://github.com/o/n", "vcs_info": {"vcs": "git"}}),
                        "https://github.com/o/n"),
                       (json.dumps({"url": "file:///home/me/book", "dir_info": {"editable": True}}),
                        None), (None, None), ("not json", None)]:
        monkeypatch.setattr(md, "distribution", lambda name, t=text: Dist(t))
        assert repository.installed_from() == want
    assert repository.github_name("git+https://github.com/o/n.git") == "o/n"
    assert repository.github_name("git@github.com:o/n.git") == "o/n"
    assert repository.github_name("https://gitlab.com/o/n") is None


# ---------------------------------------------------------------- two processes at once
DOWNLOADER = """
import attnxai
print("PATH", attnxai.pretrained("quick", train_if_missing=False).path, flush=True)
"""


def test_two_processes_that_download_at_once_download_once(served, tmp_path):
    pre, published, server, cache = served
    script = tmp_path / "download.py"
    script.write_text(DOWNLOADER)
    env = child_env(ATTNXAI_CACHE=str(cache), ATTNXAI_MODELS_URL=server.url, ATTNXAI_OFFLINE="0")
    server.gated = "/model.safetensors"
    server.gate.clear()                        # the first download stops at the weights
    run = lambda: subprocess.Popen([sys.executable, str(script)], env=env, text=True,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    first = run()
    try:
        assert server.arrived.wait(120), "the first process never asked for the weights"
        second = run()
        seen = []
        for line in second.stderr:             # it finds the first one holding the lock
            seen.append(line)
            if "another process is downloading or training" in line:
                break
        assert "waiting for it" in "".join(seen), "".join(seen)[-2000:]
    finally:
        server.gate.set()
    outs = [p.communicate(timeout=120) for p in (first, second)]
    assert [p.returncode for p in (first, second)] == [0, 0], [o[1][-2000:] for o in outs]
    assert server.counts[f"/models/{published.name}/model.safetensors"] == 1
    assert server.files_requested() == len(FILES)           # every file once, in all
    paths = {o[0].split("PATH", 1)[1].strip() for o in outs}
    assert paths == {str(cached_folder(cache))}
    assert "downloading the book's" in outs[0][1] and "downloading the book's" not in \
        "".join(seen) + outs[1][1]
    assert same_weights(load(cached_folder(cache)), pre) and left_in(cache) == [published.name]


# ---------------------------------------------------------------- publishing
def test_publish_models_writes_the_folder_and_index_from_the_cache(tmp_path, monkeypatch, capsys):
    cache = tmp_path / "cache"
    monkeypatch.setenv("ATTNXAI_CACHE", str(cache))
    monkeypatch.delenv("ATTNXAI_IMDB_ARCHIVE", raising=False)
    pre = tiny_pretrained(seed=5)
    folder = save(pre, cached_folder(cache))
    out = tmp_path / "site" / "models"
    assert cli.main(["publish-models", "--out", str(out), "--profiles", "quick,multilayer",
                     "--require", "quick"]) == 0
    cap = capsys.readouterr()
    assert "multilayer: not in the cache, skipped" in cap.err
    index = json.loads((out / hub.INDEX).read_text())
    assert index["index_version"] == hub.INDEX_VERSION and list(index["models"]) == [folder.name]
    entry = index["models"][folder.name]
    assert entry["key"] == folder.name.split("-", 1)[1] and entry["profile"] == "quick"
    assert entry["train"] == get_config("quick").to_dict() and entry["data_sha256"] == LABELLED_SHA
    for name in FILES:
        data = (folder / name).read_bytes()
        assert (out / folder.name / name).read_bytes() == data
        assert entry["files"][name] == {"bytes": len(data),
                                        "sha256": hashlib.sha256(data).hexdigest()}
    assert sorted(p.name for p in (out / folder.name).iterdir()) == sorted(FILES)
    # the paper model is required by default: missing, the command fails in one line
    assert cli.main(["publish-models", "--out", str(out)]) == 2
    assert "no cached 'paper' model to publish" in capsys.readouterr().err
    # a folder whose name is not the key of what it holds is not published
    wrong = save(tiny_pretrained(seed=5, profile="paper"), cache / "models" / folder.name.replace(
        folder.name.split("-", 1)[1], "0" * 16))
    with pytest.raises(hub.HubError, match="cannot be published under that name"):
        hub.publish([wrong], tmp_path / "other")


# ---------------------------------------------------------------- the launch cell
def test_course_start_uses_the_downloaded_paper_model_and_says_where_from(tmp_path, monkeypatch,
                                                                          capsys):
    pre = tiny_pretrained(seed=6, profile="paper")
    publish_tiny(tmp_path, pre)
    server = Server(tmp_path / "www")
    try:
        monkeypatch.setenv("ATTNXAI_CACHE", str(tmp_path / "cache"))
        monkeypatch.setenv("ATTNXAI_MODELS_URL", server.url)
        monkeypatch.setenv("ATTNXAI_OFFLINE", "1")
        monkeypatch.delenv("ATTNXAI_IMDB_ARCHIVE", raising=False)
        monkeypatch.delenv("ATTNXAI_PROFILE", raising=False)    # no profile chosen
        monkeypatch.delenv("ATTNXAI_SEED", raising=False)
        assert course.start() == Session("quick")
        out = capsys.readouterr().out
        assert "FALLS BACK TO THE QUICK MODEL" in out and "ATTNXAI_OFFLINE=1 is set" in out
        monkeypatch.setenv("ATTNXAI_OFFLINE", "0")
        assert course.start() == Session("paper")
        out = capsys.readouterr().out
        assert f"downloaded from {server.url}paper-" in out and "and verified" in out
        assert same_weights(trained.pretrained("paper", progress=False), pre)
    finally:
        server.close()


# ---------------------------------------------------------------- the times the docs state
def test_the_stated_times_are_the_committed_ones():
    """README.md and the launch page quote the download benchmark and the training times of
    book/data/: a rerun that changes them fails here until the text follows."""
    import re

    import pandas as pd

    data = ROOT / "book" / "data"
    bench = pd.read_csv(data / "download_benchmark.csv", comment="#")
    skip = pd.read_csv(data / "skip_ablation.csv", comment="#")
    plain = skip.loc[~skip["skip"], "train_seconds"]
    header = (data / "multilayer_training.csv").read_text()
    six = re.search(r"training (\d+) s \(.*all (\d+) s", header)
    stated = [f"{bench['bytes'].iloc[0] / 1e6:.1f} MB",
              f"{bench['download_verify_load_seconds'].median():.2f} s",
              f"{plain.min():.0f} to {plain.max():.0f} s", f"{six.group(1)} s", f"{six.group(2)} s"]
    readme, launch = ((ROOT / p).read_text() for p in ("README.md", "book/launch.md"))
    for text in stated:
        assert text in readme and text in launch, text
    assert f"{bench['cache_load_seconds'].median():.2f} s to load" in readme
    assert f"median of {len(bench)}" in readme


def test_the_readme_quotes_the_fresh_clone_timings():
    """README.md's times of its two commands on a fresh clone are book/data/fresh_clone_timings.csv's:
    a new measurement fails here until the text follows."""
    import pandas as pd

    rows = pd.read_csv(ROOT / "book" / "data" / "fresh_clone_timings.csv", comment="#")

    def clock(seconds: float) -> str:
        minutes, rest = divmod(int(round(seconds)), 60)
        return f"{minutes} min {rest:02d} s" if rest >= 10 else f"{minutes} min {rest} s"

    book = rows[rows.command == "make book"].iloc[-1]
    ci = rows[(rows.command == "CI=true bash .ci/run") & (rows.rc == 0)].iloc[-1]
    train = rows[rows.command.str.startswith("python -m attnxai train")].iloc[-1]
    readme = " ".join((ROOT / "README.md").read_text().split())
    for text in (f"took {clock(ci.wall_s)} (pytest {clock(ci.pytest_s)}",
                 f"took {clock(book.wall_s)} (the paper's model {book.paper_model_train_s:.0f} s",
                 f"trains in {train.paper_model_train_s:.0f} s ({clock(train.wall_s)} for the whole"):
        assert text in readme, text
