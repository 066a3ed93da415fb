"""The runner in this process (issue 14): the model shipped to workers and verified there, a
study written on the Study API, identical runs bit-identical, --device (CPU only here). The
worker processes (--jobs, a Dask cluster) are tested in tests/experiment/test_cluster.py."""

from __future__ import annotations

import functools
import json
import os
import socket
from pathlib import Path

import numpy as np
import pytest
import torch

from conftest import random_model

from attnxai import Pretrained, Vocab
from attnxai.model.store import checkpoint
from attnxai import experiment as X
from attnxai.model.store.checkpoint import MANIFEST, CheckpointError, save
from attnxai.cli import main as cli_main
from attnxai.experiment import transport
from attnxai.store import results as store
from attnxai.experiment.runner import Study, chunked, parallel, run
from attnxai.experiment.transport import ModelBundle, ModelRef
from attnxai.model.store.cache import FORMAT_VERSION
from attnxai.model.devices import check_device
from attnxai.model.interface import predict
from attnxai.model.profiles import get_config
from attnxai.model.train import train

WORDS = "good bad film movie plot acting great awful boring moving story".split()
SMALL = dict(profile="quick", repeats=2, num_samples=60, progress=False)


def tiny_checkpoint(folder: Path, seed: int = 0) -> Pretrained:
    vocab = Vocab(WORDS)
    m = random_model(len(vocab), seed=seed, max_len=16, init_range=0.1, dtype=torch.float32)
    conf = {"arch": "AttentionClassifier", "train": {"profile": "tiny"}, "model": m.config.to_dict(),
            "format": FORMAT_VERSION}
    save(Pretrained(m, vocab, conf, {}), folder)
    return checkpoint.load(folder)


@pytest.fixture
def tiny_ckpt(tmp_path):
    transport.uninstall()
    yield tiny_checkpoint(tmp_path / "tiny-0123456789abcdef")
    transport.uninstall()


# ---------------------------------------------------------------- shipping a model
def test_a_bundle_is_the_verified_checkpoint_and_needs_no_folder(tiny_ckpt, tmp_path):
    import shutil

    bundle = ModelBundle.read(tiny_ckpt)
    assert set(bundle.files) == {"model.safetensors", "config.json", "vocab.json", "metrics.json",
                                 MANIFEST}
    assert bundle.ref.digest == __import__("hashlib").sha256(bundle.files[MANIFEST]).hexdigest()
    assert bundle.ref.name == tiny_ckpt.path.name and bundle.ref.dtype == "float32"
    shutil.rmtree(tiny_ckpt.path)                      # the worker has no file system in common
    pre = transport.install(bundle)
    assert pre.path is None and pre.model.W_e.dtype == torch.float32
    assert bundle.ref.load() is pre                    # installed once, found by its handle
    texts = ["good film", "awful boring plot"]
    np.testing.assert_array_equal(pre.predict_logits(texts), tiny_ckpt.predict_logits(texts))
    [info] = transport.installed()
    assert info["origin"] == "shipped" and info["digest"] == bundle.ref.digest


def test_a_copy_damaged_on_the_way_is_refused_naming_the_file(tiny_ckpt):
    bundle = ModelBundle.read(tiny_ckpt)
    weights = bytearray(bundle.files["model.safetensors"])
    weights[-3] ^= 0x01
    bad = ModelBundle(bundle.ref, {**bundle.files, "model.safetensors": bytes(weights)})
    with pytest.raises(CheckpointError, match=r"received by .* damaged.*model\.safetensors does "
                                              r"not match its manifest"):
        transport.install(bad)
    manifest = bundle.files[MANIFEST].replace(b'"vocab_size": 14', b'"vocab_size": 15')
    with pytest.raises(CheckpointError, match="manifest.json is not the one sent"):
        transport.install(ModelBundle(bundle.ref, {**bundle.files, MANIFEST: manifest}))
    assert transport.installed() == []


def test_a_model_changed_in_memory_cannot_be_shipped_as_its_folder(tiny_ckpt):
    with torch.no_grad():
        tiny_ckpt.model.W_l.neg_()
    with pytest.raises(ValueError, match=r"differs from its checkpoint folder .*W_l"):
        ModelBundle.read(tiny_ckpt)
    with pytest.raises(ValueError, match="no checkpoint folder"):
        ModelBundle.read(Pretrained(tiny_ckpt.model, tiny_ckpt.vocab, {}, {}))
    as64 = checkpoint.load(tiny_ckpt.path, dtype=torch.float64)
    assert ModelBundle.read(as64).ref.dtype == "float64"   # float64 of the same bytes: the same


