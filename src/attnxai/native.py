"""Compiled loops: the one decorator every numba kernel of the package is compiled with.

:func:`jit` is ``numba.njit(cache=True)``: a kernel is compiled on its first call and then loaded
from the on-disk cache numba keeps in ``__pycache__`` beside its module. Where numba finds no
writable place for that cache (a read-only install without a writable user cache folder, where
numba raises at decoration) the kernel is compiled once per process instead; without numba the
plain Python function is returned (same numbers, much slower), and :data:`NUMBA_IMPORT_ERROR`
says why. ``fastmath`` is off unless a kernel asks: :data:`REASSOCIATE` lets LLVM reorder and
vectorise reductions (never ``nnan``/``ninf``), which the LIME-limit kernels use and explain
(:mod:`attnxai.theory.lime_kernels`); the fast LIME's kernels must match numpy to the bit and
never use it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

try:
    import numba
except ImportError as _exc:  # numba is a dependency; without it the loops still run, slowly
    numba = None
    NUMBA_IMPORT_ERROR: str | None = f"{type(_exc).__name__}: {_exc}"
else:
    NUMBA_IMPORT_ERROR = None

__all__ = ["NUMBA_IMPORT_ERROR", "REASSOCIATE", "jit", "numba"]

#: fastmath flags that allow reassociating sums (vectorised reductions), and nothing that
#: assumes away NaN or infinity.
REASSOCIATE = frozenset({"reassoc", "contract", "nsz", "arcp"})


def jit(fastmath: bool | frozenset[str] = False) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator: compile with ``numba.njit(cache=True, fastmath=fastmath)`` (module docstring
    for the fallbacks)."""
    flags = set(fastmath) if isinstance(fastmath, frozenset) else fastmath

    def deco(fn):
        if numba is None:
            return fn
        try:
            return numba.njit(cache=True, fastmath=flags)(fn)
        except RuntimeError:   # "cannot cache function ...: no locator available"
            return numba.njit(fastmath=flags)(fn)
    return deco
