"""Deletion with repeated words: LIME's limit, Shapley and Banzhaf values and the effect curves,
exact when the cost fits a budget, certified (an unbiased estimate with its standard error, to a
requested tolerance) otherwise.

Both routes sum the configurations of the repeated words (:mod:`attnxai.theory.lime_repeats`:
given which repeated words are kept, the chain over positions is exact over the others):

* ``route="exact"``: all ``2^R`` configurations (``R`` repeated words). Chosen when ``2^R``
  configurations cost at most ``budget`` chain cells (:func:`exact_cost`).
* ``route="sampled"``: an unbiased Monte Carlo estimate over the kept sets themselves, each
  draw one evaluation of the model (:mod:`attnxai.theory.deletion_sampled`: the draws follow
  the value's own law of the kept size, a linear game fitted on a pilot sample is the control
  variate), with an interval at level :data:`~attnxai.theory.deletion_sampled.LEVEL` (95 %) for
  each value (Stein's two stages of batch means, Student's t with 9 degrees of freedom); it
  stops when the half-widths, in norm 2, are at most ``tol`` times the values' norm, so that
  the error is at most ``tol`` with probability 95 % or more, or at ``max_evals`` evaluations
  (the result says so).

**What it cost on full reviews** when it stopped at one standard error, before its 95 %
intervals (which need about ``t^2 = 5.1`` times the draws, ``t`` = 2.262 the quantile of Student's
t with 9 degrees of freedom; :data:`SAMPLED_COST_RULE` says which rule the committed measurements
used, and ``book/data/make_deletion_errors.py`` and ``benchmarks/bench_deletion_sampled.py``
measure them again) (the paper model's first 1,000 full-length test reviews, one
thread, CPU time, ``book/data/deletion_errors.csv`` by ``book/data/make_deletion_errors.py``,
:data:`SAMPLED_COST`): to a relative standard error of 1e-2, median 1.87 s for the Shapley
values (at most 4.73), 0.86 s for Banzhaf, 2.19 s for LIME's limit; 1e-3 would cost a hundred
times as much (extrapolated: the error falls as 1 / sqrt(draws)). On the first 50 of them
(``benchmarks/bench_deletion_sampled.py``, ``book/data/deletion_sampled.csv``), shap's
permutation explainer took 6.5 to 7.7 s to reach 1e-2 on the same game (2 reviews): the sampled
route is 4 to 5 times faster at the same error, and 1e-3 (run on those 2 reviews: 120 and 178 s)
is about 20 times slower than shap at 1e-2.
LIME's limit certified to lime's own noise at n = 200,000 took 0.35
to 0.70 (median 0.50) of one lime run at n = 5000. The control variate cuts the draws 3 to 28
fold (median 5.8 Shapley, 12.9 Banzhaf, 3.6 LIME). Why it is not faster, as far as we can
tell (not measured by a committed script): the game is rough in the positions (a kept token's
position moves with every deletion before it, and the sinusoidal codes change on the scale of one
position), so a linear game leaves much of it to the draws. The exact route's budget admits
4.6 % of 3,000 test reviews and none of the full-length ones (``book/data/deletion_regime.csv``;
one configuration costs 0.04 to 0.07 s there, ``book/data/deletion_speed.csv``). An earlier
sampled route drew the repeated words' configurations and ran that chain for each, one
configuration per draw; it is gone.

Every value is linear in the sums ``G`` of :mod:`~attnxai.theory.lime_repeats`, so a batch's
estimate of the values is the value map applied to its own part of ``G``: the intervals come
from those batch estimates.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .. import validate
from .lime_chain import lime_weights, solve_sigma
from .lime_inputs import Tables
from .deletion_sampled import LEVEL, MIN_BATCHES, interval, sample_sums
from .lime_repeats import all_configs, config_sums, document_output, repeat_layout

__all__ = ["DEFAULT_BUDGET", "DEFAULT_TOL", "EXACT_ERRORS", "MAX_EVALS", "ROUTES", "GameResult",
           "SamplingSettings", "deletion_game", "deletion_values", "exact_cost", "size_weight",
           "size_weights"]

#: The routes: ``"exact"``, ``"sampled"``, or ``None`` (exact when it fits ``budget``).
ROUTES = ("exact", "sampled")
#: Chain cells per head and lambda node (configurations x kept tokens x single words) the exact
#: route may cost when the defaults choose it: a cell costs about 20 ns per head and node, and a
#: review's rule about 30 (``ksub=1``) to 60 nodes, so 1e6 cells is a few seconds for six heads
#: (``benchmarks/bench_deletion_exact.py`` times a configuration on full reviews).
DEFAULT_BUDGET = 1e6
#: The relative half-width (norm 2) of the 95 % intervals the sampled route stops at.
DEFAULT_TOL = 1e-2
#: Model evaluations the sampled route spends at most (pilot included): about 100 s on a full
#: review (:data:`SAMPLED_COST` has the cost per evaluation).
MAX_EVALS = 50_000_000
@dataclass(frozen=True)
class SamplingSettings:
    """How a deletion game chooses its route and how the sampled route runs, carried whole from
    :func:`deletion_game` and the Shapley and Banzhaf values (:mod:`~attnxai.theory.
    shapley_values`) to :func:`deletion_values`. ``budget``: the chain cells the exact route may
    cost when the route is left to the defaults (:func:`exact_cost`; 0: always sampled beyond
    one configuration); ``tol``: the relative half-width (norm 2) of the 95 % intervals the
    sampled route stops at, in (0, 1); ``seed``: its draws; ``control``: the linear control
    variate on or off; ``max_evals``: the model evaluations it spends at most. Checked when
    built, each field by name; nothing downstream checks them again."""

    budget: float = DEFAULT_BUDGET
    tol: float = DEFAULT_TOL
    seed: int = 0
    control: bool = True
    max_evals: int = MAX_EVALS

    def __post_init__(self):
        b = self.budget
        if not (isinstance(b, (int, float, np.integer, np.floating)) and not isinstance(b, bool)
                and b >= 0):
            raise ValueError(f"budget must be a number of chain cells >= 0, got {b!r}")
        t = self.tol
        if not (isinstance(t, (int, float)) and not isinstance(t, bool) and 0 < t < 1):
            raise ValueError(f"tol must be a relative error in (0, 1), got {t!r}")
        object.__setattr__(self, "seed", validate.seed(self.seed))
        if not isinstance(self.control, (bool, np.bool_)):
            raise TypeError(f"control must be True or False, got {type(self.control).__name__} "
                            f"({self.control!r})")
        object.__setattr__(self, "max_evals", validate.positive_int(self.max_evals, "max_evals"))

    @classmethod
    def of(cls, sampling: SamplingSettings | None) -> SamplingSettings:
        """``sampling``, or the defaults for None; ``TypeError`` for anything else."""
        if sampling is None:
            return cls()
        if not isinstance(sampling, cls):
            raise TypeError(f"sampling must be a SamplingSettings, got {type(sampling).__name__}")
        return sampling



#: The binomial positions' error (``|approx - exact| / |exact|``, norm 2) on named populations,
#: median and worst: ``{value: {population: (median, worst, documents)}}``
#: (``book/data/deletion_errors.csv``, made by ``book/data/make_deletion_errors.py`` with the
#: paper model; ``tests/theory/test_theory_deletion_exact.py`` checks these against it). Against the
#: exact route, except on the trained model's full reviews (its first 1,000 full-length test
#: reviews), which are beyond it: there against the sampled route to a relative standard error
#: of 1e-2, whose own error is part of what is measured.
BINOMIAL_ERRORS: dict[str, dict[str, tuple[float, float, int]]] = {
    "LIME": {
        "trained model, full reviews": (0.031, 0.122, 1000),
        "trained model, review beginnings": (0.034, 0.058, 20),
        "random models": (0.113, 0.590, 32),
        "random models, position-heavy": (0.287, 0.854, 32),
    },
    "Shapley": {
        "trained model, full reviews": (0.024, 0.080, 1000),
        "trained model, review beginnings": (0.020, 0.050, 20),
        "random models": (0.061, 0.384, 32),
        "random models, position-heavy": (0.190, 0.608, 32),
    },
    "Banzhaf": {
        "trained model, full reviews": (0.090, 0.327, 1000),
        "trained model, review beginnings": (0.043, 0.106, 20),
        "random models": (0.081, 0.531, 32),
        "random models, position-heavy": (0.329, 1.265, 32),
    },
}


#: The sampled route's rule when :data:`SAMPLED_COST` was measured: ``"one standard error"``
#: (before the 95 % intervals: the committed file has no ``reference_rule`` column) or the rule
#: ``book/data/make_deletion_errors.py`` records in that column (``tests/theory/
#: test_theory_deletion_exact.py`` checks it against the file).
SAMPLED_COST_RULE = "one standard error"
#: What the sampled route cost on the paper model's first 1,000 full-length test reviews
#: (``book/data/deletion_errors.csv``, ``book/data/make_deletion_errors.py``, one thread):
#: ``{value: (median CPU seconds to a relative error of 1e-2 by :data:`SAMPLED_COST_RULE`, the
#: largest, median evaluations, reviews)}``; 1e-3 costs a hundred times as much (the error falls
#: as ``1 / sqrt(evaluations)``). ``tests/theory/test_theory_deletion_exact.py`` checks these against the
#: file.
SAMPLED_COST: dict[str, tuple[float, float, float, int]] = {
    "Shapley": (1.87, 4.73, 1038338.0, 1000),
    "Banzhaf": (0.86, 3.25, 299010.0, 1000),
    "LIME": (2.19, 7.22, 839682.0, 1000),
}


def sampled_cost_text(value: str) -> str:
    """The sampled route's measured cost for ``value``, as the warnings quote it."""
    med, worst, evals, n = SAMPLED_COST[value]
    if SAMPLED_COST_RULE == "one standard error":
        return (f"measured before its 95 % intervals, about {med:.1f} s per 255-token review to "
                f"one standard error of 1e-2 (median of {n} reviews of the paper model, at most "
                f"{worst:.1f} s); 95 % intervals within 1e-2 take about 5 times the draws, 1e-3 "
                f"100 times as many again")
    return (f"about {med:.1f} s per 255-token review until its 95 % intervals are within 1e-2 "
            f"(median of {n} reviews of the paper model, at most {worst:.1f} s; 1e-3 costs 100 "
            f"times as much)")


