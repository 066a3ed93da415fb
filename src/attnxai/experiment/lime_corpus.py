"""The LIME corpus study: LIME (repeated) on test reviews against every closed-form approximation.

    python -m attnxai lime-experiment --profile paper --reviews 25000 --repeats 5 --bow both \\
        --num-samples 5000 --kernel-width 25 --out results/lime_paper --jobs 2

**What is computed.** The test reviews are taken in a fixed random order (:func:`review_order`: a
permutation of the 25,000 test reviews drawn with ``ORDER_SEED``, so the first ``N`` are a random
sample and a larger run extends a smaller one), each normalised with
:func:`attnxai.normalize_for_lime` (the authors' preprocessing). For every review and ``bow``
setting, :func:`attnxai.fastlime.explain_instance` runs ``repeats`` times (seed of repeat ``r`` of
the test review with index ``i`` in ``load_imdb().test``: :func:`lime_seed` = ``1000 * i + r``, the
same for both ``bow`` settings), and every approximation of :data:`attnxai.theory.APPROXIMATIONS` is
compared with the mean of the repeats: norm-2 error, relative error (divided by the norm of the
mean) and Spearman correlation. lime's own run-to-run spread is recorded next to them (mean norm-2
distance of the repeats to their mean), since no approximation can be expected to agree with lime
better than lime agrees with itself.

**Output.** A folder of parquet parts and ``_meta.json`` (:mod:`~attnxai.store.results`). One
row per (review, bow): see :data:`COLUMNS`; per approximation ``name``: ``name__coef``,
``name__err2``, ``name__relerr``, ``name__spearman`` (and ``name__error``, the message if it
raised). :func:`attnxai.experiment.load_results` reads the folder, :func:`lime_summary` gives the
error table. Approximations added to the comparison after rows were written are computed for those
rows on the next run (their LIME numbers are kept).
"""

from __future__ import annotations

import dataclasses
import functools
import os
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .. import validate
from ..fastlime import check_mask_string, check_memory, explain_repeats
from ..limit_settings import LimeSettings
from ..theory.approximations import APPROXIMATIONS, Approximation
from ..threads import single_threaded
from ..store import results as store
from .runner import RunReport, Study, chunked, parallel, run, study_model, study_test_set
from .transport import ModelRef

__all__ = ["COLUMNS", "ORDER_SEED", "LimeCorpus", "LimeStudySettings", "approximation_columns",
           "approximation_names", "full_length_reviews", "lime_row", "lime_seed",
           "lime_summary", "ordered_reviews", "review_order", "review_text", "run_lime_corpus",
           "study_lime"]

#: Seed of the permutation that orders the test reviews (the paper's arXiv number, 2402.03485).
ORDER_SEED = 240203485
#: The columns every study's row starts with: the review, as :func:`ordered_reviews` names it.
REVIEW_COLUMNS = {
    "rank": "position of the review in review_order()",
    "test_index": "index of the review in load_imdb().test",
    "review_id": "the id in the review's file name", "label": "1 positive, 0 negative",
    "rating": "star rating",
}
#: The fixed columns of a result row (approximation columns come after them).
COLUMNS = {
    **REVIEW_COLUMNS, "bow": "lime's bow setting", "n_tokens": "tokens after normalising",
    "n_features": "lime's features d", "words": "the features' words, in lime's order",
    "logit": "the model's explained logit on the review",
    "seeds": "lime seed of each repeat", "lime_coef": "coefficients, one list per repeat",
    "lime_intercept": "intercept per repeat", "lime_score": "weighted R^2 per repeat",
    "lime_mean": "mean coefficients over the repeats",
    "lime_spread": "mean norm-2 distance of the repeats to their mean",
    "lime_spread_rel": "lime_spread / norm of the mean",
    "lime_spearman": "mean Spearman correlation of each repeat with the mean",
    "path": "attnxai.fastlime path (fast/generic)", "seconds": "time for this row (LIME + approx.)",
    "cpu_seconds": "CPU time of the worker for this row",
}


def review_order(n_test: int, seed: int = ORDER_SEED) -> np.ndarray:
    """The order in which the experiments take the test reviews: a seeded permutation."""
    return np.random.default_rng(seed).permutation(validate.positive_int(n_test, "n_test"))


def review_text(data: Any, test_index: int, max_len: int) -> str:
    """Test review ``test_index`` as the experiments explain it: in
    :func:`attnxai.normalize_for_lime` form (the authors' preprocessing), at most ``max_len - 1``
    tokens (the model's length less [CLS])."""
    from ..text import normalize_for_lime

    return normalize_for_lime(data.test[test_index].text, max_len - 1)


