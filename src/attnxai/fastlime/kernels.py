"""Compiled kernels for :mod:`attnxai.fastlime`: lime's perturbation masks and the deletion sums.

One compiled kernel family, in one module on purpose (over the package's 450 lines): the numba
loops (:func:`shuffle_masks`, :func:`delete_sums`, :func:`replace_sums`), their numpy twins that
compute the same bits, and the one switch between them (:func:`resolve`) are read and tested
together, bit for bit (``tests/theory/test_lime_kernels.py``, which also finds their numba cache files
by this module's name).

Why compiled. Two loops of the LIME reproduction cannot be vectorised with numpy:

1. **The masks.** lime draws, for every sample, ``rs.choice(range(d), size, replace=False)``,
   which numpy's legacy ``RandomState`` computes as ``permutation(d)[:size]``: a Fisher-Yates
   shuffle of ``arange(d)`` (``i = d-1 .. 1``, ``j = random_interval(i)``, swap ``i`` and ``j``)
   whose every draw depends on the generator state left by the previous one. numpy can only run
   it one ``RandomState.shuffle`` call per sample (5000 Python-level calls for lime's default).
2. **The deletion sums.** With ``bow=True`` a dropped word vanishes and the kept tokens move up,
   so the position of a token depends on how many tokens before it were kept: a running count
   per sample. numpy needs a gather into a ``(T*T, 2K)`` table and a sparse product for it.

Both loops are short and branchy, which a just-in-time compiler turns into tight machine code:
:func:`shuffle_masks` and :func:`delete_sums` are compiled by the package's one numba decorator
(:func:`attnxai.native.jit`: on first use, then loaded from numba's on-disk cache). Without
numba, or with ``ATTNXAI_NATIVE=0`` in the environment, the numpy twins
:func:`shuffle_masks_numpy` and :func:`delete_sums_numpy` compute the same numbers, more slowly.
:func:`sample_masks` and :func:`deletion_sums` choose between the two (``backend="auto"``,
``"numba"`` or ``"numpy"``).

How exactness is guaranteed.

* **Masks.** :func:`shuffle_masks` runs numpy's legacy MT19937 generator itself, from the state
  ``rs.get_state(legacy=False)`` hands out (the 624-word ``key`` and the position ``pos``), and
  :func:`sample_masks` writes the advanced state back with ``rs.set_state``: the
  ``RandomState`` ends exactly where numpy's own calls would leave it. The generator is
  numpy's ``mt19937_gen`` (regenerate the 624 words when ``pos`` reaches 624) and
  ``mt19937_next32`` (tempering), and ``random_interval(max)`` is numpy's: a bit mask
  ``max | max>>1 | ... | max>>16`` and rejection of ``draw & mask > max`` (``max < 2**31`` here,
  so numpy takes its 32-bit branch). numba widens integer arithmetic to 64 bits, so every
  operation is done on non-negative ``int64`` values and masked with ``0xFFFFFFFF`` where C's
  ``uint32_t`` would wrap. The tests compare masks *and* the advanced state bit for bit with
  numpy's ``choice`` loop, including states whose next draw regenerates the key.
* **Deletion sums.** :func:`delete_sums` adds, per sample and head, the terms
  ``a[k]*b[k] + a[K+k]*b[K+k]`` (and ``a[K+k]*b[k]``) in the order of the kept tokens, starting
  from 0.0 -- the very operations, in the same order, that :func:`delete_sums_numpy` does (its
  table holds those products and its sparse product adds rows ``1.0 * row`` in that order).
  For speed the heads are padded to a multiple of 8 (of 2 or 4 for fewer heads) and summed as
  LLVM vectors, four samples at a time, every token visited and a dropped token's term added as
  a zero (which changes no sum's bits: :func:`_group_sums`); each lane does its head's
  operations in its head's order.
  numba compiles without ``fastmath``, so LLVM neither fuses multiply-adds nor reorders the
  sums: the results are equal to the bit (tested with ``np.array_equal`` for K = 1, 2, 4, 6,
  7, 11, 12).

Why LLVM IR and not numba's SLP vectoriser. numba compiles with LLVM's SLP (superword-level
parallelism) vectoriser off (numba PR #8852, after miscompilations: numba issues #8705, #8681). Its
switch, ``NUMBA_SLP_VECTORIZE`` (``numba.core.config.SLP_VECTORIZE``), is process-wide: numba 0.68.1
reads it whenever it builds a pass pipeline, there is no per-function option (numba issue #9396),
and the on-disk cache's key ignores it, so turning it on for these kernels would compile every
other numba function of the process with it too. ``benchmarks/bench_slp.py`` measured it anyway,
on uncached copies compiled with the switch set only around their compilation (2026-12-02, one
thread, interleaved, load average 2.9; all equal to the IR to the bit): for the deletion sums
(T = 255, d = 150, K = 6, n = 5000, the IR 2.05 ms) plain numba loops take 12.8x the IR's time
with SLP off and 12.8x with it on, the sums as generated scalar locals 5.9x and 8.7x, and
generated straight-line code over flat arrays with unsigned indices 4.8x and, with SLP on, 1.5x
(1.2x to 1.4x in two earlier runs). For ``X^T W X`` see :mod:`~attnxai.fastlime.counts`. No plain
form reaches the IR, and the nearest needs generated code and the process-wide switch: the IR
stays.

This module imports nothing from the rest of ``attnxai`` but :mod:`attnxai.native`.
"""

