"""Command line: ``python -m attnxai <command>`` (or the ``attnxai`` console script).

Every command is listed in :data:`COMMANDS` (name -> (add_arguments, run, help)); each ``run``
takes the parsed namespace and returns an exit code. Errors a user can fix (bad arguments, missing
files) print one line and exit with status 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable

from . import paper


# ---------------------------------------------------------------- train / info
def _train_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--profile", default="paper", help="paper (the authors' settings) or quick")
    p.add_argument("--archive", default=None,
                   help="IMDb .tar.gz on disk (else $ATTNXAI_IMDB_ARCHIVE, else download)")


def _train_run(args: argparse.Namespace) -> int:
    from .checkpoint import pretrained

    pre = pretrained(args.profile, archive=args.archive)
    m = pre.metrics
    print(f"checkpoint: {pre.path}")
    print(f"test accuracy {m['test_accuracy']:.4f} on {m['n_test']} reviews "
          f"(paper: {paper.reported('single_layer_accuracy')}); validation "
          f"{m['valid_accuracy']:.4f}; trained in {m['train_seconds']:.0f} s "
          f"({m['train_reviews_per_second']:.0f} reviews/s)")
    return 0


def _info_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--profile", default="paper")
    p.add_argument("--archive", default=None)


def _info_run(args: argparse.Namespace) -> int:
    from .checkpoint import pretrained

    pre = pretrained(args.profile, archive=args.archive, train_if_missing=False)
    print(json.dumps({"path": str(pre.path),
                      **{k: v for k, v in pre.metrics.items() if k != "history"}}, indent=2))
    return 0


# ---------------------------------------------------------------- lime-experiment
def _lime_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--profile", default="paper", help="trained model to explain (paper or quick)")
    p.add_argument("--reviews", type=int, default=1000,
                   help="first N reviews of the seeded test-set order (default 1000)")
    p.add_argument("--repeats", type=int, default=5, help="LIME runs per review (default 5)")
    p.add_argument("--bow", default="both", choices=["true", "false", "both"],
                   help="lime's bow setting: true (delete words), false (replace), both")
    p.add_argument("--num-samples", type=int, default=5000)
    p.add_argument("--kernel-width", type=float, default=25.0)
    p.add_argument("--mask-string", default="UNK", help="bow=false replacement (default UNK)")
    p.add_argument("--out", required=True,
                   help="results folder (parquet parts; rerun the same command to resume)")
    p.add_argument("--jobs", type=int, default=1, help="processes (default 1; -1 = all cores)")
    p.add_argument("--scheduler", default=None,
                   help="Dask scheduler address, e.g. tcp://host:8786 (pip install attnxai[dask])")
    p.add_argument("--chunk", type=int, default=20, help="reviews per task (default 20)")
    p.add_argument("--approximations", default=None,
                   help="comma-separated names to compare (default: all; 'none')")
    p.add_argument("--archive", default=None, help="IMDb archive (else $ATTNXAI_IMDB_ARCHIVE)")
    p.add_argument("--no-progress", action="store_true")


def _lime_run(args: argparse.Namespace) -> int:
    import pandas as pd

    from .experiment import load_results, run_lime_corpus, summarize

    names = None
    if args.approximations is not None:
        names = [] if args.approximations.strip().lower() == "none" else \
            [a.strip() for a in args.approximations.split(",") if a.strip()]
    report = run_lime_corpus(args.out, profile=args.profile, reviews=args.reviews,
                             repeats=args.repeats, bow=args.bow, num_samples=args.num_samples,
                             kernel_width=args.kernel_width, mask_string=args.mask_string,
                             jobs=args.jobs, scheduler=args.scheduler, chunk=args.chunk,
                             archive=args.archive, progress=not args.no_progress,
                             approximations=names)
    print(f"{report.out}: {report.computed} rows computed, {report.skipped} already there"
          + (f" ({report.finished} given new approximations)" if report.finished else "") + ", "
          f"{report.seconds:.0f} s ({report.rows_per_second:.2f} rows/s)")
    df = load_results(report.out)
    with pd.option_context("display.width", 120, "display.max_columns", 20):
        print(summarize(df).round(4).to_string())
    return 0


# ---------------------------------------------------------------- notebooks
def _notebooks_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--root", default=".", help="the repository (default: the current folder)")
    p.add_argument("--out", default=None,
                   help="folder for the notebooks (default: beside each chapter that has a "
                        "launch cell, i.e. the .ipynb that Colab opens)")
    p.add_argument("--student", action="store_true",
                   help="student edition: no solutions (use with --out)")
    p.add_argument("--check", action="store_true",
                   help="write nothing; exit 1 if a .ipynb beside a chapter is missing or stale")
    p.add_argument("--launch-cells", action="store_true",
                   help="first make every chapter's first code cell the launch cell for "
                        "_config.yml's repository (inserted or updated)")


def _notebooks_run(args: argparse.Namespace) -> int:
    from . import course

    if args.student and args.out is None:
        raise ValueError("--student needs --out (the .ipynb beside the chapters keep the "
                         "solutions)")
    if args.check:
        stale = course.stale_notebooks(args.root)
        for line in stale:
            print(line)
        if stale:
            print("run `python -m attnxai notebooks` (or `make notebooks`) to update them")
        return 1 if stale else 0
    if args.launch_cells:
        url = course.repository_url(args.root)
        for md in course.chapters(args.root):
            if course.set_launch_cell(md, url):
                print(f"{md}: launch cell for {url}")
    for path in course.write_notebooks(args.out, root=args.root, student=args.student):
        print(path)
    return 0


COMMANDS: dict[str, tuple[Callable[[argparse.ArgumentParser], None],
                          Callable[[argparse.Namespace], int], str]] = {
    "train": (_train_args, _train_run,
              "train a profile (or load it from the cache) and print its metrics"),
    "info": (_info_args, _info_run, "print the metrics of a cached model (no training)"),
    "lime-experiment": (_lime_args, _lime_run,
                        "LIME (repeated) on many test reviews vs every closed-form "
                        "approximation; resumable, parallel"),
    "notebooks": (_notebooks_args, _notebooks_run,
                  "write the chapters as Jupyter notebooks without outputs (for Colab, or a "
                  "student edition without solutions with --student --out DIR)"),
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="attnxai", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name, (add, _, help_) in COMMANDS.items():
        add(sub.add_parser(name, help=help_))
    args = parser.parse_args(argv)
    try:
        return COMMANDS[args.command][1](args)
    except (ValueError, TypeError, FileNotFoundError, RuntimeError) as exc:
        print(f"attnxai {args.command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
