"""How long `attnxai explain` takes once the model is cached (the target: under 5 seconds).

    python benchmarks/bench_explain.py [--profile paper] [--repeats 5]

Runs the command line ``python -m attnxai explain TEXT --profile PROFILE --json --no-progress``
``--repeats`` times in fresh processes (what a user waits for: interpreter start, imports, model
loading, attention, gradients and LIME with 5,000 samples) for two texts, the paper's Figure 1
sentence and a test review long enough to fill the model (255 tokens), and prints the median and
the largest wall time. It then times the steps inside one process: imports, loading the cached
model (:func:`attnxai.pretrained`), and :func:`attnxai.explain`
on a loaded model. The environment's thread settings are used as they are (set
``OMP_NUM_THREADS=1`` on a shared machine). Exit status 1 if a median exceeds ``--budget``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
import warnings


def _cli(text: str, profile: str) -> float:
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "attnxai", "explain", text, "--profile", profile,
                          "--json", "--no-progress"], capture_output=True, text=True)
    dt = time.perf_counter() - t0
    if out.returncode != 0:
        raise RuntimeError(f"attnxai explain failed: {out.stderr[-2000:]}")
    return dt


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--profile", default="paper", choices=["paper", "quick"])
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--budget", type=float, default=5.0, help="seconds (default 5)")
    args = p.parse_args(argv)

    warnings.filterwarnings("ignore", message="the text has")     # the long review is cut
    t0 = time.perf_counter()
    import attnxai
    from attnxai.chapters import paper
    t_import = time.perf_counter() - t0

    t0 = time.perf_counter()
    pre = attnxai.pretrained(args.profile, progress=False)       # trains it first if missing
    t_load = time.perf_counter() - t0
    data = attnxai.load_imdb()
    long_text = next(r.text for r in data.test
                     if len(attnxai.tokenize(attnxai.normalize_for_lime(r.text, 10**9))) >= 255)
    texts = {"Figure 1 sentence": paper.FIGURE1_TEXT, "a 255-token review": long_text}
    print(f"profile {args.profile}: model {pre.path.name}; load average "
          f"{os.getloadavg()[0]:.2f}; OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')}")
    print(f"in one process: imports {t_import:.2f} s, loading the cached model {t_load:.2f} s")
    lime = {"LIME": {"backend": "numpy"}}                          # as the command runs it
    attnxai.explain(pre, paper.FIGURE1_TEXT, settings=lime)         # a first call warms up
    for name, text in texts.items():
        ts = []
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            ex = attnxai.explain(pre, text, settings=lime)
            ts.append(time.perf_counter() - t0)
        print(f"  explain() on {name} ({len(ex.tokens)} tokens): median "
              f"{statistics.median(ts):.3f} s")
    status = 0
    print(f"`python -m attnxai explain TEXT --profile {args.profile} --json`, fresh process each "
          f"time ({args.repeats} runs):")
    _cli(paper.FIGURE1_TEXT, args.profile)                        # a first run warms the disk
    for name, text in texts.items():
        ts = [_cli(text, args.profile) for _ in range(args.repeats)]
        med = statistics.median(ts)
        print(f"  {name}: median {med:.2f} s, max {max(ts):.2f} s"
              + ("" if med <= args.budget else f"  OVER the {args.budget:g} s budget"))
        status |= med > args.budget
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    return int(status)


if __name__ == "__main__":
    raise SystemExit(main())