from __future__ import annotations

import collections
import os
import warnings

import numpy as np
import scipy.sparse

from ..native import NUMBA_IMPORT_ERROR as _NUMBA_IMPORT_ERROR
from ..native import jit, numba

__all__ = [
    "BACKENDS",
    "backend_status",
    "delete_sums",
    "delete_sums_numpy",
    "delete_table",
    "deletion_sums",
    "head_ratios",
    "replace_sums",
    "replace_sums_numpy",
    "replacement_sums",
    "resolve",
    "sample_masks",
    "sample_masks_sizes",
    "shuffle_masks",
    "shuffle_masks_numpy",
]

#: The accepted ``backend`` arguments.
BACKENDS = ("auto", "numba", "numpy")
_DISABLED = ("0", "false", "no", "off")
_FALLBACK_WARNED = False   # the "numba unavailable" RuntimeWarning is emitted once per process


# ====================================================================== MT19937 (numpy legacy)
_MT_N = 624
_MT_M = 397
_U32 = 0xFFFFFFFF
_UPPER = 0x80000000
_LOWER = 0x7FFFFFFF
_MATRIX_A = 0x9908B0DF


@jit()
def _mt_twist(key):
    """numpy's ``mt19937_gen``: regenerate the 624 words of ``key`` (uint32[624]) in place."""
    for i in range(_MT_N - _MT_M):
        y = (np.int64(key[i]) & _UPPER) | (np.int64(key[i + 1]) & _LOWER)
        v = np.int64(key[i + _MT_M]) ^ (y >> 1) ^ ((-(y & 1)) & _MATRIX_A)
        key[i] = np.uint32(v & _U32)
    for i in range(_MT_N - _MT_M, _MT_N - 1):
        y = (np.int64(key[i]) & _UPPER) | (np.int64(key[i + 1]) & _LOWER)
        v = np.int64(key[i + _MT_M - _MT_N]) ^ (y >> 1) ^ ((-(y & 1)) & _MATRIX_A)
        key[i] = np.uint32(v & _U32)
    y = (np.int64(key[_MT_N - 1]) & _UPPER) | (np.int64(key[0]) & _LOWER)
    v = np.int64(key[_MT_M - 1]) ^ (y >> 1) ^ ((-(y & 1)) & _MATRIX_A)
    key[_MT_N - 1] = np.uint32(v & _U32)


@jit()
def _temper_all(key, buf):
    """numpy's ``mt19937_next32`` output transform of every word of ``key`` into ``buf``
    (uint32[624] each): one pass per regeneration, which the compiler vectorises."""
    for i in range(_MT_N):
        y = key[i]
        y ^= y >> np.uint32(11)
        y ^= (y << np.uint32(7)) & np.uint32(0x9D2C5680)
        y ^= (y << np.uint32(15)) & np.uint32(0xEFC60000)
        y ^= y >> np.uint32(18)
        buf[i] = y