def full_length_reviews(data: Any, n: int, max_len: int) -> list[str]:
    """The first ``n`` test reviews of :func:`review_order` that fill the model
    (:func:`review_text` has ``max_len - 1`` tokens): the benchmarks' worst case. Fewer if the
    test set has fewer."""
    n = validate.positive_int(n, "n")
    texts = []
    for idx in review_order(len(data.test)):
        text = review_text(data, int(idx), max_len)
        if len(text.split(" ")) == max_len - 1:
            texts.append(text)
            if len(texts) == n:
                break
    return texts


def ordered_reviews(data: Any, reviews: int, max_len: int) -> Iterable[tuple[int, Any]]:
    """``(test_index, item)`` for the first ``reviews`` test reviews of :func:`review_order`;
    ``item()`` builds the review's row (rank, test_index, review_id, label, rating and
    :func:`review_text`), so that a resumed run does not preprocess the reviews it has done."""
    order = review_order(len(data.test))
    for rank in range(reviews):
        idx = int(order[rank])

        def item(rank: int = rank, idx: int = idx) -> dict[str, Any]:
            r = data.test[idx]
            return {"rank": rank, "test_index": idx, "review_id": r.id, "label": r.label,
                    "rating": r.rating, "text": review_text(data, idx, max_len)}

        yield idx, item


def lime_seed(test_index: int, repeat: int) -> int:
    """lime's ``random_state`` for repeat ``repeat`` (< 1000) of test review ``test_index``."""
    repeat = validate.integer(repeat, "repeat")
    if not 0 <= repeat < 1000:
        raise ValueError(f"repeat must lie in [0, 1000), got {repeat}")
    return 1000 * validate.integer(test_index, "test_index") + repeat


@dataclass(frozen=True)
class LimeStudySettings:
    """Everything that changes the numbers of the LIME study (checked when resuming): the
    model, the repeats and the fields of its :class:`~attnxai.limit_settings.LimeSettings` that
    the study does not set per row (its ``bow`` is the row's, its seed :func:`lime_seed`)."""

    profile: str
    model: str            # checkpoint folder name (profile + cache key)
    repeats: int = 5
    num_samples: int = LimeSettings.num_samples
    kernel_width: float = LimeSettings.kernel_width
    mask_string: str = LimeSettings.mask_string
    order_seed: int = ORDER_SEED
    seed_rule: str = "1000 * test_index + repeat"


def study_lime(lime: LimeSettings | None, fields: Mapping[str, Any], study: str) -> LimeSettings:
    """A study's LIME settings: ``lime`` (default lime's) with ``fields`` replaced; a keyword that
    is not a field of :class:`~attnxai.limit_settings.LimeSettings` is the study's typo."""
    known = [f.name for f in dataclasses.fields(LimeSettings)]
    unknown = sorted(set(fields) - set(known))
    if unknown:
        raise TypeError(f"{study} got unexpected keyword argument(s) {unknown}: neither its own "
                        f"nor one of LIME's settings {known}")
    return LimeSettings.of(lime, **fields)


# ---------------------------------------------------------------- one review
def _spearman(a: np.ndarray, b: np.ndarray) -> float:
    from scipy.stats import spearmanr

    if len(a) < 2 or np.ptp(a) == 0 or np.ptp(b) == 0:
        return float("nan")
    return float(spearmanr(a, b).statistic)


def _mean_spearman(coefs: np.ndarray, mean: np.ndarray) -> float:
    vals = [_spearman(c, mean) for c in coefs] if len(coefs) > 1 else []
    vals = [v for v in vals if not np.isnan(v)]
    return float(np.mean(vals)) if vals else float("nan")


