"""What the LIME closed forms read: one document's ids, lime's features and the model's float64
tables (:class:`attnxai.model.network.DocumentTables`, seen heads first).

Every closed form of :mod:`attnxai.theory.lime_attention` takes its inputs as
:func:`attnxai.fastlime.explain_instance` does (a :class:`~attnxai.model.textmodel.Pretrained` and a text
in :func:`attnxai.normalize_for_lime` form, or the model and the document's ids) and goes through
:func:`resolve` and :func:`tables`, so that the checks (types, [CLS], padding, finite weights) are
made once, here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import torch

from .. import validate
from ..model.textmodel import Pretrained
from ..fastlime import is_normalized, lime_features
from ..model.single_layer import AttentionClassifier
from ..model.network import Projections

__all__ = ["Tables", "as_ids", "check_finite_weights", "document_features", "feature_owner",
           "incidence", "resolve", "tables", "text_inputs", "token_layout"]


def as_ids(model: AttentionClassifier, ids) -> np.ndarray:
    """One document's ids as a 1-D int64 array without padding, checked by the model itself."""
    if not isinstance(model, AttentionClassifier):
        raise TypeError(f"model must be an AttentionClassifier, got {type(model).__name__} "
                        "(for a Pretrained, pass pre.model)")
    t = torch.as_tensor(ids) if not isinstance(ids, torch.Tensor) else ids
    if t.dtype.is_floating_point or t.dtype == torch.bool:
        raise TypeError(f"ids must be integers, got {t.dtype}")
    if t.dim() == 1:
        t = t[None]
    if t.dim() != 2 or t.shape[0] != 1:
        raise ValueError(f"explain one document at a time: ids has shape {tuple(t.shape)}")
    model.ids_and_mask(t.long())                       # the model's own checks ([CLS], range...)
    arr = t[0].long().numpy()
    arr = arr[arr != model.pad_id]
    if arr.size < 2:
        raise ValueError("the document has no token after [CLS]: nothing to explain")
    return arr.astype(np.int64)


def check_finite_weights(model: AttentionClassifier, ids=None) -> None:
    """A ``ValueError`` naming the weight that holds NaN or infinity: every closed form would
    otherwise return NaN, or fail later for a misleading reason. The projection matrices are
    checked whole, the word embeddings on the rows ``ids`` (and [CLS], UNK) only: the full
    embedding table is large and its other rows play no part."""
    def bad(t: torch.Tensor) -> str:
        return "NaN" if bool(torch.isnan(t).any()) else "infinite values"

    with torch.no_grad():
        for name, p in model.named_parameters():
            if name == "W_e" and ids is not None:
                rows = torch.as_tensor(np.unique(np.concatenate(
                    [np.asarray(ids, dtype=np.int64), [model.cls_id, model.unk_id]])))
                p = p[rows.to(p.device)]
                name = "W_e (the rows of this document's words)"
            if not bool(torch.isfinite(p).all()):
                raise ValueError(f"the model's weight {name} holds {bad(p)}: LIME's closed "
                                 "forms (and the model's output) are undefined")


@dataclass(frozen=True, eq=False)
class Tables:
    """The closed forms' (heads first) view of :class:`attnxai.model.network.DocumentTables` for one
    document (float64, K heads, T tokens with [CLS] first, L positions).

    A token with id ``x`` at position ``pos`` has attention score ``a[x] + b(pos)`` and value
    score ``c[x] + r(pos)`` (logit ``target``): ``a_tok``, ``c_tok`` (K, T) for the document's
    tokens, ``a_unk``, ``c_unk`` (K,) for UNK, ``b``, ``r`` (K, L) for positions 0..L-1.
    """

    ids: np.ndarray
    a_tok: np.ndarray
    c_tok: np.ndarray
    a_unk: np.ndarray
    c_unk: np.ndarray
    b: np.ndarray
    r: np.ndarray
    n_heads: int
    target: int
    padding: str
    max_len: int
    projections: Projections = field(repr=False)

    @property
    def T(self) -> int:
        return self.ids.size

    def pos_scores(self, pos) -> tuple[np.ndarray, np.ndarray]:
        """``b`` and ``r`` at real-valued positions ``pos``: (K, len(pos)) each."""
        b, r = self.projections.at_positions(pos)
        return b.T, r[:, :, self.target].T


def tables(model: AttentionClassifier, ids, target: int = 1) -> Tables:
    """The :class:`Tables` of ``model`` for the document ``ids`` (positions
    0..max(max_len, T+2)-1). Refuses weights holding NaN or infinity."""
    arr = as_ids(model, ids)
    target = validate.target(target, model.n_classes)
    check_finite_weights(model, arr)
    proj = Projections.of(model)
    doc = proj.document(arr, target)
    L = max(model.max_len, arr.size + 2)
    return Tables(ids=arr, a_tok=np.ascontiguousarray(doc.word_score.T),
                  c_tok=np.ascontiguousarray(doc.word_value.T), a_unk=doc.unk_score,
                  c_unk=doc.unk_value, b=np.ascontiguousarray(doc.pos_score[:L].T),
                  r=np.ascontiguousarray(doc.pos_value[:L].T), n_heads=proj.n_heads,
                  target=target, padding=model.padding, max_len=model.max_len, projections=proj)


