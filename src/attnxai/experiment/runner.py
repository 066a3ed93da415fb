"""One resumable runner for every corpus experiment of the book.

A :class:`Study` says what to compute (its settings, the work items, how a worker computes a chunk
of them, the model its workers need); :func:`run` does the rest, the same way for every study:
validate, hold the results folder (its lock: one writer at a time; the settings compared with
the folder's and recorded before the first row, :func:`~attnxai.store.results.hold`), plan only
the items not done yet (every part already there verified against its checksum), ship
the study's model to the workers (:mod:`~attnxai.experiment.transport`), run chunks in this
process, in local worker processes (``jobs``) or on a Dask cluster (``scheduler``;
:mod:`~attnxai.experiment.workers`, :mod:`~attnxai.experiment.cluster`), write each finished
chunk as a parquet part (atomically), and show a progress bar. Rerunning the same command
resumes.

**Reproducible.** A row depends only on its item and the settings: every chunk runs with one
torch and one BLAS thread and the same model bytes, so ``jobs=1``, ``jobs=2`` and a cluster give
bit-identical rows (on machines of the same kind with the same packages; on another CPU or an
accelerator, equal to float rounding), and so do two identical runs.

**Writing a study.** Subclass :class:`Study`; validate every argument in ``__init__``; put what a
worker needs in the items (the review's text, not a path: items travel by content) and in the
task (a ``functools.partial`` of a module-level function); name the checkpoint in
:meth:`Study.model` and pass :meth:`Study.model_ref` to the task, which calls ``ref.load()`` in
the worker to get the verified model that was shipped there::

    class MyStudy(Study):
        key_columns = ("test_index",)
        name = "my-study"

        def model(self):
            return self.pre                      # shipped to every worker once, verified

        def task(self):
            return functools.partial(_chunk, self.model_ref(), self.settings())

    def _chunk(model, settings, items):
        pre = model.load()                       # in the worker: the shipped copy
        return [{"test_index": it["test_index"], ...} for it in items]
"""

from __future__ import annotations

import os
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import validate
from ..model.store.checkpoint import weights_sha256
from ..store import results as store
from .transport import ModelBundle, ModelRef
from .workers import InProcess, LocalPool, Workers

__all__ = ["RunReport", "Study", "chunked", "open_workers", "parallel", "run", "study_model",
           "study_test_set"]


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
        """The chunks of work items still to compute (each item a dict holding the key columns,
        and what the worker needs, by content), in order; ``done`` holds the keys already in
        the results folder."""

    @abstractmethod
    def task(self) -> Callable[[list[dict[str, Any]]], list[dict[str, Any]]]:
        """A picklable function computing the rows of one chunk in a worker."""

    def model(self) -> Any:
        """The checkpoint the tasks use (a :class:`~attnxai.Pretrained` loaded from a folder,
        or the folder), or ``None`` (the default: no model). The runner ships it to every
        worker once; tasks reach it through :meth:`model_ref`."""
        return None

    def model_ref(self) -> ModelRef:
        """The handle a task carries to the shipped model (``ref.load()`` in the worker)."""
        bundle = _bundle(self)
        if bundle is None:
            raise RuntimeError(f"{type(self).__name__}.model() returned None: the study names "
                               "no model for its workers")
        return bundle.ref

    def finish(self, out: Path, jobs: int, client: Any, progress: bool) -> int:
        """Work after the chunks (e.g. columns added to finished rows); returns rows touched.
        ``client``: the run's :class:`~attnxai.experiment.workers.Workers` (give it to
        :func:`parallel`)."""
        return 0


def study_model(profile: Any, archive: str | None = None):
    """The trained model a study explains (never trained here: a study runs on a checkpoint its
    workers can be sent), refusing one without a checkpoint folder. ``profile``: what
    :func:`attnxai.pretrained` takes (a profile's name, a ``TrainConfig``, a chapter's
    ``session``): the caller says which model, at which seed."""
    from ..model.trained import pretrained

    pre = pretrained(profile, archive=archive, train_if_missing=False)
    if pre.path is None:
        raise ValueError("the model has no checkpoint folder")
    return pre


def study_test_set(archive: str | None, reviews: int):
    """IMDb (:func:`attnxai.data.load_imdb`), refusing a study of more reviews than its test set
    has."""
    from ..data import load_imdb

    data = load_imdb(archive)
    if reviews > len(data.test):
        raise ValueError(f"reviews={reviews} but the test set has {len(data.test)} reviews")
    return data


def _bundle(study: Study) -> ModelBundle | None:
    """The study's model, read and verified once per study object."""
    cached = study.__dict__.get("_attnxai_bundle", False)
    if cached is not False:
        return cached
    model = study.model()
    bundle = None if model is None else ModelBundle.read(model)
    study.__dict__["_attnxai_bundle"] = bundle
    return bundle


@dataclass
class RunReport:
    out: Path
    computed: int          # rows computed in this run
    skipped: int           # rows already in the folder
    seconds: float
    finished: int = 0      # rows completed by Study.finish
    workers: str = "this process"   # what computed them
    device: str = "cpu"

    @property
    def rows_per_second(self) -> float:
        return self.computed / self.seconds if self.seconds > 0 else float("nan")


