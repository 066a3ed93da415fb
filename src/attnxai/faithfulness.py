"""Which explanation is faithful? Perturbation metrics, as ferret defines them, for any model of
the package's interface, and the scores of the paper's seven explainers (plus baselines) on one
review.

**What is measured.** ``p(x)`` is the model's **probability** of the explained class ``target``
(default 1, "positive", the logit every explainer of the paper explains): the softmax of the
model's logits, computed in float64. It is the quantity ferret uses (``logits.softmax(-1)[:,
target]``), so our numbers are comparable with ferret's; it is kept fixed everywhere (chapter 7
explains why it is not the raw logit 1 the explainers explain). A document is ``[CLS]`` followed by
``n`` word positions; ``[CLS]`` is never removed (ferret's ``remove_first_last=True``). A score
vector has one entry per word position (``[CLS]`` excluded).

**Perturbations** (:data:`PERTURBATIONS`)::

    "replace"   a removed token is replaced by UNK in place (positions do not move): what the
                paper's theorems assume, lime's bow=False with mask_string="UNK"
    "delete"    a removed token is deleted and the later tokens move forward: lime's bow=True,
                and ferret's default (remove_tokens=True)

**Selection rules** (:data:`SELECTIONS`): the ranking a rationale is cut from::

    "positive"  positions with score > 0 only, largest first (ferret's default, only_pos=True)
    "abs"       every position, largest |score| first (ours: ferret has no |score| rule)
    "signed"    every position, largest score first (ferret's only_pos=False)

**Tie orders** (:data:`TIES`, the ``ties`` argument): which of several positions with equal keys a
rationale takes first::

    "position"  the earlier position first (a stable sort of the keys, largest first): the default
    "ferret"    the later position first: ferret's ``argsort()[-k:][::-1]`` (an ascending sort,
                its last k entries, reversed) whenever that ``argsort`` orders ties by position

ferret calls numpy's default ``argsort`` (``kind="quicksort"``), which does not promise any order of
equal keys: with numpy's SIMD sorts (numpy 2.4 on an AVX-512 machine) the order of ties changes
with the array, even on four entries, so no fixed rule reproduces ferret's rationales on every
document with ties. ``"ferret"`` is its order wherever that sort leaves ties in position order (the
tests check it against a line-by-line transcription of ferret's code there), and the two orders
together show how much the tie order moves a result. Without ties both orders, and ferret, select the same positions. Repeated words scored per
word (LIME, its limit) tie at every occurrence, so for them the order matters.

**Metrics** (:func:`evaluate`; ferret's ``faithfulness_measures.py``, g8a9/ferret at commit
22935f8). With ``r_q`` the first ``k_q = floor(q n)`` positions of the ranking
(``q = 0.1, ..., 1.0``; for "positive" at most the positive ones)::

    AOPC comprehensiveness = mean_q [ p(x) - p(x without r_q) ]    higher is better
    AOPC sufficiency       = mean_q [ p(x) - p(r_q only) ]         lower is better
    tau-LOO                = Kendall tau-b(scores, p(x) - p(x without t), over positions t)
    deletion curve         D(f) = p(x without r_f),  f = 0, 0.05, ..., 1   (area: lower is better)
    insertion curve        I(f) = p(r_f only)                              (area: higher is better)

Exactly as ferret: ``k_q = int(q * n)`` with ``q`` from ``np.arange(0.1, 1.1, 0.1)`` (equal to the
integer ``(10 q) n // 10`` for every n up to 20,000, which is what we compute); a ``q`` with
``k_q = 0`` or whose rationale is the same set as the previous one is left out of the mean; an
explanation with no rationale at all (e.g. no positive score) gets comprehensiveness 0 and
sufficiency 1 (ferret's values). ``n_rationales`` reports how many ``q`` entered the mean. ferret
computes tau-LOO with deletion only; we compute it with both perturbations. The curves use
``k_f = floor(f n)`` and their areas the trapezoidal rule on ``[0, 1]``.

**Batched.** For one review and one perturbation every perturbed document any metric needs (all
explainers, rules, sizes, the leave-one-out documents) is collected, equal documents are kept
once, and the model is evaluated once (:class:`Perturber`): on the float64 projections of the single-layer
model (``backend="fast"``, :mod:`attnxai.fastlime.evaluate`, the evaluators the fast LIME uses), or
by the model's own ``forward`` on the collated batch, in chunks (``backend="model"``, any
:class:`~attnxai.interface.ClassifierBase`). ``"auto"`` takes the first when it can. Both agree to
rounding (tested).

**In SymPy.** :func:`symbolic_measures` writes every measure of one explanation as an expression
in the probabilities of the perturbed documents (one symbol per kept set), through the same
rankings, sizes and averaging code as :func:`evaluate`: chapter 7 derives its propositions with
it, and the tests check that substituting a model's probabilities gives :func:`evaluate`'s numbers.

**Words and positions.** Attention and gradients score positions. LIME (``bow=True``) and its
closed-form limit score distinct words: :func:`word_to_positions` gives every occurrence of a word
its word's coefficient (not a share of it): LIME's coefficient is the effect of removing the word,
every occurrence at once, and at position level each occurrence is that word.
"""

from __future__ import annotations

import json
import time
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from . import explainers, fastlime, validate
from .checkpoint import Pretrained
from .interface import ClassifierBase
from .model import AttentionClassifier
from .text import normalize_for_lime, tokenize

__all__ = ["ALL_METHODS", "BACKENDS", "EXTRA_METHODS", "CURVE_FRACTIONS", "DEFAULT_SELECTIONS",
           "Faithfulness", "METRICS", "PERTURBATIONS", "Perturber", "QUANTILES", "ReviewScores",
           "SELECTIONS", "TIES", "TextExplanation", "agreement", "alpha_times_score", "cached_pretrained", "comprehensiveness",
           "curve_sizes", "deletion_curve", "evaluate", "explain", "insertion_curve",
           "probability", "ranking", "rationale_sizes", "review_scores", "sufficiency",
           "symbolic_measures", "tau_loo", "word_to_positions"]

