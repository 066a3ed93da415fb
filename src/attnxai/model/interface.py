"""The model interface every explainer works through, and the base class that implements its common
half (ids, padding, embeddings).

A classifier the package can explain is a :class:`ClassifierBase` subclass that implements two
methods; attention, gradients, G x I, LIME and the faithfulness metrics then work on it without
new code::

    forward_embeddings(e, mask, *, per_head=False)
        e     (B, T, d_embed)  token embeddings, position code included (what gradients are taken
                               with respect to: the paper's e_t)
        mask  (B, T) bool      True on tokens that take part in attention
        ->    (B, n_classes)   raw logits; with per_head=True (B, n_heads, n_classes), the output
                               of each head of the last layer (their mean is the logit)
    cls_attention(e, mask)
        ->    (B, n_layers, n_heads, T)  the [CLS] row of every layer's attention (0 on padding)

Shapes: ``B`` documents, ``T`` tokens (``[CLS]`` at position 0 and nowhere else), ``L`` layers,
``K`` heads per layer, ``C`` classes. The base class provides the rest: :meth:`check_ids` (the one
validator of token ids), :meth:`collate` (padding), :meth:`pad_mask`, :meth:`embed`
(``W_e[x_t] + p_t``) and ``forward(ids)``; :func:`predict` runs any of them on id lists in
batches.

Padding. ``padding="mask"``: positions holding ``pad_id`` get no attention (the network equals the
paper's formula on the unpadded document and logits do not depend on the batch). ``padding="unk"``:
the authors' behaviour, every document filled with ``UNK`` up to ``max_len`` (those tokens attend
and are attended to).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from ..validate import integer, positive_int
from .config import PADDING_MODES, ModelConfig

__all__ = ["ClassifierBase", "PADDING_MODES", "iter_batches", "predict", "sinusoid"]


def sinusoid(positions: Any, d_embed: int, dtype: torch.dtype = torch.float64) -> Tensor:
    """The sinusoidal position code at (possibly real-valued) positions: (n, d_embed).

    ``p[t, 2i] = sin(t / 10000^(2i/d))``, ``p[t, 2i+1] = cos(t / 10000^(2i/d))``, computed in float64
    and rounded once to ``dtype``: the one definition of the position code in the package.
    """
    t = torch.as_tensor(np.asarray(positions, dtype=np.float64)).reshape(-1, 1)
    two_i = torch.arange(0, d_embed, 2, dtype=torch.float64)[None, :]
    angle = t / torch.pow(10000.0, two_i / d_embed)
    p = torch.zeros(t.shape[0], d_embed, dtype=torch.float64)
    p[:, 0::2] = torch.sin(angle)
    p[:, 1::2] = torch.cos(angle[:, : d_embed // 2])
    return p.to(dtype)


class ClassifierBase(nn.Module):
    """Common half of every explainable classifier (see the module docstring).

    A subclass names its configuration class (``config_class``, a
    :class:`~attnxai.model.config.ModelConfig`: the architecture, checked when built), calls
    ``super().__init__(config)``, creates its own weights from it, and implements
    :meth:`forward_embeddings` and :meth:`cls_attention`. ``model.config`` is that object.
    """

    #: The frozen dataclass a subclass is built from (``Model(config)``).
    config_class: type[ModelConfig] = ModelConfig
    #: (B, L, K, T) attention and per-head logits have this many layers (set by subclasses) and
    #: heads (the configuration's).
    n_layers: int = 1
    n_heads: int = 1

    def __init__(self, config: ModelConfig):
        super().__init__()
        want = self.config_class
        if not isinstance(config, want):
            raise TypeError(f"{type(self).__name__} is built from one {want.__name__} "
                            f"({type(self).__name__}({want.__name__}(vocab_size, ...))), got "
                            f"{type(config).__name__}")
        self.config = config
        self.vocab_size, self.d_embed, self.max_len, self.n_classes = (
            config.vocab_size, config.d_embed, config.max_len, config.n_classes)
        self.n_heads = config.n_heads
        self.padding, self.pad_id, self.cls_id, self.unk_id = (config.padding, config.pad_id,
                                                               config.cls_id, config.unk_id)
        # nn.Embedding's default N(0, 1) for words, as the authors (never padding_idx: pad is masked).
        self.W_e = nn.Parameter(torch.randn(config.vocab_size, config.d_embed))
        self._positions: dict[tuple[torch.dtype, torch.device], Tensor] = {}

    # ------------------------------------------------------------------ to implement
    def forward_embeddings(self, e: Tensor, mask: Tensor | None = None, *,
                           per_head: bool = False) -> Tensor:
        raise NotImplementedError

    def cls_attention(self, e: Tensor, mask: Tensor) -> Tensor:
        raise NotImplementedError

    # ------------------------------------------------------------------ ids
    def check_ids(self, ids: Any) -> Tensor:
        """Validate a (B, T) id tensor and apply the padding mode; returns the ids to use.

        Refuses, with the reason: a non-tensor, a non-integer dtype, a shape other than (B, T), an
        empty batch, more than ``max_len`` tokens, ids outside the vocabulary, a document that does
        not start with ``[CLS]`` or holds ``[CLS]`` elsewhere (its first word would silently become
        the query), and padding before a real token.
        """
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
        ids = ids.long()
        lo, hi = int(ids.min()), int(ids.max())
        if lo < 0 or hi >= self.vocab_size:
            raise ValueError(f"token ids must lie in [0, {self.vocab_size}), got min {lo}, max {hi}")
        empty = (ids == self.pad_id).all(dim=1)
        if bool(empty.any()):
            raise ValueError(f"documents {empty.nonzero().flatten().tolist()[:5]} hold only "
                             f"padding (pad_id={self.pad_id}): nothing to explain")
        bad = (ids[:, 0] != self.cls_id).nonzero().flatten().tolist()
        if bad:
            raise ValueError(f"documents {bad[:5]} do not start with [CLS] (id {self.cls_id}): the "
                             "model reads the query from position 0 (use Pretrained.encode)")
        if T > 1 and bool((ids[:, 1:] == self.cls_id).any()):
            raise ValueError(f"[CLS] (id {self.cls_id}) appears after position 0")
        pad = ids == self.pad_id
        if T > 1 and bool((pad[:, :-1] & ~pad[:, 1:]).any()):
            raise ValueError(f"padding (id {self.pad_id}) appears before a real token: padding "
                             "goes at the end of a document")
        if self.padding == "unk":
            ids = torch.where(pad, torch.full_like(ids, self.unk_id), ids)
            if T < self.max_len:
                fill = torch.full((B, self.max_len - T), self.unk_id, dtype=ids.dtype,
                                  device=ids.device)
                ids = torch.cat([ids, fill], dim=1)
        return ids

    def pad_mask(self, ids: Tensor) -> Tensor:
        """True on tokens that take part in attention: (B, T) bool (for checked ids)."""
        if self.padding == "unk":
            return torch.ones_like(ids, dtype=torch.bool)
        return ids != self.pad_id

    def ids_and_mask(self, ids: Any) -> tuple[Tensor, Tensor]:
        """:meth:`check_ids` plus the padding mask; refuses documents made only of padding
        (explainers have nothing to explain there)."""
        ids = self.check_ids(ids)
        mask = self.pad_mask(ids)
        empty = ~mask.any(dim=1)
        if bool(empty.any()):
            raise ValueError(f"documents {empty.nonzero().flatten().tolist()} hold only padding "
                             f"(pad_id={self.pad_id}): nothing to explain")
        return ids, mask

    def collate(self, seqs: Sequence[Sequence[int]]) -> Tensor:
        """Pad id lists (each ``[CLS]`` + tokens) into a (B, T) tensor: ``pad_id`` up to the
        longest (mask mode) or ``unk_id`` up to ``max_len`` (unk mode)."""
        if len(seqs) == 0:
            raise ValueError("empty batch: no documents to collate")
        fill = self.pad_id if self.padding == "mask" else self.unk_id
        longest = max(len(s) for s in seqs)
        if longest > self.max_len:
            raise ValueError(f"a document has {longest} tokens, more than the model accepts "
                             f"({self.max_len})")
        if min(len(s) for s in seqs) == 0:
            raise ValueError("empty document: every id list starts with [CLS]")
        T = longest if self.padding == "mask" else self.max_len
        out = torch.full((len(seqs), T), fill, dtype=torch.long)
        for i, s in enumerate(seqs):
            out[i, : len(s)] = torch.as_tensor(list(s), dtype=torch.long)
        return out

    # ------------------------------------------------------------------ embeddings
    def positions(self, T: int) -> Tensor:
        """The position code of positions 0..T-1 in the model's dtype and device: (T, d_embed).

        Computed in float64 and rounded once to the model's dtype (a float64 model gets the exact
        sinusoids, not a float32 table cast up), cached per dtype and device.
        """
        key = (self.W_e.dtype, self.W_e.device)
        P = self._positions.get(key)
        if P is None or P.shape[0] < T:
            P = sinusoid(np.arange(max(T, self.max_len)), self.d_embed, self.W_e.dtype)
            P = P.to(self.W_e.device)
            self._positions[key] = P
        return P[:T]

    def embed(self, ids: Tensor) -> Tensor:
        """``e = W_e[ids] + p`` for already checked ids: (B, T, d_embed)."""
        # F.embedding, not W_e[ids]: its CPU backward is deterministic (index_put is not).
        return nn.functional.embedding(ids, self.W_e) + self.positions(ids.shape[1])

    def forward_rows(self, rows: Tensor, index: Tensor, mask: Tensor, *,
                     per_head: bool = False) -> Tensor:
        """Logits (B, n_classes) from the embedding rows a batch uses (the training path of
        the lazy optimiser, :class:`attnxai.model.optim.LazyAdamW`): ``rows`` (U, d_embed) holds
        ``W_e[x]`` for the U distinct ids of the batch and ``index`` (B, T) the row of each token,
        so that ``e_t = rows[index[:, t]] + p_t``; ``mask`` (B, T) bool, True on real tokens
        (:meth:`pad_mask` of the checked ids). The same function as
        ``forward_embeddings(embed(ids), mask)``, differentiable with respect to ``rows``: its
        gradient is the gradient of the U rows of ``W_e`` the batch touches, and nothing else of
        ``W_e``. This default forms ``e``; a subclass may compute the same logits in a cheaper
        order (:meth:`attnxai.model.single_layer.AttentionClassifier.forward_rows`)."""
        e = nn.functional.embedding(index, rows) + self.positions(index.shape[1])
        return self.forward_embeddings(e, mask, per_head=per_head)

    def forward(self, ids: Tensor, *, per_head: bool = False) -> Tensor:
        """Logits (B, n_classes) for (B, T) ids (``per_head=True``: (B, K, n_classes))."""
        ids = self.check_ids(ids)
        return self.forward_embeddings(self.embed(ids), self.pad_mask(ids), per_head=per_head)

    def check_embeddings(self, e: Tensor, mask: Tensor | None) -> Tensor:
        """Validate ``forward_embeddings``' inputs; returns the mask (all True if None)."""
        if not isinstance(e, Tensor) or e.dim() != 3 or e.shape[-1] != self.d_embed:
            raise ValueError(f"e must be a (B, T, {self.d_embed}) tensor, got "
                             f"{tuple(e.shape) if isinstance(e, Tensor) else type(e).__name__}")
        if e.dtype != self.W_e.dtype:
            raise TypeError(f"embeddings are {e.dtype} but the model is {self.W_e.dtype}")
        if mask is None:
            return torch.ones(e.shape[:2], dtype=torch.bool, device=e.device)
        if mask.shape != e.shape[:2] or mask.dtype != torch.bool:
            raise ValueError(f"mask must be a (B, T) bool tensor matching e, got {mask.dtype} "
                             f"{tuple(mask.shape)}")
        return mask