def binomial_error_text(value: str) -> str:
    """The measured errors of the binomial positions for ``value`` (``"LIME"``, ``"Shapley"``,
    ``"Banzhaf"``), as a warning quotes them."""
    parts = [f"median {m:.1%}, worst {w:.1%} on {pop} ({n} documents)"
             for pop, (m, w, n) in BINOMIAL_ERRORS[value].items()]
    return ("measured against the exact route (the sampled one to 1e-2 on full reviews, beyond "
            "the exact; book/data/deletion_errors.csv), its relative error (norm 2) had "
            + "; ".join(parts))


@dataclass
class GameResult:
    """Values of lime's features under deletion and how they were obtained.

    ``values`` (d,) the mean over heads, ``heads`` (K, d) (the sampled route's heads share its
    samples); ``stderr`` (d,) the standard error of each value and ``halfwidth`` (d,) the
    half-width of its interval at ``level`` (``values +/- halfwidth`` covers each value with
    probability ``level``: :mod:`~attnxai.theory.deletion_sampled`, Stein's interval, ``stderr``
    times the t quantile with ``extra["df"]`` degrees of freedom; both 0 for
    ``route="exact"``); ``route``; ``rel_error`` the bound the route states: ``||halfwidth||_2 /
    ||values||_2`` for ``"sampled"`` (the error is at most that with probability ``level`` or
    more; the model is evaluated exactly, in float64), for ``"exact"`` the worst error measured
    against a 40-digit reference (:data:`EXACT_ERRORS`: 1.1e-11 of the largest value at
    ``ksub=2``, 1.4e-05 at 1); ``configs`` the configurations
    of the repeated words the exact route summed (``2^R``; 0 for ``"sampled"``);
    ``evaluations`` the model evaluations the sampled route spent; ``converged``: it reached
    ``tol``."""

    values: np.ndarray
    heads: np.ndarray
    stderr: np.ndarray
    route: str
    rel_error: float
    configs: int
    n_repeated: int
    tol: float | None = None
    converged: bool = True
    evaluations: int = 0
    extra: dict = field(default_factory=dict)
    halfwidth: np.ndarray | None = None
    level: float = LEVEL

    def __post_init__(self):
        if self.halfwidth is None:
            self.halfwidth = np.zeros_like(self.stderr)


