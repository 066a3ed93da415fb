"""The runner's worker processes against --jobs 1 (issue 14; issue 11 for kill -9).

Local processes (--jobs 2): killed with their run by kill -9 (the command in a process of its
own), and the folder, whose first rows those workers computed, then resumed to the bits of
--jobs 1. A Dask cluster (a LocalCluster of 2 worker processes with 1 thread each, shared by
this module): --scheduler gives the bits of --jobs 1, the model reaches the workers as verified
bytes, a worker killed mid-run loses nothing, SIGTERM to the command stops its client and leaves
nothing running, and the folder resumes to the same bits, and closing the cluster leaves no
process behind.

What these tests spend is process start-up (torch, the package, IMDb, a worker's first row),
not the rows (a few hundredths of a second each): one reference run with --jobs 1 serves them
all, and only what must be a process of its own is one (the command killed by kill -9, its
workers, the cluster's workers)."""

from __future__ import annotations

import functools
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from attnxai import experiment as X
from attnxai.cli import main as cli_main
from attnxai.experiment import transport
from attnxai.store import results as store
from attnxai.experiment.runner import run
from attnxai.experiment.transport import ModelBundle

try:
    import distributed
    from distributed import Client, LocalCluster
except ImportError:                                  # the set-up installs it: say so, don't skip
    distributed = None

ROOT = Path(__file__).resolve().parents[2]
# 4 reviews x both bow, one review per chunk: 4 tasks of a few hundred ms each.
STUDY = dict(profile="quick", reviews=4, repeats=2, num_samples=1500, bow="both", chunk=1,
             approximations=["paper"], progress=False)
CLI = ["lime-experiment", "--profile", "quick", "--reviews", "4", "--repeats", "2",
       "--num-samples", "1500", "--bow", "both", "--chunk", "1", "--approximations", "paper",
       "--no-progress"]


def _children() -> set[int]:
    import psutil

    return {p.pid for p in psutil.Process().children(recursive=True)}


#: What a worker of the cluster imports to take the model and compute a chunk: preloaded once by
#: multiprocessing's fork server, which then forks the workers (and the one the nanny restarts)
#: ready, instead of each new worker importing them again (several seconds of CPU each).
WORKER_MODULES = ("distributed", "attnxai.experiment.cluster", "attnxai.experiment.lime_corpus",
                  "scipy.stats")


@pytest.fixture(scope="module")
def cluster():
    if distributed is None:
        pytest.fail("distributed is not installed: `make setup` installs it (pip install -e "
                    "'.[dask]')")
    import multiprocessing.forkserver

    import dask
    from distributed.utils import get_mp_context

    before = _children()
    with dask.config.set({"distributed.worker.multiprocessing-method": "forkserver"}):
        get_mp_context().set_forkserver_preload(list(WORKER_MODULES))
        c = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                         dashboard_address=None, silence_logs=50)
        c.before = before
        yield c
        c.close()
    stop_server = getattr(multiprocessing.forkserver._forkserver, "_stop", None)
    if stop_server is not None:                      # frees its memory; it restarts on demand
        stop_server()


@pytest.fixture(scope="module")
def client(cluster):
    with Client(cluster, set_as_default=False) as cl:
        yield cl


@pytest.fixture(scope="module")
def reference(quick_model, tmp_path_factory):
    """The study with --jobs 1 in this process."""
    out = tmp_path_factory.mktemp("cluster") / "jobs1"
    X.run_lime_corpus(out, jobs=1, **STUDY)
    return store.content_digest(out)


def _worker_pids(client) -> dict[str, int]:
    return client.run(os.getpid)


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"),
                                                         os.environ.get("PYTHONPATH", "")])}


GATE = "attnxai-test-gate"


def _hold(name: str) -> bool:
    """A task that waits for the test to open the gate (a Dask Event); False if it stays shut
    longer than a hung test would take (:data:`HANG_SECONDS`)."""
    from distributed import Event

    return Event(name).wait(HANG_SECONDS)


def _gated(inner, items):
    assert _hold(GATE), "the test never opened the gate"
    return inner(items)


class Gated(X.LimeCorpus):
    """The LIME study, whose chunks wait for the gate: a worker can be killed in a chunk."""

    def task(self):
        return functools.partial(_gated, super().task())


def _our_tasks(dask_scheduler=None) -> list[str]:
    return [str(k) for k in dask_scheduler.tasks if str(k).startswith("attnxai-")]


def _first_rows(out: Path) -> str:
    """The digest of the rows of the first 4 reviews (a stopped run of 12 went further)."""
    df = X.load_results(out)
    return store.content_digest(df[df["rank"] < 4])


#: How long a guard waits for a sign of life before it calls the run hung: long, because on a busy
#: two-core machine a fresh process takes minutes to import, load the model and compute a part
#: (in a fresh-clone CI run beside two other jobs, no part within 120 s); a run that works
#: passes as soon as the sign comes, so this only bounds how long a hang takes to fail.
HANG_SECONDS = 900


