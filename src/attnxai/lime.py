"""LIME for text, exactly as ``lime`` 0.2.0.1 computes it, hundreds of times faster.

:func:`explain` returns what ``lime.lime_text.LimeTextExplainer(kernel_width=..., bow=...,
mask_string=..., random_state=...).explain_instance(text, classifier_fn, labels=(target,),
num_features=d, num_samples=...)`` returns for the full-feature fit (``d`` = number of
features, so every feature is kept): the intercept, one coefficient per feature in lime's
feature order, the weighted R^2 ``score`` and ``local_pred``. lime's algorithm, from its source:

1. **Features.** lime splits the text on ``\\W+`` (case-sensitive). ``bow=True``: the features
   are the distinct words, in order of first occurrence; dropping a word **deletes every
   occurrence** (``mask_string`` is ignored). ``bow=False``: every word position is a feature and
   a dropped position is **replaced in place** by ``mask_string``.
2. **Sampling** with one ``numpy.random.RandomState``: sample 0 is the document; then
   ``sizes = rs.randint(1, d + 1, num_samples - 1)`` and, for each sample in turn,
   ``rs.choice(range(d), size, replace=False)`` picks the features to drop. ``choice`` without
   replacement is ``rs.permutation(d)[:size]``, i.e. a Fisher-Yates shuffle of ``arange(d)``.
3. **Weights.** ``D = 100 * cosine_distance(z, 1)`` and ``w = sqrt(exp(-D^2 / width^2))``.
4. **Fit.** ``Ridge(alpha=1, fit_intercept=True)`` with ``sample_weight=w`` on all features
   (with ``num_features = d`` lime's 'auto' selection keeps every feature: it runs
   ``forward_selection`` when ``d <= 6`` and ``highest_weights`` otherwise, and both return all
   ``d`` features, only in another order); ``score`` is the weighted R^2 of that fit on the
   samples and ``local_pred`` its prediction on sample 0.

**Exactness contract.** For the same ``random_state`` (an int, a ``RandomState``, which is
advanced exactly as lime advances it, or ``None`` for numpy's global one), text and model, the
masks are lime's masks in lime's order (this module shuffles with lime's own ``RandomState`` calls,
just without building strings), the weights are bitwise lime's, and the coefficients agree with
lime's to rounding (tested to 1e-8; typically 1e-12). On the fast path the model is evaluated in
float64 from the same weights, whereas lime calls ``Pretrained.predict_logits``, which runs the
model in its own dtype: for a comparison to 1e-8 load the model in float64
(``attnxai.pretrained(..., dtype=torch.float64)``); with a float32 model the two differ by float32
rounding of the logits (about 1e-6 on the coefficients), the fast path being the more accurate.

**Two paths.** ``path="fast"`` needs an :class:`attnxai.Pretrained` and a text in the
normalised form of :func:`attnxai.normalize_for_lime` (lowercase ``[0-9a-z]+`` tokens joined by
single spaces, at most ``max_len - 1`` tokens): there lime's words and the model's tokens
coincide, so the model can be evaluated on the 0/1 masks directly. [CLS] sits at position 0 and
is never masked, so the [CLS] query ``q_1`` is fixed and, per head ``i``,
``score_t = a[x_t] + b[t]`` and ``W_l^(i) W_v^(i) e_t = cw[x_t] + cp[t]`` with per-word and
per-position tables; the logit is ``(1/K) sum_i sum_t softmax(score)_t (cw + cp)``. With
replacement (``bow=False``) each position holds its word or UNK, so per head the logit is a ratio
of two linear functions of the mask: one matrix product for all samples. With deletion
(``bow=True``) the kept tokens move up, token ``t`` landing at position ``1 + (number of kept
tokens before it)``; the score still splits, ``exp(a[x_t] + b[p]) = exp(a[x_t]) exp(b[p])``, and
the sums over the kept tokens are accumulated per sample. Both padding modes of the model are
supported (``"unk"``: the document is filled with ``UNK`` tokens that take part in attention, up
to ``max_len``). Any other text, or a plain ``classifier_fn(list[str]) -> (n, n_classes)`` instead
of a model, takes ``path="generic"``: lime's own ``IndexedString`` builds the perturbed strings
from the same masks and ``classifier_fn`` scores them in one call, as lime does, so it is a
drop-in for any model (as slow as lime in the classifier, faster in sampling and fitting).
``path="auto"`` (default) picks ``fast`` when it applies; :attr:`LimeResult.path` and
:attr:`LimeResult.reason` say which path ran and why.

**Speed.** The ridge is solved in closed form (one symmetric rank-k update for ``X^T W X``, a
Cholesky solve, R^2 from the normal equations), the weights by formula (they depend only on the
number of kept features). Two loops that numpy cannot vectorise, lime's Fisher-Yates shuffles and
the deletion sums, run in a small C helper compiled on first use with the system compiler (see
:func:`native_status`); without one, numpy code gives the same numbers about 2x slower. With
5,000 samples and 255 tokens an explanation takes tens of milliseconds on one core instead of
seconds (``benchmarks/bench_lime.py``). On a machine shared by several processes, limit BLAS to
one thread (``threadpoolctl.threadpool_limits(1)``, after importing this module), or the
``X^T W X`` product may spend its time waiting for a busy second core.
"""

from __future__ import annotations

import collections
import functools
import math
import numbers
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.linalg
import scipy.sparse
import torch

from .checkpoint import Pretrained
from .text import tokenize

__all__ = ["LimeResult", "explain", "explain_repeats", "fast_path_reason", "is_normalized",
           "kernel_weights", "native_status", "sample_masks", "weighted_ridge"]

