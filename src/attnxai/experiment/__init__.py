"""The book's corpus experiments, run by one resumable runner (:mod:`~attnxai.experiment.runner`).

* :mod:`~attnxai.experiment.lime_corpus`: LIME against every closed-form approximation on the
  test reviews (``python -m attnxai lime-experiment``; chapter 6).
* :mod:`~attnxai.experiment.runner`: the one runner (:class:`Study`, :func:`run`) they share,
  with :mod:`~attnxai.experiment.workers` (this process, local processes),
  :mod:`~attnxai.experiment.cluster` (a Dask cluster) and
  :mod:`~attnxai.experiment.transport` (the model shipped to the workers, verified).
* The results folders (parquet parts, ``_meta.json``, ``_runs.jsonl``) are the store of results,
  :mod:`attnxai.store.results`.
* :func:`book_data`: the committed summaries the chapters read; :func:`write_summary` and
  :func:`runs_header` write them (the scripts in ``book/data``); :func:`provenance` lists where
  each comes from (the reproducibility page).
"""

from __future__ import annotations

from .bookdata import (book_data, header_lines, provenance, read_summary, results_header,
                       runs_header, same_weights, summary_header, write_summary)
from .lime_corpus import (COLUMNS, ORDER_SEED, LimeCorpus, LimeStudySettings,
                          approximation_columns, approximation_names, full_length_reviews,
                          lime_row, lime_seed, lime_summary, review_order, run_lime_corpus)
from .runner import RunReport, Study, run
from ..store.results import load_results
from .transport import ModelRef

__all__ = ["COLUMNS", "ORDER_SEED", "LimeCorpus", "LimeStudySettings", "ModelRef", "RunReport", "Study",
           "approximation_columns", "approximation_names", "book_data", "full_length_reviews",
           "header_lines", "lime_row", "lime_seed", "lime_summary",
           "load_results", "provenance", "read_summary", "review_order", "results_header", "run", "run_lime_corpus",
           "runs_header",
           "same_weights", "summary_header", "write_summary"]
