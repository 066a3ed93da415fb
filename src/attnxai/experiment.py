"""The large-scale LIME experiment: LIME (repeated) against every closed-form approximation.

    python -m attnxai lime-experiment --profile paper --reviews 25000 --repeats 5 --bow both \\
        --num-samples 5000 --kernel-width 25 --out results/lime_paper.parquet --jobs 2

**What is computed.** The test reviews are taken in a fixed random order (:func:`review_order`:
a permutation of the 25,000 test reviews drawn with ``ORDER_SEED``, so the first ``N`` are a random
sample and a larger run extends a smaller one), each normalised with
:func:`attnxai.normalize_for_lime` (the authors' preprocessing). For every review and ``bow``
setting, :func:`attnxai.lime.explain` runs ``repeats`` times (seed of repeat ``r`` of the test
review with index ``i`` in ``load_imdb().test``: :func:`lime_seed` = ``1000 * i + r``, the same for
both ``bow`` settings), and every approximation registered in :data:`APPROXIMATIONS` is compared
with the mean of the repeats: norm-2 error, relative error (divided by the norm of the mean) and
Spearman correlation. lime's own run-to-run spread is recorded next to them (mean norm-2 distance
of the repeats to their mean), since no approximation can be expected to agree with lime better
than lime agrees with itself.

**Output.** ``--out`` is a folder of parquet parts (``part-*.parquet``, one per finished chunk of
reviews, written atomically) and ``_meta.json`` (the settings). One row per (review, bow): see
:data:`COLUMNS`; per approximation ``name``: ``name__coef``, ``name__err2``, ``name__relerr``,
``name__spearman`` (and ``name__error``, the message if it raised). :func:`load_results` reads the
folder into one DataFrame, :func:`summarize` gives the error table.

**Resuming.** Rerunning the same command skips the (review, bow) pairs already in the folder;
``--reviews`` may grow between runs. Settings that change the numbers (profile, samples, kernel
width, repeats, mask string) must match ``_meta.json``. Approximations registered after rows
were written are computed for those rows on the next run (their LIME numbers are kept), so a run
made before the theory chapters registered theirs is completed, not redone.

**Parallelism.** ``--jobs N`` runs chunks of reviews in N processes (joblib/loky), each with one
torch and one BLAS thread. ``--scheduler tcp://host:8786`` sends them to a Dask cluster through
joblib's dask backend (``pip install attnxai[dask]``); the workers must see the same model cache
(``ATTNXAI_CACHE``) and the same approximations. Results come back to this process, which writes
the parts.

**Approximations** are functions ``fn(pre, text, *, bow, kernel_width) -> coefficients`` aligned
with lime's features for ``text`` (the distinct words in order of first occurrence for
``bow=True``, the positions for ``bow=False``), registered with :func:`register_approximation`.
The runner imports :mod:`attnxai.theory` (and its ``lime*`` submodules) so that their
registrations happen, in this process and in every worker.
"""

from __future__ import annotations

from contextlib import contextmanager

import argparse
import importlib
import json
import os
import pkgutil
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .cli import command

__all__ = ["APPROXIMATIONS", "ORDER_SEED", "ExperimentSettings", "RunReport", "explain_review",
           "lime_seed", "load_approximations", "load_results", "register_approximation",
           "review_order", "run_experiment", "summarize"]

#: name -> fn(pre, text, *, bow, kernel_width) -> np.ndarray aligned with lime's features.
APPROXIMATIONS: dict[str, Callable[..., np.ndarray]] = {}
#: Seed of the permutation that orders the test reviews (the paper's arXiv number, 2402.03485).
ORDER_SEED = 240203485
#: The fixed columns of a result row (approximation columns come after them).
COLUMNS = {
    "rank": "position of the review in review_order()",
    "test_index": "index of the review in load_imdb().test",
    "review_id": "the id in the review's file name", "label": "1 positive, 0 negative",
    "rating": "star rating", "bow": "lime's bow setting", "n_tokens": "tokens after normalising",
    "n_features": "lime's features d", "words": "the features' words, in lime's order",
    "logit": "the model's explained logit on the review",
    "seeds": "lime seed of each repeat", "lime_coef": "coefficients, one list per repeat",
    "lime_intercept": "intercept per repeat", "lime_score": "weighted R^2 per repeat",
    "lime_mean": "mean coefficients over the repeats",
    "lime_spread": "mean norm-2 distance of the repeats to their mean",
    "lime_spread_rel": "lime_spread / norm of the mean",
    "lime_spearman": "mean Spearman correlation of each repeat with the mean",
    "path": "attnxai.lime path (fast/generic)", "seconds": "time for this row (LIME + approx.)",
    "cpu_seconds": "CPU time of the worker for this row",
}


