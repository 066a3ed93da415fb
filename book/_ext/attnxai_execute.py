"""The book's chapters executed in parallel, into the one execution cache myst-nb reads.

myst-nb's ``cache`` mode executes a chapter when Sphinx reads it, one after another: on a
two-core laptop one core idles while the other runs nine kernels in turn. This extension runs
first (Sphinx's ``env-before-read-docs``, once the list of documents to read is known): it reads
every chapter to be read exactly as myst-nb will (the same source-read handlers, the same reader
and configuration), keeps those the execution cache cannot answer, and executes them
:func:`jobs` at a time with jupyter-cache's own ``single_nb_execution``, each kernel with one
thread. Each result goes into the same jupyter-cache under the same key (the code cells), so
myst-nb then finds every chapter in the cache and executes nothing; `make book`, Jupyter and the
tests keep one cache. A chapter that fails here is left out of the cache: myst-nb executes it
again as it always did and reports the failure (the build fails with the cell's traceback).

The longest chapters start first (:func:`longest_first`: their seconds in the committed table of
a measured build, ``book/data/chapter_seconds.csv``), so that the last one to finish does not run
alone while the other cores idle.

One line per chapter is printed as it finishes (name, seconds, how many done).
``ATTNXAI_BUILD_JOBS=1`` turns the parallel step off (myst-nb alone, as before); the default is
the number of cores, at most 4 (each kernel holds about 1-2 GB).
"""

from __future__ import annotations

import contextlib
import os
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sphinx.util import logging

LOGGER = logging.getLogger(__name__)
ENV_JOBS = "ATTNXAI_BUILD_JOBS"
#: A kernel's threads when several run at once: one each, and threads that sleep instead of
#: spinning while they wait (chapters 1-4 ask torch for two threads).
ONE_THREAD = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
              "NUMBA_NUM_THREADS": "1", "OMP_WAIT_POLICY": "PASSIVE"}


def jobs(n_chapters: int) -> int:
    """How many chapters run at once: ``$ATTNXAI_BUILD_JOBS``, else the cores (at most 4)."""
    given = os.environ.get(ENV_JOBS, "").strip()
    if given:
        try:
            n = int(given)
        except ValueError:
            raise ValueError(f"{ENV_JOBS} must be a whole number of chapters run at once, "
                             f"got {given!r}") from None
        if n < 1:
            raise ValueError(f"{ENV_JOBS} must be at least 1, got {n}")
    else:
        n = min(4, os.cpu_count() or 1)
    return max(1, min(n, n_chapters))


@dataclass
class Chapter:
    docname: str
    path: Path
    notebook: Any          # nbformat.NotebookNode, as myst-nb reads it
    read_fmt: dict | None
    config: Any            # myst-nb's NbParserConfig with the notebook's own overrides


def _as_myst_nb_reads(app, env, docname: str) -> Chapter | None:
    """The notebook myst-nb will build for ``docname`` (None: not a notebook)."""
    from myst_nb.core.config import NbParserConfig
    from myst_nb.core.read import create_nb_reader
    from myst_nb.core.nb_to_tokens import nb_node_to_dict

    path = Path(env.doc2path(docname))
    source = [path.read_text(encoding="utf-8")]
    # Sphinx emits source-read before parsing; the book's handler rewrites the launch cell.
    app.events.emit("source-read", docname, source)
    text = source[0]
    nb_config: NbParserConfig = env.mystnb_config
    reader = create_nb_reader(str(path), env.myst_config, nb_config, text)
    if reader is None:
        return None
    notebook = reader.read(text)
    kernel = notebook.metadata.get("kernelspec", {}).get("name")
    if kernel is not None:
        import re

        for rgx, alias in (nb_config.kernel_rgx_aliases or {}).items():
            if re.fullmatch(rgx, kernel):
                notebook.metadata["kernelspec"]["name"] = alias
                break
    if nb_config.metadata_key in notebook.metadata:
        overrides = nb_node_to_dict(notebook.metadata[nb_config.metadata_key])
        overrides.pop("output_folder", None)
        with contextlib.suppress(Exception):   # myst-nb warns about a bad override itself
            nb_config = nb_config.copy(**overrides)
    return Chapter(docname, path, notebook, getattr(reader, "read_fmt", None), nb_config)


def _excluded(chapter: Chapter) -> bool:
    import fnmatch

    return any(fnmatch.fnmatch(str(chapter.path), pattern)
               for pattern in chapter.config.execution_excludepatterns or ())


#: Each chapter's seconds in a measured `make book` (the lines this extension prints), to start
#: the longest first.
COMMITTED_SECONDS = Path(__file__).resolve().parents[1] / "data" / "chapter_seconds.csv"


