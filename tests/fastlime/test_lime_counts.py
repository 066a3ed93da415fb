"""attnxai.fastlime.counts (the normal equations from co-occurrence counts) and the replacement
kernel, against dense products written here and against their numpy twins.

Fast: no IMDb data, no model. The numba tests are skipped where numba is not installed."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from attnxai.fastlime import counts as C
from attnxai.fastlime import kernels as K
from attnxai.fastlime.sampling import count_weights, sample

needs_numba = pytest.mark.skipif(K.numba is None, reason="numba unavailable")


@pytest.fixture(autouse=True)
def _native_enabled(monkeypatch):
    monkeypatch.delenv("ATTNXAI_NATIVE", raising=False)


def lime_problem(d: int, n: int, seed: int, width: float = 25.0):
    masks, kept, _ = sample(d, n, seed)
    w = count_weights(kept, d, width)
    y = np.random.default_rng(seed).normal(size=n)
    return masks, kept, w, y


def dense_moments(masks, w, y):
    """X^T W X, X^T w and X^T W y by einsum over the rows (no grouping, no bits)."""
    X = masks.astype(np.float64)
    return np.einsum("ij,i,ik->jk", X, w, X), np.einsum("ij,i->j", X, w), \
        np.einsum("ij,i->j", X, w * y)


# d around 64 and its multiples (the packed rows' stride), n giving groups of 1 to ~400 rows
CASES = [(1, 10), (2, 3), (7, 3000), (63, 500), (64, 5000), (65, 200), (130, 5000), (255, 5000)]


@pytest.mark.parametrize("backend", ["numba", "numpy"])
@pytest.mark.parametrize("d,n", CASES)
def test_normal_equations_equal_the_dense_products(d, n, backend):
    if backend == "numba" and K.numba is None:
        pytest.skip("numba unavailable")
    masks, kept, w, y = lime_problem(d, n, d + n)
    gram, xtw, xtwy, used = C.normal_equations(masks, kept, y, w, backend=backend)
    assert used == backend
    ref_gram, ref_xtw, ref_xtwy = dense_moments(masks, w, y)
    scale = w.sum()
    np.testing.assert_allclose(gram, ref_gram, rtol=0, atol=1e-13 * scale)
    np.testing.assert_allclose(xtw, ref_xtw, rtol=0, atol=1e-13 * scale)
    np.testing.assert_allclose(xtwy, ref_xtwy, rtol=0,
                               atol=1e-13 * float(np.abs(w * y).sum()))
    assert np.array_equal(gram, gram.T)


@needs_numba
@pytest.mark.parametrize("d,n", CASES)
def test_numba_and_numpy_normal_equations_agree(d, n):
    """The Gram matrix to the bit (the same products and sums in the same order); X^T W y to
    rounding (the numpy twin sums it with BLAS)."""
    masks, kept, w, y = lime_problem(d, n, 7 * d + n)
    a = C.normal_equations(masks, kept, y, w, backend="numba")
    b = C.normal_equations(masks, kept, y, w, backend="numpy")
    assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])
    np.testing.assert_allclose(a[2], b[2], rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("backend", ["numba", "numpy"])
def test_unit_weights_give_the_integer_counts_exactly(backend):
    if backend == "numba" and K.numba is None:
        pytest.skip("numba unavailable")
    masks, kept, _, y = lime_problem(100, 3000, 3)
    gram, xtw, _, _ = C.normal_equations(masks, kept, y, np.ones(len(y)), backend=backend)
    X = masks.astype(np.int64)
    assert np.array_equal(gram, X.T @ X) and np.array_equal(xtw, X.sum(0))


@pytest.mark.parametrize("backend", ["numba", "numpy"])
def test_weights_that_are_not_a_function_of_the_count_are_refused(backend):
    if backend == "numba" and K.numba is None:
        pytest.skip("numba unavailable")
    masks, kept, w, y = lime_problem(20, 400, 1)
    w = w.copy()
    i = int(np.flatnonzero(kept == kept[5])[-1])       # another row of row 5's group
    assert i != 5
    w[i] *= 1.5
    with pytest.raises(ValueError, match="not a function of the number of kept features"):
        C.normal_equations(masks, kept, y, w, backend=backend)
    with pytest.raises(ValueError, match="kept counts"):
        C.normal_equations(masks, np.full(len(y), 21), y, w, backend=backend)


@needs_numba
def test_count_kernels_are_cached_on_disk():
    masks, kept, w, y = lime_problem(10, 50, 0)
    C.normal_equations(masks, kept, y, w, backend="numba")
    for fn in (C.pack_rows, C.count_gram):
        cache = fn._cache
        assert type(cache).__name__ == "FunctionCache", fn.__name__
        assert list(Path(cache._cache_path).glob(f"counts.{fn.__name__}-*.nbi")), fn.__name__


# ---------------------------------------------------------------- replacement sums
def replacement_reference(masks, M1, M0):
    out = np.zeros((len(masks), M1.shape[1]))
    for i, row in enumerate(masks):
        for t, kept in enumerate(row):
            out[i] += M1[t] if kept else M0[t]
    return out


@pytest.mark.parametrize("n,T,C_", [(1, 1, 2), (7, 13, 4), (300, 40, 12), (600, 255, 3)])
def test_replacement_sums(n, T, C_):
    rng = np.random.default_rng(n + T)
    masks = rng.random((n, T)) < 0.5
    M1, M0 = rng.normal(size=(T, C_)), rng.normal(size=(T, C_))
    ref = replacement_reference(masks, M1, M0)
    b, ub = K.replacement_sums(masks, M1, M0, backend="numpy")
    assert ub == "numpy"
    np.testing.assert_allclose(b, ref, rtol=0, atol=1e-12)
    if K.numba is not None:
        a, ua = K.replacement_sums(masks.view(np.uint8), M1, M0, backend="numba")
        assert ua == "numba" and np.array_equal(a, b)


def test_replacement_sums_reject_bad_shapes():
    with pytest.raises(ValueError, match="expected masks"):
        K.replacement_sums(np.ones((3, 4), bool), np.ones((5, 2)), np.ones((5, 2)))


@pytest.mark.parametrize("n_heads", [1, 3, 6])
@pytest.mark.parametrize("bow", [True, False])
def test_both_backends_give_lime_the_same_bits(n_heads, bow):
    """`backend="numpy"` (what `attnxai explain` uses for one run) and the compiled loops give the
    same coefficients to the bit, both modes, any number of heads: X^T W y in row order on both
    (a BLAS dot product in the numpy twin differed in the last bits)."""
    from conftest import make_tiny

    from attnxai import fastlime

    pre = make_tiny(seed=3, n_heads=n_heads)
    text = "a good film with a boring plot and a good story"
    a, b = (fastlime.explain_instance(pre, text, num_samples=300, random_state=0, bow=bow,
                                      backend=backend).coef for backend in ("numpy", "numba"))
    assert np.array_equal(a, b)


@needs_numba
@pytest.mark.parametrize("d,n", [(7, 3000), (65, 200), (10, 500)])
def test_plain_python_count_gram_equals_the_compiled(d, n, monkeypatch):
    """Without numba, count_gram runs as Python with _gram_lanes_py in place of the vector
    intrinsic: the same bits (groups of several words, of one, and empty ones)."""
    masks, kept, w, y = lime_problem(d, n, 11 * d + n)
    z = np.ascontiguousarray(masks).view(np.uint8)
    _, starts = C.count_groups(kept, d)
    W = int(starts[-1])
    bits = np.zeros((W, C._row_stride(d)), dtype=np.uint64)
    bits_t = np.zeros((d, W), dtype=np.uint64)
    wg, xtwy = np.zeros(d + 1), np.zeros(d)
    C.pack_rows(z, kept, w, y, starts, bits, bits_t, wg, xtwy)
    compiled = np.zeros((d, d))
    C.count_gram(bits, bits_t, starts, wg, compiled)
    monkeypatch.setattr(C, "_gram_lanes", C._gram_lanes_py)
    monkeypatch.setattr(C, "_gram_rows", C._gram_rows_py)
    plain = np.zeros((d, d))
    C.count_gram.py_func(bits, bits_t, starts, wg, plain)
    assert np.array_equal(plain, compiled)
