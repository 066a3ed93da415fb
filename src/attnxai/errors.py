"""The package's errors a user can fix, and where its warnings point.

:class:`UserError` is the base of the errors whose message tells the user what to change (a
damaged checkpoint, a missing or wrong archive, a cache that cannot be written, a package to
install); with ``ValueError`` (a wrong value given) and ``FileNotFoundError`` they are what the
command line reports as one line (``attnxai.cli``), where any other exception is a bug and keeps
its traceback. :func:`stacklevel` makes a warning point at the caller's code, not the package's.
"""

from __future__ import annotations

import os
import sys

__all__ = ["MissingDependency", "UserError", "stacklevel"]

_PACKAGE = os.path.dirname(os.path.abspath(__file__))


class UserError(Exception):
    """An error whose message says what the user can do about it (module docstring)."""


class MissingDependency(UserError, RuntimeError):
    """An optional package that a feature needs is not installed (the message names it)."""


def stacklevel() -> int:
    """``stacklevel`` for a warning raised in this package: the first caller outside it."""
    frame, level = sys._getframe(1), 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE):
        frame, level = frame.f_back, level + 1
    return level
