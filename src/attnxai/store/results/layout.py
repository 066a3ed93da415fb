"""What a results folder holds, by name, and the errors that name a damaged or busy one (used by
:mod:`~attnxai.store.results.parts`, :mod:`~attnxai.store.results.runlog` and
:mod:`~attnxai.store.results.folder`).
"""

from __future__ import annotations

from ...errors import UserError

__all__ = ["CHECKSUM_KEY", "DamagedResults", "META", "RUNS", "ResultsBusy", "SETTINGS_KEY",
           "TIMING_COLUMNS", "WRITER"]

#: The settings of the folder's experiment (written before the first row).
META = "_meta.json"
#: The run log: one line per finished run.
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
