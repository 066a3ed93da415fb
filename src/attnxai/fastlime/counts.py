"""lime's normal equations from integer co-occurrence counts: ``X^T W X``, ``X^T w`` and ``X^T W y``
for 0/1 masks whose weight depends on a row only through its number of kept features.

Why it is exact and cheap. lime's weight of a sample is a function of its cosine distance to the
all-ones document, and the cosine distance of a 0/1 vector to the all-ones vector is a function of
its number ``k`` of ones. Grouping the rows by ``k`` (groups ``g = 0..d``, weight ``w_g``)::

    X^T W X = sum_g w_g C_g,      C_g[j, l] = #{rows of group g keeping both j and l}

and every ``C_g`` is an integer count. Packed 64 rows to a machine word (one bit per row, the rows
of a group in consecutive words), ``C_g[j, l]`` is a sum of ``popcount(bits[j] & bits[l])`` over
the group's words: about ``d^2/2 * (n/64 + d)`` word operations against ``n d^2 / 2``
multiply-adds for the dense product ``(sqrt(W) X)^T (sqrt(W) X)``, and the counts are exact, so
the only rounding is one product and one sum per group and pair (the dense product rounds ``n``
times). ``X^T w`` is the diagonal of ``X^T W X`` (``x^2 = x``); ``X^T W y`` is one pass over the
rows.

:func:`normal_equations` runs the compiled kernels (:func:`pack_rows`, :func:`count_gram`,
``@jit`` from :mod:`attnxai.native`; the popcount is LLVM's ``ctpop``, one vector instruction on
CPUs with AVX-512 VPOPCNTDQ) or their numpy twin (:func:`normal_equations_numpy`: the same
``C_g`` as exact float64 products of 0/1 matrices, summed with the same weights in the same
order, and ``X^T W y`` in row order: equal to the bit).

Why LLVM IR (:func:`_gram_lanes`, :func:`_gram_rows`) and not numba's SLP vectoriser (see
:mod:`~attnxai.fastlime.kernels` for the switch and why it is not turned on): measured by
``benchmarks/bench_slp.py`` (2026-12-02, d = 168, n = 5000, one thread, load average 3.0; all equal
to the bit), against the IR's 0.31 ms (eight rows a call; 0.61 ms one row a call, as the plain
variants are written), plain numba loops take 9.6x the IR's time with SLP off and 9.7x with it
on, generated straight-line code with unsigned indices 6.9x and, with SLP on, 2.5x (1.1x to 1.3x
of the one-row IR, in two earlier runs against it).
"""

from __future__ import annotations

import numpy as np

from ..native import jit, numba
from . import kernels

__all__ = ["count_groups", "count_gram", "normal_equations", "normal_equations_numpy",
           "pack_rows"]

if numba is not None:
    from llvmlite import ir as _ir
    from numba.core import cgutils as _cgutils
    from numba.core import types as _types
    from numba.extending import intrinsic as _intrinsic

    @_intrinsic
    def _popcount(typingctx, x):
        """LLVM's ``ctpop`` on a uint64 (numba has no popcount of its own)."""
        sig = _types.uint64(_types.uint64)

        def codegen(context, builder, signature, args):
            fn = builder.module.declare_intrinsic("llvm.ctpop", [_ir.IntType(64)])
            return builder.call(fn, args)
        return sig, codegen
else:                                               # the plain-Python kernels, never used
    def _popcount(x):                               # for speed (backend="numpy" is)
        return bin(int(x)).count("1")


