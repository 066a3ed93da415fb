"""The paper's per-token approximation of LIME on the attention classifier (Section 5, as the
authors' code ``quant_lime.py`` computes it).

For feature j at positions ``P_j``::

    beta_j ~ (3/2) (1/K) sum_i sum_{t in P_j} W_l^(i) (alpha_t^(i) v_t^(i) - alpha'_t^(i) v'_t^(i)),

``v'_t = W_v (W_e[UNK] + p_t)``, ``alpha'_t`` the [CLS] attention on position t in the document made
only of UNK (same length, the real document's [CLS] query).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..model.textmodel import Pretrained
from ..model.single_layer import AttentionClassifier
from .lime_inputs import resolve, tables

__all__ = ["lime_paper"]


def _softmax(s: np.ndarray) -> np.ndarray:
    s = s - s.max(axis=-1, keepdims=True)
    e = np.exp(s)
    return e / e.sum(axis=-1, keepdims=True)


def lime_paper(model: AttentionClassifier | Pretrained, ids, *, bow: bool = True, target: int = 1,
               features: Sequence[Sequence[int]] | None = None, factor: float = 1.5) -> np.ndarray:
    """The paper's approximation of LIME's coefficients, one per feature (lime's order).

    ``beta_j = factor * (1/K) sum_i sum_{t in P_j} (alpha_t w_t - alpha'_t w'_t)`` with
    ``w_t = W_l^(i) v_t^(i)`` (logit ``target``), ``alpha'`` and ``w'`` those of UNK at position t in
    the all-UNK document of the same length (``max_len`` for a ``padding="unk"`` model, as the
    authors' code) with the real document's [CLS] query. ``factor`` = 3/2 as in the paper.
    """
    model, arr, feats = resolve(model, ids, bow, features)
    tb = tables(model, arr, target)
    T = arr.size
    Lr = model.max_len if model.padding == "unk" else T  # length of the real (padded) document
    pos = np.arange(Lr)
    a_real = np.concatenate([tb.a_tok, np.repeat(tb.a_unk[:, None], Lr - T, axis=1)], axis=1)
    c_real = np.concatenate([tb.c_tok, np.repeat(tb.c_unk[:, None], Lr - T, axis=1)], axis=1)
    alpha = _softmax(a_real + tb.b[:, pos])
    w = c_real + tb.r[:, pos]
    s_unk = np.concatenate([tb.a_tok[:, :1], np.repeat(tb.a_unk[:, None], Lr - 1, axis=1)],
                           axis=1) + tb.b[:, pos]
    alpha_u = _softmax(s_unk)
    w_u = tb.c_unk[:, None] + tb.r[:, pos]
    per_pos = (alpha * w - alpha_u * w_u).mean(axis=0)[:T]
    return factor * np.array([per_pos[f].sum() for f in feats])
