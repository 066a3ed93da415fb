"""Shapley and Banzhaf values of the words of the attention classifier, in closed form.

**The game.** The players are lime's features of a document (``d`` distinct words deleted with
all their occurrences, ``bow=True``; or ``d`` positions replaced by UNK in place, ``bow=False``);
a coalition ``S`` is the document with the features of ``S`` kept and the others removed, and its
value ``v(S)`` is the explained logit. The Shapley value and the Banzhaf value of feature ``j``
are ::

    phi_j  = sum_{S not containing j} s! (d - 1 - s)! / d! [v(S + j) - v(S)]      (s = |S|)
    beta_j = 2^-(d - 1) sum_{S not containing j} [v(S + j) - v(S)]

**One curve, three weightings** (chapter 9). Keep every feature independently with probability
``p``: the effect ``delta_j(p) = E[v | z_j = 1] - E[v | z_j = 0] = sum_S p^s (1 - p)^(d-1-s)
[v(S + j) - v(S)]`` is a polynomial of degree ``d - 1`` in ``p`` (the multilinear extension,
Owen 1972). The Beta integral ``int_0^1 p^s (1 - p)^(d-1-s) dp = s! (d-1-s)! / d!`` gives ::

    phi_j = int_0^1 delta_j(p) dp,        beta_j = delta_j(1/2),

and LIME's large-sample limit averages the same curve, centred, with lime's kernel-weighted law
of ``p`` (:func:`attnxai.theory.lime_text.beta_from_effects`;
:func:`attnxai.theory.shapley_weights.weight_functions`).

**Two exact routes.**

* ``method="chain"``: group the coalitions by size. With ``A_m`` the mean of ``v`` over the
  coalitions of size ``m`` and ``B_m(j)`` the mean over those of size ``m`` that contain ``j``,
  ``phi_j = sum_{m=1}^{d-1} B_m(j) / (d - m) + v(all) / d - sum_{m=0}^{d-1} A_m / (d - m)``.
  lime's chain (:mod:`attnxai.theory.lime_chain`) computes ``on_j = sum_m omega_m (m / d)
  B_m(j)`` for any weights ``omega`` of the sizes; with :func:`size_weights`
  (``omega_m = d / (m (d - m))``, ``omega_d = 1 / d``) ::

      phi_j = on_j - mean_k on_k + (v(all) - v(empty)) / d

  One pass of the chain, the cost of LIME's exact limit: no quadrature in ``p`` at all, only the
  lambda rule of ``1/N`` (:mod:`attnxai.theory.lime_quadrature`), and the efficiency axiom
  ``sum_j phi_j = v(all) - v(empty)`` holds by construction. Exact for replacement, and for
  deletion when the document's words are distinct (the chain's state is the number of tokens
  kept so far, which fixes every kept token's position).
* ``method="gauss"``: ``phi_j = sum_i w_i delta_j(p_i)``, Gauss-Legendre on [0, 1]: exact with
  ``ceil(d/2)`` nodes (the curve is a polynomial of degree ``d - 1``), and in practice far fewer
  (the curve is smooth). ``delta_j(p)`` at a node: replacement, the product over features of
  :func:`~attnxai.theory.lime_kernels.bernoulli_sums` (exact); deletion, the chain at fixed
  ``p`` (distinct words, exact) or the binomial positions (a word that occurs several times,
  :mod:`~attnxai.theory.lime_binomial`: an approximation, the only route here for such
  documents, whose positions no count can follow).

Both use the doubling rule in lambda (``ksub`` steps per octave; each expectation's relative
error: :data:`~attnxai.theory.lime_quadrature.RULE_ERRORS`, 9.9e-6 at 1 and 9.2e-12 at 2). The
values' error against a 40-digit reference (:data:`MEASURED_EXACTNESS`,
``book/data/accuracy_bounds.csv``: the largest error relative to the largest value, 64 random
models with 4 to 10 distinct words, both removals): with the defaults, median 6.1e-12, worst
6.7e-11.

**Defaults and their errors** (measured, ``benchmarks/bench_shapley.py`` and chapter 9):

* replacement: ``"gauss"`` with ``min(ceil(d/2), 25)`` nodes and ``ksub=2``: exact in ``p`` up to
  ``d = 50`` (Gauss-Legendre with ``n`` nodes integrates a polynomial of degree ``2n - 1``); on
  255-token documents beyond it, within 1.1e-10 of the largest value (median 5.6e-12) of the
  chain with ``ksub=3``, exact in ``p`` (8 random models, ``book/data/accuracy_bounds.csv``), at
  about the cost of LIME's limit. The 25 nodes' error depends on the weights: on trained models
  it reached 1.8e-9 (20 reviews of 255 tokens on each of six cached models, median 7.7e-12; the
  worst on the quick model of seed 42; ``benchmarks/shapley_nodes_trained.py``), so
  efficiency holds to that error, not to rounding.
  ``method="chain"`` (about 4x the time at ``d = 255``) or ``n_nodes=ceil(d/2)`` is exact in
  ``p`` on any weights;
* deletion with distinct words: ``"chain"`` with ``ksub=2``;
* deletion with a repeated word: the exact route (every configuration of the repeated words,
  :mod:`~attnxai.theory.deletion_routes`, ``ksub=2``) when its cost fits ``budget``; beyond it,
  ``"gauss"`` with the binomial positions, 40 nodes and ``ksub=1`` (the approximation itself is
  what limits it: :data:`MEASURED_ERRORS`), with a warning;
  ``positions="sampled"``: the certified estimate, within ``tol`` with probability 95 %
  (:func:`attnxai.theory.deletion_game` reports its 95 % intervals).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .. import validate
from ..model.single_layer import AttentionClassifier
from ..model.textmodel import Pretrained
from ..threads import one_blas_thread
from .deletion_routes import (BINOMIAL_ERRORS, SamplingSettings, binomial_error_text,
                              deletion_values, exact_cost, sampled_cost_text, size_weights)
from .lime_chain import chain_profile, chain_sums, replace_terms
from .lime_binomial import binomial_effects
from .lime_inputs import Tables, feature_owner, resolve, tables
from .lime_kernels import BernoulliTerms, ProfileNodes, bernoulli_sums
from .lime_quadrature import lambda_rule_doubling
from .shapley_weights import gauss_nodes

__all__ = ["Curves", "DEFAULT_NODES", "MEASURED_ERRORS", "MEASURED_EXACTNESS", "SHAPLEY_METHODS",
           "banzhaf", "banzhaf_heads", "effect_curves", "endpoint_values", "shapley",
           "shapley_heads", "size_weights"]

#: The routes of :func:`shapley` (module docstring).
SHAPLEY_METHODS = ("chain", "gauss")
#: Gauss-Legendre nodes of ``method="gauss"`` by removal (replacement: at most this many, fewer
#: when ``ceil(d/2)`` is exact already).
DEFAULT_NODES = {"replace": 25, "delete": 40}
#: Steps per octave of the lambda rule (:func:`~attnxai.theory.lime_quadrature.
#: lambda_rule_doubling`): 2 for the exact routes (the values' error: :data:`MEASURED_EXACTNESS`),
#: 1 for the binomial positions (an approximation whose own error, :data:`MEASURED_ERRORS`, is far
#: larger than ksub=1's).
DEFAULT_KSUB = {"exact": 2, "binomial": 1}
#: The Shapley values' error (distinct words under deletion, any document under replacement)
#: against a 40-digit reference, ``max_j |error_j| / max_j |phi_j|``, on the population "random
#: models, distinct words" of ``book/data/accuracy_bounds.csv`` (``book/data/
#: make_accuracy_bounds.py``): ``{ksub or "default": (median, worst, cases)}``, the worst rounded
#: up (``tests/book/test_quoted_bounds.py``).
MEASURED_EXACTNESS = {"default": (6.1e-12, 6.7e-11, 64), 1: (5.3e-06, 4.0e-05, 64),
                      2: (6.1e-12, 6.7e-11, 64), 3: (8.0e-13, 5.6e-11, 64)}
#: The binomial positions' error (deletion with a repeated word) against the exact route, by
#: population: :data:`attnxai.theory.deletion_routes.BINOMIAL_ERRORS` ("curves": the effects at
#: any ``p``, whose integral, Shapley, is the measured summary).
MEASURED_ERRORS = {"Shapley": BINOMIAL_ERRORS["Shapley"], "Banzhaf": BINOMIAL_ERRORS["Banzhaf"],
                   "curves": BINOMIAL_ERRORS["Shapley"]}
#: The positions of deletion :func:`shapley` follows: ``"exact"`` (distinct words: the chain;
#: a repeated word: every configuration of the repeated words,
#: :mod:`~attnxai.theory.deletion_routes`), ``"sampled"`` (its certified estimate),
#: ``"binomial"`` (the approximation), ``"tokens"`` (each occurrence its own player, summed per
#: word: the tokens' game, not the words').
GAME_POSITIONS = ("exact", "sampled", "binomial", "tokens")


# ---------------------------------------------------------------------- settings
@dataclass(frozen=True)
class _Game:
    tb: Tables
    feats: list
    removal: str
    positions: str
    distinct: bool
    sampling: SamplingSettings

    @property
    def repeats(self) -> bool:
        """Deletion with a repeated word by the configurations' route (exact or sampled)."""
        return (self.removal == "delete" and not self.distinct
                and self.positions in ("exact", "sampled"))

    def values(self, value: str, **kw) -> np.ndarray:
        """(K, ...) heads of :func:`~attnxai.theory.deletion_routes.deletion_values`."""
        return deletion_values(self.tb, self.feats, value, route=self.positions,
                               sampling=self.sampling, **kw).heads


