"""The parquet parts of a results folder: each written atomically with the sha256 of its rows
and the settings that computed them in its metadata, and verified whenever it is read
(:func:`read_part`); the settings of a folder's parts compared with a run's (:func:`done_keys`,
:func:`check_settings`). The folder around them is :mod:`attnxai.store.results.folder`.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import shlex
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..files import atomic_write, loads_json
from .layout import CHECKSUM_KEY, META, SETTINGS_KEY, DamagedResults
from .runlog import runs

__all__ = ["as_frame", "check_settings", "done_keys", "part_settings", "parts", "read_frame",
           "read_part", "redo_hint", "rewrite_part", "rows_digest", "same_value", "settings_json",
           "stamped", "write_part"]


def parts(out: Path) -> list[Path]:
    """The finished parts of a results folder, in name order."""
    return sorted(Path(out).glob("part-*.parquet"))


# ---------------------------------------------------------------------- checksums of the rows
def _kind(t) -> str:
    """A column type as the checksum sees it: the logical kind, not the file's encoding."""
    import pyarrow as pa

    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return "list"
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "string"
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return "binary"
    return str(t)


def _feed(h, arr) -> None:
    """Feed one column's logical content to the hash ``h``: its kind and length, which rows are
    null, then its values by their bytes (lists: their lengths, then their flattened values)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    t = arr.type
    h.update(f"{_kind(t)}:{len(arr)}:".encode())
    h.update(np.asarray(arr.is_null()).tobytes() if arr.null_count else b"-")
    kind = _kind(t)
    if kind == "list":
        lengths = pc.list_value_length(arr).fill_null(0)
        h.update(np.asarray(lengths, dtype="<i8").tobytes())
        _feed(h, pc.list_flatten(arr))
    elif pa.types.is_struct(t):
        for i in range(t.num_fields):
            h.update(t.field(i).name.encode() + b"\0")
            _feed(h, arr.field(i))
    elif kind in ("string", "binary"):
        values = arr.cast(pa.large_binary()).to_pylist()
        h.update(np.asarray([len(v or b"") for v in values], dtype="<i8").tobytes())
        h.update(b"".join(v or b"" for v in values))
    elif pa.types.is_boolean(t):
        h.update(np.asarray(arr.fill_null(False), dtype=bool).tobytes())
    elif pa.types.is_integer(t) or pa.types.is_floating(t):
        values = arr.fill_null(0).to_numpy(zero_copy_only=False)
        h.update(values.astype(values.dtype.newbyteorder("<"), copy=False).tobytes())
    elif pa.types.is_temporal(t):
        h.update(np.asarray(arr.cast(pa.int64()).fill_null(0), dtype="<i8").tobytes())
    elif not pa.types.is_null(t):
        raise TypeError(f"results columns of type {t} cannot be checksummed: store numbers, "
                        "booleans, strings or lists of them")


def rows_digest(table) -> str:
    """sha256 of a ``pyarrow.Table``'s rows: its column names, kinds and values, independent of
    how the file lays them out (row groups, encodings) and of the pyarrow version, and the
    schema's metadata (pandas' description of the frame, which the conversion back reads) but
    not the checksum itself."""
    h = hashlib.sha256(b"attnxai rows v1\0")
    for key, value in sorted((table.schema.metadata or {}).items()):
        if key != CHECKSUM_KEY:
            h.update(len(key).to_bytes(8, "little") + key + len(value).to_bytes(8, "little")
                     + value)
    for name in table.column_names:
        h.update(name.encode() + b"\0")
        _feed(h, table.column(name))
    return h.hexdigest()


def settings_json(settings: dict[str, Any]) -> str:
    """Settings as canonical JSON (sorted keys, no spaces): what a part records."""
    return json.dumps(settings, sort_keys=True, separators=(",", ":"), allow_nan=True)


def stamped(table, settings: dict[str, Any]):
    """``table`` with the ``settings`` recorded and the checksum of its rows (which covers
    them)."""
    meta = {k: v for k, v in (table.schema.metadata or {}).items() if k != CHECKSUM_KEY}
    table = table.replace_schema_metadata({**meta, SETTINGS_KEY: settings_json(settings).encode()})
    return table.replace_schema_metadata({**table.schema.metadata,
                                          CHECKSUM_KEY: rows_digest(table).encode()})


def _write_frame(path: Path, frame, settings: dict[str, Any]) -> Path:
    """Write ``frame`` to ``path`` as parquet with its settings and rows' sha256, atomically."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = stamped(pa.Table.from_pandas(frame, preserve_index=False), settings)
    return atomic_write(path, lambda tmp: pq.write_table(table, tmp))


