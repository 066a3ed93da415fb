"""Checkpoints verify themselves and survive concurrent use (issue 11, deliverables 2-4).

Every test here uses tiny hand-built models saved into a temporary cache: nothing is trained on
IMDb and nothing under the real cache is touched.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import textwrap
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

from attnxai.model import trained
from attnxai.model.store import checkpoint
from attnxai import cli, data
from attnxai.store import files
from attnxai.model.store.cache import FORMAT_VERSION, cache_key
from attnxai.model.store.checkpoint import MANIFEST, CheckpointError, load, save
from attnxai.data import CacheError
from attnxai.model.profiles import get_config
from checkpoints import (LABELLED_SHA, cached_folder, child_env, flip_byte, same_weights,
                         tiny_pretrained)

ROOT = Path(__file__).resolve().parents[2]



@pytest.fixture
def cache(tmp_path, monkeypatch):
    root = tmp_path / "cache"
    monkeypatch.setenv("ATTNXAI_CACHE", str(root))
    return root


@pytest.fixture
def saved(cache):
    """A tiny quick-profile checkpoint where pretrained('quick') looks for it."""
    pre = tiny_pretrained()
    path = save(pre, cached_folder(cache))
    return pre, path


def data_offset(path: Path) -> int:
    """The first byte of the tensor data of a safetensors file (after its 8 + n header bytes)."""
    return 8 + int.from_bytes(path.read_bytes()[:8], "little")


# ---------------------------------------------------------------- the manifest
def test_save_writes_a_manifest_that_load_checks(saved):
    pre, path = saved
    m = json.loads((path / MANIFEST).read_text())
    assert set(m["files"]) == set(checkpoint.CONTENT_FILES)
    for name, rec in m["files"].items():
        assert rec["bytes"] == (path / name).stat().st_size
        assert rec["sha256"] == data.file_sha256(path / name)
    assert m["vocab_size"] == len(pre.vocab) == pre.model.vocab_size
    assert m["config_sha256"] == checkpoint.config_sha256(pre.config)
    with warnings.catch_warnings():
        warnings.simplefilter("error")                 # a verified checkpoint loads silently
        back = load(path)
    assert same_weights(pre, back) and back.vocab.itos == pre.vocab.itos


def test_existing_cache_keys_are_unchanged(monkeypatch):
    """No FORMAT_VERSION bump: the checkpoints already cached (no manifest) keep their folders.
    The authors' recipe keeps the keys of the models trained before lazy AdamW; the profiles'
    keys (lazy AdamW) are these, whatever the environment says (get_config reads none)."""
    from attnxai.model.profiles import authors_recipe

    monkeypatch.setenv("ATTNXAI_SEED", "43")
    assert FORMAT_VERSION == 1
    assert cache_key(authors_recipe("quick"), LABELLED_SHA) == "6468f19043c3e6d1"
    assert cache_key(authors_recipe("paper"), LABELLED_SHA) == "b287d8a53a883860"
    assert cache_key(get_config("quick"), LABELLED_SHA) == "4e6b3081e1427e08"
    assert cache_key(get_config("paper"), LABELLED_SHA) == "18193740e80fd2ae"
    assert cache_key(get_config("paper-skip"), LABELLED_SHA) == "f2c3f7bca7c816cf"


def test_a_session_seed_gives_every_named_profile_another_seed_and_key(monkeypatch):
    """ATTNXAI_SEED (how the tests and a reader build the book on other weights), read at the
    entry point into the session (settings.from_environment), replaces the seed of a named profile
    when the session is passed on, so its model gets a key of its own; ``seed=None`` keeps the
    profile's own; an explicit seed wins; a value that is not a seed is refused, naming the
    variable. Nothing below the entry point reads the variable: setting it changes no
    get_config."""
    from attnxai import settings
    from attnxai.settings import Session

    monkeypatch.delenv("ATTNXAI_SEED", raising=False)
    base = cache_key(get_config("quick"), LABELLED_SHA)
    monkeypatch.setenv("ATTNXAI_SEED", "43")
    assert get_config("quick").seed == 42                  # the environment is not read here
    session = settings.from_environment()
    assert session == Session("paper", 43)
    assert get_config(session).seed == 43 and get_config(session).profile == "paper"
    assert get_config("multilayer-quick", seed=session.seed).seed == 43
    assert get_config("quick", seed=None).seed == 42       # no session seed: the profile's own
    assert get_config(Session("quick")).seed == 42
    assert cache_key(get_config(Session("quick", 43)), LABELLED_SHA) != base
    assert get_config(Session("quick", 43), seed=7).seed == 7
    assert cache_key(get_config(Session("quick", 42)), LABELLED_SHA) == base
    for bad in ("x", "-1", "4.2", " "):
        monkeypatch.setenv("ATTNXAI_SEED", bad)
        if bad.strip():
            with pytest.raises(ValueError, match="ATTNXAI_SEED"):
                settings.from_environment()
        else:
            assert settings.from_environment().seed is None
    for bad in (-1, 2**63, 4.2, True):
        with pytest.raises(ValueError, match="ATTNXAI_SEED"):
            Session("quick", bad)
    with pytest.raises(ValueError, match="ATTNXAI_PROFILE"):
        Session("multilayer")                               # a session runs on a book profile


def test_flipped_byte_in_the_weights_is_refused(saved):
    _, path = saved
    flip_byte(path / "model.safetensors", data_offset(path / "model.safetensors") + 100)
    with pytest.raises(CheckpointError) as err:
        load(path)
    msg = str(err.value)
    assert "model.safetensors does not match its manifest" in msg
    assert f"rm -rf {shlex.quote(str(path))})" in msg
    assert "python -m attnxai train --profile quick" in msg


def test_vocab_short_by_1000_words_is_refused(saved):
    _, path = saved
    words = json.loads((path / "vocab.json").read_text())
    (path / "vocab.json").write_text(json.dumps(words[:-1000]))
    with pytest.raises(CheckpointError, match=r"vocab.json has \d+ bytes, the manifest recorded "
                                              r"\d+ \(truncated\)"):
        load(path)


@pytest.mark.parametrize("damage", ["edit", "truncate"])
def test_edited_or_truncated_header_is_refused_without_a_raw_traceback(saved, damage):
    _, path = saved
    f = path / "model.safetensors"
    raw = f.read_bytes()
    if damage == "edit":
        f.write_bytes(raw.replace(b'"F32"', b'"F16"', 1))      # same length, other dtype
    else:
        f.write_bytes(raw[: data_offset(f) - 10])             # cut inside the header
    with pytest.raises(CheckpointError, match="model.safetensors") as err:
        load(path)
    e = err.value
    assert type(e) is CheckpointError and e.__cause__ is None
    assert e.__context__ is None or e.__suppress_context__        # no SafetensorError traceback


def test_edited_config_and_manifest_are_refused(saved):
    _, path = saved
    conf = json.loads((path / "config.json").read_text())
    conf["model"]["n_heads"] = 3
    (path / "config.json").write_text(json.dumps(conf, indent=2, sort_keys=True))
    with pytest.raises(CheckpointError, match="config.json"):
        load(path)
    (path / MANIFEST).write_text("{not json")
    with pytest.raises(CheckpointError, match=f"{MANIFEST} cannot be read"):
        load(path)


def test_cli_says_which_file_is_damaged_in_one_line(saved, capsys):
    _, path = saved
    flip_byte(path / "model.safetensors", data_offset(path / "model.safetensors") + 7)
    assert cli.main(["info", "--path", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "Traceback" not in err
    assert "model.safetensors does not match its manifest" in err and "--profile quick" in err


def test_pretrained_refuses_a_folder_holding_another_config(cache):
    path = save(tiny_pretrained(profile="paper"), cached_folder(cache, "quick"))
    with pytest.raises(CheckpointError, match="another configuration than profile 'quick'"):
        trained.pretrained("quick", progress=False)
    assert path.is_dir()                                      # refused, never deleted


# ---------------------------------------------------------------- legacy checkpoints
def make_legacy(path: Path) -> None:
    """What attnxai wrote before manifests: the same four files, no manifest.json."""
    (path / MANIFEST).unlink()


def test_a_checkpoint_without_manifest_is_refused_until_adopted(saved, capsys):
    """Before (issue 22, item 2): with manifest.json deleted, a checkpoint whose weights had been
    edited loaded as a "legacy checkpoint", a new manifest recorded the damage as good and `info`
    then said the files matched. Now it is refused; only `attnxai adopt` trusts it, saying so."""
    pre, path = saved
    make_legacy(path)
    with pytest.raises(CheckpointError, match=r"has no manifest.json, so its files cannot be "
                                              r"verified.*python -m attnxai adopt"):
        load(path)
    assert not (path / MANIFEST).exists()                     # nothing written by a load
    with pytest.raises(CheckpointError, match="has no manifest.json"):
        checkpoint.checkpoint_files(path)                     # nor shipped to a cluster
    assert cli.main(["info", "--path", str(path)]) == 2
    assert "attnxai adopt" in capsys.readouterr().err
    assert cli.main(["adopt", str(path)]) == 0
    out = capsys.readouterr().out
    assert "Checked first" in out and "Trusted: that the files are as they were saved" in out
    m = json.loads((path / MANIFEST).read_text())
    assert "adopted" in m and m["files"]["model.safetensors"]["sha256"] == \
        data.file_sha256(path / "model.safetensors")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert same_weights(pre, load(path))                  # verified now, silently
    assert cli.main(["info", "--path", str(path)]) == 0
    assert "written by `attnxai adopt`" in capsys.readouterr().out
    with pytest.raises(ValueError, match="already has a manifest.json"):
        checkpoint.adopt(path)
    flip_byte(path / "model.safetensors", data_offset(path / "model.safetensors") + 3)
    with pytest.raises(CheckpointError, match="does not match its manifest"):
        load(path)                                            # and protected from then on


def test_adoption_makes_every_check_that_needs_no_manifest(saved):
    """Without a manifest, what can be checked is: a vocab.json short by 1,000 words (against the
    embedding and config.json), a damaged header, NaN weights: adopt refuses each."""
    _, path = saved
    make_legacy(path)
    words = json.loads((path / "vocab.json").read_text())
    (path / "vocab.json").write_text(json.dumps(words[:-1000]))
    with pytest.raises(CheckpointError, match=r"vocab.json has 203 words .* 1203 rows.*\("
                                              r"vocab.json is the odd one out\)"):
        checkpoint.adopt(path)
    assert not (path / MANIFEST).exists()                     # nothing adopted when refused
    (path / "vocab.json").write_text('{"w0": 3}')
    with pytest.raises(CheckpointError, match=r"vocab.json cannot be read \(TypeError: vocab.json "
                                              r"must hold a JSON list"):
        checkpoint.adopt(path)
    (path / "vocab.json").write_text(json.dumps(words))
    f = path / "model.safetensors"
    raw = f.read_bytes()
    f.write_bytes(raw[:-100])
    with pytest.raises(CheckpointError, match=r"model.safetensors cannot be read \(Safetensor"):
        checkpoint.adopt(path)
    state = checkpoint.load_safetensors(raw)
    state["W_q"][0, 0, 0] = float("nan")
    f.write_bytes(checkpoint.save_safetensors(state))
    with pytest.raises(CheckpointError, match=r"NaN or infinite weights in \['W_q'\]"):
        checkpoint.adopt(path)
    assert not (path / MANIFEST).exists()


# ---------------------------------------------------------------- atomic saves, locks
WRITER = textwrap.dedent("""
    import sys
    import torch
    torch.set_num_threads(1)
    from attnxai.model.store.checkpoint import load, save
    a, b, target, n = load(sys.argv[1]), load(sys.argv[2]), sys.argv[3], int(sys.argv[4])
    for i in range(n):
        save(a if i % 2 else b, target)
    print("done")
