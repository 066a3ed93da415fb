"""The single-layer model on lime's masks, evaluated from its float64 projections
(:class:`attnxai.model.network.DocumentTables`) instead of on perturbed strings.

[CLS] sits at position 0 and is never masked, so per head the logit of a perturbed document is a
ratio ``num / den`` of sums over its tokens of ``exp(score)`` and ``exp(score) * value``.

* Replacement (``bow=False``): each position holds its word (``z = 1``) or UNK (``z = 0``), so per
  head ``num`` and ``den`` are sums of one of two terms per position, selected by the mask
  (a compiled loop over positions, vectorised over samples:
  :func:`attnxai.fastlime.kernels.replacement_sums`).
* Deletion (``bow=True``): dropped words vanish and the kept tokens move up, token ``t`` landing at
  position ``1 + q``, ``q`` = the number of kept tokens before it. Its score still splits,
  ``exp(a[x_t] + b[1 + q]) = exp(a[x_t]) exp(b[1 + q])``, and the sums over the kept tokens are
  accumulated per sample by a compiled loop (:func:`attnxai.fastlime.kernels.deletion_sums`).

Both padding modes are supported (``"unk"``: the document is filled with ``UNK`` tokens that take
part in attention, up to ``max_len``). ``ok`` is False when the attention logits of the document
span more than :data:`MAX_SCORE_RANGE` (``exp`` would underflow): the caller then takes lime's
generic path.
"""

from __future__ import annotations

import numpy as np

from ..model.network import DocumentTables
from . import kernels

__all__ = ["DeleteEvaluator", "MAX_SCORE_RANGE", "ReplaceEvaluator"]

#: exp() of scores more than this far below the largest one could underflow.
MAX_SCORE_RANGE = 600.0


class ReplaceEvaluator:
    """Logits (n,) of the explained class for bow=False masks (n, T): position t holds its word
    or UNK."""

    def __init__(self, tab: DocumentTables, *, backend: str = "auto"):
        T = tab.T - 1                                    # words after [CLS]
        L = tab.max_len
        pos = slice(1, T + 1)
        aw, cw = tab.word_score[1:], tab.word_value[1:]
        s1, v1 = aw + tab.pos_score[pos], cw + tab.pos_value[pos]
        s0, v0 = tab.unk_score + tab.pos_score[pos], tab.unk_value + tab.pos_value[pos]
        K = tab.n_heads
        if tab.padding == "unk":                         # UNK fill, positions T+1..L-1
            sp = tab.unk_score + tab.pos_score[T + 1:L]
            vp = tab.unk_value + tab.pos_value[T + 1:L]
        else:
            sp = vp = np.zeros((0, K))
        alls = np.concatenate([tab.cls_score[None], s1, s0, sp])
        shift = alls.max(axis=0)
        self.ok = bool(np.all(shift - alls.min(axis=0) < MAX_SCORE_RANGE))
        e1, e0, ep = np.exp(s1 - shift), np.exp(s0 - shift), np.exp(sp - shift)
        ecls = np.exp(tab.cls_score - shift)
        self.const_num = ecls * tab.cls_value + (ep * vp).sum(0)
        self.const_den = ecls + ep.sum(0)
        # kept and replaced positions in two products of positive weights: folding them into one
        # (z @ (e1 - e0) + sum e0) cancels catastrophically when UNK at a position takes most of
        # a head's attention and the word almost none (the denominator came out 0, or wrong)
        self.M1 = np.ascontiguousarray(np.concatenate([e1 * v1, e1], axis=1))
        self.M0 = np.ascontiguousarray(np.concatenate([e0 * v0, e0], axis=1))
        self.K = K
        self.backend_request, self.backend = backend, "not run yet"

    def __call__(self, z: np.ndarray) -> np.ndarray:
        r, self.backend = kernels.replacement_sums(z, self.M1, self.M0,
                                                   backend=self.backend_request)
        num = r[:, : self.K] + self.const_num
        den = r[:, self.K:] + self.const_den
        return (num / den).mean(axis=1)