#: The exact route's error (LIME's limit at kernel width 25 and the Shapley values) against a
#: 40-digit reference, ``max_j |error_j| / max_j |value_j|``, the worst of 64 cases (the
#: population "random models, repeated words" of ``book/data/accuracy_bounds.csv``, 32 documents
#: with 4 to 9 words and 3 repeated tokens, both values), rounded up: ``{ksub: worst}``
#: (``tests/book/test_quoted_bounds.py``). Its ``rel_error``.
EXACT_ERRORS = {1: 1.4e-05, 2: 1.1e-11, 3: 5.4e-11, 4: 5.0e-11, 8: 2.2e-10}


def _rule_error(ksub: int) -> float:
    """The exact route's stated error for ``ksub`` (:data:`EXACT_ERRORS`; a ``ksub`` not measured
    gets the largest measured at 2 or more, where rounding dominates)."""
    return EXACT_ERRORS.get(int(ksub), max(e for k, e in EXACT_ERRORS.items() if k >= 2))


def _exact_anyway(feats: list[np.ndarray], T: int) -> bool:
    """Whether the exact route is taken whatever is asked: no repeated word (one configuration,
    the chain itself), or one word (two kept sets, both summed exactly: nothing to draw)."""
    return repeat_layout(feats, T).R == 0 or len(feats) < 2