def register_approximation(name: str, *, replace: bool = False):
    """Decorator: add ``fn(pre, text, *, bow, kernel_width) -> np.ndarray`` to
    :data:`APPROXIMATIONS` under ``name``. Registering a name twice raises unless ``replace=True``
    (or it is the same function re-imported, e.g. after a module reload)."""
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"approximation names must be identifiers (they become column "
                         f"prefixes), got {name!r}")

    def deco(fn: Callable[..., np.ndarray]) -> Callable[..., np.ndarray]:
        old = APPROXIMATIONS.get(name)
        same = old is not None and (getattr(old, "__module__", None), getattr(old, "__qualname__",
                                    None)) == (fn.__module__, fn.__qualname__)
        if old is not None and not (replace or same):
            raise ValueError(f"an approximation named {name!r} is already registered "
                             f"({old.__module__}.{old.__qualname__})")
        APPROXIMATIONS[name] = fn
        return fn

    return deco


def load_approximations() -> dict[str, Callable[..., np.ndarray]]:
    """Import :mod:`attnxai.theory` and its ``lime*`` submodules (if they exist), which register
    their approximations; returns :data:`APPROXIMATIONS`."""
    try:
        theory = importlib.import_module("attnxai.theory")
    except ModuleNotFoundError as exc:
        if exc.name != "attnxai.theory":
            raise
        return APPROXIMATIONS
    for info in pkgutil.iter_modules(getattr(theory, "__path__", [])):
        if info.name.startswith("lime"):
            importlib.import_module(f"attnxai.theory.{info.name}")
    return APPROXIMATIONS


def review_order(n_test: int, seed: int = ORDER_SEED) -> np.ndarray:
    """The order in which the experiment takes the test reviews: a seeded permutation."""
    return np.random.default_rng(seed).permutation(n_test)


def lime_seed(test_index: int, repeat: int) -> int:
    """lime's ``random_state`` for repeat ``repeat`` (< 1000) of test review ``test_index``."""
    if not 0 <= repeat < 1000:
        raise ValueError(f"repeat must lie in [0, 1000), got {repeat}")
    return 1000 * int(test_index) + int(repeat)


@dataclass(frozen=True)
class ExperimentSettings:
    """Everything that changes the numbers (checked when resuming)."""

    profile: str
    model: str            # checkpoint folder name (profile + cache key)
    repeats: int = 5
    num_samples: int = 5000
    kernel_width: float = 25.0
    mask_string: str = "UNK"
    order_seed: int = ORDER_SEED
    seed_rule: str = "1000 * test_index + repeat"


@dataclass
class RunReport:
    out: Path
    computed: int          # (review, bow) rows computed in this run
    skipped: int           # rows already in the folder
    seconds: float
    approximations: list[str]
    filled: int = 0        # finished rows that got the columns of newly registered approximations

    @property
    def rows_per_second(self) -> float:
        return self.computed / self.seconds if self.seconds > 0 else float("nan")


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


def approximation_columns(name: str, fn: Callable[..., np.ndarray], pre: Any, text: str,
                          lime_mean: Sequence[float], *, bow: bool, kernel_width: float
                          ) -> dict[str, Any]:
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


