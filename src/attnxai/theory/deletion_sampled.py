"""Deletion with repeated words, certified: an unbiased Monte Carlo estimate of LIME's limit, the
Shapley and Banzhaf values and the effects, with an interval at a stated level (95 %) for each
value, stopped when the intervals are within a tolerance.

Every value ``V`` the book computes under deletion is linear in the game ``f`` (the model's
output with the kept set ``S`` of lime's words) through the sums of
:mod:`attnxai.theory.lime_repeats`::

    G_0 = sum_S W(|S|) f(S),        G_j = sum_{S containing j} W(|S|) f(S)

(``W`` the weight of one kept set of each size: :func:`~attnxai.theory.deletion_routes.
size_weight`). The sizes ``m = 0`` and ``m = d`` hold one set each and are summed exactly; for
the others, draw ``m`` with probability ``mass_m / Z``, ``mass_m = C(d, m) W(m)``, ``Z = sum_m
mass_m`` over ``0 < m < d``, then ``S`` uniformly among the sets of that size: ``Z [1, z_S]
f(S)`` has mean their part of ``G`` exactly. When that law is symmetric (``m <-> d - m``: the
Shapley and Banzhaf weights) each drawn set comes with its complement, whose residual is
correlated with it (antithetic pairs). Each draw costs one model evaluation, ``O(tokens)`` per
head (:class:`attnxai.fastlime.evaluate.DeleteEvaluator`, the model's own float64 tables).

**Control variate.** A linear game ``b(S) = beta_0 + beta . z_S`` has sums ``G(b)`` in closed
form (:func:`linear_sums`), so ``G(f) = G(b) + G(f - b)`` and only the residual ``f - b`` is
sampled. ``beta`` is the least-squares fit of ``f`` on a *pilot* sample that the estimate does
not reuse, so the estimate stays unbiased given it. The residual is what lime's own regression
leaves; ``control=False`` uses ``b = f(all)`` instead (``benchmarks/bench_deletion_sampled.py``
measures the samples the fit saves).

**The interval and when it stops** (Stein's two-stage procedure). Draws come in batches of
:data:`BATCH`; each batch gives its own estimate of ``V`` (the value map is linear), and the
estimate is the mean of the batch estimates. A first stage of :data:`MIN_BATCHES` (``n0``)
batches gives each value's spread ``s_j`` (sample standard deviation of its batch estimates, ``n0
- 1`` degrees of freedom) and sets the number of batches ``N``: the least ``N >= n0`` with
``t ||s|| / sqrt(N) <= tol ||V_n0||`` (``t`` the ``(1 + LEVEL) / 2`` quantile of Student's t with
``n0 - 1`` degrees of freedom, ``V_n0`` the first stage's mean), capped by ``max_evals``; the
second stage draws the ``N - n0`` others. The reported interval of value ``j`` is ``V_j +/- t s_j
/ sqrt(N)``: when the batch estimates are normal (each is the mean of 4096 draws, independent
or in independent antithetic pairs),
``sqrt(N) (V_j - true_j) / s_j`` has Student's t law with ``n0 - 1`` degrees of freedom exactly,
whatever ``N`` the first stage chose, because ``N`` depends on the first stage's spread only
(independent of the batch means) and on ``||V_n0||`` (a scale). So each interval covers its
value with probability :data:`LEVEL`, and the half-widths in norm 2 satisfy ``||t s / sqrt(N)||
<= tol ||V||``, hence ``||error||_2 <= tol ||V||_2`` with probability at least about
:data:`LEVEL` (with one value dominating, exactly the t interval's; with several, more: a sum of
squared normals over its expected size is at most as spread as one). If the second stage ends
above the tolerance (the mean moved away from ``V_n0``), it is extended with the same ``s``;
``max_evals`` ends it early with ``converged=False`` (the interval is still at ``LEVEL``).
Stopping instead when the running standard error first fell below ``tol`` (the route before)
reported +/- one standard error, mostly from the minimum of 10 batches: +/- 1.96 of those cover
with Student's t's probability at 9 degrees of freedom, 91.8 %. ``tests/results/test_results_deletion.py``
measures the coverage of these intervals on a population with enumerated truth.

**What it costs on the paper model's full reviews** is measured by
``benchmarks/bench_deletion_sampled.py`` and stated in :mod:`attnxai.theory.deletion_routes`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..fastlime.kernels import _mt_twist, _temper_all
from ..native import jit
from ..threads import one_blas_thread
from .lime_inputs import Tables, feature_owner

__all__ = ["BATCH", "LEVEL", "MIN_BATCHES", "SampledSums", "interval", "linear_sums",
           "sample_sums", "size_law", "t_factor"]

#: Draws per batch (one batch estimate of the values each).
BATCH = 4096
#: Batches of the first stage, whose spread the interval rests on (``MIN_BATCHES - 1`` degrees of
#: freedom: the spread's own relative error is about ``1 / sqrt(2 (n0 - 1))``, 24 % at 10, which
#: the t quantile pays for: 2.26 instead of 1.96 at 95 %).
MIN_BATCHES = 10
#: The level of the reported intervals (and of ``error <= tol``).
LEVEL = 0.95


def t_factor(df: int, level: float = LEVEL) -> float:
    """The half-width of a two-sided interval at ``level`` in standard errors: the ``(1 + level)
    / 2`` quantile of Student's t with ``df`` degrees of freedom."""
    from scipy.stats import t

    return float(t.ppf(0.5 + level / 2, df))


