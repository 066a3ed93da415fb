import json
import subprocess
import sys
from dataclasses import replace

import numpy as np
import pytest
import torch

from attnxai import Pretrained
from attnxai.model.store import checkpoint
from attnxai.model.store.checkpoint import load, save
from attnxai.data import IMDb
from attnxai.model.profiles import get_config, recipe
from attnxai.model.train import train
from attnxai.model.trained import pretrained


@pytest.fixture(scope="module")
def tiny_data(imdb):
    """A 600-review slice so that training twice stays cheap."""
    return IMDb(imdb.train[:400], imdb.valid[:100], imdb.test[:100], checksum=imdb.checksum)


TINY = dict(n_train=400, n_valid=100, n_test=100, epochs=1, batch_size=32, lr=1e-3, min_freq=2,
            d_embed=16, d_attn=8, d_value=8, n_heads=2, max_len=64)


@pytest.mark.parametrize("extra", [None, {}], ids=["profile recipe (lazy AdamW)", "authors"])
def test_same_seed_same_weights(tiny_data, extra):
    """Two trainings of one config on this machine: bit-identical weights, for the profiles'
    recipe and for the authors' (``extra={}``)."""
    cfg = get_config("quick", **TINY, **({} if extra is None else {"extra": extra}))
    assert recipe(cfg)["optimizer"] == ("lazy-adamw" if extra is None else "adamw")
    m1, v1, _ = train(cfg, tiny_data, progress=False)
    m2, v2, met = train(cfg, tiny_data, progress=False)
    assert v1.itos == v2.itos
    for (n, a), (_, b) in zip(m1.state_dict().items(), m2.state_dict().items()):
        assert torch.equal(a, b), n
    assert {"train_accuracy", "valid_accuracy", "test_accuracy", "train_seconds", "history"} <= set(met)
    other = get_config(cfg, seed=cfg.seed + 1)                          # whatever ATTNXAI_SEED says
    m3, _, _ = train(other, tiny_data, progress=False)
    assert not torch.equal(m1.W_q, m3.W_q)


def test_checkpoint_round_trip(tiny_data, tmp_path):
    cfg = get_config("quick", **TINY)
    model, vocab, metrics = train(cfg, tiny_data, progress=False)
    conf = {"train": cfg.to_dict(), "model": model.config.to_dict()}
    path = save(Pretrained(model, vocab, conf, metrics), tmp_path / "ckpt")
    assert sorted(p.name for p in path.iterdir()) == sorted((*checkpoint.CONTENT_FILES, checkpoint.MANIFEST))
    back = load(path)
    for (n, a), (_, b) in zip(model.state_dict().items(), back.model.state_dict().items()):
        assert torch.equal(a, b), n
    text = "a truly wonderful film"
    assert np.allclose(back.predict_logits([text]), Pretrained(model, vocab, conf, metrics).predict_logits([text]))
    assert back.model.W_e.dtype == torch.float32
    assert load(path, dtype=torch.float64).model.W_e.dtype == torch.float64
    assert json.loads((path / "metrics.json").read_text())["test_accuracy"] == metrics["test_accuracy"]


def test_a_trained_model_records_its_fingerprint(tiny_data, tmp_path, capsys):
    """metrics.json's fingerprint: the weights' digest (the one checkpoint.weights_sha256 reads
    back from the saved file, whatever dtype loads it), torch, the kernels it chose, the
    processor and the threads; `attnxai info` shows it. The digest is of the weights alone: a
    weight one ulp away changes it."""
    from attnxai import cli
    from attnxai.store.provenance import weights_sha256

    cfg = get_config("quick", **TINY)
    model, vocab, metrics = train(cfg, tiny_data, progress=False)
    fp = metrics["fingerprint"]
    assert fp["torch"] == torch.__version__
    assert fp["threads"] == 1         # the lazy recipe trains on one thread, whatever the process
    assert fp["torch_cpu_capability"] == torch.backends.cpu.get_cpu_capability()
    assert fp["cpu"]["machine"] and isinstance(fp["cpu"]["flags"], list)
    path = save(Pretrained(model, vocab, {"train": cfg.to_dict(), "model": model.config.to_dict()}, metrics),
                tmp_path / "ckpt")
    assert checkpoint.weights_sha256(path) == fp["weights_sha256"] == weights_sha256(
        load(path, dtype=torch.float64).model.float().state_dict())
    nudged = {k: v.clone() for k, v in model.state_dict().items()}
    nudged["W_q"].view(-1)[0] = torch.nextafter(nudged["W_q"].view(-1)[0], torch.tensor(1.0))
    assert weights_sha256(nudged) != fp["weights_sha256"]
    assert cli.main(["info", "--path", str(path)]) == 0
    shown = json.loads(capsys.readouterr().out)["fingerprint"]
    assert shown["weights_sha256"] == fp["weights_sha256"] and "note" not in shown


