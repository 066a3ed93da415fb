"""Deletion with repeated words: LIME's limit, Shapley and Banzhaf values and the effect curves,
exact when the cost fits a budget, certified (an unbiased estimate with its standard error, to a
requested tolerance) otherwise.

Both routes sum the configurations of the repeated words (:mod:`attnxai.theory.lime_repeats`:
given which repeated words are kept, the chain over positions is exact over the others):

* ``route="exact"``: all ``2^R`` configurations (``R`` repeated words). Chosen when ``2^R``
  configurations cost at most ``budget`` chain cells (:func:`exact_cost`).
* ``route="sampled"``: the configurations grouped by their number ``k`` of kept repeated words
  (strata of ``C(R, k)`` configurations each), a stratum enumerated when its share of the samples
  covers it, else sampled uniformly with replacement; samples allotted in proportion to each
  stratum's total weight. The estimate of each value is unbiased for a fixed number of samples;
  rounds of samples double until the standard error, in norm 2, is at most ``tol`` times the
  values' norm (or ``max_configs`` is reached: the result says so).
  **Control variate** (``control=True``): within stratum ``k`` the indicators ``z_r - k / R`` have
  mean exactly 0, so subtracting ``B (z - k/R)`` from every sample changes no expectation; ``B``
  (each value on the indicators) is fitted on the previous rounds only, which keeps the estimate
  unbiased given them. ``benchmarks/bench_deletion_exact.py`` measures the samples it saves.

**What it costs on full reviews** (``benchmarks/bench_deletion_exact.py``, 3 full-length test
reviews of the quick model, one thread on a loaded machine, ``book/data/deletion_speed.csv``): a
configuration costs one chain pass, 0.04 to 0.23 s (one LIME run at n = 5000: 0.015 to 0.13 s in
the same run); about 450 configurations reach a relative standard error of 0.31 to 0.64 (0.37 to
0.56 with the control variate, which needs ``2 R`` samples before it applies), so 1e-2 would take
some 4e5 to 2e6 configurations, 5e4 to 2e5 s per review (extrapolated as ``1/sqrt(n)``). The
sampled route is certified but practical only for short texts or loose tolerances; the exact
route's budget admits 4.6 % of 3,000 test reviews and none of the full-length ones
(``book/data/deletion_regime.csv``).

Every value is linear in the sums ``G`` of :mod:`~attnxai.theory.lime_repeats`, so a sample's
contribution to the values is the value map applied to its own part of ``G``: the standard error
comes from those contributions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .. import validate
from .lime_chain import lime_weights, solve_sigma
from .lime_inputs import Tables
from .lime_repeats import all_configs, config_sums, document_output, repeat_layout

__all__ = ["DEFAULT_BUDGET", "DEFAULT_TOL", "ROUTES", "GameResult", "deletion_game",
           "deletion_values", "exact_cost", "size_weight", "size_weights"]

#: The routes: ``"exact"``, ``"sampled"``, or ``None`` (exact when it fits ``budget``).
ROUTES = ("exact", "sampled")
#: Chain cells per head and lambda node (configurations x kept tokens x single words) the exact
#: route may cost when the defaults choose it: a cell costs about 20 ns per head and node, and a
#: review's rule about 30 (``ksub=1``) to 60 nodes, so 1e6 cells is a few seconds for six heads
#: (``benchmarks/bench_deletion_exact.py`` times a configuration on full reviews).
DEFAULT_BUDGET = 1e6
#: Relative standard error (norm 2) the sampled route stops at.
DEFAULT_TOL = 1e-3
#: Configurations the sampled route evaluates at most.
MAX_CONFIGS = 20000
#: The binomial positions' error (``|approx - exact| / |exact|``, norm 2) against the exact route
#: on named populations, median and worst: ``{value: {population: (median, worst, documents)}}``
#: (``book/data/deletion_errors.csv``, made by ``book/data/make_deletion_errors.py``;
#: ``tests/test_theory_deletion_exact.py`` checks these against it). The trained model's
#: population is the quick profile's, on review beginnings (full reviews are beyond the exact
#: route: ``book/data/deletion_regime.csv``).
BINOMIAL_ERRORS: dict[str, dict[str, tuple[float, float, int]]] = {
    "LIME": {
        "trained model, review beginnings": (0.067, 0.180, 20),
        "random models": (0.113, 0.590, 32),
        "random models, position-heavy": (0.287, 0.854, 32),
    },
    "Shapley": {
        "trained model, review beginnings": (0.054, 0.122, 20),
        "random models": (0.061, 0.384, 32),
        "random models, position-heavy": (0.190, 0.608, 32),
    },
    "Banzhaf": {
        "trained model, review beginnings": (0.087, 0.211, 20),
        "random models": (0.081, 0.531, 32),
        "random models, position-heavy": (0.329, 1.265, 32),
    },
}


def binomial_error_text(value: str) -> str:
    """The measured errors of the binomial positions for ``value`` (``"LIME"``, ``"Shapley"``,
    ``"Banzhaf"``), as a warning quotes them."""
    parts = [f"median {m:.1%}, worst {w:.1%} on {pop} ({n} documents)"
             for pop, (m, w, n) in BINOMIAL_ERRORS[value].items()]
    return ("measured against the exact route (book/data/deletion_errors.csv), its relative "
            "error (norm 2) had " + "; ".join(parts))


#: Configurations per round (the first round; later rounds double the total).
FIRST_ROUND = 64


@dataclass
class GameResult:
    """Values of lime's features under deletion and how they were obtained.

    ``values`` (d,) the mean over heads, ``heads`` (K, d) (the sampled route's heads share its
    samples); ``stderr`` (d,) the standard error of each value (0 for ``route="exact"``);
    ``route``; ``rel_error`` the bound the route states: ``||stderr||_2 / ||values||_2`` for
    ``"sampled"`` (one standard error), at least the lambda rule's (~5e-12 at ``ksub=2``, ~1e-5
    at 1), which alone bounds ``"exact"``; ``configs`` the
    configurations of the repeated words evaluated, of ``2^R``; ``converged``: the sampled route
    reached ``tol``."""

    values: np.ndarray
    heads: np.ndarray
    stderr: np.ndarray
    route: str
    rel_error: float
    configs: int
    n_repeated: int
    tol: float | None = None
    converged: bool = True
    extra: dict = field(default_factory=dict)


def _rule_error(ksub: int) -> float:
    """The lambda rule's relative error per expectation (:mod:`attnxai.theory.lime_quadrature`),
    a floor under any route's stated error."""
    return {1: 1.1e-5, 2: 5e-12}.get(int(ksub), 1e-15)


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