class DeleteEvaluator:
    """Logits (n,) of the explained class for bow=True masks (n, d), d = distinct words;
    ``word_index[t]`` is the feature of token ``t`` (0-based among the words after [CLS]).

    Token ``t`` kept at position ``q + 1`` contributes ``ea[t] * eb[q]`` to ``den`` and
    ``ea[t] * eb[q] * (cw[t] + cp[q + 1])`` to ``num`` (per head), with ``ea = exp(a - max a)`` and
    ``eb`` the position factor scaled so that no term overflows: ``A = (ea * cw, ea)`` and
    ``B = (eb, eb * cp)`` (T, 2K) are what the compiled loop multiplies and sums.
    """

    def __init__(self, tab: DocumentTables, word_index: np.ndarray, *, backend: str = "auto"):
        self.word_index = np.ascontiguousarray(word_index, dtype=np.int64)
        T, K, L = len(self.word_index), tab.n_heads, tab.max_len
        self.T, self.K, self.backend_request = T, K, backend
        aw, cw = tab.word_score[1:], tab.word_value[1:]
        ap, cp = tab.pos_score[1:T + 1], tab.pos_value[1:T + 1]       # positions 1..T
        unk_s = tab.unk_score + tab.pos_score[1:L]                     # UNK fill, positions 1..L-1
        amax = aw.max(0)
        shift = np.maximum(amax + ap.max(0), tab.cls_score)
        lo = np.minimum(aw.min(0) + ap.min(0), tab.cls_score)
        if tab.padding == "unk":
            shift = np.maximum(shift, unk_s.max(0))
            lo = np.minimum(lo, unk_s.min(0))
        self.ok = bool(np.all(shift - lo < MAX_SCORE_RANGE))
        ea = np.exp(aw - amax)                                         # (T, K)
        eb = np.exp(ap - (shift - amax))                               # (T, K)
        self.A = np.ascontiguousarray(np.concatenate([ea * cw, ea], axis=1))  # (T, 2K)
        self.B = np.ascontiguousarray(np.concatenate([eb, eb * cp], axis=1))  # (T, 2K)
        ecls = np.exp(tab.cls_score - shift)
        self.cls_num, self.cls_den = ecls * tab.cls_value, ecls
        self._table: np.ndarray | None = None
        self.backend = "not run yet"
        if tab.padding == "unk":
            # UNK fill after k kept tokens: positions k+1..L-1; suffix sums indexed by k
            eu = np.exp(unk_s - shift)                                 # (L-1, K)
            fill = eu * (tab.unk_value + tab.pos_value[1:L])
            self.fill_num = np.concatenate([np.cumsum(fill[::-1], 0)[::-1], np.zeros((1, K))])
            self.fill_den = np.concatenate([np.cumsum(eu[::-1], 0)[::-1], np.zeros((1, K))])
        else:
            self.fill_num = self.fill_den = None

    def sums(self, z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(per-sample (num, den) sums over the kept tokens (n, 2K), kept counts (n,))."""
        if kernels.resolve(self.backend_request) == "numpy" and self._table is None:
            self._table = kernels.delete_table(self.A, self.B)         # built once per document
        out, counts, self.backend = kernels.deletion_sums(
            z, self.word_index, self.A, self.B, table=self._table, backend=self.backend_request)
        return out, counts

    def heads(self, z: np.ndarray) -> np.ndarray:
        """Every head's output (n, K) on the masks ``z`` (their mean is the logit)."""
        r, counts = self.sums(z)
        K = self.K
        if self.backend == "numba":              # the same bits, one compiled pass
            return self._compiled_ratios(r, counts)
        num = r[:, :K] + self.cls_num
        den = r[:, K:] + self.cls_den
        if self.fill_num is not None:
            num += self.fill_num[counts]
            den += self.fill_den[counts]
        return num / den

    def compiled_heads(self, z: np.ndarray) -> np.ndarray:
        """:meth:`heads` by the compiled kernels, called directly: for callers that evaluate
        many batches and checked once that ``kernels.resolve(...)`` gives ``"numba"``. ``z``
        (n, d) uint8, C-contiguous, 0 or 1 (not checked). The same bits as :meth:`heads`."""
        n, K = len(z), self.K
        r = np.empty((n, 2 * K))
        counts = np.empty(n, dtype=np.int64)
        kernels.delete_sums(z, self.word_index, self.A, self.B, r, counts)
        return self._compiled_ratios(r, counts)

    def _compiled_ratios(self, r: np.ndarray, counts: np.ndarray) -> np.ndarray:
        """:func:`kernels.head_ratios` of the sums ``r`` (n, 2K) and kept counts (n,)."""
        out = np.empty((len(r), self.K))
        empty = np.zeros((0, self.K))
        kernels.head_ratios(r, self.cls_num, self.cls_den,
                            empty if self.fill_num is None else self.fill_num,
                            empty if self.fill_den is None else self.fill_den, counts, out)
        return out

    def __call__(self, z: np.ndarray) -> np.ndarray:
        return self.heads(z).mean(axis=1)
