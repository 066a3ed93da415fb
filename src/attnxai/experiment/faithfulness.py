"""The faithfulness study: the paper's seven explainers, LIME's closed-form limit, the Shapley and
Banzhaf values and Integrated Gradients (chapter 9) and a random baseline, scored by every metric
of :mod:`attnxai.perturbation` on test reviews (chapter 7).

    python -m attnxai faithfulness --profile paper --reviews 1000 --out results/faithfulness --jobs 2

**What is computed.** The first ``reviews`` test reviews of the fixed random order
:func:`~attnxai.experiment.lime_corpus.review_order` (the order of the LIME study, so they are a
random sample of the test set and a larger run extends a smaller one), each in
:func:`attnxai.normalize_for_lime` form (the authors' preprocessing, at most ``max_len - 1``
tokens). Per review, :func:`review_explanation` (:func:`attnxai.explain`) computes every method
of :data:`~attnxai.registry.ALL_METHODS` for the explained class (``target``: logit 1 as in the
paper by default, or each review's predicted class with ``target="predicted"``, ferret's default;
LIME: 5,000 samples, width 25, ``bow=True``, ``random_state = 1000 * test_index``, i.e. repeat 0
of the LIME study; random scores: ``default_rng(test_index)``), then
:func:`attnxai.perturbation.evaluate` every metric, for both perturbations and both selection
rules, with ``p`` = the probability of the explained class; and the pairwise Kendall tau-b of the
methods (signed and absolute scores). Both tie orders of :data:`attnxai.perturbation.TIES` are
recorded in the same run: the default (``"position"``, the earlier of tied positions first) for
every number, and ferret's (``"ferret"``, the later first) for the AOPC measures and the curves'
areas, evaluated again only for the methods whose scores tie (the word-level ones, LIME, its limit
and the deletion game values, give every occurrence of a word its word's score) and copied for
the others, whose rankings do not depend on the tie order.

**Output.** A results folder (parquet parts and ``_meta.json``, :mod:`~attnxai.store.results`),
one row per review: see :data:`COLUMNS`, then ``{method}__{perturbation}__{selection}__{metric}``
for ``comprehensiveness``, ``sufficiency``, ``deletion_auc``, ``insertion_auc``, ``n_rationales``,
``deletion_curve``, ``insertion_curve`` (lists at :data:`attnxai.perturbation.CURVE_FRACTIONS`),
the same with ``__ferret`` appended for the first four (ferret's tie order, :func:`metric_column`),
``{method}__{perturbation}__tau_loo``, ``scores__{method}`` (float32 lists, one per word) and
``agree__{a}__{b}`` / ``agree_abs__{a}__{b}``. :func:`faithfulness_summary`, :func:`curve_summary`
and :func:`agreement_summary` give the tables of the book, with percentile bootstrap intervals over
reviews.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
import functools
import time
import warnings
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from .. import validate
from ..explanation import Explanation, explain_with
from ..limit_settings import LimeSettings
from ..perturbation import (CURVE_FRACTIONS, DEFAULT_SELECTIONS, PERTURBATIONS, QUANTILES,
                            SELECTIONS, agreement, evaluate)
from ..registry import (ALL_METHODS, METHODS, study_given, study_records, study_seeds,
                        study_settings)
from ..threads import single_threaded
from .faithfulness_tables import (GROUPS, SUMMARY_METRICS, agreement_summary, bootstrap_means,
                                  curve_summary, faithfulness_summary, metric_column,
                                  read_summary, tie_spread)
from .lime_corpus import ORDER_SEED, REVIEW_COLUMNS, ordered_reviews, study_lime
from .runner import RunReport, Study, chunked, run, study_model, study_test_set
from .transport import ModelRef

__all__ = ["COLUMNS", "FaithfulnessStudy", "GROUPS", "MetricSettings", "SUMMARY_METRICS",
           "agreement_summary",
           "bootstrap_means", "curve_summary", "faithfulness_row", "faithfulness_summary",
           "metric_column", "read_summary", "review_explanation", "run_faithfulness",
           "tie_spread"]

#: The fixed columns of a result row (metric columns follow, see the module docstring).
COLUMNS = {
    **REVIEW_COLUMNS, "n_tokens": "words after normalising (the model reads them all)",
    "logits": "the model's logits on the review", "target": "the explained class",
    "p": "probability of the explained class (p(x))", "p1": "probability of class 1",
    "predicted": "predicted class (argmax of the logits)",
    "p_empty__replace": "p with every word replaced by UNK",
    "p_empty__delete": "p of [CLS] alone", "backend": "model evaluation (fast/model)",
    "seconds": "wall time for this review", "cpu_seconds": "CPU time for this review",
    "seconds_scores": "of which computing the explanations",
}
def _has_ties(scores: np.ndarray) -> bool:
    return np.unique(scores).size < scores.size


# ---------------------------------------------------------------- one review
def review_explanation(pre: Any, text: str, *, test_index: int,
                       methods: Sequence[str] = ALL_METHODS, lime: LimeSettings | None = None,
                       target: int | str = 1,
                       settings: Mapping[str, Mapping[str, Any]] | None = None,
                       **lime_fields: Any) -> Explanation:
    """The study's explanations of one test review (:func:`attnxai.explain` with the study's
    seeds, :func:`attnxai.registry.study_seeds`: LIME ``1000 * test_index``, SmoothGrad and the
    random baseline ``test_index``). ``lime``: LIME's settings (``**lime_fields``: any of their
    fields replaced, e.g. ``num_samples=200``), given to LIME and to the methods that follow it
    (its limit shares the width); ``settings``: further settings per method."""
    methods = validate.names(methods, ALL_METHODS, kind="method")
    _, resolved = _method_settings(settings, methods, LimeSettings.of(lime, **lime_fields))
    return _explained(pre, text, test_index, resolved, target)


def _explained(pre: Any, text: str, test_index: int, resolved: Mapping[str, Any],
               target: int | str) -> Explanation:
    """The explanations of one review by the study's settings objects ``resolved`` (checked
    once, by :func:`_method_settings`), with the review's seeds: nothing is checked again."""
    from ..theory import LimitApproximationWarning      # (imports SymPy: only when run)

    with warnings.catch_warnings():
        # the study runs the limit's defaults knowingly (its settings record "default settings";
        # chapter 7 states what they are): no warning per review from every worker
        warnings.simplefilter("ignore", LimitApproximationWarning)
        return explain_with(pre, text, resolved, target=target,
                            seeds=study_seeds(list(resolved), test_index))


