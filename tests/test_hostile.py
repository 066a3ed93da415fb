"""Hostile input (issue 22): what a new user and an adversarial one try, each case failing loudly
and early with a message that says what to do, or answered correctly. Nothing a user owns is
deleted, two runs never mix in one results folder, every stored file is verified when read,
memory is bounded, nothing waits forever, and the command line shows no traceback for a user's
mistake.

Tiny hand-built models and temporary folders only (no IMDb, nothing trained, nothing under the
real cache touched), except where a case needs the command line's own model loading (then the
tiny model stands in for the cached one). No test depends on timing: a second process signals
with a line on its stdout (an event), and where a timeout is the behaviour under test it is a
parameter set small.
"""

from __future__ import annotations

import json
import math
import os
import re
import shlex
import subprocess
import sys
import textwrap
import tracemalloc
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import make_tiny, tiny_text
from hypo import examples
from hypothesis import given
from hypothesis import strategies as st

import attnxai
from attnxai.model import trained
from attnxai.model.store import checkpoint
from attnxai import cli, fastlime, perturbation, theory
from attnxai.budget import ENV as BUDGET_ENV
from attnxai.model.store.cache import FORMAT_VERSION, cache_key
from attnxai.model.store.checkpoint import MANIFEST, CheckpointError
from attnxai.errors import ClusterError, NotARegularFile, OverBudget, UserError
from attnxai.store import results as store
from attnxai.experiment.runner import open_workers, run
from attnxai.model.profiles import get_config
from attnxai.theory import deletion_routes as dr
from hostile_kit import ROOT, Squares, _env, _one_line, _squares, holder, tiny_cli  # noqa: F401 - fixtures

LABELLED_SHA = "7662598ed0b34375977d4bdc14cdd7fb158dd2be7b43b99dd1f985a23f868066"
UNWRITABLE = Path("/sys/kernel")           # refuses new files even for root (sysfs)


def _unwritable() -> Path:
    import tempfile

    try:
        fd, probe = tempfile.mkstemp(dir=UNWRITABLE)
    except OSError:
        return UNWRITABLE
    os.close(fd)
    os.unlink(probe)
    pytest.skip(f"{UNWRITABLE} is writable here: no folder refuses root")


# ====================================================================== results folders
class MetaSpy(Squares):
    """Checks, in its first chunk, that the folder already records the settings."""

    def task(self):
        return _meta_spy(self.out, self.settings())


class _meta_spy:
    def __init__(self, out, settings):
        self.out, self.settings = out, settings

    def __call__(self, items):
        assert json.loads((Path(self.out) / "_meta.json").read_text()) == self.settings
        return _squares(items)


def test_a_second_writer_is_refused_whatever_its_settings(tmp_path, holder):
    """Before (item 1): two `lime-experiment --out D` with 300 and 400 samples both exited 0, D
    held rows of both and `_meta.json` said 300. Now the folder has a writer's lock: a second run
    is refused at once, saying who holds it and why (other settings: they would mix; the same
    settings: both would compute the same rows, so wait and rerun to resume)."""
    out = tmp_path / "D"
    p = holder(out, Squares(offset=300).settings())
    with pytest.raises(store.ResultsBusy, match=r"being written by process \d+ on .*attnxai "
                                                r"holder.*with other settings.*another --out"):
        run(Squares(offset=400), out, progress=False)
    with pytest.raises(store.ResultsBusy, match="with the same settings: both would compute the "
                                                "same rows; wait until it has finished"):
        run(Squares(offset=300), out, progress=False)
    assert not store.parts(out)                               # the refused runs wrote nothing
    assert json.loads((out / "_meta.json").read_text())["offset"] == 300
    p.stdin.close()
    assert p.wait(timeout=60) == 0                            # the holder let go: runs resume
    report = run(Squares(offset=300), out, progress=False)
    assert report.computed == 6 and len(store.load_results(out, keys=("i",), sort=("i",))) == 6
    with pytest.raises(ValueError, match="other settings .*offset: 300 there, 400 now"):
        run(Squares(offset=400), out, progress=False)


def test_settings_are_recorded_before_the_first_row_and_killed_writers_leave_nothing(tmp_path):
    out = tmp_path / "r"
    out.mkdir()
    stale = out / ".tmp-part-00000-1234abcd.parquet-xyz"      # a writer killed mid-part
    stale.write_bytes(b"PAR1 half a part")
    study = MetaSpy()
    study.out = out
    run(study, out, progress=False)
    assert not stale.exists()
    assert not list(out.glob(".tmp-*")) and not (out / "_writer.json").exists()
    assert sorted(p.name for p in out.iterdir() if not p.name.startswith("part-")) == \
        ["_meta.json", "_runs.jsonl"]


def test_a_run_refused_before_its_first_row_leaves_no_folder(tmp_path):
    class Broken(Squares):
        def model(self):
            raise ValueError("no model for this study")

    out = tmp_path / "never"
    with pytest.raises(ValueError, match="no model"):
        run(Broken(), out, progress=False)
    assert not out.exists()
    run(Squares(), out, progress=False)                       # and the lock is free again