def _strata_mass(W: np.ndarray, R: int, d_s: int) -> np.ndarray:
    """Each stratum's total weight ``C(R, k) sum_c C(d_s, c) W(k + c)``, k = 0..R."""
    from scipy.special import comb

    c = np.arange(d_s + 1)
    return np.array([comb(R, k) * float(np.sum(comb(d_s, c) * W[k + c])) for k in range(R + 1)])


def _strata_plan(mass: np.ndarray, R: int, n: int) -> np.ndarray:
    """Samples per stratum ``k = 0..R`` for ``n`` samples in all: proportional to the stratum's
    total weight ``mass``, at least 2 where it has weight, at most its ``C(R, k)``
    configurations (a stratum its share covers is enumerated)."""
    share = mass / mass.sum()
    alloc = np.where(mass > 0, np.maximum(2, np.ceil(share * n)), 0)
    return np.minimum(alloc, [math.comb(R, k) for k in range(R + 1)]).astype(np.int64)


def _draw(rng, R: int, k: int, count: int) -> np.ndarray:
    """``count`` configurations with ``k`` of ``R`` repeated words kept, uniformly, i.i.d."""
    out = np.zeros((count, R), dtype=np.int64)
    for i in range(count):
        out[i, rng.choice(R, size=k, replace=False)] = 1
    return out


def _stratum_configs(k: int, R: int) -> np.ndarray:
    """Every configuration with ``k`` of ``R`` kept."""
    import itertools

    out = np.zeros((math.comb(R, k), R), dtype=np.int64)
    for i, kept in enumerate(itertools.combinations(range(R), k)):
        out[i, list(kept)] = 1
    return out