def document_features(words: Sequence[str], bow: bool) -> list[np.ndarray]:
    """lime's features of a document as arrays of 1-based token positions
    (:func:`attnxai.fastlime.lime_features`, the one grouping)."""
    return lime_features(words, bow)[1]


def _features(arr: np.ndarray, bow: bool, features) -> list[np.ndarray]:
    T = arr.size
    if features is None:
        return document_features([str(x) for x in arr[1:]], bow)
    feats = [np.atleast_1d(np.asarray(f, dtype=int)) for f in features]
    flat = np.concatenate(feats) if feats else np.array([], dtype=int)
    if not feats or flat.size != T - 1 or set(flat.tolist()) != set(range(1, T)):
        raise ValueError(f"features must partition the token positions 1..{T - 1} "
                         "(each position in exactly one feature)")
    return feats


def text_inputs(pre: Pretrained, text: str, bow: bool = True) -> tuple[np.ndarray,
                                                                      list[np.ndarray]]:
    """``(ids, features)`` for a text in :func:`attnxai.normalize_for_lime` form: the model's ids
    (``[CLS]`` first) and lime's features (grouped by word string, as lime groups them, even when
    distinct words share an id such as UNK)."""
    validate.text(text)
    if not is_normalized(text):
        raise ValueError("the closed forms need the text in normalize_for_lime form (lowercase "
                         "[0-9a-z] tokens, single spaces), where lime's words are the model's "
                         "tokens: pass attnxai.normalize_for_lime(text)")
    words = text.split()
    # every word unknown: the model reads only UNK tokens, and every coefficient would be that
    # of the UNK count (equal values); refused as fastlime refuses it
    pre.vocab.check_known(words, text)
    ids = np.asarray(pre.vocab.encode(text, pre.model.max_len))
    if ids.size != len(words) + 1:
        raise ValueError("text is not in normalize_for_lime form (its words and the model's tokens "
                         "differ, or it is longer than the model accepts): normalise it first")
    return ids, document_features(words, bow)


def resolve(model, ids, bow: bool, features) -> tuple[AttentionClassifier, np.ndarray,
                                                     list[np.ndarray]]:
    """``(model, ids, features)`` from what :func:`attnxai.fastlime.explain_instance` takes: a
    :class:`~attnxai.model.textmodel.Pretrained` and a text (features = lime's words, so coefficients
    align with ``fastlime.explain_instance(pre, text).words``), or the model and the document's ids
    (features = the distinct ids, or ``features``)."""
    if isinstance(ids, str):
        if not isinstance(model, Pretrained):
            raise TypeError("with a text, pass the Pretrained (model and vocabulary), not "
                            f"{type(model).__name__}")
        if features is not None:
            raise ValueError("give either a text (features are lime's words) or ids and features")
        arr, feats = text_inputs(model, ids, validate.bow(bow))
        return model.model, arr, feats
    if isinstance(model, Pretrained):
        model = model.model
    arr = as_ids(model, ids)
    return model, arr, _features(arr, validate.bow(bow), features)


def incidence(feats: list[np.ndarray], T: int) -> np.ndarray:
    """(d, T) 0/1 matrix: row j marks the positions of feature j."""
    A = np.zeros((len(feats), T))
    for j, f in enumerate(feats):
        A[j, f] = 1.0
    return A


def feature_owner(feats: list[np.ndarray], T: int) -> np.ndarray:
    """The feature of each token 1..T-1 (int64; a partition's features, as :func:`resolve` gives
    them). One fancy-index assignment, not a Python loop over features: the closed forms call it
    for every document, and a loop cost a quarter of a millisecond on a 255-word review."""
    owner = np.zeros(T - 1, dtype=np.int64)
    if feats:
        sizes = [len(f) for f in feats]
        owner[np.concatenate(feats).astype(np.int64) - 1] = np.repeat(
            np.arange(len(feats), dtype=np.int64), sizes)
    return owner


def token_layout(feats: list[np.ndarray], T: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per token 1..T-1: its feature, ``o_t`` (earlier occurrences of its feature) and ``n_t``
    (earlier tokens of other features)."""
    owner = feature_owner(feats, T)
    o = np.zeros(T - 1, dtype=np.int64)
    seen = np.zeros(len(feats), dtype=np.int64)
    for t in range(T - 1):
        o[t] = seen[owner[t]]
        seen[owner[t]] += 1
    return owner, o, np.arange(T - 1) - o