def test_a_folder_with_settings_but_no_rows_takes_new_settings(tmp_path):
    out = tmp_path / "r"
    out.mkdir()
    (out / "_meta.json").write_text(json.dumps({"n": 6, "offset": 1}))   # a run that failed early
    run(Squares(offset=2), out, progress=False)
    assert json.loads((out / "_meta.json").read_text())["offset"] == 2


def test_an_unwritable_results_folder_is_refused_before_computing(tmp_path, capsys):
    bad = _unwritable() / "attnxai-results"
    with pytest.raises(UserError, match="cannot be written .*choose another --out"):
        run(Squares(), bad, progress=False)
    (tmp_path / "f").write_text("x")
    with pytest.raises(UserError, match="f is a file, not a folder"):
        run(Squares(), tmp_path / "f" / "sub", progress=False)
    assert (tmp_path / "f").read_text() == "x"


# ---------------------------------------------------------------------- checksums of the parts
@pytest.fixture(scope="module")
def results(tmp_path_factory):
    """A finished results folder (3 parts) and its pristine bytes."""
    out = tmp_path_factory.mktemp("results") / "run"
    run(Squares(), out, progress=False, command=["attnxai", "squares", "--out", str(out)])
    return out, {p: p.read_bytes() for p in store.parts(out)}


def _restore(results):
    out, pristine = results
    for p, data in pristine.items():
        p.write_bytes(data)
    return out


@examples(40)
@given(st.data())
def test_a_flipped_bit_in_a_part_is_refused_or_changes_nothing(results, data):
    """Before (item 5): of 40 single-bit flips in a part, 25 changed the results silently. Now a
    part carries the sha256 of its rows: a flip is refused, naming the part, or (in bytes the rows
    do not depend on: statistics, padding) leaves every row as it was."""
    out = _restore(results)
    digest = store.content_digest(out, keys=("i",))
    part = data.draw(st.sampled_from(sorted(results[1])))
    raw = bytearray(results[1][part])
    at = data.draw(st.integers(0, len(raw) - 1))
    raw[at] ^= 1 << data.draw(st.integers(0, 7))
    part.write_bytes(bytes(raw))
    try:
        assert store.content_digest(out, keys=("i",)) == digest
    except store.DamagedResults as exc:
        assert part.name in str(exc) and "rm " in str(exc)
    finally:
        _restore(results)


def test_a_damaged_part_is_named_with_the_command_that_redoes_it(results, capsys):
    out = _restore(results)
    part = sorted(results[1])[1]
    part.write_bytes(results[1][part][:-40])                  # truncated
    try:
        with pytest.raises(store.DamagedResults) as err:
            store.load_results(out, keys=("i",))
        msg = str(err.value)
        assert f"rm {shlex.quote(str(part))}" in msg
        assert f"rerun `attnxai squares --out {shlex.quote(str(out))}`" in msg
        with pytest.raises(store.DamagedResults):             # a resume refuses it too
            run(Squares(), out, progress=False)
    finally:
        _restore(results)


def test_a_part_without_checksum_is_refused_until_the_folder_is_adopted(tmp_path, capsys):
    import pyarrow.parquet as pq

    out = tmp_path / "old"
    run(Squares(), out, progress=False)
    for part in store.parts(out):                             # as an older attnxai wrote them
        t = pq.read_table(part)
        pq.write_table(t.replace_schema_metadata(
            {k: v for k, v in t.schema.metadata.items() if k != store.CHECKSUM_KEY}), part)
    with pytest.raises(store.DamagedResults, match="carries no checksum .*python -m attnxai "
                                                   "adopt"):
        store.load_results(out, keys=("i",))
    assert cli.main(["adopt", str(out)]) == 0
    assert "3 part(s) given the checksum of their rows" in capsys.readouterr().out
    assert len(store.load_results(out, keys=("i",))) == 6


@pytest.mark.timeout(120)
def test_a_fifo_or_a_folder_in_place_of_a_part_or_the_settings_is_refused(tmp_path):
    out = tmp_path / "r"
    run(Squares(), out, progress=False)
    part = store.parts(out)[0]
    part.unlink()
    os.mkfifo(part)                                           # would block a reader forever
    with pytest.raises(store.DamagedResults, match=r"FIFO .*rm "):
        store.load_results(out, keys=("i",))
    part.unlink()
    (out / "_meta.json").unlink()
    os.mkfifo(out / "_meta.json")
    with pytest.raises(UserError, match=r"_meta.json.* is a FIFO"):   # before computing
        run(Squares(), out, progress=False)