def approximation_columns(name: str, fn: Any, pre: Any, text: str, lime_mean: Sequence[float], *,
                          bow: bool, kernel_width: float) -> dict[str, Any]:
    """The columns ``name__coef``, ``__err2``, ``__relerr``, ``__spearman``, ``__error`` of one
    approximation on one (review, bow), against the mean LIME coefficients."""
    mean = np.asarray(lime_mean, dtype=np.float64)
    norm = float(np.linalg.norm(mean))
    try:
        approx = np.asarray(fn(pre, text, bow=bool(bow), kernel_width=float(kernel_width)),
                            dtype=np.float64).reshape(-1)
        if approx.shape != mean.shape:
            raise ValueError(f"returned {approx.shape[0]} coefficients for "
                             f"{mean.shape[0]} features")
        err = float(np.linalg.norm(approx - mean))
        return {f"{name}__coef": approx.tolist(), f"{name}__err2": err,
                f"{name}__relerr": err / norm if norm > 0 else float("nan"),
                f"{name}__spearman": _spearman(approx, mean), f"{name}__error": None}
    except Exception as exc:  # noqa: BLE001 - one failing approximation must not stop a run
        return {f"{name}__coef": None, f"{name}__err2": float("nan"),
                f"{name}__relerr": float("nan"), f"{name}__spearman": float("nan"),
                f"{name}__error": f"{type(exc).__name__}: {exc}"}


def lime_row(pre: Any, text: str, *, bow: bool, seeds: Sequence[int],
             lime: LimeSettings | None = None, approximations: Mapping[str, Any] | None = None,
             **fields: Any) -> dict[str, Any]:
    """The row for one (review, bow): LIME for every seed, their mean and spread, and each
    approximation's errors against the mean (see the module docstring). ``lime``: the LIME
    settings (default lime's), ``**fields`` any of their fields replaced (``num_samples=200``);
    ``bow`` is the row's."""
    t0, c0 = time.perf_counter(), time.process_time()
    lime = LimeSettings.of(lime, **fields, bow=bow)
    kernel_width = lime.kernel_width
    results = explain_repeats(pre, text, list(seeds), lime)
    coefs = np.stack([r.coef for r in results])
    mean = coefs.mean(axis=0)
    norm = float(np.linalg.norm(mean))
    dist = np.linalg.norm(coefs - mean, axis=1)
    row: dict[str, Any] = {
        "bow": bool(bow), "n_tokens": len(text.split()), "n_features": results[0].num_features,
        "words": results[0].words, "logit": float(results[0].prediction[results[0].target]),
        "seeds": [int(s) for s in seeds], "lime_coef": [c.tolist() for c in coefs],
        "lime_intercept": [r.intercept for r in results], "lime_score": [r.score for r in results],
        "lime_mean": mean.tolist(), "lime_spread": float(dist.mean()),
        "lime_spread_rel": float(dist.mean() / norm) if norm > 0 else float("nan"),
        "lime_spearman": _mean_spearman(coefs, mean),
        "path": results[0].path,
    }
    for name, fn in (approximations or {}).items():
        row.update(approximation_columns(name, fn, pre, text, mean, bow=bow,
                                         kernel_width=kernel_width))
    row["seconds"] = time.perf_counter() - t0
    row["cpu_seconds"] = time.process_time() - c0
    return row


# ---------------------------------------------------------------- worker side
@functools.lru_cache(maxsize=4)
def _load(model_path: str):
    from ..model.store.checkpoint import load

    return load(model_path)


def _model(model: ModelRef | str):
    """The model in a worker: the runner's shipped copy (a ModelRef), or a folder (a path)."""
    return model.load() if isinstance(model, ModelRef) else _load(model)


def _run_chunk(model: ModelRef | str, lime: LimeSettings, repeats: int,
               approximations: dict[str, Any], items: list[dict[str, Any]]
               ) -> list[dict[str, Any]]:
    """Worker: the rows of a chunk of (review, bow) items, one torch and one BLAS thread, with
    the study's LIME settings (the object, checked once when the study was built)."""
    pre = _model(model)
    rows = []
    with single_threaded():
        for item in items:
            seeds = [lime_seed(item["test_index"], r) for r in range(repeats)]
            row = lime_row(pre, item["text"], bow=item["bow"], seeds=seeds, lime=lime,
                           approximations=approximations)
            rows.append({k: item[k] for k in ("rank", "test_index", "review_id", "label",
                                              "rating")} | row)
    return rows


