"""A multi-layer attention classifier: a reconstruction of the paper's 6-layer x 6-head model.

The paper reports a 6-layer, 6-head classifier on IMDb (its Appendix F, which we do not have; the
authors' repository has no multi-layer code). This module is **our reconstruction**: every choice
the paper does not state is a field of its configuration (:class:`MultiLayerConfig`), and the
book's chapter 8 ablates the ones that matter (``python -m attnxai multilayer-screens``).

Notation (``B`` documents, ``T`` tokens with ``[CLS]`` at position 0, ``K`` heads, ``L`` layers,
``D = d_embed``)::

    h^0_t = e_t = W_e[x_t] + p_t                        word embedding + sinusoid (the paper's e_t)
    block l = 1 .. L-1 (full self-attention, every token a query):
        u        = LN_l(h^{l-1})       (norm="pre"; u = h^{l-1} otherwise)
        q, k, v  = W_q u, W_k u, W_v u per head, NO biases          (d_attn, d_attn, d_value)
        A        = softmax(q k^T / sqrt(d_attn)) over the real tokens (padding masked)
        o        = W_o concat_i(A^(i) v^(i))                         heads back to D, no bias
        h^l      = h^{l-1} + o (residual=True) or o;  LN_l(h^l) after it (norm="post")
        optional feed-forward block (d_ff > 0): h^l <- h^l + W_2 GELU(W_1 LN'(h^l) + b_1) + b_2
    layer L: exactly the paper's Section 2 layer on u = LN_L(h^{L-1}) (norm="pre"; h^{L-1} else):
        alpha^(i) = softmax_t(q_1 . k_t / sqrt(d_attn))   only the [CLS] query
        f(x)      = (1/K) sum_i W_l^(i) v~^(i),  v~^(i) = sum_t alpha_t^(i) v_t^(i)   raw logits

With ``n_layers=1`` this is the single-layer model of the paper (plus a LayerNorm if
``norm="pre"``). Weights are initialised as the authors initialise theirs: ``W_e`` ~ N(0, 1),
every other matrix U(-0.1, 0.1); LayerNorms start at (1, 0). Dropout (``dropout``) acts, in
training only, on the embeddings and on each block's attention and feed-forward outputs.

Every explainer of the package works on it through :class:`~attnxai.model.interface.ClassifierBase`:
``forward_embeddings(e, mask, per_head=)`` (per head: the last layer's heads) and
``cls_attention(e, mask)`` -> (B, L, K, T), the ``[CLS]`` row of every layer. For attention
rollout :meth:`MultiLayerClassifier.attention_maps` gives every layer's full matrices.

Speed. The plain forward uses ``torch.nn.functional.scaled_dot_product_attention`` (PyTorch's
fused CPU kernel); the last layer never forms ``k`` or ``v`` (``q_1 . W_k u_t = (W_k^T q_1) . u_t``
and ``sum_t alpha_t W_v u_t = W_v sum_t alpha_t u_t``). The recording paths (``cls_attention``,
``attention_maps``) form the attention matrices explicitly. The model runs in float32, float64
(``model.double()``: for checks to rounding) and bfloat16 (``model.to(torch.bfloat16)``: ~1.7x
faster batched inference on CPUs with AVX512-BF16; chapter 8 measures what it changes). On a CPU
without native bfloat16 products (AVX2 only: :func:`bf16_products_in_float32`) torch's generic
bfloat16 kernel is several times slower than float32's, and a bfloat16 model's projections
(:func:`linear`) are then computed by the float32 kernel on the same bfloat16 inputs and rounded
back to bfloat16: float32 accumulation and a bfloat16 result, as a native bfloat16 product
gives, at about float32's speed instead of 3x slower (LIME's generic path on the
``multilayer-quick`` model, chapter 8's live run).
"""

from __future__ import annotations

import functools
import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .config import NORMS, MultiLayerConfig
from .interface import ClassifierBase

__all__ = ["MultiLayerClassifier", "MultiLayerConfig", "NORMS", "bf16_products_in_float32",
           "linear"]


@functools.cache
def bf16_products_in_float32() -> bool:
    """Whether this CPU lacks a native bfloat16 matrix product (oneDNN's, which needs AVX512 or
    AMX; ``torch.ops.mkldnn._is_mkldnn_bf16_supported``). Without one, torch multiplies bfloat16
    matrices with a generic kernel several times slower than float32's (measured on an AVX2 CPU:
    8x for a block's projections), so :func:`linear` computes a bfloat16 product with the float32
    kernel instead (module docstring, Speed)."""
    return not torch.ops.mkldnn._is_mkldnn_bf16_supported()


