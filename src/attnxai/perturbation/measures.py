"""The faithfulness measures of one document (:func:`evaluate`, :class:`Faithfulness`): AOPC
comprehensiveness and sufficiency, tau-LOO with its ties, the deletion and insertion curves; one
measure at a time (:func:`comprehensiveness`, ...), and the agreement of explanations.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .. import validate
from .perturber import Perturber, drops_of, softmax
from .rankings import (CURVE_FRACTIONS, DEFAULT_SELECTIONS, LOO_TIE, PERTURBATIONS, SELECTIONS,
                       TIES, aopc_sizes, choices, curve_sizes, document, model_of, ranking,
                       score_vector)



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


def distinct_documents(masks: np.ndarray, ids: np.ndarray, perturbation: str, unk_id: int
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

    model = model_of(model)
    arr = document(model, ids)
    n = arr.size - 1
    target = validate.target(target, model.n_classes)
    perts = choices(perturbations, "perturbation", PERTURBATIONS)
    sels = choices(selections, "selection", SELECTIONS)
    if not isinstance(scores, Mapping) or not scores:
        raise ValueError("scores must be a non-empty mapping name -> per-position scores")
    S = {str(k): score_vector(str(k), v, n) for k, v in scores.items()}
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
        sizes = sorted(set(aopc_sizes(order.size, n)) | {int(min(k, order.size)) for k in csz})
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
        first, inverse = distinct_documents(masks, arr, pert, model.unk_id)
        logits = P.logits(masks[first])[inverse]
        probs = softmax(logits, target)
        used[pert], calls[pert], docs[pert] = P.backend_used, P.calls, len(first)
        px, pe = float(probs[0]), float(probs[1])
        p_full[pert], p_empty[pert] = px, pe
        loo = drops_of(logits[0], logits[2:2 + n], target)
        loos[pert] = loo
        taus = {name: kendall_tau_loo(s, loo) for name, s in S.items()}
        for (name, sel), order in orders.items():
            sizes, start = where[(name, sel)]
            m = len(sizes)
            p_without = dict(zip(sizes, probs[start:start + m]))
            p_only = dict(zip(sizes, probs[start + m:start + 2 * m]))
            p_without[0], p_only[0] = px, pe
            out = rationale_measures(px, p_without, p_only, order.size, n, csz, fr)
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


def rationale_measures(px: Any, p_without: Mapping[int, Any], p_only: Mapping[int, Any],
                        n_ranked: int, n: int, curve_k: Sequence[int], fractions: Any
                        ) -> dict[str, Any]:
    """The measures of one ranking from the probabilities it needs, numbers or SymPy expressions
    alike (:func:`evaluate`, :func:`symbolic_measures`): ``p_without[k]`` = p(x without the first
    k ranked positions), ``p_only[k]`` = p(only them), for k = 0 and every size used."""
    aopc = aopc_sizes(n_ranked, n)
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