def iter_batches(model: ClassifierBase, seqs: Sequence[Sequence[int]],
                 batch_size: int = 64) -> Iterator[tuple[int, Tensor]]:
    """(start, (B, T) ids) for id lists, ``batch_size`` at a time, in the given order."""
    batch_size = positive_int(batch_size, "batch_size")
    if len(seqs) == 0:
        raise ValueError("no documents given")
    for start in range(0, len(seqs), batch_size):
        yield start, model.collate([list(s) for s in seqs[start:start + batch_size]])


@torch.no_grad()
def predict(model: ClassifierBase, seqs: list[list[int]], batch_size: int = 256,
            head: int | None = None) -> np.ndarray:
    """Logits (n, n_classes) for id lists, in batches of similar length (fast, same result).

    ``head=i`` gives head ``i``'s own output ``W_l^(i) v~^(i)`` instead of the average. The
    batches run on the model's device; the logits come back as float64 numpy on the CPU."""
    batch_size = positive_int(batch_size, "batch_size")
    if head is not None:
        head = integer(head, "head")
        if not 0 <= head < model.n_heads:
            raise ValueError(f"head {head} does not exist: the model has {model.n_heads} heads")
    if len(seqs) == 0:
        raise ValueError("no documents to predict")
    model.eval()
    device = next(model.parameters()).device
    order = np.argsort([len(s) for s in seqs], kind="stable")
    out = np.empty((len(seqs), model.n_classes))
    for start in range(0, len(seqs), batch_size):
        idx = order[start:start + batch_size]
        ids = model.collate([seqs[i] for i in idx]).to(device)
        logits = model(ids) if head is None else model(ids, per_head=True)[:, head]
        out[idx] = logits.double().cpu().numpy()
    return out
