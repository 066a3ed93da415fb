"""Where a run's chunks are computed: this process, local worker processes, or a Dask cluster.

Every kind of :class:`Workers` does the same three things: :meth:`~Workers.install` a
:class:`~attnxai.experiment.transport.ModelBundle` in each of its processes (once), run a task
function on chunks and hand back the results as they finish (:meth:`~Workers.map_unordered`),
and :meth:`~Workers.close`. Every task runs with one torch and one BLAS thread
(:func:`attnxai.threads.single_threaded`), whatever runs it, so that the numbers do not depend
on where a chunk was computed.

**Local processes** (:class:`LocalPool`, ``jobs > 1``) are started fresh for each run (``spawn``:
a clean interpreter, never a fork of a process holding torch's threads) and die with the process
that started them: on Linux the kernel kills them when it dies, even by ``kill -9``
(``PR_SET_PDEATHSIG``), and on every system a watchdog thread in each worker exits when its
parent is gone. Each holds its own interpreter, torch and model (:data:`WORKER_BYTES`), so
``jobs`` processes are checked against the memory budget (:mod:`attnxai.budget`) before any
starts. On an error or an interrupt they are killed, not waited for. A worker that dies
stops the run with a :class:`~attnxai.errors.WorkerLost` (a ``RuntimeError``); the parts
written so far are kept and rerunning the same command resumes. (A chunk that computes for long is
not a hang: its time has no bound known in advance, so nothing waits on it with a timeout.)

**A Dask cluster** (:class:`attnxai.experiment.cluster.DaskWorkers`, ``scheduler=...``) is
someone else's: the run connects a client, ships the model through a worker plugin, submits the
chunks, and on the way out cancels what is left and closes its client; the workers stay for the
next run. A worker lost during a run costs only its running chunks, which the scheduler runs
again elsewhere.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from .. import budget
from ..errors import WorkerLost
from ..threads import single_threaded
from . import transport
from .transport import ModelBundle

__all__ = ["InProcess", "LocalPool", "WORKER_BYTES", "Workers", "call"]

#: The memory of one local worker process, about: its largest resident size measured during
#: `lime-experiment --profile quick --jobs 2` was 0.50 GB (Python, torch, attnxai, the model).
WORKER_BYTES = 512 << 20


def call(fn: Callable[[Any], Any], chunk: Any) -> Any:
    """Run one task (in whatever process computes it): one torch and one BLAS thread."""
    with single_threaded():
        return fn(chunk)


class Workers(ABC):
    """The processes that compute a run's chunks (module docstring)."""

    #: How many chunks run at once.
    n: int = 1

    def __init__(self) -> None:
        self._bundles: dict[tuple[str, str], ModelBundle] = {}
        self.device = "cpu"

    def install(self, bundle: ModelBundle, device: str = "cpu") -> None:
        """Have ``bundle``'s model installed in every process, on ``device`` (before the next
        chunks run; once per process)."""
        self._bundles[bundle.ref.key] = bundle
        self.device = device

    def prepare(self) -> None:
        """Ship what was installed now (else before the first chunk)."""

    @abstractmethod
    def map_unordered(self, fn: Callable[[Any], Any], chunks: Sequence[Any]) -> Iterator[Any]:
        """``fn(chunk)`` for every chunk, yielded as they finish."""

    def close(self, *, abort: bool = False) -> None:
        """Release the processes (``abort``: stop running chunks now)."""

    def describe(self) -> str:
        return type(self).__name__

    def __enter__(self) -> "Workers":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self.close(abort=exc_type is not None)


class InProcess(Workers):
    """Chunks computed one after the other in this process (``jobs=1``)."""

    n = 1

    def prepare(self) -> None:
        for bundle in self._bundles.values():
            transport.install(bundle, self.device, origin="in-process")

    def map_unordered(self, fn, chunks):
        self.prepare()
        for chunk in chunks:
            yield call(fn, chunk)

    def describe(self) -> str:
        return "this process"


# ---------------------------------------------------------------- local processes
_INIT_ERROR: BaseException | None = None


