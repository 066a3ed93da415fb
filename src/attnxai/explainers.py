"""The explainers of the paper's Figure 1, on any model of the package's interface
(:class:`attnxai.interface.ClassifierBase`: the single-layer classifier, the multi-layer one).

Position-level explainers (one score per token position)::

    attention(model, ids, "mean")      alpha-avg  mean over heads of alpha_t^(i)           (B, T)
    attention(model, ids, "max")       alpha-max  max over heads                           (B, T)
    attention(model, ids, "none")      per head                                        (B, K, T)
    gradient(model, ids, target)       grad_{e_t} f_target by automatic differentiation (B, T, d_e)
    gradient_summaries(...)            G-avg, G-l1, G-l2, GxI                           (B, T) each
    position_scores(model, ids, ...)   any of the six above in a dict                   (B, T) each

``attention`` reads layer ``layer`` of a multi-layer model (default 0, the first; ``layer="all"``
adds a layer axis after the batch one). :func:`rollout` is attention rollout (Abnar & Zuidema,
2020), the usual one-number-per-token summary of every layer's attention. LIME, which scores words rather than positions, is
:func:`attnxai.fastlime.explain`; :func:`explain_text` puts all seven side by side for a string.

Shapes and alignment. ``ids`` is a (B, T0) integer tensor whose column 0 is ``[CLS]`` (as
:meth:`~attnxai.textmodel.Pretrained.encode` makes it). Scores are aligned with the ids *after
the model's own padding* (:meth:`~attnxai.interface.ClassifierBase.check_ids`): ``T = T0`` with
``padding="mask"``, ``T = max_len`` with ``padding="unk"``. Position 0 is ``[CLS]``: it has an
attention weight and a gradient like every token and is kept in the arrays; :func:`word_scores`
leaves it out.

Padding. With ``padding="mask"`` the positions holding ``pad_id`` take no part in the network:
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
import warnings
from collections.abc import Iterable, Sequence

import numpy as np
import torch
from torch import Tensor

from . import fastlime, validate
from .interface import ClassifierBase
from .text import CLS, PAD, TruncationWarning, normalize_for_lime, tokenize

__all__ = ["ATTENTION_METHODS", "GRADIENT_METHODS", "METHODS", "POSITION_METHODS", "attention",
           "explain_text", "flip_output_layer", "gradient", "gradient_summaries",
           "position_scores", "rollout", "summarize_gradient", "valid_mask", "word_scores"]

#: The explainers of the paper's Figure 1, in its order; LIME comes from :mod:`attnxai.fastlime`.
METHODS = ("alpha-avg", "alpha-max", "LIME", "G-avg", "G-l1", "G-l2", "GxI")
POSITION_METHODS = ("alpha-avg", "alpha-max", "G-avg", "G-l1", "G-l2", "GxI")
ATTENTION_METHODS = ("alpha-avg", "alpha-max")
GRADIENT_METHODS = ("G-avg", "G-l1", "G-l2", "GxI")


def _checked(model: ClassifierBase, ids: Tensor) -> tuple[Tensor, Tensor]:
    if not isinstance(model, ClassifierBase):
        raise TypeError(f"model must be an attnxai classifier (ClassifierBase), got "
                        f"{type(model).__name__} (for a Pretrained, pass pre.model)")
    return model.ids_and_mask(ids)


def valid_mask(model: ClassifierBase, ids: Tensor) -> Tensor:
    """(B, T) bool, True on the positions that get a score (not padding), T as in the scores."""
    return _checked(model, ids)[1]


def _layer_index(model: ClassifierBase, layer: int | str) -> int | None:
    if layer == "all":
        return None
    i = validate.integer(layer, "layer")
    if not -model.n_layers <= i < model.n_layers:
        raise ValueError(f"layer {i} does not exist: the model has {model.n_layers} layer(s)")
    return i % model.n_layers


def attention(model: ClassifierBase, ids: Tensor, reduce: str = "mean", *,
              layer: int | str = 0) -> Tensor:
    """alpha-avg (``reduce="mean"``) or alpha-max (``"max"``) of the [CLS] row of layer
    ``layer``: (B, T), NaN on padding. ``reduce="none"`` gives the per-head weights (B, K, T) (0
    on padding, as in the network). ``layer="all"``: (B, L, T) or (B, L, K, T)."""
    validate.choice(reduce, "reduce", ("mean", "max", "none"))
    ids, mask = _checked(model, ids)
    li = _layer_index(model, layer)
    with torch.no_grad():
        alpha = model.cls_attention(model.embed(ids), mask)          # (B, L, K, T)
    if li is not None:
        alpha = alpha[:, li]                                          # (B, K, T)
    if reduce == "none":
        return alpha
    out = alpha.mean(dim=-2) if reduce == "mean" else alpha.amax(dim=-2)
    pad = ~mask if li is not None else ~mask[:, None, :]
    return out.masked_fill(pad, float("nan"))


def rollout(model: ClassifierBase, ids: Tensor) -> Tensor:
    """Attention rollout of the ``[CLS]`` output: (B, T), NaN on padding, each row summing to 1.

    Abnar & Zuidema (2020): per layer the head-averaged attention matrix ``A``, replaced by
    ``0.5 A + 0.5 I`` where the layer adds its input back (a residual connection:
    ``model.residual_layers``; the last, read-out layer of the multi-layer model has none), and
    the product over the layers, read at the ``[CLS]`` row of the last one. A model without
    residual connections gets the plain product; a single-layer model (no residual) gets its
    alpha-avg. Needs every layer's full matrices (``model.attention_maps``) for more than one
    layer."""
    ids, mask = _checked(model, ids)
    with torch.no_grad():
        e = model.embed(ids)
        if hasattr(model, "attention_maps"):
            maps = model.attention_maps(e, mask)
        elif model.n_layers == 1:
            maps = [model.cls_attention(e, mask)[:, 0, :, None, :]]
        else:
            raise TypeError(f"{type(model).__name__} has {model.n_layers} layers but no "
                            "attention_maps(e, mask): rollout needs every layer's matrices")
        residual = getattr(model, "residual_layers", (False,) * len(maps))
        R = None
        for A, res in zip(maps, residual):
            A = A.mean(dim=1)                                     # (B, Tq, T)
            if res and A.shape[1] == A.shape[2]:
                A = 0.5 * A + 0.5 * torch.eye(A.shape[-1], dtype=A.dtype, device=A.device)
            R = A if R is None else A @ R
        out = R[:, 0]
    return out.masked_fill(~mask, float("nan"))


def gradient(model: ClassifierBase, ids: Tensor, target: int = 1, *,
             return_embeddings: bool = False) -> Tensor | tuple[Tensor, Tensor]:
    """``grad_{e_t} f_target(x)`` by automatic differentiation: (B, T, d_embed).

    ``e_t = W_e[x_t] + p_t`` is the embedding after the position encoding. Each review's logit
    depends only on its own embeddings, so one backward pass of the summed logits gives every
    review's gradient. Exactly 0 on padding. With ``return_embeddings=True`` also returns ``e``.
    """
    target = validate.target(target, model.n_classes)
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
        raise ValueError(f"grad and e must both be (B, T, d), got {tuple(grad.shape)} and "
                         f"{tuple(e.shape)}")
    out = {"G-avg": grad.mean(-1), "G-l1": grad.abs().sum(-1), "G-l2": grad.norm(dim=-1),
           "GxI": (grad * e).sum(-1)}
    if mask is not None:
        out = {k: v.masked_fill(~mask, float("nan")) for k, v in out.items()}
    return out


def gradient_summaries(model: ClassifierBase, ids: Tensor, target: int = 1) -> dict[str, Tensor]:
    """G-avg, G-l1, G-l2, GxI for every position: dict of (B, T), NaN on padding."""
    grad, e = gradient(model, ids, target, return_embeddings=True)
    return summarize_gradient(grad, e, valid_mask(model, ids))


def position_scores(model: ClassifierBase, ids: Tensor, target: int = 1,
                    methods: Iterable[str] = POSITION_METHODS, *,
                    layer: int = 0) -> dict[str, Tensor]:
    """The position-level explainers named in ``methods`` (see :data:`POSITION_METHODS`):
    dict of (B, T), NaN on padding; attention from layer ``layer``."""
    methods = _method_list(methods, POSITION_METHODS, allow_empty=True)
    unknown = [m for m in methods if m not in POSITION_METHODS]
    if unknown:
        hint = " (LIME is per word: use explain_text)" if "LIME" in unknown else ""
        raise ValueError(f"unknown method(s) {unknown}; choose among {list(POSITION_METHODS)}{hint}")
    out: dict[str, Tensor] = {}
    if "alpha-avg" in methods:
        out["alpha-avg"] = attention(model, ids, "mean", layer=layer)
    if "alpha-max" in methods:
        out["alpha-max"] = attention(model, ids, "max", layer=layer)
    if any(m in GRADIENT_METHODS for m in methods):
        g = gradient_summaries(model, ids, target)
        out.update({m: g[m] for m in methods if m in GRADIENT_METHODS})
    return {m: out[m] for m in methods}


def _method_list(methods, known: tuple[str, ...], *, allow_empty: bool = False) -> list[str]:
    """``methods`` as a list of names; a single str is refused (it would be read as its letters)."""
    if isinstance(methods, str) or not isinstance(methods, Iterable):
        raise TypeError(f"methods must be a list of method names (from {list(known)}), got "
                        f"{type(methods).__name__} ({methods!r}): wrap one name, [{methods!r}]")
    methods = list(methods)
    if not methods and not allow_empty:
        raise ValueError(f"methods is empty: choose among {list(known)}")
    return methods


def flip_output_layer(model: ClassifierBase) -> ClassifierBase:
    """A copy of ``model`` with its output layer ``W_l`` replaced by ``-W_l`` (Section 3): every
    logit changes sign, attention is untouched (with the single-layer skip connection ``W_s`` is
    negated too; on the multi-layer model ``W_l`` is the read-out layer's)."""
    if not hasattr(model, "W_l"):
        raise TypeError(f"{type(model).__name__} has no output layer W_l to flip")
    flipped = copy.deepcopy(model)
    with torch.no_grad():
        flipped.W_l.neg_()
        if getattr(flipped, "skip", False):          # the skip term is part of the read-out
            flipped.W_s.neg_()
    return flipped


# ---------------------------------------------------------------------- words
def word_scores(tokens: Sequence[str], scores: Sequence[float] | Tensor | np.ndarray, *,
                skip: Iterable[str] = (CLS, PAD)) -> dict[str, float]:
    """Scores per distinct word: the **sum** over the word's occurrences (module docstring).

    ``tokens[t]`` is the word at position ``t`` (same length as ``scores``, e.g. ``[CLS]`` then
    ``tokenize(text)``, so that unknown words keep their own spelling). Positions whose token is in
    ``skip`` or whose score is NaN (padding) are left out. Words come in order of first occurrence.
    """
    s = scores.detach().cpu().double().numpy() if isinstance(scores, Tensor) \
        else np.asarray(scores, float)
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


def explain_text(pre, text: str, methods: Sequence[str] | None = None, *, target: int = 1,
                 level: str = "token", normalize: bool = True, lime_kwargs: dict | None = None,
                 layer: int = 0):
    """All the explainers of Figure 1 for one string, as a :class:`pandas.DataFrame`.

    ``pre`` is a :class:`~attnxai.textmodel.Pretrained`. With ``normalize=True`` (the authors'
    preprocessing, :func:`~attnxai.text.normalize_for_lime`) the model's tokens and LIME's words
    coincide. ``methods`` defaults to :data:`METHODS`. LIME runs :func:`attnxai.fastlime.explain`
    with lime's defaults (5,000 samples, width 25, ``bow=True``) and ``random_state=0`` unless
    ``lime_kwargs`` say otherwise.

    ``level="token"``: one row per token of the review ([CLS] excluded), column ``token`` then one
    column per method; LIME shows the coefficient of the token's feature (its word with
    ``bow=True``, its own position with ``bow=False``). ``level="word"``: one row per distinct
    word, position scores summed over occurrences (:func:`word_scores`); with ``bow=False`` LIME's
    per-position coefficients are summed too.

    A text longer than the model reads is cut to its first ``max_len - 1`` tokens: the result's
    ``attrs`` say how many tokens there were and how many were dropped, and a
    :class:`~attnxai.text.TruncationWarning` says so. A text none of whose words the model knows
    (every token read as UNK: a non-Latin script, invented words) is refused with ``ValueError``.
    """
    import pandas as pd

    validate.choice(level, "level", ("token", "word"))
    validate.text(text)
    target = validate.target(target, pre.model.n_classes)
    model = pre.model
    n_full = len(tokenize(normalize_for_lime(text, 10**9) if normalize else text))
    if normalize:
        text = normalize_for_lime(text, model.max_len - 1)
    kept = tokenize(text)[: model.max_len - 1]
    pre.vocab.check_known(kept, text)
    dropped = n_full - len(kept)
    if dropped > 0:
        warnings.warn(f"the text has {n_full} tokens and the model reads {model.max_len - 1}: the "
                      f"last {dropped} were dropped from every explanation", TruncationWarning,
                      stacklevel=2)
        text = " ".join(kept) if normalize else text
    with warnings.catch_warnings():            # said once above, with the counts
        warnings.simplefilter("ignore", TruncationWarning)
        ids = pre.encode(text)
    words = [CLS] + kept
    methods = _method_list(METHODS if methods is None else methods, METHODS)
    unknown = [m for m in methods if m not in METHODS]
    if unknown:
        raise ValueError(f"unknown method(s) {unknown}; choose among {list(METHODS)}")
    pos = position_scores(model, ids, target, [m for m in methods if m != "LIME"], layer=layer)
    n = len(words)
    cols = {m: pos[m][0, :n].double().numpy() for m in pos}
    lime_tok = None
    if "LIME" in methods:
        kw = {"target": target, "random_state": 0, **(lime_kwargs or {})}
        res = fastlime.explain(pre, text, **kw)
        lime_tok = _lime_per_token(res, words[1:])
    if level == "token":
        df = pd.DataFrame({"token": words[1:]})
        for m in methods:
            df[m] = lime_tok if m == "LIME" else cols[m][1:]
    else:
        per_word = {m: word_scores(words, cols[m]) for m in cols}
        if lime_tok is not None:
            per_word["LIME"] = word_scores(words, np.concatenate([[np.nan], lime_tok]))
        uniq = list(dict.fromkeys(words[1:]))
        df = pd.DataFrame({"word": uniq, "count": [words[1:].count(w) for w in uniq]})
        for m in methods:
            df[m] = [per_word[m].get(w, np.nan) for w in uniq]
    df.attrs.update({"n_tokens": n_full, "dropped": max(dropped, 0), "target": target})
    return df


def _lime_per_token(res: fastlime.LimeResult, tokens: list[str]) -> np.ndarray:
    """LIME's coefficient at each token: its word's (bow=True) or its position's (bow=False).
    LIME splits on ``\\W+`` while the model's tokenizer keeps some punctuation: a token LIME has
    no feature for gets NaN."""
    if not res.bow:
        if len(res.words) == len(tokens) and res.words == tokens:
            return np.asarray(res.coef, dtype=float)
        coef = {}
        for w, c in zip(res.words, res.coef):
            coef.setdefault(w, []).append(float(c))
        out = []
        for tok in tokens:
            vals = coef.get(tok)
            out.append(vals.pop(0) if vals else np.nan)
        return np.asarray(out)
    by_word = res.as_dict()
    return np.asarray([by_word.get(t, np.nan) for t in tokens], dtype=float)