PERTURBATIONS = ("replace", "delete")
SELECTIONS = ("abs", "positive", "signed")
#: Tie orders of a ranking: earlier position first (default), later position first (ferret's).
TIES = ("position", "ferret")
#: The rules the book compares: largest |score|, and ferret's default (positive scores only).
DEFAULT_SELECTIONS = ("abs", "positive")
#: ferret's rationale fractions q (``np.arange(0.1, 1.1, 0.1)``), as tenths.
QUANTILES = tuple(k / 10 for k in range(1, 11))
#: Fractions of the words removed (deletion) or kept (insertion) along a curve.
CURVE_FRACTIONS = np.arange(21) / 20
BACKENDS = ("auto", "fast", "model")
#: The per-(explainer, perturbation, selection) numbers of :class:`Faithfulness`.
METRICS = ("comprehensiveness", "sufficiency", "tau_loo", "deletion_auc", "insertion_auc")
#: Scores that are not explainers of the paper: ``"alpha x s"``, the attention weight times the
#: token's own score, ``(1/K) sum_i alpha_t^(i) W_l^(i) v_t^(i)`` (the first, value part of GxI
#: in closed form: what attention becomes once it is multiplied by what it ignores); LIME's
#: closed-form limit (:func:`attnxai.theory.lime_limit`); a random baseline.
EXTRA_METHODS = ("alpha x s", "LIME limit", "random")
#: The paper's seven explainers (Figure 1 order), then the extra methods.
ALL_METHODS = (*explainers.METHODS, *EXTRA_METHODS)


# ====================================================================== inputs
def _model_of(model: Any) -> ClassifierBase:
    if isinstance(model, Pretrained):
        model = model.model
    if not isinstance(model, ClassifierBase):
        raise TypeError(f"model must be an attnxai Pretrained or classifier (ClassifierBase), got "
                        f"{type(model).__name__}")
    return model


def _document(model: ClassifierBase, ids: Any, *, words: bool = True) -> np.ndarray:
    """One document's ids as a 1-D int64 array, ``[CLS]`` first, checked by the model.

    Accepts a 1-D sequence/array/tensor or a (1, T) tensor; trailing ``pad_id`` (``padding="mask"``)
    is dropped. With ``padding="unk"`` pass the unpadded ids (``pre.vocab.encode(text)``): UNK
    padding cannot be told from UNK words.
    """
    t = ids if isinstance(ids, torch.Tensor) else torch.as_tensor(np.asarray(ids))
    if t.dtype.is_floating_point or t.dtype == torch.bool:
        raise TypeError(f"ids must be integer token ids, got {t.dtype}")
    if t.dim() == 2 and t.shape[0] == 1:
        t = t[0]
    if t.dim() != 1:
        raise ValueError(f"give one document: ids of shape (T,) or (1, T), got {tuple(t.shape)}")
    t = t.long()
    model.ids_and_mask(t[None])                  # the model's own checks: [CLS], range, padding
    arr = t.numpy().astype(np.int64)
    if model.padding == "mask":
        arr = arr[arr != model.pad_id]
    if words and arr.size < 2:
        raise ValueError("the document has no word after [CLS]: nothing to remove or keep")
    return arr


def _scores(name: str, scores: Any, n: int) -> np.ndarray:
    s = scores.detach().cpu().double().numpy() if isinstance(scores, torch.Tensor) \
        else np.asarray(scores, dtype=np.float64)
    if s.shape != (n,):
        raise ValueError(f"scores of {name!r} must have one entry per word position ({n}, [CLS] "
                         f"excluded), got shape {s.shape}")
    if not np.all(np.isfinite(s)):
        raise ValueError(f"scores of {name!r} hold NaN or inf at positions "
                         f"{np.flatnonzero(~np.isfinite(s))[:5].tolist()}: every word needs a score")
    return s


def _choices(values: str | Iterable[str], name: str, options: tuple[str, ...]) -> tuple[str, ...]:
    if isinstance(values, str):
        values = (values,)
    out = tuple(validate.choice(v, name, options) for v in values)
    if not out:
        raise ValueError(f"{name}: give at least one of {options}")
    return tuple(dict.fromkeys(out))


# ====================================================================== rankings and sizes
def ranking(scores: Any, selection: str = "positive", *, ties: str = "position") -> np.ndarray:
    """The word positions (0-based, [CLS] excluded) in the order a rationale takes them.

    ``"positive"``: positions with a score > 0, largest first; ``"abs"``: all, largest ``|score|``
    first; ``"signed"``: all, largest score first. ``ties`` (:data:`TIES`): ``"position"``, the
    earlier of two equal keys first; ``"ferret"``, the later first (module docstring).
    """
    validate.choice(selection, "selection", SELECTIONS)
    validate.choice(ties, "ties", TIES)
    s = np.asarray(scores, dtype=np.float64)
    if s.ndim != 1:
        raise ValueError(f"scores must be 1-D (one per word position), got shape {s.shape}")
    key = np.abs(s) if selection == "abs" else s
    if ties == "position":
        order = np.argsort(-key, kind="stable")
    else:                                       # ferret: ascending and stable, then reversed
        order = np.argsort(key, kind="stable")[::-1]
    if selection == "positive":
        order = order[s[order] > 0]
    return order


