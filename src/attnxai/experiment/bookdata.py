"""The committed corpus summaries (``book/data/``): where they are found, however the book is
started, and how the scripts in ``book/data`` write them (``#`` header lines, then the CSV)."""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path
from typing import Any

__all__ = ["book_data", "runs_header", "write_summary"]


def book_data(name: str, start: str | os.PathLike | None = None) -> Path:
    """``book/data/<name>``: a committed corpus summary a chapter reads, found from ``start``
    (default: the working directory, where a chapter executes) or its parents, else from the source
    checkout this package is installed from."""
    if not isinstance(name, str) or not name or "/" in name or "\\" in name or ".." in name:
        raise ValueError(f"name must be a file name in book/data, got {name!r}")
    here = Path(start) if start is not None else Path.cwd()
    roots = [here, *here.parents, Path(__file__).resolve().parents[3]]
    for root in roots:
        path = root / "book" / "data" / name
        if path.is_file():
            return path
    raise FileNotFoundError(f"book/data/{name} not found from {here} or the source checkout "
                            "(the scripts in book/data make the summaries)")


def write_summary(path: str | os.PathLike, header: list[str], frame: Any,
                  float_format: str) -> Path:
    """Write ``header`` (``#`` lines: command, code, settings, wall time) and then ``frame`` as CSV
    to ``path``; read it back with ``pandas.read_csv(path, comment="#")``."""
    path = Path(path)
    with open(path, "w") as fh:
        fh.write("\n".join(header) + "\n")
        frame.to_csv(fh, index=False, float_format=float_format)
    return path


def runs_header(folder: str | os.PathLike, unit: str = "reviews") -> list[str]:
    """``#`` lines for each run the ``attnxai`` command logged in ``folder/_runs.json``: its
    command, the code it ran (commit, uncommitted changes), when, its wall time for how many
    ``unit``, its jobs and the load average around it."""
    runs_path = Path(folder) / "_runs.json"
    runs = json.loads(runs_path.read_text()) if runs_path.is_file() else []
    lines = []
    for r in runs:
        args = " ".join(shlex.quote(a) for a in r["argv"][1:])
        dirty = " (with uncommitted changes!)" if r.get("dirty") else ""
        lines.append(f"# command: python -m attnxai {args}")
        lines.append(f"#   code: {r.get('commit')}{dirty}; started {r['started']}; wall time "
                     f"{r['seconds']:.0f} s for {r['computed']} {unit} ({r['skipped']} already "
                     f"there), jobs {r['jobs']}; load average before "
                     f"{r['loadavg_before'][0]:.2f}, after {r['loadavg_after'][0]:.2f}")
    return lines