def test_a_handle_outside_a_run(tiny_ckpt):
    ref = ModelBundle.read(tiny_ckpt).ref
    pre = ref.load()                                   # same host: read from its folder, verified
    assert transport.installed()[0]["origin"] == "folder"
    np.testing.assert_array_equal(pre.predict_logits(["good"]), tiny_ckpt.predict_logits(["good"]))
    elsewhere = ModelRef(ref.name, ref.digest, source=f"not-{socket.gethostname()}:/nowhere")
    transport.uninstall()
    with pytest.raises(RuntimeError, match="is not installed in .* the runner"):
        elsewhere.load()


# ---------------------------------------------------------------- a study on the Study API
def _logits_chunk(model: ModelRef, items):
    pre = model.load()
    out = pre.predict_logits([it["text"] for it in items])
    return [{"i": it["i"], "logit": float(o[1]), "pid": os.getpid()} for it, o in zip(items, out)]


class Logits(Study):
    """A study of its own: one row per text, the model shipped by the runner."""

    key_columns = ("i",)
    name = "logits"

    def __init__(self, pre: Pretrained, texts: list[str]):
        self.pre, self.texts = pre, texts

    def settings(self):
        return {"model": self.pre.path.name, "n": len(self.texts)}

    def plan(self, done):
        items = [{"i": i, "text": t} for i, t in enumerate(self.texts) if (i,) not in done]
        return chunked(items, 2)

    def model(self):
        return self.pre

    def task(self):
        return functools.partial(_logits_chunk, self.model_ref())


def test_a_study_of_its_own_gets_the_model_shipped(tiny_ckpt, tmp_path):
    texts = ["good film", "bad plot", "great acting", "boring story", "moving"]
    report = run(Logits(tiny_ckpt, texts), tmp_path / "out", progress=False)
    assert (report.computed, report.workers, report.device) == (5, "this process", "cpu")
    df = store.load_results(tmp_path / "out", keys=["i"], sort=["i"])
    np.testing.assert_array_equal(df["logit"], tiny_ckpt.predict_logits(texts)[:, 1])
    assert transport.installed()[0]["origin"] == "in-process"
    [log] = store.runs(tmp_path / "out")
    assert log["model"]["manifest_sha256"] == ModelBundle.read(tiny_ckpt).ref.digest
    assert (log["computed"], log["device"], log["workers"]) == (5, "cpu", "this process")
    # when the run finished (a timestamp, not overwritten by the rows Study.finish completed)
    assert log["finished"].endswith("+00:00") and log["rows_finished"] == 0
    again = run(Logits(tiny_ckpt, texts), tmp_path / "out", progress=False)
    assert (again.computed, again.skipped) == (0, 5) and len(store.runs(tmp_path / "out")) == 2


def test_study_without_a_model_and_parallel_arguments(tiny_ckpt):
    class NoModel(Logits):
        def model(self):
            return None

    with pytest.raises(RuntimeError, match="names no model"):
        NoModel(tiny_ckpt, ["good"]).model_ref()
    with pytest.raises(TypeError, match="Workers"):
        list(parallel(len, [[1]], 1, client="tcp://somewhere:8786"))
    assert list(parallel(len, [[1, 2], [3]], 1)) == [2, 1]


# ---------------------------------------------------------------- reproducible, bit for bit
def test_identical_runs_are_bit_identical(quick_model, tmp_path):
    args = dict(reviews=3, bow="both", approximations=["paper"], chunk=2, **SMALL)
    X.run_lime_corpus(tmp_path / "a", **args)
    X.run_lime_corpus(tmp_path / "b", **args)
    assert store.content_digest(tmp_path / "a") == store.content_digest(tmp_path / "b")
    X.run_lime_corpus(tmp_path / "c", **{**args, "num_samples": 61})
    assert store.content_digest(tmp_path / "a") != store.content_digest(tmp_path / "c")


