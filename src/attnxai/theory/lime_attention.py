"""LIME meets attention: closed forms for LIME's coefficients on the Section 2 classifier.

For one document (``[CLS]`` first), in lime's feature order:

:func:`lime_paper` (:mod:`~attnxai.theory.lime_formula`)
    The paper's per-token formula (from the authors' code).

:func:`lime_limit`
    LIME's large-sample limit (``num_samples -> infinity``), for any kernel width, computed from
    the model's float64 tables (:mod:`attnxai.model.network`), never by running the model on perturbed
    documents. Two laws of the perturbations:

    * ``law="lime"``, lime's own law (the number of removed features uniform, then which ones):
      ``beta = Sigma^{-1} Gamma`` with ``Gamma`` from the dynamic programme over the number of
      tokens kept so far (:mod:`~attnxai.theory.lime_chain`). **Exact** for replacement, and for
      deletion when the document's words are distinct. (With a repeated word the chain can only
      treat its occurrences as separate features: ``positions="exact"`` on such a document is
      that token approximation, poor for frequent words.)
    * ``law="discrete"`` / ``"continuous"``: every feature kept independently with probability
      ``p``, averaged over lime's (finite-``d`` / ``d -> infinity``) law of ``p`` through the
      profile form :func:`attnxai.theory.lime_text.beta_from_effects`
      (:mod:`~attnxai.theory.lime_independent`): exact for that law, ``O(||beta||/d)`` from lime's.
      Deletion's positions: ``"exact"`` (the chain), ``"binomial"`` (independent binomial
      positions, a word's occurrences kept together: :mod:`~attnxai.theory.lime_binomial`),
      ``"mean"``.

    Defaults (``law=None``, ``positions=None``): deletion of distinct words, ``law="lime"`` (exact);
    deletion with repeated words, lime's law by the exact route (every configuration of the
    repeated words, :mod:`~attnxai.theory.deletion_routes`) when its cost fits ``budget``, else
    ``law="discrete"``, ``positions="binomial"`` (approximate, with a warning quoting its measured
    error; ``positions="sampled"`` gives a certified estimate instead, within ``tol`` with
    probability 95 %, whose intervals :func:`attnxai.theory.deletion_game` reports;
    ``positions="tokens"`` is the chain over tokens, each occurrence its own feature);
    replacement, ``law="discrete"``, the book's original
    limit (one product over features per node, a few milliseconds; ``law="lime"`` removes its
    ``O(1/d)``).

    **Approximations say so.** When the defaults answer with an approximation (the two cases
    above that are not exact), :func:`lime_limit` and :func:`lime_limit_heads` warn with a
    :class:`LimitApproximationWarning` that names it and its measured error
    (:data:`MEASURED_ERRORS`); asking for a ``law`` or ``positions`` explicitly chooses the
    approximation knowingly and is silent.

:func:`lime_limit_heads`
    The same for each head's own output (their mean is :func:`lime_limit`).

The pieces live in :mod:`~attnxai.theory.lime_inputs` (ids, features, tables),
:mod:`~attnxai.theory.lime_quadrature` (the lambda and p rules),
:mod:`~attnxai.theory.lime_kernels` (compiled loops), :mod:`~attnxai.theory.lime_symbolic`
(SymPy); this module re-exports what the book and the tests use.
"""

from __future__ import annotations

import warnings

import numpy as np

from .. import validate
from ..limit_settings import LimitSettings
from ..model.textmodel import Pretrained
from ..model.single_layer import AttentionClassifier
from .deletion_routes import (DEFAULT_BUDGET, SamplingSettings, binomial_error_text,
                              deletion_values, exact_cost, sampled_cost_text)
from .lime_chain import chain_gammas, solve_sigma
from .lime_formula import lime_paper
from .lime_independent import EXPECTATION_METHODS, POSITIONS, Effects, profile_effects
from .lime_inputs import Tables, document_features, feature_owner, resolve, tables, text_inputs
from .lime_kernels import fold_profile
from .lime_quadrature import LAWS, profile_weights
from .lime_symbolic import symbolic_chain, symbolic_meanfield_wide

__all__ = ["CHAIN_ERRORS", "EXPECTATION_METHODS", "Effects", "LAWS", "LimitApproximationWarning",
           "MEASURED_ERRORS", "POSITIONS", "Tables", "conditional_effects",
           "document_features", "lime_limit", "lime_limit_heads", "lime_limit_heads_by_width",
           "lime_paper",
           "symbolic_chain", "symbolic_meanfield_wide", "tables", "text_inputs"]


class LimitApproximationWarning(UserWarning):
    """:func:`lime_limit`'s defaults answered with an approximation of LIME's limit, not the
    limit itself (the message names it, its measured error and how to get the exact value)."""


