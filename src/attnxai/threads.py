"""Thread limits for small linear algebra.

On a machine whose other core is busy, a two-thread BLAS or torch call on small matrices spends
its time waiting for that core: measured here, a 5,000 x 255 Gram product went from ~7 ms to
~360 ms. Every hot loop of the package (fast LIME, the closed forms, corpus workers) runs its small
products with one thread, through :func:`one_blas_thread` (cheap: the controller that finds the
BLAS libraries is built once per process).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator

__all__ = ["one_blas_thread", "single_threaded"]


@functools.lru_cache(maxsize=1)
def _controller():
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


@contextlib.contextmanager
def one_blas_thread() -> Iterator[None]:
    """BLAS (and OpenMP) limited to one thread inside the block, restored after."""
    with _controller().limit(limits=1):
        yield


@contextlib.contextmanager
def single_threaded() -> Iterator[None]:
    """One torch thread and one BLAS thread inside the block (corpus workers, benchmarks)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with one_blas_thread():
            yield
    finally:
        torch.set_num_threads(before)