def parallel(fn: Callable, chunks: list, jobs: int = 1, client: Any = None) -> Iterator[Any]:
    """``fn(chunk)`` for every chunk, as they finish, on ``client`` (the run's
    :class:`~attnxai.experiment.workers.Workers`, as :meth:`Study.finish` receives it), else in
    this process (``jobs=1``) or in ``jobs`` local processes started for the call."""
    if not chunks:
        return
    if isinstance(client, Workers):
        yield from client.map_unordered(fn, chunks)
        return
    if client is not None:
        raise TypeError(f"client must be the run's Workers, got {type(client).__name__}")
    workers = open_workers(jobs)
    ok = False
    try:
        yield from workers.map_unordered(fn, chunks)
        ok = True
    finally:
        workers.close(abort=not ok)


def open_workers(jobs: int = 1, scheduler: str | None = None) -> Workers:
    """The workers of a run: a Dask cluster (``scheduler``: its address or scheduler file),
    else ``jobs`` local processes (``-1``: one per core), else this process."""
    if scheduler is not None:
        try:
            from .cluster import DaskWorkers
        except ImportError as exc:
            from ..errors import MissingDependency

            raise MissingDependency("--scheduler needs Dask's distributed package, which is not "
                                    "installed: pip install attnxai[dask]") from exc
        return DaskWorkers(scheduler)
    if jobs == -1:
        jobs = os.cpu_count() or 1
    return InProcess() if jobs == 1 else LocalPool(jobs)


def _device(device: Any, scheduler: str | None) -> str:
    """``device`` checked here for a local run; for a cluster only its form is checked here
    (the workers check that they have it when the model is installed)."""
    from ..model.devices import check_device, parse_device

    return str(check_device(device)) if scheduler is None else parse_device(device)


def run(study: Study, out: str | os.PathLike, *, jobs: int = 1, scheduler: str | None = None,
        progress: bool = True, device: str = "cpu",
        command: Sequence[str] | None = None) -> RunReport:
    """Run (or resume) ``study`` into the folder ``out`` (see the module docstring).

    ``jobs``: local worker processes (``-1``: one per core); ``scheduler``: a Dask scheduler's
    address (``tcp://host:8786``) or scheduler file, instead; ``device``: where the workers put
    the study's model (``cpu``; ``cuda`` where torch sees a GPU: the generic LIME path and any
    batched prediction then run there); ``command``: the command line that started the run,
    for the folder's run log (the ``attnxai`` commands pass theirs; ``None``: none recorded).

    Every finished run appends one line to the folder's run log (``_runs.jsonl``,
    :func:`~attnxai.store.results.log_run`): the command, the code (git commit, and whether
    tracked files differed from it, read when the run started), when it started, its wall time,
    the rows computed and skipped, the workers, the model's digest and the load average before
    and after. The book's summary scripts write their headers from it
    (:func:`attnxai.experiment.runs_header`)."""
    import datetime as dt

    from ..progress import bar as progress_bar
    from ..store.provenance import loadavg, source_state

    jobs = validate.integer(jobs, "jobs")
    if jobs == 0 or jobs < -1:
        raise ValueError(f"jobs must be a positive int (or -1 for all cores), got {jobs}")
    if scheduler is None and jobs > 1:
        LocalPool.check_memory(jobs)                 # before the model and the data are read
    if scheduler is not None and not isinstance(scheduler, str):
        raise TypeError(f"scheduler must be an address string, got {scheduler!r}")
    if scheduler is not None and not scheduler.strip():
        raise ValueError("the scheduler's address is empty: give a Dask scheduler's address "
                         "(--scheduler tcp://HOST:8786) or scheduler file, or leave --scheduler "
                         "out to run here")
    device = _device(device, scheduler)
    out = store.prepare(out)
    settings = study.settings()
    store.check_meta(out, settings)                  # refuses before anything is written
    with store.hold(out, settings, command) as held:     # one writer at a time
        done = store.done_keys(out, study.key_columns, settings) if out.is_dir() else set()
        chunks = study.plan(done)
        skipped = len(done)
        bundle = _bundle(study)                      # read and verified before anything runs
        started, load_before, source = dt.datetime.now(dt.timezone.utc), loadavg(), source_state()
        t0 = time.perf_counter()
        workers = open_workers(jobs, scheduler)
        ok = False
        try:
            if bundle is not None:
                workers.install(bundle, device)
                if chunks:
                    workers.prepare()                # ship it now: errors before any writing
            held.record()                            # the settings, before the first row
            n_rows = sum(len(c) for c in chunks)
            bar = progress_bar(total=n_rows, desc=study.name, unit="row",
                               disable=not progress, smoothing=0.05)
            for i, rows in enumerate(workers.map_unordered(study.task(), chunks)):
                order = min((r.get("rank", i) for r in rows), default=i)
                store.write_part(out, rows, order, settings)
                bar.update(len(rows))
            bar.close()
            finished = study.finish(out, jobs, workers, progress)
            seconds = time.perf_counter() - t0
            report = RunReport(out=out, computed=n_rows, skipped=skipped, seconds=seconds,
                               finished=finished, workers=workers.describe(), device=device)
            ok = True
        finally:
            workers.close(abort=not ok)
        store.log_run(out, {"study": study.name,
                            "command": None if command is None else [str(a) for a in command],
                            **source, "started": started.isoformat(timespec="seconds"),
                            "workers": report.workers, "jobs": jobs,
                            "scheduler": scheduler, "device": device, "computed": report.computed,
                            "skipped": skipped, "rows_finished": finished,
                            "seconds": round(seconds, 3),
                            "loadavg_before": load_before, "loadavg_after": loadavg(),
                            "model": None if bundle is None else
                            {"name": bundle.ref.name, "manifest_sha256": bundle.ref.digest,
                             "weights_sha256": weights_sha256(bundle.files)}})
    return report


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
