"""Beyond one layer (chapters 8 and 9): attention against LIME layer by layer, and the training
runs of the ablations, on the package's one runner.

    python -m attnxai multilayer-lime --profile multilayer --reviews 200 --out results/ml_lime
    python -m attnxai multilayer-lime --profile paper --reviews 200 --out results/ml_lime_paper
    python -m attnxai multilayer-screens --out results/ml_screens --jobs 2
    python -m attnxai skip-ablation --seeds 42,43,44 --out results/skip --jobs 2

**Attention against LIME** (:class:`LayerLime`). The first ``reviews`` test reviews of the fixed
random order :func:`~attnxai.experiment.lime_corpus.review_order` (a seeded permutation of the
25,000 test reviews: a random sample, no choice by hand; a larger run extends a smaller one), each
in :func:`attnxai.normalize_for_lime` form (the authors' preprocessing, at most ``max_len - 1``
tokens). Per review:

* LIME with the authors' settings: :func:`attnxai.fastlime.explain_instance`, ``bow=True``
  (deletion), mask ``UNK``, 5,000 samples, kernel width 25, logit 1, ``random_state = 1000 * test_index``
  (repeat 0 of the LIME corpus study). On the single-layer model it takes the fast path, on the
  multi-layer one lime's generic path through ``Pretrained.predict_logits`` (batches sorted by
  length); on the multi-layer model ``precision="bf16"`` evaluates the 5,000 perturbed texts
  with a bfloat16 copy of the weights (chapter 8 measures what that changes), ``"fp32"`` with
  the model as saved (the fast path always uses float64 projections of the saved weights);
* per layer ``l``, the ``[CLS]`` alpha-avg (mean over heads) of the float32 model on the review,
  summed over each word's occurrences (:meth:`attnxai.words.Words.to_words`), and the same for
  attention rollout (:func:`attnxai.explainers.rollout`) and for G x I;
* the Pearson correlation, over the review's distinct words, between each of these and the
  absolute LIME coefficients (``corr_layers``, ``corr_rollout``, ``corr_gxi``: G x I in absolute
  value too), NaN where one side is constant.

:func:`layer_summary` gives mean, std and count over reviews per explainer.

**Training runs** (:class:`TrainingRuns`): a list of named training configurations
(:func:`screen_runs`: one-epoch screens of the multi-layer architecture; :func:`skip_runs`: the
single-layer model with and without the skip connection, per seed), each trained through
:func:`attnxai.pretrained` (so each model lands in the cache, keyed by its config, and a killed
training resumes at its last finished epoch), one row of metrics per run. Its workers train, so
they need the IMDb archive and the cache (local ``--jobs`` only, no cluster).
"""

from __future__ import annotations

import copy
import functools
import time
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from .. import validate
from ..limit_settings import LimeSettings
from ..threads import single_threaded
from .lime_corpus import ORDER_SEED, lime_seed, ordered_reviews
from .runner import RunReport, Study, chunked, run, study_model, study_test_set
from .transport import ModelRef

__all__ = ["LayerLime", "PRECISIONS", "SCREENS", "TrainingRuns", "best_offset", "layer_lime_row",
           "layer_summary", "run_layer_lime", "screen_runs", "skip_runs"]

PRECISIONS = ("bf16", "fp32")


# ---------------------------------------------------------------- attention against LIME
def _pearson(a: np.ndarray, b: np.ndarray) -> float:
    a, b = np.asarray(a, float), np.asarray(b, float)
    if len(a) < 2 or np.ptp(a) == 0 or np.ptp(b) == 0:
        return float("nan")
    return float(np.corrcoef(a, b)[0, 1])


def _fast_path_model(model: Any) -> bool:
    """Whether LIME on ``model`` takes fastlime's closed-form path (float64 projections of the
    weights), where a bfloat16 copy would only round the weights: the single-layer model without
    the skip connection."""
    from ..model.single_layer import AttentionClassifier

    return isinstance(model, AttentionClassifier) and not getattr(model, "skip", False)