def _game(model, ids, bow, target, features, positions, value: str,
          sampling: SamplingSettings | None) -> _Game:
    sampling = SamplingSettings.of(sampling)
    model, arr, feats = resolve(model, ids, bow, features)
    removal = "delete" if validate.bow(bow) else "replace"
    distinct = all(np.asarray(f).size == 1 for f in feats)
    if positions is None:
        positions = "exact"
        if removal == "delete" and not distinct and exact_cost(feats, arr.size) > \
                sampling.budget:
            positions = "binomial"
            _warn_binomial(value)
    validate.choice(positions, "positions", GAME_POSITIONS)
    if removal == "replace" or distinct:
        positions = "exact"                    # one configuration: every route is the chain
    elif positions == "tokens":
        positions = "tokens"
    if removal == "delete" and model.padding == "unk":
        raise NotImplementedError("deletion with padding='unk' (the authors' UNK padding) moves "
                                  "the padding too; use bow=False or a masked model")
    return _Game(tables(model, arr, target), feats, removal, positions, distinct, sampling)


def _warn_binomial(value: str) -> None:
    """The defaults answer deletion with a repeated word by the binomial positions: say so, with
    the error chapter 9 measures (:data:`MEASURED_ERRORS`), as :func:`~attnxai.theory.lime_limit`
    does for its approximations."""
    import warnings

    from ..errors import stacklevel
    from .lime_attention import LimitApproximationWarning

    warnings.warn(
        f"a word of this document repeats, and under deletion (bow=True) the exact route of the "
        f"{value} values (every configuration of the repeated words) costs more than its budget: "
        f"the answer uses the binomial-position approximation (attnxai.theory.lime_binomial); "
        f"{binomial_error_text('Shapley' if value == 'curves' else value)}. Exact: positions='exact' (any cost); a certified "
        f"estimate: positions='sampled' (to tol with probability 95 %: attnxai.theory."
        f"deletion_game gives its 95 % intervals; {sampled_cost_text('Shapley' if value == 'curves' else value)}); passing positions='binomial' chooses the approximation without this warning",
        LimitApproximationWarning, stacklevel=stacklevel())


