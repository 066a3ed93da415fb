"""Every chapter runs, its assertions included, on a quick model of *other weights*.

A chapter may assert a theorem (true of every model) or a fact of the committed data; it may not
assert what one machine's trained weights happen to do (which explainers tie, which layer agrees
least, which method wins): another CPU trains other weights from the same seed
(book/reproducibility.md). The test build of the book (tests/book/test_book.py) runs the chapters on
this machine's quick model; this test runs them again on the quick model trained from another
seed (``ATTNXAI_SEED``, one more than the seed in force), so that an assertion that holds only for
one set of weights fails here, whatever machine the suite runs on.

The chapters are executed as notebooks (jupytext + nbclient, as the book executes them: one
kernel per chapter, in ``notebooks/``; two kernels at a time, one thread each), without building
the site: the assertions are in the code cells, and the site's own checks run on the test build.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# One process of `make test` (pytest-xdist) runs them all: the other seed's model is trained once.
pytestmark = pytest.mark.xdist_group("other-weights")

ROOT = Path(__file__).resolve().parents[2]
def _other_seed() -> int:
    from attnxai.model.profiles import get_config

    return get_config("quick").seed + 1        # read before the fixture sets ATTNXAI_SEED


def _chapters() -> list[Path]:
    from attnxai.course import toc_chapters

    return [p for p in toc_chapters(ROOT) if p.suffix == ".md" and p.parent.name == "notebooks"]


@pytest.fixture(scope="module")
def other_weights(request, imdb, monkeypatch_module):
    """The quick model of another seed (trained once and cached beside the default one), and the
    environment that makes every chapter use it. Trained before the default quick model is asked
    for: on a fresh clone `make test`'s other process trains that one meanwhile (for the book's
    test build), and this one does not wait for it."""
    from attnxai import pretrained
    from attnxai.model.profiles import get_config
    from attnxai.store.provenance import weights_sha256

    seed = _other_seed()
    other = pretrained(get_config("quick", seed=seed), progress=False)
    quick_model = request.getfixturevalue("quick_model")
    assert weights_sha256(other.model.state_dict()) != weights_sha256(quick_model.model.state_dict())
    monkeypatch_module.setenv("ATTNXAI_SEED", str(seed))
    monkeypatch_module.setenv("ATTNXAI_PROFILE", "quick")
    return seed, other


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as mp:
        yield mp


def test_the_chapters_are_the_tocs_notebooks():
    names = [p.name for p in _chapters()]
    assert names and all((ROOT / "notebooks" / n).is_file() for n in names), names


def _execute(path: Path) -> str | None:
    """Run one chapter in a kernel of its own; None, or the failing cell's report."""
    import jupytext
    import nbclient
    from nbclient.exceptions import CellExecutionError

    nb = jupytext.read(path)
    client = nbclient.NotebookClient(nb, timeout=900, kernel_name="python3",
                                     resources={"metadata": {"path": str(path.parent)}})
    try:
        client.execute()
    except CellExecutionError as exc:
        return str(exc)[-6000:]
    return None


@pytest.fixture(scope="module")
def executed(request, other_weights):
    """The selected chapters, run two at a time (each kernel with one thread: two use the two
    cores of a CI machine, as the book build runs one): chapter name -> None or its failure."""
    from concurrent.futures import ThreadPoolExecutor

    wanted = [item.callspec.params["chapter"] for item in request.session.items
              if item.originalname == "test_chapter_runs_on_other_weights"]
    env = request.getfixturevalue("monkeypatch_module")
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMBA_NUM_THREADS"):
        env.setenv(var, "1")
    env.setenv("OMP_WAIT_POLICY", "PASSIVE")      # chapters 1-4 ask torch for two threads
    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = {name: pool.submit(_execute, ROOT / "notebooks" / name) for name in wanted}
        return {name: f.result() for name, f in futures.items()}


@pytest.mark.slow
@pytest.mark.parametrize("chapter", [p.name for p in _chapters()])
def test_chapter_runs_on_other_weights(chapter, other_weights, executed):
    seed, model = other_weights
    assert os.environ["ATTNXAI_SEED"] == str(seed)
    failure = executed[chapter]
    if failure is not None:
        pytest.fail(f"{chapter} fails on the quick model of seed {seed} "
                    f"(weights {model.path.name}):\n{failure}")
