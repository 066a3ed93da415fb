"""The single-layer multi-head attention classifier of the paper's Section 2.

Notation (shapes with batch ``B``, length ``T``, heads ``K``)::

    e_t     = W_e[x_t] + p_t                          (B, T, d_embed)
    q_1     = W_q e_1          (the [CLS] query only) (B, K, d_attn)
    k_t     = W_k e_t,  v_t = W_v e_t                 (B, K, T, d_attn), (B, K, T, d_value)
    alpha_t = softmax_t(q_1 . k_t / sqrt(d_attn))     (B, K, T)
    v~      = sum_t alpha_t v_t                       (B, K, d_value)
    f(x)    = (1/K) sum_i W_l^(i) v~^(i)              (B, n_classes)   raw logits, no softmax

No biases anywhere. Positions are 0-based: ``[CLS]`` sits at position 0 and gets ``p_0``.

Padding. ``padding="mask"`` (default): positions holding ``pad_id`` get score ``-inf``, hence
zero attention, so a padded review gives exactly the Section 2 formula on the unpadded review and
its logits do not depend on how much padding its batch had. ``padding="unk"``: the authors'
behaviour, every review is filled with ``UNK`` up to ``max_len`` and those tokens take part in
attention; ``forward`` does that filling itself (``pad_id`` becomes ``unk_id``), so here too the
logits do not depend on the batch.

Only the ``[CLS]`` row of the attention matrix is ever computed. The plain forward never forms
``k`` and ``v`` either: ``q_1 . W_k e_t = (W_k^T q_1) . e_t`` and ``sum_t alpha_t W_v e_t =
W_v sum_t alpha_t e_t``, which is ~100x cheaper; ``return_internals=True`` forms them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

import torch
from torch import Tensor, nn

PADDING_MODES = ("mask", "unk")


def sinusoidal_positions(max_len: int, d_embed: int, dtype: torch.dtype = torch.float32) -> Tensor:
    """``p[t, 2i] = sin(t / 10000^(2i/d))``, ``p[t, 2i+1] = cos(t / 10000^(2i/d))``; (max_len, d)."""
    t = torch.arange(max_len, dtype=torch.float64)[:, None]
    two_i = torch.arange(0, d_embed, 2, dtype=torch.float64)[None, :]
    angle = t / torch.pow(10000.0, two_i / d_embed)
    p = torch.zeros(max_len, d_embed, dtype=torch.float64)
    p[:, 0::2] = torch.sin(angle)
    p[:, 1::2] = torch.cos(angle[:, : d_embed // 2])
    return p.to(dtype)


@dataclass
class Internals:
    """Everything the forward pass computes, named after the paper's symbols.

    ``mask`` is True on real tokens, False on padding (always all-True with ``padding="unk"``).
    ``token_scores[b, i, t] = W_l^(i) v_t^(i)`` (all classes): (B, K, T, n_classes).
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
    head_logits: Tensor  # (B, K, n_classes)  W_l^(i) v~^(i)
    logits: Tensor       # (B, n_classes)

    def as_dict(self) -> dict[str, Tensor]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