def _word_sums(cols: np.ndarray, feats: list) -> np.ndarray:
    """(K, T - 1) per-token columns -> (K, d) per feature (sum over its tokens)."""
    owner = feature_owner(feats, cols.shape[1] + 1)
    return np.stack([np.bincount(owner, row, len(feats)) for row in cols])


# ---------------------------------------------------------------------- the game's two ends
def _replace_value(tb: Tables, kept: np.ndarray) -> np.ndarray:
    """Every head's output (K,) on the document with the positions ``kept`` ((T,) bool, [CLS]
    always kept) holding their words and the others UNK."""
    T = tb.T
    pos = np.arange(T)
    s = np.where(kept[None], tb.a_tok + tb.b[:, pos], tb.a_unk[:, None] + tb.b[:, pos])
    v = np.where(kept[None], tb.c_tok + tb.r[:, pos], tb.c_unk[:, None] + tb.r[:, pos])
    s[:, 0], v[:, 0] = tb.a_tok[:, 0] + tb.b[:, 0], tb.c_tok[:, 0] + tb.r[:, 0]
    if tb.padding == "unk":                       # the UNK fill up to max_len takes part
        pp = np.arange(T, tb.max_len)
        s = np.concatenate([s, tb.a_unk[:, None] + tb.b[:, pp]], axis=1)
        v = np.concatenate([v, tb.c_unk[:, None] + tb.r[:, pp]], axis=1)
    e = np.exp(s - s.max(axis=1, keepdims=True))
    return (e * v).sum(axis=1) / e.sum(axis=1)


