"""The single-layer network as float64 projections: the one description that the fast LIME
(:mod:`attnxai.fastlime`) and the closed forms of :mod:`attnxai.theory` evaluate.

Because ``[CLS]`` sits at position 0 and no explainer ever removes it, its query ``q_1`` is fixed
for a given model, and so is the direction each head scores keys along. Per head ``i``, the
attention logit and the value score (logit ``c``) of a token with word ``x`` at position ``p``
split into a word part and a position part::

    score_i(x, p) = (W_e[x] + p_p) . U_i          U_i    = W_k^(i)T q_1^(i) / sqrt(d_attn)
    value_i(x, p) = (W_e[x] + p_p) . H_i[:, c]    H_i    = W_v^(i)T W_l^(i)T      (d_embed, C)

and the logit is ``f_c = (1/K) sum_i sum_t softmax_t(score_i) value_i[c]``. Everything here is
derived from :class:`~attnxai.model.single_layer.AttentionClassifier`'s own weights and position code
(:meth:`~attnxai.model.interface.ClassifierBase.positions`, in the model's dtype, then float64), so a
change to the model changes every consumer; ``tests/model/test_network.py`` checks these tables against
``model.forward`` to 1e-12 on small hand-built models.

Shapes: ``D = d_embed``, ``K`` heads, ``C`` classes, ``L`` positions (``max_len + 2``: deletion
arguments look one position past a full document).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

import numpy as np
import torch

from .interface import sinusoid
from .single_layer import AttentionClassifier
from ..validate import target as check_target

__all__ = ["DocumentTables", "Projections"]


def _f64(x: torch.Tensor) -> np.ndarray:
    return x.detach().to("cpu", torch.float64).numpy()


@dataclass(frozen=True, eq=False)
class Projections:
    """Document-independent float64 projections of a single-layer model (module docstring).

    ``U`` (D, K), ``H`` (D, K, C); ``positions`` (L, D) the position code as the model adds it;
    ``pos_score`` (L, K) and ``pos_value`` (L, K, C) its projections; ``cls`` (D,) the embedding of
    ``[CLS]`` at position 0, ``unk`` (D,) the UNK word vector (no position).
    """

    model: AttentionClassifier
    U: np.ndarray
    H: np.ndarray
    positions: np.ndarray
    pos_score: np.ndarray
    pos_value: np.ndarray
    cls: np.ndarray
    unk: np.ndarray

    @classmethod
    def of(cls, model: AttentionClassifier) -> "Projections":
        """The projections of ``model`` (cheap: a few small products; computed per call so that
        they always reflect the model's current weights)."""
        if not isinstance(model, AttentionClassifier):
            raise TypeError("the closed forms and the fast LIME are derived for the single-layer "
                            f"AttentionClassifier, got {type(model).__name__} (for a Pretrained, "
                            "pass pre.model; other models take lime's generic path)")
        if getattr(model, "skip", False):
            raise TypeError("the projections describe the model without the skip connection "
                            "(skip=True adds W_s e_1 to the logits): it takes lime's generic path")
        with torch.no_grad():
            P = _f64(model.positions(model.max_len + 2))
            W_q, W_k, W_v, W_l = (_f64(w) for w in (model.W_q, model.W_k, model.W_v, model.W_l))
            e_cls = _f64(model.W_e[model.cls_id]) + P[0]
            unk = _f64(model.W_e[model.unk_id])
        q1 = np.einsum("kad,d->ka", W_q, e_cls)
        U = np.einsum("ka,kad->dk", q1, W_k) / math.sqrt(model.d_attn)
        H = np.einsum("kcv,kvd->dkc", W_l, W_v)
        return cls(model=model, U=U, H=H, positions=P, pos_score=P @ U,
                   pos_value=np.einsum("ld,dkc->lkc", P, H), cls=e_cls, unk=unk)

    @property
    def n_heads(self) -> int:
        return self.U.shape[1]

    def word_vectors(self, ids) -> np.ndarray:
        """``W_e[ids]`` in float64: (T, D) (on the CPU read through numpy, a third of torch's
        indexing cost for a document; the same values: a float32 weight widens exactly)."""
        E = self.model.W_e.detach()
        if E.device.type == "cpu" and E.dtype in (torch.float32, torch.float64):
            return E.numpy()[np.asarray(ids, dtype=np.int64)].astype(np.float64, copy=False)
        idx = torch.as_tensor(np.asarray(ids, dtype=np.int64))
        with torch.no_grad():
            return _f64(self.model.W_e[idx.to(self.model.W_e.device)])

    def at_positions(self, pos) -> tuple[np.ndarray, np.ndarray]:
        """Score and value projections of the position code at real-valued positions ``pos``
        (float64 sinusoids): (n, K) and (n, K, C)."""
        P = sinusoid(pos, self.model.d_embed).numpy()
        return P @ self.U, np.einsum("nd,dkc->nkc", P, self.H)

    def document(self, ids, target: int = 1) -> "DocumentTables":
        """The per-document tables of ``ids`` (1-D, ``[CLS]`` first, no padding) for logit
        ``target``."""
        ids = np.asarray(ids, dtype=np.int64).reshape(-1)
        target = check_target(target, self.H.shape[2])
        W = self.word_vectors(ids)
        cls_score, cls_value = self.cls @ self.U, np.einsum("d,dkc->kc", self.cls, self.H)
        return DocumentTables(
            ids=ids, target=target, padding=self.model.padding, max_len=self.model.max_len,
            word_score=W @ self.U, word_value=np.einsum("td,dk->tk", W, self.H[:, :, target]),
            pos_score=self.pos_score, pos_value=self.pos_value[:, :, target],
            unk_score=self.unk @ self.U,
            unk_value=np.einsum("d,dk->k", self.unk, self.H[:, :, target]),
            cls_score=cls_score, cls_value=cls_value[:, target],
            source=self, vectors=W, cls_values=cls_value)

    def logits(self, ids, *, per_head: bool = False) -> np.ndarray:
        """The model's logits on one document (1-D ids, ``[CLS]`` first, no padding; the UNK fill
        of a ``padding="unk"`` model is added here), in float64 from these tables: (C,)
        (``per_head=True``: (K, C))."""
        ids = np.asarray(ids, dtype=np.int64).reshape(-1)
        m = self.model
        if ids.size > m.max_len or ids.size < 1:
            raise ValueError(f"a document has 1..{m.max_len} ids, got {ids.size}")
        if m.padding == "unk" and ids.size < m.max_len:
            ids = np.concatenate([ids, np.full(m.max_len - ids.size, m.unk_id)])
        T = ids.size
        e = np.concatenate([self.cls[None], self.word_vectors(ids[1:]) + self.positions[1:T]])
        s = e @ self.U                                                    # (T, K)
        v = np.einsum("td,dkc->tkc", e, self.H)                           # (T, K, C)
        alpha = np.exp(s - s.max(0))
        alpha /= alpha.sum(0)
        heads = np.einsum("tk,tkc->kc", alpha, v)
        return heads if per_head else heads.mean(0)


@dataclass(frozen=True, eq=False)
class DocumentTables:
    """The projections of one document for logit ``target`` (float64, K heads, T tokens with
    ``[CLS]`` at row 0, L positions).

    A token with word ``x_t`` at position ``p`` has attention logit ``word_score[t] +
    pos_score[p]`` and value score ``word_value[t] + pos_value[p]``; UNK at ``p``:
    ``unk_score + pos_score[p]``. Row 0 is ``[CLS]``'s word part; ``cls_score`` and ``cls_value``
    are [CLS] at position 0 (the same up to rounding, from the summed embedding).
    ``logits`` (C,) is the model's output on the whole document, every class (computed when first
    read: :meth:`Projections.logits`); :meth:`logits_given` the same from these tables when the
    target's logit is already known (the fast LIME's output on its first sample).
    """

    ids: np.ndarray
    target: int
    padding: str
    max_len: int
    word_score: np.ndarray    # (T, K)
    word_value: np.ndarray    # (T, K)
    pos_score: np.ndarray     # (L, K)
    pos_value: np.ndarray     # (L, K)
    unk_score: np.ndarray     # (K,)
    unk_value: np.ndarray     # (K,)
    cls_score: np.ndarray     # (K,)
    cls_value: np.ndarray     # (K,)
    source: Projections = field(repr=False)
    vectors: np.ndarray = field(repr=False)      # (T, D) the word vectors, [CLS] at row 0
    cls_values: np.ndarray = field(repr=False)   # (K, C) cls_value for every class

    @functools.cached_property
    def logits(self) -> np.ndarray:
        """The model's logits on the whole document (C,): :meth:`Projections.logits` of ``ids``."""
        return self.source.logits(self.ids)

    def logits_given(self, target_logit: float) -> np.ndarray:
        """The model's logits on the whole document (C,) with ``target_logit`` as the target's
        (a caller that has evaluated it, as the fast LIME has on its first sample, which is the
        document: lime's ``predict_proba`` is that sample's row) and the other classes from
        these tables: per head the softmax of ``word_score + pos_score`` ([CLS]: ``cls_score``;
        a ``padding="unk"`` model's UNK fill after the document) weighting each token's value
        for the class. Equal to :attr:`logits` to rounding (``tests/model/test_network.py``)."""
        src, T = self.source, self.T
        C = src.H.shape[2]
        out = np.empty(C)
        out[self.target] = target_logit
        others = [c for c in range(C) if c != self.target]
        if not others:
            return out
        s = np.concatenate([self.cls_score[None], self.word_score[1:] + self.pos_score[1:T]])
        Ho = np.ascontiguousarray(src.H[:, :, others])                 # (D, K, C')
        D, K = Ho.shape[:2]
        v = np.empty((T, K, len(others)))
        v[0] = self.cls_values[:, others]
        v[1:] = (self.vectors[1:] @ Ho.reshape(D, -1)).reshape(T - 1, K, -1) \
            + src.pos_value[1:T][:, :, others]
        if self.padding == "unk" and T < self.max_len:                 # the UNK fill
            L = self.max_len
            s = np.concatenate([s, self.unk_score + self.pos_score[T:L]])
            fill = (src.unk @ Ho.reshape(D, -1)).reshape(K, -1) + src.pos_value[T:L][:, :, others]
            v = np.concatenate([v, fill])
        alpha = np.exp(s - s.max(0))
        alpha /= alpha.sum(0)
        out[others] = np.einsum("tk,tkc->c", alpha, v) / K
        return out

    @property
    def n_heads(self) -> int:
        return self.word_score.shape[1]

    @property
    def T(self) -> int:
        return self.word_score.shape[0]