@jit()
def shuffle_masks(key, pos, d, sizes, masks):
    """lime's masks for ``n = len(sizes)`` samples from numpy's legacy MT19937 stream.

    Arguments:

    * ``key``: ``uint32[624]``, C-contiguous, the MT19937 key of
      ``rs.get_state(legacy=False)["state"]["key"]``; **advanced in place**.
    * ``pos``: ``int``, 0..624, the position in ``key`` of the next word (``...["pos"]``).
    * ``d``: ``int``, the number of features, ``1 <= d < 2**31``.
    * ``sizes``: ``int64[n]``, how many features each sample drops (``1 <= sizes[k] <= d``).
    * ``masks``: ``uint8[n, d]`` (or bool), written: row ``k`` is 0 at the first ``sizes[k]``
      entries of sample ``k``'s permutation of ``0..d-1`` (the dropped features) and 1 elsewhere.

    Returns the new ``pos`` (``int``). For each sample ``k`` this is numpy's
    ``RandomState.permutation(d)`` (``shuffle(arange(d))``: ``i = d-1 .. 1``,
    ``j = random_interval(i)``, swap), i.e. what ``rs.choice(range(d), sizes[k],
    replace=False)`` draws, consuming the same words of the stream. Write ``key`` and the
    returned ``pos`` back with ``rs.set_state`` (see :func:`sample_masks`).

    ``random_interval(i)`` draws words, keeps their low bits (the smallest all-ones mask
    ``>= i``) and rejects values above ``i``: about 30 % of the draws, at random, so a loop that
    branches on acceptance mispredicts constantly. Here every draw takes the same path: a
    rejected draw swaps position ``i`` with itself and does not move ``i`` on (2.2x faster than
    the branching loop, the same words consumed in the same order). The mask is constant while
    ``i`` stays above half of it, so the draws run in one inner loop per mask, whose only chain
    from one draw to the next is ``i``'s compare and subtract (3x faster than updating the mask
    after every draw). Every index is cast to an unsigned integer where it is used: numba then
    drops its test for negative indices (Python's wrap-around), which took a third of the
    instructions of the draws' loops (sampling 0.67-0.73x its time, measured against the
    signed indices on d = 168, n = 5000).

    Only the steps ``i >= size`` move anything that matters: position ``i`` receives its final
    value at step ``i`` (later steps touch positions below ``i`` only), so the values placed at
    ``size .. d-1`` are the kept features, marked as they land, and the positions below ``size``
    hold the dropped ones whatever the remaining steps do. Those steps only consume the stream:
    their draws are made and tested (acceptance decides how many words each step takes) but
    nothing is swapped.
    """
    buf = np.empty(_MT_N, dtype=np.uint32)
    _temper_all(key, buf)
    m0 = d - 1                                  # the smallest all-ones mask >= d - 1
    m0 |= m0 >> 1
    m0 |= m0 >> 2
    m0 |= m0 >> 4
    m0 |= m0 >> 8
    m0 |= m0 >> 16
    perm = np.empty(d, dtype=np.int32)
    for k in range(sizes.shape[0]):
        row = masks[k]
        for r in range(d):
            perm[r] = r
            row[r] = 0
        i = np.int64(d - 1)
        m = np.int64(m0)
        stop = np.int64(max(sizes[k], 1))       # steps i >= stop place kept features
        while i >= stop:
            lo = max(stop - 1, m >> 1)          # within one mask: i > lo
            while pos < _MT_N and i > lo:
                v = np.int64(buf[np.uint64(pos)] & np.uint32(m))
                pos += 1
                acc = v <= i
                j = np.uint64(v if acc else i)          # rejected: j = i, nothing moves
                pj = np.uint64(perm[j])
                perm[j] = perm[np.uint64(i)]
                row[pj] = row[pj] | acc                 # pj lands at position i: kept
                i -= np.int64(acc)
            if i == m >> 1:                             # i fell to half the mask: halve it
                m >>= 1
            elif pos == _MT_N and i >= stop:            # the 624 words are used up
                _mt_twist(key)
                _temper_all(key, buf)
                pos = 0
        while i >= 1:                                   # the remaining steps: draws only
            lo = m >> 1
            while pos < _MT_N and i > lo:
                v = np.int64(buf[np.uint64(pos)] & np.uint32(m))
                pos += 1
                i -= np.int64(v <= i)
            if i == lo:
                m >>= 1
            elif pos == _MT_N:
                _mt_twist(key)
                _temper_all(key, buf)
                pos = 0
    return pos


def shuffle_masks_numpy(rs: np.random.RandomState, d: int, sizes: np.ndarray) -> np.ndarray:
    """The numpy twin of :func:`shuffle_masks`: ``(len(sizes), d)`` bool masks, True = kept,
    advancing ``rs`` exactly as ``rs.choice(range(d), size, replace=False)`` for each size.

    Each row of ``rows`` holds the flat indices ``i*d + 0 .. i*d + d-1`` and is shuffled in place
    by ``rs.shuffle`` -- the very shuffle ``choice`` does on ``arange(d)`` -- so one scatter marks
    the first ``sizes[i]`` entries of every permutation as dropped.
    """
    sizes = np.asarray(sizes, dtype=np.int64)
    n = len(sizes)
    masks = np.ones((n, d), dtype=bool)
    if n == 0:
        return masks
    rows = (np.arange(n, dtype=np.int64) * d)[:, None] + np.arange(d, dtype=np.int64)
    collections.deque(map(rs.shuffle, rows), maxlen=0)   # rows[i] = i*d + permutation_i
    masks.reshape(-1)[rows] = np.arange(d)[None, :] >= sizes[:, None]  # the first `size` dropped
    return masks


# ====================================================================== deletion sums
#: Samples summed together by :func:`delete_sums` (they share each token's ``A`` row; 8 was
#: slower, measured). :func:`delete_sums` packs a word's four flags into one 32-bit store.
_GROUP = 4
#: Heads per vector of :func:`_group_sums` (8 float64: one AVX-512 register, or two AVX2 ones);
#: with at most 2 or 4 heads, vectors of 2 or 4 (two heads padded to 8 paid for 8: measured
#: 1.3x to 1.8x slower at K = 2 and 3, T = 12 to 24, n = 4096, one thread, loaded machine).
_LANES = 8


def _group_sums_py(z, word_index, A8, B8, off1, off2, acc, cnt, lanes):
    """The plain-Python :func:`_group_sums` (without numba; never used for speed)."""
    T, stride = word_index.shape[0], A8.shape[1]
    for s in range(_GROUP):
        q = 0
        num = [0.0] * lanes
        den = [0.0] * lanes
        for t in range(T):
            keep = int(z[word_index[t] * _GROUP + s])
            r = q if keep else T
            for ll in range(lanes):
                num[ll] += A8[t, off1 + ll] * B8[r, off1 + ll] \
                    + A8[t, off2 + ll] * B8[r, off2 + ll]
                den[ll] += A8[t, off2 + ll] * B8[r, off1 + ll]
            q += keep
        for ll in range(lanes):
            acc[s * stride + off1 + ll] = num[ll]
            acc[s * stride + off2 + ll] = den[ll]
        cnt[s] = q