""")


def test_two_writers_and_a_reader_never_collide(tmp_path):
    """Before: the reader failed 60 of 60 loads and writers got 'Directory not empty'."""
    a, b = tiny_pretrained(seed=1), tiny_pretrained(seed=2)
    pa, pb, target = save(a, tmp_path / "a"), save(b, tmp_path / "b"), tmp_path / "ckpt"
    save(a, target)
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    procs = [subprocess.Popen([sys.executable, str(script), str(pa), str(pb), str(target), "10"],
                              env=child_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for _ in range(2)]
    loads, seen = 0, set()
    while any(p.poll() is None for p in procs) or loads == 0:
        back = load(target)                       # must never fail, never mix two versions
        assert same_weights(back, a) or same_weights(back, b)
        seen.add("a" if same_weights(back, a) else "b")
        loads += 1
    outs = [p.communicate() for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [o[1][-2000:] for o in outs]
    assert loads > 5, loads
    assert not list(tmp_path.glob(".tmp-*"))


KILLED_WRITER = textwrap.dedent("""
    import sys, time
    from attnxai.model.store import checkpoint
    from attnxai.store import files
    real = files.write_durably
    def slow(path, data):
        real(path, data)
        print("writing", flush=True)
        time.sleep(60)
    files.write_durably = slow
    checkpoint.save(checkpoint.load(sys.argv[1]), sys.argv[2])
