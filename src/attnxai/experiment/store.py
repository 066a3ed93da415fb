"""An experiment's results folder: parquet parts written atomically, ``_meta.json``, the
settings that produced them (checked before anything is written when a run resumes), and
``_runs.jsonl``, the run log: one line per finished run (its command and code, when, where:
workers, device, attnxai version, what it computed, how long it took and the load average
around it; :func:`attnxai.experiment.run` writes it, :func:`attnxai.experiment.runs_header`
reads it)."""

from __future__ import annotations

import datetime
import json
import math
import os
import uuid
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from ..files import atomic_write

__all__ = ["TIMING_COLUMNS", "check_meta", "content_digest", "done_keys", "load_results",
           "log_run", "parts", "prepare", "runs", "write_meta", "write_part"]

META = "_meta.json"
RUNS = "_runs.jsonl"
#: Columns that measure time, not results: left out when two runs are compared.
TIMING_COLUMNS = ("seconds", "cpu_seconds")


def parts(out: Path) -> list[Path]:
    """The finished parts of a results folder, in name order."""
    return sorted(Path(out).glob("part-*.parquet"))


def done_keys(out: Path, columns: Sequence[str]) -> set[tuple]:
    """The keys (tuples of ``columns``) of every row already in the folder."""
    import pyarrow.parquet as pq

    done: set[tuple] = set()
    for part in parts(out):
        t = pq.read_table(part, columns=list(columns))
        done.update(zip(*(t.column(c).to_pylist() for c in columns)))
    return done


def write_part(out: Path, rows: list[dict[str, Any]], order: int) -> Path:
    """Write ``rows`` as one part, atomically (a temporary file renamed into place)."""
    import pandas as pd

    final = Path(out) / f"part-{order:05d}-{uuid.uuid4().hex[:8]}.parquet"
    frame = pd.DataFrame(rows)
    return atomic_write(final, lambda tmp: frame.to_parquet(tmp, index=False))


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return a == b


def prepare(out: str | os.PathLike) -> Path:
    """The results folder (checked: not a file); not created yet."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise ValueError(f"{out} exists and is not a folder: --out names a folder of parquet parts")
    return out


def check_meta(out: Path, settings: dict[str, Any]) -> bool:
    """Compare ``settings`` with the folder's ``_meta.json`` (raises if they differ); True if the
    folder already has one. Writes nothing."""
    meta = out / META
    if not meta.is_file():
        return False
    old = json.loads(meta.read_text())
    diff = [f"{k}: {old.get(k)!r} there, {v!r} now" for k, v in settings.items()
            if not _same(old.get(k), v)]
    if diff:
        raise ValueError(f"{out} holds results computed with other settings ({'; '.join(diff)}): "
                         "use another --out or the same settings")
    return True


def write_meta(out: Path, settings: dict[str, Any]) -> None:
    """Create the folder and write ``_meta.json`` atomically (after every check has passed)."""
    out.mkdir(parents=True, exist_ok=True)
    atomic_write(out / META, json.dumps(settings, indent=2))


def log_run(out: Path, record: dict[str, Any]) -> None:
    """Append one finished run to the folder's ``_runs.jsonl`` (with the time, host and attnxai
    version); nothing in it is checked on resume."""
    from ..provenance import host, package_version

    line = {"finished": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "host": host(), "attnxai": package_version(), **record}
    with open(Path(out) / RUNS, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(line, default=str) + "\n")


def runs(out: str | os.PathLike) -> list[dict[str, Any]]:
    """The runs logged in a results folder, oldest first."""
    path = Path(out) / RUNS
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()
            if line.strip()]


def load_results(path: str | os.PathLike, keys: Iterable[str] = ("test_index", "bow"),
                 sort: Sequence[str] = ("rank", "bow")) -> "pd.DataFrame":  # noqa: F821
    """All rows of a results folder (or one parquet file), without duplicate keys, sorted by
    ``sort`` (booleans True first). Parts written with different columns are aligned (missing
    columns are NaN)."""
    import pandas as pd

    path = Path(path)
    if path.is_file():
        df = pd.read_parquet(path)
    elif path.is_dir():
        found = parts(path)
        if not found:
            raise FileNotFoundError(f"no part-*.parquet in {path}: has the experiment run?")
        df = pd.concat([pd.read_parquet(p) for p in found], ignore_index=True)
    else:
        raise FileNotFoundError(f"no experiment results at {path}")
    keys = [k for k in keys if k in df.columns]
    if keys:
        df = df.drop_duplicates(subset=keys, keep="first")
    sort = [c for c in sort if c in df.columns]
    if sort:
        asc = [df[c].dtype != bool for c in sort]
        df = df.sort_values(sort, ascending=asc)
    return df.reset_index(drop=True)


def _canonical(value: Any) -> Any:
    """A value as exact, JSON-able data: floats by their bits (``float.hex``), arrays as lists."""
    import numpy as np

    if value is None or isinstance(value, (str, bool, np.bool_)):
        return value if not isinstance(value, np.bool_) else bool(value)
    if isinstance(value, (float, np.floating)):
        return float(value).hex()
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (list, tuple, np.ndarray)):
        return [_canonical(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _canonical(v) for k, v in sorted(value.items())}
    return repr(value)


def content_digest(results: "str | os.PathLike | pd.DataFrame",  # noqa: F821
                   keys: Sequence[str] = ("test_index", "bow"),
                   exclude: Iterable[str] = TIMING_COLUMNS) -> str:
    """sha256 of the rows of a results folder (or of a DataFrame of its rows), bit for bit (every
    float by its bits), whatever the parts they were written in and their order; ``exclude``:
    columns left out (the timings). Two runs gave bit-identical results if and only if their
    digests are equal."""
    import hashlib

    import pandas as pd

    if isinstance(results, pd.DataFrame):
        df = results.drop_duplicates(subset=list(keys), keep="first")
        df = df.sort_values(list(keys), ascending=[df[c].dtype != bool for c in keys])
    else:
        df = load_results(results, keys=keys, sort=keys)
    df = df.drop(columns=[c for c in exclude if c in df.columns])
    cols = sorted(df.columns)
    h = hashlib.sha256(json.dumps(cols).encode())
    for row in df[cols].itertuples(index=False, name=None):
        h.update(json.dumps([_canonical(v) for v in row]).encode() + b"\n")
    return h.hexdigest()
