"""The agreement study of chapter 9: on test reviews, how well the explainers rank words alike:
the Shapley and Banzhaf values (closed form), LIME (one run) and its limit, Integrated Gradients,
GxI and alpha-avg, in both removal modes.

    python -m attnxai shapley-experiment --profile paper --reviews 25000 --out results/shapley --jobs 2

**What is computed.** The first ``reviews`` test reviews of the fixed random order
(:func:`~attnxai.experiment.lime_corpus.review_order`, the order of the other studies), each in
:func:`attnxai.normalize_for_lime` form. Per review and mode, one :func:`attnxai.explain` of the
methods of :data:`COMPARED` (LIME: 5,000 samples, width 25, ``random_state = 1000 * test_index``,
repeat 0 of the LIME study; everything explains logit 1, as the paper). Deletion
(``bow=True``) compares at the word level (a token score's word score is the sum over the word's
occurrences, :mod:`attnxai.words`), replacement (``bow=False``) at the token level. For every
pair of methods: Spearman's rho and Kendall's tau-b of the signed scores, Spearman's rho and
Pearson's r of their absolute values (the paper's measure, Section 7: attention is never
negative) and the overlap of their five largest ``|scores|``. Also the closed forms' own checks
(Shapley's efficiency gap, IG's completeness gap and nodes) and the time of every method.
``settings`` (the command's ``--set METHOD.FIELD=VALUE``) gives the compared methods further
settings, e.g. ``{"Shapley (delete)": {"positions": "sampled"}}`` for the certified values of
deletion with repeated words (:mod:`attnxai.theory.deletion_routes`); the results folder records
them (``"method settings"``), so a folder is never resumed under other settings.

**Output.** A results folder (parquet parts, :mod:`~attnxai.store.results`), one row per
(review, mode): :data:`COLUMNS`, then ``{metric}__{a}__{b}`` for every pair (``a`` before ``b`` in
:data:`COMPARED`' order) and ``seconds__{group}``. :func:`agreement_table` gives the book's table
(means with percentile bootstrap intervals over reviews, and paired differences).
"""

from __future__ import annotations

import functools
import itertools
import time
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .. import validate
from ..explanation import explain
from ..limit_settings import LimeSettings
from ..registry import METHODS
from ..threads import single_threaded
from .lime_corpus import ORDER_SEED, REVIEW_COLUMNS, ordered_reviews, study_lime
from .runner import RunReport, Study, chunked, run, study_model, study_test_set
from .transport import ModelRef

__all__ = ["COLUMNS", "FIT_FROM", "COMPARED", "METRICS", "MODES", "STUDY_FIELDS", "ShapleyCorpus",
           "compared_methods",
           "agreement_row", "budget_to_reach", "method_settings",
           "agreement_table", "pair_columns", "run_shapley_corpus"]

MODES = {"delete": True, "replace": False}          # mode -> lime's bow


def compared_methods() -> dict[str, dict[str, str]]:
    """The compared methods (the study's names, in their ``compared.order``) and the registry's
    method of each mode: every method of :data:`attnxai.registry.METHODS` with a ``compared``
    place (:class:`attnxai.methods.base.Compared`)."""
    entries = sorted((m for m in METHODS.values() if m.compared is not None),
                     key=lambda m: m.compared.order)
    out: dict[str, dict[str, str]] = {}
    for m in entries:
        for mode in ((m.compared.mode,) if m.compared.mode else tuple(MODES)):
            out.setdefault(m.compared.name, {})[mode] = m.name
    return out


#: The compared methods (the study's names) and the registry's method of each mode.
COMPARED = compared_methods()
#: LIME's limit in each mode: replacement with lime's own law of the kept set (exact there, at the
#: cost of the default independent-removal approximation); deletion with the defaults (exact for
#: distinct words, the binomial positions when a word repeats: chapter 6 measures their error).
LIMIT_SETTINGS = {"delete": {}, "replace": {"law": "lime"}}
#: Per pair of methods: the agreement measures (module docstring).
METRICS = ("spearman", "kendall", "spearman_abs", "pearson_abs", "top5")
COLUMNS = {
    **REVIEW_COLUMNS, "mode": "delete (bow=True, words) or replace (bow=False, tokens)",
    "n_tokens": "tokens after normalising", "n_features": "words (delete) or tokens (replace)",
    "logit": "the model's logit 1 on the review",
    "shapley_efficiency_gap": "sum of the Shapley values - (v(all) - v(empty))",
    "ig_completeness_gap": "sum of IG - (f(x) - f(baseline))", "ig_nodes": "IG's nodes",
    "ig_error": "IG's error estimate", "seconds": "wall time of this row",
    "cpu_seconds": "CPU time of this row",
}