if numba is not None:
    from llvmlite import ir as _ir
    from numba.core import cgutils as _cgutils
    from numba.core import types as _types
    from numba.extending import intrinsic as _intrinsic

    @_intrinsic
    def _group_sums(typingctx, z, word_index, A8, B8, off1, off2, acc, cnt, lanes):
        """The deletion sums of ``_GROUP`` samples over one block of ``lanes`` heads, as LLVM
        vectors (numba's own loops leave the heads scalar: it does not run LLVM's SLP
        vectoriser). Arguments: ``z`` uint8 (``d * _GROUP``,), the samples' masks, **0 or 1**,
        word-major (``z[j * _GROUP + s]``: one load reads a word's flags for the group);
        ``word_index`` int64 (T,); ``A8`` float64 (T, 2P) and ``B8`` float64 (T + 1, 2P),
        C-contiguous, finite, ``B8``'s last row zero; ``off1``, ``off2`` the block's first
        column in the ``num`` and ``den`` halves; ``acc`` float64 (``_GROUP * 2P``,) and
        ``cnt`` int64 (``_GROUP``,), written; ``lanes`` the heads of the block, a literal 2, 4
        or 8 (:data:`_LANES`): the width of the vectors.

        For each token ``t`` in order and each sample ``s``, with ``q_s`` its tokens kept so
        far and ``k_s`` = 0 or 1 its mask at ``t``'s word, ``r = q_s`` if ``k_s`` else ``T``::

            num_s += A8[t, off1:] * B8[r, off1:] + A8[t, off2:] * B8[r, off2:]
            den_s += A8[t, off2:] * B8[r, off1:]
            q_s += k_s

        A dropped token reads the zero row, so its terms are +0.0 or -0.0, and adding a zero
        leaves a sum's bits unchanged (a sum from +0.0 is never -0.0): each lane gets the
        additions of the kept tokens' terms in token order from 0.0, each term computed by the
        same two products and one sum as the scalar loop, hence the same bits. The row is
        chosen by integer arithmetic (an AND with ``-k_s``), with no branch and no select on
        vectors (LLVM turns those into branches, which mispredict: a kept word is a coin
        flip)."""
        if not isinstance(lanes, _types.IntegerLiteral) or lanes.literal_value not in (2, 4, 8):
            return None
        width = lanes.literal_value
        sig = _types.void(z, word_index, A8, B8, off1, off2, acc, cnt, lanes)
        for arr, ndim in ((z, 1), (word_index, 1), (A8, 2), (B8, 2), (acc, 1), (cnt, 1)):
            if not isinstance(arr, _types.Array) or arr.ndim != ndim or arr.layout != "C":
                return None

        def codegen(context, builder, signature, args):
            za, wa, aa, ba, o1, o2, acca, cnta, _ = args
            ty = signature.args
            arrays = [context.make_array(ty[k])(context, builder, args[k])
                      for k in (0, 1, 2, 3, 6, 7)]
            zptr, wptr, aptr, bptr, optr, cptr = (a.data for a in arrays)
            n_tok = _cgutils.unpack_tuple(builder, arrays[1].shape, 1)[0]
            stride = _cgutils.unpack_tuple(builder, arrays[2].shape, 2)[1]
            zrow = builder.mul(n_tok, stride)                   # B8's row T: zeros
            f64, i64 = _ir.DoubleType(), _ir.IntType(64)
            vf = _ir.VectorType(f64, width)
            zero = _ir.Constant(vf, [0.0] * width)

            def const(v):
                return _ir.Constant(i64, v)

            def vload(row, off):
                return builder.load(builder.bitcast(builder.gep(row, [off]), vf.as_pointer()),
                                    align=8)

            def vstore(v, row, off):
                builder.store(v, builder.bitcast(builder.gep(row, [off]), vf.as_pointer()),
                              align=8)

            iz = _ir.IntType(8 * _GROUP)                        # one word's _GROUP flags
            zwords = builder.bitcast(zptr, iz.as_pointer())
            bzero = builder.gep(bptr, [builder.mul(n_tok, stride)])    # B8's zero row T
            u0 = builder.sub(const(0), builder.mul(n_tok, stride))
            fn, entry = builder.function, builder.block
            head = fn.append_basic_block("group.head")
            body = fn.append_basic_block("group.body")
            done = fn.append_basic_block("group.done")
            builder.branch(head)
            builder.position_at_end(head)
            t = builder.phi(i64)
            t.add_incoming(const(0), entry)
            # per sample, u = (q_s - T) * stride: the offset of row q_s from the zero row
            us = [builder.phi(i64) for _ in range(_GROUP)]
            nums = [builder.phi(vf) for _ in range(_GROUP)]
            dens = [builder.phi(vf) for _ in range(_GROUP)]
            for s in range(_GROUP):
                us[s].add_incoming(u0, entry)
                nums[s].add_incoming(zero, entry)
                dens[s].add_incoming(zero, entry)
            builder.cbranch(builder.icmp_signed("<", t, n_tok), body, done)
            builder.position_at_end(body)
            word = builder.load(builder.gep(wptr, [t]))
            flags = builder.zext(builder.load(builder.gep(zwords, [word]), align=1), i64)
            arow = builder.gep(aptr, [builder.mul(t, stride)])
            a1, a2 = vload(arow, o1), vload(arow, o2)
            for s in range(_GROUP):
                k = builder.and_(builder.lshr(flags, const(8 * s)), const(0xFF))   # 0 or 1
                ones = builder.sub(const(0), k)                   # all ones if kept, else 0
                # the row of B8 the term reads: q_s's if kept, else the zero row
                brow = builder.gep(bzero, [builder.and_(us[s], ones)])
                b1, b2 = vload(brow, o1), vload(brow, o2)
                tn = builder.fadd(builder.fmul(a1, b1), builder.fmul(a2, b2))
                td = builder.fmul(a2, b1)
                nums[s].add_incoming(builder.fadd(nums[s], tn), body)
                dens[s].add_incoming(builder.fadd(dens[s], td), body)
                us[s].add_incoming(builder.add(us[s], builder.and_(stride, ones)), body)
            t.add_incoming(builder.add(t, const(1)), body)
            builder.branch(head)
            builder.position_at_end(done)
            for s in range(_GROUP):
                orow = builder.gep(optr, [builder.mul(const(s), stride)])
                vstore(nums[s], orow, o1)
                vstore(dens[s], orow, o2)
                q = builder.add(n_tok, builder.sdiv(us[s], stride))    # exact: u is a multiple
                builder.store(q, builder.gep(cptr, [const(s)]))
            return context.get_dummy_value()
        return sig, codegen