def count_groups(kept: np.ndarray, d: int) -> tuple[np.ndarray, np.ndarray]:
    """Rows grouped by their number of kept features ``k = 0..d``: ``(counts (d+1,), starts
    (d+2,))``, ``starts[k]`` the first 64-bit word of group ``k`` in :func:`pack_rows`'s layout
    (``ceil(counts[k] / 64)`` words each)."""
    counts = np.bincount(kept, minlength=d + 1).astype(np.int64)
    if len(counts) != d + 1:
        raise ValueError(f"kept counts must lie in [0, {d}], got up to {int(kept.max())}")
    starts = np.zeros(d + 2, dtype=np.int64)
    np.cumsum((counts + 63) // 64, out=starts[1:])
    return counts, starts


def _row_stride(d: int) -> int:
    """Words per row of the packed layout: ``d`` rounded up to 8, plus 8 when that is a multiple
    of 64 (a power-of-two stride maps every row's block to the same cache sets)."""
    s = -(-d // 8) * 8
    return s + 8 if s % 64 == 0 else s


@jit()
def pack_rows(masks, kept, w, y, starts, bits, bits_t, wg, xtwy):
    """Pack ``masks`` (uint8 (n, d), nonzero = kept) one bit per row, grouped by kept count.

    Row ``i`` of group ``g = kept[i]`` (the ``s``-th of its group, in row order) sets bit
    ``s % 64`` of word ``starts[g] + s // 64`` of every feature it keeps: ``bits`` (W, stride)
    word-major, ``bits_t`` (d, W) feature-major, both uint64 and zero on entry. Writes ``wg[g]``,
    the weight ``w`` of the group's rows, and adds ``w[i] * y[i] * masks[i, j]`` to ``xtwy[j]``
    (``X^T W y``, rows in order). Returns False if two rows of a group have different weights
    (then ``w`` is not a function of the count), else True."""
    n, d = masks.shape
    fill = np.zeros(starts.shape[0], dtype=np.int64)
    ok = True
    for i in range(n):
        g = kept[i]
        s = fill[g]
        fill[g] = s + 1
        if s == 0:
            wg[g] = w[i]
        elif w[i] != wg[g]:
            ok = False
        word = bits[starts[g] + (s >> 6)]
        b = np.uint64(s & 63)
        row = masks[i]
        t = w[i] * y[i]
        for j in range(d):
            word[j] |= np.uint64(row[j]) << b
            xtwy[j] += t * np.float64(row[j])
    for w_ in range(bits.shape[0]):
        for j in range(d):
            bits_t[j, w_] = bits[w_, j]
    return ok


_LANES = 8     # columns of X^T W X per vector of _gram_lanes (8 x uint64: one AVX-512 register)


#: Rows of X^T W X per call of :func:`_gram_rows`: that many independent running sums per
#: column block, so that a group's multiply-add does not wait on the previous group's (with about
#: one word per group, the chain of one add per group was the kernel's bound), and the rows share
#: the loads of the column words. Measured (count_gram alone, d = 134, 168, 255, n = 5000, one
#: run, against one row a call): 2 rows 0.64-0.70x the time, 4 rows 0.55-0.61x, 8 rows
#: 0.43-0.54x, 16 rows 0.52-0.62x (registers spill).
_ROWS = 8


def _gram_rows_py(bits, bits_t, starts, wg, j, l0, out):
    """The plain-Python :func:`_gram_rows` (without numba; never used for speed)."""
    for r in range(_ROWS):
        for ll in range(_LANES):
            acc = 0.0
            for g in range(starts.shape[0] - 1):
                if starts[g] < starts[g + 1]:
                    c = sum(int(bits_t[j + r, w] & bits[w, l0 + ll]).bit_count()
                            for w in range(starts[g], starts[g + 1]))
                    acc += wg[g] * float(c)
            out[r * _LANES + ll] = acc


def _gram_lanes_py(bits, bits_t, starts, wg, j, l0, out):
    """The plain-Python :func:`_gram_lanes` (without numba; never used for speed)."""
    for ll in range(_LANES):
        acc = 0.0
        for g in range(starts.shape[0] - 1):
            if starts[g] < starts[g + 1]:
                c = sum(int(bits_t[j, w] & bits[w, l0 + ll]).bit_count()
                        for w in range(starts[g], starts[g + 1]))
                acc += wg[g] * float(c)
        out[ll] = acc


if numba is not None:
    def _gram_codegen(rows):
        """The code of :func:`_gram_lanes` (``rows`` = 1) and :func:`_gram_rows` (``rows`` =
        :data:`_ROWS`): rows ``j .. j + rows - 1``, columns ``l0 .. l0 + 7`` of ``X^T W X``
        into ``out[8 r + ll]``, each row's sums in its own vector register across the groups."""
        def codegen(context, builder, signature, args):
            ty = signature.args
            arrs = [context.make_array(ty[k])(context, builder, args[k]) for k in (0, 1, 2, 3, 6)]
            bptr, tptr, sptr, wptr, optr = (a.data for a in arrs)
            stride = _cgutils.unpack_tuple(builder, arrs[0].shape, 2)[1]
            n_words = _cgutils.unpack_tuple(builder, arrs[1].shape, 2)[1]
            n_groups = builder.sub(_cgutils.unpack_tuple(builder, arrs[2].shape, 1)[0],
                                   _ir.Constant(_ir.IntType(64), 1))
            j_, l0_ = args[4], args[5]
            i64, f64 = _ir.IntType(64), _ir.DoubleType()
            vi, vf = _ir.VectorType(i64, _LANES), _ir.VectorType(f64, _LANES)
            i32 = _ir.IntType(32)
            splat = _ir.Constant(_ir.VectorType(i32, _LANES), [0] * _LANES)
            undef_i, undef_f = _ir.Constant(vi, _ir.Undefined), _ir.Constant(vf, _ir.Undefined)
            ctpop = _cgutils.get_or_insert_function(builder.module, _ir.FunctionType(vi, [vi]),
                                                    f"llvm.ctpop.v{_LANES}i64")

            def const(v):
                return _ir.Constant(i64, v)

            def bcast(x, undef):
                return builder.shuffle_vector(builder.insert_element(undef, x, _ir.Constant(i32, 0)),
                                              undef, splat)

            trows = [builder.gep(tptr, [builder.mul(builder.add(j_, const(r)), n_words)])
                     for r in range(rows)]                                # bits_t[j + r]
            fn, entry = builder.function, builder.block
            ghead = fn.append_basic_block("gram.ghead")
            gbody = fn.append_basic_block("gram.gbody")
            whead = fn.append_basic_block("gram.whead")
            wbody = fn.append_basic_block("gram.wbody")
            gadd = fn.append_basic_block("gram.gadd")
            gnext = fn.append_basic_block("gram.gnext")
            done = fn.append_basic_block("gram.done")
            builder.branch(ghead)
            # for g in range(n_groups)
            builder.position_at_end(ghead)
            g = builder.phi(i64)
            accs = [builder.phi(vf) for _ in range(rows)]
            g.add_incoming(const(0), entry)
            for acc in accs:
                acc.add_incoming(_ir.Constant(vf, [0.0] * _LANES), entry)
            builder.cbranch(builder.icmp_signed("<", g, n_groups), gbody, done)
            builder.position_at_end(gbody)
            lo = builder.load(builder.gep(sptr, [g]))
            hi = builder.load(builder.gep(sptr, [builder.add(g, const(1))]))
            builder.branch(whead)
            # for w in range(lo, hi): ci[r] += popcount(bits_t[j + r, w] & bits[w, l0:l0+8])
            builder.position_at_end(whead)
            w = builder.phi(i64)
            cis = [builder.phi(vi) for _ in range(rows)]
            w.add_incoming(lo, gbody)
            for ci in cis:
                ci.add_incoming(_ir.Constant(vi, [0] * _LANES), gbody)
            builder.cbranch(builder.icmp_signed("<", w, hi), wbody, gadd)
            builder.position_at_end(wbody)
            rowp = builder.gep(bptr, [builder.add(builder.mul(w, stride), l0_)])
            row = builder.load(builder.bitcast(rowp, vi.as_pointer()), align=8)
            for trow, ci in zip(trows, cis):
                v = bcast(builder.load(builder.gep(trow, [w])), undef_i)
                ci.add_incoming(builder.add(ci, builder.call(ctpop, [builder.and_(v, row)])),
                                wbody)
            w.add_incoming(builder.add(w, const(1)), wbody)
            builder.branch(whead)
            # a group with words adds wg[g] * C_g; an empty one adds nothing
            builder.position_at_end(gadd)
            wt = bcast(builder.load(builder.gep(wptr, [g])), undef_f)
            has = builder.icmp_signed("<", lo, hi)
            news = []
            for acc, ci in zip(accs, cis):
                summed = builder.fadd(acc, builder.fmul(wt, builder.sitofp(ci, vf)))
                news.append(builder.select(has, summed, acc))
            builder.branch(gnext)
            builder.position_at_end(gnext)
            for acc, new in zip(accs, news):
                acc.add_incoming(new, gnext)
            g.add_incoming(builder.add(g, const(1)), gnext)
            builder.branch(ghead)
            builder.position_at_end(done)
            for r, acc in enumerate(accs):
                builder.store(acc, builder.bitcast(builder.gep(optr, [const(r * _LANES)]),
                                                   vf.as_pointer()), align=8)
            return context.get_dummy_value()
        return codegen

    @_intrinsic
    def _gram_lanes(typingctx, bits, bits_t, starts, wg, j, l0, out):
        """Columns ``l0 .. l0 + 7`` of row ``j`` of ``X^T W X`` into ``out[0:8]`` (float64),
        as LLVM vectors with the running sums in registers (numba's loop vectoriser keeps them
        in memory, one load and store per group). For each group ``g`` in order with words
        (``starts[g] < starts[g + 1]``), the integer ``C_g[j, l]`` (popcounts of
        ``bits_t[j, w] & bits[w, l]`` summed over the group's words) is converted, multiplied
        by ``wg[g]`` and added, from 0.0: per column the operations of :func:`count_gram`'s
        scalar definition, in its order. ``bits`` (W, stride) needs ``l0 + 8 <= stride``."""
        return _types.void(bits, bits_t, starts, wg, j, l0, out), _gram_codegen(1)

    @_intrinsic
    def _gram_rows(typingctx, bits, bits_t, starts, wg, j, l0, out):
        """:func:`_gram_lanes` of rows ``j .. j + _ROWS - 1`` at once into ``out[0 : 8 _ROWS]``
        (row ``j + r`` at ``8 r``): each row's sums in their own register, each column's
        operations those of :func:`_gram_lanes`, in its order (the same bits)."""
        return _types.void(bits, bits_t, starts, wg, j, l0, out), _gram_codegen(_ROWS)
else:
    _gram_lanes = _gram_lanes_py
    _gram_rows = _gram_rows_py


@jit()
def count_gram(bits, bits_t, starts, wg, gram):
    """``X^T W X = sum_g wg[g] C_g`` into ``gram`` (d, d) float64, zero on entry (the lower
    triangle computed, the upper one copied from it).

    For each pair ``l <= j`` and each group ``g`` in order, the integer ``C_g[j, l]`` (popcounts
    of ``bits_t[j, w] & bits[w, l]`` over the group's words) is multiplied by ``wg[g]`` and
    added, from 0.0 (a group without rows adds nothing). Eight columns of ``_ROWS`` rows at a time
    (:func:`_gram_rows`, :func:`_gram_lanes` for the rows left over: the running sums in vector
    registers across the groups; popcount,
    int-to-float, multiply and add element-wise: exact per element, no reassociation), the
    blocks of columns outermost so that a block's words stay in the first-level cache."""
    d = gram.shape[0]
    lanes = np.empty(_ROWS * _LANES)
    for l0 in range(0, d, _LANES):              # a block's words stay in the first-level
        j = l0                                  # cache across all j
        while j + _ROWS <= d:                   # _ROWS rows a call (_gram_rows)
            _gram_rows(bits, bits_t, starts, wg, j, l0, lanes)
            for r in range(_ROWS):
                for ll in range(min(_LANES, j + r + 1 - l0)):
                    gram[j + r, l0 + ll] = lanes[r * _LANES + ll]
            j += _ROWS
        while j < d:
            _gram_lanes(bits, bits_t, starts, wg, j, l0, lanes)
            for ll in range(min(_LANES, j + 1 - l0)):
                gram[j, l0 + ll] = lanes[ll]
            j += 1
    for j in range(d):                          # the upper triangle, by symmetry
        for ll in range(j):
            gram[ll, j] = gram[j, ll]


def normal_equations_numpy(masks: np.ndarray, kept: np.ndarray, y: np.ndarray, w: np.ndarray,
                           wg: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The numpy twin of :func:`normal_equations` (same arguments and results): ``C_g`` as the
    float64 product of group ``g``'s 0/1 rows with themselves (exact: integers), summed with the
    weights ``wg`` in group order, as :func:`count_gram` sums them."""
    d = masks.shape[1]
    gram = np.zeros((d, d))
    order = np.argsort(kept, kind="stable")
    bounds = np.searchsorted(kept[order], np.arange(d + 2))
    for g in range(d + 1):
        rows = order[bounds[g]:bounds[g + 1]]
        if len(rows):
            xg = masks[rows].astype(np.float64)
            gram += wg[g] * (xg.T @ xg)
    # one pass over the rows in order, as pack_rows adds them (add.accumulate is sequential; a
    # BLAS dot product sums in another order and differs in the last bits)
    xtwy = np.add.accumulate((w * y)[:, None] * masks.astype(np.float64), axis=0)[-1] \
        if len(masks) else np.zeros(d)
    return gram, np.diag(gram).copy(), xtwy


def normal_equations(masks: np.ndarray, kept: np.ndarray, y: np.ndarray, w: np.ndarray, *,
                     backend: str = "auto") -> tuple[np.ndarray, np.ndarray, np.ndarray, str]:
    """``(X^T W X (d, d), X^T w (d,), X^T W y (d,), backend used)`` for masks ``X`` (n, d)
    (bool or uint8, nonzero = kept) whose weight ``w[i]`` (n,) is a function of ``kept[i]`` (n,),
    the row's number of kept features (lime's weights are: module docstring).

    Group ``g``'s weight is ``w`` at its first row; a ``w`` that is not a function of the count
    raises ``ValueError``. ``backend`` as for :func:`attnxai.fastlime.kernels.sample_masks`."""
    masks = np.ascontiguousarray(masks)
    if masks.dtype != np.uint8:
        masks = (masks if masks.dtype == bool else masks != 0).view(np.uint8)
    n, d = masks.shape
    kept = np.ascontiguousarray(kept, dtype=np.int64)
    y = np.ascontiguousarray(y, dtype=np.float64)
    w = np.ascontiguousarray(w, dtype=np.float64)
    if kept.shape != (n,) or y.shape != (n,) or w.shape != (n,):
        raise ValueError(f"masks are {masks.shape} but kept is {kept.shape}, y {y.shape} and "
                         f"w {w.shape}")
    counts, starts = count_groups(kept, d)
    use = kernels.resolve(backend)
    if use == "numpy":
        wg = np.zeros(d + 1)
        first = np.unique(kept, return_index=True)[1]
        wg[kept[first]] = w[first]
        ok = np.array_equal(wg[kept], w)
    else:
        W = int(starts[-1])
        bits = np.zeros((W, _row_stride(d)), dtype=np.uint64)
        bits_t = np.zeros((d, W), dtype=np.uint64)
        wg, xtwy = np.zeros(d + 1), np.zeros(d)
        ok = pack_rows(masks, kept, w, y, starts, bits, bits_t, wg, xtwy)
    if not ok:
        raise ValueError("the sample weights are not a function of the number of kept features "
                         "(lime's are): the count-based normal equations do not apply")
    if use == "numpy":
        return (*normal_equations_numpy(masks, kept, y, w, wg), "numpy")
    gram = np.zeros((d, d))
    count_gram(bits, bits_t, starts, wg, gram)
    return gram, np.diag(gram).copy(), xtwy, "numba"