_NORMALIZED = re.compile(r"[0-9a-z]+(?: [0-9a-z]+)*")
#: exp() of scores more than this far below the largest one could underflow: use the generic path.
_MAX_SCORE_RANGE = 600.0
PATHS = ("auto", "fast", "generic")


# ====================================================================== result
@dataclass
class LimeResult:
    """One LIME explanation (lime's ``Explanation`` for the full-feature fit).

    ``coef[j]`` is the weight of feature ``j`` in lime's order: ``words[j]`` is the ``j``-th
    distinct word (``bow=True``) or the word at the ``j``-th position (``bow=False``).
    ``intercept``, ``score`` (weighted R^2) and ``local_pred`` (the surrogate at the document) are
    lime's ``intercept[target]``, ``score`` and ``local_pred[0]``; ``prediction`` is the model's
    output for the document, all classes (lime's ``predict_proba``). ``path`` is ``"fast"`` or
    ``"generic"``; ``reason`` says why the generic path was taken. With ``keep_data=True``,
    ``masks`` (num_samples, d) bool, ``labels`` (the target column) and ``weights`` are kept.
    """

    words: list[str]
    coef: np.ndarray
    intercept: float
    score: float
    local_pred: float
    prediction: np.ndarray
    target: int
    bow: bool
    num_samples: int
    kernel_width: float
    mask_string: str
    path: str
    reason: str = ""
    masks: np.ndarray | None = field(default=None, repr=False)
    labels: np.ndarray | None = field(default=None, repr=False)
    weights: np.ndarray | None = field(default=None, repr=False)

    @property
    def num_features(self) -> int:
        return len(self.words)

    def as_map(self) -> list[tuple[int, float]]:
        """lime's ``local_exp[target]``: (feature id, weight), largest ``|weight|`` first."""
        return sorted(((j, float(c)) for j, c in enumerate(self.coef)), key=lambda p: -abs(p[1]))

    def as_list(self) -> list[tuple[str, float]]:
        """lime's ``as_list(label=target)``: (word, weight), largest ``|weight|`` first."""
        return [(self.words[j], c) for j, c in self.as_map()]


# ====================================================================== optional native helper
#: C source of two loops numpy cannot vectorise: lime's Fisher-Yates shuffles (numpy's legacy
#: MT19937 and ``random_interval``, reproduced bit for bit and checked against numpy in the tests)
#: and the deletion sums. It is compiled once per process into a private temporary folder with
#: the system C compiler (``$CC``, default ``cc``); without a compiler, or with
#: ``ATTNXAI_NATIVE=0``, the pure numpy code below gives the same results, 2-3x slower.
_C_SOURCE = r"""
#include <stdint.h>
#define MT_N 624
#define MT_M 397
static void mt_gen(uint32_t *key) {
    uint32_t y; int i;
    for (i = 0; i < MT_N - MT_M; i++) {
        y = (key[i] & 0x80000000U) | (key[i + 1] & 0x7fffffffU);
        key[i] = key[i + MT_M] ^ (y >> 1) ^ (-(y & 1U) & 0x9908b0dfU);
    }
    for (; i < MT_N - 1; i++) {
        y = (key[i] & 0x80000000U) | (key[i + 1] & 0x7fffffffU);
        key[i] = key[i + (MT_M - MT_N)] ^ (y >> 1) ^ (-(y & 1U) & 0x9908b0dfU);
    }
    y = (key[MT_N - 1] & 0x80000000U) | (key[0] & 0x7fffffffU);
    key[MT_N - 1] = key[MT_M - 1] ^ (y >> 1) ^ (-(y & 1U) & 0x9908b0dfU);
}
static void temper(const uint32_t *key, uint32_t *out) {
    for (int i = 0; i < MT_N; i++) {
        uint32_t y = key[i];
        y ^= (y >> 11); y ^= (y << 7) & 0x9d2c5680U; y ^= (y << 15) & 0xefc60000U; y ^= (y >> 18);
        out[i] = y;
    }
}
/* For each of nperm samples: shuffle 0..d-1 as numpy's legacy RandomState.shuffle does
   (i = d-1..1, j = random_interval(i), swap) and clear masks[k*d + perm[r]] for r < sizes[k].
   key/pos: the legacy MT19937 state (advanced in place); buf holds the tempered outputs. */
void lime_masks(uint32_t *key, int64_t *pos_io, int64_t d, int64_t nperm, const int64_t *sizes,
                uint8_t *masks, int64_t *perm) {
    uint32_t buf[MT_N];
    int64_t pos = *pos_io;
    temper(key, buf);
    for (int64_t k = 0; k < nperm; k++) {
        for (int64_t i = 0; i < d; i++) perm[i] = i;
        for (int64_t i = d - 1; i >= 1; i--) {
            uint32_t mask = (uint32_t)i, v;
            mask |= mask >> 1; mask |= mask >> 2; mask |= mask >> 4;
            mask |= mask >> 8; mask |= mask >> 16;
            do {
                if (pos >= MT_N) { mt_gen(key); temper(key, buf); pos = 0; }
                v = buf[pos++] & mask;
            } while (v > (uint32_t)i);
            int64_t t = perm[i]; perm[i] = perm[v]; perm[v] = t;
        }
        uint8_t *row = masks + k * d;
        for (int64_t r = 0; r < sizes[k]; r++) row[perm[r]] = 0;
    }
    *pos_io = pos;
}
/* Deletion sums for one sample. Token t (kept if z[word[t]]) lands at position q + 1, q = number
   of kept tokens before it; with A[t] = (ea*cw, ea) and B[q] = (eb, eb*cp), K heads each, its
   exp(score) * value is ea*eb*(cw + cp) and its exp(score) ea*eb: num[0:K] and num[K:2K] (den)
   are their sums; count = number of kept tokens. */
static inline void dsum(int64_t T, const int64_t K, const uint8_t *z, const int64_t *word,
                        const double *A, const double *B, double *num, int64_t *count,
                        int64_t *kept) {
    int64_t m = 0;
    for (int64_t t = 0; t < T; t++) { kept[m] = t; m += z[word[t]] != 0; }
    double *den = num + K;
    for (int64_t k = 0; k < 2 * K; k++) num[k] = 0.0;
    for (int64_t q = 0; q < m; q++) {
        const double *a = A + kept[q] * 2 * K, *b = B + q * 2 * K;
        for (int64_t k = 0; k < K; k++) {
            num[k] += a[k] * b[k] + a[K + k] * b[K + k];
            den[k] += a[K + k] * b[k];
        }
    }
    *count = m;
}
/* dsum for n samples (masks n x d), out n x 2K; K == 6 (the paper's) gets a specialised loop. */
void delete_sums(int64_t n, int64_t d, int64_t T, int64_t K, const uint8_t *masks,
                 const int64_t *word, const double *A, const double *B, double *out,
                 int64_t *counts, int64_t *kept) {
    if (K == 6) {
        for (int64_t i = 0; i < n; i++)
            dsum(T, 6, masks + i * d, word, A, B, out + i * 12, counts + i, kept);
    } else {
        for (int64_t i = 0; i < n; i++)
            dsum(T, K, masks + i * d, word, A, B, out + i * 2 * K, counts + i, kept);
    }
}
"""
_NATIVE: Any = None          # the loaded library, False if unavailable
_NATIVE_REASON = "not tried yet"