# ---------------------------------------------------------------- --device
def test_device_cpu_explicitly_and_a_clear_error_for_a_missing_one(tmp_path, capsys):
    assert check_device("cpu") == torch.device("cpu") == check_device(" CPU ")
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match=r"'cuda' is not available: torch .* sees no CUDA"):
            check_device("cuda")
        with pytest.raises(ValueError, match="not available"):
            check_device("cuda:1")
    with pytest.raises(ValueError, match="cpu, cuda, cuda:N or mps, got 'gpu'"):
        check_device("gpu")
    with pytest.raises(TypeError, match="device must be a str"):
        check_device(0)
    if torch.cuda.is_available():
        pytest.skip("this machine has a CUDA device")
    out = tmp_path / "never"
    assert cli_main(["lime-experiment", "--profile", "quick", "--reviews", "1", "--out", str(out),
                     "--device", "cuda", "--no-progress"]) == 2
    assert "'cuda' is not available" in capsys.readouterr().err and not out.exists()
    assert cli_main(["train", "--profile", "quick", "--device", "cuda"]) == 2
    assert "'cuda' is not available" in capsys.readouterr().err


def test_training_and_prediction_on_an_explicit_cpu_device(imdb):
    from attnxai.data import IMDb

    data = IMDb(imdb.train[:64], imdb.valid[:32], imdb.test[:32], checksum=imdb.checksum)
    cfg = get_config("quick", n_train=64, n_valid=32, n_test=32, epochs=1, batch_size=32,
                     d_embed=8, d_attn=4, d_value=4, n_heads=2, max_len=32)
    m1, vocab, met = train(cfg, data, progress=False)
    m2, _, _ = train(cfg, data, progress=False, device="cpu")
    assert met["device"] == "cpu" and next(m2.parameters()).device.type == "cpu"
    for (n, a), (_, b) in zip(m1.state_dict().items(), m2.state_dict().items()):
        assert torch.equal(a, b), n
    seqs = [[vocab.cls_id, 5, 6, 7], [vocab.cls_id, 8]]
    np.testing.assert_array_equal(predict(m1, seqs), predict(m2.to("cpu"), seqs))
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="not available"):
            train(cfg, data, progress=False, device="cuda")


def test_run_refuses_a_missing_device_before_writing(quick_model, tmp_path):
    if torch.cuda.is_available():
        pytest.skip("this machine has a CUDA device")
    with pytest.raises(ValueError, match="not available"):
        X.run_lime_corpus(tmp_path / "x", reviews=1, device="cuda", **SMALL)
    assert not (tmp_path / "x").exists()
    with pytest.raises(ValueError, match="got 'tpu'"):
        X.run_lime_corpus(tmp_path / "x", reviews=1, device="tpu", scheduler="tcp://h:1",
                          **SMALL)
    assert not (tmp_path / "x").exists()


def test_runs_log_is_json_lines(quick_model, tmp_path):
    X.run_lime_corpus(tmp_path / "r", reviews=1, bow="true", approximations=[], device="cpu",
                      command=["attnxai", "lime-experiment", "--reviews", "1"], **SMALL)
    lines = (tmp_path / "r" / "_runs.jsonl").read_text().splitlines()
    assert len(lines) == 1
    rec = json.loads(lines[0])
    assert rec["device"] == "cpu" and rec["command"] == ["attnxai", "lime-experiment",
                                                         "--reviews", "1"]
    assert {"commit", "dirty", "started", "finished", "loadavg_before", "loadavg_after"} <= set(rec)
    assert rec["started"] <= rec["finished"] and rec["computed"] == 1
    header = X.runs_header(tmp_path / "r", "rows")
    assert header[0] == "# command: python -m attnxai lime-experiment --reviews 1"


def test_study_inputs_refuse_what_a_study_cannot_run(monkeypatch):
    """The three studies' shared checks: a model without a checkpoint folder (nothing to ship to
    the workers) and more reviews than the test set has."""
    import types

    from attnxai import data
    from attnxai.model import trained
    from attnxai.experiment.runner import study_model, study_test_set

    monkeypatch.setattr(trained, "pretrained", lambda *a, **k: types.SimpleNamespace(path=None))
    with pytest.raises(ValueError, match="no checkpoint folder"):
        study_model("paper")
    monkeypatch.setattr(data, "load_imdb", lambda *a, **k: types.SimpleNamespace(test=[1, 2, 3]))
    assert study_test_set(None, 3).test == [1, 2, 3]
    with pytest.raises(ValueError, match="reviews=4 but the test set has 3 reviews"):
        study_test_set(None, 4)