#: The error of the defaults' approximations against the exact limit (all ``2^d`` perturbations,
#: :func:`attnxai.theory.lime_exhaustive.exact_limit`), ``|approx - exact| / |exact|`` (norm 2)
#: on random float64 models: median and largest, as
#: :func:`attnxai.theory.lime_exhaustive.default_errors` measures them (deletion: chapter 6's
#: regime-map documents with repeated words, 6 to 12 words, 72 documents; replacement: its
#: documents of 6 to 11 tokens, 36). ``tests/test_hostile.py`` recomputes them.
MEASURED_ERRORS = {"binomial positions": (0.17, 0.80), "independent removal": (0.045, 0.47)}
#: The chain's error (``law="lime"``, deletion of distinct words and replacement) against a
#: 40-digit reference, ``max_j |error_j| / max_j |beta_j|``, on the population "random models,
#: distinct words" of ``book/data/accuracy_bounds.csv`` (``book/data/make_accuracy_bounds.py``):
#: ``{ksub: (median, worst, cases)}``, the worst rounded up (``tests/book/test_quoted_bounds.py``).
CHAIN_ERRORS = {1: (6.2e-06, 9.2e-05, 64), 2: (8.4e-12, 1.9e-10, 64), 4: (2.2e-12, 1.6e-10, 64),
                8: (2.3e-11, 1.8e-09, 64)}


def _warn_approximation(removal: str, law: str, positions: str, given: bool) -> None:
    """Warn when the defaults (``given`` False) chose an approximation (module docstring)."""
    from ..errors import stacklevel

    if given or law == "lime":
        return
    if removal == "delete" and positions == "binomial":
        name, what = "binomial positions", (
            "a word of this document repeats, and under deletion (bow=True) the exact route "
            "(every configuration of the repeated words) costs more than its budget: the answer "
            "is the binomial-position approximation (attnxai.theory.lime_binomial)")
        exact = ("positions='exact' (any cost) or positions='sampled' (a certified estimate, "
                 "within tol with probability 95 %, attnxai.theory.deletion_game gives its 95 % "
                 "intervals: "
                 f"{sampled_cost_text('LIME')})")
    elif removal == "replace":
        name, what = "independent removal", (
            "under replacement (bow=False) the default is independent removal at each kept "
            "fraction (law='discrete'), O(1/d) from lime's own law")
        exact = "law='lime' gives the exact limit"
    else:
        return
    med, top = MEASURED_ERRORS[name]
    measured = (binomial_error_text("LIME") if name == "binomial positions" else
                f"measured against the exact limit on random models, its relative error (norm 2) "
                f"had median {med:.1%} and reached {top:.0%}")
    warnings.warn(f"{what}; {measured}. Exact: {exact}; passing law= or positions= chooses the "
                  "approximation without this warning",
                  LimitApproximationWarning, stacklevel=stacklevel())


def _settings(model, ids, s: LimitSettings, target, features):
    """The document's tables and the settings resolved for it: (tables, features, removal,
    width, law, positions). ``s`` was checked when built; the names are checked here, against
    the closed forms' own tables."""
    model, arr, feats = resolve(model, ids, s.bow, features)
    validate.choice(s.method, "method", EXPECTATION_METHODS)
    budget = DEFAULT_BUDGET if s.budget is None else s.budget
    positions = _positions(feats, arr.size, s.bow, s.law, s.positions, s.method, budget)
    law = s.law
    if law is None:
        law = "lime" if s.bow and positions in ("exact", "sampled", "tokens") \
            and s.method == "integral" else "discrete"
    validate.choice(law, "law", LAWS)
    if law == "lime" and s.method != "integral":
        raise ValueError("law='lime' (the exact chain) has no mean-field version: use "
                         "law='discrete' with method='meanfield'")
    if law == "lime" and positions not in ("exact", "sampled", "tokens"):
        raise ValueError("law='lime' follows the positions exactly (the chain): use "
                         "law='discrete' with positions='binomial' or 'mean'")
    removal = "delete" if s.bow else "replace"
    if removal == "delete" and model.padding == "unk":
        raise NotImplementedError("deletion with padding='unk' (the authors' UNK padding) moves "
                                  "the padding too; use bow=False or a masked model")
    tb = tables(model, arr, target)
    return tb, feats, removal, float(s.kernel_width), law, positions