def _wait_while_running(proc: subprocess.Popen, ready, what: str,
                        seconds: float = HANG_SECONDS) -> None:
    """Poll ``ready()`` until it is true; fail with ``proc``'s error output if it ends first, or
    with ``what`` after ``seconds``."""
    deadline = time.monotonic() + seconds
    while not ready():
        assert proc.poll() is None, proc.communicate()[1].decode()[-2000:]
        assert time.monotonic() < deadline, f"{what} in {seconds:.0f} s"
        time.sleep(0.05)


# ---------------------------------------------------------------- local processes
def test_kill_9_of_a_jobs_2_run_kills_its_workers_and_the_folder_resumes_to_the_same_bits(
        reference, tmp_path):
    """Before (issue 11): four loky workers stayed alive for over eight minutes after kill -9.

    The rows the killed run's workers wrote stay in the folder: the resume skips them and
    computes the rest in this process (--jobs 1), and the first 4 reviews then have the bits of
    the reference, the rows of the local workers among them."""
    import psutil

    out = tmp_path / "killed"
    longer = [a if a != "4" else "100" for a in CLI]          # 100 reviews: still running
    proc = subprocess.Popen([sys.executable, "-m", "attnxai", *longer, "--jobs", "2", "--out",
                             str(out)], env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        _wait_while_running(proc, lambda: store.parts(out), "no part written")  # computing
        workers = psutil.Process(proc.pid).children(recursive=True)
        assert len([p for p in workers if "spawn_main" in " ".join(p.cmdline())]) == 2
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    _, alive = psutil.wait_procs(workers, timeout=10)
    assert not alive, f"still alive 10 s after kill -9 of their run: {alive}"
    assert len(store.parts(out)) < 100, "the run was over before it was killed"
    kept = X.load_results(out)
    # the first part to finish is one of the first two chunks (one review each, taken in order)
    assert (kept["rank"] < 4).sum() >= 2
    report = X.run_lime_corpus(out, jobs=1, **STUDY)          # resume the first 4 reviews
    assert report.skipped == len(kept)                        # none computed again
    assert report.computed == 8 - (kept["rank"] < 4).sum()
    assert _first_rows(out) == reference


# ---------------------------------------------------------------- a Dask cluster
def test_scheduler_gives_the_bits_of_jobs_1(cluster, client, reference, tmp_path, capsys):
    out = tmp_path / "dask"
    assert cli_main(CLI + ["--out", str(out), "--scheduler", cluster.scheduler_address]) == 0
    assert f"on Dask cluster {cluster.scheduler_address}" in capsys.readouterr().out
    assert store.content_digest(out) == reference
    assert len(X.load_results(out)) == 8
    # the model reached each worker as bytes, verified there, not read from the cache folder
    digest = store.runs(out)[-1]["model"]["manifest_sha256"]
    for worker, models in client.run(transport.installed).items():
        assert [(m["digest"], m["origin"]) for m in models] == [(digest, "shipped")], worker
    assert store.runs(out)[-1]["workers"] == f"Dask cluster {cluster.scheduler_address}"


def test_a_worker_killed_mid_run_loses_nothing(cluster, client, reference, tmp_path):
    from distributed import Event

    gate = Event(GATE, client=client)
    gate.clear()
    out, result = tmp_path / "killed", {}
    study = Gated(**{k: v for k, v in STUDY.items() if k != "progress"})

    def go():
        try:
            result["report"] = run(study, out, scheduler=cluster.scheduler_address,
                                   progress=False)
        except BaseException as exc:  # noqa: BLE001 - reported below
            result["error"] = exc

    pids = _worker_pids(client)
    runner = threading.Thread(target=go)
    runner.start()
    try:
        deadline = time.monotonic() + HANG_SECONDS
        while not all(client.processing().get(w) for w in pids):   # every worker has a chunk
            assert runner.is_alive(), result
            assert time.monotonic() < deadline, f"the chunks did not start in {HANG_SECONDS} s"
            time.sleep(0.05)
        victim = next(iter(pids))
        os.kill(pids[victim], signal.SIGKILL)          # in the middle of its chunk
        assert not store.parts(out)                    # nothing could finish: the gate is shut
    finally:
        gate.set()
        runner.join(180)
    assert not runner.is_alive() and "error" not in result, result
    assert result["report"].computed == 8
    assert store.content_digest(out) == reference
    client.wait_for_workers(2, timeout=HANG_SECONDS)  # the nanny restarted it; it got the model
    installed = client.run(transport.installed)
    assert all(m and m[0]["origin"] == "shipped" for m in installed.values()), installed


def test_stopping_the_client_leaves_nothing_running_and_the_folder_resumes(
        cluster, client, reference, tmp_path, capsys):
    """SIGTERM to the command (its own handler: the command runs in this process, whose module,
    model and IMDb are loaded already) while its chunks wait for busy workers."""
    from distributed import Event

    assert threading.current_thread() is threading.main_thread(), "signals reach the main thread"
    gate = Event(GATE, client=client)
    gate.clear()
    holds = [client.submit(_hold, GATE, workers=[w], pure=False, key=f"hold-{i}")
             for i, w in enumerate(_worker_pids(client))]   # every worker thread is busy
    out = tmp_path / "stopped"
    before, during, returned = _children(), [], threading.Event()

    def stop() -> None:                                     # once its chunks are waiting
        deadline = time.monotonic() + HANG_SECONDS
        while not client.run_on_scheduler(_our_tasks):
            if returned.is_set():
                return                                      # it ended without submitting
            if time.monotonic() > deadline:
                break                                       # hung: stop it all the same
            time.sleep(0.05)
        else:
            during.append(_children())
        os.kill(os.getpid(), signal.SIGTERM)

    def unexpected(signum, frame):       # cli_main's handler is not there: never end pytest
        raise AssertionError("SIGTERM reached the test's own handler, not the command's")

    outer = signal.signal(signal.SIGTERM, unexpected)
    stopper = threading.Thread(target=stop, daemon=True)
    try:
        stopper.start()
        code = cli_main(CLI + ["--out", str(out), "--scheduler", cluster.scheduler_address])
    finally:
        returned.set()
        stopper.join(HANG_SECONDS)
        signal.signal(signal.SIGTERM, outer)           # cli_main put back the one set above
        gate.set()
    err = capsys.readouterr().err
    assert during, f"no chunk submitted in {HANG_SECONDS} s: {err[-2000:]}"
    assert code == 130, err[-2000:]
    assert "stopped (rerun the same command to resume)" in err
    assert during[0] <= before                         # a cluster client starts no process
    deadline = time.monotonic() + HANG_SECONDS         # the scheduler forgot its tasks
    while client.run_on_scheduler(_our_tasks):
        assert time.monotonic() < deadline, "the stopped client's tasks are still there"
        time.sleep(0.1)
    client.gather(holds)
    del holds
    assert not store.parts(out)                        # nothing ran: the workers were held
    X.run_lime_corpus(out, scheduler=cluster.scheduler_address, **STUDY)     # resume
    assert store.content_digest(out) == reference                             # the same bits


def test_what_the_workers_cannot_do_is_refused_before_anything_is_written(
        cluster, client, tmp_path, monkeypatch):
    from attnxai.experiment import cluster as C

    out = tmp_path / "never"
    with pytest.raises(ValueError, match="'cuda' is not available"):      # checked by the workers
        X.run_lime_corpus(out, scheduler=cluster.scheduler_address, device="cuda", **STUDY)
    assert not out.exists()
    assert not [n for n in client.run_on_scheduler(
        lambda dask_scheduler: list(dask_scheduler.worker_plugins)) if "cuda" in n]
    plugin = C.ModelPlugin(ModelBundle.read(X.LimeCorpus(
        **{k: v for k, v in STUDY.items() if k != "progress"}).pre))
    monkeypatch.setattr(C, "code_fingerprint", lambda: "0" * 64)        # this client's code
    with pytest.raises(RuntimeError, match="2 Dask worker.* run other code than this client"):
        X.run_lime_corpus(out, scheduler=cluster.scheduler_address, **STUDY)
    assert not out.exists()
    with pytest.raises(RuntimeError, match="runs other code than the client.*gets no model"):
        plugin.setup(None)                       # a worker joining later with other code
    with pytest.raises(RuntimeError, match="cannot reach the Dask scheduler at tcp://127.0.0.1:9"):
        C.DaskWorkers("tcp://127.0.0.1:9", connect_seconds=1)


def test_closing_the_cluster_leaves_no_process(cluster, client):
    import psutil

    workers = [psutil.Process(p) for p in _worker_pids(client).values()]
    # the process that started them: multiprocessing's fork server, which (like its resource
    # tracker) lives as long as this one; a worker forked from it has its command line
    server = {w.ppid() for w in workers} - {os.getpid()}
    workers += [c for w in workers for c in w.children(recursive=True)]
    client.close()
    cluster.close()
    _, alive = psutil.wait_procs(workers, timeout=20)
    assert not alive
    left = []
    for pid in _children() - cluster.before - server:
        try:
            p = psutil.Process(pid)
            if p.status() != psutil.STATUS_ZOMBIE and "resource_tracker" not in " ".join(
                    p.cmdline()):              # multiprocessing's own, lives as long as pytest
                left.append((pid, p.cmdline()))
        except psutil.NoSuchProcess:
            pass
    assert not left