def explain_review(pre: Any, text: str, *, bow: bool, seeds: Sequence[int],
                   num_samples: int = 5000, kernel_width: float = 25.0,
                   mask_string: str = "UNK",
                   approximations: dict[str, Callable[..., np.ndarray]] | None = None
                   ) -> dict[str, Any]:
    """The row for one (review, bow): LIME for every seed, their mean and spread, and each
    approximation's errors against the mean (see the module docstring)."""
    from .lime import explain_repeats

    t0, c0 = time.perf_counter(), time.process_time()
    results = explain_repeats(pre, text, list(seeds), num_samples=num_samples,
                              kernel_width=kernel_width, bow=bow, mask_string=mask_string)
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
_MODELS: dict[str, Any] = {}


@contextmanager
def _worker(model_path: str, names: list[str]):
    """A worker's model and approximations, with one torch and one BLAS thread while it runs
    (two processes on two cores must not each start two BLAS threads)."""
    import torch
    from threadpoolctl import threadpool_limits

    from .checkpoint import load
    from . import lime as _lime  # noqa: F401  (imports scipy's BLAS before limiting it)

    approximations = load_approximations()
    missing = [a for a in names if a not in approximations]
    if missing:
        raise RuntimeError(f"approximations {missing} are not registered in this worker: "
                           "register them in an importable module (e.g. attnxai.theory)")
    if model_path not in _MODELS:
        _MODELS[model_path] = load(model_path)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with threadpool_limits(1):
            yield _MODELS[model_path], {a: approximations[a] for a in names}
    finally:
        torch.set_num_threads(threads)


def _run_chunk(model_path: str, items: list[dict[str, Any]], settings: dict[str, Any],
               approx_names: list[str]) -> list[dict[str, Any]]:
    """Worker: the rows of a chunk of (review, bow) items."""
    rows = []
    with _worker(model_path, approx_names) as (pre, approximations):
        for item in items:
            seeds = [lime_seed(item["test_index"], r) for r in range(settings["repeats"])]
            row = explain_review(pre, item["text"], bow=item["bow"], seeds=seeds,
                                 num_samples=settings["num_samples"],
                                 kernel_width=settings["kernel_width"],
                                 mask_string=settings["mask_string"],
                                 approximations=approximations)
            rows.append({k: item[k] for k in ("rank", "test_index", "review_id", "label",
                                              "rating")} | row)
    return rows


def _fill_chunk(model_path: str, rows: list[dict[str, Any]], kernel_width: float,
                names: list[str]) -> list[dict[str, Any]]:
    """Worker: approximation columns for finished rows (dicts with test_index, bow, text,
    lime_mean)."""
    out = []
    with _worker(model_path, names) as (pre, approximations):
        for r in rows:
            cols: dict[str, Any] = {"test_index": r["test_index"], "bow": r["bow"]}
            for name, fn in approximations.items():
                cols.update(approximation_columns(name, fn, pre, r["text"], r["lime_mean"],
                                                  bow=r["bow"], kernel_width=kernel_width))
            out.append(cols)
    return out


# ---------------------------------------------------------------- files
def _parts(out: Path) -> list[Path]:
    return sorted(out.glob("part-*.parquet"))


def _done(out: Path) -> set[tuple[int, bool]]:
    import pyarrow.parquet as pq

    done: set[tuple[int, bool]] = set()
    for part in _parts(out):
        t = pq.read_table(part, columns=["test_index", "bow"])
        done.update(zip(t.column("test_index").to_pylist(), t.column("bow").to_pylist()))
    return done


def _write_part(out: Path, rows: list[dict[str, Any]]) -> Path:
    import pandas as pd

    first = min(r["rank"] for r in rows)
    final = out / f"part-{first:05d}-{uuid.uuid4().hex[:8]}.parquet"
    tmp = out / f".tmp-{final.name}"
    pd.DataFrame(rows).to_parquet(tmp, index=False)
    os.replace(tmp, final)
    return final


def _check_meta(out: Path, settings: ExperimentSettings) -> None:
    meta = out / "_meta.json"
    mine = asdict(settings)
    if meta.is_file():
        old = json.loads(meta.read_text())
        diff = [f"{k}: {old.get(k)!r} there, {v!r} now" for k, v in mine.items()
                if old.get(k) != v]
        if diff:
            raise ValueError(f"{out} holds results computed with other settings "
                             f"({'; '.join(diff)}): use another --out or the same settings")
    else:
        tmp = out / ".tmp-meta.json"
        tmp.write_text(json.dumps(mine, indent=2))
        os.replace(tmp, meta)