def rationale_sizes(n: int) -> np.ndarray:
    """ferret's rationale sizes ``k_q = int(q * n)``, q = 0.1, ..., 1.0 (computed exactly as
    ``(10 q) * n // 10``, which equals ferret's float expression for every n <= 20,000)."""
    n = validate.positive_int(n, "n")
    return np.array([(k * n) // 10 for k in range(1, 11)], dtype=np.int64)


def curve_sizes(n: int, fractions: Sequence[float] = CURVE_FRACTIONS) -> np.ndarray:
    """``floor(f n)`` for the curve fractions ``f`` (exact for multiples of 1/20)."""
    n = validate.positive_int(n, "n")
    f = np.asarray(fractions, dtype=np.float64)
    if f.ndim != 1 or f.size < 2 or np.any((f < 0) | (f > 1)) or np.any(np.diff(f) <= 0):
        raise ValueError("fractions must increase within [0, 1] (at least two)")
    return np.floor(f * n + 1e-9).astype(np.int64)


def _aopc_sizes(n_ranked: int, n: int) -> list[int]:
    """The effective sizes ferret averages over: k_q capped by the ranking's length, k = 0 and a
    rationale equal to the previous one (same prefix length) left out."""
    out: list[int] = []
    for k in rationale_sizes(n):
        kk = int(min(k, n_ranked))
        if kk == 0 or (out and out[-1] == kk):
            continue
        out.append(kk)
    return out


# ====================================================================== the model on perturbations
def _softmax(logits: np.ndarray, target: int) -> np.ndarray:
    z = logits - logits.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e[:, target] / e.sum(axis=1)


class Perturber:
    """``p(target | x perturbed)`` for keep-masks over a document's word positions.

    ``keep`` is ``(m, n)`` bool, True = the word at that position stays; ``[CLS]`` always stays.
    ``perturbation="replace"`` puts UNK at the other positions; ``"delete"`` removes them (the
    kept words move forward; every-word-removed is the document ``[CLS]`` alone).
    ``backend="fast"``: the float64 projections of a single-layer
    :class:`~attnxai.model.AttentionClassifier` (:mod:`attnxai.fastlime.evaluate`, one evaluator
    per class); ``"model"``: ``model(ids)`` on the collated batch, ``batch_size`` documents per
    call; ``"auto"``: fast when possible (single-layer model without the skip connection,
    attention logits in range).
    ``backend_used`` says which ran.
    """

    def __init__(self, model: Any, ids: Any, *, perturbation: str, target: int = 1,
                 backend: str = "auto", batch_size: int = 512):
        self.model = _model_of(model)
        self.ids = _document(self.model, ids)
        self.n = self.ids.size - 1
        self.perturbation = validate.choice(perturbation, "perturbation", PERTURBATIONS)
        self.target = validate.target(target, self.model.n_classes)
        validate.choice(backend, "backend", BACKENDS)
        self.batch_size = validate.positive_int(batch_size, "batch_size")
        self.calls = 0
        self._evaluators = None
        if backend in ("auto", "fast"):
            reason = self._prepare_fast()
            if reason and backend == "fast":
                raise ValueError(f"backend='fast' is not possible: {reason}")
        self.backend_used = "fast" if self._evaluators is not None else "model"

    def _prepare_fast(self) -> str:
        from .fastlime.evaluate import DeleteEvaluator, ReplaceEvaluator
        from .network import Projections

        if not isinstance(self.model, AttentionClassifier):
            return (f"the projections are derived for the single-layer AttentionClassifier, not "
                    f"{type(self.model).__name__}")
        if self.model.skip:
            return "the projections describe the model without the skip connection (skip=True)"
        proj = Projections.of(self.model)
        evs = []
        for c in range(self.model.n_classes):
            tab = proj.document(self.ids, c)
            evs.append(ReplaceEvaluator(tab) if self.perturbation == "replace"
                       else DeleteEvaluator(tab, np.arange(self.n)))
        if not all(ev.ok for ev in evs):
            return "the attention logits of this document span too wide a range (exp underflow)"
        self._evaluators = evs
        return ""

    def __call__(self, keep: np.ndarray) -> np.ndarray:
        keep = np.asarray(keep)
        if keep.ndim != 2 or keep.shape[1] != self.n or keep.dtype != bool:
            raise ValueError(f"keep must be an (m, {self.n}) bool array, got {keep.dtype} "
                             f"{keep.shape}")
        self.calls += 1
        if self._evaluators is not None:
            logits = np.stack([ev(keep) for ev in self._evaluators], axis=1)
            return _softmax(logits, self.target)
        return self._model_probabilities(keep)

    def _model_probabilities(self, keep: np.ndarray) -> np.ndarray:
        m = self.model
        words = self.ids[1:]
        out = np.empty(len(keep))
        with torch.no_grad():
            for s in range(0, len(keep), self.batch_size):
                block = keep[s:s + self.batch_size]
                if self.perturbation == "replace":
                    body = np.where(block, words[None, :], m.unk_id)
                    ids = torch.as_tensor(np.concatenate(
                        [np.full((len(block), 1), self.ids[0]), body], axis=1))
                else:
                    ids = m.collate([[int(self.ids[0])] + words[row].tolist() for row in block])
                logits = m(ids).double().numpy()
                out[s:s + len(block)] = _softmax(logits, self.target)
        return out


def probability(model: Any, ids: Any, target: int = 1) -> float:
    """``p(x)``: the model's probability of class ``target`` on one document (float64 softmax of
    the logits; ``[CLS]`` alone is a document too)."""
    model = _model_of(model)
    arr = _document(model, ids, words=False)
    target = validate.target(target, model.n_classes)
    with torch.no_grad():
        logits = model(torch.as_tensor(arr)[None]).double().numpy()
    return float(_softmax(logits, target)[0])


# ====================================================================== the metrics
@dataclass
class Faithfulness:
    """Every metric for one document (:func:`evaluate`).

    ``table``: a :class:`pandas.DataFrame` indexed by (explainer, perturbation, selection) with the
    columns of :data:`METRICS` plus ``n_rationales`` (how many q entered the AOPC means) and
    ``n_ranked`` (positions the rule can select). ``tau_loo`` does not depend on the rule (it is
    repeated). ``curves[(explainer, perturbation, selection)]`` = (deletion, insertion) arrays at
    ``fractions``. ``p[perturbation]`` = p(x), ``p_empty`` = every word removed, ``loo`` = the
    leave-one-out drops ``p(x) - p(x without t)`` (n,). ``backend`` and ``calls``: which model
    evaluation ran, and how many batched calls per perturbation; ``ties``: the tie order.
    """

    n: int
    target: int
    table: Any
    curves: dict[tuple[str, str, str], tuple[np.ndarray, np.ndarray]]
    fractions: np.ndarray
    p: dict[str, float]
    p_empty: dict[str, float]
    loo: dict[str, np.ndarray]
    backend: dict[str, str] = field(default_factory=dict)
    calls: dict[str, int] = field(default_factory=dict)
    documents: dict[str, int] = field(default_factory=dict)
    ties: str = "position"

    def value(self, explainer: str, metric: str, *, perturbation: str = "delete",
              selection: str = "positive") -> float:
        """One number, e.g. ``value("LIME", "comprehensiveness")`` (ferret's defaults)."""
        return float(self.table.loc[(explainer, perturbation, selection), metric])


def _distinct_documents(masks: np.ndarray, ids: np.ndarray, perturbation: str, unk_id: int
                        ) -> tuple[np.ndarray, np.ndarray]:
    """(one mask per distinct perturbed *document*, the index of each mask's document): masks
    that give the same document (an UNK word replaced by UNK; one of two adjacent equal words
    deleted) are evaluated once, so equal documents get exactly equal probabilities (ties in
    tau-LOO are then real ties, not rounding)."""
    words = ids[1:]
    if perturbation == "replace":
        docs = np.where(masks, words[None, :], unk_id)
    else:
        order = np.argsort(~masks, axis=1, kind="stable")          # kept positions first
        kept = np.take_along_axis(masks, order, axis=1)
        docs = np.where(kept, words[order], -1)
    _, first, inverse = np.unique(docs, axis=0, return_index=True, return_inverse=True)
    return first, inverse.reshape(-1)


def evaluate(model: Any, ids: Any, scores: Mapping[str, Any], *, target: int = 1,
             perturbations: str | Iterable[str] = PERTURBATIONS,
             selections: str | Iterable[str] = DEFAULT_SELECTIONS,
             fractions: Sequence[float] = CURVE_FRACTIONS, backend: str = "auto",
             batch_size: int = 512, ties: str = "position") -> Faithfulness:
    """Every faithfulness metric of every explanation in ``scores`` on one document.

    ``model``: a :class:`~attnxai.checkpoint.Pretrained` or a classifier; ``ids``: the document
    (``[CLS]`` first, e.g. ``pre.vocab.encode(text)``); ``scores``: name -> one score per word
    position (``n`` = len(ids) - 1; see the module docstring for word-level explainers); ``ties``:
    the tie order of the rankings (:data:`TIES`; tau-LOO does not depend on it). For each
    perturbation the model is called once on every distinct perturbed document (module
    docstring). Raises ValueError for scores of the wrong length or with NaN.
    """
    import pandas as pd
    from scipy.stats import kendalltau

    model = _model_of(model)
    arr = _document(model, ids)
    n = arr.size - 1
    target = validate.target(target, model.n_classes)
    perts = _choices(perturbations, "perturbation", PERTURBATIONS)
    sels = _choices(selections, "selection", SELECTIONS)
    if not isinstance(scores, Mapping) or not scores:
        raise ValueError("scores must be a non-empty mapping name -> per-position scores")
    S = {str(k): _scores(str(k), v, n) for k, v in scores.items()}
    csz = curve_sizes(n, fractions)
    fr = np.asarray(fractions, dtype=np.float64)
    validate.choice(ties, "ties", TIES)
    orders = {(name, sel): ranking(s, sel, ties=ties) for name, s in S.items() for sel in sels}
    # every mask any metric needs: 0 full, 1 empty, 2.. leave-one-out, then per ranking prefixes
    # of each needed length (comprehensiveness/deletion keep the rest, sufficiency/insertion keep
    # the prefix)
    base = [np.ones((1, n), bool), np.zeros((1, n), bool), ~np.eye(n, dtype=bool)]
    where: dict[tuple[str, str], tuple[list[int], int]] = {}
    blocks = []
    row = 2 + n
    for key, order in orders.items():
        sizes = sorted(set(_aopc_sizes(order.size, n)) | {int(min(k, order.size)) for k in csz})
        sizes = [k for k in sizes if k > 0]
        top = np.zeros((len(sizes), n), bool)
        for i, k in enumerate(sizes):
            top[i, order[:k]] = True
        blocks += [~top, top]
        where[key] = (sizes, row)
        row += 2 * len(sizes)
    masks = np.concatenate(base + blocks, axis=0)

    rows, curves = [], {}
    p_full, p_empty, loos, used, calls, docs = {}, {}, {}, {}, {}, {}
    for pert in perts:
        P = Perturber(model, arr, perturbation=pert, target=target, backend=backend,
                      batch_size=batch_size)
        first, inverse = _distinct_documents(masks, arr, pert, model.unk_id)
        probs = P(masks[first])[inverse]
        used[pert], calls[pert], docs[pert] = P.backend_used, P.calls, len(first)
        px, pe = float(probs[0]), float(probs[1])
        p_full[pert], p_empty[pert] = px, pe
        loo = px - probs[2:2 + n]
        loos[pert] = loo
        taus = {}
        for name, s in S.items():
            if n < 2 or np.ptp(s) == 0 or np.ptp(loo) == 0:
                taus[name] = float("nan")
            else:
                taus[name] = float(kendalltau(loo, s).statistic)
        for (name, sel), order in orders.items():
            sizes, start = where[(name, sel)]
            m = len(sizes)
            p_without = dict(zip(sizes, probs[start:start + m]))
            p_only = dict(zip(sizes, probs[start + m:start + 2 * m]))
            p_without[0], p_only[0] = px, pe
            out = _rationale_measures(px, p_without, p_only, order.size, n, csz, fr)
            curves[(name, pert, sel)] = (np.asarray(out["deletion_curve"], dtype=np.float64),
                                         np.asarray(out["insertion_curve"], dtype=np.float64))
            rows.append({"explainer": name, "perturbation": pert, "selection": sel,
                         **{k: float(out[k]) for k in ("comprehensiveness", "sufficiency")},
                         "tau_loo": taus[name],
                         **{k: float(out[k]) for k in ("deletion_auc", "insertion_auc")},
                         "n_rationales": out["n_rationales"], "n_ranked": int(order.size)})
    table = pd.DataFrame(rows).set_index(["explainer", "perturbation", "selection"])
    return Faithfulness(n=n, target=target, table=table, curves=curves, fractions=fr, p=p_full,
                        p_empty=p_empty, loo=loos, backend=used, calls=calls, documents=docs,
                        ties=ties)


def _rationale_measures(px: Any, p_without: Mapping[int, Any], p_only: Mapping[int, Any],
                        n_ranked: int, n: int, curve_k: Sequence[int], fractions: Any
                        ) -> dict[str, Any]:
    """The measures of one ranking from the probabilities it needs, numbers or SymPy expressions
    alike (:func:`evaluate`, :func:`symbolic_measures`): ``p_without[k]`` = p(x without the first
    k ranked positions), ``p_only[k]`` = p(only them), for k = 0 and every size used."""
    aopc = _aopc_sizes(n_ranked, n)
    if aopc:
        comp = np.mean([px - p_without[k] for k in aopc])
        suff = np.mean([px - p_only[k] for k in aopc])
    else:                                           # ferret: no rationale at all
        comp, suff = 0.0, 1.0
    eff = [int(min(k, n_ranked)) for k in curve_k]
    dcurve = np.array([p_without[k] for k in eff])
    icurve = np.array([p_only[k] for k in eff])
    return {"comprehensiveness": comp, "sufficiency": suff, "deletion_curve": dcurve,
            "insertion_curve": icurve, "deletion_auc": np.trapezoid(dcurve, fractions),
            "insertion_auc": np.trapezoid(icurve, fractions), "n_rationales": len(aopc)}


def symbolic_measures(scores: Any, *, selection: str = "positive", ties: str = "position",
                      fractions: Sequence[float] = CURVE_FRACTIONS, p: Any = None
                      ) -> dict[str, Any]:
    """Every measure of one explanation as a SymPy expression of the model's probabilities on the
    perturbed documents: the definitions of :func:`evaluate`, with the same rankings, sizes and
    rules, on a document small enough to enumerate (chapter 7 derives its propositions with it).

    ``scores``: one number per word position (``n`` of them); ``p``: a function from a kept set
    (a ``frozenset`` of 0-based positions; ``[CLS]`` always stays) to the probability of the
    explained class on that document, by default the symbol ``p_{...}`` of the set. The result
    has ``comprehensiveness``, ``sufficiency``, ``deletion_curve``, ``insertion_curve`` (object
    arrays), ``deletion_auc``, ``insertion_auc`` (trapezoidal rule at exact rational fractions),
    ``n_rationales``, ``tau_loo`` (Kendall's tau-b of the scores and the leave-one-out drops,
    written with ``sign``: ``sum_{i<j} sign(w_i - w_j) sign(l_i - l_j)`` over the square root of
    the product of the numbers of untied pairs) and ``symbols`` (kept set -> its expression).
    """
    import sympy as sp

    s = np.asarray(scores, dtype=np.float64)
    n = s.size
    if s.ndim != 1 or n < 1 or n > 12:
        raise ValueError(f"give 1 to 12 scores (a document small enough to enumerate), got "
                         f"shape {s.shape}")
    names = {}

    def prob(kept: frozenset) -> Any:
        if kept not in names:
            names[kept] = p(kept) if p is not None else sp.Symbol(
                "p_{" + (",".join(str(t + 1) for t in sorted(kept)) or "\\emptyset") + "}")
        return names[kept]

    full = frozenset(range(n))
    order = ranking(s, selection, ties=ties)
    p_without = {k: prob(full - frozenset(order[:k].tolist())) for k in range(order.size + 1)}
    p_only = {k: prob(frozenset(order[:k].tolist())) for k in range(order.size + 1)}
    fr = np.array([sp.nsimplify(f) for f in fractions], dtype=object)
    out = _rationale_measures(prob(full), p_without, p_only, order.size, n,
                              curve_sizes(n, fractions), fr)
    # exact numbers: np.trapezoid halves with a float, and ferret's 0 and 1 are floats
    for k in ("comprehensiveness", "sufficiency", "deletion_auc", "insertion_auc"):
        out[k] = sp.nsimplify(out[k], rational=True)
    loo = [prob(full) - prob(full - {t}) for t in range(n)]
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n)]
    sw = [int(np.sign(s[i] - s[j])) for i, j in pairs]
    sl = [sp.sign(loo[i] - loo[j]) for i, j in pairs]
    untied_w = sum(v * v for v in sw)
    out["tau_loo"] = (sp.nan if untied_w == 0 else
                      sum(a * b for a, b in zip(sw, sl)) / sp.sqrt(untied_w * sum(b ** 2 for b in sl)))
    out["symbols"] = dict(names)
    return out


