"""Command line: ``python -m attnxai <command>`` (or the ``attnxai`` console script).

Every command is listed in :data:`COMMANDS` (name -> (add_arguments, run, help)); each ``run``
takes the parsed namespace and returns an exit code. The flags mean the same in every command
(``--profile``, ``--methods``, ``--num-samples``, ``--kernel-width``, ``--target``, ``--set``,
``--no-progress``), and every command that could use a flag takes it (``--no-progress``: a
training, a study, an explanation; ``--set METHOD.FIELD=VALUE``: any method's settings, for
``explain`` and ``faithfulness``); an old spelling still works and says which to use. LIME's
flags (``--num-samples``, ``--kernel-width``, ``--mask-string``) are generated from
:class:`attnxai.limit_settings.LimeSettings`' fields (:func:`attnxai.cli.flags.add_settings_flags`:
type, default and help written once, in the dataclass), and the settings object they build, checked
there once, goes whole to the study or explanation.

The commands live one group per module: :mod:`~attnxai.cli.models` (train, info, publish-models,
adopt), :mod:`~attnxai.cli.studies` (the corpus studies), :mod:`~attnxai.cli.explain`,
:mod:`~attnxai.cli.notebooks`; :mod:`~attnxai.cli.flags` holds the flags they share.

Errors a user can fix (a wrong value, a file or folder the system refuses, a damaged checkpoint, a
package to install, a request over the memory budget: ``ValueError``, ``OSError``,
:class:`attnxai.errors.UserError`) print one line and exit with status 2; anything else is a bug
and keeps its traceback. ``--debug`` shows the traceback of every error. SIGTERM stops a command
as Ctrl-C does (exit status 130): a run's worker processes are killed and a cluster client closed
on the way out.

The command line is an entry point: ``ATTNXAI_SEED`` (:mod:`attnxai.settings`), read once in
:func:`main`, trains and finds every ``--profile`` from that seed instead of its own (the same
models the chapters of a session of that seed use); the package below reads no setting itself.
"""

from __future__ import annotations

import argparse
import signal
import sys
from collections.abc import Callable

from .. import settings
from .explain import _explain_args, _explain_run
from .models import (_adopt_args, _adopt_run, _info_args, _info_run, _publish_args, _publish_run,
                     _train_args, _train_run)
from .notebooks import _notebooks_args, _notebooks_run
from .studies import (_faith_args, _faith_run, _layer_lime_args, _layer_lime_run, _lime_args,
                      _lime_run, _screens_args, _screens_run, _shapley_args, _shapley_run,
                      _skip_args, _skip_run)


COMMANDS: dict[str, tuple[Callable[[argparse.ArgumentParser], None],
                          Callable[[argparse.Namespace], int], str]] = {
    "train": (_train_args, _train_run,
              "train a profile (or load it from the cache) and print its metrics"),
    "info": (_info_args, _info_run,
             "verify a cached model and print its key, files' sha256, origin and metrics "
             "(offline: no training, no download; --published compares with the book's)"),
    "publish-models": (_publish_args, _publish_run,
                       "copy the cached models (verified) and the index readers download them "
                       "from into a folder served beside the site"),
    "adopt": (_adopt_args, _adopt_run,
              "trust a checkpoint without manifest.json, or results parts without checksums, as "
              "they are now: record their checksums (says what it checked and what it trusts)"),
    "lime-experiment": (_lime_args, _lime_run,
                        "LIME (repeated) on many test reviews vs every closed-form "
                        "approximation; resumable, parallel"),
    "faithfulness": (_faith_args, _faith_run,
                     "faithfulness metrics (AOPC, tau-LOO, deletion/insertion) of every "
                     "explainer on many test reviews; resumable, parallel"),
    "shapley-experiment": (_shapley_args, _shapley_run,
                           "rank agreement of Shapley, Banzhaf, LIME, its limit, IG, GxI and "
                           "alpha-avg on test reviews, both removal modes (chapter 9); "
                           "resumable, parallel"),
    "explain": (_explain_args, _explain_run,
                "the seven explanations of Figure 1 for your own text (table, --html, --json)"),
    "multilayer-lime": (_layer_lime_args, _layer_lime_run,
                        "attention of every layer (and rollout) against LIME on test reviews "
                        "(chapter 8); resumable, parallel"),
    "multilayer-screens": (_screens_args, _screens_run,
                           "one-epoch screens of the multi-layer architecture (residual, "
                           "LayerNorm, feed-forward); resumable"),
    "skip-ablation": (_skip_args, _skip_run,
                      "the single-layer model with and without the skip connection, per seed "
                      "(chapter 8); resumable"),
    "notebooks": (_notebooks_args, _notebooks_run,
                  "write the chapters as Jupyter notebooks without outputs (for Colab, or a "
                  "student edition without solutions with --student --out DIR)"),
}


def _user_errors() -> tuple[type[BaseException], ...]:
    """What a user can fix: a wrong value, a file or folder the system refuses (missing, not
    writable, a folder where a file is expected, a full disk...), the package's own
    :class:`~attnxai.errors.UserError` (a damaged checkpoint, a request over the memory budget,
    a cluster that cannot be reached...), and running out of memory."""
    from ..errors import UserError

    return (ValueError, OSError, UserError, MemoryError)


def _one_line(exc: BaseException) -> str:
    """The error as the one line a user sees."""
    if isinstance(exc, MemoryError) and not str(exc):
        return ("out of memory: the request needs more memory than this machine has free (lower "
                "--num-samples or --reviews, or set ATTNXAI_MEMORY_BUDGET to have such requests "
                "refused before they start)")
    if type(exc) in _BARE_OS_ERRORS and exc.strerror and exc.filename is not None:
        # the system's own words name no cure: say which path it refused and what to check
        return (f"{exc.strerror}: {exc.filename} (the system refused this file or folder: check "
                "that the path is right, that you may write there and that the disk has room)")
    text = str(exc) or type(exc).__name__
    return " ".join(text.split()) if "\n" in text else text


#: The OSError types the system raises as they are (the package's own carry their messages).
_BARE_OS_ERRORS = (OSError, PermissionError, FileNotFoundError, FileExistsError,
                   IsADirectoryError, NotADirectoryError)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="attnxai", description=__doc__.splitlines()[0])
    debug = argparse.ArgumentParser(add_help=False)
    debug.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                       help="show the traceback of any error (default: a user's mistake is one "
                            "line)")
    parser.add_argument("--debug", action="store_true", default=False,
                        help="show the traceback of any error")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, (add, _, help_) in COMMANDS.items():
        add(sub.add_parser(name, help=help_, parents=[debug]))
    args = parser.parse_args(argv)
    # the command line as given, for the results folders' run log (argv[0] is never replayed)
    args.argv = ["attnxai", *(sys.argv[1:] if argv is None else argv)]
    previous = _stop_on_sigterm()
    try:
        # the entry point's session: ATTNXAI_SEED read once here, passed on with the profile
        # (flags.training_profile); nothing below reads it
        args.seed_of_session = settings.chosen_seed()
        return COMMANDS[args.command][1](args)
    except _user_errors() as exc:
        if args.debug:
            raise
        print(f"attnxai {args.command}: error: {_one_line(exc)} (--debug shows the traceback)",
              file=sys.stderr)
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