def write_part(out: Path, rows: list[dict[str, Any]], order: int,
               settings: dict[str, Any]) -> Path:
    """Write ``rows``, computed with ``settings``, as one part with their checksum, atomically
    (a temporary file renamed into place)."""
    import pandas as pd

    final = Path(out) / f"part-{order:05d}-{uuid.uuid4().hex[:8]}.parquet"
    return _write_frame(final, pd.DataFrame(rows), settings)


def rewrite_part(part: Path, frame) -> Path:
    """Replace a part's rows by ``frame`` (e.g. with new columns), with their new checksum; it
    keeps the settings the part records (verified first)."""
    settings = part_settings(read_part(part))
    if settings is None:
        raise DamagedResults(_unlabelled(Path(part)))
    return _write_frame(Path(part), frame, settings)


def _with_out(command: list[str], out: Path) -> list[str]:
    """``command`` with its ``--out`` naming ``out`` (the folder may have been moved or copied
    since the command ran, or the command may have named it relative to another folder)."""
    cmd = [str(a) for a in command]
    for i, arg in enumerate(cmd):
        if arg == "--out" and i + 1 < len(cmd):
            value, at = cmd[i + 1], i + 1
        elif arg.startswith("--out="):
            value, at = arg[len("--out="):], i
        else:
            continue
        if Path(value).expanduser().absolute() != out.absolute():
            cmd[at] = str(out) if at == i + 1 else f"--out={out}"
    return cmd


def redo_hint(part: Path) -> str:
    """How to recompute a part's rows: delete it and rerun the folder's last command."""
    out = part.parent
    try:
        logged = [r.get("command") for r in runs(out) if r.get("command")]
    except (OSError, ValueError):
        logged = []
    rerun = (f"rerun `{shlex.join(_with_out(logged[-1], out))}`" if logged else
             f"rerun the command that wrote {out} (its settings are in {META})")
    return (f"delete it (rm {shlex.quote(str(part))}) and {rerun}: it computes that part's rows "
            "again and keeps the others")


def read_part(part: str | os.PathLike, columns: Sequence[str] | None = None):
    """One part as a ``pyarrow.Table`` (``columns``: only those), after checking its rows against
    the checksum it carries; :class:`DamagedResults` (naming the part and how to redo it) for a
    part that cannot be read, has no checksum or does not match it."""
    import pyarrow.parquet as pq

    from ..files import open_regular

    part = Path(part)
    try:
        with os.fdopen(open_regular(part), "rb") as fh:
            table = pq.read_table(fh)
    except Exception as exc:  # noqa: BLE001 - any failure to parse is damage, named
        raise DamagedResults(f"results part {part} cannot be read ({type(exc).__name__}: "
                             f"{str(exc)[:200]}): it is truncated or damaged; "
                             f"{redo_hint(part)}") from None
    recorded = (table.schema.metadata or {}).get(CHECKSUM_KEY)
    if recorded is None:
        raise DamagedResults(f"results part {part} carries no checksum of its rows (written by an "
                             "older attnxai, or by hand), so it cannot be verified. If you trust "
                             "it, adopt the folder: `python -m attnxai adopt "
                             f"{shlex.quote(str(part.parent))}`; else {redo_hint(part)}")
    if rows_digest(table) != recorded.decode(errors="replace"):
        raise DamagedResults(f"results part {part} does not match the checksum of its rows: its "
                             f"content changed after it was written; {redo_hint(part)}")
    if columns is not None:
        table = table.select(list(columns)).replace_schema_metadata(table.schema.metadata)
    return table