def endpoint_values(tb: Tables, removal: str) -> tuple[np.ndarray, np.ndarray]:
    """``(v(all), v(empty))`` per head (K,) each: the document, and the document with every
    feature removed ([CLS] alone for deletion, every word UNK for replacement)."""
    full = _replace_value(tb, np.ones(tb.T, bool))
    if removal == "delete":
        return full, tb.c_tok[:, 0] + tb.r[:, 0]          # softmax over [CLS] alone
    none = np.zeros(tb.T, bool)
    none[0] = True
    return full, _replace_value(tb, none)


# ---------------------------------------------------------------------- the routes
def _chain_shapley(g: _Game, ksub: int) -> np.ndarray:
    """(K, d) by the size-weighted chain (module docstring)."""
    n = g.tb.T - 1 if g.removal == "delete" else len(g.feats)
    on = chain_sums(g.tb, g.feats, g.removal, size_weights(n), ksub)
    full, empty = endpoint_values(g.tb, g.removal)
    cols = on[:, 1:]
    phi = cols - cols.mean(axis=1, keepdims=True) + ((full - empty) / n)[:, None]
    if g.removal == "delete" and not g.distinct:   # positions="tokens": the tokens' game, per word
        return _word_sums(phi, g.feats)
    return phi


def _replace_effects(tb: Tables, feats: list, nodes: np.ndarray, ksub: int
                     ) -> tuple[np.ndarray, np.ndarray]:
    """Replacement: ``delta`` (K, n_nodes, d) and ``Phi`` (K, n_nodes) by the product over
    features (:func:`~attnxai.theory.lime_kernels.bernoulli_sums`) with the doubling rule in
    lambda (:data:`~attnxai.theory.lime_quadrature.RULE_ERRORS`)."""
    K, d = tb.n_heads, len(feats)
    delta, phi = np.zeros((K, nodes.size, d)), np.zeros((K, nodes.size))
    with one_blas_thread():
        for k in range(K):
            tm = replace_terms(tb, feats, k)
            rule = lambda_rule_doubling(tm["n_min"], tm["n_max"], ksub)
            bernoulli_sums(BernoulliTerms(tm["gk"][None], tm["hk"][None], tm["gr"], tm["hr"],
                                          tm["h0"]),
                           ProfileNodes(nodes, rule.lam, rule.with_offset(tm["g0"])),
                           delta[k], phi[k])
    return delta, phi