def size_law(W: np.ndarray) -> tuple[np.ndarray, float]:
    """(the law of the kept size ``m = 0..d`` the draws follow, ``Z``): ``mass_m = C(d, m) W(m)``
    normalised, and its total ``Z``."""
    from scipy.special import gammaln

    W = np.asarray(W, dtype=np.float64)
    d = W.size - 1
    m = np.arange(d + 1)
    logC = gammaln(d + 1) - gammaln(m + 1) - gammaln(d - m + 1)
    with np.errstate(divide="ignore"):
        logmass = np.where(W > 0, logC + np.log(np.where(W > 0, W, 1.0)), -np.inf)
    top = logmass.max()
    mass = np.exp(logmass - top)
    total = mass.sum()
    return mass / total, float(total * math.exp(top))


def linear_sums(W: np.ndarray, beta: np.ndarray) -> np.ndarray:
    """``G`` (K, d + 1) of the linear games ``b_k(S) = beta[k, 0] + beta[k, 1:] . z_S`` exactly:
    ``G_0 = sum_m C(d, m) W(m) (beta_0 + (m / d) sum beta)`` and ``G_j = sum_m [C(d-1, m-1) (beta_0
    + beta_j) + C(d-2, m-2) (sum beta - beta_j)] W(m)``."""
    from scipy.special import comb

    W = np.asarray(W, dtype=np.float64)
    d = W.size - 1
    m = np.arange(d + 1)
    b0, bj = beta[:, :1], beta[:, 1:]
    tot = bj.sum(axis=1, keepdims=True)
    c_all = float(np.sum(comb(d, m) * W))
    c_in = float(np.sum(comb(d - 1, m - 1) * W)) if d >= 1 else 0.0      # sets holding j
    c_two = float(np.sum(comb(d - 2, m - 2) * W)) if d >= 2 else 0.0     # holding j and k
    g0 = c_all * b0 + float(np.sum(comb(d, m) * W * m)) / max(d, 1) * tot
    gj = c_in * (b0 + bj) + c_two * (tot - bj)
    return np.concatenate([g0, gj], axis=1)


@jit()
def _numba_seed(seed, key, buf):
    """numba's ``np.random.seed(seed)`` (its ``numba_rnd_init``: the Mersenne Twister's
    ``init_genrand``, ``seed`` < 2**32) into ``key`` (uint32[624]), and the first 624 words it
    draws, tempered, into ``buf`` (the state's index starts at 624: the first draw
    regenerates)."""
    s = np.int64(seed) & 0xFFFFFFFF
    for pos in range(624):
        key[pos] = np.uint32(s)
        s = (1812433253 * (s ^ (s >> 30)) + pos + 1) & 0xFFFFFFFF
    _mt_twist(key)
    _temper_all(key, buf)