""")


def test_a_save_killed_midway_leaves_the_old_folder_and_its_tmp_is_cleaned(tmp_path):
    a, b = tiny_pretrained(seed=1), tiny_pretrained(seed=2)
    pb, target = save(b, tmp_path / "b"), tmp_path / "ckpt"
    save(a, target)
    script = tmp_path / "killed.py"
    script.write_text(KILLED_WRITER)
    p = subprocess.Popen([sys.executable, str(script), str(pb), str(target)], env=child_env(),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "writing", p.stderr.read()[-2000:]
        os.kill(p.pid, signal.SIGKILL)
        p.wait(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
    assert len(list(tmp_path.glob(".tmp-ckpt-*"))) == 1       # what a kill leaves behind
    assert same_weights(load(target), a)                      # readers still get the old folder
    save(b, target)                                           # the lock died with the writer
    assert same_weights(load(target), b)
    assert not list(tmp_path.glob(".tmp-*"))


def test_stale_tmp_folders_are_cleaned(tmp_path):
    target = tmp_path / "ckpt"
    ours = tmp_path / ".tmp-ckpt-x1y2z3"                       # a killed writer of this folder
    old_style = tmp_path / ".tmp-ab12cd34"                    # the naming before issue 11
    fresh = tmp_path / ".tmp-ef56gh78"                        # maybe somebody's live save
    other = tmp_path / ".tmp-other-abc"                       # another folder's writer
    for p in (ours, old_style, fresh, other):
        p.mkdir()
        (p / "model.safetensors").write_bytes(b"x" * 1000)
    hours_ago = time.time() - 2 * 3600
    os.utime(old_style, (hours_ago, hours_ago))
    save(tiny_pretrained(), target)
    assert not ours.exists() and not old_style.exists()
    assert fresh.exists() and other.exists()


def test_saving_through_a_symlink_replaces_the_folder_it_points_to(tmp_path):
    a, b = tiny_pretrained(seed=1), tiny_pretrained(seed=2)
    real = save(a, tmp_path / "real")
    link = tmp_path / "link"
    link.symlink_to(real.name)
    save(b, link)
    assert link.is_symlink() and same_weights(load(link), b) and same_weights(load(real), b)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link", "real", "real.lock"]


TRAINER = textwrap.dedent("""
    import os, sys, time
    from pathlib import Path
    import attnxai.model.trained as ck
    from attnxai.data import IMDb, Review
    from attnxai.model.profiles import get_config
    log, go = Path(sys.argv[1]), Path(sys.argv[2])
    words = "good bad film movie plot acting great awful boring moving story".split()
    reviews = [Review(" ".join(words[(i * 7 + j) % len(words)] for j in range(6)), i % 2, 1, i,
                      "train") for i in range(60)]
    data = IMDb(reviews[:40], reviews[40:50], reviews[50:], checksum="synthetic")
    ck.load_imdb = lambda archive=None: data
    real_train = ck.train
    def counting_train(config, data, progress=True, **kw):
        with open(log, "a") as fh:
            fh.write(f"{os.getpid()}\\n")
        while not go.exists():
            time.sleep(0.05)
        return real_train(config, data, progress=False)
    ck.train = counting_train
    cfg = get_config("quick", n_train=40, n_valid=10, n_test=10, epochs=1, batch_size=8, min_freq=1,
                     d_embed=8, d_attn=4, d_value=4, n_heads=2, max_len=16)
    print("PATH", ck.pretrained(cfg, progress=True).path, flush=True)