def committed_seconds(path: Path = COMMITTED_SECONDS) -> dict[str, float]:
    """docname -> seconds, from the committed table (``#`` lines are its header); {} without it."""
    import csv

    if not path.is_file():
        return {}
    with path.open(newline="") as f:
        rows = [line for line in f if not line.startswith("#")]
    return {r["docname"]: float(r["seconds"]) for r in csv.DictReader(rows)}


def longest_first(chapters: list[Chapter], seconds: dict[str, float]) -> list[Chapter]:
    """``chapters``, the longest first: by their seconds in ``seconds``; a chapter the table does
    not know (a new one) counts one second per kilobyte of its source, the table's own ratio
    give or take a factor of two, and ties keep their order."""
    def cost(chapter: Chapter) -> float:
        known = seconds.get(chapter.docname)
        return known if known is not None else chapter.path.stat().st_size / 1000

    return sorted(chapters, key=cost, reverse=True)


def stale_chapters(app, env, docnames) -> list[Chapter]:
    """The notebooks among ``docnames`` that myst-nb would execute (cache mode, not excluded,
    not in the cache)."""
    from jupyter_cache import get_cache

    chapters = []
    for docname in sorted(docnames):
        chapter = _as_myst_nb_reads(app, env, docname)
        if chapter is None or chapter.config.execution_mode != "cache" or _excluded(chapter):
            continue
        cache = get_cache(chapter.config.execution_cache_path)
        try:
            cache.match_cache_notebook(chapter.notebook)
        except KeyError:
            chapters.append(chapter)
    return chapters


@contextlib.contextmanager
def _kernel_environment(one_thread: bool):
    """Kernels inherit this process's environment when they start."""
    saved = {k: os.environ.get(k) for k in ONE_THREAD}
    if one_thread:
        os.environ.update(ONE_THREAD)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _execute(chapter: Chapter):
    from jupyter_cache.executors.utils import single_nb_execution

    config = chapter.config
    cwd = str(chapter.path.parent.resolve())
    return single_nb_execution(chapter.notebook, cwd=cwd,
                               allow_errors=config.execution_allow_errors,
                               timeout=config.execution_timeout, meta_override=True)


def execute_in_parallel(chapters: list[Chapter], n_jobs: int, say=print) -> dict[str, str | None]:
    """Execute ``chapters`` ``n_jobs`` at a time and cache each success; docname -> None or the
    failure's message. ``say`` gets one line per chapter."""
    from jupyter_cache import get_cache
    from jupyter_cache.base import CacheBundleIn

    results: dict[str, str | None] = {}
    start = time.perf_counter()
    with _kernel_environment(one_thread=n_jobs > 1), ThreadPoolExecutor(n_jobs) as pool:
        futures = {pool.submit(_execute, c): c for c in chapters}
        for done, future in enumerate(as_completed(futures), 1):
            chapter = futures[future]
            result = future.result()
            if result.err is None:
                # Database writes stay in this thread; myst-nb records a chapter the same way.
                cache = get_cache(chapter.config.execution_cache_path)
                record = (cache.add_nb_to_project(str(chapter.path), read_data=chapter.read_fmt)
                          if chapter.read_fmt else cache.add_nb_to_project(str(chapter.path)))
                cache.cache_notebook_bundle(
                    CacheBundleIn(chapter.notebook, record.uri,
                                  data={"execution_seconds": result.time}),
                    check_validity=False, overwrite=True)
                results[chapter.docname] = None
                status = f"{result.time:.0f} s"
            else:
                results[chapter.docname] = f"{type(result.err).__name__}: {result.err}"[:400]
                status = f"FAILED after {result.time:.0f} s ({type(result.err).__name__}; " \
                         "executed again below, with its traceback)"
            say(f"[attnxai] {chapter.docname}: {status} ({done}/{len(chapters)}, "
                f"{time.perf_counter() - start:.0f} s elapsed)")
    return results


def _before_read(app, env, docnames):
    n_chapters = len(docnames)
    if jobs(n_chapters) < 2 or app.builder.format not in ("html", "latex"):
        return
    chapters = stale_chapters(app, env, docnames)
    n = jobs(len(chapters))
    if len(chapters) < 2 or n < 2:
        return               # nothing to gain: myst-nb executes it as usual
    LOGGER.info(f"[attnxai] executing {len(chapters)} chapters, {n} at a time "
                f"({ENV_JOBS}=1 for one at a time)")
    execute_in_parallel(longest_first(chapters, committed_seconds()), n, say=LOGGER.info)


def setup(app):
    app.connect("env-before-read-docs", _before_read, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