def _inference_copy(pre: Any, precision: str) -> Any:
    """``pre`` with its weights in bfloat16 (a copy) for ``precision="bf16"``, else ``pre``
    (always ``pre`` for a model LIME explains on the fast path: :func:`_fast_path_model`)."""
    import torch

    from ..model.textmodel import Pretrained

    if precision == "fp32" or _fast_path_model(pre.model):
        return pre
    model = copy.deepcopy(pre.model).to(torch.bfloat16).eval()
    return Pretrained(model, pre.vocab, pre.config, pre.metrics, None)


def layer_lime_row(pre: Any, text: str, *, seed: int, lime: LimeSettings | None = None,
                   lime_model: Any = None, **lime_fields: Any) -> dict[str, Any]:
    """One review's row (module docstring): LIME (on ``lime_model``, default ``pre``; ``lime``:
    its samples and kernel width, or any of :class:`~attnxai.limit_settings.LimeSettings`'
    fields as keywords; the study deletes words, masks with ``UNK`` and seeds with ``seed``),
    the word scores of every layer's alpha-avg, rollout and G x I (on ``pre``), and their
    correlations with the absolute LIME coefficients."""
    import torch

    from .. import explainers, fastlime
    from ..words import Words

    t0, c0 = time.perf_counter(), time.process_time()
    model = pre.model
    tokens = text.split(" ")
    layout = Words.of(tokens)
    ids = pre.encode(text, truncate=False)
    alpha = explainers.attention(model, ids, "mean", layer="all")[0]          # (L, T)
    roll = explainers.rollout(model, ids)[0]
    gxi = explainers.gradient_summaries(model, ids, 1)["GxI"][0]
    with torch.no_grad():
        logits = model(ids)[0].double().numpy()
    t_lime, c_lime = time.perf_counter(), time.process_time()
    lime = LimeSettings.of(lime, **lime_fields, bow=True, mask_string="UNK", seed=seed)
    res = fastlime.explain_instance(lime_model if lime_model is not None else pre, text,
                                    lime, target=1)
    lime_seconds = time.perf_counter() - t_lime
    lime_cpu = time.process_time() - c_lime
    coef = np.asarray(res.coef, dtype=np.float64)
    absc = np.abs(coef)

    def per_word(scores) -> np.ndarray:
        d = dict(zip(layout.words, layout.to_words(scores[1:layout.n + 1])))
        return np.asarray([d.get(w, np.nan) for w in res.words], dtype=np.float64)

    layers = [per_word(alpha[layer]) for layer in range(alpha.shape[0])]
    roll_w, gxi_w = per_word(roll), per_word(gxi)
    return {
        "n_tokens": len(tokens), "n_words": len(res.words), "words": list(res.words),
        "logits": logits.tolist(), "lime_prediction": [float(x) for x in res.prediction],
        "lime_coef": coef.tolist(), "lime_intercept": float(res.intercept),
        "lime_score": float(res.score), "path": res.path,
        "alpha_words": [x.tolist() for x in layers], "rollout_words": roll_w.tolist(),
        "gxi_words": gxi_w.tolist(),
        "corr_layers": [_pearson(x, absc) for x in layers],
        "corr_rollout": _pearson(roll_w, absc),
        "corr_gxi": _pearson(np.abs(gxi_w), absc),
        "seconds": time.perf_counter() - t0, "cpu_seconds": time.process_time() - c0,
        "lime_seconds": lime_seconds, "lime_cpu_seconds": lime_cpu,
    }


#: One inference copy per shipped model and precision, per worker process.
_COPIES: dict[tuple, Any] = {}


def _lime_chunk(model: ModelRef, settings: dict[str, Any], items: list[dict[str, Any]]
                ) -> list[dict[str, Any]]:
    """Worker: the rows of a chunk of reviews (one torch and one BLAS thread)."""
    pre = model.load()
    key = (model.key, settings["precision"])
    if key not in _COPIES:
        _COPIES.clear()
        _COPIES[key] = _inference_copy(pre, settings["precision"])
    lime_model = _COPIES[key]
    rows = []
    with single_threaded():
        for item in items:
            row = layer_lime_row(pre, item["text"], seed=lime_seed(item["test_index"], 0),
                                 num_samples=settings["num_samples"],
                                 kernel_width=settings["kernel_width"],
                                 lime_model=lime_model)
            rows.append({k: item[k] for k in ("rank", "test_index", "review_id", "label",
                                              "rating")} | row)
    return rows


