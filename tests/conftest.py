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
# No test reaches the internet: the book's published models are downloaded only from the local
# servers of tests/test_hub.py, which turn this off for themselves.
os.environ.setdefault("ATTNXAI_OFFLINE", "1")
torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))


@pytest.fixture
def session_settings():
    """attnxai.settings' session value, restored after the test (which may :func:`use` others)."""
    from attnxai import settings

    before = settings.current()
    yield settings
    settings.use(before)


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


# ---------------------------------------------------------------- tiny models, no IMDb needed
WORDS = ("good bad film movie plot acting great awful boring moving story the a and was "
         "very not but it is of to in this that with for").split()


def make_tiny(padding: str = "mask", *, seed: int = 0, n_heads: int = 3, max_len: int = 40,
              scale: float = 1.0, d_embed: int = 8):
    """A float64 Pretrained around a small random AttentionClassifier and a synthetic vocabulary
    (the words above; anything else is UNK): the fast LIME and the closed forms are exact for any
    weights, so most of their tests need no trained model."""
    from attnxai import AttentionClassifier, Pretrained, Vocab

    vocab = Vocab(list(WORDS))
    torch.manual_seed(seed)
    m = AttentionClassifier(len(vocab), d_embed=d_embed, d_attn=4, d_value=5, n_heads=n_heads,
                            max_len=max_len, padding=padding)
    with torch.no_grad():
        for p in (m.W_q, m.W_k, m.W_v, m.W_l):
            p.uniform_(-scale, scale)
    m = m.double().eval()
    return Pretrained(m, vocab, {"train": {"profile": "tiny"}, "model": m.config}, {})


def tiny_text(n: int, seed: int = 0, unknown: bool = True) -> str:
    """A normalised text of ``n`` words from the tiny vocabulary (with repeats, and a few
    out-of-vocabulary words if ``unknown``)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    pool = list(WORDS) + (["zork", "blarg"] if unknown else [])
    return " ".join(rng.choice(pool, size=n))


@pytest.fixture
def tiny():
    return make_tiny()


def load_script(relpath: str):
    """A script of the repository (``benchmarks/...``, ``book/data/...``) as a module, to test
    its functions."""
    import importlib.util

    path = Path(__file__).resolve().parents[1] / relpath
    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# ---------------------------------------------------------------- no silent skips in CI
def pytest_configure(config):
    config.addinivalue_line(
        "markers", "ci_may_skip(reason): a skip that CI accepts (the condition cannot hold on a "
                   "CI machine, e.g. a folder root can write to); every other skip fails in CI")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """In CI (``CI=true``, as .ci/run is run) a skipped test is a failure, unless it is marked
    ``ci_may_skip``: CI installs what the browser and PDF checks need (.ci/run), so a check that
    skips there is a check that silently stopped running."""
    outcome = yield
    report = outcome.get_result()
    if os.environ.get("CI", "").lower() != "true" or not report.skipped:
        return
    if item.get_closest_marker("ci_may_skip") is not None or hasattr(report, "wasxfail"):
        return
    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    report.outcome = "failed"
    report.longrepr = (f"skipped in CI (CI=true), where it must run: {reason}\n"
                       "(.ci/run installs chromium, TeX and poppler; a skip CI accepts is marked "
                       "@pytest.mark.ci_may_skip(reason))")


# ---------------------------------------------------------------- durations of the whole run
#: Every test's duration (setup + call + teardown, seconds) of the last run, slowest first:
#: written at the end of every run that had no test selection (`make test`); a measured copy
#: from a fresh clone is committed as book/data/test_durations.csv (fresh_clone_timings.csv).
DURATIONS = Path(__file__).resolve().parents[1] / "_build" / "test_durations.csv"
_durations: dict[str, list[float]] = {}


def pytest_runtest_logreport(report):
    entry = _durations.setdefault(report.nodeid, [0.0, 0.0, 0.0])
    entry[("setup", "call", "teardown").index(report.when)] += report.duration


def pytest_sessionfinish(session, exitstatus):
    if hasattr(session.config, "workerinput") or not _durations:
        return                      # a pytest-xdist worker: the controller writes the file
    if session.config.args != [str(Path(session.config.rootpath) / "tests")] and \
            session.config.args != ["tests"]:
        return                      # a selection, not the whole suite
    import csv

    DURATIONS.parent.mkdir(parents=True, exist_ok=True)
    rows = sorted(_durations.items(), key=lambda kv: -sum(kv[1]))
    with DURATIONS.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["test", "seconds", "setup", "call", "teardown"])
        for nodeid, (s, c, t) in rows:
            w.writerow([nodeid, f"{s + c + t:.2f}", f"{s:.2f}", f"{c:.2f}", f"{t:.2f}"])