def native_status() -> tuple[bool, str]:
    """(whether the compiled helper is in use, why not / where from). Compiles it if needed."""
    _native()
    return bool(_NATIVE), _NATIVE_REASON


def _native() -> Any:
    global _NATIVE, _NATIVE_REASON
    if _NATIVE is not None:
        return _NATIVE
    import ctypes
    import os
    import shutil
    import subprocess
    import tempfile

    _NATIVE = False
    if os.environ.get("ATTNXAI_NATIVE", "1").strip().lower() in ("0", "false", "no", "off"):
        _NATIVE_REASON = "disabled by ATTNXAI_NATIVE=0"
        return _NATIVE
    cc = os.environ.get("CC", "cc")
    if shutil.which(cc) is None:
        _NATIVE_REASON = f"no C compiler ({cc!r} not found): using the numpy code"
        return _NATIVE
    folder = tempfile.mkdtemp(prefix="attnxai-lime-")
    try:
        src, lib = os.path.join(folder, "lime_native.c"), os.path.join(folder, "lime_native.so")
        with open(src, "w") as fh:
            fh.write(_C_SOURCE)
        proc = subprocess.run([cc, "-O3", "-shared", "-fPIC", "-o", lib, src],
                              capture_output=True, text=True, timeout=120)
        if proc.returncode != 0:
            _NATIVE_REASON = f"{cc} failed: {proc.stderr.strip()[:300]}"
            return _NATIVE
        so = ctypes.CDLL(lib)
    except (OSError, subprocess.SubprocessError) as exc:
        _NATIVE_REASON = f"could not build the helper: {exc}"
        return _NATIVE
    finally:
        shutil.rmtree(folder, ignore_errors=True)  # the loaded library stays mapped
    p, i64 = ctypes.c_void_p, ctypes.c_int64
    so.lime_masks.argtypes = [p, p, i64, i64, p, p, p]
    so.lime_masks.restype = None
    so.delete_sums.argtypes = [i64, i64, i64, i64, p, p, p, p, p, p, p]
    so.delete_sums.restype = None
    _NATIVE, _NATIVE_REASON = so, f"compiled with {cc}"
    return _NATIVE


# ====================================================================== sampling and weights
def _check_random_state(random_state: Any) -> np.random.RandomState:
    """sklearn's ``check_random_state`` (what lime uses), with a clearer error."""
    if random_state is None or random_state is np.random:
        return np.random.mtrand._rand
    if isinstance(random_state, np.random.RandomState):
        return random_state
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        if not 0 <= int(random_state) < 2**32:
            raise ValueError(f"random_state must be an int in [0, 2**32), got {random_state}")
        return np.random.RandomState(int(random_state))
    raise ValueError("random_state must be None, an int or a numpy.random.RandomState (what lime "
                     f"accepts), got {type(random_state).__name__}")