class _Sampler:
    """The sampled route's state: per stratum ``k``, its enumerated sum, or the samples drawn so
    far (configuration, round, raw contribution per head (K, n_values)); the control variate's
    slopes fitted before each round, applied to that round's samples only."""

    def __init__(self, tb, feats, W, vmap, ksub, seed, control, shift):
        self.tb, self.feats, self.W, self.vmap, self.ksub = tb, feats, W, vmap, ksub
        self.shift = shift
        self.lay = repeat_layout(feats, tb.T)
        self.rng = np.random.default_rng(seed)
        self.control = control
        R = self.lay.R
        self.full = [math.comb(R, k) for k in range(R + 1)]
        self.mass = _strata_mass(W, R, self.lay.d_s)
        # a configuration's typical weight in stratum k: the control variate's slopes are
        # common to the strata in these units
        self.unit = [m / f if m > 0 else 0.0 for m, f in zip(self.mass, self.full)]
        self.exact: dict[int, np.ndarray] = {}
        self.z: dict[int, list] = {k: [] for k in range(R + 1)}
        self.y: dict[int, list] = {k: [] for k in range(R + 1)}
        self.rounds: dict[int, list] = {k: [] for k in range(R + 1)}
        self.slopes: list = []           # per round: (K, n_values, R) or None
        self.evaluated = 0

    def _eval(self, configs: np.ndarray) -> np.ndarray:
        self.evaluated += len(configs)
        return self.vmap(config_sums(self.tb, self.feats, self.W, configs, self.ksub,
                                     self.shift))

    def grow(self, n_total: int) -> None:
        """Draw (or enumerate) up to ``n_total`` configurations in all, in one new round."""
        plan = _strata_plan(self.mass, self.lay.R, n_total)
        self.slopes.append(self._fit() if self.control else None)
        rnd = len(self.slopes) - 1
        for k, want in enumerate(plan):
            if want == 0 or k in self.exact:
                continue
            if want >= self.full[k]:
                self.exact[k] = self._eval(_stratum_configs(k, self.lay.R)).sum(axis=1)
                self.z[k], self.y[k], self.rounds[k] = [], [], []
                continue
            extra = int(want) - len(self.z[k])
            if extra > 0:
                conf = _draw(self.rng, self.lay.R, k, extra)
                vals = self._eval(conf)
                self.z[k].extend(conf)
                self.y[k].extend(np.moveaxis(vals, 1, 0))
                self.rounds[k].extend([rnd] * extra)

    def _fit(self):
        """Slopes (K, n_values, R) of the raw contributions, in units of the stratum's
        :attr:`unit`, on ``z - k/R``, pooled within strata, on every sample drawn so far; None
        when too few."""
        X, Y = [], []
        for k, zs in self.z.items():
            if len(zs) < 2 or self.unit[k] == 0:
                continue
            x = np.asarray(zs, float)
            y = np.asarray(self.y[k]) / self.unit[k]
            X.append(x - x.mean(axis=0))
            Y.append(y - y.mean(axis=0))
        if not X or sum(len(x) for x in X) <= 2 * self.lay.R + 2:
            return None
        X, Y = np.concatenate(X), np.concatenate(Y)
        scale = np.maximum(np.abs(X).max(axis=0), 1e-300)
        coef = np.linalg.lstsq(X / scale, Y.reshape(len(Y), -1), rcond=None)[0] / scale[:, None]
        return coef.T.reshape(Y.shape[1], Y.shape[2], -1)

    def _adjusted(self, k: int) -> np.ndarray:
        """The stratum's samples (n, K, n_values), each less its round's control variate."""
        y = np.asarray(self.y[k])
        x = np.asarray(self.z[k], float) - k / self.lay.R
        for i, r in enumerate(self.rounds[k]):
            if self.slopes[r] is not None:
                y[i] = y[i] - self.unit[k] * (self.slopes[r] @ x[i])
        return y

    def estimate(self) -> tuple[np.ndarray, np.ndarray]:
        """(the sum's estimate per head (K, n_values), the variance of its head mean
        (n_values,))."""
        K = self.tb.n_heads
        total, var = 0.0, 0.0
        for k in range(self.lay.R + 1):
            if k in self.exact:
                total = total + self.exact[k]
            elif self.z[k]:
                y = self._adjusted(k)
                total = total + self.full[k] * y.mean(axis=0)
                if len(y) > 1:
                    var = var + self.full[k] ** 2 * y.mean(axis=1).var(axis=0, ddof=1) / len(y)
        total = np.asarray(total) * np.ones((K, 1))
        return total, np.asarray(var) * np.ones(total.shape[1])


def _sampled(tb, feats, W, vmap, ksub, shift, *, tol, seed, control, max_configs, norm_fn):
    """Rounds of samples until the relative standard error (norm 2 of :func:`norm_fn` of the
    values) is at most ``tol``."""
    s = _Sampler(tb, feats, W, vmap, ksub, seed, control, shift)
    n = FIRST_ROUND
    while True:
        s.grow(n)
        total, var = s.estimate()
        values, se = norm_fn(total, var)
        rel = float(np.linalg.norm(se) / max(np.linalg.norm(values), 1e-300))
        done = rel <= tol
        if done or s.evaluated >= max_configs or len(s.exact) == s.lay.R + 1:
            return total, se, s.evaluated, rel, done or len(s.exact) == s.lay.R + 1
        n *= 2


