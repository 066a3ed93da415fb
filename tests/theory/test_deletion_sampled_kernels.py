"""The compiled steps of the certified (sampled) deletion route give the bits of the code they
replaced: its draws are numba's ``np.random.seed`` + ``np.random.randint`` stream, its paired
complements and float64 copies numpy's ``1 - masks``, its weighted residuals and their sums
numpy's expression and ``sum(axis=0)``. These guard the optimisation's bit identity: the route's
values, standard errors, half-widths and batch counts are functions of these arrays only (with
the same BLAS products on them), so a seeded run is unchanged to the bit."""

from __future__ import annotations

import numpy as np
import pytest

from attnxai.native import numba
from attnxai.theory import deletion_sampled as DS

needs_numba = pytest.mark.skipif(numba is None, reason="numba not installed")


def _reference_masks(seed, sizes, d, out, dense):
    """The shuffle as it was written before: numba's global generator, one call per draw."""
    np.random.seed(seed)
    idx = np.empty(d, dtype=np.int64)
    for i in range(sizes.size):
        m = sizes[i]
        flip = m > d - m
        fill = 1 if flip else 0
        draw = d - m if flip else m
        for j in range(d):
            idx[j] = j
            out[i, j] = fill
            dense[i, j] = fill
        for j in range(draw):
            k = j + np.random.randint(0, d - j)
            t = idx[j]
            idx[j] = idx[k]
            idx[k] = t
            out[i, idx[j]] = 1 - fill
            dense[i, idx[j]] = 1 - fill


if numba is not None:
    _reference_masks = numba.njit(_reference_masks)


@needs_numba
@pytest.mark.parametrize("d", [1, 2, 3, 7, 11, 33, 64, 65, 300])
@pytest.mark.parametrize("paired", [False, True])
def test_subset_masks_are_numbas_stream(d, paired):
    """Draw for draw numba's ``np.random.seed(seed)`` then ``randint(0, d - j)`` (sizes 0..d,
    ranges of one, masks at powers of two, past the 624 words of a regeneration), and the
    paired rows the complements ``1 - masks`` of the drawn ones, as uint8 and float64."""
    rng = np.random.default_rng(d)
    for seed in (0, 1, 2**31 - 2, int(rng.integers(2**31 - 1))):
        sizes = rng.integers(0, d + 1, size=700).astype(np.int64)
        half = sizes.size
        n = 2 * half if paired else half
        out, dense = np.empty((n, d), dtype=np.uint8), np.empty((n, d))
        DS._subset_masks(seed, sizes, d, out, dense)
        ref, ref_dense = np.empty((half, d), dtype=np.uint8), np.empty((half, d))
        _reference_masks(seed, sizes, d, ref, ref_dense)
        np.testing.assert_array_equal(out[:half], ref)
        assert np.array_equal(dense[:half], ref_dense) and dense.dtype == np.float64
        if paired:
            np.testing.assert_array_equal(out[half:], 1 - ref)
            assert np.array_equal(dense[half:], 1.0 - ref_dense)


@needs_numba
@pytest.mark.parametrize("K", [1, 2, 3, 6])
def test_residual_sums_are_numpys(K):
    """``rw`` is numpy's ``(h - (beta0 + pred)) * wts[:, None]`` and, for ``K >= 2``, ``total``
    its ``rw.sum(axis=0)`` (rows added in order), bit for bit, on values spread over many
    magnitudes (where another order of the additions changes the last bits)."""
    rng = np.random.default_rng(K)
    n = DS.BATCH
    h = rng.normal(size=(n, K)) * np.exp(rng.normal(size=(n, K)) * 8)
    pred = rng.normal(size=(n, K)) * np.exp(rng.normal(size=(n, K)) * 8)
    beta0, wts = rng.normal(size=K), np.exp(rng.normal(size=n) * 4)
    rw, total = np.empty((n, K)), np.empty(K)
    DS._residual_sums(h, pred, beta0, wts, rw, total)
    want = (h - (beta0 + pred)) * wts[:, None]
    assert np.array_equal(rw, want)
    if K >= 2:
        assert np.array_equal(total, want.sum(axis=0))
        assert not np.array_equal(total, np.array([np.sum(want[:, k]) for k in range(K)])), \
            "pairwise and sequential sums agree here: the data cannot tell the orders apart"


@needs_numba
def test_subset_masks_plain_python_is_the_compiled():
    """Run as plain Python (without numba), the shuffle draws the same stream (numba's, from its
    local generator), so the route's draws do not depend on the backend."""
    sizes = np.tile(np.array([0, 1, 3, 7, 5, 2], dtype=np.int64), 120)     # > 624 words
    compiled, cdense = np.empty((2 * sizes.size, 7), dtype=np.uint8), np.empty((2 * sizes.size, 7))
    DS._subset_masks(9, sizes, 7, compiled, cdense)
    plain, pdense = np.empty_like(compiled), np.empty_like(cdense)
    DS._subset_masks.py_func(9, sizes, 7, plain, pdense)
    assert np.array_equal(plain, compiled) and np.array_equal(pdense, cdense)
