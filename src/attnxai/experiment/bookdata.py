"""The committed corpus summaries (``book/data/``): where they are found, however the book is
started, and how the scripts in ``book/data`` write them (``#`` header lines, then the CSV)."""

from __future__ import annotations

import json
import os
import re
import shlex
from pathlib import Path
from typing import Any

__all__ = ["WEIGHTS_LABEL", "book_data", "header_lines", "provenance", "read_summary",
           "recorded_weights", "results_header", "runs_header", "same_weights", "summary_header",
           "write_summary"]


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


_ABSOLUTE = re.compile(r"(?<![\w.~/:])/(?:[^/\s'\"]+/)+(?=[^/\s'\"]+)")


def header_lines(path: str | os.PathLike) -> list[str]:
    """The ``#`` header lines of a committed summary (command, code, settings, wall time),
    without the ``# ``, for a reader: an absolute path in a recorded command (``--out
    /home/me/results/run``) is shown by its last part (``…/run``), since the folders of the
    machine that made the summary mean nothing to the reader's."""
    lines = [line[2:].rstrip() for line in Path(path).read_text().splitlines()
             if line.startswith("#")]
    return [_ABSOLUTE.sub("…/", line) for line in lines]


def summary_header(name: str) -> list[str]:
    """A committed summary's header for a chapter: :func:`header_lines` of ``book_data(name)``
    (commands, code, wall times; paths masked) without its ``settings`` lines."""
    return [line for line in header_lines(book_data(name)) if not line.startswith("settings")]


def provenance(folder: str | os.PathLike | None = None):
    """Where every committed summary of ``book/data`` comes from, for the reproducibility page (the
    one place a reader meets commits, load averages and machine notes): a DataFrame with one row
    per header line (:func:`header_lines`, the ``settings`` lines left out), columns
    ``summaries`` (the files that share the header, named on the first row of the group, blank
    below) and ``recorded`` (the line). Files with the same header (one run, several summaries)
    form one group; files without a header are left out."""
    import pandas as pd

    folder = Path(folder) if folder is not None else book_data("weights_fingerprints.csv").parent
    groups: dict[tuple[str, ...], list[str]] = {}
    for path in sorted(folder.glob("*.csv")):
        lines = tuple(line for line in header_lines(path) if not line.startswith("settings"))
        if lines:
            groups.setdefault(lines, []).append(path.name)
    rows = []
    for lines, names in groups.items():
        for k, line in enumerate(lines):
            rows.append({"summaries": ", ".join(names) if k == 0 else "",
                         "recorded": " ".join(line.split())})
    return pd.DataFrame(rows, columns=["summaries", "recorded"])


def read_summary(name: str):
    """A committed summary of ``book/data`` as a DataFrame (its ``#`` header skipped)."""
    import pandas as pd

    return pd.read_csv(book_data(name), comment="#")


def write_summary(path: str | os.PathLike, header: list[str], frame: Any,
                  float_format: str) -> Path:
    """Write ``header`` (``#`` lines: command, code, settings, wall time) and then ``frame`` as CSV
    to ``path``; read it back with ``pandas.read_csv(path, comment="#")``."""
    from ..store.files import atomic_write

    body = frame.to_csv(index=False, float_format=float_format)
    return atomic_write(Path(path), "\n".join(header) + "\n" + body)


def runs_header(folder: str | os.PathLike, unit: str = "reviews") -> list[str]:
    """``#`` lines for each run logged in ``folder``'s run log (``_runs.jsonl``, written by
    :func:`attnxai.experiment.run`), oldest first: its command, the code it ran (commit,
    uncommitted changes), when, its wall time for how many ``unit``, its jobs and the load
    average around it. Folders written before the runner kept one log also have ``_runs.json``
    (the ``attnxai`` commands' own log then): its runs are read instead of the runner's lines of
    that time, which recorded no command (the same runs, told twice)."""
    from ..store.provenance import code_label
    from ..store.results import runs

    folder = Path(folder)
    legacy = folder / "_runs.json"
    old = json.loads(legacy.read_text()) if legacy.is_file() else []
    logged = old + [r for r in runs(folder) if "command" in r or not old]
    lines = []
    for r in sorted(logged, key=lambda r: str(r.get("started") or r.get("finished") or "")):
        argv = r.get("command") or r.get("argv")
        if argv:
            lines.append("# command: python -m attnxai "
                         + " ".join(shlex.quote(str(a)) for a in argv[1:]))
        else:
            lines.append(f"# run: {r.get('study', 'a study')} started from Python (no command "
                         "recorded)")
        when = (f"started {r['started']}" if r.get("started")
                else f"finished {r.get('finished', 'at an unrecorded time')}")
        load = ""
        if r.get("loadavg_before") and r.get("loadavg_after"):
            load = (f"; load average before {r['loadavg_before'][0]:.2f}, after "
                    f"{r['loadavg_after'][0]:.2f}")
        lines.append(f"#   code: {code_label(r.get('commit'), r.get('dirty'))}; {when}; wall time "
                     f"{float(r['seconds']):.0f} s for {r['computed']} {unit} ({r['skipped']} "
                     f"already there), jobs {r['jobs']}{load}")
        model = r.get("model") or {}
        if model.get("weights_sha256"):
            lines.append(f"#   model: {model.get('name')}; {WEIGHTS_LABEL} {model['weights_sha256']}")
    return lines


def results_header(folder: str | os.PathLike, about: str, unit: str = "reviews") -> list[str]:
    """A results folder's ``#`` lines in a summary: ``# results: {name}{about}``, the runs of
    :func:`runs_header` (``unit``) and ``# settings:`` (its ``_meta.json``, keys sorted)."""
    folder = Path(folder)
    meta = json.loads((folder / "_meta.json").read_text())
    return ([f"# results: {folder.name}{about}"] + runs_header(folder, unit)
            + [f"# settings: {json.dumps(meta, sort_keys=True)}"])


#: How a summary's header names the weights its rows were computed with (:func:`runs_header`).
WEIGHTS_LABEL = "weights sha256"


def recorded_weights(path: str | os.PathLike) -> set[str]:
    """The weights' digests (:func:`attnxai.model.store.checkpoint.weights_sha256`) that the runs behind a
    committed summary recorded in its header; empty for runs made before digests were recorded."""
    pattern = re.compile(re.escape(WEIGHTS_LABEL) + r" ([0-9a-f]{64})")
    return {m.group(1) for line in header_lines(path) for m in pattern.finditer(line)}


def same_weights(pre: Any, path: str | os.PathLike) -> bool:
    """Whether the committed summary at ``path`` was computed with exactly the weights of ``pre``
    (a Pretrained loaded from a checkpoint folder): only then can a chapter check the committed
    rows against a live rerun. Another machine trains other weights under the same model key
    (book/reproducibility.md), so the key alone does not tell."""
    from ..model.store.checkpoint import weights_sha256

    recorded = recorded_weights(path)
    return bool(recorded) and getattr(pre, "path", None) is not None \
        and weights_sha256(pre.path) in recorded
