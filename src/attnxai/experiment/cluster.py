"""Running a study's chunks on a Dask cluster (``--scheduler``; ``pip install "attnxai[dask]"``).

The cluster is started with Dask's own commands (``dask scheduler``, ``dask worker ADDRESS
--nthreads 1``; the book's page "Run it on a cluster"). :class:`DaskWorkers` connects a client
to it and, before anything runs:

* reads the scheduler's address (a scheduler file is read here, once: a missing file, a folder or
  a FIFO in its place is refused at once instead of waited on), refuses an address that is not a
  Dask one (``http://`` is a dashboard's), asks the scheduler who it is and waits
  ``connect_seconds`` at most for the answer (Dask's client itself would wait without end for a
  listener that accepts and never answers), connects within ``connect_seconds`` and, on any
  failure, closes the half-made client at once (Dask's own clean-up would wait twice the connect
  timeout and print a traceback);
* waits (a minute at most) for a first worker and checks that every worker runs the same code:
  the same attnxai source (a sha256 of the package's files), the same torch, numpy, scipy and
  numba, so that the numbers are the ones a local run gives;
* ships the study's model once to every worker through a worker plugin (:class:`ModelPlugin`:
  the checkpoint's bytes, checked on arrival against the manifest's sha256s, see
  :mod:`~attnxai.experiment.transport`). The scheduler keeps the plugin (with the model's bytes)
  and gives it to workers that join or are restarted later, which make the same code check
  before they take the model; a cluster that already has the model is not sent it again.

The chunks are then submitted as tasks and their rows come back to the client, which alone
writes the results folder. A worker that dies costs only its running chunks: the scheduler runs
them again on another worker (a chunk that kills workers again and again ends the run with the
scheduler's ``KilledWorker``). On the way out (the end, an error, Ctrl-C, SIGTERM through the
command line) the client cancels what is left and closes; the cluster keeps running.

**Trust.** A Dask client and its workers exchange pickles (the tasks, their results, the model's
plugin), and unpickling runs code: connect only to a scheduler and workers you control, on a
network you trust (the book's page "Run it on a cluster" says how to secure one with TLS).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import uuid
from collections.abc import Callable, Sequence
from functools import lru_cache
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from distributed import Client, WorkerPlugin, as_completed

from ..errors import ClusterError
from . import transport
from .transport import ModelBundle
from .workers import Workers, call

__all__ = ["DaskWorkers", "ModelPlugin", "code_fingerprint", "versions"]

#: Packages whose versions change the numbers: the workers must have the client's.
PACKAGES = ("torch", "numpy", "scipy", "numba")
CONNECT_SECONDS = 30
WORKER_WAIT_SECONDS = 60
#: How long a client that failed to start may take to close.
CLOSE_SECONDS = 2
#: How long a call to every worker (the code check, whether a model is installed) may take.
CALL_SECONDS = 120
#: Dask's address schemes (``distributed.comm``); an address without one is ``tcp://``.
SCHEMES = ("tcp", "tls", "inproc", "ucx", "ws", "wss")


def scheduler_address(scheduler: str) -> str:
    """The scheduler's address from ``--scheduler``: an address (``tcp://HOST:8786``, ``HOST:8786``)
    or a scheduler file (JSON with an ``address``, written by ``dask scheduler --scheduler-file``),
    read once here. :class:`~attnxai.errors.ClusterError` for what cannot be one, at once."""
    from ..store.files import read_json

    text = scheduler.strip()
    m = re.fullmatch(r"([A-Za-z][A-Za-z0-9+.-]*)://(.*)", text)
    if m is None and (text.endswith(".json") or "/" in text or Path(text).exists()):
        try:
            info = read_json(Path(text).expanduser(), 1 << 20)
            address = info["address"]
        except FileNotFoundError:
            raise ClusterError(f"no scheduler file at {text}: start the scheduler with `dask "
                               f"scheduler --scheduler-file {text}` first, or give its address "
                               "(--scheduler tcp://HOST:8786)") from None
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ClusterError(f"{text} is not a Dask scheduler file ({exc}): give the file "
                               "`dask scheduler --scheduler-file` wrote, or the scheduler's "
                               "address") from None
        if not isinstance(address, str):
            raise ClusterError(f"{text} holds no scheduler address")
        return scheduler_address(address)
    if m is not None and m.group(1).lower() not in SCHEMES:
        hint = (" (an http address is a web page's, e.g. the dashboard on port 8787: the "
                "scheduler listens on tcp://HOST:8786)" if m.group(1).lower().startswith("http")
                else "")
        raise ClusterError(f"{text} is not a Dask scheduler address: its scheme must be one of "
                           f"{', '.join(SCHEMES)}{hint}")
    if not re.fullmatch(r"(?:[A-Za-z]+://)?\[?[\w.:-]+\]?(?::\d+)?/?", text):
        raise ClusterError(f"{text!r} is not a Dask scheduler address (e.g. tcp://HOST:8786) nor "
                           "a scheduler file")
    return text


def _probe(address: str, seconds: float) -> None:
    """Ask the scheduler at ``address`` who it is and wait ``seconds`` at most for the answer
    (in a thread of its own, with its own event loop): Dask's client waits without end for a
    listener that accepts the connection and never answers. :class:`ClusterError` if none
    comes."""
    import asyncio
    import threading

    from distributed.comm import connect

    failure: list[BaseException] = []

    async def ask() -> None:
        comm = await connect(address, timeout=seconds)
        try:
            await comm.write({"op": "identity", "reply": True})
            await comm.read()
        finally:
            comm.abort()

    def probe() -> None:
        try:
            asyncio.run(asyncio.wait_for(ask(), seconds))
        except BaseException as exc:  # noqa: BLE001 - reported by the caller, in one line
            failure.append(exc)

    thread = threading.Thread(target=probe, name="attnxai-scheduler-probe", daemon=True)
    thread.start()
    thread.join(seconds + CLOSE_SECONDS)
    if thread.is_alive() or failure:
        why = ("no answer" if thread.is_alive() or isinstance(failure[0], TimeoutError)
               else f"{type(failure[0]).__name__}: {str(failure[0])[:200]}")
        raise ClusterError(f"cannot reach the Dask scheduler at {address} within {seconds:g} s "
                           f"({why}): start one with `dask scheduler` and pass its address, "
                           "e.g. --scheduler tcp://HOST:8786")


class _Client(Client):
    """Dask's client, closed at once when it fails to start: Dask's ``__del__`` would close it
    later, waiting twice the connect timeout and printing a traceback."""

    def __init__(self, *args: Any, **kwargs: Any):
        try:
            super().__init__(*args, **kwargs)
        except BaseException:
            with contextlib.suppress(Exception):
                self.close(timeout=CLOSE_SECONDS)
            self.status = "closed"
            raise


@lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """sha256 of the attnxai package's Python files (names and contents): the same code or
    not."""
    root = Path(__file__).resolve().parents[1]
    h = hashlib.sha256()
    for f in sorted(root.rglob("*.py")):
        h.update(f.relative_to(root).as_posix().encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()


def versions() -> dict[str, str]:
    """What must match between the client and the workers (run on each worker)."""
    out = {"attnxai code": code_fingerprint()[:16]}
    for p in PACKAGES:
        try:
            out[p] = version(p)
        except PackageNotFoundError:
            out[p] = "missing"
    return out


def _has_model(key: tuple[str, str], device: str) -> bool:
    return any((m["digest"], m["dtype"]) == tuple(key) and m["device"] == device
               for m in transport.installed())


def _scheduler_has_plugin(name: str, dask_scheduler=None) -> bool:
    return name in dask_scheduler.worker_plugins


class ModelPlugin(WorkerPlugin):
    """Installs a shipped model in every worker (those that join later too), after checking
    that the worker runs the client's code and packages (a worker that joins during a run was
    not checked when the run started): a worker that does not gets no model, so its tasks fail
    instead of computing other numbers."""

    idempotent = False

    def __init__(self, bundle: ModelBundle, device: str = "cpu"):
        self.bundle, self.device = bundle, device
        self.ref = bundle.ref
        self.expected = versions()

    def setup(self, worker: Any) -> None:
        found = versions()
        if found != self.expected:
            differ = {k: (v, self.expected.get(k)) for k, v in found.items()
                      if v != self.expected.get(k)}
            raise RuntimeError(f"this worker runs other code than the client ({differ}): it "
                               f"gets no model ({self.ref.name})")
        transport.install(self.bundle, self.device, origin="shipped")
        self.bundle = None                       # the worker keeps the model, not the bytes

    def teardown(self, worker: Any) -> None:
        transport.uninstall(self.ref)


class DaskWorkers(Workers):
    """The workers of a Dask cluster, reached through its scheduler (module docstring)."""

    def __init__(self, scheduler: str, *, connect_seconds: float = CONNECT_SECONDS,
                 wait_seconds: float = WORKER_WAIT_SECONDS):
        super().__init__()
        self.address = scheduler_address(scheduler)
        _probe(self.address, connect_seconds)            # an answer, or refused in time
        try:
            self.client = _Client(self.address, timeout=f"{connect_seconds}s",
                                  set_as_default=False)
        except Exception as exc:  # noqa: BLE001 - whatever answered, it is not a usable scheduler
            raise ClusterError(f"cannot reach the Dask scheduler at {self.address} within "
                               f"{connect_seconds:g} s ({type(exc).__name__}: {str(exc)[:200]}): "
                               "start one with `dask scheduler` and pass its address, e.g. "
                               "--scheduler tcp://HOST:8786") from None
        try:
            try:
                self.client.wait_for_workers(1, timeout=wait_seconds)
            except TimeoutError:
                raise ClusterError(f"no Dask worker joined the scheduler at {scheduler} within "
                                   f"{wait_seconds:.0f} s: start some with `dask worker "
                                   f"{scheduler} --nthreads 1`") from None
            self._check_workers()
        except BaseException:
            self.client.close()
            raise
        self._shipped: set[tuple[str, str, str]] = set()

    def describe(self) -> str:
        return f"Dask cluster {self.client.scheduler.address}"

    def _timed(self, what: str, seconds: float, method: Callable, *args: Any) -> Any:
        """``method(*args)`` of the client, given at most ``seconds`` (a cluster that stops
        answering is reported, not waited on forever)."""
        try:
            return method(*args, callback_timeout=seconds)
        except TimeoutError:
            raise ClusterError(f"the Dask cluster at {self.address} did not answer within "
                               f"{seconds:g} s ({what}): check that its scheduler and workers "
                               "are alive (its dashboard shows them)") from None

    def _check_workers(self) -> None:
        try:
            found = self._timed("checking the workers' code", CALL_SECONDS, self.client.run,
                                versions)
        except (ImportError, AttributeError) as exc:
            raise ClusterError(f"the Dask workers cannot run attnxai ({type(exc).__name__}: "
                               f"{exc}): install the same attnxai on every worker machine (pip "
                               "install 'attnxai[dask]' from the same commit)") from None
        mine = versions()
        bad = {w: {k: (v, mine.get(k)) for k, v in got.items() if v != mine.get(k)}
               for w, got in found.items()}
        bad = {w: d for w, d in bad.items() if d}
        if bad:
            shown = "; ".join(f"{w}: " + ", ".join(f"{k} {v[0]} (here {v[1]})"
                                                   for k, v in d.items())
                              for w, d in list(bad.items())[:3])
            raise ClusterError(f"{len(bad)} Dask worker(s) run other code than this client "
                               f"({shown}): their numbers would not be this run's. Install the "
                               "same attnxai commit and packages there")

    def prepare(self) -> None:
        for bundle in self._bundles.values():
            key = (*bundle.ref.key, self.device)
            if key in self._shipped:
                continue
            name = f"attnxai-model-{bundle.ref.digest[:16]}-{bundle.ref.dtype}-{self.device}"
            have = self._timed("asking the workers for the model", CALL_SECONDS,
                               self.client.run, _has_model, bundle.ref.key, self.device)
            known = self._timed("asking the scheduler for the model", CALL_SECONDS,
                                self.client.run_on_scheduler, _scheduler_has_plugin, name)
            if not (known and have and all(have.values())):
                try:
                    self.client.register_plugin(ModelPlugin(bundle, self.device), name=name)
                except BaseException:
                    try:                 # else every worker that joins later fails the same way
                        self.client.unregister_worker_plugin(name)
                    except Exception:  # noqa: BLE001 - the first error is the one to report
                        pass
                    raise
            self._shipped.add(key)

    def map_unordered(self, fn: Callable[[Any], Any], chunks: Sequence[Any]):
        if not chunks:
            return
        self.prepare()
        run = uuid.uuid4().hex[:8]
        futures = [self.client.submit(call, fn, c, key=f"attnxai-{run}-{i:05d}", pure=False)
                   for i, c in enumerate(chunks)]
        try:
            for fut in as_completed(futures, loop=self.client.loop):
                result = fut.result()
                fut.release()
                yield result
        finally:
            left = [f for f in futures if not f.done()]
            if left:
                self.client.cancel(left)

    def close(self, *, abort: bool = False) -> None:
        client, self.client = self.client, None
        if client is not None:
            client.close()