def _one(model, ids, scores, perturbation, selection, target, backend, ties="position"
         ) -> Faithfulness:
    return evaluate(model, ids, {"scores": scores}, target=target, perturbations=(perturbation,),
                    selections=(selection,), backend=backend, ties=ties)


def comprehensiveness(model: Any, ids: Any, scores: Any, *, perturbation: str = "delete",
                      selection: str = "positive", target: int = 1,
                      backend: str = "auto", ties: str = "position") -> float:
    """AOPC comprehensiveness of one explanation (defaults: ferret's, deletion and positive
    scores); higher is better. See :func:`evaluate`."""
    return _one(model, ids, scores, perturbation, selection, target, backend,
                ties).value("scores", "comprehensiveness", perturbation=perturbation,
                            selection=selection)


def sufficiency(model: Any, ids: Any, scores: Any, *, perturbation: str = "delete",
                selection: str = "positive", target: int = 1, backend: str = "auto",
                ties: str = "position") -> float:
    """AOPC sufficiency of one explanation (ferret's defaults); lower is better."""
    return _one(model, ids, scores, perturbation, selection, target, backend,
                ties).value("scores", "sufficiency", perturbation=perturbation,
                            selection=selection)


def tau_loo(model: Any, ids: Any, scores: Any, *, perturbation: str = "delete", target: int = 1,
            backend: str = "auto") -> float:
    """Kendall tau-b between the scores and the leave-one-out drops (ferret: deletion)."""
    return _one(model, ids, scores, perturbation, "abs", target,
                backend).value("scores", "tau_loo", perturbation=perturbation, selection="abs")


