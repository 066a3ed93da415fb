"""The explainers of the paper's Figure 1 that score positions, on any model of the package's
interface (:class:`attnxai.model.interface.ClassifierBase`: the single-layer classifier, the
multi-layer one).

Position-level explainers (one score per token position)::

    attention(model, ids, "mean")      alpha-avg  mean over heads of alpha_t^(i)           (B, T)
    attention(model, ids, "max")       alpha-max  max over heads                           (B, T)
    attention(model, ids, "none")      per head                                        (B, K, T)
    gradient(model, ids, target)       grad_{e_t} f_target by automatic differentiation (B, T, d_e)
    gradient_summaries(...)            G-avg, G-l1, G-l2, GxI                           (B, T) each
    alpha_times_score(model, ids)      alpha x s, attention times the token's own score  (B, T)
    smoothgrad(model, ids, target)     the gradient averaged over noisy embeddings (B, T, d_e)

``attention`` reads layer ``layer`` of a multi-layer model (default 0, the first; ``layer="all"``
adds a layer axis after the batch one). :func:`rollout` is attention rollout (Abnar & Zuidema,
2020), the usual one-number-per-token summary of every layer's attention. LIME, which scores words
rather than positions, is :func:`attnxai.fastlime.explain_instance`; :func:`attnxai.explain` puts
every method side by side for a text, at token and word level; the registry's
:func:`attnxai.registry.position_scores` gives any of the six above in a dict, for a batch (:mod:`attnxai.words`: a word's score
is the sum of its occurrences').

Shapes and alignment. ``ids`` is a (B, T0) integer tensor whose column 0 is ``[CLS]`` (as
:meth:`~attnxai.model.textmodel.Pretrained.encode` makes it). Scores are aligned with the ids *after
the model's own padding* (:meth:`~attnxai.model.interface.ClassifierBase.check_ids`): ``T = T0`` with
``padding="mask"``, ``T = max_len`` with ``padding="unk"``. Position 0 is ``[CLS]``: it has an
attention weight and a gradient like every token and is kept in the arrays.

Padding. With ``padding="mask"`` the positions holding ``pad_id`` take no part in the network:
their (B, T) scores are **NaN** (never 0, which would read as "neutral word"), while the raw
gradient (B, T, d_e) is exactly 0 there (it is the true derivative). ``valid_mask`` gives the
positions that carry a score.
"""

from __future__ import annotations

import copy
import torch
from torch import Tensor

from . import validate
from .model.interface import ClassifierBase

__all__ = ["ATTENTION_METHODS", "GRADIENT_METHODS", "alpha_times_score", "attention",
           "flip_output_layer", "gradient", "gradient_summaries", "rollout", "smoothgrad",
           "summarize_gradient", "valid_mask"]

#: The names of :func:`attention`'s two summaries and of :func:`summarize_gradient`'s four (the
#: methods that use them are :mod:`attnxai.methods.attention` and
#: :mod:`attnxai.methods.gradients`).
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


def smoothgrad(model: ClassifierBase, ids: Tensor, target: int = 1, *, n_samples: int = 50,
               noise: float = 0.15, seed: int = 0) -> tuple[Tensor, Tensor]:
    """SmoothGrad (Smilkov et al., 2017) on the embeddings: the mean over ``n_samples`` draws of
    ``grad_{e} f_target(e + eps_k)``, ``eps_k`` i.i.d. normal of standard deviation
    ``sigma = noise * (max(e) - min(e))``, the range of the review's own embedding coordinates
    (its valid positions; the paper's "noise level"). Returns the (B, T, d_embed) mean gradient and
    the noiseless embeddings ``e`` (as :func:`gradient` with ``return_embeddings=True``, so
    :func:`summarize_gradient` summarises it). Exactly 0 on padding (no noise is added there).

    The noise is ``torch.randn((n_samples, B, T, d_embed), generator=g)`` with ``g`` a
    ``torch.Generator`` seeded with ``seed``, in ``e``'s dtype: the same seed gives the same
    scores. ``noise=0`` gives :func:`gradient`'s gradient."""
    target = validate.target(target, model.n_classes)
    n_samples = validate.positive_int(n_samples, "n_samples")
    noise = validate.nonnegative(noise, "noise")
    seed = validate.seed(seed)
    ids, mask = _checked(model, ids)
    e = model.embed(ids).detach()                                         # (B, T, d)
    inf = torch.tensor(float("inf"), dtype=e.dtype)
    valid = mask[..., None]
    span = (torch.where(valid, e, -inf).amax(dim=(1, 2))
            - torch.where(valid, e, inf).amin(dim=(1, 2)))                # (B,)
    g = torch.Generator().manual_seed(seed)
    eps = torch.randn((n_samples, *e.shape), generator=g, dtype=e.dtype)
    noisy = e + (noise * span)[None, :, None, None] * eps * valid         # (S, B, T, d)
    with torch.enable_grad():
        x = noisy.reshape(-1, *e.shape[1:]).requires_grad_(True)
        logits = model.forward_embeddings(x, mask.repeat(n_samples, 1))
        (grad,) = torch.autograd.grad(logits[:, target].sum(), x)
    return grad.reshape(noisy.shape).mean(dim=0), e


def gradient_summaries(model: ClassifierBase, ids: Tensor, target: int = 1) -> dict[str, Tensor]:
    """G-avg, G-l1, G-l2, GxI for every position: dict of (B, T), NaN on padding."""
    grad, e = gradient(model, ids, target, return_embeddings=True)
    return summarize_gradient(grad, e, valid_mask(model, ids))


def alpha_times_score(model: ClassifierBase, ids: Tensor, target: int = 1) -> Tensor:
    """``alpha x s``: ``(1/K) sum_i alpha_t^(i) s_t^(i)`` with ``s_t^(i) = W_l^(i) v_t^(i)`` the
    token's own score (logit ``target``): (B, T), NaN on padding. Each token's share of the logit
    (the logit is the sum of these over the positions, chapter 1) and the value part of GxI
    (chapter 4's corollary): attention weighted by the token score that attention itself never
    sees. Needs the model's internals: the single-layer
    :class:`~attnxai.model.single_layer.AttentionClassifier`."""
    from .model.single_layer import AttentionClassifier

    if not isinstance(model, AttentionClassifier):
        raise TypeError("alpha x s is defined for the single-layer AttentionClassifier, not "
                        f"{type(model).__name__}")
    target = validate.target(target, model.n_classes)
    ids, mask = _checked(model, ids)
    with torch.no_grad():
        it = model(ids, return_internals=True)
    share = (it.alpha * it.token_scores[..., target]).mean(dim=1)            # (B, T)
    return share.masked_fill(~mask, float("nan"))


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