class LayerLime(Study):
    """Attention of every layer against LIME on the first ``reviews`` reviews of
    :func:`review_order` (module docstring); arguments validated before anything is written."""

    key_columns = ("test_index",)
    name = "multilayer-lime"

    def __init__(self, *, profile: str = "multilayer", reviews: int = 200,
                 lime: LimeSettings | None = None, precision: str = "bf16", chunk: int = 5,
                 archive: str | None = None, **lime_fields: Any):
        """``lime``: LIME's samples and kernel width (:class:`~attnxai.limit_settings.
        LimeSettings`, checked there; or its fields as keywords, e.g. ``num_samples=200``)."""
        self.reviews = validate.positive_int(reviews, "reviews")
        lime = LimeSettings.of(lime, **lime_fields)
        self.num_samples, self.kernel_width = lime.num_samples, lime.kernel_width
        self.precision = validate.choice(precision, "precision", PRECISIONS)
        self.chunk = validate.positive_int(chunk, "chunk")
        self.pre = study_model(profile, archive)
        from ..fastlime import check_memory     # lime's generic path on the longest review

        check_memory(self.num_samples, self.pre.model.max_len - 1,
                     chars=8 * (self.pre.model.max_len - 1), path="generic")
        self.data = study_test_set(archive, self.reviews)

    def settings(self) -> dict[str, Any]:
        m = self.pre.model
        return {"profile": self.pre.config["train"]["profile"], "model": self.pre.path.name,
                "arch": type(m).__name__, "n_layers": m.n_layers, "n_heads": m.n_heads,
                "num_samples": self.num_samples, "kernel_width": self.kernel_width,
                "bow": True, "mask_string": "UNK", "target": 1,
                # these descriptions are compared when a results folder resumes: kept as the
                # existing folders recorded them (fastlime.explain_instance is now explain_instance)
                "lime": "fastlime.explain (fast path on the single-layer model, lime's generic "
                        "path through Pretrained.predict_logits otherwise), "
                        "random_state = 1000 * test_index",
                "precision": ("float64 (fast path; --precision does not apply)"
                              if _fast_path_model(m) else self.precision),
                "attention": "[CLS] alpha-avg of each layer, float32 model, summed over a "
                             "word's occurrences",
                "rollout": "explainers.rollout (0.5 A + 0.5 I on residual layers)",
                "correlation": "Pearson over the review's distinct words, against |LIME|",
                "order_seed": ORDER_SEED, "preprocessing": "normalize_for_lime"}

    def plan(self, done: set[tuple]) -> list[list[dict[str, Any]]]:
        reviews = ordered_reviews(self.data, self.reviews, self.pre.model.max_len)
        items = [item() for idx, item in reviews if (idx,) not in done]
        return chunked(items, self.chunk)

    def model(self):
        return self.pre

    def task(self):
        return functools.partial(_lime_chunk, self.model_ref(), self.settings())


def run_layer_lime(out: Any, *, jobs: int = 1, progress: bool = True, device: str = "cpu",
                   command: Sequence[str] | None = None, **study: Any) -> RunReport:
    """Run (or resume) the layer-by-layer study into ``out`` (module docstring; ``study``:
    :class:`LayerLime`'s arguments, ``lime`` or any of LIME's fields among them; ``command``:
    for the run log, :func:`attnxai.experiment.run`)."""
    return run(LayerLime(**study), out, jobs=jobs, progress=progress, device=device,
               command=command)