def pair_columns() -> list[str]:
    """Every ``{metric}__{a}__{b}`` column, pairs in :data:`COMPARED`' order."""
    return [f"{m}__{a}__{b}" for a, b in itertools.combinations(COMPARED, 2) for m in METRICS]


def _pair(a: np.ndarray, b: np.ndarray) -> dict[str, float]:
    from scipy.stats import kendalltau, pearsonr, spearmanr

    nan = float("nan")
    out = {}
    flat = np.ptp(a) == 0 or np.ptp(b) == 0
    out["spearman"] = nan if flat else float(spearmanr(a, b).statistic)
    out["kendall"] = nan if flat else float(kendalltau(a, b).statistic)
    aa, ab = np.abs(a), np.abs(b)
    flat = np.ptp(aa) == 0 or np.ptp(ab) == 0
    out["spearman_abs"] = nan if flat else float(spearmanr(aa, ab).statistic)
    out["pearson_abs"] = nan if flat else float(pearsonr(aa, ab).statistic)
    k = min(5, a.size)
    top = set(np.argsort(-aa, kind="stable")[:k]) & set(np.argsort(-ab, kind="stable")[:k])
    out["top5"] = len(top) / k
    return out


#: LIME's fields the study sets itself (its own arguments, and a seed per review): not settable.
STUDY_FIELDS = {"LIME": ("num_samples", "kernel_width", "bow", "seed")}


def method_settings(settings: Mapping[str, Mapping[str, Any]] | None,
                    modes: Sequence[str] = tuple(MODES)) -> dict[str, dict[str, Any]]:
    """The further settings of the compared methods (module docstring), checked: every key a
    method the study runs in ``modes`` (its registry name, e.g. ``"Shapley (delete)"``), no field
    the study sets itself (:data:`STUDY_FIELDS`), and every value as the method's settings class
    takes it."""
    from ..registry import resolve_settings
    from ..registry import study_given

    given = study_given(settings, [v[mode] for v in COMPARED.values() for mode in modes])
    for m, fields in given.items():
        own = [f for f in fields if f in STUDY_FIELDS.get(m, ())]
        if own:
            raise ValueError(f"{m}: {own} are the study's own (--num-samples, --kernel-width, "
                             f"the mode, a seed per review), not a setting")
    resolve_settings(list(given), given)                 # every value checked, here
    return given


def agreement_row(pre: Any, text: str, *, test_index: int, mode: str,
                  lime: LimeSettings | None = None,
                  settings: Mapping[str, Mapping[str, Any]] | None = None,
                  **lime_fields: Any) -> dict[str, Any]:
    """The row of one review in one mode (module docstring); ``lime``: LIME's settings
    (``**lime_fields``: any of their fields replaced; its ``bow`` is the mode's, its seed
    ``1000 * test_index``); ``settings``: the methods' further settings
    (:func:`method_settings`)."""
    lime = LimeSettings.of(lime, **lime_fields)
    from ..theory.lime_inputs import resolve, tables
    from ..theory.shapley_values import endpoint_values

    bow = MODES[validate.choice(mode, "mode", tuple(MODES))]
    t0, c0 = time.perf_counter(), time.process_time()
    names = {k: v[mode] for k, v in COMPARED.items()}
    further = method_settings(settings) if settings else {}      # (this mode's below)
    further = {m: f for m, f in further.items() if m in names.values()}
    given: dict[str, Any] = {"LIME": LimeSettings.of(lime, bow=bow, seed=1000 * int(test_index)),
             "LIME limit": dict(LIMIT_SETTINGS[mode])}
    for m, fields in further.items():
        given[m] = LimeSettings.of(given[m], **fields) if m == "LIME" else \
            {**given.get(m, {}), **fields}
    from ..theory import LimitApproximationWarning      # (imports SymPy: only when run)

    with warnings.catch_warnings():
        # the study runs the defaults knowingly (its settings say which): no warning per review
        warnings.simplefilter("ignore", LimitApproximationWarning)
        ex = explain(pre, text, list(names.values()), target=1, settings=given)
    scores = ex.word_scores if bow else ex.token_scores
    S = {k: np.asarray(scores[v], dtype=np.float64) for k, v in names.items()}
    model, ids, _ = resolve(pre, ex.text, bow, None)
    full, empty = endpoint_values(tables(model, ids, 1), "delete" if bow else "replace")
    ig = ex.results["IG"]
    row: dict[str, Any] = {
        "mode": mode, "n_tokens": len(ex.tokens), "n_features": S["Shapley"].size,
        "logit": float(ex.logits[1]),
        "shapley_efficiency_gap": float(S["Shapley"].sum() - (full - empty).mean()),
        "ig_completeness_gap": ig.completeness_gap, "ig_nodes": ig.n_nodes,
        "ig_error": ig.error}
    for a, b in itertools.combinations(COMPARED, 2):
        for metric, value in _pair(S[a], S[b]).items():
            row[f"{metric}__{a}__{b}"] = value
    for group, secs in ex.seconds.items():
        row[f"seconds__{group}"] = secs
    row["seconds"] = time.perf_counter() - t0
    row["cpu_seconds"] = time.process_time() - c0
    return row


