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
rule (ferret's default) and the signed rule; tau-LOO with deletion only (ferret always deletes),
and where no two leave-one-out drops are within ``LOO_TIE`` of each other ("tau-LOO and ties").
With **ties** of the scores see "Tie orders" below: no fixed rule reproduces ferret on every
tied vector.
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
    tau-LOO                = Kendall tau-b(scores, p(x) - p(x without t), over positions t),
                             with the ties of "tau-LOO and ties" below
    deletion curve         D(f) = p(x without r_f),  f = 0, 0.05, ..., 1   (area: lower is better)
    insertion curve        I(f) = p(r_f only)                              (area: higher is better)

Exactly as ferret: ``k_q = int(q * n)`` with ``q`` from ``np.arange(0.1, 1.1, 0.1)`` (equal to the
integer ``(10 q) n // 10`` for every n up to 20,000, which is what we compute); a ``q`` with
``k_q = 0`` or whose rationale is the same set as the previous one is left out of the mean; an
explanation with no rationale at all (e.g. no positive score) gets comprehensiveness 0 and
sufficiency 1 (ferret's values). ``n_rationales`` reports how many ``q`` entered the mean. ferret
computes tau-LOO with deletion only; we compute it with both perturbations. The curves use
``k_f = floor(f n)`` and their areas the trapezoidal rule on ``[0, 1]``.

**tau-LOO and ties** (:func:`kendall_tau_loo`, :data:`LOO_TIE`). Kendall's tau-b sums, over
the pairs of positions ``s < t``, ``sign(w_s - w_t) * sign(l_s - l_t)`` (``w`` the scores, ``l``
the leave-one-out drops) and divides by the square root of the product of the numbers of pairs
untied in ``w`` and untied in ``l``; NaN when either number is 0 (one word, constant scores, or
every drop within ``LOO_TIE`` of every other). Two **scores** tie when they are equal (they are the
explanation as given: LIME's word scores tie exactly at a repeated word). Two **drops** tie when
they differ by at most ``LOO_TIE = 2**-36`` (about 1.5e-11), pair by pair (no chaining: drops 0.6
``LOO_TIE`` either side of a third tie with it, not with each other).

Why a tolerance, and an absolute one. The drops are differences of probabilities, whose float64
rounding is absolute where it matters (doubles just below 1 are 2^-53 apart), and the two backends
compute each probability in another order: on random float64 models with init_range up to 3,
saturated attention included, their drops differ by at most 1.3e-14 (500 models,
``tests/test_faithfulness_ties.py``). With exact ties each backend had ties, and orders, of its
own on different pairs, and tau-LOO depended on the backend on 11 of those 500 models (by up to
0.21, in sign too, or NaN for one backend only). ``LOO_TIE`` is 2^17 units of 2^-53, over 1,000
times the largest difference measured between the backends, and far below any difference of two
words' effects a reader would call real. The backends then give one tau-LOO except where a pair
of drops differs by within twice their difference of ``LOO_TIE`` itself: a threshold on a rounded
number cannot be exact there (chapter 7, ``prop-faith-tau-ties``).

**The drops of a two-class model** are computed from the logit margins ``z = f_c - f_other`` of
the document and ``z'`` of the document without the word, as ``sigmoid(z) - sigmoid(z')``
evaluated on the side of the smaller probabilities (``sigmoid(-z') - sigmoid(-z)`` when
``z + z' > 0``): no two numbers near 1 are subtracted, and the other class's drops are exactly
these negated (the same sigmoids, swapped), so tau-LOO of class 0 is minus that of class 1 bit for
bit, ties and saturated probabilities included, and so is the flipped model's (chapter 7). They
equal ``p(x) - p(x without t)`` computed from the softmaxes to rounding (2.8e-16 at most on the
500 models of ``tests/test_faithfulness_ties.py``, where 1e-14 is asserted); with
the softmax differences instead, a class whose probabilities are near 1 gets drops rounded to
multiples of 2^-53, two of them equal where the other class's differ, and tau_0 != -tau_1
(``tests/test_results_faithfulness.py`` shows one). Other numbers of classes: the softmax
differences.

**Where this departs from ferret**: ferret's tau is ``scipy.stats.kendalltau`` of its drops as
its forward pass rounds them (exact ties only); the two are equal whenever no two distinct drops
lie within ``LOO_TIE`` of each other (``tests/test_faithfulness_ferret.py`` tests it on every
example and counts those where they do).

**Batched.** For one review and one perturbation every perturbed document any metric needs (all
explainers, rules, sizes, the leave-one-out documents) is collected, equal documents are kept
once, and the model is evaluated once (:class:`Perturber`): on the float64 projections of the single-layer
model (``backend="fast"``, :mod:`attnxai.fastlime.evaluate`, the evaluators the fast LIME uses), or
by the model's own ``forward`` on the collated batch, in chunks (``backend="model"``, any
:class:`~attnxai.model.interface.ClassifierBase`). ``"auto"`` takes the first when it can. Both agree to
rounding on float64 models (their drops to about 1e-14, tau-LOO exactly except at the
threshold: "tau-LOO and ties"; tested); on a float32 model ``"model"`` runs the model's own
float32 forward pass, so it agrees with ``"fast"`` (float64 projections of the same weights) only
to float32 rounding, tau-LOO included.

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

__all__ = ["BACKENDS", "CURVE_FRACTIONS", "DEFAULT_SELECTIONS", "Faithfulness", "LOO_TIE",
           "METRICS", "PERTURBATIONS", "Perturber", "QUANTILES", "SELECTIONS", "TIES", "agreement",
           "comprehensiveness", "curve_sizes", "deletion_curve", "evaluate", "insertion_curve",
           "kendall_tau_loo", "loo_pair_signs", "loo_tie_sign", "probability", "ranking",
           "rationale_sizes", "sufficiency", "symbolic_measures", "tau_loo"]

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
#: Two leave-one-out drops this close (absolute: they are differences of probabilities) tie in
#: tau-LOO: 2^17 units of 2^-53 (module docstring, "tau-LOO and ties").
LOO_TIE = 2.0 ** -36


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


def _sigmoid(a: np.ndarray) -> np.ndarray:
    """``1 / (1 + exp(-a))`` in float64, without overflow; the same bits for the same ``a``."""
    out = np.empty_like(a)
    pos = a >= 0
    out[pos] = 1.0 / (1.0 + np.exp(-a[pos]))
    e = np.exp(a[~pos])
    out[~pos] = e / (1.0 + e)
    return out


def _drops(full: np.ndarray, others: np.ndarray, target: int) -> np.ndarray:
    """``p(x) - p(x')`` for the logits ``full`` (C,) of x and ``others`` (m, C) of the documents
    x'. Two classes: from the margins ``z = f_c - f_other`` as ``sigmoid(z) - sigmoid(z')``, taken
    on the side of the smaller probabilities (``sigmoid(-z') - sigmoid(-z)`` when ``z + z' > 0``):
    accurate where the probabilities are close to 1 (no cancellation of two numbers near 1), and
    odd in the margins bit for bit (the other class's drops are exactly these negated: the same
    four arrays of sigmoids, swapped). Other numbers of classes: the difference of the softmaxes."""
    if others.shape[1] != 2:
        return _softmax(full[None], target)[0] - _softmax(others, target)
    z = np.full(len(others), full[target] - full[1 - target])
    zs = others[:, target] - others[:, 1 - target]
    return np.where(z + zs > 0, _sigmoid(-zs) - _sigmoid(-z), _sigmoid(z) - _sigmoid(zs))


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
        """``p(target | x perturbed)`` for each row of ``keep``: (m,) float64."""
        return _softmax(self.logits(keep), self.target)

    def logits(self, keep: np.ndarray) -> np.ndarray:
        """The model's logits on each perturbed document, in float64: (m, n_classes)."""
        keep = np.asarray(keep)
        if keep.ndim != 2 or keep.shape[1] != self.n or keep.dtype != bool:
            raise ValueError(f"keep must be an (m, {self.n}) bool array, got {keep.dtype} "
                             f"{keep.shape}")
        self.calls += 1
        if self._evaluators is not None:
            return np.stack([ev(keep) for ev in self._evaluators], axis=1)
        return self._model_logits(keep)

    def _model_logits(self, keep: np.ndarray) -> np.ndarray:
        m = self.model
        words = self.ids[1:]
        out = np.empty((len(keep), m.n_classes))
        with torch.no_grad():
            for s in range(0, len(keep), self.batch_size):
                block = keep[s:s + self.batch_size]
                if self.perturbation == "replace":
                    body = np.where(block, words[None, :], m.unk_id)
                    ids = torch.as_tensor(np.concatenate(
                        [np.full((len(block), 1), self.ids[0]), body], axis=1))
                else:
                    ids = m.collate([[int(self.ids[0])] + words[row].tolist() for row in block])
                out[s:s + len(block)] = m(ids).double().numpy()
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
        logits = P.logits(masks[first])[inverse]
        probs = _softmax(logits, target)
        used[pert], calls[pert], docs[pert] = P.backend_used, P.calls, len(first)
        px, pe = float(probs[0]), float(probs[1])
        p_full[pert], p_empty[pert] = px, pe
        loo = _drops(logits[0], logits[2:2 + n], target)
        loos[pert] = loo
        taus = {name: kendall_tau_loo(s, loo) for name, s in S.items()}
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


# ====================================================================== tau-LOO
def loo_pair_signs(drops: Any, tie: float = LOO_TIE) -> np.ndarray:
    """``sign(l_s - l_t)`` for every pair ``s < t`` of leave-one-out drops (in the order of
    ``np.triu_indices(n, 1)``), 0 where ``|l_s - l_t| <= tie``: (n (n - 1) / 2,) int8."""
    d = np.asarray(drops, dtype=np.float64)
    if d.ndim != 1:
        raise ValueError(f"drops must be 1-D, got shape {d.shape}")
    i, j = np.triu_indices(d.size, 1)
    diff = d[i] - d[j]
    return np.where(np.abs(diff) <= tie, 0, np.sign(diff)).astype(np.int8)


def kendall_tau_loo(scores: Any, drops: Any, *, tie: float = LOO_TIE) -> float:
    """tau-LOO of one explanation: Kendall's tau-b of ``scores`` (n,) and the leave-one-out
    ``drops`` (n,), scores tied when equal, drops when within ``tie`` of each other (module
    docstring, "tau-LOO and ties"). NaN when every pair ties in either (one word included).

    Counted in integers, so it is odd in each argument: negating the scores or the drops negates
    it bit for bit. Without near-ties (no two distinct drops within ``tie``) it is
    ``scipy.stats.kendalltau`` (ferret's tau-LOO) to rounding.
    """
    w = np.asarray(scores, dtype=np.float64)
    if w.ndim != 1 or w.shape != np.shape(drops):
        raise ValueError(f"scores and drops must be 1-D of one length, got {w.shape} and "
                         f"{np.shape(drops)}")
    i, j = np.triu_indices(w.size, 1)
    sw = np.sign(w[i] - w[j]).astype(np.int64)
    sl = loo_pair_signs(drops, tie).astype(np.int64)
    untied_w, untied_l = int(np.count_nonzero(sw)), int(np.count_nonzero(sl))
    if untied_w == 0 or untied_l == 0:
        return float("nan")
    return float(int(sw @ sl) / np.sqrt(float(untied_w) * float(untied_l)))


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
    ``n_rationales``, ``tau_loo`` (Kendall's tau-b of the scores and the leave-one-out drops:
    ``sum_{i<j} sign(w_i - w_j) S(l_i - l_j)`` over the square root of the product of the numbers
    of untied pairs, ``S`` the sign with :data:`LOO_TIE`'s ties, :func:`loo_tie_sign`; NaN when
    every pair of scores ties, or, for numbers, every pair of drops) and ``symbols`` (kept set ->
    its expression). Its drops are differences of ``p``; :func:`evaluate` computes a two-class
    model's from the logit margins, equal to rounding (module docstring).
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
    S = loo_tie_sign()
    sl = [S(loo[i] - loo[j]) for i, j in pairs]
    untied_w, untied_l = sum(v * v for v in sw), sum(b ** 2 for b in sl)
    out["tau_loo"] = (sp.nan if untied_w == 0 or untied_l == 0 else    # (0: numbers, all tied)
                      sum(a * b for a, b in zip(sw, sl)) / sp.sqrt(untied_w * untied_l))
    out["symbols"] = dict(names)
    return out


_TIE_SIGN: Any = None


def loo_tie_sign() -> Any:
    """The SymPy function ``S(x)``: ``sign(x)``, and 0 where ``|x| <=`` :data:`LOO_TIE` (the ties
    of tau-LOO's drops). It evaluates on numbers, stays symbolic otherwise, and is odd
    (``S(-x) = -S(x)``), which is all the propositions of chapter 7 use."""
    global _TIE_SIGN
    if _TIE_SIGN is None:
        import sympy as sp

        class tie_sign(sp.Function):
            """sign with the ties of tau-LOO's drops (|x| <= LOO_TIE: 0)"""

            @classmethod
            def eval(cls, x):
                if x.is_number and x.is_real:
                    return sp.Integer(0) if abs(float(x)) <= LOO_TIE else sp.sign(x)
                if x.could_extract_minus_sign():
                    return -cls(-x)
                return None

            def _latex(self, printer, exp=None):
                arg = printer._print(self.args[0])
                base = r"\operatorname{sign}_{\delta}\left(%s\right)" % arg
                return base if exp is None else f"{base}^{{{exp}}}"

        _TIE_SIGN = tie_sign
    return _TIE_SIGN


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