def exact_cost(feats: list[np.ndarray], T: int) -> float:
    """Chain cells of the exact route: ``2^R`` configurations times their mean number of tokens
    (the single words' plus half the repeated ones') times ``d_s + 1``."""
    lay = repeat_layout(feats, T)
    rep_tokens = sum(np.asarray(feats[j]).size for j in lay.repeated)
    return float(2.0 ** lay.R * (lay.d_s + rep_tokens / 2 + 1) * (lay.d_s + 1))


# ---------------------------------------------------------------------- weights and value maps
def size_weights(n: int) -> np.ndarray:
    """The chain's weights of the coalition sizes ``m = 0..n`` for the Shapley value:
    ``omega_m = n / (m (n - m))`` for ``0 < m < n``, ``omega_n = 1/n``, ``omega_0 = 0`` (module
    docstring). (n + 1,) float64."""
    n = validate.positive_int(n, "n")
    om = np.zeros(n + 1)
    m = np.arange(1, n, dtype=float)
    om[1:n] = n / (m * (n - m))
    om[n] = 1.0 / n
    return om


def size_weight(value: str, d: int, *, kernel_width: float | None = None,
                p: float | None = None) -> np.ndarray:
    """``W(m)``, the weight of one kept set of ``m`` words (m = 0..d): lime's law times its
    kernel (``"lime"``), the Shapley weights (``"shapley"``), independent removal at ``p``
    (``"effects"``)."""
    from scipy.special import comb

    m = np.arange(d + 1)
    if value == "lime":
        return lime_weights(d, kernel_width) / comb(d, m)
    if value == "shapley":
        return size_weights(d) / comb(d, m)
    if value == "effects":
        return np.exp(m * _log(p) + (d - m) * _log(1.0 - p))
    raise ValueError(f"unknown value {value!r}")


def _log(x: float) -> float:
    return math.log(x) if x > 0 else -math.inf


