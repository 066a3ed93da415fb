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
# servers of tests/model/test_hub.py, which turn this off for themselves.
os.environ.setdefault("ATTNXAI_OFFLINE", "1")


def torch_threads(cores: int | None, workers: int) -> int:
    """Torch's threads in a test process: two where it has the cores to itself; in one of
    pytest-xdist's ``workers`` processes, its share of the cores. A process with two threads on
    a core another process keeps busy spends its small products waiting (src/attnxai/threads.py:
    a 5,000 x 255 Gram product from ~7 ms to ~360 ms)."""
    return max(1, min(2, (cores or 1) // max(1, workers)))


torch.set_num_threads(torch_threads(os.cpu_count(),
                                    int(os.environ.get("PYTEST_XDIST_WORKER_COUNT") or 1)))


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
    """The quick profile's trained model (float32), trained once and cached: what
    ``pretrained("quick")`` and the studies' ``profile="quick"`` load."""
    from attnxai import pretrained

    return pretrained("quick", progress=False)


def quick_test_seed() -> int:
    """The seed of the model the book's test build runs on: one more than the quick profile's own
    (the profile table, not ``ATTNXAI_SEED``). So every chapter runs, its assertions included, on
    weights other than those of the paper's model (``make book``) and of the quick model (what a
    reader falls back to, and the package's tests use): an assertion that holds for one set of
    trained weights only (another CPU trains other weights from the same seed,
    book/reproducibility.md) fails on one of them."""
    from attnxai.model.profiles import PROFILES

    return PROFILES["quick"].seed + 1


@pytest.fixture(scope="session")
def book_model(imdb):
    """The model of the book's test build (tests/booksite.py): the quick profile trained from
    :func:`quick_test_seed`, trained once and cached. The tests that read the built site compare
    it with this model."""
    from attnxai import pretrained
    from attnxai.model.profiles import get_config

    return pretrained(get_config("quick", seed=quick_test_seed()), progress=False)


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
    from attnxai import AttentionClassifier, AttentionConfig
    from attnxai.model.multilayer import MultiLayerClassifier, MultiLayerConfig

    torch.manual_seed(seed)
    common = dict(d_embed=d_embed, d_attn=d_attn, d_value=d_value, n_heads=n_heads,
                  max_len=max_len, n_classes=n_classes, padding=padding)
    if n_layers is None:
        if deep:
            raise TypeError(f"{sorted(deep)} are settings of the multilayer model: give n_layers")
        m = AttentionClassifier(AttentionConfig(vocab_size, **common, skip=skip,
                                                init_range=0.1 if redraw else init_range))
        if redraw:
            with torch.no_grad():
                for w in (m.W_q, m.W_k, m.W_v, m.W_l):
                    w.uniform_(-init_range, init_range)
    else:
        if skip or redraw:
            raise TypeError("skip and redraw are the single-layer model's: no n_layers with them")
        m = MultiLayerClassifier(MultiLayerConfig(vocab_size, n_layers=n_layers, **common,
                                                  init_range=init_range, **deep))
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
    return Pretrained(m, vocab, {"train": {"profile": "tiny"}, "model": m.config.to_dict()}, {})


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


# ---------------------------------------------------------------- `make test`'s two processes
# `make test` runs pytest-xdist with --dist loadgroup. Three things make its wall time the
# work divided by the processes, not more:
# * Grouping that holds. A test marked xdist_group("name") runs in the process that runs every
#   other test of that name (the book's test site is built in that process). pytest-xdist marks a grouped test by
#   appending "@name" to its node id, which pytest >= 9.2 no longer lets it do (pytest-xdist
#   issue 1386: its tests were then spread over both processes, and each one built the book and
#   ran the chapters again); :func:`_apply_group` does it here when pytest-xdist could not.
# * Units no smaller than a module: a test that no group names travels with its module (as
#   --dist loadscope does), so that a module's fixtures (e.g. the deletion population of
#   tests/results/test_results_deletion.py) are computed in one process, not in both.
# * Longest first: the units are sent in the order of their seconds in the committed table of a
#   whole run (book/data/test_durations.csv), so that the long ones start at once and the two
#   processes finish together; a unit that reads the test site (:data:`SITE_READERS`) is sent
#   once the unit that builds it (:data:`SITE_BUILDER`) is done (:func:`next_unit`), so that
#   neither process waits for the build and these long units do not all come last.
#: Each test's seconds in the last measured whole run (setup + call + teardown).
COMMITTED_DURATIONS = Path(__file__).resolve().parents[1] / "book" / "data" / "test_durations.csv"
#: The seconds a test absent from that table is taken to last (most tests last under a second).
UNKNOWN_SECONDS = 1.0


def xdist_group(item) -> str | None:
    """The group pytest-xdist's loadgroup gives ``item`` (its xdist_group marks' names, sorted and
    joined by '_'), or None."""
    names = {str(m.args[0] if m.args else m.kwargs.get("name", "default"))
             for m in item.iter_markers("xdist_group")}
    return "_".join(sorted(names)) or None


def split_group(nodeid: str) -> tuple[str, str | None]:
    """(node id without its "@group" suffix, group or None), as pytest-xdist reads a suffix (the
    last '@' after any parameters' ']')."""
    at = nodeid.rfind("@")
    if at > nodeid.rfind("]"):
        return nodeid[:at], nodeid[at + 1:]
    return nodeid, None


def work_unit(nodeid: str) -> str:
    """The unit of work that a process runs whole: the test's group, else its module."""
    bare, group = split_group(nodeid)
    return f"@{group}" if group else bare.split("::", 1)[0]


def _apply_group(item, group: str) -> None:
    if split_group(item.nodeid)[1] == group:
        return                                    # pytest-xdist did it
    wanted = f"{item.nodeid}@{group}"
    if hasattr(item, "_id"):                      # pytest >= 9.2: a structured node id
        from _pytest.nodeid import coerce_node_id

        item._id = coerce_node_id(wanted)
    else:
        item._nodeid = wanted
    if item.nodeid != wanted:
        raise pytest.UsageError(f"cannot put {item.nodeid} in pytest-xdist's group {group!r}: "
                                "this pytest does not let a plugin change a node id")


def committed_seconds(path: Path = COMMITTED_DURATIONS) -> dict[str, float]:
    """Node id (no group suffix) -> seconds, from a table that tests/conftest.py writes."""
    import csv

    if not path.is_file():
        return {}
    with path.open(newline="") as f:
        rows = [line for line in f if not line.startswith("#")]
    return {split_group(r["test"])[0]: float(r["seconds"]) for r in csv.DictReader(rows)}


#: The prefix of the groups that read the test site (browser, explorer, PDF): sent once the
#: site is built (:func:`next_unit`), so that the process that does not build the site has other
#: work meanwhile; either process then runs them (tests/booksite.py, once_per_run).
SITE_READERS = "@site-"
#: The unit that builds the test site (tests/book/test_book.py) and its student edition (the PDF
#: check's student edition reuses that folder: tests/booksite.py, STUDENT_LOCK).
SITE_BUILDER = "@book"


def longest_units_first(nodeids: list[str], seconds: dict[str, float]) -> list[int]:
    """The order (indices into ``nodeids``) that runs the units of work (:func:`work_unit`) by
    their total seconds, longest first, each unit's tests in their collected order."""
    total: dict[str, float] = {}
    for nodeid in nodeids:
        unit = work_unit(nodeid)
        total[unit] = total.get(unit, 0.0) + seconds.get(split_group(nodeid)[0], UNKNOWN_SECONDS)
    first = {}
    for i, nodeid in enumerate(nodeids):
        first.setdefault(work_unit(nodeid), i)
    return sorted(range(len(nodeids)),
                  key=lambda i: (-total[work_unit(nodeids[i])], first[work_unit(nodeids[i])], i))


def next_unit(queue: list[str], site_built: bool) -> str:
    """The unit of ``queue`` (units in the order they are sent: longest first) to send to a
    process that asks for work: the first that can start at once. A unit that reads the test site
    (:data:`SITE_READERS`) can once ``site_built``; before, it would wait for the build, so it is
    sent only when nothing else is left."""
    if not queue:
        raise ValueError("next_unit: the queue is empty")
    return next((u for u in queue if site_built or not u.startswith(SITE_READERS)), queue[0])


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    """In a pytest-xdist worker of a --dist loadgroup run: every grouped test carries its group,
    and the items are in :func:`longest_units_first`'s order (every worker collects the same
    order; the controller sends the units in it: :func:`pytest_xdist_make_scheduler`)."""
    if not hasattr(config, "workerinput") or not config.getvalue("loadgroup"):
        return
    for item in items:
        group = xdist_group(item)
        if group:
            _apply_group(item, group)
    order = longest_units_first([item.nodeid for item in items], committed_seconds())
    items[:] = [items[i] for i in order]


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """--dist loadgroup with :func:`work_unit`'s units, sent longest first (the workers sorted
    their collection so) as :func:`next_unit` picks them, rather than by their number of tests."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadGroupScheduling

    class LongestFirstGroups(LoadGroupScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return work_unit(nodeid)

        def _site_built(self) -> bool:
            """Every test of :data:`SITE_BUILDER` has reported (or the run has none)."""
            if SITE_BUILDER in self.workqueue:
                return False
            return all(all(work[SITE_BUILDER].values()) for work in self.assigned_work.values()
                       if SITE_BUILDER in work)

        def _assign_work_unit(self, node) -> None:
            unit = next_unit(list(self.workqueue), self._site_built())
            self.workqueue.move_to_end(unit, last=False)
            super()._assign_work_unit(node)

    config.option.loadscopereorder = False
    return LongestFirstGroups(config, log)


# ---------------------------------------------------------------- durations of the whole run
#: Every test's duration (setup + call + teardown, seconds) of the last run, slowest first:
#: written at the end of every run that had no test selection (`make test`); a measured copy
#: from a fresh clone is committed as book/data/test_durations.csv (fresh_clone_timings.csv).
DURATIONS = Path(__file__).resolve().parents[1] / "_build" / "test_durations.csv"
_durations: dict[str, list[float]] = {}


def pytest_runtest_logreport(report):
    entry = _durations.setdefault(split_group(report.nodeid)[0], [0.0, 0.0, 0.0])
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