def _effects(g: _Game, nodes: np.ndarray, ksub: int) -> tuple[np.ndarray, np.ndarray]:
    """``delta`` (K, n_nodes, d) per feature and ``Phi`` (K, n_nodes) at the kept fractions
    ``nodes``."""
    nodes = np.ascontiguousarray(nodes, dtype=float)
    if g.removal == "replace":
        return _replace_effects(g.tb, g.feats, nodes, ksub)
    if g.positions in ("exact", "tokens"):
        delta, phi = chain_profile(g.tb, nodes, ksub)               # one column per token
        if not g.distinct:
            delta = np.stack([_word_sums(delta[:, i], g.feats) for i in range(nodes.size)],
                             axis=1)
        return delta, phi
    return binomial_effects(g.tb, g.feats, nodes, ksub)


def _defaults(g: _Game, method, n_nodes, ksub):
    if method is None:
        method = "chain" if (g.removal == "delete" and g.positions in ("exact", "tokens")) \
            else "gauss"
    validate.choice(method, "method", SHAPLEY_METHODS)
    if method == "chain" and g.removal == "delete" and g.positions == "binomial":
        raise ValueError(f"method='chain' follows the positions exactly: positions="
                         f"{g.positions!r} needs method='gauss'")
    d = len(g.feats)
    if n_nodes is None:
        cap = DEFAULT_NODES[g.removal]
        n_nodes = min(max(1, math.ceil(d / 2)), cap) if g.removal == "replace" else cap
    n_nodes = validate.positive_int(n_nodes, "n_nodes")
    if ksub is None:
        ksub = DEFAULT_KSUB["binomial" if g.positions == "binomial" else "exact"]
        if g.positions == "sampled":
            ksub = 1          # unused there: the sampled route evaluates the model itself
    return method, n_nodes, validate.positive_int(ksub, "ksub")


# ---------------------------------------------------------------------- public
def shapley_heads(model: AttentionClassifier | Pretrained, ids, *, bow: bool = True,
                  target: int = 1, features=None, positions: str | None = None,
                  method: str | None = None, n_nodes: int | None = None, ksub: int | None = None,
                  sampling: SamplingSettings | None = None) -> np.ndarray:
    """:func:`shapley` of each head's own output: (K, d); their mean over heads is
    :func:`shapley` (the Shapley value is linear in the game)."""
    g = _game(model, ids, bow, target, features, positions, "Shapley", sampling)
    method, n_nodes, ksub = _defaults(g, method, n_nodes, ksub)
    if g.repeats:
        return g.values("shapley", ksub=ksub)
    if method == "chain":
        return _chain_shapley(g, ksub)
    nodes, w = gauss_nodes(n_nodes)
    delta, _ = _effects(g, nodes, ksub)
    return np.einsum("i,kij->kj", w, delta)


def shapley(model: AttentionClassifier | Pretrained, ids, *, bow: bool = True, target: int = 1,
            features=None, positions: str | None = None, method: str | None = None,
            n_nodes: int | None = None, ksub: int | None = None,
            sampling: SamplingSettings | None = None) -> np.ndarray:
    """The Shapley values of lime's features for the logit ``target``: (d,) float64.

    Inputs as :func:`attnxai.theory.lime_limit`: ``shapley(pre, text)`` (a text in
    :func:`attnxai.normalize_for_lime` form) gives one value per word of
    ``fastlime.explain_instance(pre, text).words``, in that order; ``shapley(pre.model, ids)``
    one per distinct id (or per group of ``features``, a partition of positions 1..T-1).
    ``bow=True`` deletes a word with all its occurrences, ``bow=False`` replaces positions by UNK.

    ``method``: ``"chain"`` (exact in ``p``) or ``"gauss"`` (``n_nodes`` Gauss-Legendre nodes in
    ``p``); ``positions`` (deletion): ``"exact"`` or ``"binomial"``; ``ksub``: the lambda rule's
    steps per octave; ``sampling`` (:class:`~attnxai.theory.deletion_routes.SamplingSettings`,
    None: the defaults): deletion's budget for the exact route with a repeated word and the
    sampled route's ``tol`` and ``seed``. Defaults and their measured errors
    in the module docstring. ``sum(phi) = v(all) - v(empty)`` (the efficiency axiom): by
    construction with the chain, to the quadrature's error with Gauss.
    """
    return shapley_heads(model, ids, bow=bow, target=target, features=features,
                         positions=positions, method=method, n_nodes=n_nodes,
                         ksub=ksub, sampling=sampling).mean(axis=0)