@pytest.mark.timeout(120)
def test_a_fifo_in_place_of_the_run_log_is_refused_before_computing(tmp_path):
    """Before: a FIFO in place of `_runs.jsonl` let the run compute every row, then blocked it
    forever when it logged itself."""
    out = tmp_path / "r"
    run(Squares(), out, progress=False)
    (out / "_runs.jsonl").unlink()
    os.mkfifo(out / "_runs.jsonl")
    store.parts(out)[0].unlink()                              # rows left to compute
    computed = []

    class Spy(Squares):
        def task(self):
            return lambda items: computed.append(items) or _squares(items)

    with pytest.raises(store.DamagedResults, match=r"_runs.jsonl \(the folder's run log\) is a "
                                                   r"FIFO .*rm .*the rows are kept"):
        run(Spy(), out, progress=False)
    assert not computed


def test_a_moved_folder_s_damaged_part_names_the_command_for_where_it_is(results, tmp_path):
    """Before: the command that redoes a damaged part was the logged one, whose --out named the
    folder where it ran, not the copy (or moved folder) being read: rerunning it wrote there."""
    import shutil

    out = _restore(results)
    moved = tmp_path / "moved"
    shutil.copytree(out, moved)
    part = store.parts(moved)[0]
    part.write_bytes(part.read_bytes()[:-40])
    with pytest.raises(store.DamagedResults) as err:
        store.load_results(moved, keys=("i",))
    assert f"rerun `attnxai squares --out {shlex.quote(str(moved))}`" in str(err.value)


# ====================================================================== checkpoints
def tiny_pretrained(seed: int = 0) -> attnxai.Pretrained:
    from attnxai import AttentionClassifier, Vocab

    vocab = Vocab([f"w{i}" for i in range(40)])
    torch.manual_seed(seed)
    m = AttentionClassifier(len(vocab), d_embed=8, d_attn=4, d_value=5, n_heads=2, max_len=16)
    m.eval()
    conf = {"arch": "AttentionClassifier", "train": get_config("quick").to_dict(),
            "model": m.config, "data_sha256": LABELLED_SHA, "format": FORMAT_VERSION}
    return attnxai.Pretrained(m, vocab, conf, {"test_accuracy": 0.5})