#: The fields of the study's LIME settings it always records (and gives a method that follows
#: LIME when LIME itself does not run): the others only where they differ from their defaults.
STUDY_LIME_FIELDS = ("num_samples", "kernel_width")


def _lime_fields(lime: LimeSettings, method: str) -> dict[str, Any]:
    """The fields of the study's LIME settings that ``method`` takes when LIME does not run: those
    a method following LIME shares with it (:data:`attnxai.registry.SHARED`)."""
    entry = METHODS[method]
    if method == "LIME":
        names = [f.name for f in dataclasses.fields(LimeSettings) if f.name != "seed"]
    elif entry.follows is not None and entry.follows[0] == "LIME":
        names = list(entry.follows[1])
    else:
        return {}
    default = LimeSettings()
    return {k: getattr(lime, k) for k in names
            if k in STUDY_LIME_FIELDS or getattr(lime, k) != getattr(default, k)}


def _given_settings(methods: Sequence[str], lime: LimeSettings,
                    settings: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """The settings the study gives its methods: its LIME settings, whole (its ``--set`` fields
    replaced; the methods that follow LIME share them, :func:`attnxai.explain`), or, when LIME
    does not run, the fields a follower takes (:func:`_lime_fields`); each method's further
    ``settings``."""
    given: dict[str, Any] = {}
    for m in methods:
        if m == "LIME":
            own = settings.get(m, {})
            given[m] = LimeSettings.of(lime, **own) if own else lime
        else:
            lead = {} if "LIME" in methods else _lime_fields(lime, m)
            given[m] = {**lead, **settings.get(m, {})}
    return {m: v for m, v in given.items() if v}


def faithfulness_row(pre: Any, text: str, *, test_index: int, methods: Sequence[str] = ALL_METHODS,
                     perturbations: Sequence[str] = PERTURBATIONS,
                     selections: Sequence[str] = DEFAULT_SELECTIONS, backend: str = "auto",
                     target: int | str = 1,
                     settings: Mapping[str, Mapping[str, Any]] | None = None,
                     **lime: Any) -> dict[str, Any]:
    """The row of one review (module docstring): explanations, metrics, agreement, timings.

    ``target``: the explained class, 1 (the paper's logit 1, the default), 0, or ``"predicted"``
    (the model's predicted class on this review, ferret's default); every explainer explains that
    logit and ``p`` is that class's probability; ``settings``: the methods' further settings
    (:func:`review_explanation`); ``**lime``: LIME's settings as there (``lime=`` or fields)."""
    methods = validate.names(methods, ALL_METHODS, kind="method")
    lime = LimeSettings.of(lime.pop("lime", None), **lime)
    _, resolved = _method_settings(settings, methods, lime)
    return _row(pre, text, test_index, resolved, perturbations=perturbations,
                selections=selections, backend=backend, target=target)


def _row(pre: Any, text: str, test_index: int, resolved: Mapping[str, Any], *,
         perturbations: Sequence[str], selections: Sequence[str], backend: str,
         target: int | str) -> dict[str, Any]:
    """:func:`faithfulness_row` with the study's settings objects ``resolved`` (checked once,
    before the first review)."""
    methods = list(resolved)
    t0, c0 = time.perf_counter(), time.process_time()
    ex = _explained(pre, text, test_index, resolved, target)
    c = ex.target
    t_scores = time.perf_counter() - t0
    res = evaluate(pre, ex.ids, ex.token_scores, target=c, perturbations=perturbations,
                   selections=selections, backend=backend)
    p = ex.probability
    row: dict[str, Any] = {
        "n_tokens": len(ex.tokens), "logits": ex.logits.tolist(), "target": c,
        "p": float(p[c]), "p1": float(p[1]), "predicted": ex.predicted,
        "backend": ",".join(sorted(set(res.backend.values()))),
    }
    for pert in perturbations:
        row[f"p_empty__{pert}"] = res.p_empty[pert]
    tab = res.table
    tied = [m for m in methods if _has_ties(ex.token_scores[m])]
    ferret = (evaluate(pre, ex.ids, {m: ex.token_scores[m] for m in tied}, target=c,
                       perturbations=perturbations, selections=selections, backend=backend,
                       ties="ferret").table if tied else None)
    for (m, pert, sel), r in tab.iterrows():
        other = ferret.loc[(m, pert, sel)] if m in tied else r       # no tie: the same ranking
        for metric in SUMMARY_METRICS:
            row[metric_column(m, pert, metric, sel)] = float(r[metric])
            row[metric_column(m, pert, metric, sel, "ferret")] = float(other[metric])
        row[metric_column(m, pert, "n_rationales", sel)] = int(r["n_rationales"])
        row[metric_column(m, pert, "tau_loo")] = float(r["tau_loo"])
        dcurve, icurve = res.curves[(m, pert, sel)]
        row[f"{m}__{pert}__{sel}__deletion_curve"] = dcurve.tolist()
        row[f"{m}__{pert}__{sel}__insertion_curve"] = icurve.tolist()
    for m in methods:
        row[f"scores__{m}"] = ex.token_scores[m].astype(np.float32).tolist()
    for kind, absolute in (("agree", False), ("agree_abs", True)):
        A = agreement(ex.token_scores, absolute=absolute)
        for i, a in enumerate(methods):
            for b in methods[i + 1:]:
                row[f"{kind}__{a}__{b}"] = float(A.loc[a, b])
    row["seconds_scores"] = t_scores
    row["seconds"] = time.perf_counter() - t0
    row["cpu_seconds"] = time.process_time() - c0
    return row


def _run_chunk(model: ModelRef, settings: dict[str, Any], resolved: dict[str, Any],
               items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Worker: the rows of a chunk of reviews, one torch and one BLAS thread, on the model the
    runner shipped (verified against its manifest), with the study's settings objects
    ``resolved`` (checked once, before the first review)."""
    pre = model.load()
    rows = []
    with single_threaded():
        for item in items:
            row = _row(pre, item["text"], item["test_index"], resolved,
                       perturbations=settings["perturbations"],
                       selections=settings["selections"], backend=settings["backend"],
                       target=settings["target"])
            rows.append({k: item[k] for k in ("rank", "test_index", "review_id", "label",
                                              "rating")} | row)
    return rows


# ---------------------------------------------------------------- the study
def _method_settings(settings: Mapping[str, Mapping[str, Any]] | None, methods: list[str],
                     lime: LimeSettings) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    """The study's further settings per method (``--set``), and every method's settings object
    (:func:`attnxai.registry.study_settings`; each review replaces the seeds): every setting
    checked once, here."""
    given = study_given(settings, methods)
    return given, study_settings(methods, _given_settings(methods, lime, given))


def _field_of(resolved: Mapping[str, Any], name: str) -> Any:
    """The value of the setting ``name`` in the first of the settings objects that has it (None:
    no method takes it)."""
    return next((getattr(s, name) for s in resolved.values() if hasattr(s, name)), None)


@dataclass(frozen=True)
class MetricSettings:
    """What the faithfulness study scores every explanation by, carried whole to
    :func:`attnxai.perturbation.evaluate`: the ``perturbations`` (deletion, replacement; None:
    all of :data:`~attnxai.perturbation.PERTURBATIONS`), the word ``selections`` (None: the
    defaults) and the ``backend`` of the model evaluations. A list of names or a command line's
    comma-separated spelling (``"delete,replace"``); checked and normalised to lists when built,
    each by its name."""

    perturbations: str | Iterable[str] | None = None
    selections: str | Iterable[str] | None = None
    backend: str = "auto"

    def __post_init__(self):
        from ..perturbation import BACKENDS

        object.__setattr__(self, "perturbations", validate.names(
            self.perturbations, PERTURBATIONS, kind="perturbation", default=PERTURBATIONS,
            text=True))
        object.__setattr__(self, "selections", validate.names(
            self.selections, SELECTIONS, kind="selection", default=DEFAULT_SELECTIONS, text=True))
        validate.choice(self.backend, "backend", BACKENDS)


class FaithfulnessStudy(Study):
    """The faithfulness study on the first ``reviews`` reviews of :func:`review_order` (module
    docstring). Every argument is validated here, before anything is written."""

    key_columns = ("test_index",)
    name = "faithfulness"

    def __init__(self, *, profile: str = "paper", reviews: int = 1000,
                 methods: str | Iterable[str] | None = None,
                 metrics: MetricSettings | None = None, chunk: int = 10,
                 archive: str | None = None, target: int | str = 1,
                 settings: Mapping[str, Mapping[str, Any]] | None = None,
                 lime: LimeSettings | None = None):
        """``metrics``: a :class:`MetricSettings` (None: every perturbation, the default
        selections, the automatic backend); ``settings``: the methods' further settings
        (``--set``); ``lime``: LIME's settings whole, a
        :class:`~attnxai.limit_settings.LimeSettings` (None: lime's defaults)."""
        metrics = MetricSettings() if metrics is None else metrics
        if not isinstance(metrics, MetricSettings):
            raise TypeError(f"metrics must be a MetricSettings, got {type(metrics).__name__}")
        self.reviews = validate.positive_int(reviews, "reviews")
        self.methods = validate.names(methods, ALL_METHODS, kind="method", default=ALL_METHODS,
                                      text=True)
        self.perturbations, self.selections = metrics.perturbations, metrics.selections
        self.backend = metrics.backend
        self.chunk = validate.positive_int(chunk, "chunk")
        self.lime = study_lime(lime, {}, "FaithfulnessStudy")
        self.method_settings, self.resolved = _method_settings(settings, self.methods, self.lime)
        # LIME's samples and width (its limit shares the width), checked by their settings
        # classes above and recorded only where a method takes them
        self.num_samples = _field_of(self.resolved, "num_samples")
        self.kernel_width = _field_of(self.resolved, "kernel_width")
        self.pre = study_model(profile, archive)
        if "LIME" in self.methods:                  # the longest review, before anything runs
            from ..fastlime import check_memory

            check_memory(self.num_samples, self.pre.model.max_len - 1)
        self.target = validate.explained_class(target, self.pre.model.n_classes, text=True)
        self.data = study_test_set(archive, self.reviews)

    def settings(self) -> dict[str, Any]:
        return {"profile": self.pre.config["train"]["profile"], "model": self.pre.path.name,
                "target": self.target,
                "p": "softmax probability of " + ("the predicted class" if self.target ==
                                                  "predicted" else f"class {self.target}"),
                "methods": self.methods, "perturbations": self.perturbations,
                "selections": self.selections, "quantiles": list(QUANTILES),
                "curve_fractions": CURVE_FRACTIONS.tolist(),
                "ties": "both: 'position' (earlier position first) for every number, and "
                        "'ferret' (later position first) in the columns ending __ferret",
                "words_to_positions": "every occurrence gets its word's coefficient",
                **{k: v for k, v in (("num_samples", self.num_samples),
                                     ("kernel_width", self.kernel_width)) if v is not None},
                **({"lime settings": other} if (other := self._other_lime_fields()) else {}),
                # each method's own record (registry: compared when a results folder resumes)
                **study_records(self.methods),
                **({"method settings": self.method_settings} if self.method_settings else {}),
                "order_seed": ORDER_SEED, "preprocessing": "normalize_for_lime",
                "backend": self.backend}

    def _other_lime_fields(self) -> dict[str, Any]:
        """The study's LIME settings beyond :data:`STUDY_LIME_FIELDS` that a method takes (those
        not at their defaults): recorded, and sent to the workers."""
        given = {}
        for m in self.methods:
            given |= {k: v for k, v in _lime_fields(self.lime, m).items()
                      if k not in STUDY_LIME_FIELDS}
        return given

    def plan(self, done: set[tuple]) -> list[list[dict[str, Any]]]:
        reviews = ordered_reviews(self.data, self.reviews, self.pre.model.max_len)
        items = [item() for idx, item in reviews if (idx,) not in done]
        return chunked(items, self.chunk)

    def model(self):
        return self.pre                          # shipped to every worker once, verified

    def task(self):
        return functools.partial(_run_chunk, self.model_ref(), self.settings(), self.resolved)


def run_faithfulness(out: Any, *, jobs: int = 1, scheduler: str | None = None,
                     progress: bool = True, device: str = "cpu",
                     command: Sequence[str] | None = None, **study: Any) -> RunReport:
    """Run (or resume) the faithfulness study into the folder ``out`` (module docstring);
    ``study``: :class:`FaithfulnessStudy`'s arguments (``profile``, ``reviews``, ``methods``,
    ``metrics``, ``settings``: further settings per method, e.g. ``{"SmoothGrad":
    {"n_samples": 20}}``, ``lime``: a :class:`~attnxai.limit_settings.LimeSettings`, ...);
    ``jobs``, ``scheduler``, ``device``: where it runs; ``command``: for the run log,
    :func:`attnxai.experiment.run`)."""
    return run(FaithfulnessStudy(**study), out, jobs=jobs, scheduler=scheduler,
               progress=progress, device=device, command=command)