def _fill_chunk(model: ModelRef | str, kernel_width: float, approximations: dict[str, Any],
                rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Worker: approximation columns for finished rows (test_index, bow, text, lime_mean)."""
    pre = _model(model)
    out = []
    with single_threaded():
        for r in rows:
            cols: dict[str, Any] = {"test_index": r["test_index"], "bow": r["bow"]}
            for name, fn in approximations.items():
                cols.update(approximation_columns(name, fn, pre, r["text"], r["lime_mean"],
                                                  bow=r["bow"], kernel_width=kernel_width))
            out.append(cols)
    return out


# ---------------------------------------------------------------- the study
def _parse_bow(bow: str | bool | Sequence[bool]) -> tuple[bool, ...]:
    if isinstance(bow, (bool, np.bool_)):
        return (bool(bow),)
    if isinstance(bow, str):
        table = {"true": (True,), "false": (False,), "both": (True, False)}
        if bow.lower() not in table:
            raise ValueError(f"bow must be true, false or both, got {bow!r}")
        return table[bow.lower()]
    out = tuple(validate.bow(b) for b in bow)
    if not out:
        raise ValueError("no bow setting given")
    return out


def _approximations(approximations: Iterable[str] | Mapping[str, Any] | None) -> dict[str, Any]:
    if approximations is None:
        return dict(APPROXIMATIONS)
    if isinstance(approximations, Mapping):
        out = dict(approximations)
    else:
        if isinstance(approximations, str):
            raise TypeError("approximations must be a list of names, not one str")
        names = list(approximations)
        unknown = [a for a in names if a not in APPROXIMATIONS]
        if unknown:
            raise ValueError(f"unknown approximations {unknown}; known: {list(APPROXIMATIONS)}")
        out = {a: APPROXIMATIONS[a] for a in names}
    bad = [n for n in out if not (isinstance(n, str) and n.isidentifier())]
    if bad:
        raise ValueError(f"approximation names must be identifiers (they become column "
                         f"prefixes), got {bad}")
    return out


class LimeCorpus(Study):
    """The LIME study on the first ``reviews`` reviews of :func:`review_order` (module
    docstring). Every argument is validated here, before anything is written."""

    key_columns = ("test_index", "bow")
    name = "lime-experiment"

    def __init__(self, *, profile: str = "paper", reviews: int = 1000, repeats: int = 5,
                 bow: str | bool | Sequence[bool] = "both", lime: LimeSettings | None = None,
                 chunk: int = 20, archive: str | None = None,
                 approximations: Iterable[str] | Mapping[str, Any] | None = None,
                 **lime_fields: Any):
        """``lime``: LIME's settings (:class:`~attnxai.limit_settings.LimeSettings`, checked when
        built), ``**lime_fields`` any of their fields replaced (``num_samples=200``); their
        ``bow`` and ``seed`` are the study's (``bow``, :func:`lime_seed`)."""
        self.reviews = validate.positive_int(reviews, "reviews")
        repeats = validate.positive_int(repeats, "repeats")
        if repeats >= 1000:
            raise ValueError(f"repeats must be < 1000 (seeds are 1000 * index + repeat), got "
                             f"{repeats}")
        self.lime_settings = lime = study_lime(lime, lime_fields, "LimeCorpus")
        self.chunk = validate.positive_int(chunk, "chunk")
        self.bows = _parse_bow(bow)
        self.approximations = _approximations(approximations)
        self.pre = study_model(profile, archive)
        self.lime = LimeStudySettings(  # the record: what a resumed folder compares
            profile=self.pre.config["train"]["profile"], model=self.pre.path.name,
            repeats=repeats, num_samples=lime.num_samples, kernel_width=lime.kernel_width,
            mask_string=lime.mask_string)
        if False in self.bows:
            check_mask_string(self.pre, lime.mask_string)
        # the longest review's LIME within the memory budget, before anything runs
        check_memory(lime.num_samples, self.pre.model.max_len - 1)
        self.data = study_test_set(archive, self.reviews)

    def settings(self) -> dict[str, Any]:
        return asdict(self.lime)

    def plan(self, done: set[tuple]) -> list[list[dict[str, Any]]]:
        items = []
        for idx, item in ordered_reviews(self.data, self.reviews, self.pre.model.max_len):
            todo = [b for b in self.bows if (idx, b) not in done]
            if todo:
                row = item()
                items += [{**row, "bow": b} for b in todo]
        return chunked(items, self.chunk, group="rank")

    def model(self):
        return self.pre

    def task(self):
        return functools.partial(_run_chunk, self.model_ref(), self.lime_settings,
                                 self.lime.repeats, self.approximations)

    def finish(self, out: Path, jobs: int, client: Any, progress: bool) -> int:
        """Add the columns of approximations missing from finished parts (rows keep their LIME
        numbers; only the approximations run)."""
        import pandas as pd

        from ..progress import bar as progress_bar

        names = list(self.approximations)
        missing_by_part: dict[Path, list[str]] = {}
        for part in store.parts(out):
            cols = set(store.read_part(part).column_names)
            missing = [n for n in names if f"{n}__err2" not in cols]
            if missing:
                missing_by_part[part] = missing
        if not missing_by_part:
            return 0
        frames = {part: store.read_frame(part) for part in missing_by_part}
        chunks = []
        for part, missing in missing_by_part.items():
            df = frames[part]
            rows = [{"test_index": int(ti), "bow": bool(b), "lime_mean": list(m),
                     "text": review_text(self.data, int(ti), self.pre.model.max_len)}
                    for ti, b, m in zip(df["test_index"], df["bow"], df["lime_mean"])]
            chunks.append((tuple(missing), rows))
        total = sum(len(f) for f in frames.values())
        where = {(int(ti), bool(b)): part for part, f in frames.items()
                 for ti, b in zip(f["test_index"], f["bow"])}
        task = functools.partial(_fill_task, self.model_ref(), self.lime.kernel_width,
                                 self.approximations)
        bar = progress_bar(total=total, desc="approximations", unit="row", disable=not progress)
        for cols in parallel(task, chunks, jobs, client):
            part = where[(cols[0]["test_index"], cols[0]["bow"])]
            merged = frames[part].merge(pd.DataFrame(cols), on=["test_index", "bow"], how="left")
            store.rewrite_part(part, merged)
            bar.update(len(cols))
        bar.close()
        return total