def layer_summary(df: Any) -> Any:
    """Mean, std and number of reviews of each correlation: one row per explainer ("layer 1"
    ... "layer L", "rollout", "|G x I|")."""
    import pandas as pd

    corr = np.asarray([list(c) for c in df["corr_layers"]], dtype=float)
    cols = {f"layer {i + 1}": corr[:, i] for i in range(corr.shape[1])}
    cols["rollout"] = df["corr_rollout"].to_numpy(float)
    cols["|G x I|"] = df["corr_gxi"].to_numpy(float)
    rows = []
    for name, x in cols.items():
        x = x[~np.isnan(x)]
        rows.append({"explainer": name, "n": len(x), "mean": x.mean() if len(x) else np.nan,
                     "std": x.std(ddof=1) if len(x) > 1 else np.nan,
                     "median": np.median(x) if len(x) else np.nan,
                     "mean_abs": np.abs(x).mean() if len(x) else np.nan})
    return pd.DataFrame(rows)


# ---------------------------------------------------------------- training runs
#: The one-epoch screens of the multi-layer architecture (chapter 8): name -> (what changes
#: from the ``multilayer`` profile, description). Each trains 1 epoch of the profile's 4-epoch
#: schedule (``stop_after=1``) and is judged by its validation accuracy; the profile itself
#: (residual + pre-LN) needs no screen run: its first epoch is the same computation.
SCREENS: dict[str, tuple[dict[str, Any], str]] = {
    "plain-lr1e-3": ({"extra": {"residual": False, "norm": "none"}, "d_attn": 64,
                        "d_value": 64},
                       "the paper's layer stacked as it is (no residual, no LayerNorm, 64-wide "
                       "heads)"),
    "plain-lr1e-4": ({"extra": {"residual": False, "norm": "none"}, "d_attn": 64,
                        "d_value": 64, "lr": 1e-4},
                       "the same at the paper's learning rate"),
    "residual-noLN": ({"extra": {"norm": "none"}}, "residual connections, no LayerNorm"),
    "post-LN": ({"extra": {"norm": "post"}}, "residual, LayerNorm after each block"),
    "pre-LN-FFN": ({"extra": {"d_ff": 256}},
                     "the profile plus a feed-forward block (GELU, 256) in each block"),
}


def best_offset(d_valid: np.ndarray, y_valid: np.ndarray, d_test: np.ndarray,
                y_test: np.ndarray, grid: np.ndarray | None = None) -> dict[str, float]:
    """What a post-hoc constant offset of the logits buys (chapter 8's Exercise 8.3): ``d`` are
    the logit differences ``f_1 - f_0`` (shape (n,)), ``y`` the labels in {0, 1}. The threshold
    ``theta`` of the rule ``d > theta`` is chosen on the validation reviews among ``grid``
    (default: -2 to 2 by 0.005; ties: the one closest to 0); returns ``theta`` and the validation
    and test accuracies at threshold 0 (the model as trained) and at ``theta``."""
    d_valid, d_test = (np.asarray(d, dtype=np.float64) for d in (d_valid, d_test))
    y_valid, y_test = (np.asarray(y).astype(bool) for y in (y_valid, y_test))
    if d_valid.shape != y_valid.shape or d_test.shape != y_test.shape or d_valid.ndim != 1:
        raise ValueError("d_valid/y_valid and d_test/y_test must be 1-d arrays of equal length")
    grid = np.linspace(-2.0, 2.0, 801) if grid is None else np.asarray(grid, dtype=np.float64)
    acc = ((d_valid[None, :] > grid[:, None]) == y_valid[None, :]).mean(axis=1)
    best = np.flatnonzero(acc == acc.max())
    theta = float(grid[best[np.argmin(np.abs(grid[best]))]])
    return {"theta": theta,
            "valid_before": float(((d_valid > 0) == y_valid).mean()),
            "valid_after": float(((d_valid > theta) == y_valid).mean()),
            "test_before": float(((d_test > 0) == y_test).mean()),
            "test_after": float(((d_test > theta) == y_test).mean())}


