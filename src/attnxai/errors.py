"""The package's errors a user can fix, and where its warnings point.

:class:`UserError` is the base of the errors whose message tells the user what to change (a
damaged checkpoint, a missing or wrong archive, a cache that cannot be written, a package to
install, a stored file that is not a file, a request over the memory budget); with
``ValueError`` (a wrong value given) and ``OSError`` (a file or folder the system refuses: missing,
not writable, a disk full) they are what the command line reports as one line
(``attnxai.cli``), where any other exception is a bug and keeps its traceback. :func:`stacklevel` makes a warning point at the caller's code, not the package's.
"""

from __future__ import annotations

import os
import sys

__all__ = ["ClusterError", "MissingDependency", "NotARegularFile", "OverBudget", "UserError",
           "WorkerLost", "stacklevel"]

_PACKAGE = os.path.dirname(os.path.abspath(__file__))


class UserError(Exception):
    """An error whose message says what the user can do about it (module docstring)."""


class MissingDependency(UserError, RuntimeError):
    """An optional package that a feature needs is not installed (the message names it)."""


class ClusterError(UserError, RuntimeError):
    """A Dask cluster cannot be used: its address or scheduler file is wrong, it cannot be
    reached in time, no worker joined, or its workers run other code (the message says which)."""


class WorkerLost(UserError, RuntimeError):
    """A local worker process died during a run (killed by a signal, out of memory): the parts
    finished are kept, and the message says how to resume."""


class NotARegularFile(UserError, OSError):
    """A path the package reads as a stored file is something else (a folder, a FIFO, a device)
    or larger than any file of its kind: refused before anything waits on it or reads it
    whole (:func:`attnxai.store.files.open_regular`)."""


class OverBudget(UserError, MemoryError):
    """A request would need more memory than the budget allows (:mod:`attnxai.budget`): refused
    before anything is allocated; the message says how much, the budget, and what to change."""


def stacklevel() -> int:
    """``stacklevel`` for a warning raised in this package: the first caller outside it."""
    frame, level = sys._getframe(1), 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE):
        frame, level = frame.f_back, level + 1
    return level
