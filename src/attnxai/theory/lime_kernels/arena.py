"""One arena per kernel call: every array a compiled loop touches is a view into one 64-byte
aligned buffer, at fixed offsets (why: below), so a loop's rounding does not depend on where the
allocator put its arrays. Plain numpy (nothing compiled).
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["aligned", "aligned_empty", "arena", "named_arena", "views_as"]


# ---------------------------------------------------------------------- one arena per call
# Two things make a vectorised loop's rounding depend on where its arrays lie in memory: LLVM may
# peel iterations to reach an aligned address, and it guards the vector loop with run-time
# checks that the arrays it writes do not overlap those it reads, comparing *differences of
# addresses* with the vector width; when two unrelated arrays happen to lie close, the scalar
# fallback runs instead and sums in another order (measured: the first head's coefficients
# changed by ~1e-14 from one call to the next when torch or numpy calls in between moved the
# allocator). Every array a kernel touches is therefore a view into one buffer per call, each
# on a 64-byte boundary at a fixed offset: the same addresses *relative to each other* on every
# call, hence the same code path and the same bits (tests/theory/test_theory_lime_chain.py).
_ALIGN = 8   # float64 elements per 64 bytes


def aligned_empty(shape) -> np.ndarray:
    """An uninitialised float64 C array whose first element is on a 64-byte boundary."""
    shape = (shape,) if np.isscalar(shape) else tuple(shape)
    size = math.prod(shape)
    buf = np.empty(size + _ALIGN)
    off = (-(buf.ctypes.data // 8)) % _ALIGN
    return buf[off:off + size].reshape(shape)


def aligned(a) -> np.ndarray:
    """A 64-byte aligned float64 C copy of ``a``."""
    a = np.asarray(a, dtype=np.float64)
    out = aligned_empty(a.shape)
    out[...] = a
    return out


def arena(*specs) -> list[np.ndarray]:
    """Views into one 64-byte aligned buffer, in order and at fixed offsets: an array spec is
    copied (float64, or int64 if it is an integer array), a ``(shape, dtype)`` spec is left
    uninitialised."""
    plan = []
    for spec in specs:        # math.prod, not np.prod: this runs per kernel call, per array
        if isinstance(spec, np.ndarray) or np.isscalar(spec) or isinstance(spec, list):
            a = np.asarray(spec)
            dtype = np.int64 if np.issubdtype(a.dtype, np.integer) else np.float64
            plan.append((a.shape, dtype, a))
        else:
            shape, dtype = spec
            shape = (shape,) if np.isscalar(shape) else tuple(shape)
            plan.append((shape, np.dtype(dtype).type, None))
    sizes = [math.prod(sh) for sh, _, _ in plan]
    padded = [-(-max(n, 1) // _ALIGN) * _ALIGN for n in sizes]
    buf = aligned_empty(sum(padded))
    out, pos = [], 0
    for (shape, dtype, a), n, pn in zip(plan, sizes, padded):
        v = buf[pos:pos + n]
        if dtype is np.int64:
            v = v.view(np.int64)
        v = v.reshape(shape)
        if a is not None:
            v[...] = a
        out.append(v)
        pos += pn
    return out


def named_arena(specs: dict[str, object]) -> dict[str, np.ndarray]:
    """:func:`arena` with a name for every array: ``{name: view}`` in the order of ``specs``."""
    return dict(zip(specs, arena(*specs.values())))


def views_as(cls, views: dict[str, np.ndarray], **scalars):
    """The named tuple ``cls`` from arena views and scalars, by field name."""
    return cls(**{f: scalars[f] if f in scalars else views[f] for f in cls._fields})