def _die_with(parent: int) -> None:
    """Exit when ``parent`` does: the kernel's parent-death signal (Linux), a watchdog thread
    (everywhere)."""
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)          # PR_SET_PDEATHSIG
        except (AttributeError, OSError):
            pass
    if os.getppid() != parent:                                   # already gone
        os._exit(1)

    def watch() -> None:
        while True:
            time.sleep(0.5)
            if os.getppid() != parent:
                os._exit(1)

    threading.Thread(target=watch, name="attnxai-parent-watch", daemon=True).start()


def _init_worker(parent: int, bundles: list[ModelBundle], device: str) -> None:
    """A local worker's start-up: die with the parent, one thread, install the models."""
    global _INIT_ERROR
    _die_with(parent)
    signal.signal(signal.SIGINT, signal.SIG_IGN)   # Ctrl-C is the parent's: it kills us
    try:
        import torch
        from threadpoolctl import threadpool_limits

        torch.set_num_threads(1)
        globals()["_LIMITS"] = threadpool_limits(limits=1)
        for bundle in bundles:
            transport.install(bundle, device, origin="shipped")
    except BaseException as exc:  # noqa: BLE001 - reported by every task of this worker
        _INIT_ERROR = exc


def _pool_call(fn: Callable[[Any], Any], chunk: Any) -> Any:
    if _INIT_ERROR is not None:
        raise _INIT_ERROR
    return call(fn, chunk)


class LocalPool(Workers):
    """``jobs`` worker processes on this machine (module docstring)."""

    def __init__(self, jobs: int):
        super().__init__()
        self.n = int(jobs)
        self.check_memory(self.n)
        self._executor = None
        self._shipped: set[tuple[str, str]] = set()

    @staticmethod
    def check_memory(jobs: int) -> None:
        """Refuse ``jobs`` processes whose memory would exceed the budget
        (:class:`~attnxai.errors.OverBudget`), before any starts."""
        cores = os.cpu_count() or 1
        budget.check(jobs * WORKER_BYTES, f"{jobs} local worker processes (about "
                     f"{WORKER_BYTES >> 20} MiB each)",
                     f"use fewer --jobs (this machine has {cores} core(s): each process computes "
                     "with one thread, so more processes than cores are not faster)")

    def describe(self) -> str:
        return f"{self.n} local processes"

    def _start(self):
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        if self._executor is not None and set(self._bundles) <= self._shipped:
            return self._executor
        if self._executor is not None:          # a model was added after the start: restart
            self.close()
        self._shipped = set(self._bundles)
        self._executor = ProcessPoolExecutor(
            max_workers=self.n, mp_context=multiprocessing.get_context("spawn"),
            initializer=_init_worker,
            initargs=(os.getpid(), list(self._bundles.values()), self.device))
        return self._executor

    def map_unordered(self, fn, chunks):
        from concurrent.futures import FIRST_COMPLETED, wait
        from concurrent.futures.process import BrokenProcessPool

        if not chunks:
            return
        executor = self._start()
        pending = {executor.submit(_pool_call, fn, c) for c in chunks}
        try:
            while pending:
                finished, pending = wait(pending, return_when=FIRST_COMPLETED)
                for fut in finished:
                    yield fut.result()
        except BrokenProcessPool:
            codes = self._exit_codes()
            self.close(abort=True)
            raise WorkerLost(
                "a local worker process died during the run"
                + (f" (exit codes {codes}; negative: killed by that signal)" if codes else "")
                + ": the parts finished so far are kept; rerun the same command to resume "
                "(a worker killed again and again on the same chunk: try fewer --jobs, or check "
                "the memory)") from None
        finally:
            for fut in pending:
                fut.cancel()

    def _exit_codes(self) -> list[int]:
        procs = getattr(self._executor, "_processes", None) or {}
        return sorted(p.exitcode for p in list(procs.values()) if p.exitcode not in (None, 0))

    def pids(self) -> list[int]:
        """The worker processes' ids (empty before the first chunk)."""
        procs = getattr(self._executor, "_processes", None) or {}
        return [p.pid for p in list(procs.values()) if p.pid is not None]

    def close(self, *, abort: bool = False) -> None:
        executor, self._executor = self._executor, None
        if executor is None:
            return
        if abort:                                   # do not wait for running chunks
            for p in list((getattr(executor, "_processes", None) or {}).values()):
                try:
                    p.kill()
                except (OSError, AttributeError):
                    pass
        executor.shutdown(wait=True, cancel_futures=True)