def sample_masks(d: int, num_samples: int, random_state: Any = None, *,
                 native: bool | None = None) -> np.ndarray:
    """lime's perturbation masks: (num_samples, d) bool, True = feature kept; row 0 all True.

    Consumes ``random_state`` exactly as lime's ``LimeTextExplainer.__data_labels_distances``:
    ``randint(1, d + 1, num_samples - 1)``, then one ``choice(range(d), size, replace=False)`` per
    sample. ``choice`` without replacement is ``permutation(d)[:size]``: a Fisher-Yates shuffle of
    ``arange(d)`` by numpy's legacy ``random_interval``. The numpy code shuffles rows in place with
    the same ``RandomState.shuffle`` calls (rows holding flat indices, so one scatter builds the
    masks, no string); the native helper runs the same MT19937 stream in C from the state's key
    and position and writes the advanced state back. ``native=None`` uses the helper when it
    could be built (see :func:`native_status`).
    """
    rs = _check_random_state(random_state)
    n = num_samples - 1
    sizes = rs.randint(1, d + 1, n)
    masks = np.ones((num_samples, d), dtype=bool)
    lib = _native() if native is None or native else False
    if native and not lib:
        raise RuntimeError(f"the native helper is not available: {_NATIVE_REASON}")
    state = rs.get_state(legacy=False)
    if lib and state["bit_generator"] == "MT19937" and d < 2**31:
        key = np.array(state["state"]["key"], dtype=np.uint32)   # a copy: C advances it
        pos = np.array([state["state"]["pos"]], dtype=np.int64)
        sizes64 = np.ascontiguousarray(sizes, dtype=np.int64)
        perm = np.empty(d, dtype=np.int64)
        out = masks[1:].view(np.uint8)
        lib.lime_masks(key.ctypes.data, pos.ctypes.data, d, n, sizes64.ctypes.data,
                       out.ctypes.data, perm.ctypes.data)
        state["state"] = {"key": key, "pos": int(pos[0])}
        rs.set_state(state)
        return masks
    rows = (np.arange(1, n + 1, dtype=np.int64) * d)[:, None] + np.arange(d, dtype=np.int64)
    collections.deque(map(rs.shuffle, rows), maxlen=0)   # rows[i] = i*d + permutation_i
    masks.reshape(-1)[rows] = np.arange(d)[None, :] >= sizes[:, None]  # the first `size` dropped
    return masks