# ---------------------------------------------------------------------- public
def deletion_values(tb: Tables, feats: list[np.ndarray], value: str, *,
                    kernel_width: float | None = None, p: float | None = None,
                    route: str | None = None, budget: float = DEFAULT_BUDGET,
                    tol: float = DEFAULT_TOL, seed: int = 0, control: bool = True,
                    max_configs: int = MAX_CONFIGS, ksub: int = 2) -> GameResult:
    """Deletion (lime's ``bow=True``) of the features ``feats`` (a partition of positions
    1..T-1 of the document of ``tb``) for ``value``: ``"lime"`` (LIME's limit, lime's law and
    kernel ``kernel_width``), ``"shapley"``, or ``"effects"`` at the kept fraction ``p``
    (``values[0]`` the mean output ``E f``, ``values[1:]`` the effects ``delta_j(p)``; Banzhaf is
    ``p = 1/2``). Routes and settings in the module docstring; ``route=None``: ``"exact"`` when
    :func:`exact_cost` is at most ``budget``, else ``"sampled"``."""
    if route is None:
        route = "exact" if exact_cost(feats, tb.T) <= budget else "sampled"
    validate.choice(route, "route", ROUTES)
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
    if not (isinstance(tol, (int, float)) and not isinstance(tol, bool) and 0 < tol < 1):
        raise ValueError(f"tol must be a relative error in (0, 1), got {tol!r}")

    def norm_fn(total, var):
        return (total + const).mean(axis=0), np.sqrt(var)

    total, se, n_conf, rel, done = _sampled(tb, feats, W, vmap, ksub, full, tol=tol, seed=seed,
                                            control=control, max_configs=max_configs,
                                            norm_fn=norm_fn)
    heads = total + const
    return GameResult(heads.mean(axis=0), heads, se, "sampled", max(rel, _rule_error(ksub)), n_conf,
                      repeat_layout(feats, tb.T).R, tol, done)


#: What :func:`deletion_game` computes.
VALUES = ("lime", "shapley", "banzhaf", "effects")


def deletion_game(model, ids, value: str = "shapley", *, kernel_width: float = 25.0,
                  p: float = 0.5, target: int = 1, features=None, route: str | None = None,
                  budget: float = DEFAULT_BUDGET, tol: float = DEFAULT_TOL, seed: int = 0,
                  control: bool = True, max_configs: int = MAX_CONFIGS,
                  ksub: int | None = None) -> GameResult:
    """Deletion (``bow=True``) values of lime's features with the route that computed them:
    ``deletion_game(pre, text, "shapley")`` (a :class:`~attnxai.model.textmodel.Pretrained` and a
    text in :func:`attnxai.normalize_for_lime` form, values in lime's word order) or
    ``deletion_game(model, ids, ...)``. ``value``: ``"lime"`` (LIME's limit, lime's law and
    kernel ``kernel_width``), ``"shapley"``, ``"banzhaf"``, ``"effects"`` (``values[0]`` the mean
    output at the kept fraction ``p``, then the effects ``delta_j(p)``). ``route``: ``"exact"``,
    ``"sampled"`` or None (exact when it costs at most ``budget`` chain cells); ``tol``, ``seed``,
    ``control``, ``max_configs``: the sampled route's (module docstring); ``ksub``: the lambda
    rule (default 2 exact, 1 sampled). Distinct words: one configuration, the chain itself."""
    from .lime_inputs import resolve, tables

    validate.choice(value, "value", VALUES)
    model, arr, feats = resolve(model, ids, True, features)
    if model.padding == "unk":
        raise NotImplementedError("deletion with padding='unk' (the authors' UNK padding) moves "
                                  "the padding too; use a masked model")
    tb = tables(model, arr, target)
    if route is None:
        route = "exact" if exact_cost(feats, tb.T) <= budget else "sampled"
    ksub = validate.positive_int(ksub if ksub is not None else (2 if route == "exact" else 1),
                                 "ksub")
    kw = dict(route=route, tol=tol, seed=seed, control=control, max_configs=max_configs,
              ksub=ksub)
    if value == "banzhaf":
        res = deletion_values(tb, feats, "effects", p=0.5, **kw)
        res.values, res.heads, res.stderr = res.values[1:], res.heads[:, 1:], res.stderr[1:]
        if res.route == "sampled":           # the bound of the values returned (E f left out)
            res.rel_error = max(float(np.linalg.norm(res.stderr) / np.linalg.norm(res.values)),
                                _rule_error(ksub))
            res.converged = res.rel_error <= tol
        return res
    if value == "lime":
        kw["kernel_width"] = validate.kernel_width(kernel_width, allow_inf=True)
    return deletion_values(tb, feats, value, p=p if value == "effects" else None, **kw)