# ---------------------------------------------------------------- the runner
def _parse_bow(bow: str | bool | Sequence[bool]) -> tuple[bool, ...]:
    if isinstance(bow, bool):
        return (bow,)
    if isinstance(bow, str):
        table = {"true": (True,), "false": (False,), "both": (True, False)}
        if bow.lower() not in table:
            raise ValueError(f"bow must be true, false or both, got {bow!r}")
        return table[bow.lower()]
    out = tuple(bool(b) for b in bow)
    if not out:
        raise ValueError("no bow setting given")
    return out


def _dask_client(scheduler: str):
    try:
        from distributed import Client
    except ImportError as exc:
        raise RuntimeError("--scheduler needs Dask's distributed package, which is not installed: "
                           "pip install attnxai[dask]") from exc
    return Client(scheduler)


def run_experiment(out: str | os.PathLike, *, profile: str = "paper", reviews: int = 1000,
                   repeats: int = 5, bow: str | bool | Sequence[bool] = "both",
                   num_samples: int = 5000, kernel_width: float = 25.0,
                   mask_string: str = "UNK", jobs: int = 1, scheduler: str | None = None,
                   chunk: int = 20, archive: str | None = None, progress: bool = True,
                   approximations: Iterable[str] | None = None) -> RunReport:
    """Run (or resume) the experiment on the first ``reviews`` reviews of :func:`review_order`;
    see the module docstring. ``approximations``: names to compare (default: all registered).
    Returns a :class:`RunReport` (rows computed and skipped, time)."""
    from joblib import delayed
    from tqdm.auto import tqdm

    from .checkpoint import pretrained
    from .data import load_imdb
    from .text import normalize_for_lime

    if isinstance(reviews, bool) or not isinstance(reviews, int) or reviews < 1:
        raise ValueError(f"reviews must be a positive int, got {reviews!r}")
    if not isinstance(repeats, int) or not 1 <= repeats < 1000:
        raise ValueError(f"repeats must be an int in [1, 1000), got {repeats!r}")
    if not isinstance(jobs, int) or jobs == 0 or jobs < -1:
        raise ValueError(f"jobs must be a positive int (or -1 for all cores), got {jobs!r}")
    if not isinstance(chunk, int) or chunk < 1:
        raise ValueError(f"chunk must be a positive int, got {chunk!r}")
    bows = _parse_bow(bow)
    client = _dask_client(scheduler) if scheduler else None

    registry = load_approximations()
    names = list(registry) if approximations is None else list(approximations)
    unknown = [a for a in names if a not in registry]
    if unknown:
        raise ValueError(f"unknown approximations {unknown}; registered: {sorted(registry)}")

    pre = pretrained(profile, archive=archive, train_if_missing=False)
    settings = ExperimentSettings(profile=pre.config["train"]["profile"], model=pre.path.name,
                                  repeats=repeats, num_samples=int(num_samples),
                                  kernel_width=float(kernel_width), mask_string=mask_string)
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise ValueError(f"{out} exists and is not a folder: --out names a folder of parquet parts")
    out.mkdir(parents=True, exist_ok=True)
    _check_meta(out, settings)

    data = load_imdb(archive)
    order = review_order(len(data.test))
    if reviews > len(order):
        raise ValueError(f"reviews={reviews} but the test set has {len(order)} reviews")
    done = _done(out)
    limit = pre.model.max_len - 1
    todo: list[list[dict[str, Any]]] = []
    skipped, current = 0, []
    for rank in range(reviews):
        idx = int(order[rank])
        r = data.test[idx]
        items = [b for b in bows if (idx, b) not in done]
        skipped += len(bows) - len(items)
        if not items:
            continue
        text = normalize_for_lime(r.text, limit)
        for b in items:
            current.append({"rank": rank, "test_index": idx, "review_id": r.id, "label": r.label,
                            "rating": r.rating, "bow": b, "text": text})
        if len({it["rank"] for it in current}) >= chunk:
            todo.append(current)
            current = []
    if current:
        todo.append(current)

    n_rows = sum(len(c) for c in todo)
    t0 = time.perf_counter()
    filled = 0
    try:
        bar = tqdm(total=n_rows, desc="lime-experiment", unit="row", disable=not progress,
                   smoothing=0.05)
        tasks = [delayed(_run_chunk)(str(pre.path), c, asdict(settings), names) for c in todo]
        for rows in _parallel(tasks, jobs, client):
            _write_part(out, rows)
            bar.update(len(rows))
        bar.close()
        filled = _fill_missing(out, pre, data, names, kernel_width=float(kernel_width), jobs=jobs,
                               client=client, progress=progress)
    finally:
        if client is not None:
            client.close()
    return RunReport(out=out, computed=n_rows, skipped=skipped,
                     seconds=time.perf_counter() - t0, approximations=names, filled=filled)


