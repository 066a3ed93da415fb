"""An experiment's results folder: parquet parts written atomically, each carrying the sha256 of
its rows (checked whenever it is read), ``_meta.json``, the settings that produced them, and
``_runs.jsonl``, the run log: one line per finished run (its command and code, when, where:
workers, device, attnxai version, what it computed, how long it took and the load average
around it; :func:`attnxai.experiment.run` writes it, :func:`attnxai.experiment.runs_header`
reads it).

**One writer at a time.** A run holds the folder (:func:`hold`): its writers' lock
(``<folder>.lock`` beside the real folder, whatever link or spelling names it,
:func:`attnxai.store.files.writer_lock`, released by the kernel if the run is killed), under which the settings are compared with ``_meta.json`` and recorded there
before the first row, and the ``.tmp-*`` files of killed writers are removed. A second run of the
same folder is refused at once, whatever its settings, with who holds it (``_writer.json``): one
with other settings would mix two experiments in one folder; one with the same settings would
compute the rows the first is computing (each run plans its work when it starts), so it is
refused rather than made to wait for a run that may take hours: rerun it when the first has
finished, and it resumes with what is left.

**Every part is verified.** :func:`write_part` stores the sha256 of the part's rows (its logical
content: every value, by its bytes, whatever the file's layout) in the parquet file's metadata
(``attnxai.rows_sha256``); :func:`read_part` (through which :func:`done_keys`,
:func:`load_results` and the studies read) recomputes it. A part that cannot be read, or whose
rows do not match, raises :class:`DamagedResults` naming it and the command that recomputes its
rows (delete the part, rerun the folder's command: the other parts are kept). A part without the
checksum (written by an attnxai before 0.2.1) is refused the same way unless adopted with
``python -m attnxai adopt FOLDER`` (:func:`adopt`), which trusts the parts as they are.

**Every part records its settings.** A part also carries the settings it was computed with
(``attnxai.settings``, canonical JSON, covered by the rows' checksum), and a run compares them
with its own before it resumes (:func:`done_keys`), as :func:`load_results` compares them with
the folder's ``_meta.json``: an edited or deleted ``_meta.json`` cannot relabel a folder's rows,
and a part copied in from a folder with other settings is refused, named, with the command that
removes it. Parts written before parts recorded their settings are refused until ``python -m
attnxai adopt FOLDER`` records the folder's ``_meta.json`` in them (trusting it).
"""

from __future__ import annotations

import contextlib
import datetime
import hashlib
import json
import math
import os
import shlex
import uuid
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from ..errors import UserError
from ..store.files import (TMP_PREFIX, atomic_write, loads_json, probe_writable, read_json,
                           read_small_file, writer_lock)

__all__ = ["CHECKSUM_KEY", "DamagedResults", "ResultsBusy", "SETTINGS_KEY", "TIMING_COLUMNS",
           "adopt", "check_meta", "content_digest", "done_keys", "hold", "load_results",
           "log_run", "part_settings", "parts", "prepare", "read_frame", "read_part",
           "rewrite_part", "rows_digest", "runs", "write_meta", "write_part"]

META = "_meta.json"
RUNS = "_runs.jsonl"
#: Who holds a results folder (its lock is ``<folder>.lock`` beside it).
WRITER = "_writer.json"
#: Where a part keeps the sha256 of its rows (parquet key-value metadata).
CHECKSUM_KEY = b"attnxai.rows_sha256"
#: Where a part keeps the settings it was computed with (canonical JSON; under the checksum).
SETTINGS_KEY = b"attnxai.settings"
#: Columns that measure time, not results: left out when two runs are compared.
TIMING_COLUMNS = ("seconds", "cpu_seconds")


class DamagedResults(UserError, ValueError):
    """A part of a results folder cannot be read or does not match its checksum (the message
    names it and the command that recomputes its rows)."""


class ResultsBusy(UserError, RuntimeError):
    """Another run is writing the results folder (the message says who, and what to do)."""


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


def _settings_json(settings: dict[str, Any]) -> str:
    """Settings as canonical JSON (sorted keys, no spaces): what a part records."""
    return json.dumps(settings, sort_keys=True, separators=(",", ":"), allow_nan=True)


def _stamped(table, settings: dict[str, Any]):
    """``table`` with the ``settings`` recorded and the checksum of its rows (which covers
    them)."""
    meta = {k: v for k, v in (table.schema.metadata or {}).items() if k != CHECKSUM_KEY}
    table = table.replace_schema_metadata({**meta, SETTINGS_KEY: _settings_json(settings).encode()})
    return table.replace_schema_metadata({**table.schema.metadata,
                                          CHECKSUM_KEY: rows_digest(table).encode()})