def linear(x: Tensor, W: Tensor) -> Tensor:
    """``F.linear(x, W)``; for bfloat16 ``x`` and ``W`` on a CPU without native bfloat16 products
    (:func:`bf16_products_in_float32`) computed as ``F.linear(x.float(), W.float())`` rounded to
    bfloat16: the same bfloat16 inputs (exact in float32), float32 accumulation, a bfloat16
    result, which is what a bfloat16 matrix product computes, up to the order of the float32
    sums."""
    if x.dtype == torch.bfloat16 and x.device.type == "cpu" and bf16_products_in_float32():
        return F.linear(x.float(), W.float()).to(torch.bfloat16)
    return F.linear(x, W)


def _uniform(shape: tuple[int, ...], r: float) -> nn.Parameter:
    return nn.Parameter(torch.empty(shape).uniform_(-r, r))


class _Attention(nn.Module):
    """Per-head bias-free projections ``W_q``, ``W_k`` (K, d_attn, D) and ``W_v`` (K, d_value, D),
    named and shaped as in :class:`~attnxai.model.single_layer.AttentionClassifier`."""

    def __init__(self, d_embed: int, n_heads: int, d_attn: int, d_value: int, r: float):
        super().__init__()
        self.K, self.d_attn, self.d_value = n_heads, d_attn, d_value
        self.W_q = _uniform((n_heads, d_attn, d_embed), r)
        self.W_k = _uniform((n_heads, d_attn, d_embed), r)
        self.W_v = _uniform((n_heads, d_value, d_embed), r)

    def qkv(self, u: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """q, k (B, K, T, d_attn) and v (B, K, T, d_value), one matrix product."""
        B, T, D = u.shape
        K, da, dv = self.K, self.d_attn, self.d_value
        W = torch.cat([self.W_q.reshape(K * da, D), self.W_k.reshape(K * da, D),
                       self.W_v.reshape(K * dv, D)])
        q, k, v = linear(u, W).split([K * da, K * da, K * dv], dim=-1)
        return (q.view(B, T, K, da).transpose(1, 2), k.view(B, T, K, da).transpose(1, 2),
                v.view(B, T, K, dv).transpose(1, 2))


class Block(nn.Module):
    """One full self-attention block (module docstring): attention, ``W_o`` (D, K * d_value),
    optional residual, LayerNorm (pre/post) and feed-forward block."""

    def __init__(self, d_embed: int, n_heads: int, d_attn: int, d_value: int, *, residual: bool,
                 norm: str, d_ff: int, dropout: float, r: float):
        super().__init__()
        self.attn = _Attention(d_embed, n_heads, d_attn, d_value, r)
        self.W_o = _uniform((d_embed, n_heads * d_value), r)
        self.residual, self.norm = residual, norm
        self.ln = nn.LayerNorm(d_embed) if norm != "none" else None
        self.ff = None
        if d_ff > 0:
            self.ff = nn.Sequential(nn.Linear(d_embed, d_ff), nn.GELU(), nn.Linear(d_ff, d_embed))
            with torch.no_grad():
                for lin in (self.ff[0], self.ff[2]):
                    lin.weight.uniform_(-r, r)
            self.ln_ff = nn.LayerNorm(d_embed) if norm != "none" else None
        self.drop = nn.Dropout(dropout)

    def forward(self, h: Tensor, mask: Tensor, record: str | None) -> tuple[Tensor, Tensor | None]:
        """New ``h`` (B, T, D) and, with ``record`` = "cls" / "full", the [CLS] row (B, K, T) /
        every row (B, K, T, T) of the attention."""
        u = self.ln(h) if self.norm == "pre" else h
        q, k, v = self.attn.qkv(u)
        kmask = mask[:, None, None, :]
        if record is None:
            o = F.scaled_dot_product_attention(q, k, v, attn_mask=kmask)
            weights = None
        else:
            s = (q @ k.transpose(-1, -2)) / math.sqrt(self.attn.d_attn)
            a = torch.softmax(s.masked_fill(~kmask, float("-inf")), dim=-1)
            o = a @ v
            weights = a[:, :, 0] if record == "cls" else a
        B, K, T, dv = o.shape
        o = self.drop(linear(o.transpose(1, 2).reshape(B, T, K * dv), self.W_o))
        h = h + o if self.residual else o
        if self.norm == "post":
            h = self.ln(h)
        if self.ff is not None:
            if self.norm == "pre":
                f = self.drop(self.ff(self.ln_ff(h)))
                h = h + f if self.residual else f
            else:
                f = self.drop(self.ff(h))
                h = h + f if self.residual else f
                if self.norm == "post":
                    h = self.ln_ff(h)
        return h, weights


class MultiLayerClassifier(ClassifierBase):
    """``n_layers`` x ``n_heads`` attention classifier read out at ``[CLS]`` by the paper's layer
    (module docstring). ``blocks[l]`` is layer ``l + 1`` (``l < n_layers - 1``); the last layer's
    weights are ``W_q``, ``W_k``, ``W_v``, ``W_l`` (K, n_classes, d_value) on the model itself, as
    on the single-layer model.
    """

    config_class = MultiLayerConfig
    config: MultiLayerConfig

    def __init__(self, config: MultiLayerConfig):
        """The model of ``config`` (:class:`~attnxai.model.config.MultiLayerConfig`, checked when
        built): ``MultiLayerClassifier(MultiLayerConfig(vocab_size, n_layers=3, d_ff=64))``."""
        super().__init__(config)
        c = config
        d_embed, n_layers, n_heads, n_classes = c.d_embed, c.n_layers, c.n_heads, c.n_classes
        d_attn, d_value, residual, norm, d_ff = c.d_attn, c.d_value, c.residual, c.norm, c.d_ff
        dropout = c.dropout
        self.n_layers, self.n_heads = n_layers, n_heads
        self.d_attn, self.d_value = d_attn, d_value
        self.residual, self.norm, self.d_ff = residual, norm, d_ff
        r = c.init_range
        self.emb_drop = nn.Dropout(dropout)
        self.blocks = nn.ModuleList(
            Block(d_embed, n_heads, d_attn, d_value, residual=residual, norm=norm, d_ff=d_ff,
                  dropout=dropout, r=r) for _ in range(n_layers - 1))
        self.ln_last = nn.LayerNorm(d_embed) if norm == "pre" else None
        self.W_q = _uniform((n_heads, d_attn, d_embed), r)
        self.W_k = _uniform((n_heads, d_attn, d_embed), r)
        self.W_v = _uniform((n_heads, d_value, d_embed), r)
        self.W_l = _uniform((n_heads, n_classes, d_value), r)

    @property
    def residual_layers(self) -> tuple[bool, ...]:
        """Per layer, whether its output adds its input back (the last layer never does)."""
        return (self.residual,) * (self.n_layers - 1) + (False,)

    # ------------------------------------------------------------------ forward
    def _last_input(self, e: Tensor, mask: Tensor, record: str | None) -> tuple[Tensor, list]:
        h = self.emb_drop(e)
        weights = []
        for blk in self.blocks:
            h, a = blk(h, mask, record)
            if record is not None:
                weights.append(a)
        return (self.ln_last(h) if self.ln_last is not None else h), weights

    def _alpha(self, u: Tensor, mask: Tensor) -> Tensor:
        """The last layer's [CLS] attention (B, K, T) on its input ``u``, scores computed as
        ``(W_k^T q_1) . u_t`` (k never formed); 0 on padding."""
        q1 = torch.einsum("bd,kad->bka", u[:, 0], self.W_q)
        w = torch.einsum("bka,kad->bkd", q1, self.W_k)
        scores = torch.einsum("bkd,btd->bkt", w, u) / math.sqrt(self.d_attn)
        return torch.softmax(scores.masked_fill(~mask[:, None, :], float("-inf")), dim=-1)

    def _head_logits(self, u: Tensor, alpha: Tensor) -> Tensor:
        u_bar = torch.einsum("bkt,btd->bkd", alpha, u)
        v_tilde = torch.einsum("kvd,bkd->bkv", self.W_v, u_bar)
        return torch.einsum("bkv,kcv->bkc", v_tilde, self.W_l)           # (B, K, C)

    def forward_embeddings(self, e: Tensor, mask: Tensor | None = None, *,
                           per_head: bool = False) -> Tensor:
        """Logits (B, n_classes) from the embeddings ``e`` (B, T, d_embed), position code included
        (what gradients are taken with respect to); ``per_head=True``: the last layer's heads
        (B, K, n_classes), whose mean is the logit."""
        mask = self.check_embeddings(e, mask)
        u, _ = self._last_input(e, mask, None)
        heads = self._head_logits(u, self._alpha(u, mask))
        return heads if per_head else heads.mean(dim=1)

    def cls_attention(self, e: Tensor, mask: Tensor) -> Tensor:
        """The ``[CLS]`` attention of every layer and head, (B, n_layers, K, T), 0 on padding."""
        mask = self.check_embeddings(e, mask)
        u, weights = self._last_input(e, mask, "cls")
        return torch.stack([*weights, self._alpha(u, mask)], dim=1)

    def attention_maps(self, e: Tensor, mask: Tensor) -> list[Tensor]:
        """Every layer's attention: (B, K, T, T) for layers 1..L-1 (row = query) and (B, K, 1, T)
        for the last layer (only [CLS] queries there); 0 on padded keys."""
        mask = self.check_embeddings(e, mask)
        u, weights = self._last_input(e, mask, "full")
        return [*weights, self._alpha(u, mask)[:, :, None, :]]

    def extra_repr(self) -> str:
        c = self.config
        return (f"n_layers={c.n_layers}, n_heads={c.n_heads}, d_embed={c.d_embed}, "
                f"d_attn={c.d_attn}, d_value={c.d_value}, residual={c.residual}, "
                f"norm={c.norm!r}, d_ff={c.d_ff}, dropout={c.dropout}")