def _parallel(tasks: list, jobs: int, client: Any) -> Iterable[Any]:
    """Results of joblib ``tasks`` as they finish: local processes, or the Dask cluster."""
    from joblib import Parallel, parallel_config

    if not tasks:
        return
    if client is not None:
        with parallel_config(backend="dask"):
            yield from Parallel(n_jobs=-1, return_as="generator")(tasks)
    else:
        yield from Parallel(n_jobs=jobs, return_as="generator_unordered")(tasks)


def _fill_missing(out: Path, pre: Any, data: Any, names: list[str], *, kernel_width: float,
                  jobs: int, client: Any, progress: bool) -> int:
    """Add the columns of approximations registered after some parts were written (rows keep
    their LIME numbers; only the approximations run). Returns the number of rows filled."""
    import pandas as pd
    from joblib import delayed
    from tqdm.auto import tqdm

    from .text import normalize_for_lime

    import pyarrow.parquet as pq

    limit = pre.model.max_len - 1
    jobs_by_part: dict[Path, list[str]] = {}
    for part in _parts(out):
        cols = set(pq.read_schema(part).names)
        missing = [n for n in names if f"{n}__err2" not in cols]
        if missing:
            jobs_by_part[part] = missing
    if not jobs_by_part:
        return 0
    frames = {part: pd.read_parquet(part) for part in jobs_by_part}
    tasks, keys = [], []
    for part, missing in jobs_by_part.items():
        df = frames[part]
        rows = [{"test_index": int(ti), "bow": bool(b), "lime_mean": list(m),
                 "text": normalize_for_lime(data.test[int(ti)].text, limit)}
                for ti, b, m in zip(df["test_index"], df["bow"], df["lime_mean"])]
        tasks.append(delayed(_fill_chunk)(str(pre.path), rows, kernel_width, missing))
        keys.append(part)
    total = sum(len(frames[p]) for p in keys)
    bar = tqdm(total=total, desc="approximations", unit="row", disable=not progress)
    # results come back unordered: match them to their part by (test_index, bow)
    where = {(int(ti), bool(b)): part for part in keys
             for ti, b in zip(frames[part]["test_index"], frames[part]["bow"])}
    for cols in _parallel(tasks, jobs, client):
        part = where[(cols[0]["test_index"], cols[0]["bow"])]
        extra = pd.DataFrame(cols)
        merged = frames[part].merge(extra, on=["test_index", "bow"], how="left")
        tmp = part.with_name(f".tmp-{part.name}")
        merged.to_parquet(tmp, index=False)
        os.replace(tmp, part)
        bar.update(len(cols))
    bar.close()
    return total


# ---------------------------------------------------------------- reading the results
def book_data(name: str, start: str | os.PathLike | None = None) -> Path:
    """``book/data/<name>``: the committed corpus summaries the LIME chapter reads, found from
    ``start`` (default: the working directory, where a chapter executes) or its parents, else
    from the source checkout this package is installed from."""
    here = Path(start) if start is not None else Path.cwd()
    roots = [here, *here.parents, Path(__file__).resolve().parents[2]]
    for root in roots:
        path = root / "book" / "data" / name
        if path.is_file():
            return path
    raise FileNotFoundError(f"book/data/{name} not found from {here} "
                            "(make it with book/data/make_lime_corpus_summary.py)")