def _lime_map(G: np.ndarray, kernel_width: float) -> np.ndarray:
    """(..., d + 1) -> (..., d): LIME's coefficients ``Sigma^{-1} Gamma`` (linear in Gamma)."""
    flat = G.reshape(-1, G.shape[-1])
    return solve_sigma(flat, kernel_width).reshape(G.shape[:-1] + (G.shape[-1] - 1,))


def _shapley_map(G: np.ndarray) -> np.ndarray:
    """(..., d + 1) -> (..., d): ``G_j - mean_k G_k`` (the constant part is added once)."""
    cols = G[..., 1:]
    return cols - cols.mean(axis=-1, keepdims=True)


def _effects_map(G: np.ndarray, p: float) -> np.ndarray:
    """(..., d + 1) -> (..., d + 1): ``[E f, delta_1, ...]`` from the sums at
    ``W(m) = p^m (1 - p)^(d - m)``, ``0 < p < 1``."""
    on = G[..., 1:] / p
    off = (G[..., :1] - G[..., 1:]) / (1.0 - p)
    return np.concatenate([G[..., :1], on - off], axis=-1)


# ---------------------------------------------------------------------- the two routes
def _exact(tb, feats, W, vmap, ksub, shift):
    lay = repeat_layout(feats, tb.T)
    per = config_sums(tb, feats, W, all_configs(lay.R), ksub, shift)
    heads = vmap(per.sum(axis=1))
    return heads, np.zeros(heads.shape[1]), 2 ** lay.R


# ---------------------------------------------------------------------- public
def deletion_values(tb: Tables, feats: list[np.ndarray], value: str, *,
                    kernel_width: float | None = None, p: float | None = None,
                    route: str | None = None, ksub: int = 2,
                    sampling: SamplingSettings | None = None) -> GameResult:
    """Deletion (lime's ``bow=True``) of the features ``feats`` (a partition of positions
    1..T-1 of the document of ``tb``) for ``value``: ``"lime"`` (LIME's limit, lime's law and
    kernel ``kernel_width``), ``"shapley"``, or ``"effects"`` at the kept fraction ``p``
    (``values[0]`` the mean output ``E f``, ``values[1:]`` the effects ``delta_j(p)``; Banzhaf is
    ``p = 1/2``). Routes and settings in the module docstring; ``ksub``: the exact route's
    lambda rule; ``sampling`` (:class:`SamplingSettings`, None: the defaults): the budget and
    the sampled route's settings; ``route=None``: ``"exact"`` when :func:`exact_cost` is at
    most ``sampling.budget``, else ``"sampled"``."""
    sampling = SamplingSettings.of(sampling)
    if route is None:
        route = "exact" if exact_cost(feats, tb.T) <= sampling.budget else "sampled"
    validate.choice(route, "route", ROUTES)
    if _exact_anyway(feats, tb.T):
        route = "exact"
    d = len(feats)
    if value == "effects" and not (p is not None and 0 < p < 1):
        raise ValueError(f"the effects are computed here for 0 < p < 1, got p={p!r}")
    W = size_weight(value, d, kernel_width=kernel_width, p=p)
    vmap = {"lime": lambda G: _lime_map(G, kernel_width), "shapley": _shapley_map,
            "effects": lambda G: _effects_map(G, p)}[value]
    # the sums are of f - f(all) (per head): the values do not change, and the sampled
    # contributions lose the common part that otherwise dominates their variance
    full, empty = document_output(tb), tb.c_tok[:, 0] + tb.r[:, 0]    # [CLS] alone
    const = np.zeros((tb.n_heads, d + (value == "effects")))
    if value == "shapley":
        const += ((full - empty) / d)[:, None]
    elif value == "effects":
        const[:, 0] = full                       # E f = E (f - f(all)) + f(all)
    if route == "exact":
        heads, se, n_conf = _exact(tb, feats, W, vmap, ksub, full)
        heads = heads + const
        return GameResult(heads.mean(axis=0), heads, se, "exact", _rule_error(ksub), n_conf,
                          repeat_layout(feats, tb.T).R)
    # the sampled sums are of f itself: only the Shapley values' (f(all) - f(empty)) / d is added
    const_s = const if value == "shapley" else np.zeros_like(const)

    def value_fn(G):
        return (vmap(G) + const_s).mean(axis=-2)

    # the effects' tolerance is judged on the effects, not on the mean output beside them
    judged = slice(1, None) if value == "effects" else slice(None)
    est = sample_sums(tb, feats, W, value_fn, tol=sampling.tol, seed=sampling.seed,
                      control=sampling.control, max_evals=sampling.max_evals, full=full,
                      judged=judged)
    heads = vmap(est.G) + const_s
    values = heads.mean(axis=0)
    per_batch = value_fn(est.batches)
    se, half = interval(per_batch)
    rel = float(np.linalg.norm(half[judged]) / max(np.linalg.norm(values[judged]), 1e-300))
    return GameResult(values, heads, se, "sampled", rel, 0, repeat_layout(feats, tb.T).R,
                      sampling.tol, rel <= sampling.tol, est.evaluations,
                      {"batches": per_batch.shape[0], "df": MIN_BATCHES - 1,
                       "control": bool(sampling.control)}, half)


