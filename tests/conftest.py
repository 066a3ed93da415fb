"""Shared fixtures. Data come from ``ATTNXAI_IMDB_ARCHIVE`` (CI: ../shared/data/...)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

SHARED_ARCHIVE = Path(__file__).resolve().parents[2] / "shared" / "data" / "aclImdb_v1_labeled.tar.gz"

# Default to the shared copy beside the repository so a bare `pytest` works here too.
if not os.environ.get("ATTNXAI_IMDB_ARCHIVE") and SHARED_ARCHIVE.is_file():
    os.environ["ATTNXAI_IMDB_ARCHIVE"] = str(SHARED_ARCHIVE)
os.environ.setdefault("ATTNXAI_CACHE", str(Path(__file__).resolve().parents[1] / ".cache"))
torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))


@pytest.fixture(scope="session")
def archive() -> str:
    path = os.environ.get("ATTNXAI_IMDB_ARCHIVE")
    if not path or not Path(path).is_file():
        pytest.fail("set ATTNXAI_IMDB_ARCHIVE to the IMDb archive (see README.md)")
    return path


@pytest.fixture(scope="session")
def imdb(archive):
    from attnxai import load_imdb

    return load_imdb(archive)


@pytest.fixture(scope="session")
def quick_model(imdb):
    """The quick profile's trained model (float32), trained once and cached."""
    from attnxai import pretrained

    return pretrained("quick", progress=False)


@pytest.fixture(scope="session")
def quick_model64(quick_model):
    """The same checkpoint in float64, for rounding-level comparisons."""
    from attnxai import load

    return load(quick_model.path, dtype=torch.float64)
