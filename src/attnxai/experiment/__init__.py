"""The book's corpus experiments, run by one resumable runner (:mod:`~attnxai.experiment.runner`).

* :mod:`~attnxai.experiment.lime_corpus`: LIME against every closed-form approximation on the
  test reviews (``python -m attnxai lime-experiment``; chapter 6).
* :mod:`~attnxai.experiment.runner`: the one runner (:class:`Study`, :func:`run`) they share,
  with :mod:`~attnxai.experiment.workers` (this process, local processes),
  :mod:`~attnxai.experiment.cluster` (a Dask cluster) and
  :mod:`~attnxai.experiment.transport` (the model shipped to the workers, verified).
* :mod:`~attnxai.experiment.store`: the results folders (parquet parts, ``_meta.json``,
  ``_runs.jsonl``).
* :func:`book_data`: the committed summaries the chapters read; :func:`write_summary` and
  :func:`runs_header` write them (the scripts in ``book/data``).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .bookdata import (book_data, header_lines, read_summary, runs_header, same_weights,
                       summary_header, write_summary)
from .lime_corpus import (COLUMNS, ORDER_SEED, LimeCorpus, LimeSettings, approximation_columns,
                          approximation_names, full_length_reviews, lime_row, lime_seed,
                          lime_summary, review_order)
from .runner import RunReport, Study, run
from .store import load_results
from .transport import ModelRef

__all__ = ["COLUMNS", "ORDER_SEED", "LimeCorpus", "LimeSettings", "ModelRef", "RunReport", "Study",
           "approximation_columns", "approximation_names", "book_data", "full_length_reviews",
           "header_lines", "lime_row", "lime_seed", "lime_summary",
           "load_results", "read_summary", "review_order", "run", "run_lime_corpus", "runs_header",
           "same_weights", "summary_header", "write_summary"]


def run_lime_corpus(out: str | os.PathLike, *, profile: str = "paper", reviews: int = 1000,
                    repeats: int = 5, bow: str | bool | Sequence[bool] = "both",
                    num_samples: int = 5000, kernel_width: float = 25.0,
                    mask_string: str = "UNK", jobs: int = 1, scheduler: str | None = None,
                    chunk: int = 20, archive: str | None = None, progress: bool = True,
                    approximations: Iterable[str] | Mapping[str, Any] | None = None,
                    device: str = "cpu", command: Sequence[str] | None = None) -> RunReport:
    """Run (or resume) the LIME corpus study into ``out`` (see
    :mod:`~attnxai.experiment.lime_corpus`); ``approximations``: names from
    :data:`attnxai.theory.APPROXIMATIONS` (default: all) or a mapping name -> function;
    ``jobs``, ``scheduler``, ``device``: where it runs; ``command``: for the run log
    (:func:`attnxai.experiment.run`)."""
    study = LimeCorpus(profile=profile, reviews=reviews, repeats=repeats, bow=bow,
                       num_samples=num_samples, kernel_width=kernel_width,
                       mask_string=mask_string, chunk=chunk, archive=archive,
                       approximations=approximations)
    return run(study, out, jobs=jobs, scheduler=scheduler, progress=progress, device=device,
               command=command)
