"""The book's explorer page: a reader's own review explained in the browser, with no server.

The page (``book/explore.md``, compact versions in chapters 2, 3, 5 and 9) runs a small ES module
(``book/static/explorer/core.js``) that reads the text as :func:`attnxai.explain` reads it and
computes, from the tables this module exports, the same numbers as :func:`explain_page`: the
prediction, alpha-avg and alpha-max, the gradient's summaries and G x I, Integrated Gradients,
LIME's limit for replacement and the Shapley values for replacement (:data:`METHODS`).

**What is exported, and why it is small.** For the Section 2 classifier every output of the page
depends on a word's embedding ``W_e[x]`` only through ``K + K C`` numbers: its attention score
``W_e[x] . U_i`` and its value scores ``W_e[x] . H_i[:, c]`` per head (the projections of
:mod:`attnxai.model.network`; the gradient is a combination of the fixed directions ``U_i`` and
``H_i``, and G x I its dot product with ``e_t``, which needs the same numbers). So the page loads,
for every word the page can meet (the vocabulary's words in ``[0-9a-z]+``:
:func:`attnxai.normalize_for_lime` leaves no other), those 18 numbers in float32 instead of 128,
plus the position tables and the directions in float64.

**The exported model** (:func:`projected_model`) is the checkpoint with every word vector (but
``[CLS]``'s, which sets the query) replaced by its orthogonal projection on the span of the
``U_i`` and ``H_i``, stored in the model's float32: the same function as the checkpoint up to that
rounding, and the model whose tables the page holds (rounded once more, to float32). The page is
compared with the package run on it; :func:`fidelity` measures what the export changes against
the checkpoint itself.

Files (:func:`export`): ``model.json`` (the format, the model's description as ``python -m attnxai
info`` prints it, sizes, the words, the methods, where each array lies in the binary file and its
sha256) and ``model.bin`` (little-endian float64 then float32 arrays).
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from .explanation import Explanation, explain
from .model.store.checkpoint import describe
from .model.network import Projections
from .model.single_layer import AttentionClassifier
from .model.textmodel import Pretrained
from .store.files import atomic_write
from .text import SPECIALS

__all__ = ["FORMAT", "METHODS", "PageMethod", "TARGET", "TOLERANCE", "check_model", "explain_page", "export",
           "fidelity", "page_words", "projected_model"]

FORMAT = "attnxai-explorer/1"
#: The logit every method of the page explains (the book's logit 1, "positive").
TARGET = 1
#: How close the page's numbers are to :func:`explain_page`'s on the exported model, relative to
#: the text's largest score of each explainer (the page computes in float64 from float32 tables,
#: the package's attention and gradients run in float32): what ``tests/book/test_explorer.py`` checks.
TOLERANCE = 1e-4
_ALNUM = re.compile(r"[0-9a-z]+")


@dataclass(frozen=True)
class PageMethod:
    """One explainer of the page: its ``label`` there, the :data:`attnxai.registry.METHODS` entry
    it equals and the ``settings`` :func:`attnxai.explain` needs for it, and one line for the
    reader."""

    label: str
    method: str
    settings: dict
    about: str


#: The page's explainers, in its order, each the :func:`attnxai.explain` method it equals.
METHODS = (
    PageMethod("alpha-avg", "alpha-avg", {}, "the [CLS] attention weight, mean over heads"),
    PageMethod("alpha-max", "alpha-max", {}, "the [CLS] attention weight, max over heads"),
    PageMethod("G-avg", "G-avg", {}, "mean of the gradient's coordinates"),
    PageMethod("G-l1", "G-l1", {}, "l1 norm of the gradient"),
    PageMethod("G-l2", "G-l2", {}, "l2 norm of the gradient"),
    PageMethod("GxI", "GxI", {}, "gradient times input"),
    PageMethod("IG", "IG", {}, "Integrated Gradients from the UNK baseline (closed form)"),
    PageMethod("LIME limit (replace)", "LIME limit", {"bow": False},
               "LIME's large-sample limit, each token replaced by UNK in place (closed form, "
               "independent removal at each kept fraction: the package's default)"),
    PageMethod("Shapley (replace)", "Shapley (replace)", {},
               "exact Shapley values of the tokens, replaced by UNK in place (closed form)"),
)


def check_model(pre: Pretrained) -> AttentionClassifier:
    """The page's model: the single-layer classifier with masked padding and no skip connection
    (the model of the closed forms), else a ``TypeError`` or ``ValueError`` saying why."""
    if not isinstance(pre, Pretrained):
        raise TypeError(f"the explorer exports an attnxai Pretrained, got {type(pre).__name__}")
    m = pre.model
    if not isinstance(m, AttentionClassifier):
        raise TypeError(f"the explorer computes the single-layer classifier's closed forms, not "
                        f"a {type(m).__name__}")
    if getattr(m, "skip", False):
        raise ValueError("the explorer's closed forms are derived without the skip connection")
    if m.padding != "mask":
        raise ValueError(f"the explorer reads a document without padding (padding='mask'); this "
                         f"model pads with {m.padding!r}")
    if m.n_classes <= TARGET:
        raise ValueError(f"the explorer explains logit {TARGET}; the model has {m.n_classes}")
    return m


def page_words(pre: Pretrained) -> list[str]:
    """The vocabulary's words the page can meet, in id order: those in ``[0-9a-z]+`` (the only
    tokens :func:`attnxai.normalize_for_lime` leaves), less ``unk`` (which the vocabulary reads
    as ``UNK``)."""
    return [w for w in pre.vocab.itos if w not in SPECIALS and w != "unk" and _ALNUM.fullmatch(w)]


def _span(proj: Projections) -> np.ndarray:
    """(D, r) an orthonormal basis of the directions the outputs read a word vector along (the
    columns of ``U`` and ``H``), by SVD with a relative rank cut of 1e-12."""
    D = proj.U.shape[0]
    M = np.concatenate([proj.U, proj.H.reshape(D, -1)], axis=1)
    Q, s, _ = np.linalg.svd(M, full_matrices=False)
    r = int(np.sum(s > s[0] * 1e-12)) if s.size and s[0] > 0 else 0
    return Q[:, :r]


def projected_model(pre: Pretrained) -> Pretrained:
    """The exported model (module docstring): a copy of ``pre`` whose word vectors, ``[CLS]``'s
    apart, are their projections on the span of the ``U_i`` and ``H_i``, in the model's dtype.
    Its ``path`` is None (no checkpoint folder holds it)."""
    m = check_model(pre)
    Q = _span(Projections.of(m))
    out = copy.deepcopy(m)
    with torch.no_grad():
        W = m.W_e.detach().to("cpu", torch.float64).numpy()
        P = W @ Q @ Q.T
        P[m.cls_id] = W[m.cls_id]
        out.W_e.copy_(torch.as_tensor(P).to(m.W_e.dtype))
    return Pretrained(out.eval(), pre.vocab, pre.config, pre.metrics, None)


def _description(pre: Pretrained) -> dict[str, Any]:
    """``python -m attnxai info``'s description of ``pre`` without the building machine's
    folder (a checkpoint in memory: its name only)."""
    if pre.path is None:
        return {"model": "in memory", "note": "not loaded from a checkpoint folder"}
    info = describe(pre)
    info.pop("path", None)
    return info


def export(pre: Pretrained, out: str | Path) -> dict[str, Any]:
    """Write the page's ``model.json`` and ``model.bin`` for ``pre`` into the folder ``out``
    (created; each file written atomically) and return the metadata written to ``model.json``.
    The tables are those of :func:`projected_model` (module docstring)."""
    m = check_model(pre)
    exported = projected_model(pre)
    proj = Projections.of(exported.model)
    words = page_words(pre)
    ids = np.array([m.cls_id, m.unk_id] + [pre.vocab.stoi[w] for w in words], dtype=np.int64)
    W = proj.word_vectors(ids)                                         # (V, D) float64
    arrays = [                                # float64 first: every offset stays aligned
        ("pos_score", proj.pos_score[:m.max_len], "<f8"),              # (L, K)
        ("pos_value", proj.pos_value[:m.max_len], "<f8"),              # (L, K, C)
        ("U", proj.U, "<f8"),                                          # (D, K)
        ("H", proj.H, "<f8"),                                          # (D, K, C)
        ("word_score", W @ proj.U, "<f4"),                             # (V, K)
        ("word_value", np.einsum("vd,dkc->vkc", W, proj.H), "<f4"),    # (V, K, C)
    ]
    blobs, layout, offset = [], {}, 0
    for name, a, dtype in arrays:
        raw = np.ascontiguousarray(a, dtype=dtype).tobytes()
        layout[name] = {"offset": offset, "shape": list(a.shape), "dtype": dtype[1:]}
        blobs.append(raw)
        offset += len(raw)
    data = b"".join(blobs)
    from .theory.lime_attention import MEASURED_ERRORS

    med, top = MEASURED_ERRORS["independent removal"]
    meta = {
        "format": FORMAT,
        "model": _description(pre),
        "dims": {"n_heads": m.n_heads, "n_classes": m.n_classes, "d_embed": m.d_embed,
                 "d_attn": m.d_attn, "max_len": m.max_len},
        "target": TARGET, "class_names": ["negative", "positive"][:m.n_classes],
        "rows": {"cls": 0, "unk": 1, "first_word": 2},
        "words": words,
        "methods": [{"label": x.label, "method": x.method, "settings": x.settings,
                     "about": x.about} for x in METHODS],
        "lime_limit_error": {"median": med, "max": top},
        "binary": {"file": "model.bin", "bytes": len(data),
                   "sha256": hashlib.sha256(data).hexdigest(), "arrays": layout},
    }
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    atomic_write(out / "model.bin", data)
    atomic_write(out / "model.json", json.dumps(meta, separators=(",", ":")))
    return meta


def explain_page(pre: Pretrained, text: str) -> Explanation:
    """:func:`attnxai.explain` of ``text`` by the page's methods (:data:`METHODS`, logit
    :data:`TARGET`): what the page must show. LIME's limit for replacement is the package's
    default (independent removal), whose warning about it is silenced here (the page states it)."""
    settings = {x.method: x.settings for x in METHODS if x.settings}
    with warnings.catch_warnings():
        from .theory.lime_attention import LimitApproximationWarning

        warnings.simplefilter("ignore", LimitApproximationWarning)
        return explain(pre, text, [x.method for x in METHODS], target=TARGET, settings=settings)


def _relative_gap(a: np.ndarray, b: np.ndarray) -> float:
    """``max |a - b|`` over ``max |b|`` (0 when both vanish)."""
    top = float(np.max(np.abs(b))) if b.size else 0.0
    gap = float(np.max(np.abs(a - b))) if b.size else 0.0
    return gap / top if top > 0 else gap


def fidelity(full: Pretrained, texts: list[str], labels: list[int], explained: list[str],
             exported: Pretrained | None = None) -> dict[str, Any]:
    """What the export changes (module docstring): :func:`projected_model` against ``full``.

    ``texts``, ``labels``: the reviews on which both models' accuracies are measured (their
    number, both accuracies, the number of predictions that differ and the largest change of a
    logit); ``explained``: the reviews on which every method of :data:`METHODS` is compared (for
    each, the largest over the reviews of ``max |exported - full| / max |full|`` on the review,
    and on which review). Texts with nothing to explain (refused by :func:`attnxai.explain`) are
    counted, not compared."""
    exported = projected_model(full) if exported is None else exported
    y = np.asarray(labels)
    a = full.predict_logits(texts)
    b = exported.predict_logits(texts)
    out: dict[str, Any] = {
        "reviews": len(texts), "accuracy_full": float(np.mean(a.argmax(1) == y)),
        "accuracy_exported": float(np.mean(b.argmax(1) == y)),
        "predictions_differ": int(np.sum(a.argmax(1) != b.argmax(1))),
        "max_logit_change": float(np.max(np.abs(a - b))), "explained": len(explained),
        "refused": 0, "methods": {x.label: {"max_relative_change": 0.0, "review": None}
                                  for x in METHODS}}
    for i, text in enumerate(explained):
        try:
            e_full = explain_page(full, text)
        except ValueError:
            out["refused"] += 1
            continue
        e_exp = explain_page(exported, text)
        for x in METHODS:
            gap = _relative_gap(e_exp.token_scores[x.method], e_full.token_scores[x.method])
            rec = out["methods"][x.label]
            if gap > rec["max_relative_change"]:
                rec.update(max_relative_change=gap, review=i)
    return out