@functools.lru_cache(maxsize=512)
def _cosine_distance_by_count(d: int) -> np.ndarray:
    """100 * cosine distance between a 0/1 vector with k ones and the all-ones vector, k = 0..d,
    computed the way sklearn does for lime's sparse matrix (so the result is bitwise lime's):
    rows normalised by division, products summed one by one, ``1 - S`` clipped to [0, 2]."""
    k = np.arange(1, d + 1, dtype=np.float64)
    term = (1.0 / np.sqrt(k)) * (1.0 / np.sqrt(float(d)))            # (d,)
    sim = np.zeros(d + 1)
    block = max(1, 4_000_000 // d)                                     # bounded memory
    for lo in range(0, d, block):
        hi = min(d, lo + block)
        partial = np.cumsum(np.broadcast_to(term[lo:hi, None], (hi - lo, hi)), axis=1)
        sim[lo + 1:hi + 1] = partial[np.arange(hi - lo), np.arange(lo, hi)]  # k = lo+1..hi
    dist = np.clip(1.0 - sim, 0.0, 2.0) * 100
    dist.setflags(write=False)
    return dist


def kernel_weights(masks: np.ndarray, kernel_width: float) -> np.ndarray:
    """lime's sample weights ``sqrt(exp(-D^2 / width^2))``, ``D = 100 * cosine distance to row 0``
    (which must be all ones, as lime's is)."""
    d = masks.shape[1]
    dist = _cosine_distance_by_count(d)[masks.sum(axis=1)]
    return np.sqrt(np.exp(-(dist ** 2) / kernel_width ** 2))


# ====================================================================== weighted ridge
def weighted_ridge(X: np.ndarray, y: np.ndarray, weights: np.ndarray, alpha: float = 1.0, *,
                   chunk_size: int = 8192) -> tuple[np.ndarray, float, float, float]:
    """``sklearn.linear_model.Ridge(alpha, fit_intercept=True).fit(X, y, sample_weight=weights)``
    in closed form, as lime fits it: centre by the weighted means ``xbar``, ``ybar``, solve
    ``(Xc^T W Xc + alpha I) beta = Xc^T W yc`` (Cholesky), ``intercept = ybar - xbar . beta``.

    Returns ``(coef, intercept, score, local_pred)``: ``score`` is sklearn's
    ``score(X, y, sample_weight)``, the weighted R^2 ``1 - SSR / SST``, with
    ``SSR = SST - beta . b - alpha |beta|^2`` (``b = Xc^T W yc``, an identity of the normal
    equations, so no second pass over ``X``); ``local_pred`` is the prediction for ``X[0]``.
    ``X`` may be bool (masks); it is scaled by ``sqrt(w)`` into float64 a chunk of rows at a time
    and ``X^T W X`` accumulated with a symmetric rank-k update.
    """
    X = np.asarray(X)
    y = np.asarray(y, dtype=np.float64)
    w = np.asarray(weights, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D, got shape {X.shape}")
    n, d = X.shape
    if y.shape != (n,) or w.shape != (n,):
        raise ValueError(f"X is {X.shape} but y is {y.shape} and weights {w.shape}")
    sw = np.sqrt(w)
    gram = np.zeros((d, d))
    moments = np.zeros((2, d))                      # [X^T w, X^T W y]
    for start in range(0, n, chunk_size):
        stop = min(start + chunk_size, n)
        xs = np.multiply(X[start:stop], sw[start:stop, None], dtype=np.float64)  # sqrt(W) X
        gram += xs.T @ xs                           # numpy calls syrk for a.T @ a
        moments += np.stack([sw[start:stop], sw[start:stop] * y[start:stop]]) @ xs
    wsum = w.sum()
    ybar = (w @ y) / wsum
    xbar = moments[0] / wsum
    a = gram - wsum * np.outer(xbar, xbar)
    a.flat[:: d + 1] += alpha
    b = moments[1] - wsum * xbar * ybar
    coef = scipy.linalg.solve(a, b, assume_a="pos", check_finite=False)
    intercept = float(ybar - xbar @ coef)
    sst = float(w @ (y - np.average(y, weights=w)) ** 2)
    ssr = max(sst - float(coef @ b) - alpha * float(coef @ coef), 0.0)
    if sst == 0.0:  # sklearn's r2_score(force_finite=True)
        score = 1.0 if ssr == 0.0 else 0.0
    else:
        score = 1.0 - ssr / sst
    local_pred = float(X[0].astype(np.float64) @ coef + intercept)
    return coef, intercept, score, local_pred


# ====================================================================== input checks
def is_normalized(text: str) -> bool:
    """True if ``text`` is in :func:`attnxai.normalize_for_lime`'s form (any length)."""
    return isinstance(text, str) and _NORMALIZED.fullmatch(text) is not None


def _check_text(text: Any) -> None:
    if not isinstance(text, str):
        raise ValueError(f"text must be a str, got {type(text).__name__}")
    if not text.strip():
        raise ValueError("text is empty: there is nothing to explain")
    if not re.search(r"\w", text):
        raise ValueError(f"text has no word character (lime splits on \\W+, so it would have no "
                         f"feature): {text[:40]!r}")


def _check_settings(num_samples: Any, kernel_width: Any) -> None:
    if isinstance(num_samples, bool) or not isinstance(num_samples, numbers.Integral):
        raise ValueError(f"num_samples must be an int, got {type(num_samples).__name__}")
    if num_samples < 2:
        raise ValueError(f"num_samples must be >= 2 (sample 0 is the document itself), got "
                         f"{num_samples}")
    if isinstance(kernel_width, bool) or not isinstance(kernel_width, numbers.Real) \
            or not math.isfinite(kernel_width) or kernel_width <= 0:
        raise ValueError(f"kernel_width must be a positive number, got {kernel_width!r}")


def _check_mode(bow: Any, mask_string: Any, path: Any, target: Any) -> None:
    if not isinstance(bow, (bool, np.bool_)):
        raise ValueError(f"bow must be True (delete words) or False (replace positions by "
                         f"mask_string), got {bow!r}")
    if not isinstance(mask_string, str):
        raise ValueError(f"mask_string must be a str (lime's own default is 'UNKWORDZ'), got "
                         f"{type(mask_string).__name__}")
    if path not in PATHS:
        raise ValueError(f"path must be one of {PATHS}, got {path!r}")
    if isinstance(target, bool) or not isinstance(target, numbers.Integral) or target < 0:
        raise ValueError(f"target must be a class index (an int >= 0), got {target!r}")


def _check_target(target: Any, n_classes: int) -> int:
    if isinstance(target, bool) or not isinstance(target, numbers.Integral) \
            or not 0 <= target < n_classes:
        raise ValueError(f"target must be a class index in [0, {n_classes}), got {target!r}")
    return int(target)


def _check_model_mask(pre: Pretrained, bow: bool, mask_string: str) -> int | None:
    """With bow=False the model must read ``mask_string`` as the UNK token: returns its id."""
    if bow:
        return None
    toks = tokenize(mask_string)
    if len(toks) != 1:
        raise ValueError(f"with bow=False, mask_string must be one token for the model; "
                         f"{mask_string!r} tokenizes to {toks}, which would shift the positions")
    idx = pre.vocab.lookup(toks)[0]
    if idx != pre.vocab.unk_id:
        raise ValueError(f"with bow=False, mask_string {mask_string!r} is the vocabulary word "
                         f"{toks[0]!r} (id {idx}), not UNK: masked words would be replaced by a "
                         "real word. Use 'UNK' (or any string the vocabulary does not know)")
    return idx


def fast_path_reason(model: Any, text: str) -> str:
    """Why ``text`` cannot take the fast path with ``model`` ('' if it can)."""
    if not isinstance(model, Pretrained):
        return "model is a plain classifier_fn, not an attnxai.Pretrained"
    if not is_normalized(text):
        return "text is not in normalize_for_lime's form (lowercase [0-9a-z] tokens, single spaces)"
    return ""


# ====================================================================== fast path: the model
_MODEL_CACHE: dict[int, tuple[Any, tuple, dict[str, np.ndarray]]] = {}


def _model_constants(pre: Pretrained) -> dict[str, np.ndarray]:
    """What does not depend on the document (float64): [CLS] is always at position 0 and never
    masked, so its query, hence every score and value map, is fixed. Cached per model (and
    recomputed if its weights change in place)."""
    import weakref

    m = pre.model
    params = (m.W_e, m.W_q, m.W_k, m.W_v, m.W_l, m.P)
    stamp = tuple((p.data_ptr(), p._version, p.dtype) for p in params) \
        + ((pre.vocab.cls_id, pre.vocab.unk_id),)
    hit = _MODEL_CACHE.get(id(m))
    if hit is not None and hit[0]() is m and hit[1] == stamp:
        return hit[2]
    dt, cpu = torch.float64, torch.device("cpu")

    def f64(x: torch.Tensor) -> np.ndarray:
        return x.detach().to(cpu, dt).numpy()

    with torch.no_grad():
        P = f64(m.P)
        e_cls = f64(m.W_e[pre.vocab.cls_id]) + P[0]
        W_q, W_k, W_v, W_l = f64(m.W_q), f64(m.W_k), f64(m.W_v), f64(m.W_l)
        unk = f64(m.W_e[pre.vocab.unk_id])
    q1 = np.einsum("kad,d->ka", W_q, e_cls)
    U = np.einsum("ka,kad->dk", q1, W_k) / math.sqrt(m.d_attn)   # (D, K): score = e . U
    H = np.einsum("kcv,kvd->dkc", W_l, W_v)                        # (D, K, C): value maps
    const = {"U": U, "H": H, "ap": P @ U, "cp": np.einsum("ld,dkc->lkc", P, H),
             "acls": e_cls @ U, "ccls": np.einsum("d,dkc->kc", e_cls, H),
             "aunk": unk @ U, "cunk": np.einsum("d,dkc->kc", unk, H)}
    if len(_MODEL_CACHE) > 8:
        _MODEL_CACHE.clear()
    _MODEL_CACHE[id(m)] = (weakref.ref(m), stamp, const)
    return const


class _Tables:
    """Per-document projections of the Section 2 model (float64): scores ``a`` (per head) and
    value scores ``c`` (per head, for logit ``target``) of the words (``aw``, ``cw``: (T, K)), the
    positions (``ap``, ``cp``: (L, K)), [CLS] with its position 0 and the UNK word (``(K,)``)."""

    def __init__(self, pre: Pretrained, tokens: list[str], target: int):
        m = pre.model
        self.padding, self.L, self.K = m.padding, m.max_len, m.n_heads
        c = _model_constants(pre)
        ids = torch.as_tensor(pre.vocab.lookup(tokens), dtype=torch.long)
        with torch.no_grad():
            words = m.W_e[ids.to(m.W_e.device)].detach().to("cpu", torch.float64).numpy()
        cw_all = np.einsum("td,dkc->tkc", words, c["H"])               # (T, K, C)
        self.aw, self.cw = words @ c["U"], cw_all[:, :, target]
        self.ap, self.cp = c["ap"], c["cp"][:, :, target]
        self.acls, self.ccls = c["acls"], c["ccls"][:, target]
        self.aunk, self.cunk = c["aunk"], c["cunk"][:, target]
        # the model's output on the whole document, every class (lime's predict_proba)
        T = len(tokens)
        s = np.concatenate([self.acls[None], self.aw + self.ap[1:T + 1]])
        v = np.concatenate([c["ccls"][None], cw_all + c["cp"][1:T + 1]])
        if self.padding == "unk" and T + 1 < self.L:
            s = np.concatenate([s, self.aunk + self.ap[T + 1:]])
            v = np.concatenate([v, c["cunk"][None] + c["cp"][T + 1:]])
        alpha = np.exp(s - s.max(0))
        alpha /= alpha.sum(0)
        self.prediction = np.einsum("tk,tkc->c", alpha, v) / self.K


class _ReplaceEvaluator:
    """Logits for bow=False masks: each position holds its word (z=1) or UNK (z=0)."""

    def __init__(self, tab: _Tables, T: int):
        pos = slice(1, T + 1)
        s1, v1 = tab.aw + tab.ap[pos], tab.cw + tab.cp[pos]
        s0, v0 = tab.aunk + tab.ap[pos], tab.cunk + tab.cp[pos]
        sp = tab.aunk + tab.ap[T + 1:] if tab.padding == "unk" else np.zeros((0, tab.K))
        vp = tab.cunk + tab.cp[T + 1:] if tab.padding == "unk" else np.zeros((0, tab.K))
        alls = np.concatenate([tab.acls[None], s1, s0, sp])
        shift = alls.max(axis=0)
        self.ok = bool(np.all(shift - alls.min(axis=0) < _MAX_SCORE_RANGE))
        e1, e0, ep = np.exp(s1 - shift), np.exp(s0 - shift), np.exp(sp - shift)
        ecls = np.exp(tab.acls - shift)
        self.const_num = ecls * tab.ccls + (e0 * v0).sum(0) + (ep * vp).sum(0)
        self.const_den = ecls + e0.sum(0) + ep.sum(0)
        self.M = np.ascontiguousarray(np.concatenate([e1 * v1 - e0 * v0, e1 - e0], axis=1))
        self.K = tab.K

    def __call__(self, z: np.ndarray) -> np.ndarray:
        r = z.astype(np.float64) @ self.M
        num = r[:, : self.K] + self.const_num
        den = r[:, self.K:] + self.const_den
        return (num / den).mean(axis=1)


class _DeleteEvaluator:
    """Logits for bow=True masks: dropped words vanish and the kept tokens move up, token ``t``
    (0-based among the document's tokens) landing at position ``q + 1``, ``q`` = the number of kept
    tokens before it. Its score ``aw[t] + ap[q+1]`` splits, so ``exp(score - shift) =
    ea[t] * eb[q]``, and per head the logit is ``num / den`` with ``num = sum ea eb (cw + cp)``,
    ``den = sum ea eb`` over the kept tokens (plus [CLS], plus the UNK fill in "unk" mode)."""

    def __init__(self, tab: _Tables, word_index: np.ndarray):
        T, K = len(word_index), tab.K
        self.word_index = np.ascontiguousarray(word_index, dtype=np.int64)
        self.T, self.K = T, K
        ap, cp = tab.ap[1:T + 1], tab.cp[1:T + 1]                     # positions 1..T
        unk_s = tab.aunk + tab.ap[1:]                                  # UNK fill, positions 1..L-1
        amax = tab.aw.max(0)
        shift = np.maximum(amax + ap.max(0), tab.acls)
        lo = np.minimum(tab.aw.min(0) + ap.min(0), tab.acls)
        if tab.padding == "unk":
            shift = np.maximum(shift, unk_s.max(0))
            lo = np.minimum(lo, unk_s.min(0))
        self.ok = bool(np.all(shift - lo < _MAX_SCORE_RANGE))
        ea = np.exp(tab.aw - amax)                                     # (T, K)
        eb = np.exp(ap - (shift - amax))                               # (T, K)
        self.A = np.ascontiguousarray(np.concatenate([ea * tab.cw, ea], axis=1))  # (T, 2K)
        self.B = np.ascontiguousarray(np.concatenate([eb, eb * cp], axis=1))      # (T, 2K)
        self._table: np.ndarray | None = None
        ecls = np.exp(tab.acls - shift)
        self.cls_num, self.cls_den = ecls * tab.ccls, ecls
        if tab.padding == "unk":
            # UNK fill after k kept tokens: positions k+1..L-1; suffix sums indexed by k
            eu = np.exp(unk_s - shift)                                 # (L-1, K)
            num = np.concatenate([np.cumsum((eu * (tab.cunk + tab.cp[1:]))[::-1], 0)[::-1],
                                  np.zeros((1, K))])
            den = np.concatenate([np.cumsum(eu[::-1], 0)[::-1], np.zeros((1, K))])
            self.fill_num, self.fill_den = num, den                    # row k: positions k+1..
        else:
            self.fill_num = self.fill_den = None

    def table(self) -> np.ndarray:
        """(T*T, 2K): row ``(t - q) * T + q`` holds (num, den) terms of token t at position q+1."""
        if self._table is None:
            T, K = self.T, self.K
            t_of = np.arange(T)[None, :] + np.arange(T)[:, None]       # [t - q, q] -> t
            tt = np.where(t_of < T, t_of, 0)
            a, b = self.A[tt], self.B[np.broadcast_to(np.arange(T), (T, T))]   # (T, T, 2K)
            table = np.empty((T, T, 2 * K))
            table[..., :K] = a[..., :K] * b[..., :K] + a[..., K:] * b[..., K:]
            table[..., K:] = a[..., K:] * b[..., :K]
            table[t_of >= T] = 0.0
            self._table = table.reshape(T * T, 2 * K)
        return self._table

    def sums(self, z: np.ndarray, native: bool | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(per-sample (num, den) sums over the kept tokens (n, 2K), kept counts (n,))."""
        T, n = self.T, len(z)
        lib = _native() if native is None or native else False
        if native and not lib:
            raise RuntimeError(f"the native helper is not available: {_NATIVE_REASON}")
        if lib:
            z = np.ascontiguousarray(z)
            out = np.empty((n, 2 * self.K))
            counts = np.empty(n, dtype=np.int64)
            scratch = np.empty(T, dtype=np.int64)
            lib.delete_sums(n, z.shape[1], T, self.K, z.view(np.uint8).ctypes.data,
                            self.word_index.ctypes.data, self.A.ctypes.data, self.B.ctypes.data,
                            out.ctypes.data, counts.ctypes.data, scratch.ctypes.data)
            return out, counts
        kept = z[:, self.word_index]                                   # (n, T) token kept?
        counts = kept.sum(axis=1)
        flat = np.flatnonzero(kept)                                    # row-major: i*T + t
        starts = np.concatenate([[0], np.cumsum(counts)])
        # table row (t - q) * T + q, t = flat - i*T, q = (index in flat) - starts[i]: rows of
        # one sample are read forwards
        col = flat * T - (T - 1) * np.arange(len(flat), dtype=np.int64) \
            + np.repeat(starts[:-1] * (T - 1) - np.arange(n, dtype=np.int64) * T * T, counts)
        S = scipy.sparse.csr_matrix((np.ones(len(col)), col, starts), shape=(n, T * T))
        return S @ self.table(), counts

    def __call__(self, z: np.ndarray, native: bool | None = None) -> np.ndarray:
        r, counts = self.sums(z, native)
        K = self.K
        num = r[:, :K] + self.cls_num
        den = r[:, K:] + self.cls_den
        if self.fill_num is not None:
            num += self.fill_num[counts]
            den += self.fill_den[counts]
        return (num / den).mean(axis=1)


# ====================================================================== the problem
class _Problem:
    """One (model, text, settings): lime's features and a function from masks to labels."""

    def __init__(self, model: Any, text: str, *, bow: bool, mask_string: str, target: int,
                 path: str, chunk_size: int):
        _check_text(text)
        _check_mode(bow, mask_string, path, target)
        if isinstance(chunk_size, bool) or not isinstance(chunk_size, numbers.Integral) \
                or chunk_size < 1:
            raise ValueError(f"chunk_size must be a positive int, got {chunk_size!r}")
        self.bow, self.mask_string, self.chunk_size = bool(bow), mask_string, int(chunk_size)
        self.target = int(target)
        pre = model if isinstance(model, Pretrained) else None
        if pre is None and not callable(model):
            raise ValueError("model must be an attnxai.Pretrained or a classifier_fn(list[str]) -> "
                             f"(n, n_classes) array, got {type(model).__name__}")
        if pre is not None:
            self.target = _check_target(target, pre.model.n_classes)
            limit = pre.model.max_len - 1
            n_tok = len(tokenize(text))
            if n_tok > limit:
                raise ValueError(
                    f"text has {n_tok} tokens but the model reads at most {limit} (plus [CLS]): "
                    "lime would silently explain the truncated model. Pass "
                    "normalize_for_lime(text) (the authors' preprocessing, which truncates), or "
                    "pass pre.predict_logits as a plain classifier_fn to get lime's behaviour")
            if n_tok == 0:
                raise ValueError(f"the model's tokenizer finds no token in {text[:40]!r}")
            _check_model_mask(pre, self.bow, mask_string)
        reason = fast_path_reason(model, text)
        if path == "fast" and reason:
            raise ValueError(f"path='fast' is not possible: {reason}")
        self.path = "generic" if (path == "generic" or reason) else "fast"
        self.reason = "path='generic' requested" if path == "generic" else reason
        if self.path == "fast":
            tokens = text.split(" ")
            tab = _Tables(pre, tokens, self.target)
            if self.bow:
                first: dict[str, int] = {}
                for tok in tokens:
                    first.setdefault(tok, len(first))
                self.words = list(first)
                self.evaluator: Any = _DeleteEvaluator(
                    tab, np.array([first[t] for t in tokens], dtype=np.int64))
            else:
                self.words = list(tokens)
                self.evaluator = _ReplaceEvaluator(tab, len(tokens))
            if self.evaluator.ok:
                self.prediction = tab.prediction
            elif path == "fast":
                raise ValueError("path='fast' is not possible: the model's attention scores on "
                                 f"this text span more than {_MAX_SCORE_RANGE:g} (exp underflow)")
            else:
                self.path = "generic"
                self.reason = ("the model's attention scores on this text span too wide a range "
                               "for the fast evaluation")
        if self.path == "generic":
            from lime.lime_text import IndexedString

            self.classifier_fn = pre.predict_logits if pre is not None else model
            self.indexed = IndexedString(text, bow=self.bow, mask_string=mask_string)
            self.words = list(self.indexed.inverse_vocab)
            if not self.words:
                raise ValueError(f"lime finds no word in {text[:40]!r}: nothing to explain")

    def labels(self, masks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(target column of the model's output on every sample, output on the document)."""
        if self.path == "fast":
            y = np.concatenate([self.evaluator(masks[s:s + self.chunk_size])
                                for s in range(0, len(masks), self.chunk_size)])
            return y, self.prediction
        strings = [self.indexed.raw_string()]
        for row in masks[1:]:
            strings.append(self.indexed.inverse_removing(np.flatnonzero(~row)))
        out = np.asarray(self.classifier_fn(strings))
        if out.ndim != 2 or out.shape[0] != len(strings):
            raise ValueError(f"classifier_fn must return an (n, n_classes) array for n texts; got "
                             f"shape {out.shape} for {len(strings)} texts")
        self.target = _check_target(self.target, out.shape[1])
        return out[:, self.target].astype(np.float64), out[0].astype(np.float64)

    def explain(self, num_samples: int, kernel_width: float, random_state: Any,
                keep_data: bool) -> LimeResult:
        masks = sample_masks(len(self.words), int(num_samples), random_state)
        y, prediction = self.labels(masks)
        w = kernel_weights(masks, float(kernel_width))
        coef, intercept, score, local_pred = weighted_ridge(masks, y, w, 1.0,
                                                            chunk_size=self.chunk_size)
        return LimeResult(words=list(self.words), coef=coef, intercept=intercept, score=score,
                          local_pred=local_pred, prediction=np.asarray(prediction),
                          target=int(self.target), bow=self.bow, num_samples=int(num_samples),
                          kernel_width=float(kernel_width), mask_string=self.mask_string,
                          path=self.path, reason=self.reason,
                          masks=masks if keep_data else None, labels=y if keep_data else None,
                          weights=w if keep_data else None)


# ====================================================================== public API
def explain(model: Pretrained | Callable[[list[str]], np.ndarray], text: str, *,
            num_samples: int = 5000, kernel_width: float = 25, bow: bool = True,
            mask_string: str = "UNK", random_state: Any = None, target: int = 1,
            path: str = "auto", keep_data: bool = False, chunk_size: int = 4096) -> LimeResult:
    """lime's explanation of ``model`` at ``text``, exactly (see the module docstring).

    Same result as ``LimeTextExplainer(kernel_width=kernel_width, bow=bow,
    mask_string=mask_string, random_state=random_state).explain_instance(text, classifier_fn,
    labels=(target,), num_features=d, num_samples=num_samples)``, all ``d`` features kept.

    ``model``: an :class:`attnxai.Pretrained` (its ``predict_logits`` is lime's classifier_fn: raw
    logits) or any ``classifier_fn(list[str]) -> (n, n_classes)``. **The fast path needs a
    ``Pretrained`` and a text already in** :func:`attnxai.normalize_for_lime` **form** (lowercase
    ``[0-9a-z]+`` tokens joined by single spaces, at most ``max_len - 1`` tokens); any other input
    takes the generic path (``path="auto"``) or raises (``path="fast"``); ``path="generic"``
    forces lime's string-building path. ``result.path`` / ``result.reason`` report it.
    ``random_state``: an int, a ``numpy.random.RandomState`` (advanced exactly as lime advances
    it) or None (numpy's global state, as lime). ``target``: the class (logit) explained.
    ``mask_string`` is ignored with ``bow=True`` (as in lime); with ``bow=False`` and a
    ``Pretrained`` it must be read by the model as the UNK token. ``keep_data=True`` keeps the
    masks, labels and weights in the result; ``chunk_size`` samples are evaluated at once.

    Raises ``ValueError`` for an empty text or one without word characters, ``num_samples < 2``,
    a non-positive ``kernel_width``, a non-bool ``bow``, a non-str ``mask_string`` (or, with
    ``bow=False``, one the model would read as a real word), a ``target`` outside the classes, and
    a text longer than the model accepts.
    """
    _check_settings(num_samples, kernel_width)
    problem = _Problem(model, text, bow=bow, mask_string=mask_string, target=target,
                       path=path, chunk_size=chunk_size)
    return problem.explain(num_samples, kernel_width, random_state, keep_data)


def explain_repeats(model: Pretrained | Callable[[list[str]], np.ndarray], text: str,
                    random_states: Sequence[Any], *, num_samples: int = 5000,
                    kernel_width: float = 25, bow: bool = True, mask_string: str = "UNK",
                    target: int = 1, path: str = "auto", keep_data: bool = False,
                    chunk_size: int = 4096) -> list[LimeResult]:
    """:func:`explain` once per entry of ``random_states`` (e.g. 5 seeds: lime's run-to-run
    spread), sharing the per-document preparation."""
    _check_settings(num_samples, kernel_width)
    problem = _Problem(model, text, bow=bow, mask_string=mask_string, target=target,
                       path=path, chunk_size=chunk_size)
    return [problem.explain(num_samples, kernel_width, rs, keep_data) for rs in random_states]
