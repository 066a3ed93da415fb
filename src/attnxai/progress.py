"""The package's one progress bar: tqdm, updated in place in a terminal or a notebook, and at
most one line every :data:`LOG_SECONDS` in a log (output that is not a terminal), where tqdm's
own default (an update ten times a second, each a new line once the log is read) filled a book
build's log with 140 kB of progress for one training.

``per_step=False`` is a bar whose only use is live feedback (a training's batches, which end in
one line per epoch anyway): none at all in a log.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import Any

__all__ = ["LOG_SECONDS", "bar", "interactive", "write"]

#: The shortest time between two lines of a bar written to a log.
LOG_SECONDS = 10.0


def interactive(stream: Any = None) -> bool:
    """Whether ``stream`` (default standard error, where tqdm writes) shows a bar in place: a
    terminal, or a Jupyter kernel (whose streams are no terminals but render the bar)."""
    stream = sys.stderr if stream is None else stream
    try:
        if stream.isatty():
            return True
    except (AttributeError, ValueError):                 # closed or not a file
        return False
    return _in_kernel()


def _in_kernel() -> bool:
    """Whether this process is a running Jupyter kernel (not merely one that imported ipykernel,
    as a test session that executes notebooks does)."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    return shell is not None and getattr(shell, "kernel", None) is not None


def bar(iterable: Iterable | None = None, *, disable: bool = False, per_step: bool = True,
        **kwargs: Any):
    """A tqdm bar (``tqdm.auto``: a widget in a notebook) over ``iterable`` with tqdm's keywords
    (``total``, ``desc``, ``unit``, ``leave``...); when the output is not :func:`interactive`,
    one line every :data:`LOG_SECONDS` at most (``per_step=False``: no bar)."""
    if interactive():
        from tqdm.auto import tqdm                       # (warns at import without ipywidgets)
    else:
        from tqdm import tqdm

        disable = disable or not per_step
        kwargs.setdefault("mininterval", LOG_SECONDS)
        kwargs.setdefault("maxinterval", max(LOG_SECONDS, kwargs["mininterval"]))
    return tqdm(iterable, disable=disable, **kwargs)


def write(line: str) -> None:
    """A line printed without breaking a bar that is showing (tqdm.write)."""
    from tqdm import tqdm

    tqdm.write(line)
