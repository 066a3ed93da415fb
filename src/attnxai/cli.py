"""Command line: ``python -m attnxai <command>`` (or the ``attnxai`` console script).

Every command is listed in :data:`COMMANDS` (name -> (add_arguments, run, help)); each ``run``
takes the parsed namespace and returns an exit code. Errors a user can fix (bad arguments, missing
files) print one line and exit with status 2. SIGTERM stops a command as Ctrl-C does (exit status
130): a run's worker processes are killed and a cluster client closed on the way out.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
from collections.abc import Callable

from . import paper


# ---------------------------------------------------------------- train / info
def _train_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--profile", default="paper", help="paper (the authors' settings) or quick")
    p.add_argument("--archive", default=None,
                   help="IMDb .tar.gz on disk (else $ATTNXAI_IMDB_ARCHIVE, else download)")
    p.add_argument("--device", default="cpu",
                   help="where to train: cpu (default), cuda, cuda:N or mps (results equal the "
                        "CPU's to float rounding)")


def _train_run(args: argparse.Namespace) -> int:
    from .checkpoint import pretrained

    pre = pretrained(args.profile, archive=args.archive, device=args.device)
    m = pre.metrics
    print(f"checkpoint: {pre.path}")
    print(f"test accuracy {m['test_accuracy']:.4f} on {m['n_test']} reviews "
          f"(paper: {paper.reported('single_layer_accuracy')}); validation "
          f"{m['valid_accuracy']:.4f}; trained in {m['train_seconds']:.0f} s "
          f"({m['train_reviews_per_second']:.0f} reviews/s)")
    return 0


def _info_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--profile", default="paper", help="paper or quick (default paper)")
    p.add_argument("--archive", default=None,
                   help="IMDb .tar.gz the model was trained on (default: $ATTNXAI_IMDB_ARCHIVE, "
                        "else any known IMDb archive; nothing is downloaded)")
    p.add_argument("--path", default=None,
                   help="a checkpoint folder to verify and describe instead of a cached profile")


def _info_run(args: argparse.Namespace) -> int:
    """Offline: finds the cached model (or loads --path), verifies it, prints its metrics."""
    from .checkpoint import MANIFEST, load, pretrained

    if args.path is not None:
        pre = load(args.path)
    else:
        pre = pretrained(args.profile, archive=args.archive, train_if_missing=False,
                         progress=False)
    manifest = (pre.path / MANIFEST).is_file()
    print(json.dumps({"path": str(pre.path),
                      "verified": ("files match their sha256 manifest" if manifest else
                                   "consistency checks only (no manifest could be written)"),
                      "data_sha256": pre.config.get("data_sha256"),
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
                   help="run on a Dask cluster: its scheduler's address, e.g. tcp://host:8786, or "
                        "scheduler file (pip install 'attnxai[dask]'; the book's page 'Run it on "
                        "a cluster')")
    p.add_argument("--device", default="cpu",
                   help="where the workers put the model: cpu (default), cuda, cuda:N or mps "
                        "(used by lime's generic, batched path)")
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
                             approximations=names, device=args.device)
    print(f"{report.out}: {report.computed} rows computed, {report.skipped} already there"
          + (f" ({report.finished} given new approximations)" if report.finished else "") + ", "
          f"{report.seconds:.0f} s ({report.rows_per_second:.2f} rows/s) on {report.workers}")
    df = load_results(report.out)
    with pd.option_context("display.width", 120, "display.max_columns", 20):
        print(summarize(df).round(4).to_string())
    return 0


COMMANDS: dict[str, tuple[Callable[[argparse.ArgumentParser], None],
                          Callable[[argparse.Namespace], int], str]] = {
    "train": (_train_args, _train_run,
              "train a profile (or load it from the cache) and print its metrics"),
    "info": (_info_args, _info_run,
             "verify a cached model and print its metrics (offline: no training, no download)"),
    "lime-experiment": (_lime_args, _lime_run,
                        "LIME (repeated) on many test reviews vs every closed-form "
                        "approximation; resumable, parallel"),
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="attnxai", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name, (add, _, help_) in COMMANDS.items():
        add(sub.add_parser(name, help=help_))
    args = parser.parse_args(argv)
    previous = _stop_on_sigterm()
    try:
        return COMMANDS[args.command][1](args)
    except (ValueError, TypeError, FileNotFoundError, RuntimeError) as exc:
        print(f"attnxai {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"attnxai {args.command}: stopped (rerun the same command to resume)",
              file=sys.stderr)
        return 130
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _stop_on_sigterm():
    """SIGTERM raises KeyboardInterrupt (so that clean-up runs); returns the old handler (None
    outside the main thread, where signals cannot be handled)."""
    def stop(signum, frame):
        raise KeyboardInterrupt

    try:
        return signal.signal(signal.SIGTERM, stop)
    except ValueError:
        return None


if __name__ == "__main__":
    raise SystemExit(main())