@jit()
def _subset_masks(seed, sizes, d, out, dense):
    """``out[i]`` (uint8, for the model) and ``dense[i]`` (float64, for the sums), ``i <
    sizes.size``: a uniformly random set of ``sizes[i]`` of ``d`` features, by a partial
    Fisher-Yates shuffle per row that draws the kept features or, when fewer, the dropped ones.
    When ``out`` has ``2 * sizes.size`` rows (the paired draws), row ``sizes.size + i`` is the
    complement of row ``i`` (the values of numpy's ``1 - out[:half]`` and ``1.0 - dense[:half]``,
    written here).

    The shuffle's draws ``j + randint(0, d - j)`` are numba's ``np.random.seed(seed)`` then
    ``np.random.randint(0, n)``, run here on a local copy of its Mersenne Twister (its global
    state is reached through a call per draw): ``n = 1`` draws nothing and gives 0; otherwise
    words ``y`` are drawn until ``y & mask < n``, ``mask`` the least all-ones value ``>= n -
    1``, numba's (numpy's) rule. ``tests/theory/test_deletion_sampled_kernels.py`` compares the
    two draw for draw."""
    key = np.empty(624, dtype=np.uint32)
    buf = np.empty(624, dtype=np.uint32)
    _numba_seed(seed, key, buf)
    pos = 0
    idx = np.empty(d, dtype=np.int64)
    half = sizes.size
    for i in range(half):
        m = sizes[i]
        flip = m > d - m                    # draw the d - m dropped features instead
        fill = 1 if flip else 0
        draw = d - m if flip else m
        for j in range(d):
            idx[j] = j
            out[i, j] = fill
        for j in range(draw):
            n = d - j                       # randint(0, n)
            r = 0
            if n > 1:
                mask = n - 1
                mask |= mask >> 1
                mask |= mask >> 2
                mask |= mask >> 4
                mask |= mask >> 8
                mask |= mask >> 16
                while True:
                    if pos == 624:
                        _mt_twist(key)
                        _temper_all(key, buf)
                        pos = 0
                    r = np.int64(buf[pos]) & mask
                    pos += 1
                    if r < n:
                        break
            k = j + r
            t = idx[j]
            idx[j] = idx[k]
            idx[k] = t
            out[i, idx[j]] = 1 - fill
    for i in range(half):                   # the float64 copy, then the complements
        for j in range(d):
            dense[i, j] = out[i, j]
    for i in range(half, out.shape[0]):
        for j in range(d):
            out[i, j] = 1 - out[i - half, j]
            dense[i, j] = out[i, j]


@jit()
def _residual_sums(h, pred, beta0, wts, rw, total):
    """The weighted residuals ``rw = (h - (beta0 + pred)) * wts[:, None]`` (n, K), written,
    and, for ``K >= 2``, their column sums ``total`` (K,) added row after row from 0.0: the
    operations of numpy's expression and of its ``rw.sum(axis=0)`` on a C-contiguous (n, K)
    array with ``K >= 2`` (rows added in order; with ``K = 1`` numpy sums pairwise, and the
    caller does)."""
    n, K = h.shape
    for k in range(K):
        total[k] = 0.0
    for i in range(n):
        w = wts[i]
        for k in range(K):
            v = (h[i, k] - (beta0[k] + pred[i, k])) * w
            rw[i, k] = v
            total[k] += v


class _Game:
    """The deletion game of one document, per head: ``heads(masks (n, d) uint8) -> (n, K)``."""

    def __init__(self, tb: Tables, feats: list[np.ndarray]):
        from ..fastlime import kernels
        from ..fastlime.evaluate import DeleteEvaluator

        owner = feature_owner(feats, tb.T)
        self.ev = DeleteEvaluator(tb.projections.document(tb.ids, tb.target), owner)
        if not self.ev.ok:
            raise ValueError("the sampled route needs attention scores within "
                             "fastlime.evaluate.MAX_SCORE_RANGE of each other (exp underflows)")
        self.K, self.d, self.evaluations = tb.n_heads, len(feats), 0
        # the compiled kernels called directly (the backend resolved once, not per batch)
        self._eval = self.ev.compiled_heads if kernels.resolve("auto") == "numba" \
            else self.ev.heads

    def heads(self, masks: np.ndarray) -> np.ndarray:
        """``masks`` 0 or 1."""
        self.evaluations += len(masks)
        return self._eval(np.ascontiguousarray(masks, dtype=np.uint8))


@dataclass
class SampledSums:
    """The estimate of ``G`` (K, d + 1) per head, each batch's estimate ``batches``
    (nb, K, d + 1) (the first :data:`MIN_BATCHES` are the first stage), the pilot's slopes
    ``beta`` (K, d + 1), evaluations spent."""

    G: np.ndarray
    batches: np.ndarray
    beta: np.ndarray
    evaluations: int


