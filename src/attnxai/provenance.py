"""Where a number came from: the code (git commit, uncommitted changes), the package version, the
machine and its load. Recorded with every trained model (``metrics.json``) and every corpus run
(the results folder's run log), and read back by the book's summary headers; this module is the
one place these are measured.
"""

from __future__ import annotations

import os
import socket
import subprocess
from pathlib import Path
from typing import Any

__all__ = ["code_label", "host", "loadavg", "package_version", "source_state"]


def source_state() -> dict[str, Any]:
    """``{"commit": ..., "dirty": ...}``: the git commit of the package's source and whether
    tracked files differ from it (both None outside a git checkout)."""
    src = Path(__file__).resolve().parent
    try:
        head = subprocess.run(["git", "-C", str(src), "rev-parse", "HEAD"], capture_output=True,
                              text=True, timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(src), "status", "--porcelain",
                                "--untracked-files=no"], capture_output=True, text=True,
                               timeout=10, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "dirty": None}
    return {"commit": head, "dirty": bool(dirty)}


def code_label(commit: str | None = None, dirty: bool | None = None) -> str:
    """How the book's summaries name code: ``commit``, marked when tracked files differed from
    it. Without arguments, this checkout's (:func:`source_state`)."""
    if commit is None and dirty is None:
        src = source_state()
        commit, dirty = src["commit"], src["dirty"]
    return f"{commit or 'not recorded'}{' (with uncommitted changes!)' if dirty else ''}"


def loadavg() -> list[float] | None:
    """The machine's 1, 5 and 15 minute load averages, rounded to 0.01 (None where the OS has
    none)."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def package_version() -> str:
    """The installed attnxai's version (``"unknown"`` when it is not installed)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("attnxai")
    except PackageNotFoundError:
        return "unknown"


def host() -> str:
    """This machine's name."""
    return socket.gethostname()