#: What :func:`deletion_game` computes.
VALUES = ("lime", "shapley", "banzhaf", "effects")


def deletion_game(model, ids, value: str = "shapley", *, kernel_width: float = 25.0,
                  p: float = 0.5, target: int = 1, features=None, route: str | None = None,
                  ksub: int | None = None,
                  sampling: SamplingSettings | None = None) -> GameResult:
    """Deletion (``bow=True``) values of lime's features with the route that computed them:
    ``deletion_game(pre, text, "shapley")`` (a :class:`~attnxai.model.textmodel.Pretrained` and a
    text in :func:`attnxai.normalize_for_lime` form, values in lime's word order) or
    ``deletion_game(model, ids, ...)``. ``value``: ``"lime"`` (LIME's limit, lime's law and
    kernel ``kernel_width``), ``"shapley"``, ``"banzhaf"``, ``"effects"`` (``values[0]`` the mean
    output at the kept fraction ``p``, then the effects ``delta_j(p)``). ``route``: ``"exact"``,
    ``"sampled"`` or None (exact when it costs at most ``sampling.budget`` chain cells);
    ``sampling``: a :class:`SamplingSettings` (the budget, and the sampled route's ``tol``,
    ``seed``, ``control``, ``max_evals``: module docstring; None: the defaults), e.g.
    ``deletion_game(pre, text, route="sampled", sampling=SamplingSettings(tol=0.02, seed=1))``;
    ``ksub``: the exact route's lambda rule (default 2; the sampled route evaluates the model
    itself). Distinct words: one configuration, the chain itself."""
    from .lime_inputs import resolve, tables

    validate.choice(value, "value", VALUES)
    model, arr, feats = resolve(model, ids, True, features)
    if model.padding == "unk":
        raise NotImplementedError("deletion with padding='unk' (the authors' UNK padding) moves "
                                  "the padding too; use a masked model")
    sampling = SamplingSettings.of(sampling)
    tb = tables(model, arr, target)
    if route is None:
        route = "exact" if exact_cost(feats, tb.T) <= sampling.budget else "sampled"
    if _exact_anyway(feats, tb.T):
        route = "exact"
    ksub = validate.positive_int(ksub if ksub is not None else (2 if route == "exact" else 1),
                                 "ksub")
    kw = dict(route=route, ksub=ksub, sampling=sampling)
    if value == "banzhaf":
        res = deletion_values(tb, feats, "effects", p=0.5, **kw)
        res.values, res.heads, res.stderr = res.values[1:], res.heads[:, 1:], res.stderr[1:]
        res.halfwidth = res.halfwidth[1:]
        return res                           # (the sampled route judged the effects alone)
    if value == "lime":
        kw["kernel_width"] = validate.kernel_width(kernel_width, allow_inf=True)
    return deletion_values(tb, feats, value, p=p if value == "effects" else None, **kw)