def deletion_curve(model: Any, ids: Any, scores: Any, *, perturbation: str = "delete",
                   selection: str = "positive", target: int = 1, backend: str = "auto",
                   fractions: Sequence[float] = CURVE_FRACTIONS, ties: str = "position"
                   ) -> tuple[np.ndarray, np.ndarray]:
    """(fractions, p(x without the top floor(f n) positions)) for one explanation."""
    return _curve(model, ids, scores, perturbation, selection, target, backend, fractions, 0,
                  ties)


def insertion_curve(model: Any, ids: Any, scores: Any, *, perturbation: str = "delete",
                    selection: str = "positive", target: int = 1, backend: str = "auto",
                    fractions: Sequence[float] = CURVE_FRACTIONS, ties: str = "position"
                    ) -> tuple[np.ndarray, np.ndarray]:
    """(fractions, p(only the top floor(f n) positions)) for one explanation."""
    return _curve(model, ids, scores, perturbation, selection, target, backend, fractions, 1,
                  ties)


def _curve(model, ids, scores, perturbation, selection, target, backend, fractions, which, ties):
    """One explanation's deletion (``which=0``) or insertion (1) curve."""
    r = evaluate(model, ids, {"s": scores}, target=target, perturbations=(perturbation,),
                 selections=(selection,), fractions=fractions, backend=backend, ties=ties)
    return r.fractions, r.curves[("s", perturbation, selection)][which]


