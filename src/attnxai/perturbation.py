"""Which explanation is faithful? Perturbation metrics (ferret's AOPC comprehensiveness,
sufficiency and tau-LOO, and the book's own deletion and insertion curves) for any model of the
package's interface (the explanations themselves come from :func:`attnxai.explain`: pass its
``ids`` and ``token_scores``).

**What is measured.** ``p(x)`` is the model's **probability** of the explained class ``target``
(default 1, "positive", the logit every explainer of the paper explains): the softmax of the
model's logits, computed in float64. It is the quantity ferret uses (``logits.softmax(-1)[:,
target]``), so our numbers are comparable with ferret's; it is kept fixed everywhere (chapter 7
explains why it is not the raw logit 1 the explainers explain). A document is ``[CLS]`` followed by
``n`` word positions; ``[CLS]`` is never removed (ferret's ``remove_first_last=True``). A score
vector has one entry per word position (``[CLS]`` excluded).

**Equal to ferret, exactly when.** Comprehensiveness, sufficiency and tau-LOO equal those of
ferret's own evaluators (g8a9/ferret at 22935f8, run on the same float64 model:
``tests/test_faithfulness_ferret.py``) to rounding (1e-12; float32 models only to float32 rounding)
when the scores have **no ties**, for deletion (ferret's default ``remove_tokens=True``) and for
replacement with ferret's ``[MASK]`` read as UNK (``remove_tokens=False``), under the positive
rule (ferret's default) and the signed rule; tau-LOO with deletion only (ferret always deletes).
With **ties** see "Tie orders" below: no fixed rule reproduces ferret on every tied vector.
ferret's signed rule itself raises ``ValueError`` on numpy >= 1.25 (it compares an array with
``[]``). The curves and their areas are **not ferret's**: ferret has no curves.

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
    "ferret"    the later position first: a stable ascending sort of the keys, its last k
                entries, reversed: ferret's ``argsort()[-k:][::-1]`` *if* its ``argsort``
                kept ties in position order

ferret calls numpy's default ``argsort`` (``kind="quicksort"``), which promises no order of equal
keys, and the order it gives depends on the length and on numpy's version and build: numpy 1.x's
introsort keeps short arrays (up to 16 entries, its insertion-sort cutoff) in order and reorders
ties in longer ones, and numpy 2's SIMD sorts (numpy 2.4 on this AVX-512 machine) reorder them
from four entries (measured here on random vectors of three tied levels: 10 % of them at n = 4,
75 % at 8, all from 16 on; ``tests/test_faithfulness_ferret.py`` counts it). So ``"ferret"`` is
ferret's order exactly where that sort leaves ties in position order (tested against ferret's
code there), and on real reviews with ties no fixed rule is; the two orders together show how
much the tie order moves a result. Without ties both orders, and ferret, select the same
positions. Repeated words scored per word (LIME, its limit) tie at every occurrence, so for them
the order matters.

**Metrics** (:func:`evaluate`; the first three are ferret's ``faithfulness_measures.py``,
g8a9/ferret at commit 22935f8; the curves are the book's own). With ``r_q`` the first
``k_q = floor(q n)`` positions of the ranking (``q = 0.1, ..., 1.0``; for "positive" at most the
positive ones)::

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
:class:`~attnxai.model.interface.ClassifierBase`). ``"auto"`` takes the first when it can. Both agree to
rounding (tested).

**In SymPy.** :func:`symbolic_measures` writes every measure of one explanation as an expression
in the probabilities of the perturbed documents (one symbol per kept set), through the same
rankings, sizes and averaging code as :func:`evaluate`: chapter 7 derives its propositions with
it, and the tests check that substituting a model's probabilities gives :func:`evaluate`'s numbers.

**Words and positions.** Attention and gradients score positions. LIME (``bow=True``) and its
closed-form limit score distinct words: at position level every occurrence of a word carries its
word's whole coefficient (the one rule of :mod:`attnxai.words`), so the occurrences tie.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from . import validate
from .model.interface import ClassifierBase
from .model.single_layer import AttentionClassifier
from .model.textmodel import Pretrained

__all__ = ["BACKENDS", "CURVE_FRACTIONS", "DEFAULT_SELECTIONS", "Faithfulness", "METRICS",
           "PERTURBATIONS", "Perturber", "QUANTILES", "SELECTIONS", "TIES", "agreement",
           "comprehensiveness", "curve_sizes", "deletion_curve", "evaluate", "insertion_curve",
           "probability", "ranking", "rationale_sizes", "sufficiency", "symbolic_measures",
           "tau_loo"]

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
    if isinstance(scores, torch.Tensor):
        if scores.is_complex():
            raise TypeError(f"scores of {name!r} must be real numbers, got a complex tensor")
        s = scores.detach().cpu().double().numpy()
    else:
        s = validate.real_scores(scores, f"scores of {name!r}")
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
    s = validate.real_scores(scores)
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
    :class:`~attnxai.model.single_layer.AttentionClassifier` (:mod:`attnxai.fastlime.evaluate`, one evaluator
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
        from .model.network import Projections

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

    ``model``: a :class:`~attnxai.model.textmodel.Pretrained` or a classifier; ``ids``: the document
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
