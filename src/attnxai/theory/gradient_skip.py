"""The gradient theorem with the skip term (chapter 9), for torch and SymPy models.

The single-layer model with the skip connection (:class:`~attnxai.model.single_layer.AttentionClassifier` with
``skip=True``) reads out the residual stream at ``[CLS]``, ``e_1 + sum_i W_o^(i) v~^(i)``, with a
linear map ``R``; writing ``W_s = R`` and ``W_l^(i) = K R W_o^(i)``::

    f^skip(x) = (1/K) sum_i W_l^(i) v~^(i) + W_s e_1 = f(x) + W_s e_1

so, with ``w_s = W_s[c]`` the row of the explained logit ``c``::

    grad_{e_t} f^skip = grad_{e_t} f                      for every word (t >= 2, 0-based t >= 1)
    grad_{e_1} f^skip = grad_{e_1} f + w_s^T              at [CLS]

where ``grad_{e_t} f`` is the theorem of Section 4 (:mod:`~attnxai.theory.gradient_theorem`:
value, key and query terms) evaluated at the skip model's weights. The skip term is constant (no
attention weight, no other token in it) and sits on ``[CLS]`` only: no word's gradient, G x I or
attention weight carries it, so every word-level explanation of the paper reads the same
formulas with or without the connection; only the weights training arrives at differ.

:func:`symbolic_skip_model` builds ``f^skip`` in SymPy on top of
:func:`attnxai.model.symbolic.symbolic_model`, :func:`symbolic_skip_difference` is what SymPy's derivative
minus the closed form simplifies to (zero), and :func:`gradient_closed_form` is the closed form for
a torch model (``tests/theory/test_theory_skip.py``: against autograd to 1e-12 in float64).
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp
import torch
from torch import Tensor

from .. import validate
from ..model.single_layer import AttentionClassifier
from ..model.symbolic import SymbolicModel, symbolic_model
from . import gradient_theorem

__all__ = ["SkipModel", "TERMS", "gradient_closed_form", "gradient_terms", "symbolic_skip_autodiff",
           "symbolic_skip_difference", "symbolic_skip_extra", "symbolic_skip_gradient",
           "symbolic_skip_model"]

TERMS = (*gradient_theorem.TERMS, "skip")


def gradient_terms(model: AttentionClassifier, ids: Tensor, target: int = 1) -> dict[str, Tensor]:
    """The theorem's terms (value, key, query: :func:`gradient_theorem.gradient_terms`) plus
    ``"skip"``: ``W_s[target]`` at ``[CLS]`` (position 0), zero elsewhere (and all zero for a
    model without the skip connection). (B, T, d_embed) each."""
    target = validate.target(target, model.n_classes)
    terms = gradient_theorem.gradient_terms(model, ids, target)
    skip = torch.zeros_like(terms["value"])
    if getattr(model, "skip", False):
        skip[:, 0] = model.W_s.detach()[target]
    terms["skip"] = skip
    return terms


def gradient_closed_form(model: AttentionClassifier, ids: Tensor, target: int = 1) -> Tensor:
    """``grad_{e_t} f_target`` of a model with or without the skip connection, from the closed
    form: (B, T, d_embed), the call of :func:`attnxai.explainers.gradient`."""
    return sum(gradient_terms(model, ids, target).values())


# ---------------------------------------------------------------------- SymPy
@dataclass
class SkipModel:
    """The symbolic model with the skip connection: ``base`` (the Section 2 network), ``W_s``
    (n_classes x d_embed symbols) and ``f = base.f + W_s e_1``."""

    base: SymbolicModel
    W_s: sp.Matrix
    f: sp.Matrix


def symbolic_skip_model(T: int = 3, d_embed: int = 2, d_attn: int = 1, d_value: int = 1,
                        n_heads: int = 1, n_classes: int = 1) -> SkipModel:
    """The network with the skip connection in SymPy (small sizes: see
    :func:`~attnxai.theory.gradient_theorem.symbolic_difference`)."""
    base = symbolic_model(T=T, d_embed=d_embed, d_attn=d_attn, d_value=d_value,
                          n_heads=n_heads, n_classes=n_classes)
    W_s = sp.Matrix(n_classes, d_embed,
                    lambda r, c: sp.Symbol(f"S_{{{r + 1}{c + 1}}}", real=True))
    return SkipModel(base=base, W_s=W_s, f=base.f + W_s * base.e[0])


def symbolic_skip_autodiff(sk: SkipModel, t: int, target: int = 0) -> sp.Matrix:
    """``d f^skip_target / d e_t`` by SymPy's differentiation (``d_embed x 1``)."""
    return sp.Matrix([sp.diff(sk.f[target, 0], s) for s in sk.base.e[t]])


def symbolic_skip_gradient(sk: SkipModel, t: int, target: int = 0) -> sp.Matrix:
    """The closed form: the Section 4 theorem plus ``W_s[target]^T`` at ``[CLS]`` (t = 0)."""
    out = gradient_theorem.symbolic_gradient(sk.base, t, target)
    if t == 0:
        out = out + sk.W_s[target, :].T
    return out


def symbolic_skip_difference(sk: SkipModel, t: int, target: int = 0) -> sp.Matrix:
    """SymPy's derivative minus the closed form, simplified: the zero vector."""
    diff = symbolic_skip_autodiff(sk, t, target) - symbolic_skip_gradient(sk, t, target)
    return diff.applyfunc(sp.simplify)


def symbolic_skip_extra(sk: SkipModel, t: int, target: int = 0) -> sp.Matrix:
    """What the skip connection adds to the gradient of token ``t``: SymPy's derivative of
    ``f^skip`` minus SymPy's derivative of ``f`` (simplified): ``W_s[target]^T`` at ``[CLS]``,
    zero for every word."""
    extra = symbolic_skip_autodiff(sk, t, target) - gradient_theorem.symbolic_autodiff(
        sk.base, t, target)
    return extra.applyfunc(sp.simplify)
