"""The Section 2 classifier built in SymPy, with symbolic weights and embeddings.

Small dimensions keep the expressions readable; every chapter derives its theorem on this
object and then checks the torch model against it. Indices follow the paper: tokens
``t = 1..T`` (``t = 1`` is ``[CLS]``), heads ``i = 1..K``.

>>> sm = symbolic_model(T=3, d_embed=2, d_attn=1, d_value=1, n_heads=1)
>>> sm.f.shape
(1, 1)
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import sympy as sp
import torch

from .config import AttentionConfig
from .single_layer import AttentionClassifier


@dataclass
class SymbolicModel:
    """Symbols and expressions of the network; lists are indexed by head then token.

    ``e[t]`` (d_embed x 1) are the embeddings after position encoding; ``W_q[i]`` ... ``W_l[i]``
    the per-head matrices; ``alpha[i][t]`` the attention of ``[CLS]`` on token ``t``;
    ``token_scores[i][t] = W_l^(i) v_t^(i)``; ``head_out[i] = W_l^(i) v~^(i)``; ``f`` the logits
    (n_classes x 1).
    """

    T: int
    d_embed: int
    d_attn: int
    d_value: int
    n_heads: int
    n_classes: int
    e: list[sp.Matrix]
    W_q: list[sp.Matrix]
    W_k: list[sp.Matrix]
    W_v: list[sp.Matrix]
    W_l: list[sp.Matrix]
    q1: list[sp.Matrix] = field(default_factory=list)
    k: list[list[sp.Matrix]] = field(default_factory=list)
    v: list[list[sp.Matrix]] = field(default_factory=list)
    scores: list[list[sp.Expr]] = field(default_factory=list)
    alpha: list[list[sp.Expr]] = field(default_factory=list)
    v_tilde: list[sp.Matrix] = field(default_factory=list)
    token_scores: list[list[sp.Matrix]] = field(default_factory=list)
    head_out: list[sp.Matrix] = field(default_factory=list)
    f: sp.Matrix = field(default_factory=lambda: sp.zeros(1, 1))

    def weight_symbols(self) -> list[sp.Symbol]:
        out: list[sp.Symbol] = []
        for mats in (self.W_q, self.W_k, self.W_v, self.W_l):
            for m in mats:
                out.extend(m)
        return out

    def embedding_symbols(self) -> list[sp.Symbol]:
        return [s for col in self.e for s in col]

    def values_from_torch(self, model: AttentionClassifier, e: torch.Tensor) -> dict[sp.Symbol, float]:
        """Map every symbol to the value it has in ``model`` for embeddings ``e`` (T, d_embed)."""
        if e.shape != (self.T, self.d_embed):
            raise ValueError(f"e must have shape ({self.T}, {self.d_embed}), got {tuple(e.shape)}")
        vals: dict[sp.Symbol, float] = {}
        for name in ("W_q", "W_k", "W_v", "W_l"):
            weights = getattr(model, name).detach().double().numpy()
            for i, m in enumerate(getattr(self, name)):
                for (r, c), s in np.ndenumerate(np.array(m, dtype=object)):
                    vals[s] = float(weights[i, r, c])
        en = e.detach().double().numpy()
        for t, col in enumerate(self.e):
            for j, s in enumerate(col):
                vals[s] = float(en[t, j])
        return vals

    def lambdify(self, expr: sp.Expr | sp.Matrix):
        """A numpy function of (weights..., embeddings...) in :meth:`symbols` order.

        Memoised per expression object: lambdifying a large expression takes seconds."""
        cache = self.__dict__.setdefault("_lambdified", {})
        key = id(expr)
        if key not in cache or cache[key][0] is not expr:
            cache[key] = (expr, sp.lambdify(self.symbols(), expr, modules="numpy", cse=True))
        return cache[key][1]

    def symbols(self) -> list[sp.Symbol]:
        return self.weight_symbols() + self.embedding_symbols()

    def evaluate(self, expr: sp.Expr | sp.Matrix, model: AttentionClassifier, e: torch.Tensor) -> np.ndarray:
        """``expr`` evaluated in float64 at the weights of ``model`` and embeddings ``e``."""
        vals = self.values_from_torch(model, e)
        fn = self.lambdify(expr)
        return np.asarray(fn(*[vals[s] for s in self.symbols()]), dtype=float)


def _matrix(name: str, rows: int, cols: int, **assumptions) -> sp.Matrix:
    return sp.Matrix(rows, cols, lambda r, c: sp.Symbol(f"{name}_{{{r + 1}{c + 1}}}", **assumptions))


def symbolic_model(T: int = 3, d_embed: int = 2, d_attn: int = 2, d_value: int = 2,
                   n_heads: int = 2, n_classes: int = 1) -> SymbolicModel:
    """Build the network with fully symbolic weights and embeddings (all real)."""
    if min(T, d_embed, d_attn, d_value, n_heads, n_classes) < 1:
        raise ValueError("all dimensions must be >= 1")
    sup = (lambda i: f"^{{({i + 1})}}") if n_heads > 1 else (lambda i: "")
    e = [sp.Matrix(d_embed, 1, lambda r, c, t=t: sp.Symbol(f"e_{{{t + 1},{r + 1}}}", real=True))
         for t in range(T)]
    W_q = [_matrix(f"Q{sup(i)}", d_attn, d_embed, real=True) for i in range(n_heads)]
    W_k = [_matrix(f"K{sup(i)}", d_attn, d_embed, real=True) for i in range(n_heads)]
    W_v = [_matrix(f"V{sup(i)}", d_value, d_embed, real=True) for i in range(n_heads)]
    W_l = [_matrix(f"L{sup(i)}", n_classes, d_value, real=True) for i in range(n_heads)]
    sm = SymbolicModel(T, d_embed, d_attn, d_value, n_heads, n_classes, e, W_q, W_k, W_v, W_l)
    f = sp.zeros(n_classes, 1)
    for i in range(n_heads):
        q1 = W_q[i] * e[0]
        k = [W_k[i] * e[t] for t in range(T)]
        v = [W_v[i] * e[t] for t in range(T)]
        scores = [(q1.T * k[t])[0, 0] / sp.sqrt(d_attn) for t in range(T)]
        denom = sum(sp.exp(s) for s in scores)
        alpha = [sp.exp(s) / denom for s in scores]
        v_tilde = sum((alpha[t] * v[t] for t in range(T)), sp.zeros(d_value, 1))
        sm.q1.append(q1)
        sm.k.append(k)
        sm.v.append(v)
        sm.scores.append(scores)
        sm.alpha.append(alpha)
        sm.v_tilde.append(v_tilde)
        sm.token_scores.append([W_l[i] * v[t] for t in range(T)])
        sm.head_out.append(W_l[i] * v_tilde)
        f += W_l[i] * v_tilde
    sm.f = f / n_heads
    return sm


def tiny_torch_model(sm: SymbolicModel, vocab_size: int = 11, seed: int = 0) -> AttentionClassifier:
    """A float64 torch model with the dimensions of ``sm`` and random weights (for checks)."""
    torch.manual_seed(seed)
    model = AttentionClassifier(AttentionConfig(
        vocab_size, d_embed=sm.d_embed, d_attn=sm.d_attn, d_value=sm.d_value, n_heads=sm.n_heads,
        max_len=max(sm.T, 8), n_classes=sm.n_classes))
    with torch.no_grad():  # larger weights than the U(-0.1, 0.1) init, so attention is not flat
        for p in (model.W_q, model.W_k, model.W_v, model.W_l):
            p.uniform_(-1.0, 1.0)
    return model.double().eval()