def agreement(scores: Mapping[str, Any], *, absolute: bool = False) -> Any:
    """Pairwise Kendall tau-b between explanations of one document (a symmetric DataFrame; NaN
    where one of them is constant). ``absolute=True`` compares ``|scores|`` (magnitude only)."""
    import pandas as pd
    from scipy.stats import kendalltau

    names = list(scores)
    S = {k: np.abs(np.asarray(v, float)) if absolute else np.asarray(v, float)
         for k, v in scores.items()}
    M = np.eye(len(names))
    for i, a in enumerate(names):
        for j in range(i + 1, len(names)):
            b = names[j]
            if np.ptp(S[a]) == 0 or np.ptp(S[b]) == 0:
                t = np.nan
            else:
                t = kendalltau(S[a], S[b]).statistic
            M[i, j] = M[j, i] = t
    return pd.DataFrame(M, index=names, columns=names)


# ====================================================================== the explainers' scores
def word_to_positions(tokens: Sequence[str], words: Sequence[str], coef: Sequence[float]
                      ) -> np.ndarray:
    """Word-level scores (LIME with ``bow=True``, its limit) at every position: position t gets
    the coefficient of the word ``tokens[t]`` (every occurrence the whole coefficient). A token
    with no coefficient raises (a text not in :func:`attnxai.normalize_for_lime` form)."""
    c = np.asarray(coef, dtype=np.float64)
    if len(words) != c.size:
        raise ValueError(f"{len(words)} words but {c.size} coefficients")
    by_word = dict(zip(words, c))
    missing = [t for t in tokens if t not in by_word]
    if missing:
        raise ValueError(f"no coefficient for the tokens {missing[:5]}: LIME's words and the "
                         "model's tokens differ (pass the text through normalize_for_lime)")
    return np.array([by_word[t] for t in tokens])


def alpha_times_score(model: Any, ids: Any, target: int = 1) -> np.ndarray:
    """``(1/K) sum_i alpha_t^(i) s_t^(i)`` at every word position, ``s_t^(i) = W_l^(i) v_t^(i)``
    (logit ``target``): each token's share of the logit (the model is ``f = sum_t`` of these,
    chapter 1) and the value part of GxI (chapter 4's corollary). Attention weighted by the token
    score that attention itself never sees. Single-layer model only."""
    model = _model_of(model)
    if not isinstance(model, AttentionClassifier):
        raise TypeError("alpha x s is defined for the single-layer AttentionClassifier, not "
                        f"{type(model).__name__}")
    arr = _document(model, ids)
    target = validate.target(target, model.n_classes)
    with torch.no_grad():
        it = model(torch.as_tensor(arr)[None], return_internals=True)
    share = (it.alpha * it.token_scores[..., target]).mean(dim=1)[0]      # (T,)
    return share[1:arr.size].double().numpy()


@dataclass
class ReviewScores:
    """The explanations of one text at word-position level (:func:`review_scores`)."""

    text: str                      # what the model read (normalize_for_lime form)
    tokens: list[str]              # its n words ([CLS] excluded)
    ids: np.ndarray                # [CLS] + the words' ids
    scores: dict[str, np.ndarray]  # method -> (n,)
    logits: np.ndarray             # (C,) the model's logits on the text
    seconds: dict[str, float]      # time per group of methods
    lime: Any = None               # the LimeResult, if LIME ran


