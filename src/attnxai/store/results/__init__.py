"""The studies' results folders (the store of results; trained models are kept in
:mod:`attnxai.model.store`). Every name a study uses is importable from here.

    folder               the folder: checked, held by one run, adopted, loaded, compared
    parts                its parquet parts: written with their rows' sha256 and settings, verified
    runlog               its run log, ``_runs.jsonl``
    layout               the names of its files and keys, and its errors
"""

from __future__ import annotations

from .folder import (adopt, check_meta, content_digest, hold, load_results, prepare,
                     write_meta)
from .layout import (CHECKSUM_KEY, META, RUNS, SETTINGS_KEY, TIMING_COLUMNS, WRITER,
                     DamagedResults, ResultsBusy)
from .parts import (done_keys, part_settings, parts, read_frame, read_part, rewrite_part,
                    rows_digest, same_value, write_part)
from .runlog import check_log, log_run, runs

__all__ = ["CHECKSUM_KEY", "DamagedResults", "META", "RUNS", "ResultsBusy", "SETTINGS_KEY",
           "TIMING_COLUMNS", "WRITER", "adopt", "check_log", "check_meta", "content_digest",
           "done_keys", "hold", "load_results", "log_run", "part_settings", "parts", "prepare",
           "read_frame", "read_part", "rewrite_part", "rows_digest", "runs", "same_value",
           "write_meta", "write_part"]