def screen_runs(names: Sequence[str] | None = None, *, base: Any = None) -> list[dict[str, Any]]:
    """The screens' training configurations (``base``: the profile, default ``multilayer``):
    items ``{"run": name, "config": TrainConfig dict, "description": ...}``."""
    from ..model.profiles import get_config

    base = get_config("multilayer") if base is None else get_config(base)
    names = list(SCREENS) if names is None else list(names)
    bad = [n for n in names if n not in SCREENS]
    if bad or not names:
        raise ValueError(f"unknown screens {bad or 'none'}; choose among {list(SCREENS)}")
    out = []
    for name in names:
        change, what = SCREENS[name]
        fields = {k: v for k, v in change.items() if k != "extra"}
        extra = {**base.extra, **change.get("extra", {}), "stop_after": 1}
        cfg = replace(base, profile=f"{base.profile}-screen", extra=extra, **fields)
        out.append({"run": name, "config": cfg.to_dict(), "description": what})
    return out


def skip_runs(seeds: Sequence[int], *, base: Any = "paper") -> list[dict[str, Any]]:
    """The skip-connection ablation: for each seed, ``base`` (default the paper profile) without
    and with the skip connection (profile ``paper-skip``); seed 42 without it is the paper
    profile's own model."""
    from ..model.profiles import get_config

    seeds = [validate.seed(s, "a training seed") for s in seeds]
    if not seeds or len(set(seeds)) != len(seeds):
        raise ValueError(f"seeds must be distinct and at least one, got {seeds}")
    plain = get_config(base)
    with_skip = replace(plain, profile=f"{plain.profile}-skip",
                        extra={**plain.extra, "skip": True})   # "paper" -> the paper-skip profile
    out = []
    for s in seeds:
        for skip in (False, True):
            cfg = replace(with_skip if skip else plain, seed=s)
            out.append({"run": f"{'skip' if skip else 'no skip'}, seed {s}",
                        "config": cfg.to_dict(), "skip": skip, "seed": s,
                        "description": "with the skip connection" if skip else "without"})
    return out


def _train_chunk(archive: str | None, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Worker: train (or load from the cache) each run's model; one row of metrics per run."""
    from ..model.profiles import TrainConfig
    from ..model.trained import pretrained

    rows = []
    with single_threaded():
        for item in items:
            t0 = time.perf_counter()
            pre = pretrained(TrainConfig(**item["config"]), archive=archive, progress=False)
            m = pre.metrics
            hist = m.get("history", [])
            rows.append({"rank": item["rank"], "run": item["run"],
                         "description": item.get("description", ""),
                         "skip": item.get("skip"), "seed": item["config"]["seed"],
                         "model": pre.path.name,
                         "test_accuracy": m.get("test_accuracy"),
                         "valid_accuracy": m.get("valid_accuracy"),
                         "train_accuracy": m.get("train_accuracy"),
                         "best_epoch": m.get("best_epoch"),
                         "valid_curve": [h["valid_accuracy"] for h in hist],
                         "train_loss_curve": [h["train_loss"] for h in hist],
                         "train_seconds": m.get("train_seconds"),
                         "trained_now": time.perf_counter() - t0 > 5.0,
                         "code": str(m.get("code")), "seconds": time.perf_counter() - t0})
    return rows


class TrainingRuns(Study):
    """Train each of ``runs`` (items of :func:`screen_runs` / :func:`skip_runs`) through the
    cache; one row per run. ``name``: the progress bar's label."""

    key_columns = ("run",)

    def __init__(self, runs: Sequence[dict[str, Any]], *, name: str = "training runs",
                 archive: str | None = None):
        from ..model.profiles import TrainConfig, recipe

        if not runs:
            raise ValueError("no training runs given")
        names = [r["run"] for r in runs]
        if len(set(names)) != len(names):
            raise ValueError(f"run names must be distinct, got {names}")
        for r in runs:
            recipe(TrainConfig(**r["config"]))           # checked before anything is written
        self.runs, self.name, self.archive = list(runs), name, archive

    def settings(self) -> dict[str, Any]:
        return {"runs": {r["run"]: r["config"] for r in self.runs},
                "how": "attnxai.pretrained(TrainConfig(**config)): trained once, then cached"}

    def plan(self, done: set[tuple]) -> list[list[dict[str, Any]]]:
        items = [{**r, "rank": i} for i, r in enumerate(self.runs) if (r["run"],) not in done]
        return chunked(items, 1)

    def task(self):
        return functools.partial(_train_chunk, self.archive)