def _run_chunk(model: ModelRef, settings: dict[str, Any], items: list[dict[str, Any]]
               ) -> list[dict[str, Any]]:
    pre = model.load()
    rows = []
    with single_threaded():
        for item in items:
            row = agreement_row(pre, item["text"], test_index=item["test_index"],
                                mode=item["mode"], lime=settings["lime"],
                                settings=settings.get("method settings"))
            rows.append({k: item[k] for k in ("rank", "test_index", "review_id", "label",
                                              "rating")} | row)
    return rows


class ShapleyCorpus(Study):
    """The agreement study on the first ``reviews`` reviews of the test-set order, both modes
    (module docstring)."""

    key_columns = ("test_index", "mode")
    name = "shapley-agreement"

    def __init__(self, *, profile: str = "paper", reviews: int = 1000,
                 lime: LimeSettings | None = None, chunk: int = 20,
                 archive: str | None = None, modes: Sequence[str] = tuple(MODES),
                 settings: Mapping[str, Mapping[str, Any]] | None = None, **lime_fields: Any):
        """``lime``: LIME's settings (``**lime_fields``: any of their fields replaced, e.g.
        ``num_samples=200``; its ``bow`` is each mode's, its seed the review's)."""
        self.reviews = validate.positive_int(reviews, "reviews")
        self.lime = study_lime(lime, lime_fields, "ShapleyCorpus")
        self.num_samples, self.kernel_width = self.lime.num_samples, self.lime.kernel_width
        self.chunk = validate.positive_int(chunk, "chunk")
        self.modes = [validate.choice(m, "mode", tuple(MODES)) for m in dict.fromkeys(modes)]
        if not self.modes:
            raise ValueError(f"modes: choose among {list(MODES)}")
        self.method_settings = method_settings(settings, self.modes)
        self.pre = study_model(profile, archive)
        self.data = study_test_set(archive, self.reviews)

    def settings(self) -> dict[str, Any]:
        return {"profile": self.pre.config["train"]["profile"], "model": self.pre.path.name,
                "methods": {k: v for k, v in COMPARED.items()}, "metrics": list(METRICS),
                "modes": self.modes, "target": 1, "num_samples": self.num_samples,
                "kernel_width": self.kernel_width,
                **({"lime settings": other} if (other := self._other_lime_fields()) else {}),
                "lime": "fastlime.explain_instance, random_state = 1000 * test_index",
                "levels": "delete: words (token scores summed per word); replace: tokens",
                "closed forms": "theory.shapley, theory.banzhaf, theory.lime_limit, "
                                "theory.integrated_gradients: default settings, except "
                                "lime_limit(law='lime') for replacement (exact there)",
                "order_seed": ORDER_SEED, "preprocessing": "normalize_for_lime",
                **({"method settings": self.method_settings} if self.method_settings else {})}

    def _other_lime_fields(self) -> dict[str, Any]:
        """LIME's settings beyond the samples and width that are not at their defaults (nor set
        per row: ``bow``, ``seed``): recorded, and sent to the workers."""
        default = LimeSettings()
        return {k: getattr(self.lime, k) for k in ("mask_string", "backend")
                if getattr(self.lime, k) != getattr(default, k)}

    def plan(self, done: set[tuple]) -> list[list[dict[str, Any]]]:
        items = []
        for idx, item in ordered_reviews(self.data, self.reviews, self.pre.model.max_len):
            todo = [m for m in self.modes if (idx, m) not in done]
            if todo:
                base = item()
                items += [base | {"mode": m} for m in todo]
        return chunked(items, self.chunk)

    def model(self):
        return self.pre

    def task(self):
        return functools.partial(_run_chunk, self.model_ref(),
                                 {"lime": self.lime, "method settings": self.method_settings})