def load_results(path: str | os.PathLike) -> "pd.DataFrame":  # noqa: F821
    """All rows of an experiment folder (or one parquet file), sorted by rank then bow (True
    first). Parts written with different approximations are aligned (missing columns are NaN)."""
    import pandas as pd

    path = Path(path)
    if path.is_file():
        df = pd.read_parquet(path)
    elif path.is_dir():
        parts = _parts(path)
        if not parts:
            raise FileNotFoundError(f"no part-*.parquet in {path}: has the experiment run?")
        df = pd.concat([pd.read_parquet(p) for p in parts], ignore_index=True)
    else:
        raise FileNotFoundError(f"no experiment results at {path}")
    df = df.drop_duplicates(subset=["test_index", "bow"], keep="first")
    return df.sort_values(["rank", "bow"], ascending=[True, False]).reset_index(drop=True)


def approximation_names(df: "pd.DataFrame") -> list[str]:  # noqa: F821
    """The approximations present in a results DataFrame."""
    return sorted({c[: -len("__err2")] for c in df.columns if c.endswith("__err2")})


def summarize(df: "pd.DataFrame") -> "pd.DataFrame":  # noqa: F821
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


# ---------------------------------------------------------------- command line
def _add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--profile", default="paper", help="trained model to explain (paper or quick)")
    p.add_argument("--reviews", type=int, default=1000,
                   help="first N reviews of the seeded test-set order (default 1000)")
    p.add_argument("--repeats", type=int, default=5, help="LIME runs per review (default 5)")
    p.add_argument("--bow", default="both", choices=["true", "false", "both"],
                   help="lime's bow setting: true (delete words), false (replace), both")
    p.add_argument("--num-samples", type=int, default=5000)
    p.add_argument("--kernel-width", type=float, default=25.0)
    p.add_argument("--mask-string", default="UNK", help="bow=false replacement (default UNK)")
    p.add_argument("--out", required=True,
                   help="results folder (parquet parts; rerun the same command to resume)")
    p.add_argument("--jobs", type=int, default=1, help="processes (default 1; -1 = all cores)")
    p.add_argument("--scheduler", default=None,
                   help="Dask scheduler address, e.g. tcp://host:8786 (pip install attnxai[dask])")
    p.add_argument("--chunk", type=int, default=20, help="reviews per task (default 20)")
    p.add_argument("--approximations", default=None,
                   help="comma-separated names to compare (default: all registered; 'none')")
    p.add_argument("--archive", default=None, help="IMDb archive (else $ATTNXAI_IMDB_ARCHIVE)")
    p.add_argument("--no-progress", action="store_true")


def _run(args: argparse.Namespace) -> int:
    names = None
    if args.approximations is not None:
        names = [] if args.approximations.strip().lower() == "none" else \
            [a.strip() for a in args.approximations.split(",") if a.strip()]
    report = run_experiment(args.out, profile=args.profile, reviews=args.reviews,
                            repeats=args.repeats, bow=args.bow, num_samples=args.num_samples,
                            kernel_width=args.kernel_width, mask_string=args.mask_string,
                            jobs=args.jobs, scheduler=args.scheduler, chunk=args.chunk,
                            archive=args.archive, progress=not args.no_progress,
                            approximations=names)
    print(f"{report.out}: {report.computed} rows computed, {report.skipped} already there"
          + (f" ({report.filled} given new approximations)" if report.filled else "") + ", "
          f"{report.seconds:.0f} s ({report.rows_per_second:.2f} rows/s); approximations: "
          f"{', '.join(report.approximations) or 'none'}")
    df = load_results(report.out)
    with __import__("pandas").option_context("display.width", 120, "display.max_columns", 20):
        print(summarize(df).round(4).to_string())
    return 0


command("lime-experiment", "LIME (repeated) on many test reviews vs every registered "
        "approximation; resumable, parallel")((_add_arguments, _run))