def _write_frame(path: Path, frame, settings: dict[str, Any]) -> Path:
    """Write ``frame`` to ``path`` as parquet with its settings and rows' sha256, atomically."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = _stamped(pa.Table.from_pandas(frame, preserve_index=False), settings)
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


def _redo_hint(part: Path) -> str:
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

    from ..store.files import open_regular

    part = Path(part)
    try:
        with os.fdopen(open_regular(part), "rb") as fh:
            table = pq.read_table(fh)
    except Exception as exc:  # noqa: BLE001 - any failure to parse is damage, named
        raise DamagedResults(f"results part {part} cannot be read ({type(exc).__name__}: "
                             f"{str(exc)[:200]}): it is truncated or damaged; "
                             f"{_redo_hint(part)}") from None
    recorded = (table.schema.metadata or {}).get(CHECKSUM_KEY)
    if recorded is None:
        raise DamagedResults(f"results part {part} carries no checksum of its rows (written by an "
                             "older attnxai, or by hand), so it cannot be verified. If you trust "
                             "it, adopt the folder: `python -m attnxai adopt "
                             f"{shlex.quote(str(part.parent))}`; else {_redo_hint(part)}")
    if rows_digest(table) != recorded.decode(errors="replace"):
        raise DamagedResults(f"results part {part} does not match the checksum of its rows: its "
                             f"content changed after it was written; {_redo_hint(part)}")
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
            f"part; else {_redo_hint(part)}")


def _differ(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    """The settings of ``b`` (now) that ``a`` (recorded there) does not have, in words (the
    comparison :func:`check_meta` makes)."""
    a, b = json.loads(_settings_json(a)), json.loads(_settings_json(b))
    return [f"{k}: {a.get(k)!r} there, {v!r} now" for k, v in sorted(b.items())
            if not _same(a.get(k), v)]


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
                             f"{_settings_json(found[first])}) or use another --out")
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


def _frame(table):
    """A verified part's table as a DataFrame, as ``pandas.read_parquet`` gives it."""
    return table.to_pandas()


def read_frame(part: str | os.PathLike):
    """One part as a DataFrame, verified (:func:`read_part`)."""
    return _frame(read_part(part))


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


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return a == b


def prepare(out: str | os.PathLike) -> Path:
    """The results folder, checked before anything is computed: not a file, and creatable and
    writable (its nearest existing parent, if it does not exist yet); not created yet."""
    out = Path(out).expanduser()
    if out.exists() and not out.is_dir():
        raise ValueError(f"{out} exists and is not a folder: --out names a folder of parquet parts")
    try:
        probe_writable(out / META)
    except OSError as exc:
        raise UserError(f"the results folder {out} cannot be written ({exc.strerror or exc}): "
                        "choose another --out (nothing was computed)") from None
    return out


def _read_meta(out: Path) -> dict[str, Any] | None:
    meta = out / META
    if not meta.exists():
        return None
    try:
        old = read_json(meta)
    except (OSError, ValueError) as exc:
        raise DamagedResults(f"{meta} cannot be read ({exc}): the folder's settings are unknown, "
                             "so its rows cannot be resumed. Use another --out, or restore "
                             f"{META}") from None
    if not isinstance(old, dict):
        raise DamagedResults(f"{meta} does not hold a settings object: use another --out")
    return old


def check_meta(out: Path, settings: dict[str, Any]) -> bool:
    """Compare ``settings`` with the folder's ``_meta.json`` (raises if they differ and the folder
    holds rows); True if the folder already has settings that agree. Writes nothing."""
    old = _read_meta(out)
    if old is None:
        return False
    diff = [f"{k}: {old.get(k)!r} there, {v!r} now" for k, v in settings.items()
            if not _same(old.get(k), v)]
    if diff and parts(out):
        raise ValueError(f"{out} holds results computed with other settings ({'; '.join(diff)}): "
                         "use another --out or the same settings")
    return not diff


def write_meta(out: Path, settings: dict[str, Any]) -> None:
    """Create the folder and write ``_meta.json`` atomically (after every check has passed)."""
    out.mkdir(parents=True, exist_ok=True)
    atomic_write(out / META, json.dumps(settings, indent=2))


def _holder(out: Path) -> str:
    """Who holds the folder, from its ``_writer.json`` (as far as it can be read)."""
    try:
        w = read_json(out / WRITER)
        cmd = f": `{shlex.join(w['command'])}`" if w.get("command") else ""
        return f"process {w['pid']} on {w['host']}, since {w['started']}{cmd}"
    except (OSError, ValueError, KeyError, TypeError):
        return "another process (it has not said which yet)"


class Held:
    """A results folder held by this process for one run (:func:`hold`)."""

    def __init__(self, out: Path, settings: dict[str, Any], command: Sequence[str] | None):
        self.out, self.settings = out, settings
        self.command = None if command is None else [str(a) for a in command]

    def record(self) -> None:
        """Create the folder, record the settings (``_meta.json``) and who writes it
        (``_writer.json``): call before the first row."""
        from ..store.provenance import host

        write_meta(self.out, self.settings)
        now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
        atomic_write(self.out / WRITER, json.dumps({"pid": os.getpid(), "host": host(),
                                                    "started": now, "command": self.command}))