@pytest.fixture
def cached(tmp_path, monkeypatch):
    """A tiny model saved where the quick profile's cached model lives, in a fresh cache."""
    monkeypatch.setenv("ATTNXAI_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("ATTNXAI_IMDB_ARCHIVE", raising=False)   # found offline, by checksum
    folder = tmp_path / "cache" / "models" / f"quick-{cache_key(get_config('quick'), LABELLED_SHA)}"
    folder.parent.mkdir(parents=True)
    checkpoint.save(tiny_pretrained(), folder)
    return folder


def test_a_deleted_manifest_no_longer_turns_verification_off(cached, capsys):
    """Before (item 2): with manifest.json removed, a checkpoint whose weights were edited loaded
    as a legacy checkpoint, a new manifest recorded the damage as good and `info` reported "files
    match their sha256 manifest". Now it is refused, and only `attnxai adopt` trusts it."""
    from safetensors.torch import load as load_st
    from safetensors.torch import save as save_st

    state = load_st((cached / "model.safetensors").read_bytes())
    state["W_e"][5, 0] = -5.91                                 # an edited word vector
    (cached / "model.safetensors").write_bytes(save_st(state))
    (cached / MANIFEST).unlink()
    with pytest.raises(CheckpointError, match="has no manifest.json, so its files cannot be "
                                              "verified"):
        checkpoint.load(cached)
    assert cli.main(["info", "--profile", "quick"]) == 2
    err = capsys.readouterr().err
    assert "attnxai adopt" in err and "Traceback" not in err and len(err.splitlines()) == 1
    assert "Otherwise, rebuild it: delete the cached model (rm -rf " in err
    assert not (cached / MANIFEST).exists()


def test_save_never_deletes_a_folder_it_does_not_recognise(tmp_path):
    """Before (item 3): checkpoint.save(pre, folder) deleted whatever the folder held (a user's
    thesis.tex and sub/)."""
    folder = tmp_path / "work"
    (folder / "sub").mkdir(parents=True)
    (folder / "thesis.tex").write_text("\\documentclass{article}")
    (folder / "sub" / "notes.md").write_text("notes")
    with pytest.raises(CheckpointError, match=r"holds files that are not a checkpoint's \(sub/, "
                                              r"thesis.tex\).*nothing was changed"):
        checkpoint.save(tiny_pretrained(), folder)
    assert (folder / "thesis.tex").read_text() == "\\documentclass{article}"
    assert (folder / "sub" / "notes.md").read_text() == "notes"
    own = tmp_path / "project"                                # a checkpoint's names, not one
    own.mkdir()
    (own / "config.json").write_text('{"my": "project settings"}')
    with pytest.raises(CheckpointError, match="is not recognised as an attnxai checkpoint"):
        checkpoint.save(tiny_pretrained(), own)
    assert (own / "config.json").read_text() == '{"my": "project settings"}'
    named = tmp_path / "named"                                # a folder called config.json
    (named / "config.json").mkdir(parents=True)
    (named / "config.json" / "data.txt").write_text("precious")
    with pytest.raises(CheckpointError, match=r"not a checkpoint's \(config.json/\)"):
        checkpoint.save(tiny_pretrained(), named)
    assert (named / "config.json" / "data.txt").read_text() == "precious"
    empty = tmp_path / "empty"
    empty.mkdir()
    checkpoint.save(tiny_pretrained(), empty)                 # an empty folder is filled
    checkpoint.save(tiny_pretrained(seed=1), empty)           # a checkpoint is replaced
    assert checkpoint.load(empty).metrics == {"test_accuracy": 0.5}


@pytest.mark.timeout(120)
@pytest.mark.parametrize("name, put, kind", [
    ("metrics.json", "fifo", "FIFO"),
    ("model.safetensors", "/dev/zero", "character device"),
    ("vocab.json", "folder", "folder"),
    (MANIFEST, "fifo", "FIFO"),
])
def test_a_checkpoint_file_that_is_not_a_file_is_refused_at_once(cached, capsys, name, put, kind):
    """Before (item 9, 10): a FIFO in place of metrics.json blocked forever, /dev/zero behind a
    checkpoint file read until MemoryError, vocab.json replaced by a folder gave
    `IsADirectoryError: Is a directory: 4`."""
    target = cached / name
    target.unlink()
    if put == "fifo":
        os.mkfifo(target)
    elif put == "folder":
        target.mkdir()
    else:
        target.symlink_to(put)
    with pytest.raises(CheckpointError, match=rf"{re.escape(name)} is (a|an) {kind}"):
        checkpoint.load(cached)
    assert cli.main(["info", "--path", str(cached)]) == 2
    err = capsys.readouterr().err
    assert name in err and "Traceback" not in err and len(err.splitlines()) == 1


def test_no_file_is_read_beyond_the_size_its_manifest_records(cached):
    big = cached / "metrics.json"
    recorded = json.loads((cached / MANIFEST).read_text())["files"]["metrics.json"]["bytes"]
    big.write_bytes(b" " * (50 << 20))
    with pytest.raises(CheckpointError, match=f"metrics.json has more than the {recorded} bytes"):
        checkpoint.load(cached)


@examples(30)
@given(st.data())
def test_any_flipped_bit_of_a_checkpoint_is_refused(tmp_path_factory, data):
    folder = tmp_path_factory.mktemp("flip") / "ckpt"
    checkpoint.save(tiny_pretrained(), folder)
    name = data.draw(st.sampled_from(["model.safetensors", "config.json", "vocab.json",
                                      "metrics.json"]))
    raw = bytearray((folder / name).read_bytes())
    raw[data.draw(st.integers(0, len(raw) - 1))] ^= 1 << data.draw(st.integers(0, 7))
    (folder / name).write_bytes(bytes(raw))
    with pytest.raises(CheckpointError, match=re.escape(name)):
        checkpoint.load(folder)


def test_info_path_never_advises_removing_a_folder_it_does_not_own(tmp_path, capsys):
    """Before (item 8): `info --path /` advised `rm -rf '/'`, and a path holding `'` broke the
    quoting of the suggested command."""
    assert cli.main(["info", "--path", "/"]) == 2
    err = capsys.readouterr().err
    assert "is not an attnxai checkpoint folder" in err and "rm " not in err
    half = tmp_path / "mine"
    half.mkdir()
    (half / "config.json").write_text("{}")
    (half / "notes.txt").write_text("mine")
    assert cli.main(["info", "--path", str(half)]) == 2
    err = capsys.readouterr().err
    assert "not a complete attnxai checkpoint" in err and "rm " not in err


def test_the_rebuild_command_quotes_any_path(tmp_path, monkeypatch):
    cache = tmp_path / "it's a cache; rm -rf ~"
    monkeypatch.setenv("ATTNXAI_CACHE", str(cache))
    folder = cache / "models" / f"quick-{cache_key(get_config('quick'), LABELLED_SHA)}"
    folder.parent.mkdir(parents=True)
    checkpoint.save(tiny_pretrained(), folder)
    (folder / "vocab.json").write_text("[]")
    with pytest.raises(CheckpointError) as err:
        checkpoint.load(folder)
    command = re.search(r"\(rm -rf (.+)\) and run", str(err.value)).group(1)
    assert shlex.split(command) == [str(folder)]              # one argument, the folder itself


def test_a_file_in_place_of_the_cached_model_is_refused_before_training(cached, monkeypatch):
    """Before (item 11): a checkpoint path that is a file was refused only after a full
    training."""
    import shutil

    shutil.rmtree(cached)
    cached.write_text("not a folder")
    monkeypatch.setattr(trained, "train", lambda *a, **k: pytest.fail("it trained"))
    monkeypatch.setattr(trained, "load_imdb", lambda *a, **k: pytest.fail("it read the data"))
    with pytest.raises(CheckpointError, match="is not a folder: move it away"):
        trained.pretrained("quick", progress=False)


LOCKER = textwrap.dedent("""
    import sys
    from attnxai.store.files import writer_lock
    with writer_lock(sys.argv[1]):
        print("locked", flush=True)
        sys.stdin.read()
""")


def test_waiting_for_another_training_has_a_timeout(tmp_path, monkeypatch, imdb):
    """A training another process holds is waited for at most `wait_seconds` (set small here:
    the timeout is what is tested), then named."""
    monkeypatch.setenv("ATTNXAI_CACHE", str(tmp_path / "cache"))
    folder = tmp_path / "cache" / "models" / f"quick-{cache_key(get_config('quick'), imdb.checksum)}"
    folder.parent.mkdir(parents=True)
    p = subprocess.Popen([sys.executable, "-c", LOCKER, str(folder)], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True, env=_env())
    try:
        assert p.stdout.readline().strip() == "locked"
        monkeypatch.setattr(trained, "train", lambda *a, **k: pytest.fail("it trained"))
        with pytest.raises(CheckpointError, match=r"another process has been training quick-.* "
                                                  r"for more than 0 s"):
            trained.pretrained("quick", progress=False, wait_seconds=0.2)
    finally:
        p.stdin.close()
        p.wait(timeout=60)


# ====================================================================== memory
def test_a_huge_num_samples_is_refused_before_allocating(monkeypatch):
    """Before (item 4): `attnxai explain "a great film" --num-samples 2000000000` grew to 24 GB
    until the kernel killed it. Now the request is estimated and refused first."""
    pre = make_tiny()
    tracemalloc.start()
    try:
        with pytest.raises(OverBudget, match=r"num_samples=2000000000 on 3 features .* would "
                                             r"need about .* GiB of memory, more than the "
                                             r"budget .*lower num_samples"):
            fastlime.explain_instance(pre, "good bad film", num_samples=2_000_000_000)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 20 << 20                                    # nothing of the sort allocated
    with pytest.raises(OverBudget):
        fastlime.sample_masks(3, 2_000_000_000, 0)


@pytest.mark.parametrize("setting, ok", [("1M", False), ("64M", True), ("0.000001", False),
                                         ("8G", True)])
def test_the_memory_budget_is_a_setting(monkeypatch, setting, ok):
    monkeypatch.setenv(BUDGET_ENV, setting)
    pre = make_tiny()
    if ok:
        assert fastlime.explain_instance(pre, "good bad film", num_samples=50_000,
                                         random_state=0).coef.shape == (3,)
    else:
        with pytest.raises(OverBudget, match=re.escape(f"${BUDGET_ENV}={setting}")):
            fastlime.explain_instance(pre, "good bad film", num_samples=50_000)


def test_too_many_local_workers_are_refused_before_any_starts(tmp_path, monkeypatch, capsys):
    """Before: `--jobs 1000` was taken as given: a spawned process per waiting chunk (about 0.5
    GB each: its own torch and model), up to 1000 of them on a machine of 2 cores."""
    monkeypatch.setenv(BUDGET_ENV, "2G")
    with pytest.raises(OverBudget, match=r"5 local worker processes .* more than the budget "
                                         r".*use fewer --jobs"):
        open_workers(jobs=5)
    assert open_workers(jobs=3).n == 3                        # 1.5 GiB: within it, not started
    out = tmp_path / "r"
    with pytest.raises(OverBudget):
        run(Squares(), out, jobs=100, progress=False)
    assert not out.exists()


def test_the_machine_s_memory_is_read_again_after_a_second(monkeypatch):
    """machine_memory reuses a reading for MEMORY_READ_TTL seconds (a fast LIME explanation
    checks the budget each time) and reads the limits again after it, or when they move."""
    from attnxai import budget

    reads = []
    monkeypatch.setattr(budget, "_read_machine_memory", lambda: reads.append(1) or 10 * len(reads))
    monkeypatch.setattr(budget, "_last_read", None)
    clock = [100.0]
    monkeypatch.setattr(budget.time, "monotonic", lambda: clock[0])
    assert budget.machine_memory() == 10 and budget.machine_memory() == 10
    clock[0] += budget.MEMORY_READ_TTL / 2
    assert budget.machine_memory() == 10 and len(reads) == 1
    clock[0] += budget.MEMORY_READ_TTL
    assert budget.machine_memory() == 20
    monkeypatch.setattr(budget, "_CGROUP_LIMITS", ("/nonexistent",))
    assert budget.machine_memory() == 30


def test_a_budget_that_is_no_size_is_refused(monkeypatch):
    monkeypatch.setenv(BUDGET_ENV, "lots")
    with pytest.raises(ValueError, match="is not a memory size"):
        fastlime.explain_instance(make_tiny(), "good bad film", num_samples=100)


# ====================================================================== kernel widths
@examples(40)
@given(width=st.floats(min_value=5e-324, max_value=1.7976931348623157e308, allow_nan=False,
                       allow_infinity=False), bow=st.booleans())
def test_lime_takes_any_positive_kernel_width(width, bow):
    """Before (item 10): `--kernel-width 1e300` raised OverflowError (lime does too: its
    `kernel_width ** 2`). Now every finite width is answered: widths whose square overflows give
    the wide-kernel weights (all 1), and a kernel too narrow for any perturbed sample to weigh
    says so (item 11: lime's all-zero coefficients, which lime gives without a word)."""
    pre = make_tiny()
    text = tiny_text(6, seed=2, unknown=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = fastlime.explain_instance(pre, text, num_samples=200, kernel_width=width, bow=bow,
                                        random_state=0, keep_data=True)
    assert np.all(np.isfinite(res.coef)) and np.all(np.isfinite(res.weights))
    narrow = [w for w in caught if issubclass(w.category, fastlime.NarrowKernelWarning)]
    if np.all(res.weights[1:] == 0):
        assert narrow and np.all(res.coef == 0)
        assert "every coefficient is 0" in str(narrow[0].message)
    else:
        assert not narrow
    if width >= 1e11:                                          # D <= 100: every weight is 1.0
        assert np.all(res.weights == 1.0)


def test_huge_kernel_widths_on_the_command_line(monkeypatch, capsys):
    pre = make_tiny(seed=3)
    monkeypatch.setattr(trained, "pretrained", lambda profile="paper", **kw: pre)
    assert cli.main(["explain", "a good film", "--methods", "LIME,LIME limit",
                     "--kernel-width", "1e300", "--num-samples", "100", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    wide = theory.lime_limit(pre, "a good film", kernel_width=math.inf)
    np.testing.assert_allclose(doc["word_scores"]["LIME limit"], wide, rtol=0, atol=1e-12)


# ====================================================================== no hangs
@pytest.mark.parametrize("address, msg", [
    ("/nonexistent/scheduler.json", "no scheduler file at /nonexistent/scheduler.json: start "
                                    "the scheduler with `dask scheduler --scheduler-file"),
    ("http://evil.example", "not a Dask scheduler address: its scheme must be one of tcp"),
    ("tcp://host name:8786", "is not a Dask scheduler address"),
])
def test_a_wrong_scheduler_is_refused_without_waiting(address, msg):
    """Before (item 9): `--scheduler /nonexistent.json` gave no output for 400 s; `http://evil`
    printed an error at 5 s and exited at 65 s with a `Client.__del__` traceback."""
    pytest.importorskip("distributed")
    with pytest.raises(ClusterError, match=re.escape(msg)):
        open_workers(scheduler=address)


@pytest.mark.timeout(120)
def test_a_scheduler_file_that_is_a_fifo_or_a_folder_is_refused(tmp_path):
    pytest.importorskip("distributed")
    fifo = tmp_path / "scheduler.json"
    os.mkfifo(fifo)
    with pytest.raises(ClusterError, match="FIFO"):
        open_workers(scheduler=str(fifo))
    with pytest.raises(ClusterError, match="is a folder"):
        open_workers(scheduler=str(tmp_path))


UNREACHABLE = textwrap.dedent("""
    import socket, sys
    from attnxai.errors import ClusterError
    from attnxai.experiment.cluster import DaskWorkers
    s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close()
    try:
        DaskWorkers(f"tcp://127.0.0.1:{port}", connect_seconds=1)
    except ClusterError as exc:
        print("refused:", exc)
""")


@pytest.mark.timeout(120)
def test_an_unreachable_scheduler_fails_after_its_timeout_and_exits_cleanly():
    """The connect timeout is a parameter (1 s here); the half-made client is closed at once, so
    the process ends without Dask's `Client.__del__` traceback."""
    pytest.importorskip("distributed")
    out = subprocess.run([sys.executable, "-c", UNREACHABLE], capture_output=True, text=True,
                         env=_env(), timeout=110)
    assert "refused: cannot reach the Dask scheduler at tcp://127.0.0.1:" in out.stdout
    assert "within 1 s" in out.stdout
    assert "Traceback" not in out.stderr and "Exception ignored" not in out.stderr


# ====================================================================== the command line
def test_html_into_a_folder_or_an_unwritable_place_is_refused_before_computing(tiny_cli, tmp_path,
                                                                               monkeypatch, capsys):
    """Before (item 10): `explain ... --html` into a folder, a read-only or a no-permission
    folder raised after computing."""
    monkeypatch.setattr(attnxai.explanation, "explain",
                        lambda *a, **k: pytest.fail("it computed"))
    assert cli.main(["explain", "a good film", "--html", str(tmp_path)]) == 2
    assert "is a folder: give a file name" in _one_line(capsys)
    assert cli.main(["explain", "a good film", "--html",
                     str(_unwritable() / "fig.html")]) == 2
    assert "cannot be written" in _one_line(capsys)
    assert cli.main(["explain", "a good film", "--html", str(tmp_path / "no" / "f.html")]) == 2
    assert f"the folder {tmp_path / 'no'} does not exist" in _one_line(capsys)


def test_results_into_an_unwritable_folder_are_refused_in_one_line(capsys):
    assert cli.main(["skip-ablation", "--seeds", "42", "--out",
                     str(_unwritable() / "skip")]) == 2
    assert "cannot be written" in _one_line(capsys)


def test_a_negative_or_malformed_seed_is_refused_before_any_training(tmp_path, monkeypatch,
                                                                     capsys):
    """Before (item 11): `skip-ablation --seeds -5` started a paper training."""
    monkeypatch.setattr(trained, "train", lambda *a, **k: pytest.fail("it trained"))
    for seeds, msg in (("-5", "a training seed must be an int in [0, 2**32), got -5"),
                       ("42,4x", "--seeds takes comma-separated integers, got '4x'")):
        assert cli.main(["skip-ablation", "--seeds", seeds, "--out", str(tmp_path / "s")]) == 2
        assert msg in _one_line(capsys)
    assert not (tmp_path / "s").exists()


def test_a_path_given_as_text_is_said_to_be_text_and_at_file_reads_it(tiny_cli, tmp_path,
                                                                      capsys):
    """Before (item 11): `explain /nonexistent/review.txt` explained the words of the path,
    silently."""
    assert cli.main(["explain", "/good/film.txt", "--methods", "GxI", "--json"]) == 0
    cap = capsys.readouterr()
    assert "is explained as text (its words); to explain a file's content, pass " \
           "@/good/film.txt" in cap.err
    review = tmp_path / "review.txt"
    review.write_text("A good film, with a boring plot.")
    assert cli.main(["explain", f"@{review}", "--methods", "GxI", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["tokens"] == \
        "a good film with a boring plot".split()
    assert cli.main(["explain", "@/nonexistent/review.txt", "--methods", "GxI"]) == 2
    assert "no file /nonexistent/review.txt" in _one_line(capsys)
    os.mkfifo(tmp_path / "fifo")
    assert cli.main(["explain", f"@{tmp_path / 'fifo'}", "--methods", "GxI"]) == 2
    assert "FIFO" in _one_line(capsys)


def test_any_os_error_is_one_line_and_debug_keeps_the_traceback(tiny_cli, monkeypatch, capsys):
    """Before (item 10): the command line caught only some exception types, so other OSErrors
    leaked as tracebacks."""
    def full(*a, **k):
        raise OSError(28, "No space left on device", "/tmp/x")

    monkeypatch.setattr(attnxai.explanation, "explain", full)
    assert cli.main(["explain", "a good film"]) == 2
    line = _one_line(capsys)
    assert "No space left on device: /tmp/x (the system refused this file or folder: check" in line
    assert cli.main(["notebooks", "--out", str(_unwritable() / "nb")]) == 2
    assert f"{_unwritable() / 'nb'} (the system refused" in _one_line(capsys)
    with pytest.raises(OSError):
        cli.main(["--debug", "explain", "a good film"])


@pytest.mark.timeout(120)
def test_an_archive_that_is_no_file_is_called_so(tmp_path):
    """Before: `--archive /dev/zero` (or a folder) was "IMDb archive not found", though it is
    there."""
    from attnxai.data import DataError, archive_path

    for where in ("/dev/zero", str(tmp_path)):
        with pytest.raises(DataError, match=f"IMDb archive not a regular file: {where} "):
            archive_path(where)
    with pytest.raises(DataError, match="IMDb archive not found"):
        archive_path(str(tmp_path / "none.tar.gz"))


# ====================================================================== the API
def test_one_target_for_every_method():
    """Item 7, fixed by the reshape: a LIME column for class 0 beside six for class 1 was
    possible (`explain_text(pre, text, target=1, lime_kwargs={"target": 0})`); a target in a
    method's settings is refused now."""
    pre = make_tiny()
    with pytest.raises(ValueError, match="sets a target: the explained class is one for every "
                                         "method; pass target= to explain"):
        attnxai.explain(pre, "good bad film", settings={"LIME": {"target": 0}})
    ex = attnxai.explain(pre, "good bad film", ["LIME", "GxI"], target=0,
                         settings={"LIME": {"num_samples": 200}})
    assert ex.target == 0 and ex.results["LIME"].target == 0


def test_what_to_pass_when_the_model_is_the_wrong_kind():
    """Before (item 10): `theory.gradient` on the multi-layer model and `explain_text(pre.model,
    ...)` raised AttributeError instead of a TypeError that says what to pass."""
    from attnxai.model.multilayer import MultiLayerClassifier

    pre = make_tiny()
    ids = pre.encode("good bad film")
    with pytest.raises(TypeError, match="got a Pretrained: pass pre.model"):
        theory.gradient_closed_form(pre, ids)
    ml = MultiLayerClassifier(30, d_embed=8, d_attn=4, d_value=4, n_heads=2, max_len=12,
                              n_layers=2)
    for fn in (theory.gradient_closed_form, theory.gradient_terms, theory.gradient_x_input):
        with pytest.raises(TypeError, match="derived for the single-layer AttentionClassifier, "
                                            "got MultiLayerClassifier.*explainers.gradient"):
            fn(ml, ids)
    with pytest.raises(TypeError, match="must be an attnxai Pretrained"):
        attnxai.explain(pre.model, "good bad film")


def test_complex_scores_are_refused():
    """Before (item 11): complex scores were accepted by perturbation.evaluate with only a NumPy
    warning (their imaginary part dropped)."""
    pre = make_tiny()
    ids = pre.encode("good bad film")[0]
    with pytest.raises(TypeError, match="must be real numbers, got complex"):
        perturbation.evaluate(pre, ids, {"x": np.array([1 + 2j, 0.5, 3.0])})
    with pytest.raises(TypeError, match="must be real numbers"):
        perturbation.ranking(np.array([1j, 2.0]))


def test_lime_limit_says_when_it_answers_with_an_approximation():
    """Before (item 6): on a text with a repeated word, `theory.lime_limit` differed from the
    exact 2^d limit (the paper model, "a dull film with a great score": by up to 0.075, more
    than twice the coefficient of "a") without a word; on a text of unknown words it returned
    equal values where fastlime refuses."""
    pre = make_tiny()
    # (since: exact by default within the exact route's budget; beyond it, the warning)
    # the measured errors it quotes are the committed table's (deletion_routes.BINOMIAL_ERRORS)
    med, worst, _ = dr.BINOMIAL_ERRORS["LIME"]["trained model, full reviews"]
    with pytest.warns(theory.LimitApproximationWarning, match=(
            r"binomial-position approximation.*median " + re.escape(f"{med:.1%}, worst {worst:.1%}")
            + r" on trained model, full reviews.*positions='sampled'.*1e-2")):
        theory.lime_limit(pre, "good film good plot", bow=True, budget=0)
    with pytest.warns(theory.LimitApproximationWarning, match=r"independent removal.*law='lime' "
                                                               r"gives the exact limit"):
        theory.lime_limit(pre, "good bad film", bow=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        theory.lime_limit(pre, "good bad film", bow=True)                     # exact: silent
        theory.lime_limit(pre, "good film good plot", bow=True)              # exact route
        theory.lime_limit(pre, "good film good plot", bow=True, positions="binomial")
        theory.lime_limit(pre, "good bad film", bow=False, law="lime")
    for fn in (lambda t: theory.lime_limit(pre, t), lambda t: fastlime.explain_instance(pre, t)):
        with pytest.raises(ValueError, match="no word of 'zork blarg zork' is in the model's "
                                             "vocabulary"):
            fn("zork blarg zork")


def test_the_exact_limit_the_warning_names_takes_what_lime_limit_takes():
    """Before: the approximation warning sends the user to `lime_exhaustive.exact_limit`, which
    took only (model, ids): `exact_limit(pre, text)` raised an IndexError, and a target the model
    does not have another IndexError."""
    from attnxai.theory.lime_exhaustive import exact_limit

    pre = make_tiny()
    exact = exact_limit(pre, "good film good plot")
    assert exact.shape == (3,) and np.all(np.isfinite(exact))        # good, film, plot
    with pytest.warns(theory.LimitApproximationWarning, match="positions='exact'"):
        approx = theory.lime_limit(pre, "good film good plot", budget=0)
    assert approx.shape == exact.shape and not np.allclose(approx, exact, rtol=0, atol=1e-9)
    np.testing.assert_allclose(theory.lime_limit(pre, "good film good plot", positions="exact"),
                               exact, rtol=0, atol=1e-9)          # what the warning names
    np.testing.assert_allclose(exact_limit(pre, "good bad film"),         # the chain, fine
                               theory.lime_limit(pre, "good bad film", ksub=2), rtol=0, atol=1e-9)
    with pytest.raises(ValueError, match="target class 7 does not exist"):
        exact_limit(pre, "good bad film", target=7)
    with pytest.raises(ValueError, match="no word of 'zork blarg' is in the model's vocabulary"):
        exact_limit(pre, "zork blarg")


@pytest.mark.parametrize("bow", [True, False])
def test_the_stated_errors_of_the_approximations_are_measured(bow):
    """The warning's numbers (`MEASURED_ERRORS`) are recomputed on their documents."""
    from attnxai.theory import lime_attention as la
    from attnxai.theory import lime_exhaustive as lx

    errors = lx.default_errors(bow)
    median, top = la.MEASURED_ERRORS["binomial positions" if bow else "independent removal"]
    digits = 2 if bow else 3
    assert round(float(np.median(errors)), digits) == median
    assert round(float(errors.max()), 2) == top


def test_the_cluster_page_says_a_cluster_must_be_trusted():
    page = (ROOT / "book" / "cluster.md").read_text()
    assert "pickle" in page and "trust" in page