def run_shapley_corpus(out: Any, *, jobs: int = 1, scheduler: str | None = None,
                       progress: bool = True, device: str = "cpu",
                       command: Sequence[str] | None = None, **study: Any) -> RunReport:
    """Run (or resume) the agreement study into ``out`` (module docstring); ``study``:
    :class:`ShapleyCorpus`' arguments (``modes``, default both; ``settings``, the methods'
    further settings, :func:`method_settings`; ``lime`` or any of LIME's fields; ...)."""
    return run(ShapleyCorpus(**study), out, jobs=jobs, scheduler=scheduler, progress=progress,
               device=device, command=command)


# ---------------------------------------------------------------- the book's table
def agreement_table(df, *, n_boot: int = 1000, seed: int = 0, level: float = 0.95,
                    reference: str = "alpha-avg"):
    """One row per (mode, metric, pair): ``n`` reviews, ``mean`` and its percentile bootstrap
    interval; then, for every method ``m`` other than ``reference``, the paired difference
    ``agreement(reference, Shapley) - agreement(reference, m)`` (rows with ``pair`` =
    ``"{reference}: Shapley - {m}"``; the same resamples for both terms). NaN entries (a constant
    explanation) are left out of their column."""
    import pandas as pd

    from .faithfulness_tables import bootstrap_means

    rows = []
    for mode in MODES:
        sub = df[df["mode"] == mode]
        if sub.empty:
            continue
        for metric in METRICS:
            cols, labels = [], []
            for a, b in itertools.combinations(COMPARED, 2):
                cols.append(sub[f"{metric}__{a}__{b}"].to_numpy(float))
                labels.append(f"{a} ~ {b}")

            def with_ref(m):
                a, b = sorted((reference, m), key=list(COMPARED).index)
                return sub[f"{metric}__{a}__{b}"].to_numpy(float)

            for m in COMPARED:
                if m not in (reference, "Shapley"):
                    cols.append(with_ref("Shapley") - with_ref(m))
                    labels.append(f"{reference}: Shapley - {m}")
            X = np.stack(cols, axis=1)
            mean, lo, hi = bootstrap_means(X, n_boot=n_boot, seed=seed, level=level)
            n = np.isfinite(X).sum(axis=0)
            for lab, k, mu, a_, b_ in zip(labels, n, mean, lo, hi):
                rows.append({"mode": mode, "metric": metric, "pair": lab, "n": int(k),
                             "mean": mu, "ci_low": a_, "ci_high": b_})
    return pd.DataFrame(rows)


#: The budget from which the convergence of an estimator is fitted by a power law.
FIT_FROM = 2 ** 16


def budget_to_reach(curve, target: float, *, fit_from: int = FIT_FROM) -> tuple[float, float, bool]:
    """(model evaluations, CPU seconds, measured?) an estimator needs to reach the relative
    error ``target`` on one review of the committed convergence table (``shapley_convergence.csv``:
    columns ``budget``, ``evaluations``, ``error``, ``cpu_seconds``): the first budget that
    reaches it, else the extrapolation of power laws of the error and of the CPU time in the
    evaluations, fitted by least squares in log-log over the budgets from ``fit_from`` on."""
    import math

    if not target > 0:
        raise ValueError(f"target must be a positive error, got {target}")
    curve = curve.sort_values("evaluations")
    hit = curve[curve.error <= target]
    if len(hit):
        first = hit.iloc[0]
        return float(first.evaluations), float(first.cpu_seconds), True
    tail = curve[curve.budget >= fit_from]
    if len(tail) < 2:
        raise ValueError(f"{len(tail)} budgets from {fit_from} on: too few to extrapolate to {target}")
    a, b = np.polyfit(np.log(tail.evaluations), np.log(tail.error), 1)
    n = math.exp((math.log(target) - b) / a)
    c, d = np.polyfit(np.log(tail.evaluations), np.log(tail.cpu_seconds), 1)
    return n, math.exp(d + c * math.log(n)), False