def _positions(feats, T, bow, law, positions, method, budget) -> str:
    """The positions deletion follows. With a repeated word: ``"exact"`` (every configuration of
    the repeated words, :mod:`~attnxai.theory.deletion_routes`) or ``"sampled"`` (its certified
    estimate), lime's law only; ``"tokens"`` (each occurrence its own feature: the chain over
    tokens, the old meaning of "exact" there), ``"binomial"``, ``"mean"``. Default: exact when
    its cost fits ``budget``, else the binomial positions (lime's law asked: the tokens)."""
    repeats = validate.bow(bow) and not all(np.asarray(f).size == 1 for f in feats)
    if positions is None:
        if not repeats:
            return "exact"
        if law in (None, "lime") and method == "integral" and exact_cost(feats, T) <= budget:
            return "exact"
        return "tokens" if law == "lime" else "binomial"
    validate.choice(positions, "positions", POSITIONS + ("sampled", "tokens"))
    if not repeats and positions in ("sampled", "tokens"):
        return "exact"                     # distinct words (or replacement): one configuration
    if repeats and positions in ("exact", "sampled") and law not in (None, "lime"):
        raise ValueError(f"positions={positions!r} with a repeated word follows lime's own law "
                         "(law='lime'); independent removal over the tokens is positions='tokens'")
    return positions


def _word_sums(beta_tokens: np.ndarray, feats: list[np.ndarray]) -> np.ndarray:
    """Columns per token (1..T-1) -> columns per feature (sum over its tokens, in token order)."""
    if all(f.size == 1 for f in feats):
        return beta_tokens[:, np.concatenate(feats) - 1]
    owner = feature_owner(feats, beta_tokens.shape[1] + 1)
    return np.stack([np.bincount(owner, row, len(feats)) for row in beta_tokens])


def lime_limit_heads_by_width(model: AttentionClassifier | Pretrained, ids, kernel_widths,
                              settings: LimitSettings | None = None, /, *, target: int = 1,
                              features=None, **given) -> dict[float, np.ndarray]:
    """:func:`lime_limit_heads` for several kernel widths at once: ``{width: (K, d)}``
    (``settings``' own ``kernel_width`` is not used). The profile laws' effects are computed once
    (their nodes in ``p`` do not depend on the width: only the weights folding them do); lime's
    law (the chain) runs once per width."""
    out = _heads_by_width(model, ids, kernel_widths, LimitSettings.of(settings, **given), target,
                          features)
    out.pop("_chosen")
    return out


def _heads_by_width(model, ids, kernel_widths, s: LimitSettings, target, features) -> dict:
    """:func:`lime_limit_heads_by_width`'s answer, plus ``"_chosen"``: (removal, law,
    positions) as resolved from the defaults."""
    widths = [validate.kernel_width(w, allow_inf=True) for w in kernel_widths]
    if not widths:
        raise ValueError("give at least one kernel width")
    tb, feats, removal, _, law, positions = _settings(model, ids, s, target, features)
    ksub, method = s.ksub, s.method
    out: dict = {"_chosen": (removal, law, positions)}
    repeats = removal == "delete" and not all(np.asarray(f).size == 1 for f in feats)
    if repeats and positions in ("exact", "sampled"):
        for nu in widths:
            out[nu] = deletion_values(tb, feats, "lime", kernel_width=nu, route=positions,
                                      ksub=max(ksub, 2) if positions == "exact" else ksub,
                                      sampling=SamplingSettings(**s.route_kwargs())).heads
        return out
    positions = "exact" if positions == "tokens" else positions     # the old token chain
    if law == "lime":
        for nu in widths:
            beta = solve_sigma(chain_gammas(tb, feats, removal, nu, ksub), nu)
            out[nu] = _word_sums(beta, feats) if removal == "delete" else beta
        return out
    tokens = removal == "delete" and positions == "exact" and method == "integral"
    n = tb.T - 1 if tokens else len(feats)
    pws = {nu: profile_weights(n, nu, law, s.n_nodes) for nu in widths}
    effects = {}
    for nu, pw in pws.items():
        key = pw.nodes.tobytes()
        if key not in effects:
            effects[key] = profile_effects(tb, feats, removal, pw.nodes, positions=positions,
                                           method=method, lambda_step=s.lambda_step,
                                           ksub=ksub)
        delta, phi = effects[key]
        beta = np.empty((tb.n_heads, delta.shape[2]))
        fold_profile(delta, phi, pw.U, pw.V, beta)
        out[nu] = _word_sums(beta, feats) if tokens else beta
    return out


def lime_limit_heads(model: AttentionClassifier | Pretrained, ids,
                     settings: LimitSettings | None = None, /, *, target: int = 1, features=None,
                     **given) -> np.ndarray:
    """:func:`lime_limit` of each head's own output ``W_l^(i) v~^(i)``: (K, d). Their mean over
    heads is :func:`lime_limit` of ``f`` (LIME's limit is linear in the explained function)."""
    s = LimitSettings.of(settings, **given)
    nu = float(s.kernel_width)
    out = _heads_by_width(model, ids, [nu], s, target, features)
    removal, chosen_law, chosen_positions = out.pop("_chosen")
    _warn_approximation(removal, chosen_law, chosen_positions, s.chosen())
    return out[nu]


