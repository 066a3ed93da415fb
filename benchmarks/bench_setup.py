"""How long `make setup` takes with uv against pip (the Makefile's ``INSTALLER``), measured in the
same run, from an empty venv, with cold and warm package caches.

    python3 benchmarks/bench_setup.py [--rounds 1] [--out book/data/setup_benchmark.csv]

Each round runs the Makefile's own set-up (``make setup``: the venv, the installer, the pinned
versions of constraints.txt, the Jupyter kernel) in a fresh copy of the files it needs, four
times: pip and uv each with an empty cache (``PIP_CACHE_DIR``, ``UV_CACHE_DIR``: cold), then
each again in another fresh copy with the cache its first run filled (warm); the installers
alternate which goes first from one round to the next, so that a change of the machine's load
falls on both. It reports each run's wall time, the CPU time of its processes, the load
average before and after, and whether the venv holds exactly the versions of constraints.txt
(``pip freeze``, less pip and uv themselves, ``+cpu`` dropped as constraints.txt drops it).
Whether the set-up writes bytecode after uv's install (the modules the book imports, imported
once) follows ``PYTHONDONTWRITEBYTECODE`` as in the Makefile (recorded in the header). Not a
test: a run takes minutes and downloads from the package index.
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import os
import platform
import resource
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: What `make setup` reads: the Makefile, the package's metadata and source, the pins.
NEEDED = ("Makefile", "pyproject.toml", "constraints.txt", "README.md", "LICENSE", "src")
INSTALLERS = ("pip", "uv")


def copy_tree(dest: Path) -> Path:
    dest.mkdir(parents=True)
    for name in NEEDED:
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, dest / name, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        else:
            shutil.copy2(src, dest / name)
    return dest


def pinned() -> set[str]:
    lines = (ROOT / "constraints.txt").read_text().splitlines()
    return {ln.strip().lower() for ln in lines if ln.strip() and not ln.startswith("#")}


def installed(venv: Path) -> set[str]:
    """``name==version`` of the venv's packages (lower case, ``+cpu`` dropped), less pip and the
    packages pip freeze leaves out (setuptools, wheel) and the editable attnxai."""
    out = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "freeze", "--exclude-editable"],
                         capture_output=True, text=True, check=True).stdout
    return {ln.strip().lower().replace("+cpu", "") for ln in out.splitlines() if "==" in ln}


def setup(folder: Path, installer: str, caches: Path) -> dict:
    """``make setup`` in ``folder`` with ``installer`` and the caches under ``caches``."""
    env = {**os.environ, "INSTALLER": installer, "PIP_CACHE_DIR": str(caches / "pip"),
           "UV_CACHE_DIR": str(caches / "uv")}
    load = os.getloadavg()[0]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    run = subprocess.run(["make", "setup"], cwd=folder, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if run.returncode != 0:
        raise SystemExit(f"make setup failed with {installer}:\n{(run.stdout + run.stderr)[-4000:]}")
    said = [ln for ln in run.stdout.splitlines() if ln.startswith("set-up with")]
    if not said or not said[0].startswith(f"set-up with {installer}"):
        raise SystemExit(f"asked for {installer}, the Makefile said {said}")
    got, want = installed(folder / ".venv"), pinned()
    uv_pin = {p for p in want if p.startswith("uv==")}
    other = (got - uv_pin) ^ (want - uv_pin)          # the pins less uv, which only uv's venv holds
    return {"installer": installer, "wall_s": round(wall, 1),
            "cpu_s": round((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), 1),
            "load_before": round(load, 2), "load_after": round(os.getloadavg()[0], 2),
            "packages": len(got - uv_pin),
            "exact_pins": not other and (installer != "uv" or uv_pin <= got),
            "not_as_pinned": ";".join(sorted(other))}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--out", type=Path, default=None, help="CSV to write (default: print only)")
    ap.add_argument("--installers", default="pip,uv", help="comma-separated, among pip and uv")
    ap.add_argument("--work", type=Path, default=None, help="scratch folder (default: a temporary one)")
    args = ap.parse_args()
    if args.rounds < 1:
        ap.error("--rounds must be at least 1")
    installers = tuple(args.installers.split(","))
    if not installers or not set(installers) <= set(INSTALLERS) or len(set(installers)) != len(installers):
        ap.error(f"--installers: distinct names among {INSTALLERS}, got {args.installers!r}")
    rows = []
    work = Path(tempfile.mkdtemp(prefix="bench_setup_", dir=args.work))
    try:
        for r in range(args.rounds):
            order = installers if r % 2 == 0 else installers[::-1]
            caches = {i: work / f"r{r}-{i}-caches" for i in order}
            for state in ("cold", "warm"):
                for inst in order:
                    folder = copy_tree(work / f"r{r}-{state}-{inst}")
                    row = {"round": r, "cache": state, **setup(folder, inst, caches[inst])}
                    print(row, flush=True)
                    rows.append(row)
                    shutil.rmtree(folder)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for state in ("cold", "warm"):
        for r in range(args.rounds):
            by = {x["installer"]: x for x in rows if x["round"] == r and x["cache"] == state}
            if len(by) < 2:
                continue
            print(f"round {r}, {state} caches: uv / pip wall {by['uv']['wall_s'] / by['pip']['wall_s']:.2f}, "
                  f"CPU {by['uv']['cpu_s'] / by['pip']['cpu_s']:.2f}")
    if args.out:
        dont = os.environ.get("PYTHONDONTWRITEBYTECODE", "")
        commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                                capture_output=True, text=True).stdout.strip()
        with open(args.out, "w", newline="") as f:
            f.write(f"# command: python3 benchmarks/bench_setup.py --rounds {args.rounds} "
                    f"--installers {args.installers} --out {args.out}\n"
                    f"# code: {commit}; {platform.processor() or platform.machine()}, {os.cpu_count()} cores; "
                    f"PYTHONDONTWRITEBYTECODE={dont!r} ("
                    + ("set: after uv, the modules the book imports are imported once to write their "
                       "bytecode (Makefile, PRECOMPILE_*); pip compiles all at install" if dont else
                       "unset: uv leaves bytecode to Python's first import")
                    + f"); written "
                    f"{dt.datetime.now(dt.timezone.utc).isoformat(timespec='seconds')}\n")
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)


if __name__ == "__main__":
    main()
