"""The LIME corpus study on one process, on two local processes, and on a Dask cluster of two
single-threaded workers started with Dask's own commands (the book's page "Run it on a cluster").

    flock /work/locks/heavy.lock .venv/bin/python benchmarks/bench_cluster.py \\
        --profile paper --reviews 60 --out book/data/cluster_benchmark.csv

Every mode runs the same ``python -m attnxai lime-experiment`` command (by default 60 reviews x
5 repeats x both ``bow`` = 600 LIME explanations of 5,000 samples, no approximation, 5 reviews
per task) into a fresh folder; ``--repeat`` rounds run the three modes in turn. The wall time is
the whole command's (interpreter start, model load and shipping, worker start for ``--jobs``,
the work, the summary). The cluster (``dask scheduler`` + ``dask worker --nworkers 2 --nthreads
1``) is started once, before the first round, as a real one would be; its start-up time is
reported on its own, and its first run includes the workers' first import of attnxai and
compilation of the numba loops (a local ``--jobs`` run pays its process start every time).
The results of every run must be bit-identical (:func:`attnxai.store.results.content_digest`):
the script fails otherwise.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
               PYTHONPATH=os.pathsep.join([str(ROOT / "src"), env.get("PYTHONPATH", "")]))
    return env


def _git_commit() -> str:
    try:
        out = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--",
                                "src", "benchmarks"], capture_output=True, text=True).stdout
        return out + ("+uncommitted" if dirty.strip() else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def _lime_command(args, out: Path, where: list[str]) -> list[str]:
    return [sys.executable, "-m", "attnxai", "lime-experiment", "--profile", args.profile,
            "--reviews", str(args.reviews), "--repeats", str(args.repeats), "--bow", "both",
            "--num-samples", str(args.num_samples), "--approximations", "none",
            "--chunk", str(args.chunk), "--no-progress", "--out", str(out), *where]


def _timed(cmd: list[str]) -> float:
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=_env(), capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stderr[-3000:]}")
    return seconds


def _start_cluster(folder: Path, workers: int) -> tuple[list[subprocess.Popen], str, float]:
    """``dask scheduler`` and ``dask worker`` as the book's page shows them; returns the
    processes, the scheduler's address and the seconds until every worker had joined."""
    from distributed import Client

    sched_file = folder / "scheduler.json"
    t0 = time.perf_counter()
    procs = [subprocess.Popen([str(BIN / "dask"), "scheduler", "--host", "127.0.0.1",
                               "--port", "0", "--no-dashboard", "--scheduler-file",
                               str(sched_file)], env=_env(), stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)]
    while not sched_file.is_file():
        time.sleep(0.1)
        if time.perf_counter() - t0 > 120:
            raise SystemExit("the scheduler did not start in 120 s")
    address = json.loads(sched_file.read_text())["address"]
    procs.append(subprocess.Popen([str(BIN / "dask"), "worker", address, "--nworkers",
                                   str(workers), "--nthreads", "1", "--no-dashboard"],
                                  env=_env(), stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL))
    with Client(address, set_as_default=False) as client:
        client.wait_for_workers(workers, timeout=180)
    return procs, address, time.perf_counter() - t0


def _stop(procs: list[subprocess.Popen]) -> None:
    for p in reversed(procs):
        p.terminate()
    for p in reversed(procs):
        try:
            p.wait(30)
        except subprocess.TimeoutExpired:
            p.kill()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--profile", default="paper")
    ap.add_argument("--reviews", type=int, default=60)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--num-samples", type=int, default=5000)
    ap.add_argument("--chunk", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=2, help="rounds of the three modes (default 2)")
    ap.add_argument("--out", default=None, help="CSV to write (with a header of comments)")
    args = ap.parse_args(argv)

    from attnxai.store import results as store

    load_before = os.getloadavg()
    work = Path(tempfile.mkdtemp(prefix="bench-cluster-"))
    rows, digests = [], set()
    modes = {"--jobs 1": ["--jobs", "1"], "--jobs 2": ["--jobs", "2"],
             "--scheduler (2 dask workers x 1 thread)": None}
    try:
        procs, address, startup = _start_cluster(work, 2)
        modes["--scheduler (2 dask workers x 1 thread)"] = ["--scheduler", address]
        try:
            for r in range(args.repeat):             # rounds: the modes in turn, so that a change
                for mode, where in modes.items():    # of the machine's load touches them alike
                    out = work / f"{mode.split()[0].strip('-')}{mode.split()[1]}-{r}"
                    seconds = _timed(_lime_command(args, out, where))
                    run = store.runs(out)[-1]
                    digests.add(store.content_digest(out))
                    rows.append({"mode": mode, "round": r + 1,
                                 "wall_seconds": round(seconds, 2),
                                 "run_seconds": run["seconds"], "rows": run["computed"],
                                 "explanations": run["computed"] * args.repeats,
                                 "explanations_per_second": round(
                                     run["computed"] * args.repeats / seconds, 2),
                                 "load_1min_after": round(os.getloadavg()[0], 2)})
                    print(rows[-1], flush=True)
        finally:
            _stop(procs)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if len(digests) != 1:
        raise SystemExit(f"the modes gave different results: {len(digests)} digests")
    best = {m: min(r["wall_seconds"] for r in rows if r["mode"] == m)
            for m in dict.fromkeys(r["mode"] for r in rows)}
    base = best["--jobs 1"]
    for r in rows:
        r["speedup_vs_jobs1_best"] = round(base / best[r["mode"]], 2)
    load_after = os.getloadavg()
    header = [
        f"bench_cluster.py: {' '.join(sys.argv[1:]) or '(defaults)'}",
        f"commit {_git_commit()}; {os.cpu_count()} cores; load average before "
        f"{load_before[0]:.2f}, after {load_after[0]:.2f} (1 min)",
        f"workload: profile {args.profile}, {args.reviews} reviews x {args.repeats} repeats x "
        f"bow both, {args.num_samples} samples, no approximation, {args.chunk} reviews per task",
        f"dask cluster start-up (scheduler + 2 workers joined): {startup:.1f} s, not in the "
        "wall times",
        f"every run bit-identical: content digest {digests.pop()[:16]}...",
    ]
    print("\n".join(header))
    for m, b in best.items():
        print(f"{m}: best {b:.1f} s, speed-up vs --jobs 1: {base / b:.2f}")
    if args.out:
        with open(args.out, "w", newline="") as fh:
            for line in header:
                fh.write(f"# {line}\n")
            w = csv.DictWriter(fh, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
