"""LIME's limit by brute force, and where the closed forms hold: a map on small random models.

:func:`exact_limit` sums over all ``2^d`` perturbations of a short document (the model run on
every perturbed document, deleted or replaced as lime does) and solves ``Sigma^{-1} Gamma``
(:func:`attnxai.theory.lime_text.beta_exact`): LIME's ``n -> infinity`` limit with no
approximation, for ``d`` up to :data:`attnxai.theory.lime_text.MAX_ENUMERATE` features.

:func:`regime_map` measures, against it, the closed forms of
:func:`attnxai.theory.lime_limit` on random single-layer models, varying what decides whether
they hold: the number of words, the share of tokens that repeat an earlier word, and how much the
position codes weigh against the word embeddings (the embeddings are scaled by ``word_scale``;
the position code is the model's sinusoid).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import numpy as np
import torch

from .. import validate
from ..model.config import AttentionConfig
from ..model.single_layer import AttentionClassifier
from ..model.textmodel import Pretrained
from .lime_attention import document_features, lime_limit
from .lime_inputs import resolve
from .lime_text import DEFAULT_KERNEL_WIDTH, beta_exact

__all__ = ["APPROXIMATION_KWARGS", "default_errors", "exact_limit", "perturbed_outputs",
           "random_document", "random_model", "regime_map"]

#: The closed forms the map compares (``lime_limit`` keyword arguments; deletion).
APPROXIMATION_KWARGS = {
    "chain (lime's law)": {"law": "lime", "positions": "tokens", "ksub": 2},
    "binomial positions": {"law": "discrete", "positions": "binomial"},
    "chain, independent removal": {"law": "discrete", "positions": "tokens", "ksub": 2},
    "mean positions": {"law": "discrete", "positions": "mean"},
}


def perturbed_outputs(model: AttentionClassifier, ids: np.ndarray, features, Z: np.ndarray,
                      bow: bool, target: int = 1, head: int | None = None) -> np.ndarray:
    """The model's logit ``target`` (float64) on every perturbation (rows of ``Z``: 1 = feature
    kept): deleted features vanish (``bow=True``), replaced ones become UNK in place. ``head``:
    that head's own output instead of the mean over heads."""
    ids = np.asarray(ids)
    seqs = []
    for z in Z:
        keep = np.ones(ids.size, bool)
        for j, f in enumerate(features):
            if z[j] == 0:
                keep[np.asarray(f)] = False
        if bow:
            seqs.append(ids[keep].tolist())
        else:
            x = ids.copy()
            x[~keep] = model.unk_id
            seqs.append(x.tolist())
    m = model if next(model.parameters()).dtype == torch.float64 else _double(model)
    with torch.no_grad():
        if head is not None:
            return m(m.collate(seqs), per_head=True)[:, head, target].double().numpy()
        return m(m.collate(seqs))[:, target].double().numpy()


def _double(model: AttentionClassifier) -> AttentionClassifier:
    import copy

    return copy.deepcopy(model).double().eval()


def exact_limit(model: AttentionClassifier | Pretrained, ids, features=None, *, bow: bool = True,
                kernel_width: float = DEFAULT_KERNEL_WIDTH, target: int = 1) -> np.ndarray:
    """LIME's limit by enumerating the ``2^d`` perturbations (``d`` features, at most 20). Takes
    what :func:`~attnxai.theory.lime_limit` takes (a Pretrained and a text, coefficients in
    ``fastlime.explain_instance(pre, text).words`` order; or the model and ids, with
    ``features``), checked the same way."""
    model, ids, feats = resolve(model, ids, bow, features)
    bow = validate.bow(bow)
    target = validate.target(target, model.n_classes)
    return beta_exact(lambda Z: perturbed_outputs(model, ids, feats, Z, bow, target),
                      len(feats), kernel_width)[1]


def random_model(seed: int, *, vocab: int = 64, n_heads: int = 2, d_embed: int = 16,
                 max_len: int = 40, scale: float = 1.0, word_scale: float = 1.0
                 ) -> AttentionClassifier:
    """A float64 single-layer model with weights U(-scale, scale) (query, key, value, output) and
    word embeddings N(0, 1) times ``word_scale`` (the position code is the model's sinusoid)."""
    torch.manual_seed(seed)
    m = AttentionClassifier(AttentionConfig(vocab, d_embed=d_embed, d_attn=8, d_value=8,
                                            n_heads=n_heads, max_len=max_len))
    with torch.no_grad():
        for w in (m.W_q, m.W_k, m.W_v, m.W_l):
            w.uniform_(-scale, scale)
        m.W_e.mul_(word_scale)
    return m.double().eval()


