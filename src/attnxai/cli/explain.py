"""The ``explain`` command: any methods of the registry on your own text."""

from __future__ import annotations

import argparse
import json
import re
import sys

from ..limit_settings import LimeSettings
from .flags import (_deprecated, _progress_flag, _set_flag, add_settings_flags,
                    settings_from_args, training_profile)

#: LIME's flags of ``explain`` (the fields of LimeSettings it sets).
_LIME_FLAGS = ("num_samples", "kernel_width")


def _explain_args(p: argparse.ArgumentParser) -> None:
    from ..registry import ALL_METHODS, DEFAULT_SEED

    p.add_argument("text", help="the text to explain ('-' reads it from standard input, @FILE "
                                "from the file FILE; anything else is the text itself)")
    p.add_argument("--profile", default="paper",
                   help="trained model to explain: paper (default) or quick (the cached model, "
                        "trained first if missing)")
    p.add_argument("--methods", default=None,
                   help="comma-separated, among " + ", ".join(ALL_METHODS)
                        + " (default: the seven of Figure 1); or 'all'")
    p.add_argument("--archive", default=None,
                   help="IMDb .tar.gz the model was trained on (else $ATTNXAI_IMDB_ARCHIVE)")
    p.add_argument("--html", default=None, metavar="FILE",
                   help="also write Figure 1 for this text to FILE (an offline HTML page)")
    p.add_argument("--json", action="store_true", help="print JSON instead of the table")
    p.add_argument("--level", default="token", choices=["token", "word"],
                   help="the table's rows: tokens (default) or distinct words")
    p.add_argument("--target", default="1",
                   help="explained class: 1 (the paper's logit 1, default), 0, or 'predicted'")
    p.add_argument("--seed", type=int, default=DEFAULT_SEED,
                   help=f"seed of every random method: LIME's random_state, the random baseline "
                        f"(default {DEFAULT_SEED})")
    add_settings_flags(p, LimeSettings, _LIME_FLAGS)
    _set_flag(p)
    _progress_flag(p)
    p.add_argument("--no-color", action="store_true", help="no ANSI colours in the table")
    _deprecated(p, "--model", "--profile")
    _deprecated(p, "--explainers", "--methods")


def _method_names(spec: str | None) -> list[str] | None:
    """``--methods``: comma-separated names of :data:`attnxai.registry.METHODS`, any case, or
    'all'; None for the default."""
    from .. import validate
    from ..registry import ALL_METHODS

    return None if spec is None else validate.names(spec, ALL_METHODS, kind="method", text=True)


#: The most bytes ``attnxai explain @FILE`` reads (the model reads at most 255 tokens anyway).
_TEXT_BYTES = 1 << 20


def _explained_text(arg: str) -> str:
    """The text of ``attnxai explain``: '-' standard input, '@FILE' a file's content (UTF-8),
    else the argument itself, with a note when it looks like a path (it is explained as words)."""
    import os

    from ..store.files import read_small_file

    if arg == "-":
        text = sys.stdin.read(_TEXT_BYTES + 1)
        if len(text) > _TEXT_BYTES:
            raise ValueError(f"standard input holds more than {_TEXT_BYTES} characters, more than "
                             "any review (the model reads its first 255 tokens): give a shorter "
                             "text (nothing was cut silently, nothing computed)")
        return text
    if arg.startswith("@") and len(arg) > 1:
        path = os.path.expanduser(arg[1:])
        try:
            data = read_small_file(path, _TEXT_BYTES)
        except FileNotFoundError:
            raise FileNotFoundError(f"no file {path} (from {arg}): give @FILE for a file's "
                                    "content, or the text itself") from None
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ValueError(f"{path} is not UTF-8 text ({exc.reason} at byte {exc.start})") \
                from None
    if re.fullmatch(r"\S*[/\\]\S*|\S+\.(txt|md|text|html?)", arg.strip()) or os.path.isfile(arg):
        print(f"attnxai explain: note: {arg!r} is explained as text (its words); to explain a "
              f"file's content, pass @{arg}", file=sys.stderr)
    return arg


def _check_output_file(path: str, flag: str) -> None:
    """Refuse an output file that cannot be written (a folder, a missing or read-only parent)
    before the work that fills it."""
    import os

    from ..store.files import probe_writable

    if os.path.isdir(path):
        raise IsADirectoryError(f"{flag} {path} is a folder: give a file name, e.g. "
                                f"{os.path.join(path, 'explanation.html')}")
    parent = os.path.dirname(os.path.abspath(os.path.expanduser(path)))
    if not os.path.isdir(parent):
        raise FileNotFoundError(f"{flag} {path}: the folder {parent} does not exist: create it "
                                "first, or give a file in an existing folder")
    try:
        probe_writable(path)
    except OSError as exc:
        raise type(exc)(f"{flag} {path} cannot be written ({exc.strerror or exc}): give a file "
                        "in a folder you can write to (nothing was computed)") from None


def _explain_run(args: argparse.Namespace) -> int:
    import os
    import warnings

    from .. import validate
    from ..explanation import explain
    from ..registry import PAPER_METHODS, parse_settings
    from ..model.trained import pretrained

    text = _explained_text(args.text)
    methods = _method_names(args.methods)
    target = validate.explained_class(args.target, text=True)       # before the model loads
    if args.html:
        _check_output_file(args.html, "--html")             # before anything is computed
    progress = not args.no_progress and sys.stderr.isatty()
    # one LIME run: its numpy loops start faster than numba's compiled ones, same numbers
    lime = settings_from_args(args, LimeSettings, _LIME_FLAGS, backend="numpy")
    names = methods or list(PAPER_METHODS)
    settings = {"LIME": {k: getattr(lime, k) for k in (*_LIME_FLAGS, "backend")}} \
        if "LIME" in names else \
        {"LIME limit": {"kernel_width": lime.kernel_width}} if "LIME limit" in names else {}
    for method, fields in parse_settings(args.set).items():        # --set: any method's
        settings[method] = {**settings.get(method, {}), **fields}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pre = pretrained(training_profile(args), archive=args.archive, progress=progress)
        ex = explain(pre, text, methods, target=target, seed=args.seed,
                     settings=settings, progress=progress)
    for w in caught:
        if issubclass(w.category, UserWarning):
            print(f"attnxai explain: note: {w.message}", file=sys.stderr)
    if args.html:
        path = ex.write_html(args.html)
        print(f"attnxai explain: wrote {path} (Figure 1 for this text; open it in a browser)",
              file=sys.stderr)
    if args.json:
        print(json.dumps(ex.to_json(), indent=2))
        return 0
    color = not args.no_color and sys.stdout.isatty() and "NO_COLOR" not in os.environ
    print(ex.summary())
    print(ex.to_text(level=args.level, color=color))
    return 0