class AttentionClassifier(nn.Module):
    """Section 2 classifier. Weights are stacked per head and named after the paper:
    ``W_e`` (vocab, d_embed), ``W_q``/``W_k`` (K, d_attn, d_embed), ``W_v`` (K, d_value, d_embed),
    ``W_l`` (K, n_classes, d_value). ``forward(ids)`` takes (B, T) integer ids, T <= max_len,
    ``ids[:, 0]`` being ``[CLS]``, and returns logits (B, n_classes).
    """

    def __init__(self, vocab_size: int, d_embed: int = 128, d_attn: int = 64, d_value: int = 64,
                 n_heads: int = 6, max_len: int = 256, n_classes: int = 2, *,
                 padding: str = "mask", pad_id: int = 0, unk_id: int = 2, init_range: float = 0.1):
        super().__init__()
        if padding not in PADDING_MODES:
            raise ValueError(f"padding must be one of {PADDING_MODES}, got {padding!r}")
        self.config = dict(vocab_size=vocab_size, d_embed=d_embed, d_attn=d_attn, d_value=d_value,
                           n_heads=n_heads, max_len=max_len, n_classes=n_classes, padding=padding,
                           pad_id=pad_id, unk_id=unk_id)
        self.vocab_size, self.d_embed, self.d_attn, self.d_value = vocab_size, d_embed, d_attn, d_value
        self.n_heads, self.max_len, self.n_classes = n_heads, max_len, n_classes
        self.padding, self.pad_id, self.unk_id = padding, pad_id, unk_id
        K = n_heads
        # nn.Embedding's default N(0, 1) for words; U(-0.1, 0.1) for the rest, as the authors.
        self.W_e = nn.Parameter(torch.randn(vocab_size, d_embed))
        self.W_q = nn.Parameter(torch.empty(K, d_attn, d_embed).uniform_(-init_range, init_range))
        self.W_k = nn.Parameter(torch.empty(K, d_attn, d_embed).uniform_(-init_range, init_range))
        self.W_v = nn.Parameter(torch.empty(K, d_value, d_embed).uniform_(-init_range, init_range))
        self.W_l = nn.Parameter(torch.empty(K, n_classes, d_value).uniform_(-init_range, init_range))
        self.register_buffer("P", sinusoidal_positions(max_len, d_embed), persistent=False)

    # ------------------------------------------------------------------ input checks
    def check_ids(self, ids: Tensor) -> Tensor:
        """Validate a (B, T) id tensor, apply the padding mode; returns the ids to use."""
        if not isinstance(ids, Tensor):
            raise TypeError(f"ids must be a torch.Tensor of token ids, got {type(ids).__name__}")
        if ids.dtype not in (torch.int64, torch.int32, torch.int16, torch.uint8):
            raise TypeError(f"ids must be an integer tensor (torch.long), got {ids.dtype}")
        if ids.dim() != 2:
            raise ValueError(f"ids must have shape (batch, length), got {tuple(ids.shape)}")
        B, T = ids.shape
        if B == 0 or T == 0:
            raise ValueError(f"empty input: ids has shape {tuple(ids.shape)}")
        if T > self.max_len:
            raise ValueError(f"documents of {T} tokens are longer than the model accepts "
                             f"({self.max_len}, [CLS] included): truncate them first")
        lo, hi = int(ids.min()), int(ids.max())
        if lo < 0 or hi >= self.vocab_size:
            raise ValueError(f"token ids must lie in [0, {self.vocab_size}), got min {lo}, max {hi}")
        ids = ids.long()
        if self.padding == "unk":
            ids = torch.where(ids == self.pad_id, torch.full_like(ids, self.unk_id), ids)
            if T < self.max_len:
                fill = torch.full((B, self.max_len - T), self.unk_id, dtype=ids.dtype, device=ids.device)
                ids = torch.cat([ids, fill], dim=1)
        return ids

    def ids_and_mask(self, ids: Tensor) -> tuple[Tensor, Tensor]:
        """:meth:`check_ids` plus the padding mask; refuses documents made only of padding
        (explainers have nothing to explain there)."""
        ids = self.check_ids(ids)
        mask = self.pad_mask(ids)
        empty = ~mask.any(dim=1)
        if bool(empty.any()):
            raise ValueError(f"documents {empty.nonzero().flatten().tolist()} hold only padding "
                             f"(pad_id={self.pad_id}): nothing to explain")
        return ids, mask

    def pad_mask(self, ids: Tensor) -> Tensor:
        """True on tokens that take part in attention: (B, T) bool."""
        if self.padding == "unk":
            return torch.ones_like(ids, dtype=torch.bool)
        return ids != self.pad_id

    # ------------------------------------------------------------------ forward
    def embed(self, ids: Tensor) -> Tensor:
        """``e = W_e[ids] + p`` for already checked ids: (B, T, d_embed)."""
        # F.embedding, not W_e[ids]: its CPU backward is deterministic (index_put is not).
        return nn.functional.embedding(ids, self.W_e) + self.P[: ids.shape[1]].to(self.W_e.dtype)

    def forward(self, ids: Tensor, return_internals: bool = False) -> Tensor | Internals:
        """Logits (B, n_classes); with ``return_internals=True`` an :class:`Internals`."""
        ids = self.check_ids(ids)
        e = self.embed(ids)
        return self.forward_embeddings(e, self.pad_mask(ids), return_internals=return_internals, ids=ids)

    def forward_embeddings(self, e: Tensor, mask: Tensor | None = None, *,
                           return_internals: bool = False, ids: Tensor | None = None) -> Tensor | Internals:
        """The network from the embeddings ``e`` (B, T, d_embed) on (position encoding included),
        e.g. to differentiate with respect to ``e_t``. ``mask`` (B, T) bool, True = real token."""
        if e.dtype != self.W_q.dtype:
            raise TypeError(f"embeddings are {e.dtype} but the model is {self.W_q.dtype}")
        if mask is None:
            mask = torch.ones(e.shape[:2], dtype=torch.bool, device=e.device)
        scale = 1.0 / math.sqrt(self.d_attn)
        q1 = torch.einsum("bd,kad->bka", e[:, 0], self.W_q)
        if return_internals:
            k = torch.einsum("btd,kad->bkta", e, self.W_k)
            v = torch.einsum("btd,kvd->bktv", e, self.W_v)
            scores = torch.einsum("bka,bkta->bkt", q1, k) * scale
        else:
            scores = self._fast_scores(e, q1)
        scores = scores.masked_fill(~mask[:, None, :], float("-inf"))
        alpha = torch.softmax(scores, dim=-1)
        if return_internals:
            v_tilde = torch.einsum("bkt,bktv->bkv", alpha, v)
        else:
            e_bar = torch.einsum("bkt,btd->bkd", alpha, e)
            v_tilde = torch.einsum("kvd,bkd->bkv", self.W_v, e_bar)
        head_logits = torch.einsum("bkv,kcv->bkc", v_tilde, self.W_l)
        logits = head_logits.mean(dim=1)
        if not return_internals:
            return logits
        token_scores = torch.einsum("bktv,kcv->bktc", v, self.W_l)
        if ids is None:
            ids = torch.full(e.shape[:2], -1, dtype=torch.long, device=e.device)
        return Internals(ids=ids, mask=mask, e=e, q1=q1, k=k, v=v, scores=scores, alpha=alpha,
                         v_tilde=v_tilde, token_scores=token_scores, head_logits=head_logits,
                         logits=logits)

    def _fast_scores(self, e: Tensor, q1: Tensor) -> Tensor:
        """``q_1 . k_t / sqrt(d_attn)`` as ``(W_k^T q_1) . e_t``, without forming k: (B, K, T)."""
        u = torch.einsum("bka,kad->bkd", q1, self.W_k)
        return torch.einsum("bkd,btd->bkt", u, e) / math.sqrt(self.d_attn)

    def cls_attention(self, e: Tensor, mask: Tensor) -> Tensor:
        """The attention of ``[CLS]``, alpha (B, K, T), from embeddings ``e`` (B, T, d_embed) and
        the padding mask (B, T), without forming keys or values."""
        q1 = torch.einsum("bd,kad->bka", e[:, 0], self.W_q)
        scores = self._fast_scores(e, q1).masked_fill(~mask[:, None, :], float("-inf"))
        return torch.softmax(scores, dim=-1)

    def collate(self, seqs: list[list[int]]) -> Tensor:
        """Pad a list of id lists into a (B, T) tensor: ``pad_id`` up to the longest (mask mode)
        or ``unk_id`` up to ``max_len`` (unk mode)."""
        if not seqs:
            raise ValueError("empty batch: no documents to collate")
        fill = self.pad_id if self.padding == "mask" else self.unk_id
        T = max(len(s) for s in seqs) if self.padding == "mask" else self.max_len
        if T > self.max_len:
            raise ValueError(f"a document has {T} tokens, more than the model accepts ({self.max_len})")
        out = torch.full((len(seqs), T), fill, dtype=torch.long)
        for i, s in enumerate(seqs):
            out[i, : len(s)] = torch.as_tensor(s, dtype=torch.long)
        return out
