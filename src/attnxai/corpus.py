"""Corpus statistics of Sections 3-4: samples of reviews, per-review rank correlations between
explainers, and the summary :func:`corpus_statistics` that chapters 2 and 4 plot."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from scipy.stats import rankdata
from torch import Tensor

from . import validate
from .explainers import GRADIENT_METHODS, attention, gradient_summaries
from .model.interface import ClassifierBase, iter_batches

__all__ = ["corpus_statistics", "distinct_head_tops", "review_spearman", "sample_reviews"]


def sample_reviews(pre, reviews: Sequence, n: int, seed: int = 0) -> tuple[list, list[list[int]]]:
    """``n`` reviews drawn without replacement (``numpy`` generator with ``seed``, kept in their
    original order) and their id lists for ``pre`` (``[CLS]`` + tokens, truncated to ``max_len``).
    ``n`` larger than the number of reviews takes them all."""
    if len(reviews) == 0:
        raise ValueError("no reviews to sample from")
    n = validate.positive_int(n, "n")
    idx = np.sort(np.random.default_rng(seed).permutation(len(reviews))[: min(n, len(reviews))])
    chosen = [reviews[i] for i in idx]
    seqs = [pre.vocab.encode(r.text, pre.model.max_len) for r in chosen]
    return chosen, seqs


def review_spearman(a: Tensor | np.ndarray, b: Tensor | np.ndarray, mask: Tensor | np.ndarray,
                    *, skip_cls: bool = True) -> np.ndarray:
    """Spearman correlation, review by review, between two (B, T) score arrays over the positions
    where ``mask`` is True ([CLS] left out when ``skip_cls``): the Pearson correlation of the
    average ranks (ties share their rank, as in :func:`scipy.stats.spearmanr`). NaN for a review
    with fewer than 3 tokens or a constant score."""
    a, b, mask = (x.detach().cpu().double().numpy() if isinstance(x, Tensor) else np.asarray(x)
                  for x in (a, b, mask))
    if a.shape != b.shape or a.shape != mask.shape or a.ndim != 2:
        raise ValueError(f"shapes differ or are not (B, T): {a.shape}, {b.shape}, {mask.shape}")
    m = mask.astype(bool).copy()
    if skip_cls:
        m[:, 0] = False
    m &= ~(np.isnan(a) | np.isnan(b))
    ra = rankdata(np.where(m, a, np.nan), axis=1, nan_policy="omit")
    rb = rankdata(np.where(m, b, np.nan), axis=1, nan_policy="omit")
    n = m.sum(1)
    with np.errstate(invalid="ignore", divide="ignore"):
        ca = np.where(m, ra - np.nanmean(np.where(m, ra, np.nan), axis=1, keepdims=True), 0.0)
        cb = np.where(m, rb - np.nanmean(np.where(m, rb, np.nan), axis=1, keepdims=True), 0.0)
        sa, sb = (ca * ca).sum(1), (cb * cb).sum(1)
        rho = (ca * cb).sum(1) / np.sqrt(sa * sb)
    rho[(n < 3) | (sa == 0) | (sb == 0)] = np.nan
    return rho


def distinct_head_tops(alpha_heads: Tensor, mask: Tensor) -> np.ndarray:
    """For per-head attention (B, K, T) and a (B, T) mask of the positions to consider: how many
    distinct positions the K heads rank first, per review (1 = all heads agree, K = none do)."""
    if alpha_heads.dim() != 3 or alpha_heads.shape[::2] != mask.shape:
        raise ValueError(f"need alpha (B, K, T) and mask (B, T), got {tuple(alpha_heads.shape)} "
                         f"and {tuple(mask.shape)}")
    top = alpha_heads.masked_fill(~mask[:, None, :], -1.0).argmax(dim=2)      # (B, K)
    return np.array([len(set(row)) for row in top.tolist()])


def corpus_statistics(model: ClassifierBase, seqs: Sequence[Sequence[int]], target: int = 1,
                      batch_size: int = 64) -> dict:
    """Per-review statistics of Sections 3-4 over a list of id lists (each ``[CLS]`` + tokens).

    Returns a dict of numpy arrays, one entry per review unless said otherwise:
    ``spearman[variant]`` (G-avg, G-l1, G-l2, GxI, and the absolute values |G-avg|, |GxI|,
    against alpha-avg, over the review's words),
    ``top_gxi_negative`` (bool: the word alpha-avg ranks first has GxI < 0),
    ``top_alpha`` / ``top_gxi`` (that word's alpha-avg and GxI), ``n_tokens``,
    ``n_negative_gxi`` (words with GxI < 0), ``head_tops`` (how many distinct words the K
    heads put first), ``logits`` (n, n_classes), and pooled over all words (flat arrays):
    ``alpha_all``, ``gxi_all``, ``gavg_all``. [CLS] is left out of every statistic.
    """
    target = validate.target(target, model.n_classes)
    spear = {m: [] for m in (*GRADIENT_METHODS, "|G-avg|", "|GxI|")}
    top_neg, top_alpha, top_gxi, n_tok, n_neg, head_tops, logits = [], [], [], [], [], [], []
    pooled = {"alpha_all": [], "gxi_all": [], "gavg_all": []}
    for _, ids in iter_batches(model, seqs, batch_size):
        full_mask = model.ids_and_mask(ids)[1]
        heads = attention(model, ids, "none")
        ex = gradient_summaries(model, ids, target)
        mask = full_mask.clone()
        mask[:, 0] = False
        alpha = heads.mean(dim=1).masked_fill(~mask, float("nan"))
        for m in spear:
            score = ex[m.strip("|")].abs() if m.startswith("|") else ex[m]
            spear[m].append(review_spearman(alpha, score, mask, skip_cls=False))
        gxi = ex["GxI"]
        top = torch.nan_to_num(alpha, nan=-1.0).argmax(dim=1)
        row = torch.arange(len(top))
        top_alpha.append(alpha[row, top].numpy())
        top_gxi.append(gxi[row, top].double().numpy())
        top_neg.append((gxi[row, top] < 0).numpy())
        n_tok.append(mask.sum(1).numpy())
        n_neg.append(((gxi < 0) & mask).sum(1).numpy())
        head_tops.append(distinct_head_tops(heads, mask))
        with torch.no_grad():
            logits.append(model(ids).double().numpy())
        pooled["alpha_all"].append(alpha[mask].double().numpy())
        pooled["gxi_all"].append(gxi[mask].double().numpy())
        pooled["gavg_all"].append(ex["G-avg"][mask].double().numpy())
    out = {"spearman": {m: np.concatenate(v) for m, v in spear.items()},
           "top_gxi_negative": np.concatenate(top_neg), "top_alpha": np.concatenate(top_alpha),
           "top_gxi": np.concatenate(top_gxi), "n_tokens": np.concatenate(n_tok),
           "n_negative_gxi": np.concatenate(n_neg), "head_tops": np.concatenate(head_tops),
           "logits": np.concatenate(logits)}
    out.update({k: np.concatenate(v) for k, v in pooled.items()})
    return out