def _fill_task(model: ModelRef | str, kernel_width: float, approximations: dict[str, Any],
               chunk: tuple[tuple[str, ...], list[dict[str, Any]]]) -> list[dict[str, Any]]:
    names, rows = chunk
    return _fill_chunk(model, kernel_width, {n: approximations[n] for n in names}, rows)


# ---------------------------------------------------------------- reading the results
def approximation_names(df: "pd.DataFrame") -> list[str]:  # noqa: F821
    """The approximations present in a results DataFrame."""
    return sorted({c[: -len("__err2")] for c in df.columns if c.endswith("__err2")})


def lime_summary(df: "pd.DataFrame") -> "pd.DataFrame":  # noqa: F821
    """The error table: per (approximation, bow), mean and std over the reviews of the norm-2
    error against the mean LIME coefficients, the relative error and the Spearman correlation,
    plus lime's own run-to-run spread as the row ``lime (repeat vs mean)``."""
    import pandas as pd

    rows = []
    for b, g in df.groupby("bow", sort=False):
        rows.append({"approximation": "lime (repeat vs mean)", "bow": bool(b), "n": len(g),
                     "err2_mean": g["lime_spread"].mean(), "err2_std": g["lime_spread"].std(),
                     "relerr_mean": g["lime_spread_rel"].mean(),
                     "relerr_std": g["lime_spread_rel"].std(),
                     "spearman_mean": g["lime_spearman"].mean(),
                     "spearman_std": g["lime_spearman"].std(), "failed": 0})
        for name in approximation_names(df):
            err = g[f"{name}__err2"]
            rows.append({"approximation": name, "bow": bool(b), "n": int(err.notna().sum()),
                         "err2_mean": err.mean(), "err2_std": err.std(),
                         "relerr_mean": g[f"{name}__relerr"].mean(),
                         "relerr_std": g[f"{name}__relerr"].std(),
                         "spearman_mean": g[f"{name}__spearman"].mean(),
                         "spearman_std": g[f"{name}__spearman"].std(),
                         "failed": int(g[f"{name}__error"].notna().sum())
                         if f"{name}__error" in g else 0})
    return pd.DataFrame(rows).set_index(["approximation", "bow"]).sort_index()


def run_lime_corpus(out: str | os.PathLike, *, jobs: int = 1, scheduler: str | None = None,
                    progress: bool = True, device: str = "cpu",
                    command: Sequence[str] | None = None, **study: Any) -> RunReport:
    """Run (or resume) the LIME corpus study into ``out`` (see
    :mod:`~attnxai.experiment.lime_corpus`); ``study``: :class:`LimeCorpus`' arguments
    (``profile``, ``reviews``, ``repeats``, ``bow``, ``lime`` or any of its fields,
    ``approximations``: names from :data:`attnxai.theory.APPROXIMATIONS` (default: all) or a
    mapping name -> function, ...); ``jobs``, ``scheduler``, ``device``: where it runs;
    ``command``: for the run log (:func:`attnxai.experiment.run`)."""
    return run(LimeCorpus(**study), out, jobs=jobs, scheduler=scheduler, progress=progress,
               device=device, command=command)
