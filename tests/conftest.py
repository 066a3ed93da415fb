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


def random_model(vocab_size: int = len(WORDS) + 3, *, seed: int = 0, n_layers: int | None = None,
                 n_heads: int = 2, d_embed: int = 8, d_attn: int = 4, d_value: int = 5,
                 max_len: int = 40, n_classes: int = 2, padding: str = "mask",
                 init_range: float = 1.0, skip: bool = False, word_scale: float = 1.0,
                 query_gain: float = 1.0, norm_jitter: float = 0.0, redraw: bool = False,
                 dtype: torch.dtype = torch.float64, **deep):
    """The one builder of a small random model for the tests, in eval mode, in ``dtype``.

    The package's own constructor draws the weights: :class:`~attnxai.AttentionClassifier` (query,
    key, value, output and skip weights ``U(-init_range, init_range)``, word embeddings ``N(0, 1)``),
    or :class:`~attnxai.model.multilayer.MultiLayerClassifier` when ``n_layers`` is given (``deep``:
    its ``residual``, ``norm``, ``d_ff``, ``dropout``). ``torch.manual_seed(seed)`` first (torch's
    global generator is left where the construction leaves it, as a test that draws after may
    rely on). The weight patterns some tests need, applied before the cast: the word embeddings
    times ``word_scale`` (position codes against words); the queries times ``query_gain`` (0:
    uniform attention; large: attention pushed towards one-hot); ``norm_jitter`` times ``N(0, 1)``
    added to every vector parameter (LayerNorms and biases moved off 1 and 0).

    ``redraw`` (single layer): :func:`make_tiny`'s draw, kept because data and tolerances were
    measured on its weights (``tests/data/lime_limit_c2fc43f.json``, the floors quoted in
    test_shapley_peers, test_results_faithfulness): the constructor draws at ``init_range=0.1``,
    then query, key, value and output are drawn again ``U(-init_range, init_range)``, in that
    order, from the same generator (so the weights differ from ``init_range``'s alone)."""
    from attnxai import AttentionClassifier
    from attnxai.model.multilayer import MultiLayerClassifier

    torch.manual_seed(seed)
    if n_layers is None:
        if deep:
            raise TypeError(f"{sorted(deep)} are settings of the multilayer model: give n_layers")
        m = AttentionClassifier(vocab_size, d_embed=d_embed, d_attn=d_attn, d_value=d_value,
                                n_heads=n_heads, max_len=max_len, n_classes=n_classes,
                                padding=padding, init_range=0.1 if redraw else init_range,
                                skip=skip)
        if redraw:
            with torch.no_grad():
                for w in (m.W_q, m.W_k, m.W_v, m.W_l):
                    w.uniform_(-init_range, init_range)
    else:
        if skip or redraw:
            raise TypeError("skip and redraw are the single-layer model's: no n_layers with them")
        m = MultiLayerClassifier(vocab_size, d_embed=d_embed, n_layers=n_layers, n_heads=n_heads,
                                 d_attn=d_attn, d_value=d_value, max_len=max_len,
                                 n_classes=n_classes, padding=padding, init_range=init_range,
                                 **deep)
    with torch.no_grad():
        if word_scale != 1.0:
            m.W_e.mul_(word_scale)
        if query_gain != 1.0:
            m.W_q.mul_(query_gain)
        if norm_jitter:
            for p in m.parameters():
                if p.dim() == 1:
                    p.add_(norm_jitter * torch.randn_like(p))
    return m.to(dtype).eval()


def make_tiny(padding: str = "mask", *, seed: int = 0, n_heads: int = 3, max_len: int = 40,
              scale: float = 1.0, d_embed: int = 8, **model):
    """A float64 Pretrained around :func:`random_model` (weights ``U(-scale, scale)``, drawn as
    ``redraw`` says) and the synthetic vocabulary of the words above (anything else is UNK): the
    fast LIME and the closed forms are exact for any weights, so most of their tests need no
    trained model. ``model``: more of :func:`random_model`'s settings."""
    from attnxai import Pretrained, Vocab

    vocab = Vocab(list(WORDS))
    m = random_model(len(vocab), seed=seed, n_heads=n_heads, max_len=max_len, init_range=scale,
                     d_embed=d_embed, padding=padding, **{"redraw": True, **model})
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