def lime_limit(model: AttentionClassifier | Pretrained, ids,
               settings: LimitSettings | None = None, /, *, target: int = 1, features=None,
               **given) -> np.ndarray:
    """LIME's large-sample coefficients for the attention classifier (module docstring).

    Inputs as :func:`attnxai.fastlime.explain_instance`: ``lime_limit(pre, text)`` (a text in
    :func:`attnxai.normalize_for_lime` form) returns one coefficient per word of
    ``fastlime.explain_instance(pre, text).words``, in that order; ``lime_limit(pre.model, ids)``
    one per distinct id (out-of-vocabulary words share the UNK id: pass the text, or ``features``, a
    partition of positions 1..T-1).

    The settings: ``settings``, a :class:`~attnxai.limit_settings.LimitSettings` (default: its
    defaults), with any of its fields given as keywords replacing its own
    (``lime_limit(pre, text, bow=False)``); unknown keywords are a TypeError.
    ``bow=True`` deletes words as lime does, ``bow=False`` replaces them by UNK in place.
    ``law``: ``"lime"`` (lime's own law, the exact chain), ``"discrete"`` (independent removal at
    each kept fraction of lime's law for this d), ``"continuous"`` (d -> infinity);
    ``positions`` (deletion): ``"exact"``, ``"binomial"`` or ``"mean"``; defaults in the module
    docstring. ``method``: ``"integral"`` or ``"meanfield"``;
    ``n_nodes``: nodes in ``p`` of the profile form (above ``d``: every value of ``p`` of lime's
    law, exact; fewer: Chebyshev interpolation in ``p``, whose error on 255-token reviews
    ``benchmarks/deletion_cost.py`` prints); ``lambda_step``: step in ``log lambda`` of the
    profile form's rules (each expectation's relative error:
    :data:`~attnxai.theory.lime_quadrature.RULE_ERRORS`); ``ksub``: the chain's rule has steps
    ``log(2)/ksub``. The chain's error (``law="lime"``), the largest over the coefficients
    relative to the largest coefficient, against a 40-digit reference (lime's weighted normal
    equations on the model's outputs on all ``2^d`` perturbations) on 64 cases, random models
    with 4 to 10 distinct words under both removals (:data:`CHAIN_ERRORS`,
    ``book/data/accuracy_bounds.csv``): ``ksub=1`` (the default) median 6.2e-06, worst 9.2e-05;
    ``ksub=2`` median 8.4e-12, worst 1.9e-10; ``ksub=4`` worst 1.6e-10 and ``ksub=8`` 1.8e-09,
    where rounding, not the rule, dominates (``tests/results/test_results_lime.py`` tries to break the
    chain on random models, within 1e-9 at ``ksub=2`` and 1e-3 at ``ksub=1``).

    Raises ``ValueError`` for a kernel so narrow that lime's weights underflow, weights holding
    NaN, attention scores spanning a range no float64 quadrature can cover, and a text none of
    whose words the model knows (as :func:`attnxai.fastlime.explain_instance` refuses it). Warns
    with a :class:`LimitApproximationWarning` when the defaults answer with an approximation
    (module docstring).
    """
    return lime_limit_heads(model, ids, settings, target=target, features=features,
                            **given).mean(axis=0)


def conditional_effects(model: AttentionClassifier | Pretrained, ids,
                        settings: LimitSettings | None = None, /, *, target: int = 1,
                        features=None, **given) -> Effects:
    """The effects ``delta_j(p)`` and the mean output ``Phi(p)`` of the profile form (independent
    removal, :mod:`~attnxai.theory.lime_independent`) at the values of ``p`` of lime's law
    (interpolated from the nodes), per head and averaged over heads. Deletion with exact
    positions gives one column per token."""
    s = LimitSettings.of(settings, **given)
    if s.law == "lime":
        raise ValueError("lime's law has no conditional effects at fixed p: use law='discrete'")
    if s.law is None:                   # independent removal: the profile form's own law
        s = LimitSettings.of(s, law="discrete")
    tb, feats, removal, nu, law, positions = _settings(model, ids, s, target, features)
    method = s.method
    positions = "exact" if positions == "tokens" else positions
    tokens = removal == "delete" and positions == "exact" and method == "integral"
    pw = profile_weights(tb.T - 1 if tokens else len(feats), nu, law, s.n_nodes)
    delta, phi = profile_effects(tb, feats, removal, pw.nodes, positions=positions, method=method,
                                 lambda_step=s.lambda_step, ksub=s.ksub)
    delta = np.einsum("qi,kij->kqj", pw.B, delta)
    phi = np.einsum("qi,ki->kq", pw.B, phi)
    cols = [np.array([t]) for t in range(1, tb.T)] if tokens else feats
    return Effects(pw.law, delta.mean(axis=0), phi.mean(axis=0), delta, phi, cols)