@contextlib.contextmanager
def hold(out: Path, settings: dict[str, Any],
         command: Sequence[str] | None = None) -> Iterator[Held]:
    """Hold the results folder ``out`` for one run (module docstring): take its writers' lock
    (``<out>.lock`` beside it, so that nothing is created in ``out`` by a run refused before its
    first row) without waiting (:class:`ResultsBusy` if another run holds it), compare the
    settings with the folder's and remove killed writers' temporary files; :meth:`Held.record`
    then records the settings before the first row. Released on the way out."""
    from filelock import Timeout

    out.parent.mkdir(parents=True, exist_ok=True)
    lock = writer_lock(out)
    try:
        lock.acquire(timeout=0)
    except Timeout:
        old = _read_meta(out) if out.is_dir() else None
        if old is None:
            why = ("(its settings are not recorded yet): wait until it has finished, then rerun "
                   "this command")
        elif all(_same(old.get(k), v) for k, v in settings.items()):
            why = ("with the same settings: both would compute the same rows; wait until it has "
                   "finished, then rerun this command, which resumes with what is left")
        else:
            why = "with other settings: the two would mix in one folder; use another --out"
        raise ResultsBusy(f"{out} is being written by {_holder(out)}, {why}") from None
    try:
        check_meta(out, settings)
        if out.is_dir():
            check_log(out)
        for stale in out.glob(f"{TMP_PREFIX}*") if out.is_dir() else ():
            if stale.is_file() or stale.is_symlink():     # killed writers' (we hold the lock)
                stale.unlink(missing_ok=True)
        yield Held(out, settings, command)
    finally:
        with contextlib.suppress(OSError):
            (out / WRITER).unlink()
        lock.release()


def adopt(out: str | os.PathLike) -> list[Path]:
    """Give every part of a results folder that has no checksum one, recording its rows as they
    are now (what ``python -m attnxai adopt FOLDER`` runs): it trusts that nobody changed them
    since they were written; and record the folder's settings (its ``_meta.json``) in every part
    that records none (written before parts recorded them): it trusts that ``_meta.json`` says
    how they were made. Parts that already carry both are verified, not rewritten; a part that
    cannot be read, or records other settings, is refused. Returns the parts adopted."""
    import pyarrow.parquet as pq

    out = Path(out)
    if not (out / META).is_file():
        raise ValueError(f"{out} is not a results folder (no {META})")
    adopted = []
    settings = _read_meta(out) or {}
    with hold(out, settings):
        for part in parts(out):
            try:
                table = read_part(part)
                if part_settings(table) is not None:
                    continue                  # verified, settings and all: check_settings below
            except DamagedResults:
                try:
                    table = pq.read_table(part)
                except Exception as exc:  # noqa: BLE001
                    raise DamagedResults(f"results part {part} cannot be read ({exc}): it cannot "
                                         f"be adopted; {_redo_hint(part)}") from None
                if CHECKSUM_KEY in (table.schema.metadata or {}):
                    raise                     # a checksum that does not match: damage
            table = _stamped(table, settings)
            atomic_write(part, lambda tmp, t=table: pq.write_table(t, tmp))
            adopted.append(part)
        check_settings(out, {p: part_settings(read_part(p)) for p in parts(out)}, settings,
                       f"its {META}")
    return adopted


def log_run(out: Path, record: dict[str, Any]) -> None:
    """Append one finished run to the folder's ``_runs.jsonl`` (with the time, host and attnxai
    version); nothing in it is checked on resume."""
    from ..store.provenance import host, package_version

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

    from ..store.files import _kind

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


def load_results(path: str | os.PathLike, keys: Iterable[str] = ("test_index", "bow"),
                 sort: Sequence[str] = ("rank", "bow")) -> "pd.DataFrame":  # noqa: F821
    """All rows of a results folder (or one parquet file), without duplicate keys, sorted by
    ``sort`` (booleans True first), every part verified (:func:`read_part`). Parts written with
    different columns are aligned (missing columns are NaN)."""
    import pandas as pd

    path = Path(path)
    if path.is_file():
        df = read_frame(path)
    elif path.is_dir():
        found = parts(path)
        if not found:
            raise FileNotFoundError(f"no part-*.parquet in {path}: has the experiment run?")
        tables = {p: read_part(p) for p in found}
        recorded = {p: part_settings(t) for p, t in tables.items()}
        meta = _read_meta(path)
        if meta is not None:
            check_settings(path, recorded, meta, f"its {META}")
        elif len({_settings_json(s) if s else "" for s in recorded.values()}) > 1:
            check_settings(path, recorded, next(iter(recorded.values())) or {},
                           f"the first part ({found[0].name})")
        df = pd.concat([_frame(t) for t in tables.values()], ignore_index=True)
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