def part_settings(table) -> dict[str, Any] | None:
    """The settings a verified part (:func:`read_part`) records, None for a part written before
    parts recorded them."""
    raw = (table.schema.metadata or {}).get(SETTINGS_KEY)
    if raw is None:
        return None
    settings = loads_json(raw, "the settings a results part records")
    if not isinstance(settings, dict):
        raise DamagedResults("a results part records settings that are not a settings object")
    return settings


def _unlabelled(part: Path) -> str:
    return (f"results part {part} records no settings (written by an attnxai before parts "
            "recorded the settings they were computed with), so nothing shows which settings "
            f"made its rows. If the folder's {META} says how they were made, adopt the folder: "
            f"`python -m attnxai adopt {shlex.quote(str(part.parent))}` records them in every "
            f"part; else {redo_hint(part)}")


def _differ(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    """The settings of ``b`` (now) that ``a`` (recorded there) does not have, in words (the
    comparison :func:`check_meta` makes)."""
    a, b = json.loads(settings_json(a)), json.loads(settings_json(b))
    return [f"{k}: {a.get(k)!r} there, {v!r} now" for k, v in sorted(b.items())
            if not same_value(a.get(k), v)]


def check_settings(out: Path, found: dict[Path, dict[str, Any] | None],
                   settings: dict[str, Any], what: str) -> None:
    """Refuse parts (``found``: each part's recorded settings) whose settings are not
    ``settings`` (``what`` says whose these are: this run's, the folder's ``_meta.json``), naming
    them and the command that fixes it."""
    unlabelled = [p for p, s in found.items() if s is None]
    if unlabelled:
        raise DamagedResults(_unlabelled(unlabelled[0]))
    other = {p: _differ(s, settings) for p, s in found.items()}
    other = {p: d for p, d in other.items() if d}
    if not other:
        return
    first = next(iter(other))
    if len(other) == len(found) and META in what:
        raise DamagedResults(f"{out / META} does not hold the settings its parts were computed "
                             f"with ({'; '.join(other[first])}; each part records its own): it "
                             f"was edited or replaced. Restore it (the parts' settings: "
                             f"{settings_json(found[first])}) or use another --out")
    if len(other) == len(found):
        raise ValueError(f"{out} holds results computed with other settings than {what} "
                         f"({'; '.join(other[first])}; recorded in each part): use another "
                         "--out or the settings its parts were computed with")
    names = " ".join(shlex.quote(str(p)) for p in list(other)[:5])
    raise DamagedResults(f"{len(other)} part(s) of {out} were computed with other settings than "
                         f"the folder's other parts and {what} ({'; '.join(other[first])} in "
                         f"{first.name}): copied in from another folder? Remove them (rm "
                         f"{names}{' ...' if len(other) > 5 else ''}) and rerun the folder's "
                         "command to compute their rows again")


def as_frame(table):
    """A verified part's table as a DataFrame, as ``pandas.read_parquet`` gives it."""
    return table.to_pandas()


def read_frame(part: str | os.PathLike):
    """One part as a DataFrame, verified (:func:`read_part`)."""
    return as_frame(read_part(part))


def done_keys(out: Path, columns: Sequence[str], settings: dict[str, Any]) -> set[tuple]:
    """The keys (tuples of ``columns``) of every row already in the folder, every part verified
    and computed with ``settings`` (:func:`check_settings`: else refused, nothing is resumed)."""
    done: set[tuple] = set()
    found = {}
    for part in parts(out):
        t = read_part(part, columns)
        found[part] = part_settings(t)
        done.update(zip(*(t.column(c).to_pylist() for c in columns)))
    check_settings(Path(out), found, settings, "this run's")
    return done


def same_value(a: Any, b: Any) -> bool:
    """Whether two settings' values are the same (NaN is the same as NaN)."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return a == b
