"""One resumable runner for every corpus experiment of the book.

A :class:`Study` says what to compute (its settings, the work items, how a worker computes a chunk
of them); :func:`run` does the rest, the same way for every study: validate, compare the settings
with the results folder's, plan only the items not done yet, run chunks in this process, in local
worker processes (``jobs``) or on a Dask cluster (``scheduler``), write each finished chunk as a
parquet part (atomically), and show a progress bar. Rerunning the same command resumes.
"""

from __future__ import annotations

import os
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import validate
from . import store

__all__ = ["RunReport", "Study", "parallel", "run"]


class Study(ABC):
    """What one experiment computes. Subclasses validate their arguments in ``__init__``."""

    #: The columns that identify a row (resuming skips the keys already in the folder).
    key_columns: tuple[str, ...] = ()
    #: The progress bar's label.
    name: str = "experiment"

    @abstractmethod
    def settings(self) -> dict[str, Any]:
        """Everything that changes the numbers (JSON-able), checked when resuming."""

    @abstractmethod
    def plan(self, done: set[tuple]) -> list[list[dict[str, Any]]]:
        """The chunks of work items still to compute (each item a dict holding the key columns),
        in order; ``done`` holds the keys already in the results folder."""

    @abstractmethod
    def task(self) -> Callable[[list[dict[str, Any]]], list[dict[str, Any]]]:
        """A picklable function computing the rows of one chunk in a worker."""

    def finish(self, out: Path, jobs: int, client: Any, progress: bool) -> int:
        """Work after the chunks (e.g. columns added to finished rows); returns rows touched."""
        return 0


@dataclass
class RunReport:
    out: Path
    computed: int          # rows computed in this run
    skipped: int           # rows already in the folder
    seconds: float
    finished: int = 0      # rows completed by Study.finish

    @property
    def rows_per_second(self) -> float:
        return self.computed / self.seconds if self.seconds > 0 else float("nan")


def _dask_client(scheduler: str):
    try:
        from distributed import Client
    except ImportError as exc:
        raise RuntimeError("--scheduler needs Dask's distributed package, which is not installed: "
                           "pip install attnxai[dask]") from exc
    return Client(scheduler)


def parallel(fn: Callable, chunks: list, jobs: int, client: Any = None) -> Iterator[Any]:
    """``fn(chunk)`` for every chunk, as they finish: in this process (``jobs=1``), in local
    processes (joblib/loky), or on the Dask cluster of ``client``."""
    if not chunks:
        return
    if client is None and jobs == 1:
        for c in chunks:
            yield fn(c)
        return
    from joblib import Parallel, delayed, parallel_config

    tasks = [delayed(fn)(c) for c in chunks]
    if client is not None:
        with parallel_config(backend="dask"):
            yield from Parallel(n_jobs=-1, return_as="generator")(tasks)
    else:
        yield from Parallel(n_jobs=jobs, return_as="generator_unordered")(tasks)


def run(study: Study, out: str | os.PathLike, *, jobs: int = 1, scheduler: str | None = None,
        progress: bool = True) -> RunReport:
    """Run (or resume) ``study`` into the folder ``out`` (see the module docstring)."""
    from tqdm.auto import tqdm

    jobs = validate.integer(jobs, "jobs")
    if jobs == 0 or jobs < -1:
        raise ValueError(f"jobs must be a positive int (or -1 for all cores), got {jobs}")
    if scheduler is not None and not isinstance(scheduler, str):
        raise TypeError(f"scheduler must be an address string, got {type(scheduler).__name__}")
    out = store.prepare(out)
    settings = study.settings()
    store.check_meta(out, settings)                  # refuses before anything is written
    done = store.done_keys(out, study.key_columns) if out.is_dir() else set()
    chunks = study.plan(done)
    skipped = len(done)
    client = _dask_client(scheduler) if scheduler else None
    store.write_meta(out, settings)
    t0 = time.perf_counter()
    n_rows = sum(len(c) for c in chunks)
    try:
        bar = tqdm(total=n_rows, desc=study.name, unit="row", disable=not progress,
                   smoothing=0.05)
        for i, rows in enumerate(parallel(study.task(), chunks, jobs, client)):
            order = min((r.get("rank", i) for r in rows), default=i)
            store.write_part(out, rows, order)
            bar.update(len(rows))
        bar.close()
        finished = study.finish(out, jobs, client, progress)
    finally:
        if client is not None:
            client.close()
    return RunReport(out=out, computed=n_rows, skipped=skipped,
                     seconds=time.perf_counter() - t0, finished=finished)


def chunked(items: Iterable[dict[str, Any]], size: int, group: str | None = None
            ) -> list[list[dict[str, Any]]]:
    """Items in chunks of ``size`` (distinct values of ``group`` per chunk, if given, so that
    the rows of one review stay together)."""
    size = validate.positive_int(size, "chunk")
    chunks: list[list[dict[str, Any]]] = []
    current: list[dict[str, Any]] = []
    seen: set = set()
    for it in items:
        g = it[group] if group else id(it)
        if g not in seen and len(seen) >= size:
            chunks.append(current)
            current, seen = [], set()
        seen.add(g)
        current.append(it)
    if current:
        chunks.append(current)
    return chunks