def banzhaf_heads(model: AttentionClassifier | Pretrained, ids, *, bow: bool = True,
                  target: int = 1, features=None, positions: str | None = None,
                  ksub: int | None = None,
                  sampling: SamplingSettings | None = None) -> np.ndarray:
    """:func:`banzhaf` of each head's own output: (K, d)."""
    g = _game(model, ids, bow, target, features, positions, "Banzhaf", sampling)
    _, _, ksub = _defaults(g, "gauss", 1, ksub)
    if g.repeats:
        return g.values("effects", p=0.5, ksub=ksub)[:, 1:]
    delta, _ = _effects(g, np.array([0.5]), ksub)
    return delta[:, 0]


def banzhaf(model: AttentionClassifier | Pretrained, ids, *, bow: bool = True, target: int = 1,
            features=None, positions: str | None = None, ksub: int | None = None,
            sampling: SamplingSettings | None = None) -> np.ndarray:
    """The Banzhaf values ``delta_j(1/2)`` of lime's features: (d,) float64 (inputs, settings
    and routes as :func:`shapley`)."""
    return banzhaf_heads(model, ids, bow=bow, target=target, features=features,
                         positions=positions, ksub=ksub, sampling=sampling).mean(axis=0)


@dataclass
class Curves:
    """The effects at kept fractions ``p`` (n_p,): ``delta`` (n_p, d) and ``phi`` (n_p,) (the
    mean output ``E[v]``) averaged over heads, and per head (``delta_heads`` (K, n_p, d),
    ``phi_heads`` (K, n_p)); ``features``: the positions of each column."""

    p: np.ndarray
    delta: np.ndarray
    phi: np.ndarray
    delta_heads: np.ndarray
    phi_heads: np.ndarray
    features: list = field(default_factory=list)


def effect_curves(model: AttentionClassifier | Pretrained, ids, p, *, bow: bool = True,
                  target: int = 1, features=None, positions: str | None = None,
                  ksub: int | None = None,
                  sampling: SamplingSettings | None = None) -> Curves:
    """``delta_j(p) = E[v | z_j = 1] - E[v | z_j = 0]`` and ``E[v]`` at the kept fractions ``p``
    (every feature kept independently with probability ``p``; inputs and settings as
    :func:`shapley`): the curve whose integral is the Shapley value, whose value at 1/2 is the
    Banzhaf value and whose lime-weighted, centred average is LIME's limit."""
    g = _game(model, ids, bow, target, features, positions, "curves", sampling)
    _, _, ksub = _defaults(g, "gauss", 1, ksub)
    p = np.atleast_1d(np.asarray(p, dtype=float))
    if p.ndim != 1 or p.size == 0 or np.any((p < 0) | (p > 1)) or not np.all(np.isfinite(p)):
        raise ValueError("p must be a non-empty 1-D array of kept fractions in [0, 1]")
    if g.repeats:
        if np.any((p <= 0) | (p >= 1)):
            raise ValueError("with a repeated word, deletion's exact and sampled routes give the "
                             "effects for 0 < p < 1 (at p = 0 or 1 they condition on a single "
                             "configuration: run the model on it)")
        per = np.stack([g.values("effects", p=float(q), ksub=ksub) for q in p], axis=1)
        delta, phi = per[:, :, 1:], per[:, :, 0]
    else:
        delta, phi = _effects(g, p, ksub)
    return Curves(p, delta.mean(axis=0), phi.mean(axis=0), delta, phi,
                  [np.asarray(f) for f in g.feats])