class _Draws:
    """Batches of draws, seeded (batch ``i`` always holds the same sets for a given seed): the
    size ``m`` from the sampling law ``qs`` (the value's own law ``q`` until :meth:`adapt`), the
    set uniformly among those of that size, and each draw's weight ``Z q_m / qs_m``."""

    def __init__(self, W: np.ndarray, seed: int):
        # the sizes 0 and d hold one set each: summed exactly (:func:`_end_sums`), not drawn
        mid = np.asarray(W, dtype=np.float64).copy()
        mid[0] = mid[-1] = 0.0
        self.q, self.Z = size_law(mid)
        self.qs = self.q
        self.d = W.size - 1
        self.seed = int(seed)
        # a law symmetric in m <-> d - m (Shapley, Banzhaf) draws each set with its complement:
        # both have the law, and their residuals correlate, which cuts the variance
        self.paired = bool(np.allclose(self.q, self.q[::-1], rtol=1e-12, atol=0))

    def adapt(self, rms: np.ndarray) -> None:
        """Draw size ``m`` in proportion to ``q_m rms_m`` (``rms_m`` the root mean square of a
        draw's contribution to the values at that size: the allocation that minimises the
        variance), mixed with a tenth of ``q`` so that no weight exceeds ``10 Z``."""
        opt = self.q * rms
        if self.paired:
            opt = (opt + opt[::-1]) / 2
        if opt.sum() > 0 and np.all(np.isfinite(opt)):
            self.qs = 0.9 * opt / opt.sum() + 0.1 * self.q

    def batch(self, i: int, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(masks (n, d) uint8, the same as float64, weights (n,))."""
        rng = np.random.default_rng([self.seed, i])
        half = n // 2 if self.paired else n
        sizes = rng.choice(self.d + 1, size=half, p=self.qs).astype(np.int64)
        if self.paired and 2 * half != n:
            raise ValueError(f"paired draws need an even batch, got {n}")
        masks = np.empty((n, self.d), dtype=np.uint8)
        dense = np.empty((n, self.d), dtype=np.float64)
        # the paired rows (the complements) are written by the kernel too
        _subset_masks(int(rng.integers(2**31 - 1)), sizes, self.d, masks, dense)
        wts = self.Z * self.q[sizes] / self.qs[sizes]
        if self.paired:                  # the complement's size d - m has the same weight
            wts = np.concatenate([wts, wts])
        return masks, dense, wts


def _end_sums(game: _Game, W: np.ndarray, beta: np.ndarray) -> np.ndarray:
    """The residual's part of ``G`` (K, d + 1) from the two sets the draws leave out: every word
    deleted (``m = 0``) and none (``m = d``)."""
    d = game.d
    ends = np.zeros((2, d), dtype=np.uint8)
    ends[1] = 1
    r = game.heads(ends) - (beta[:, 0] + ends.astype(np.float64) @ beta[:, 1:].T)   # (2, K)
    out = np.zeros((game.K, d + 1))
    out[:, 0] = W[0] * r[0] + W[d] * r[1]
    out[:, 1:] = (W[d] * r[1])[:, None]
    return out


def _pilot(game: _Game, draws: _Draws, control: bool, full: np.ndarray, value_fn,
           judged: slice) -> np.ndarray:
    """A pilot batch (not reused by the estimate) sets the control game and the sampling law:
    returns the control game's coefficients (K, d + 1), the least squares fit of ``f`` on
    ``[1, z]`` (``control=False``: ``[f(all), 0...]``), and adapts ``draws`` to the root mean
    square, per size, of each pilot draw's contribution to the values."""
    K, d = game.K, game.d
    X, Xf, _ = draws.batch(2**31 - 1, max(BATCH, 8 * (d + 1)))
    y = game.heads(X)
    beta = np.zeros((K, d + 1))
    A = np.concatenate([np.ones((len(X), 1)), Xf], axis=1)
    if control:
        with one_blas_thread():
            beta = np.linalg.lstsq(A, y, rcond=None)[0].T                # (K, d + 1)
    else:
        beta[:, 0] = full
    r = y - A @ beta.T                                                  # (n, K)
    zero = value_fn(np.zeros((K, d + 1)))[judged]
    contrib = value_fn(r[:, :, None] * A[:, None, :])[:, judged] - zero   # (n, n_values)
    c2 = np.sum(contrib ** 2, axis=1)
    sizes = X.sum(axis=1).astype(np.int64)
    count = np.bincount(sizes, minlength=d + 1)
    total = np.bincount(sizes, c2, minlength=d + 1)
    seen = np.flatnonzero(count)
    if seen.size:
        ms = np.arange(d + 1)
        rms = np.sqrt(np.interp(ms, seen, total[seen] / count[seen]))
        rms = np.convolve(np.pad(rms, 2, mode="edge"), np.ones(5) / 5, mode="valid")
        draws.adapt(rms)
    return beta


def sample_sums(tb: Tables, feats: list[np.ndarray], W: np.ndarray, value_fn, *, tol: float,
                seed: int, control: bool, max_evals: int, full: np.ndarray,
                judged: slice = slice(None)) -> SampledSums:
    """Stein's two stages of batches (module docstring) for the values ``value_fn(G (..., K,
    d + 1)) -> (..., n_values)`` (the head mean; affine in ``G``): enough batches that ``t ||s /
    sqrt(N)||`` (judged part) is at most ``tol ||values||``, or as many as ``max_evals``
    evaluations allow (pilot included; the first stage is always drawn). ``full`` (K,): every
    head's output on the whole document."""
    game = _Game(tb, feats)
    draws = _Draws(np.asarray(W, dtype=np.float64), seed)
    beta = _pilot(game, draws, control, full, value_fn, judged)
    Gb = linear_sums(W, beta) + _end_sums(game, np.asarray(W, dtype=np.float64), beta)
    parts: list[np.ndarray] = []         # each batch's estimate of G - G(b), (K, d + 1)
    beta0 = np.ascontiguousarray(beta[:, 0])

    def draw_batch():
        X, Xf, wts = draws.batch(len(parts), BATCH)
        # (n, K) residuals times the weights, and their sums, compiled: the same bits as
        # r = heads - (beta_0 + Xf @ beta[:, 1:].T); rw = r * wts[:, None]; rw.sum(axis=0)
        pred = Xf @ beta[:, 1:].T
        rw = np.empty(pred.shape)
        part = np.empty((game.K, game.d + 1))
        _residual_sums(game.heads(X), pred, beta0, wts, rw, part[:, 0])
        if game.K == 1:                  # numpy's sum of one column is pairwise
            part[:, 0] = rw.sum(axis=0)
        part[:, 1:] = rw.T @ Xf
        part /= len(X)
        parts.append(part)

    def size() -> float:                 # ||values|| of the mean so far (the map is affine)
        return float(np.linalg.norm(value_fn(Gb + np.mean(parts, axis=0))[judged]))

    with one_blas_thread():
        for _ in range(MIN_BATCHES):
            draw_batch()
        first = value_fn(Gb + np.asarray(parts))[:, judged]              # (n0, n_values)
        spread = float(np.linalg.norm(first.std(axis=0, ddof=1)))        # ||s||
        t = t_factor(MIN_BATCHES - 1)
        room = MIN_BATCHES + max(0, (max_evals - game.evaluations) // BATCH)
        while True:
            n, scale = len(parts), tol * size()
            # the second stage's mean may end below the first's: then extend, same spread
            if t * spread <= scale * math.sqrt(n) or n >= room:
                batches = Gb + np.asarray(parts)
                return SampledSums(batches.mean(axis=0), batches, beta, game.evaluations)
            need = math.ceil((t * spread / scale) ** 2) if scale > 0 else room
            for _ in range(min(max(need, n + 1), room) - n):
                draw_batch()


def interval(per_batch: np.ndarray, level: float = LEVEL) -> tuple[np.ndarray, np.ndarray]:
    """(standard errors, half-widths at ``level``) of the mean of the batch estimates
    ``per_batch`` (nb, n_values) drawn by :func:`sample_sums`: the first stage's spread over
    ``sqrt(nb)``, and that times the t quantile with ``MIN_BATCHES - 1`` degrees of freedom
    (Stein's interval, module docstring)."""
    nb = per_batch.shape[0]
    se = per_batch[:MIN_BATCHES].std(axis=0, ddof=1) / math.sqrt(nb)
    return se, t_factor(MIN_BATCHES - 1, level) * se