def review_scores(pre: Pretrained, text: str, methods: Iterable[str] = ALL_METHODS, *,
                  target: int = 1, lime_seed: Any = 0, random_seed: int = 0,
                  num_samples: int = 5000, kernel_width: float = 25.0,
                  limit_kwargs: Mapping[str, Any] | None = None,
                  lime_backend: str = "auto") -> ReviewScores:
    """The scores of ``methods`` (:data:`ALL_METHODS`) on one text, one per word position.

    The text is first put in :func:`attnxai.normalize_for_lime` form (the authors' preprocessing,
    truncated to the model's length), so that LIME's words are the model's tokens. Attention and
    gradients come from :func:`attnxai.explainers.position_scores` (logit ``target``); LIME from
    :func:`attnxai.fastlime.explain` with lime's settings (``bow=True``, ``num_samples``,
    ``kernel_width``, ``random_state=lime_seed``); the LIME limit from
    :func:`attnxai.theory.lime_limit` (``bow=True``, the same kernel width, aligned with lime's
    words); both mapped to positions by :func:`word_to_positions`. ``alpha x s``:
    :func:`alpha_times_score`. ``random``: i.i.d. standard normal scores from ``numpy.random.default_rng(random_seed)`` (signed, so the positive-only
    rule keeps about half of them). ``lime_backend``: the compiled loops of the fast LIME
    (:func:`attnxai.fastlime.explain`'s ``backend``; same numbers either way).
    """
    if not isinstance(pre, Pretrained):
        raise TypeError(f"pre must be an attnxai Pretrained (model and vocabulary), got "
                        f"{type(pre).__name__}")
    methods = list(dict.fromkeys(methods))
    unknown = [m for m in methods if m not in ALL_METHODS]
    if unknown:
        raise ValueError(f"unknown method(s) {unknown}; choose among {list(ALL_METHODS)}")
    target = validate.target(target, pre.model.n_classes)
    validate.text(text)
    text = normalize_for_lime(text, pre.model.max_len - 1)
    tokens = text.split(" ")
    ids = np.asarray(pre.vocab.encode(text, pre.model.max_len), dtype=np.int64)
    n = len(tokens)
    out: dict[str, np.ndarray] = {}
    seconds: dict[str, float] = {}
    pos = [m for m in methods if m in explainers.POSITION_METHODS]
    t0 = time.perf_counter()
    with torch.no_grad():
        logits = pre.model(torch.as_tensor(ids)[None]).double().numpy()[0]
    if pos:
        got = explainers.position_scores(pre.model, torch.as_tensor(ids)[None], target, pos)
        out.update({m: got[m][0, 1:n + 1].double().numpy() for m in pos})
    if "alpha x s" in methods:
        out["alpha x s"] = alpha_times_score(pre.model, ids, target)
    seconds["attention+gradients"] = time.perf_counter() - t0
    res = None
    if "LIME" in methods:
        t0 = time.perf_counter()
        res = fastlime.explain(pre, text, num_samples=num_samples, kernel_width=kernel_width,
                               bow=True, random_state=lime_seed, target=target,
                               backend=lime_backend)
        out["LIME"] = word_to_positions(tokens, res.words, res.coef)
        seconds["LIME"] = time.perf_counter() - t0
    if "LIME limit" in methods:
        from . import theory                    # (imports SymPy: only when the limit is asked)

        t0 = time.perf_counter()
        words = fastlime.lime_features(tokens, True)[0]
        beta = theory.lime_limit(pre, text, bow=True, kernel_width=kernel_width, target=target,
                                 **dict(limit_kwargs or {}))
        out["LIME limit"] = word_to_positions(tokens, words, beta)
        seconds["LIME limit"] = time.perf_counter() - t0
    if "random" in methods:
        out["random"] = np.random.default_rng(random_seed).standard_normal(n)
    return ReviewScores(text=text, tokens=tokens, ids=ids, scores={m: out[m] for m in methods},
                        logits=logits, seconds=seconds, lime=res)


# ====================================================================== one text, for the CLI
def cached_pretrained(profile: str = "paper", *, progress: bool = True) -> Pretrained:
    """The cached model of ``profile`` without reading the IMDb archive when possible.

    :func:`attnxai.pretrained` identifies a checkpoint by the training configuration *and* the
    archive's checksum, which means reading the archive (seconds). Here the cache's
    ``models/<profile>-*`` folders are searched for the profile's configuration; if exactly one
    matches it is loaded directly, else :func:`attnxai.pretrained` decides (and trains the
    profile if it is not cached, with a progress bar).
    """
    from .checkpoint import load, pretrained
    from .data import cache_dir
    from .train import get_config

    config = get_config(profile).to_dict()
    root = cache_dir() / "models"
    found = []
    for folder in sorted(root.glob(f"{config['profile']}-*")) if root.is_dir() else []:
        try:
            conf = json.loads((folder / "config.json").read_text())
        except (OSError, ValueError):
            continue
        if conf.get("train") == config and (folder / "model.safetensors").is_file():
            found.append(folder)
    if len(found) == 1:
        return load(found[0])
    if not found and progress:
        import sys

        print(f"attnxai: no cached {config['profile']!r} model under {root}: training it first "
              "(progress below; it is cached for the next time)", file=sys.stderr)
    return pretrained(profile, progress=progress)


@dataclass
class TextExplanation:
    """The paper's explainers on one text (:func:`explain`): ``scores[method]`` has one weight
    per token of ``tokens`` (what the model read, [CLS] excluded)."""

    text: str
    tokens: list[str]
    scores: dict[str, np.ndarray]
    logits: np.ndarray
    target: int
    n_tokens: int                  # tokens of the whole text (after normalising)
    cut: int                       # tokens beyond the model's length, left out
    unknown: list[str]             # distinct words the vocabulary does not know (read as UNK)
    model: str                     # checkpoint folder name
    settings: dict[str, Any]
    seconds: float = 0.0

    @property
    def probability(self) -> np.ndarray:
        """The model's class probabilities (softmax of ``logits``)."""
        e = np.exp(self.logits - self.logits.max())
        return e / e.sum()

    @property
    def predicted(self) -> int:
        return int(np.argmax(self.logits))

    def table(self):
        """One row per token, one column per explainer (a :class:`pandas.DataFrame`)."""
        import pandas as pd

        return pd.DataFrame({"token": self.tokens, **self.scores})

    def summary(self) -> str:
        p = self.probability
        lines = [f"model {self.model}: logits {np.array2string(self.logits, precision=3)}, "
                 f"P(class {self.target}) = {p[self.target]:.3f}, predicted class "
                 f"{self.predicted}" + (" (positive)" if self.predicted == 1 else " (negative)")]
        if self.cut:
            lines.append(f"note: the text has {self.n_tokens} tokens and the model reads "
                         f"{len(self.tokens)}: the last {self.cut} were cut")
        if self.unknown:
            shown = ", ".join(self.unknown[:8]) + (" ..." if len(self.unknown) > 8 else "")
            lines.append(f"note: {len(self.unknown)} word(s) unknown to the model, read as UNK: "
                         f"{shown}")
        return "\n".join(lines)

    def to_text(self, *, color: bool = False, digits: int = 3) -> str:
        """The explanations side by side, one row per token (a terminal table). ``color``: ANSI
        green/red by sign."""
        names = list(self.scores)
        cells = [[f"{v:+.{digits}f}" for v in self.scores[m]] for m in names]
        tw = max([5] + [len(t) for t in self.tokens])
        widths = [max(len(m), max((len(c) for c in col), default=0)) for m, col in
                  zip(names, cells)]
        head = "#".rjust(4) + "  " + "token".ljust(tw) + "  " + "  ".join(
            m.rjust(w) for m, w in zip(names, widths))
        lines = [head, "-" * len(head)]
        for i, tok in enumerate(self.tokens):
            parts = []
            for j, (col, w) in enumerate(zip(cells, widths)):
                s = col[i].rjust(w)
                if color:
                    s = f"\x1b[{32 if self.scores[names[j]][i] >= 0 else 31}m{s}\x1b[0m"
                parts.append(s)
            lines.append(f"{i + 1:4d}  {tok.ljust(tw)}  " + "  ".join(parts))
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        return {"text": self.text, "tokens": self.tokens,
                "scores": {m: [float(x) for x in v] for m, v in self.scores.items()},
                "logits": [float(x) for x in self.logits],
                "probability": [float(x) for x in self.probability],
                "predicted": self.predicted, "target": self.target, "n_tokens": self.n_tokens,
                "cut": self.cut, "unknown": self.unknown, "model": self.model,
                "settings": self.settings, "seconds": self.seconds}

    def to_html(self) -> str:
        """Figure 1 for this text, a complete offline HTML page (:func:`attnxai.plots.figure1_page`)."""
        from .plots import figure1_page

        p = self.probability
        sub = (f"model {self.model}; P(class {self.target}) = {p[self.target]:.3f}; every row "
               f"explains logit {self.target}; LIME: {self.settings.get('num_samples')} samples, "
               f"kernel width {self.settings.get('kernel_width')}, bow=True, seed "
               f"{self.settings.get('lime_seed')}")
        notes = []
        if self.cut:
            notes.append(f"The text has {self.n_tokens} tokens; the model reads the first "
                         f"{len(self.tokens)}: the last {self.cut} were cut.")
        if self.unknown:
            notes.append(f"Unknown to the model (read as UNK): {', '.join(self.unknown)}.")
        return figure1_page(self.tokens, self.scores, title="Explanations of one text",
                            subtitle=sub, notes=notes)