def test_the_authors_recipe_is_the_profile_without_lazy_adamw():
    """The single-layer profiles train with lazy AdamW; ``authors_recipe`` is the same profile
    with the authors' dense AdamW, the config the models cached before had (their keys:
    tests/model/test_checkpoint.py); a profile without lazy AdamW has none."""
    from attnxai.model.profiles import PROFILES, TrainConfig, authors_recipe

    authors = authors_recipe(replace(PROFILES["paper"], seed=42))        # whatever ATTNXAI_SEED says
    assert authors == TrainConfig(profile="paper") and recipe(authors)["optimizer"] == "adamw"
    assert authors_recipe(replace(PROFILES["paper-skip"], seed=42)) == TrainConfig(
        profile="paper-skip", extra={"skip": True})
    for name in ("paper", "quick", "paper-skip"):
        assert recipe(PROFILES[name])["optimizer"] == "lazy-adamw", name
    with pytest.raises(ValueError, match="optimizer must be one of"):
        recipe(replace(authors, extra={"optimizer": "adam"}))
    with pytest.raises(ValueError, match="'multilayer' does not train with lazy AdamW"):
        authors_recipe("multilayer")


def test_cli_trains_and_finds_the_authors_recipe(monkeypatch, capsys):
    """``train --authors-optimizer`` asks pretrained() for the profile's authors' configuration
    (dense AdamW), ``info --authors-optimizer`` finds that model, not the lazy one; refused, one
    line and status 2, for a profile without lazy AdamW."""
    from attnxai import cli
    from attnxai.model import trained
    from attnxai.model.profiles import authors_recipe

    asked = []
    real = trained.pretrained

    def spy(profile, **kw):
        asked.append(profile)
        raise FileNotFoundError("stop here")

    monkeypatch.setattr(trained, "pretrained", spy)
    assert cli.main(["train", "--profile", "quick", "--authors-optimizer"]) == 2
    assert cli.main(["info", "--profile", "quick", "--authors-optimizer"]) == 2
    assert cli.main(["train", "--profile", "quick"]) == 2
    # the CLI resolves the profile (and ATTNXAI_SEED, read once in main) into its configuration
    assert asked == [authors_recipe("quick"), authors_recipe("quick"), get_config("quick")]
    monkeypatch.setattr(trained, "pretrained", real)
    capsys.readouterr()
    assert cli.main(["train", "--profile", "multilayer", "--authors-optimizer"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "does not train with lazy AdamW" in err[0]


def test_unknown_checkpoint_path(tmp_path):
    with pytest.raises(FileNotFoundError, match="no checkpoint folder"):
        load(tmp_path / "missing")
    (tmp_path / "half").mkdir()
    (tmp_path / "half" / "config.json").write_text("{}")
    with pytest.raises(FileNotFoundError, match="missing"):
        load(tmp_path / "half")


def test_unknown_profile():
    with pytest.raises(ValueError, match="unknown profile 'fast'"):
        get_config("fast")


def test_quick_profile_is_cached_and_learns(quick_model):
    assert quick_model.metrics["test_accuracy"] > 0.6
    again = pretrained("quick", progress=False, train_if_missing=False)
    assert again.path == quick_model.path


def test_pretrained_text_api(quick_model):
    ids = quick_model.encode(["great", "a terrible terrible film"])
    assert ids.shape == (2, 5) and ids[0, 2] == quick_model.vocab.pad_id
    assert quick_model.tokens("Great film!") == ["[CLS]", "great", "film", "!"]
    logits = quick_model.predict_logits(["great", "", "!!!"])  # lime may empty a document
    assert logits.shape == (3, 2) and np.isfinite(logits).all()
    with pytest.raises(ValueError, match="empty"):
        quick_model.encode("   ")
    with pytest.raises(ValueError, match="without any letter"):
        quick_model.encode("?!")
    with pytest.raises(ValueError, match="no texts"):
        quick_model.encode([])


def test_cli_info_and_errors(quick_model):
    run = lambda *a: subprocess.run([sys.executable, "-m", "attnxai", *a], capture_output=True, text=True)
    out = run("info", "--profile", "quick")
    assert out.returncode == 0 and '"test_accuracy"' in out.stdout
    bad = run("train", "--profile", "nope")
    assert bad.returncode == 2 and "unknown profile 'nope'" in bad.stderr


def test_predict_logits_per_head(quick_model64):
    texts = ["a truly wonderful film", "dull", "!!!"]
    heads = np.stack([quick_model64.predict_logits(texts, head=i)
                      for i in range(quick_model64.model.n_heads)])
    assert np.allclose(heads.mean(0), quick_model64.predict_logits(texts), atol=1e-12)
    with pytest.raises(ValueError, match="head 6 does not exist"):
        quick_model64.predict_logits(texts, head=6)
