"""An experiment's results folder: parquet parts written atomically, and ``_meta.json``, the
settings that produced them (checked before anything is written when a run resumes)."""

from __future__ import annotations

import json
import math
import os
import uuid
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

__all__ = ["check_meta", "done_keys", "load_results", "parts", "prepare", "write_meta",
           "write_part"]

META = "_meta.json"


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
    tmp = final.with_name(f".tmp-{final.name}")
    pd.DataFrame(rows).to_parquet(tmp, index=False)
    os.replace(tmp, final)
    return final


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
    tmp = out / f".tmp-{META}"
    tmp.write_text(json.dumps(settings, indent=2))
    os.replace(tmp, out / META)


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