def explain(text: str, *, pre: Pretrained | None = None, profile: str = "paper",
            methods: Iterable[str] | None = None, target: int = 1, lime_seed: int = 42,
            num_samples: int = 5000, kernel_width: float = 25.0, progress: bool = False,
            lime_backend: str = "numpy") -> TextExplanation:
    """The paper's explainers (default the seven of Figure 1) on any text: ``attnxai explain``.

    The text is preprocessed as the authors did (:func:`attnxai.normalize_for_lime`) and cut to
    the model's length (``cut`` says how many tokens were left out, and a warning too). LIME runs
    with lime's settings (5,000 samples, width 25, ``bow=True``, ``random_state=lime_seed``).
    ``pre``: a loaded model, else the cached model of ``profile`` (:func:`cached_pretrained`).
    ``methods`` may include the extra methods of :data:`EXTRA_METHODS`.

    ``lime_backend="numpy"`` (default) runs the fast LIME's loops in numpy: for one explanation
    that is quicker than loading the compiled numba kernels (about a second), with the same
    numbers; pass ``"auto"`` when explaining many texts in one process.

    Raises ValueError for an empty text, a text with no letter or digit, and a text none of whose
    words the model knows (every explainer would only see UNK).
    """
    from tqdm.auto import tqdm

    t_start = time.perf_counter()
    validate.text(text)
    methods = list(explainers.METHODS if methods is None else dict.fromkeys(methods))
    unknown = [m for m in methods if m not in ALL_METHODS]
    if unknown:
        raise ValueError(f"unknown explainer(s) {unknown}; choose among {list(ALL_METHODS)}")
    if not methods:
        raise ValueError("no explainer chosen")
    full = tokenize(normalize_for_lime(text, 10**9))       # raises for a text without a word
    groups = ["load the model" if pre is None else None, "attention and gradients",
              "LIME" if "LIME" in methods else None,
              "LIME limit" if "LIME limit" in methods else None]
    groups = [g for g in groups if g]
    bar = tqdm(total=len(groups), desc="explain", unit="step", disable=not progress, leave=False)
    if pre is None:
        bar.set_postfix_str(f"loading the {profile} model")
        pre = cached_pretrained(profile, progress=progress)
        bar.update(1)
    target = validate.target(target, pre.model.n_classes)
    limit = pre.model.max_len - 1
    kept = full[:limit]
    known = [w for w in dict.fromkeys(kept) if pre.vocab.stoi.get(w, pre.vocab.unk_id)
             != pre.vocab.unk_id]
    if not known:
        bar.close()
        raise ValueError(f"none of the {len(set(kept))} distinct words of the text is in the "
                         f"model's vocabulary ({', '.join(list(dict.fromkeys(kept))[:6])}"
                         f"{' ...' if len(set(kept)) > 6 else ''}): the model would read only "
                         "UNK tokens, and every explanation would be about UNK")
    unknown_words = [w for w in dict.fromkeys(kept) if w not in pre.vocab.stoi]
    cut = len(full) - len(kept)
    if cut > 0:
        warnings.warn(f"the text has {len(full)} tokens and the model reads {limit}: the last "
                      f"{cut} were cut from every explanation", stacklevel=2)
    bar.set_postfix_str("attention and gradients")
    pos = [m for m in methods if m not in ("LIME", "LIME limit")]
    rs = review_scores(pre, " ".join(kept), pos, target=target)
    bar.update(1)
    scores = dict(rs.scores)
    for m in ("LIME", "LIME limit"):
        if m in methods:
            bar.set_postfix_str(m)
            scores.update(review_scores(pre, rs.text, [m], target=target, lime_seed=lime_seed,
                                        num_samples=num_samples, kernel_width=kernel_width,
                                        lime_backend=lime_backend).scores)
            bar.update(1)
    bar.close()
    settings = {"lime_seed": lime_seed, "num_samples": num_samples, "kernel_width": kernel_width,
                "bow": True, "preprocessing": "normalize_for_lime", "lime_backend": lime_backend}
    return TextExplanation(text=rs.text, tokens=rs.tokens, scores={m: scores[m] for m in methods},
                           logits=rs.logits, target=target, n_tokens=len(full), cut=cut,
                           unknown=unknown_words,
                           model=pre.path.name if pre.path is not None else "in memory",
                           settings=settings, seconds=time.perf_counter() - t_start)


def write_html(explanation: TextExplanation, path: str | Path) -> Path:
    """Write :meth:`TextExplanation.to_html` to ``path`` (UTF-8); returns the path."""
    path = Path(path)
    path.write_text(explanation.to_html(), encoding="utf-8")
    return path