""")


def test_two_trainings_at_once_train_once(tmp_path):
    cache, log, go = tmp_path / "cache", tmp_path / "trained.log", tmp_path / "go"
    script = tmp_path / "trainer.py"
    script.write_text(TRAINER)
    env = child_env(ATTNXAI_CACHE=str(cache))
    run = lambda: subprocess.Popen([sys.executable, str(script), str(log), str(go)], env=env,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    first = run()
    deadline = time.time() + 120
    while not log.exists() and first.poll() is None and time.time() < deadline:
        time.sleep(0.05)
    assert log.exists(), first.communicate()[1][-2000:]        # the first one is training
    second = run()
    seen = []
    while True:                                               # it waits for the first one
        line = second.stderr.readline()
        seen.append(line)
        if not line or "another process is training" in line:
            break
    assert "waiting for it" in line, "".join(seen)[-2000:]
    go.touch()
    outs = [p.communicate(timeout=120) for p in (first, second)]
    assert [p.returncode for p in (first, second)] == [0, 0], [o[1][-2000:] for o in outs]
    assert len(log.read_text().split()) == 1                  # trained once
    paths = {o[0].split("PATH", 1)[1].strip() for o in outs}
    assert len(paths) == 1 and (Path(paths.pop()) / MANIFEST).is_file()
    assert not list((cache / "models").glob(".tmp-*"))


def test_unwritable_cache_is_found_before_training(tmp_path, monkeypatch):
    def never(*a, **k):
        raise AssertionError("must not load data or train with an unwritable cache")

    monkeypatch.setattr(trained, "train", never)
    monkeypatch.setattr(trained, "load_imdb", never)
    monkeypatch.delenv("ATTNXAI_IMDB_ARCHIVE", raising=False)
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("ATTNXAI_CACHE", str(blocker / "cache"))   # cannot be created
    with pytest.raises(CacheError, match=rf"{blocker / 'cache'}.* not writable.*ATTNXAI_CACHE"):
        trained.pretrained("quick", progress=False)
    monkeypatch.setenv("ATTNXAI_CACHE", str(tmp_path / "ro"))       # exists, refuses files

    def refuse(*a, **k):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(data.tempfile, "mkstemp", refuse)
    with pytest.raises(CacheError, match=r"ro/models is not writable \(Permission denied\).*"
                                         r"ATTNXAI_CACHE"):
        trained.pretrained("quick", progress=False)
    assert cli.main(["train", "--profile", "quick"]) == 2


# ---------------------------------------------------------------- offline first
@pytest.fixture
def offline(monkeypatch):
    """Any attempt to download the archive fails the test."""
    def no_network(*a, **k):
        raise AssertionError("tried to download the IMDb archive")

    monkeypatch.setattr(data, "download_imdb", no_network)
    monkeypatch.delenv("ATTNXAI_IMDB_ARCHIVE", raising=False)


@pytest.mark.parametrize("sha", [LABELLED_SHA, data.OFFICIAL_SHA256])
def test_cached_model_is_found_without_the_archive(cache, offline, monkeypatch, sha):
    pre = tiny_pretrained()
    save(pre, cached_folder(cache, sha=sha))
    monkeypatch.setattr(trained, "load_imdb", lambda *a, **k: pytest.fail("read the data"))
    back = trained.pretrained("quick", progress=False)
    assert same_weights(pre, back) and back.path == cached_folder(cache, sha=sha)


def test_cli_info_works_offline(saved, offline, capsys):
    _, path = saved
    assert cli.main(["info", "--profile", "quick"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["path"] == str(path) and out["verified"].startswith("files match")
    assert cli.main(["info", "--profile", "paper"]) == 2       # not cached: says so, offline
    err = capsys.readouterr().err
    assert "no cached model for profile 'paper'" in err and "quick-" in err


def test_cached_model_with_an_archive_reads_no_review(saved, monkeypatch, archive):
    """With the archive given, its checksum finds the model; its 50,000 reviews are not parsed."""
    pre, path = saved
    monkeypatch.setattr(trained, "load_imdb", lambda *a, **k: pytest.fail("parsed the data"))
    monkeypatch.setenv("ATTNXAI_IMDB_ARCHIVE", archive)
    if data.file_sha256(archive) != LABELLED_SHA:
        pytest.skip("the test archive is not the labelled copy")
    assert trained.pretrained("quick", progress=False).path == path


# ---------------------------------------------------------------- one cache for every start
def test_default_cache_is_the_repository_cache_from_a_checkout(monkeypatch):
    monkeypatch.delenv("ATTNXAI_CACHE", raising=False)
    import attnxai

    root = Path(attnxai.__file__).resolve().parents[2]
    assert data.source_checkout() == root
    assert data.cache_dir(create=False) == root / ".cache"
    monkeypatch.setenv("ATTNXAI_CACHE", "/somewhere/else")
    assert data.cache_dir(create=False) == Path("/somewhere/else")
    # `make book` and the tests name the same folder explicitly
    assert "export ATTNXAI_CACHE ?= $(CURDIR)/.cache" in (ROOT / "Makefile").read_text()


def test_installed_wheel_uses_the_user_cache_folder(tmp_path):
    """The package copied into a site-packages-like folder (no pyproject.toml above it)."""
    import shutil

    site = tmp_path / "site"
    shutil.copytree(ROOT / "src" / "attnxai", site / "attnxai",
                    ignore=shutil.ignore_patterns("__pycache__"))
    env = child_env(XDG_CACHE_HOME=str(tmp_path / "xdg"), HOME=str(tmp_path / "home"))
    env.pop("ATTNXAI_CACHE", None)
    env["PYTHONPATH"] = str(site)
    code = ("from attnxai import data; print(data.source_checkout()); "
            "print(data.cache_dir(create=False))")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["None", str(tmp_path / "xdg" / "attnxai")]