def random_document(seed: int, n_words: int, n_tokens: int, vocab: int = 64) -> np.ndarray:
    """``[CLS]`` and ``n_tokens`` tokens using exactly ``n_words`` distinct words (ids 3..),
    each at least once, the extra occurrences drawn uniformly among them, in random order."""
    if not 1 <= n_words <= n_tokens:
        raise ValueError(f"need 1 <= n_words <= n_tokens, got {n_words}, {n_tokens}")
    rng = np.random.default_rng(seed)
    words = rng.choice(np.arange(3, vocab), n_words, replace=False)
    body = np.concatenate([words, rng.choice(words, n_tokens - n_words)])
    return np.concatenate([[1], rng.permutation(body)]).astype(np.int64)


def _position_weight(model: AttentionClassifier, ids: np.ndarray) -> float:
    """How much positions weigh against words in the attention scores: the spread (std) of the
    position part over the document's positions over that of the word part over its tokens,
    averaged over heads."""
    from .lime_inputs import tables

    tb = tables(model, ids)
    T = ids.size
    pos = tb.b[:, 1:T].std(axis=1)
    word = tb.a_tok[:, 1:].std(axis=1)
    return float(np.mean(pos / np.maximum(word, 1e-12)))


def regime_map(n_words: Sequence[int] = (6, 8, 10), repeat_shares: Sequence[float] = (0.0, 0.3, 0.5),
               word_scales: Sequence[float] = (0.3, 1.0, 3.0), seeds: Sequence[int] = (0, 1),
               kernel_width: float = DEFAULT_KERNEL_WIDTH, approximations: dict | None = None):
    """Deletion on random models: the relative error ``|approx - exact| / |exact|`` of each closed
    form (:data:`APPROXIMATION_KWARGS`) for every combination of words ``d``, share of repeated
    tokens (``n_tokens = round(d / (1 - share))``), word-embedding scale and seed. One row per
    (configuration, approximation): a pandas DataFrame with ``d``, ``n_tokens``, ``share_asked``,
    ``repeated_share`` (measured: ``1 - d / n_tokens``), ``word_scale``, ``position_weight``
    (:func:`_position_weight`), ``seed``, ``approximation``, ``relative_error``."""
    import pandas as pd

    approximations = dict(APPROXIMATION_KWARGS if approximations is None else approximations)
    rows = []
    for d, share, ws, seed in itertools.product(n_words, repeat_shares, word_scales, seeds):
        n_tokens = int(round(d / (1.0 - share)))
        model = random_model(1000 * seed + int(100 * ws), word_scale=ws)
        ids = random_document(seed * 7919 + d * 31 + n_tokens, d, n_tokens)
        feats = document_features(ids[1:].tolist(), True)
        exact = exact_limit(model, ids, feats, bow=True, kernel_width=kernel_width)
        norm = float(np.linalg.norm(exact))
        base = {"d": d, "n_tokens": n_tokens, "share_asked": share,
                "repeated_share": 1 - d / n_tokens,
                "word_scale": ws, "position_weight": _position_weight(model, ids), "seed": seed}
        for name, kw in approximations.items():
            got = lime_limit(model, ids, bow=True, kernel_width=kernel_width, features=feats, **kw)
            rows.append(base | {"approximation": name,
                                "relative_error": float(np.linalg.norm(got - exact)) / norm
                                if norm > 0 else math.nan})
    return pd.DataFrame(rows)


def default_errors(bow: bool) -> np.ndarray:
    """The relative errors (norm 2) against :func:`exact_limit` of the approximations
    :func:`lime_limit` falls back on (the binomial positions, its default beyond the exact
    route's budget; independent removal, its default for replacement), on random models (what
    :data:`attnxai.theory.lime_attention.MEASURED_ERRORS` states): deletion, the binomial
    positions on the documents of chapter 6's regime map with repeated words (6 to 12 words, a
    quarter or half of the tokens repeated, 72 documents); replacement, independent removal on
    its documents of 6 to 8 words and up to 11 tokens (36 documents)."""
    import warnings

    from .lime_attention import LimitApproximationWarning

    words, shares = ((6, 8, 10, 12), (0.25, 0.5)) if bow else ((6, 8), (0.0, 0.25))
    errors = []
    for d, share, ws, seed in itertools.product(words, shares, (0.3, 1.0, 3.0), (0, 1, 2)):
        n_tokens = int(round(d / (1.0 - share)))
        model = random_model(1000 * seed + int(100 * ws), word_scale=ws)
        ids = random_document(seed * 7919 + d * 31 + n_tokens, d, n_tokens)
        feats = document_features(ids[1:].tolist(), bow)
        exact = exact_limit(model, ids, feats, bow=bow)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", LimitApproximationWarning)
            # deletion: the binomial positions by name (the default is exact on these documents)
            got = lime_limit(model, ids, bow=bow, features=feats,
                             **({"positions": "binomial"} if bow else {}))
        errors.append(float(np.linalg.norm(got - exact) / np.linalg.norm(exact)))
    return np.asarray(errors)
