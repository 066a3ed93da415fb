"""The explainers of the paper's Figure 1, computed on an :class:`~attnxai.model.AttentionClassifier`.

Position-level explainers (one score per token position)::

    attention(model, ids, "mean")   alpha-avg   mean over heads of alpha_t^(i)            (B, T)
    attention(model, ids, "max")    alpha-max   max over heads                            (B, T)
    gradient(model, ids, target)    grad_{e_t} f_target by automatic differentiation   (B, T, d_e)
    gradient_summaries(...)         G-avg, G-l1, G-l2, GxI                              (B, T) each
    explain(model, ids, target)     all six of them in a dict                           (B, T) each

Shapes and alignment. ``ids`` is a (B, T0) integer tensor whose column 0 is ``[CLS]`` (as
:meth:`~attnxai.checkpoint.Pretrained.encode` makes it). Scores are aligned with the ids *after
the model's own padding* (:meth:`AttentionClassifier.check_ids`): ``T = T0`` with
``padding="mask"``, ``T = max_len`` with ``padding="unk"`` (the model fills every review with UNK
up to ``max_len`` and those tokens take part in attention, so they get scores like any token).
Position 0 is ``[CLS]``: it has an attention weight and a gradient like every token and is kept
in the arrays; :func:`word_scores` leaves it out.

Padding. With ``padding="mask"`` the positions holding ``pad_id`` (0) take no part in the network:
their (B, T) scores are **NaN** (never 0, which would read as "neutral word"), while the raw
gradient (B, T, d_e) is exactly 0 there (it is the true derivative). ``valid_mask`` gives the
positions that carry a score.

Words. A word can occur several times in a review; :func:`word_scores` **sums** the scores of its
occurrences, for every explainer alike. This is the reading that matches LIME (one feature per
distinct word, and lime's default ``bow=True`` deletes all occurrences at once): for a small
change in every occurrence's embedding, the first-order change of ``f`` is the sum over
occurrences.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Sequence

import numpy as np
import torch
from scipy.stats import rankdata
from torch import Tensor

from .model import AttentionClassifier
from .text import CLS, PAD, normalize_for_lime, tokenize
from .theory.gradient_theorem import check_target

#: The explainers of the paper's Figure 1, in its order; LIME comes from :mod:`attnxai.lime`.
METHODS = ("alpha-avg", "alpha-max", "LIME", "G-avg", "G-l1", "G-l2", "GxI")
POSITION_METHODS = ("alpha-avg", "alpha-max", "G-avg", "G-l1", "G-l2", "GxI")
GRADIENT_METHODS = ("G-avg", "G-l1", "G-l2", "GxI")


def _checked(model: AttentionClassifier, ids: Tensor) -> tuple[Tensor, Tensor]:
    if not isinstance(model, AttentionClassifier):
        raise TypeError(f"model must be an AttentionClassifier, got {type(model).__name__} "
                        "(for a Pretrained, pass pre.model)")
    ids, mask = model.ids_and_mask(ids)
    return ids, mask


def valid_mask(model: AttentionClassifier, ids: Tensor) -> Tensor:
    """(B, T) bool, True on the positions that get a score (not padding), T as in the scores."""
    return _checked(model, ids)[1]


@torch.no_grad()
def _alpha(model: AttentionClassifier, ids: Tensor, mask: Tensor) -> Tensor:
    """(B, K, T) attention of [CLS], without forming keys and values: ``q_1 . W_k e_t =
    (W_k^T q_1) . e_t`` (the model's own fast path)."""
    return model.cls_attention(model.embed(ids), mask)


def attention(model: AttentionClassifier, ids: Tensor, reduce: str = "mean") -> Tensor:
    """alpha-avg (``reduce="mean"``) or alpha-max (``"max"``): (B, T), NaN on padding.

    ``reduce="none"`` gives the per-head weights (B, K, T) (0 on padding, as in the network).
    """
    if reduce not in ("mean", "max", "none"):
        raise ValueError(f"reduce must be 'mean', 'max' or 'none', got {reduce!r}")
    ids, mask = _checked(model, ids)
    alpha = _alpha(model, ids, mask)
    if reduce == "none":
        return alpha
    out = alpha.mean(dim=1) if reduce == "mean" else alpha.amax(dim=1)
    return out.masked_fill(~mask, float("nan"))


def gradient(model: AttentionClassifier, ids: Tensor, target: int = 1, *,
             return_embeddings: bool = False) -> Tensor | tuple[Tensor, Tensor]:
    """``grad_{e_t} f_target(x)`` by automatic differentiation: (B, T, d_embed).

    ``e_t = W_e[x_t] + p_t`` is the embedding after the position encoding. Each review's logit
    depends only on its own embeddings, so one backward pass of the summed logits gives every
    review's gradient. Exactly 0 on padding. With ``return_embeddings=True`` also returns ``e``.
    """
    target = check_target(model, target)
    ids, mask = _checked(model, ids)
    with torch.enable_grad():
        e = model.embed(ids).detach().requires_grad_(True)
        logits = model.forward_embeddings(e, mask)
        (grad,) = torch.autograd.grad(logits[:, target].sum(), e)
    e = e.detach()
    return (grad, e) if return_embeddings else grad


def summarize_gradient(grad: Tensor, e: Tensor, mask: Tensor | None = None) -> dict[str, Tensor]:
    """Per-token summaries of a (B, T, d) gradient: G-avg (mean of the d coordinates), G-l1,
    G-l2 (norms) and GxI (``e_t . grad``); (B, T) each, NaN where ``mask`` is False."""
    if grad.shape != e.shape or grad.dim() != 3:
        raise ValueError(f"grad and e must both be (B, T, d), got {tuple(grad.shape)} and {tuple(e.shape)}")
    out = {"G-avg": grad.mean(-1), "G-l1": grad.abs().sum(-1), "G-l2": grad.norm(dim=-1),
           "GxI": (grad * e).sum(-1)}
    if mask is not None:
        out = {k: v.masked_fill(~mask, float("nan")) for k, v in out.items()}
    return out


def gradient_summaries(model: AttentionClassifier, ids: Tensor, target: int = 1) -> dict[str, Tensor]:
    """G-avg, G-l1, G-l2, GxI for every position: dict of (B, T), NaN on padding."""
    grad, e = gradient(model, ids, target, return_embeddings=True)
    return summarize_gradient(grad, e, valid_mask(model, ids))


def explain(model: AttentionClassifier, ids: Tensor, target: int = 1,
            methods: Iterable[str] = POSITION_METHODS) -> dict[str, Tensor]:
    """The position-level explainers named in ``methods`` (see :data:`POSITION_METHODS`)."""
    methods = list(methods)
    unknown = [m for m in methods if m not in POSITION_METHODS]
    if unknown:
        hint = " (LIME is per word: use explain_text)" if "LIME" in unknown else ""
        raise ValueError(f"unknown method(s) {unknown}; choose among {list(POSITION_METHODS)}{hint}")
    out: dict[str, Tensor] = {}
    if "alpha-avg" in methods:
        out["alpha-avg"] = attention(model, ids, "mean")
    if "alpha-max" in methods:
        out["alpha-max"] = attention(model, ids, "max")
    if any(m in GRADIENT_METHODS for m in methods):
        g = gradient_summaries(model, ids, target)
        out.update({m: g[m] for m in methods if m in GRADIENT_METHODS})
    return {m: out[m] for m in methods}


def flip_output_layer(model: AttentionClassifier) -> AttentionClassifier:
    """A copy of ``model`` with ``W_l`` replaced by ``-W_l`` (Section 3): every logit changes sign,
    attention is untouched."""
    flipped = copy.deepcopy(model)
    with torch.no_grad():
        flipped.W_l.neg_()
    return flipped


# ---------------------------------------------------------------------- words
def word_scores(tokens: Sequence[str], scores: Sequence[float] | Tensor | np.ndarray, *,
                skip: Iterable[str] = (CLS, PAD)) -> dict[str, float]:
    """Scores per distinct word: the **sum** over the word's occurrences (module docstring).

    ``tokens[t]`` is the word at position ``t`` (same length as ``scores``, e.g. ``[CLS]`` then
    ``tokenize(text)``, so that unknown words keep their own spelling). Positions whose token is in
    ``skip`` or whose score is NaN (padding) are left out. Words come in order of first occurrence.
    """
    s = scores.detach().cpu().double().numpy() if isinstance(scores, Tensor) else np.asarray(scores, float)
    if s.ndim != 1:
        raise ValueError(f"scores must be one review's 1-D scores, got shape {s.shape}")
    if len(tokens) != len(s):
        raise ValueError(f"{len(tokens)} tokens but {len(s)} scores: they must be aligned")
    skip = set(skip)
    out: dict[str, float] = {}
    for tok, x in zip(tokens, s):
        if tok in skip or np.isnan(x):
            continue
        out[tok] = out.get(tok, 0.0) + float(x)
    return out


def _lime_module():
    try:
        from . import lime  # noqa: PLC0415  (written in parallel; optional here)
    except ImportError:
        return None
    return lime if hasattr(lime, "explain") else None


def lime_available() -> bool:
    """Whether :mod:`attnxai.lime` (and its ``explain``) can be imported."""
    return _lime_module() is not None


def explain_text(pre, text: str, methods: Sequence[str] | None = None, *, target: int = 1,
                 level: str = "token", normalize: bool = True, lime_kwargs: dict | None = None):
    """All the explainers of Figure 1 for one string, as a :class:`pandas.DataFrame`.

    ``pre`` is a :class:`~attnxai.checkpoint.Pretrained`. With ``normalize=True`` (the authors'
    preprocessing, :func:`~attnxai.text.normalize_for_lime`) the model's tokens and LIME's words
    coincide. ``methods`` defaults to :data:`METHODS` (LIME only if :mod:`attnxai.lime` exists).

    ``level="token"``: one row per token of the review ([CLS] excluded), column ``token`` then one
    column per method; LIME, which has one coefficient per distinct word, shows that coefficient
    at each occurrence. ``level="word"``: one row per distinct word, position scores summed over
    occurrences (:func:`word_scores`), LIME's coefficient as is.
    """
    import pandas as pd

    if level not in ("token", "word"):
        raise ValueError(f"level must be 'token' or 'word', got {level!r}")
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    model = pre.model
    if normalize:
        text = normalize_for_lime(text, model.max_len - 1)
    ids = pre.encode(text)                       # raises a clear ValueError for an empty text
    words = [CLS] + tokenize(text)[: model.max_len - 1]
    lime = _lime_module()
    if methods is None:
        methods = [m for m in METHODS if m != "LIME" or lime is not None]
    methods = list(methods)
    if "LIME" in methods and lime is None:
        raise ValueError("LIME was asked for but attnxai.lime is not available")
    pos = explain(model, ids, target, [m for m in methods if m != "LIME"])
    n = len(words)
    cols = {m: pos[m][0, :n].double().numpy() for m in pos}
    lime_w: dict[str, float] = {}
    if "LIME" in methods:
        lime_w = _lime_weights(lime, pre, text, target, lime_kwargs or {})
    if level == "token":
        df = pd.DataFrame({"token": words[1:]})
        for m in methods:
            df[m] = [lime_w.get(w, np.nan) for w in words[1:]] if m == "LIME" else cols[m][1:]
        return df
    per_word = {m: word_scores(words, cols[m]) for m in cols}
    uniq = list(dict.fromkeys(words[1:]))
    df = pd.DataFrame({"word": uniq, "count": [words[1:].count(w) for w in uniq]})
    for m in methods:
        df[m] = [lime_w.get(w, np.nan) if m == "LIME" else per_word[m][w] for w in uniq]
    return df


def _lime_weights(lime, pre, text: str, target: int, kwargs: dict) -> dict[str, float]:
    """Word -> LIME coefficient from :func:`attnxai.lime.explain` (lime's settings: 5,000
    samples, kernel width 25, ``bow=True``; ``random_state=0`` unless ``kwargs`` say otherwise)."""
    res = lime.explain(pre, text, **{"target": target, "random_state": 0, **kwargs})
    if hasattr(res, "words") and hasattr(res, "coef"):
        return {str(w): float(c) for w, c in zip(res.words, res.coef)}
    return {str(w): float(c) for w, c in res.as_list()}


# ---------------------------------------------------------------------- corpus statistics
def sample_reviews(pre, reviews: Sequence, n: int, seed: int = 0) -> tuple[list, list[list[int]]]:
    """``n`` reviews drawn without replacement (``numpy`` generator with ``seed``, kept in their
    original order) and their id lists for ``pre`` (``[CLS]`` + tokens, truncated to ``max_len``).
    ``n`` larger than the number of reviews takes them all."""
    if len(reviews) == 0:
        raise ValueError("no reviews to sample from")
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    idx = np.sort(np.random.default_rng(seed).permutation(len(reviews))[: min(n, len(reviews))])
    chosen = [reviews[i] for i in idx]
    seqs = [pre.vocab.encode(r.text, pre.model.max_len) for r in chosen]
    return chosen, seqs


def batches(model: AttentionClassifier, seqs: Sequence[Sequence[int]], batch_size: int = 64):
    """(start, ids) for id lists, ``batch_size`` at a time, in the given order."""
    if len(seqs) == 0:
        raise ValueError("no documents given")
    for start in range(0, len(seqs), batch_size):
        yield start, model.collate([list(s) for s in seqs[start:start + batch_size]])


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


def corpus_statistics(model: AttentionClassifier, seqs: Sequence[Sequence[int]], target: int = 1,
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
    target = check_target(model, target)
    spear = {m: [] for m in (*GRADIENT_METHODS, "|G-avg|", "|GxI|")}
    top_neg, top_alpha, top_gxi, n_tok, n_neg, head_tops, logits = [], [], [], [], [], [], []
    pooled = {"alpha_all": [], "gxi_all": [], "gavg_all": []}
    for _, ids in batches(model, seqs, batch_size):
        checked, full_mask = _checked(model, ids)
        heads = _alpha(model, checked, full_mask)
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
