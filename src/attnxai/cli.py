"""Command line: ``python -m attnxai <command>`` (or the ``attnxai`` console script).

Commands register themselves in :data:`COMMANDS` (name -> (add_arguments, run)); each ``run``
takes the parsed namespace and returns an exit code.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable

COMMANDS: dict[str, tuple[Callable[[argparse.ArgumentParser], None],
                          Callable[[argparse.Namespace], int], str]] = {}


def command(name: str, help: str):
    def register(pair):
        add, run = pair
        COMMANDS[name] = (add, run, help)
        return pair
    return register


def _train_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--profile", default="paper", help="paper (the authors' settings) or quick")
    p.add_argument("--archive", default=None, help="IMDb .tar.gz on disk (else $ATTNXAI_IMDB_ARCHIVE, else download)")


def _train_run(args: argparse.Namespace) -> int:
    from .checkpoint import pretrained

    pre = pretrained(args.profile, archive=args.archive)
    m = pre.metrics
    print(f"checkpoint: {pre.path}")
    print(f"test accuracy {m['test_accuracy']:.4f} on {m['n_test']} reviews "
          f"(paper: {m['paper_test_accuracy']:.4f}); validation {m['valid_accuracy']:.4f}; "
          f"trained in {m['train_seconds']:.0f} s ({m['train_reviews_per_second']:.0f} reviews/s)")
    return 0


command("train", "train a profile (or load it from the cache) and print its metrics")((_train_args, _train_run))


def _info_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--profile", default="paper")


def _info_run(args: argparse.Namespace) -> int:
    from .checkpoint import pretrained

    pre = pretrained(args.profile, train_if_missing=False)
    print(json.dumps({"path": str(pre.path), **{k: v for k, v in pre.metrics.items() if k != "history"}},
                     indent=2))
    return 0


command("info", "print the metrics of a cached model (no training)")((_info_args, _info_run))


def _load_plugins() -> None:
    # Modules that add commands (imported lazily so `train` does not pay for them).
    import importlib

    for mod in ("attnxai.experiment",):
        try:
            importlib.import_module(mod)
        except ModuleNotFoundError as exc:
            if exc.name != mod:
                raise


def main(argv: list[str] | None = None) -> int:
    _load_plugins()
    parser = argparse.ArgumentParser(prog="attnxai", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name, (add, _, help_) in COMMANDS.items():
        add(sub.add_parser(name, help=help_))
    args = parser.parse_args(argv)
    try:
        return COMMANDS[args.command][1](args)
    except (ValueError, FileNotFoundError, RuntimeError) as exc:
        print(f"attnxai {args.command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