else:
    _group_sums = _group_sums_py


@jit()
def delete_sums(masks, word_index, A, B, out, counts):
    """Deletion sums (``bow=True``) of ``n`` samples, for any number ``K`` of heads.

    Arguments:

    * ``masks``: ``bool[n, d]`` or ``uint8[n, d]``, nonzero = feature (word) kept.
    * ``word_index``: ``int64[T]``, the feature of each of the document's ``T`` tokens.
    * ``A``: ``float64[T, 2K]``, per token ``t``: ``(ea*cw, ea)`` (``K`` heads each).
    * ``B``: ``float64[T, 2K]``, per new position ``q`` (0-based): ``(eb, eb*cp)``.
    * ``out``: ``float64[n, 2K]``, written: per sample, ``num`` in ``[:K]`` and ``den`` in
      ``[K:]``.
    * ``counts``: ``int64[n]``, written: the number of kept tokens per sample.

    Token ``t`` is kept if ``masks[i, word_index[t]]``; a kept token lands at position
    ``q + 1``, ``q`` = the number of kept tokens before it, and adds
    ``A[t, k]*B[q, k] + A[t, K+k]*B[q, K+k]`` (its ``exp(score) * value``) to ``num[k]`` and
    ``A[t, K+k]*B[q, k]`` (its ``exp(score)``) to ``den[k]``, in the order of the tokens, from
    0.0. Returns nothing.

    How. The heads are padded to ``P``, a multiple of ``L`` lanes (:data:`_LANES`, or 2 and 4
    for at most 2 and 4 heads; 6 -> 8, 3 -> 4; zero columns), so
    that each token's terms are whole vectors, and :func:`_group_sums` runs over every token
    for ``_GROUP`` samples at once (they share the token's ``A`` row), adding a dropped token's
    terms as a zero: no list of kept tokens is built, no branch taken per token, and the
    ``2 * _GROUP`` running sums of a block stay in vector registers. The masks of a group are
    first copied as 0/1 bytes (``_group_sums`` needs 0 or 1); a last, incomplete group is
    padded with empty samples, whose sums are not written. ``A`` and ``B`` must be finite (the
    evaluator's are): a dropped token's terms are products with zeros.
    """
    n, d = masks.shape
    T = word_index.shape[0]
    K = A.shape[1] // 2
    L = 2 if K <= 2 else (4 if K <= 4 else _LANES)      # heads per vector
    P = -(-K // L) * L
    A8 = np.zeros((T, 2 * P))
    B8 = np.zeros((T + 1, 2 * P))               # row T: zeros, read for dropped tokens
    for t in range(T):
        for k in range(K):
            A8[t, k] = A[t, k]
            A8[t, P + k] = A[t, K + k]
            B8[t, k] = B[t, k]
            B8[t, P + k] = B[t, K + k]
    z = np.zeros(_GROUP * d, dtype=np.uint8)
    acc = np.empty(_GROUP * 2 * P)
    cnt = np.empty(_GROUP, dtype=np.int64)
    z4 = z.view(np.uint32)                      # word j's four flags, byte s = sample s
    for i0 in range(0, n, _GROUP):
        g = min(_GROUP, n - i0)
        if g == _GROUP:                         # one 32-bit store per word
            r0, r1, r2, r3 = masks[i0], masks[i0 + 1], masks[i0 + 2], masks[i0 + 3]
            for j in range(d):
                z4[j] = (np.uint32(r0[j] != 0) | (np.uint32(r1[j] != 0) << np.uint32(8))
                         | (np.uint32(r2[j] != 0) << np.uint32(16))
                         | (np.uint32(r3[j] != 0) << np.uint32(24)))
        else:
            for s in range(g):
                for j in range(d):
                    z[j * _GROUP + s] = masks[i0 + s, j] != 0
            for s in range(g, _GROUP):
                for j in range(d):
                    z[j * _GROUP + s] = 0
        for b in range(0, P, L):               # the lane count a literal per call
            if L == 2:
                _group_sums(z, word_index, A8, B8, b, P + b, acc, cnt, 2)
            elif L == 4:
                _group_sums(z, word_index, A8, B8, b, P + b, acc, cnt, 4)
            else:
                _group_sums(z, word_index, A8, B8, b, P + b, acc, cnt, 8)
        for s in range(g):
            counts[i0 + s] = cnt[s]
            for k in range(K):
                out[i0 + s, k] = acc[s * 2 * P + k]
                out[i0 + s, K + k] = acc[s * 2 * P + P + k]


@jit()
def head_ratios(r, cls_num, cls_den, fill_num, fill_den, counts, out):
    """Every head's output from :func:`delete_sums`'s sums ``r`` (n, 2K) and kept counts
    ``counts`` (n,): ``out[i, k] = (r[i, k] + cls_num[k] [+ fill_num[counts[i], k]]) /
    (r[i, K + k] + cls_den[k] [+ fill_den[counts[i], k]])``, the fill terms only when
    ``fill_num`` (and ``fill_den``, (L, K)) has rows. The additions and the division in the
    order of :meth:`attnxai.fastlime.evaluate.DeleteEvaluator.heads`'s numpy expression, one by
    one (no fastmath: nothing reassociated), hence its bits, in one pass instead of numpy's
    inner loops of ``K`` elements. ``den`` must not be 0 (the evaluator's never is: [CLS]'s
    term is positive)."""
    n, K = out.shape
    fill = fill_num.shape[0] > 0
    for i in range(n):
        c = counts[i]
        for k in range(K):
            num = r[i, k] + cls_num[k]
            den = r[i, K + k] + cls_den[k]
            if fill:
                num += fill_num[c, k]
                den += fill_den[c, k]
            out[i, k] = num / den


@jit()
def replace_sums(masks, M1, M0, out):
    """Replacement sums (``bow=False``): ``out[i] = sum_t (M1[t] if masks[i, t] else M0[t])``.

    Arguments: ``masks`` ``uint8[n, T]`` (nonzero = the word kept at position ``t``), ``M1`` and
    ``M0`` ``float64[T, C]`` (a position's terms with its word and with UNK), ``out``
    ``float64[n, C]``, written. Each sum runs over ``t = 0 .. T-1`` in order from 0.0. The samples
    are taken 256 at a time, transposed, so that the innermost loop runs over samples: one select
    and one add per sample, which the compiler vectorises (element-wise, exact); kept and replaced
    terms are selected, never subtracted (see :class:`~attnxai.fastlime.evaluate.ReplaceEvaluator`).
    Returns nothing."""
    n, T = masks.shape
    C = M1.shape[1]
    block = 256
    zt = np.empty((T, block), dtype=np.uint8)
    acc = np.empty((C, block))
    for i0 in range(0, n, block):
        nb = min(block, n - i0)
        for ii in range(nb):
            for t in range(T):
                zt[t, ii] = masks[i0 + ii, t]
        acc[:, :] = 0.0
        for t in range(T):
            z = zt[t]
            for c in range(C):
                m1 = M1[t, c]
                m0 = M0[t, c]
                a = acc[c]
                for ii in range(nb):
                    a[ii] += m1 if z[ii] != 0 else m0
        for ii in range(nb):
            for c in range(C):
                out[i0 + ii, c] = acc[c, ii]


def replace_sums_numpy(masks: np.ndarray, M1: np.ndarray, M0: np.ndarray) -> np.ndarray:
    """The numpy twin of :func:`replace_sums`: ``(n, C)``, the same additions in the same order
    (one position at a time over all samples), so equal to the bit."""
    z = np.asarray(masks) != 0
    out = np.zeros((z.shape[0], M1.shape[1]))
    for t in range(z.shape[1]):
        out += np.where(z[:, t, None], M1[t], M0[t])
    return out


def replacement_sums(masks: np.ndarray, M1: np.ndarray, M0: np.ndarray, *,
                     backend: str = "auto") -> tuple[np.ndarray, str]:
    """Per-sample replacement sums (:func:`replace_sums`): ``(out (n, C), backend used)``;
    ``masks`` (n, T) bool or uint8, ``M1``, ``M0`` (T, C) float64."""
    masks = np.asarray(masks)
    M1 = np.ascontiguousarray(M1, dtype=np.float64)
    M0 = np.ascontiguousarray(M0, dtype=np.float64)
    if masks.ndim != 2 or M1.shape != M0.shape or M1.ndim != 2 or M1.shape[0] != masks.shape[1]:
        raise ValueError(f"expected masks (n, T) and M1, M0 (T, C), got masks {masks.shape}, "
                         f"M1 {M1.shape}, M0 {M0.shape}")
    if resolve(backend) == "numba":
        z = np.ascontiguousarray(masks)
        if z.dtype != np.uint8:
            z = (z if z.dtype == bool else z != 0).view(np.uint8)
        out = np.empty((len(z), M1.shape[1]))
        replace_sums(z, M1, M0, out)
        return out, "numba"
    return replace_sums_numpy(masks, M1, M0), "numpy"


def delete_table(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """The table :func:`delete_sums_numpy` sums rows of: ``(T*T, 2K)`` float64, row
    ``(t - q) * T + q`` holds the (num, den) terms of token ``t`` at position ``q + 1`` (zero for
    ``t >= T``). It depends only on ``A`` and ``B``: compute it once per document."""
    A = np.asarray(A, dtype=np.float64)
    B = np.asarray(B, dtype=np.float64)
    T, K = A.shape[0], A.shape[1] // 2
    t_of = np.arange(T)[None, :] + np.arange(T)[:, None]       # [t - q, q] -> t
    tt = np.where(t_of < T, t_of, 0)
    a, b = A[tt], B[np.broadcast_to(np.arange(T), (T, T))]     # (T, T, 2K)
    table = np.empty((T, T, 2 * K))
    table[..., :K] = a[..., :K] * b[..., :K] + a[..., K:] * b[..., K:]
    table[..., K:] = a[..., K:] * b[..., :K]
    table[t_of >= T] = 0.0
    return table.reshape(T * T, 2 * K)


def delete_sums_numpy(masks: np.ndarray, word_index: np.ndarray, A: np.ndarray, B: np.ndarray,
                      table: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The numpy twin of :func:`delete_sums`: ``(out (n, 2K) float64, counts (n,) int64)``.

    ``table``: :func:`delete_table` of ``A, B`` if already computed (it is built otherwise).
    Sample ``i``'s kept tokens pick table rows ``(t - q) * T + q`` in token order and a sparse
    product with unit weights adds them, from 0.0, in that order.
    """
    word_index = np.asarray(word_index, dtype=np.int64)
    T, n = len(word_index), len(masks)
    if table is None:
        table = delete_table(A, B)
    kept = np.asarray(masks)[:, word_index] != 0                 # (n, T) token kept?
    counts = kept.sum(axis=1, dtype=np.int64)
    flat = np.flatnonzero(kept)                                 # row-major: i*T + t
    starts = np.concatenate([np.zeros(1, dtype=np.int64), np.cumsum(counts)])
    # table row (t - q) * T + q, t = flat - i*T, q = (index in flat) - starts[i]: rows of one
    # sample are read forwards
    col = flat * T - (T - 1) * np.arange(len(flat), dtype=np.int64) \
        + np.repeat(starts[:-1] * (T - 1) - np.arange(n, dtype=np.int64) * T * T, counts)
    S = scipy.sparse.csr_matrix((np.ones(len(col)), col, starts), shape=(n, T * T))
    return np.asarray(S @ table), counts


# ====================================================================== dispatch
def backend_status() -> tuple[str, str]:
    """(the backend ``"auto"`` would use now, why): ``("numba", "numba 0.68.1")``,
    ``("numpy", "disabled by ATTNXAI_NATIVE=0")`` or ``("numpy", "numba unavailable: ...")``."""
    if _native_disabled():
        return "numpy", "disabled by ATTNXAI_NATIVE=0"
    if _NUMBA_IMPORT_ERROR is not None:
        return "numpy", f"numba unavailable ({_NUMBA_IMPORT_ERROR})"
    return "numba", f"numba {numba.__version__}"


def _native_disabled() -> bool:
    return os.environ.get("ATTNXAI_NATIVE", "1").strip().lower() in _DISABLED


def resolve(backend: str) -> str:
    """The backend to use, "numba" or "numpy", for the requested one (see :func:`sample_masks`)."""
    global _FALLBACK_WARNED
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    if backend == "numpy":
        return "numpy"
    if _native_disabled():
        if backend == "numba":
            raise RuntimeError("backend='numba' requested but the compiled kernels are disabled "
                               "by ATTNXAI_NATIVE=0 in the environment")
        return "numpy"
    if _NUMBA_IMPORT_ERROR is not None:
        if backend == "numba":
            raise RuntimeError(f"backend='numba' requested but numba cannot be imported "
                               f"({_NUMBA_IMPORT_ERROR}); install it (pip install numba) or use "
                               "backend='auto' or 'numpy'")
        if not _FALLBACK_WARNED:
            _FALLBACK_WARNED = True
            warnings.warn(f"numba is unavailable ({_NUMBA_IMPORT_ERROR}): attnxai's LIME uses "
                          "its numpy code instead, which is slower and gives the same numbers "
                          "(install numba for the compiled kernels; ATTNXAI_NATIVE=0 silences "
                          "this warning)", RuntimeWarning, stacklevel=3)
        return "numpy"
    return "numba"


def sample_masks(d: int, num_samples: int, rs: np.random.RandomState,
                 backend: str = "auto") -> tuple[np.ndarray, str]:
    """lime's perturbation masks and the backend that drew them: ``((num_samples, d) bool,
    "numba" | "numpy")``, True = feature kept, row 0 all True.

    Consumes ``rs`` exactly as lime's ``LimeTextExplainer.__data_labels_distances``:
    ``sizes = rs.randint(1, d + 1, num_samples - 1)``, then one ``rs.choice(range(d), size,
    replace=False)`` per sample, whose features are dropped.

    ``backend``: ``"numba"`` runs :func:`shuffle_masks` (RuntimeError if numba cannot be
    imported or ``ATTNXAI_NATIVE=0``); ``"numpy"`` runs :func:`shuffle_masks_numpy`;
    ``"auto"`` (default) uses numba when it can be imported and ``ATTNXAI_NATIVE`` is not ``0``,
    else numpy -- with one ``RuntimeWarning`` per process if numba is missing, none if disabled.
    Both give the same masks and leave ``rs`` in the same state. numba is used only for
    ``rs`` on an MT19937 bit generator (every ``RandomState(seed)``) and ``d < 2**31``; other
    cases take the numpy path whatever ``backend`` says (the returned name tells).
    """
    use = resolve(backend)                      # here, so that a warning names the caller
    masks, _, used = sample_masks_sizes(d, num_samples, rs, use)
    return masks, used


def sample_masks_sizes(d: int, num_samples: int, rs: np.random.RandomState,
                       backend: str = "auto") -> tuple[np.ndarray, np.ndarray, str]:
    """:func:`sample_masks` and lime's drawn sizes: ``(masks, sizes (num_samples - 1,) int64,
    backend used)``, ``sizes[i]`` the number of features dropped in row ``i + 1``."""
    if not isinstance(rs, np.random.RandomState):
        raise TypeError(f"rs must be a numpy.random.RandomState, got {type(rs).__name__}")
    use = resolve(backend)
    sizes = np.ascontiguousarray(rs.randint(1, d + 1, num_samples - 1), dtype=np.int64)
    n = len(sizes)
    masks = np.empty((num_samples, d), dtype=bool)
    masks[0] = True
    if use == "numba":
        state = rs.get_state(legacy=False)
        if state["bit_generator"] == "MT19937" and d < 2**31:
            key = np.array(state["state"]["key"], dtype=np.uint32)   # a copy, advanced in place
            pos = shuffle_masks(key, int(state["state"]["pos"]), int(d), sizes,
                                masks[1:].view(np.uint8))
            state["state"] = {"key": key, "pos": int(pos)}
            rs.set_state(state)
            return masks, sizes, "numba"
    if n:
        masks[1:] = shuffle_masks_numpy(rs, d, sizes)
    return masks, sizes, "numpy"


def deletion_sums(masks: np.ndarray, word_index: np.ndarray, A: np.ndarray, B: np.ndarray, *,
                  table: np.ndarray | None = None,
                  backend: str = "auto") -> tuple[np.ndarray, np.ndarray, str]:
    """Per-sample deletion sums: ``(out (n, 2K) float64, counts (n,) int64, backend used)``.

    ``masks``: (n, d) bool or uint8, nonzero = kept; ``word_index``: (T,) ints, each token's
    feature; ``A``, ``B``: (T, 2K) float64 (see :func:`delete_sums`). ``table``: the
    :func:`delete_table` of ``A, B``, used only by the numpy path (computed when
    not given). ``backend`` as for :func:`sample_masks`; both backends give equal results to the
    bit.
    """
    masks = np.asarray(masks)
    word_index = np.ascontiguousarray(word_index, dtype=np.int64)
    A = np.ascontiguousarray(A, dtype=np.float64)
    B = np.ascontiguousarray(B, dtype=np.float64)
    if masks.ndim != 2 or A.ndim != 2 or A.shape != B.shape or A.shape[1] % 2 \
            or A.shape[0] != len(word_index):
        raise ValueError(f"expected masks (n, d), A and B (T, 2K) with T = len(word_index), got "
                         f"masks {masks.shape}, word_index {word_index.shape}, A {A.shape}, "
                         f"B {B.shape}")
    if len(word_index) and (word_index.min() < 0 or word_index.max() >= masks.shape[1]):
        raise ValueError(f"word_index must lie in [0, {masks.shape[1]})")
    use = resolve(backend)
    if use == "numba":
        z = np.ascontiguousarray(masks)
        if z.dtype != np.uint8:
            z = (z if z.dtype == bool else z != 0).view(np.uint8)
        n, K2 = len(z), A.shape[1]
        out = np.empty((n, K2))
        counts = np.empty(n, dtype=np.int64)
        delete_sums(z, word_index, A, B, out, counts)
        return out, counts, "numba"
    out, counts = delete_sums_numpy(masks, word_index, A, B, table)
    return out, counts, "numpy"
