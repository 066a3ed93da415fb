"""The run log of a results folder, ``_runs.jsonl``: one line per finished run (its command and
code, when, where: workers, device, attnxai version, what it computed, how long it took and the load
average around it; :func:`attnxai.experiment.run` writes it through :func:`log_run`,
:func:`attnxai.experiment.runs_header` reads it through :func:`runs`).
"""

from __future__ import annotations

import datetime
import json
import os
import shlex
from pathlib import Path
from typing import Any

from ..files import loads_json, read_small_file
from .layout import RUNS, DamagedResults

__all__ = ["check_log", "log_run", "runs"]


def log_run(out: Path, record: dict[str, Any]) -> None:
    """Append one finished run to the folder's ``_runs.jsonl`` (with the time, host and attnxai
    version); nothing in it is checked on resume."""
    from ..provenance import host, package_version

    line = {"finished": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "host": host(), "attnxai": package_version(), **record}
    check_log(Path(out))
    # non-blocking: a FIFO put in its place since the check is refused, not waited on
    fd = os.open(Path(out) / RUNS, os.O_WRONLY | os.O_APPEND | os.O_CREAT
                 | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0), 0o644)
    with os.fdopen(fd, "a", encoding="utf-8") as fh:
        check_log(Path(out), os.fstat(fd).st_mode)
        fh.write(json.dumps(line, default=str) + "\n")


def check_log(out: Path, mode: int | None = None) -> None:
    """Refuse a run log (``_runs.jsonl``) that is not a regular file (a FIFO there would block
    the run at its end, a device would take the lines): before anything is computed."""
    import stat

    from ..files import _kind

    if mode is None:
        try:
            mode = os.stat(out / RUNS).st_mode
        except FileNotFoundError:
            return
    if not stat.S_ISREG(mode):
        raise DamagedResults(f"{out / RUNS} (the folder's run log) is {_kind(mode)}, not a "
                             f"regular file: remove it (rm {shlex.quote(str(out / RUNS))}; the "
                             "rows are kept) and rerun this command")


def runs(out: str | os.PathLike) -> list[dict[str, Any]]:
    """The runs logged in a results folder, oldest first."""
    path = Path(out) / RUNS
    if not path.is_file():
        return []
    text = read_small_file(path).decode("utf-8")
    return [loads_json(line, str(path)) for line in text.splitlines() if line.strip()]
