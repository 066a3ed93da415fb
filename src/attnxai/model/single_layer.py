"""The single-layer multi-head attention classifier of the paper's Section 2.

Notation (shapes with batch ``B``, length ``T``, heads ``K``)::

    e_t     = W_e[x_t] + p_t                          (B, T, d_embed)
    q_1     = W_q e_1          (the [CLS] query only) (B, K, d_attn)
    k_t     = W_k e_t,  v_t = W_v e_t                 (B, K, T, d_attn), (B, K, T, d_value)
    alpha_t = softmax_t(q_1 . k_t / sqrt(d_attn))     (B, K, T)
    v~      = sum_t alpha_t v_t                       (B, K, d_value)
    f(x)    = (1/K) sum_i W_l^(i) v~^(i)              (B, n_classes)   raw logits, no softmax

No biases anywhere. Positions are 0-based: ``[CLS]`` sits at position 0 and gets ``p_0``.

``skip=True`` (off by default; the skip-connection ablation of the part 'Beyond one layer') adds
a residual connection around the attention layer, read out linearly at ``[CLS]``: with a read-out ``R``
(C x d_embed) of the [CLS] stream ``e_1 + sum_i W_o^(i) v~^(i)`` and ``W_l^(i) = K R W_o^(i)``,
the logits are ``f(x) = (1/K) sum_i W_l^(i) v~^(i) + W_s e_1`` with ``W_s = R`` (C x d_embed,
initialised U(-0.1, 0.1) like the other matrices, drawn after them so that the other weights of a
seed are those of the model without it). ``e_1 = W_e[CLS] + p_0`` is the same for every document,
so the skip term is a learned, document-independent offset of the logits: for given weights,
every attention weight and every word's gradient are those of the model without it.

Padding, ids and embeddings are the common half of every classifier
(:class:`attnxai.model.interface.ClassifierBase`): ``padding="mask"`` (default) gives padded positions
zero attention, ``padding="unk"`` fills every review with ``UNK`` up to ``max_len`` (the authors'
behaviour). In both modes the logits of a review do not depend on its batch.

Only the ``[CLS]`` row of the attention matrix is ever computed. The plain forward never forms
``k`` and ``v`` either: ``q_1 . W_k e_t = (W_k^T q_1) . e_t`` and ``sum_t alpha_t W_v e_t =
W_v sum_t alpha_t e_t``, which is ~100x cheaper; ``return_internals=True`` forms them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

import torch
from torch import Tensor, nn

from .config import AttentionConfig
from .interface import ClassifierBase, sinusoid

__all__ = ["AttentionClassifier", "AttentionConfig", "Internals"]


@dataclass
class Internals:
    """Everything the forward pass computes, named after the paper's symbols.

    ``mask`` is True on real tokens, False on padding (always all-True with ``padding="unk"``).
    ``token_scores[b, i, t] = W_l^(i) v_t^(i)`` (all classes): (B, K, T, n_classes);
    ``head_scores[b, i] = W_l^(i) v~^(i) = sum_t alpha_t token_scores`` (the theorems' ``s~``);
    ``head_logits`` is what ``model(ids, per_head=True)`` returns, the head's score plus the skip
    term ``W_s e_1`` when the model has one (so that their mean over heads is ``logits``).
    """

    ids: Tensor          # (B, T) after the model's own padding
    mask: Tensor         # (B, T) bool
    e: Tensor            # (B, T, d_embed)
    q1: Tensor           # (B, K, d_attn)
    k: Tensor            # (B, K, T, d_attn)
    v: Tensor            # (B, K, T, d_value)
    scores: Tensor       # (B, K, T)   q_1 . k_t / sqrt(d_attn), -inf on padding
    alpha: Tensor        # (B, K, T)
    v_tilde: Tensor      # (B, K, d_value)
    token_scores: Tensor  # (B, K, T, n_classes)
    head_scores: Tensor  # (B, K, n_classes)  W_l^(i) v~^(i)
    head_logits: Tensor  # (B, K, n_classes)  head_scores (+ W_s e_1 with skip): per_head=True
    logits: Tensor       # (B, n_classes)

    def as_dict(self) -> dict[str, Tensor]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


class AttentionClassifier(ClassifierBase):
    """Section 2 classifier. Weights are stacked per head and named after the paper:
    ``W_e`` (vocab, d_embed), ``W_q``/``W_k`` (K, d_attn, d_embed), ``W_v`` (K, d_value, d_embed),
    ``W_l`` (K, n_classes, d_value). ``forward(ids)`` takes (B, T) integer ids, T <= max_len,
    ``ids[:, 0]`` being ``[CLS]``, and returns logits (B, n_classes).
    """

    n_layers = 1
    config_class = AttentionConfig
    config: AttentionConfig

    def __init__(self, config: AttentionConfig):
        """The model of ``config`` (:class:`~attnxai.model.config.AttentionConfig`, checked when
        built): ``AttentionClassifier(AttentionConfig(vocab_size, d_embed=8, n_heads=2))``."""
        super().__init__(config)
        skip, init_range = config.skip, config.init_range
        d_embed, d_attn, d_value = config.d_embed, config.d_attn, config.d_value
        n_heads, n_classes = config.n_heads, config.n_classes
        self.skip = skip
        self.d_attn, self.d_value, self.n_heads = d_attn, d_value, n_heads
        K = n_heads
        # U(-0.1, 0.1) for the attention and output weights, as the authors.
        self.W_q = nn.Parameter(torch.empty(K, d_attn, d_embed).uniform_(-init_range, init_range))
        self.W_k = nn.Parameter(torch.empty(K, d_attn, d_embed).uniform_(-init_range, init_range))
        self.W_v = nn.Parameter(torch.empty(K, d_value, d_embed).uniform_(-init_range, init_range))
        self.W_l = nn.Parameter(torch.empty(K, n_classes, d_value).uniform_(-init_range, init_range))
        if skip:
            self.W_s = nn.Parameter(torch.empty(n_classes, d_embed).uniform_(-init_range,
                                                                             init_range))

    def skip_term(self, e: Tensor) -> Tensor | None:
        """``W_s e_1`` (B, n_classes) for a model with the skip connection, else None."""
        if not self.skip:
            return None
        return e[:, 0] @ self.W_s.T

    # ------------------------------------------------------------------ forward
    def forward(self, ids: Tensor, return_internals: bool = False, *,
                per_head: bool = False) -> Tensor | Internals:
        """Logits (B, n_classes) (``per_head=True``: (B, K, n_classes)); with
        ``return_internals=True`` an :class:`Internals`."""
        if not return_internals:
            return super().forward(ids, per_head=per_head)
        ids = self.check_ids(ids)
        return self.internals(self.embed(ids), self.pad_mask(ids), ids=ids)

    def forward_embeddings(self, e: Tensor, mask: Tensor | None = None, *,
                           per_head: bool = False) -> Tensor:
        """Logits (B, n_classes) from the embeddings ``e`` (B, T, d_embed), position code included
        (e.g. to differentiate with respect to ``e_t``); ``mask`` (B, T) bool, True = real token.

        Never forms ``k`` or ``v``: ``q_1 . W_k e_t = (W_k^T q_1) . e_t`` and ``sum_t alpha_t W_v e_t
        = W_v sum_t alpha_t e_t``, ~100x cheaper than the textbook order."""
        mask = self.check_embeddings(e, mask)
        alpha = self._alpha(e, mask)                                   # (B, K, T)
        e_bar = torch.einsum("bkt,btd->bkd", alpha, e)
        v_tilde = torch.einsum("kvd,bkd->bkv", self.W_v, e_bar)
        head_logits = torch.einsum("bkv,kcv->bkc", v_tilde, self.W_l)
        if self.skip:        # every head carries the skip term: their mean is still the logit
            head_logits = head_logits + self.skip_term(e)[:, None, :]
        return head_logits if per_head else head_logits.mean(dim=1)

    def forward_rows(self, rows: Tensor, index: Tensor, mask: Tensor, *,
                     per_head: bool = False) -> Tensor:
        """Logits (B, n_classes) from the embedding rows a batch uses (the training path of the
        lazy optimiser; the contract is :meth:`ClassifierBase.forward_rows`): ``rows`` (U,
        d_embed), ``index`` (B, T) with ``e_t = rows[index[:, t]] + p_t``, ``mask`` (B, T). The
        same function as :meth:`forward_embeddings` (tested in float64, logits and gradients),
        computed in another order.

        Every document starts with ``[CLS]``, so ``e_1 = W_e[CLS] + p_0``, ``q_1`` and
        ``u^(i) = W_k^(i)T q_1^(i) / sqrt(d_attn)`` are the same for the whole batch. A token's
        score under head ``i`` is ``u^(i) . e_t`` and its contribution to the head's logits
        ``W_l^(i) W_v^(i) e_t`` (so that ``W_l^(i) v~^(i) = sum_t alpha_t W_l^(i) W_v^(i) e_t``):
        both are linear in ``e_t``, so they are computed once per distinct row and once per
        position, ``(U + T) d_embed K (1 + n_classes)`` multiply-adds, and gathered per token;
        the (B, T, d_embed) embeddings are never formed. ``index[:, 0]`` must be one row (the
        ``[CLS]`` row; ``ValueError`` otherwise)."""
        first = index[:, 0]
        if bool((first != first[0]).any()):
            raise ValueError("forward_rows needs every document to start with the same row "
                             "([CLS]): the query is computed once for the batch")
        B, T = index.shape
        K, C = self.n_heads, self.n_classes
        P = self.positions(T)
        e1 = rows[first[0]] + P[0]                                          # (d_embed,)
        q1 = torch.einsum("kad,d->ka", self.W_q, e1)
        u = torch.einsum("ka,kad->kd", q1, self.W_k) / math.sqrt(self.d_attn)
        wlv = torch.einsum("kcv,kvd->kcd", self.W_l, self.W_v).reshape(K * C, -1)
        W = torch.cat([u, wlv]).T                                           # (d_embed, K + K C)
        Z = nn.functional.embedding(index, rows @ W) + P @ W                # (B, T, K + K C)
        alpha = torch.softmax(Z[..., :K].masked_fill(~mask[..., None], float("-inf")), dim=1)
        head_logits = (alpha[..., None] * Z[..., K:].reshape(B, T, K, C)).sum(dim=1)
        if self.skip:        # as forward_embeddings: every head carries the skip term
            head_logits = head_logits + e1 @ self.W_s.T
        return head_logits if per_head else head_logits.mean(dim=1)

    def internals(self, e: Tensor, mask: Tensor | None = None, *,
                  ids: Tensor | None = None) -> Internals:
        """Every intermediate tensor of the forward pass (the textbook order: k and v formed)."""
        mask = self.check_embeddings(e, mask)
        q1 = torch.einsum("bd,kad->bka", e[:, 0], self.W_q)
        k = torch.einsum("btd,kad->bkta", e, self.W_k)
        v = torch.einsum("btd,kvd->bktv", e, self.W_v)
        scores = torch.einsum("bka,bkta->bkt", q1, k) * (1.0 / math.sqrt(self.d_attn))
        scores = scores.masked_fill(~mask[:, None, :], float("-inf"))
        alpha = torch.softmax(scores, dim=-1)
        v_tilde = torch.einsum("bkt,bktv->bkv", alpha, v)
        head_scores = torch.einsum("bkv,kcv->bkc", v_tilde, self.W_l)
        token_scores = torch.einsum("bktv,kcv->bktc", v, self.W_l)
        if ids is None:
            ids = torch.full(e.shape[:2], -1, dtype=torch.long, device=e.device)
        head_logits = head_scores
        if self.skip:        # as forward_embeddings: every head carries the skip term
            head_logits = head_scores + self.skip_term(e)[:, None, :]
        return Internals(ids=ids, mask=mask, e=e, q1=q1, k=k, v=v, scores=scores, alpha=alpha,
                         v_tilde=v_tilde, token_scores=token_scores, head_scores=head_scores,
                         head_logits=head_logits, logits=head_logits.mean(dim=1))

    def _alpha(self, e: Tensor, mask: Tensor) -> Tensor:
        """The [CLS] attention (B, K, T): scores ``q_1 . k_t / sqrt(d_attn)`` computed as
        ``(W_k^T q_1) . e_t``, without forming k; ``-inf`` (zero weight) on padding."""
        q1 = torch.einsum("bd,kad->bka", e[:, 0], self.W_q)
        u = torch.einsum("bka,kad->bkd", q1, self.W_k)
        # divided, not multiplied by the scale: the trained checkpoints' exact float32 rounding
        scores = torch.einsum("bkd,btd->bkt", u, e) / math.sqrt(self.d_attn)
        return torch.softmax(scores.masked_fill(~mask[:, None, :], float("-inf")), dim=-1)

    def cls_attention(self, e: Tensor, mask: Tensor) -> Tensor:
        """The attention of ``[CLS]`` (B, 1, K, T) (one layer), from embeddings ``e`` (B, T, d) and
        the padding mask (B, T): the same computation as the forward pass."""
        mask = self.check_embeddings(e, mask)
        return self._alpha(e, mask)[:, None]


def sinusoidal_positions(max_len: int, d_embed: int, dtype: torch.dtype = torch.float32) -> Tensor:
    """The position code of positions 0..max_len-1: (max_len, d_embed) (see
    :func:`attnxai.model.interface.sinusoid`, the one definition)."""
    return sinusoid(range(max_len), d_embed, dtype)
