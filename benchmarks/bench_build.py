"""How long the book's build takes with its chapters executed in parallel
(``book/_ext/attnxai_execute.py``) against one at a time (myst-nb alone, ``ATTNXAI_BUILD_JOBS=1``),
measured in the same run.

    .venv/bin/python benchmarks/bench_build.py [--profile quick] [--rounds 1] [--chapters 01,02]
        [--out book/data/build_benchmark.csv]

Each round builds the book (or the chapters named, with the front matter's first page) from an
empty output folder twice, serial then parallel (then the other order in the next round, so
that a change of the machine's load falls on both), with ``jupyter-book build -W --keep-going``
(without ``-W`` for a part of the book, whose links to the chapters left out warn)
and the profile's cached model (``python -m attnxai info --profile P`` must find it: training is
not timed here, ``benchmarks/bench_train.py`` times it). It reports the wall time of each build,
the CPU time of the build and its kernels, the ratio parallel / serial of the same round, and the
load average before and after. Not a test: a build takes minutes.
"""

from __future__ import annotations

import argparse
import csv
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _toc(chapters: list[str], folder: Path) -> Path | None:
    if not chapters:
        return None
    toc = folder / "_toc.yml"
    toc.write_text("format: jb-book\nroot: book/intro\nparts:\n  - caption: Chapters\n"
                   "    numbered: true\n    chapters:\n"
                   + "".join(f"      - file: notebooks/{c}\n" for c in chapters))
    return toc


def build(profile: str, jobs: int, toc: Path | None, out: Path) -> dict:
    """One build from scratch into ``out``: wall and CPU seconds (this build's processes)."""
    jb = Path(sys.executable).parent / "jupyter-book"
    env = {**os.environ, "ATTNXAI_PROFILE": profile, "ATTNXAI_BUILD_JOBS": str(jobs)}
    args = [str(jb), "build", str(ROOT), "--keep-going", "--path-output", str(out)]
    if toc is None:
        args.insert(3, "-W")
    else:               # a part of the book: its links to the chapters left out warn, expectedly
        args += ["--toc", str(toc)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    run = subprocess.run(args, env=env, cwd=ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if run.returncode != 0:
        raise SystemExit(f"the build failed (jobs={jobs}):\n{(run.stdout + run.stderr)[-4000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"jobs": jobs, "wall_s": round(wall, 1), "cpu_s": round(cpu, 1)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--profile", default="quick")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--chapters", default="",
                    help="comma-separated chapter names (e.g. 01_model,02_attention); default all")
    ap.add_argument("--jobs", type=int, default=2, help="chapters at once in the parallel build")
    ap.add_argument("--out", default=None, help="also write the builds to this CSV")
    args = ap.parse_args()
    from attnxai.store.provenance import loadavg

    check = subprocess.run([sys.executable, "-m", "attnxai", "info", "--profile", args.profile],
                           capture_output=True, text=True)
    if check.returncode != 0:
        raise SystemExit(f"no cached {args.profile!r} model: python -m attnxai train "
                         f"--profile {args.profile} first (training is not part of this benchmark)")
    chapters = [c.strip() for c in args.chapters.split(",") if c.strip()]
    rows = []
    print(f"load average before {loadavg()}", flush=True)
    with tempfile.TemporaryDirectory(prefix="bench_build_") as tmp:
        toc = _toc(chapters, Path(tmp))
        for r in range(args.rounds):
            order = (1, args.jobs) if r % 2 == 0 else (args.jobs, 1)
            got = {}
            for jobs in order:
                got[jobs] = build(args.profile, jobs, toc, Path(tmp) / f"r{r}-j{jobs}")
                print(f"round {r + 1}: {jobs} at a time: {got[jobs]['wall_s']} s wall, "
                      f"{got[jobs]['cpu_s']} s CPU", flush=True)
            ratio = got[args.jobs]["wall_s"] / got[1]["wall_s"]
            print(f"round {r + 1}: parallel / serial {ratio:.2f}x (wall)", flush=True)
            for jobs in order:
                rows.append({"round": r + 1, **got[jobs], "ratio_to_serial":
                             round(got[jobs]["wall_s"] / got[1]["wall_s"], 3)})
    after = loadavg()
    print(f"load average after {after}")
    if args.out:
        with open(args.out, "w", newline="") as f:
            f.write(f"# benchmarks/bench_build.py --profile {args.profile} --rounds {args.rounds}"
                    f"{' --chapters ' + ', '.join(chapters) if chapters else ''}; {os.cpu_count()} "
                    f"cores; load average after {after}\n")
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)


if __name__ == "__main__":
    main()
