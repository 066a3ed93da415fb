"""An experiment's results folder: parquet parts (:mod:`attnxai.store.results.parts`) written
atomically, each carrying the sha256 of its rows (checked whenever it is read), ``_meta.json``, the settings that produced them, and
``_runs.jsonl``, the run log: one line per finished run (its command and code, when, where:
workers, device, attnxai version, what it computed, how long it took and the load average
around it; :func:`attnxai.experiment.run` writes it, :func:`attnxai.experiment.runs_header`
reads it).

**One writer at a time.** A run holds the folder (:func:`hold`): its writers' lock
(``<folder>.lock`` beside the real folder, whatever link or spelling names it,
:func:`attnxai.store.files.writer_lock`, released by the kernel if the run is killed), under
which the settings are compared with ``_meta.json`` and recorded there before the first row, and the ``.tmp-*`` files of killed writers are removed. A second run of the
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
import json
import os
import shlex
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from ...errors import UserError
from ..files import TMP_PREFIX, atomic_write, probe_writable, read_json, writer_lock
from .layout import CHECKSUM_KEY, META, TIMING_COLUMNS, WRITER, DamagedResults, ResultsBusy
from .parts import (as_frame, check_settings, part_settings, parts, read_frame, read_part,
                    redo_hint, same_value, settings_json, stamped)
from .runlog import check_log

__all__ = ["adopt", "check_meta", "content_digest", "hold", "load_results", "prepare",
           "write_meta"]


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
            if not same_value(old.get(k), v)]
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
        from ..provenance import host

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
        elif all(same_value(old.get(k), v) for k, v in settings.items()):
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
                                         f"be adopted; {redo_hint(part)}") from None
                if CHECKSUM_KEY in (table.schema.metadata or {}):
                    raise                     # a checksum that does not match: damage
            table = stamped(table, settings)
            atomic_write(part, lambda tmp, t=table: pq.write_table(t, tmp))
            adopted.append(part)
        check_settings(out, {p: part_settings(read_part(p)) for p in parts(out)}, settings,
                       f"its {META}")
    return adopted


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
        elif len({settings_json(s) if s else "" for s in recorded.values()}) > 1:
            check_settings(path, recorded, next(iter(recorded.values())) or {},
                           f"the first part ({found[0].name})")
        df = pd.concat([as_frame(t) for t in tables.values()], ignore_index=True)
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
