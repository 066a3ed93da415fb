"""Helpers shared by the checkpoint and hub tests (tests/model/test_checkpoint.py, tests/model/test_hub.py):
tiny hand-built models and their cache folders, a damaged byte, the environment of a child
process. No test lives here."""

from __future__ import annotations

import os
from pathlib import Path

import torch

from conftest import random_model

from attnxai import Pretrained, Vocab
from attnxai.model.store.cache import FORMAT_VERSION, cache_key
from attnxai.model.profiles import get_config

ROOT = Path(__file__).resolve().parents[1]
LABELLED_SHA = "7662598ed0b34375977d4bdc14cdd7fb158dd2be7b43b99dd1f985a23f868066"


def tiny_pretrained(n_words: int = 1200, *, seed: int = 0, profile: str = "quick") -> Pretrained:
    """A small float32 model whose config says it was trained with ``profile``'s settings."""
    vocab = Vocab([f"w{i}" for i in range(n_words)])
    m = random_model(len(vocab), seed=seed, max_len=16, init_range=0.1, dtype=torch.float32)
    conf = {"arch": "AttentionClassifier", "train": get_config(profile).to_dict(),
            "model": m.config.to_dict(), "data_sha256": LABELLED_SHA, "format": FORMAT_VERSION}
    return Pretrained(m, vocab, conf, {"test_accuracy": 0.5})


def cached_folder(cache: Path, profile: str = "quick", sha: str = LABELLED_SHA) -> Path:
    return cache / "models" / f"{profile}-{cache_key(get_config(profile), sha)}"


def flip_byte(path: Path, offset: int) -> None:
    b = bytearray(path.read_bytes())
    b[offset] ^= 0x01
    path.write_bytes(bytes(b))


def same_weights(a: Pretrained, b: Pretrained) -> bool:
    return all(torch.equal(x, y) for x, y in zip(a.model.state_dict().values(),
                                                  b.model.state_dict().values()))


def child_env(**extra) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "ATTNXAI_IMDB_ARCHIVE"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), env.get("PYTHONPATH", "")])
    env.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", **extra)
    return env
