"""attnxai.fastlime.kernels: the numba kernels against their numpy twins and numpy's own draws.

Fast: no IMDb data, no model. The numba tests are skipped where numba is not installed.
"""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from attnxai.fastlime import kernels as K

needs_numba = pytest.mark.skipif(K.numba is None, reason=f"numba unavailable: "
                                 f"{K._NUMBA_IMPORT_ERROR}")


@pytest.fixture(autouse=True)
def _native_enabled(monkeypatch):
    monkeypatch.delenv("ATTNXAI_NATIVE", raising=False)


def lime_masks(d: int, num_samples: int, rs: np.random.RandomState) -> np.ndarray:
    """lime 0.2.0.1's ``LimeTextExplainer.__data_labels_distances``, masks only."""
    sample = rs.randint(1, d + 1, num_samples - 1)
    data = np.ones((num_samples, d))
    features_range = range(d)
    for i, size in enumerate(sample, start=1):
        inactive = rs.choice(features_range, size, replace=False)
        data[i, inactive] = 0
    return data.astype(bool)


def same_state(r1: np.random.RandomState, r2: np.random.RandomState) -> bool:
    s1, s2 = r1.get_state(legacy=False), r2.get_state(legacy=False)
    return (s1["bit_generator"] == s2["bit_generator"]
            and np.array_equal(s1["state"]["key"], s2["state"]["key"])
            and s1["state"]["pos"] == s2["state"]["pos"]
            and s1["has_gauss"] == s2["has_gauss"] and s1["gauss"] == s2["gauss"])


def three(seed: int, pos: int | None = None, warm: int = 0) -> list[np.random.RandomState]:
    """Three identical RandomStates; ``warm`` draws used already, or the key position set."""
    out = []
    for _ in range(3):
        rs = np.random.RandomState(seed)
        if warm:
            rs.random_sample(warm)
        if pos is not None:
            st = rs.get_state(legacy=False)
            st["state"]["pos"] = pos
            rs.set_state(st)
        out.append(rs)
    return out


def check_all_agree(d: int, num_samples: int, rss: list[np.random.RandomState],
                    backends=("numba", "numpy")) -> None:
    ref_rs, *rest = rss
    expect = lime_masks(d, num_samples, ref_rs)
    for backend, rs in zip(backends, rest):
        masks, used = K.sample_masks(d, num_samples, rs, backend)
        assert used == backend
        assert masks.dtype == bool and masks.shape == (num_samples, d)
        assert np.array_equal(masks, expect), (d, num_samples, backend)
        assert same_state(rs, ref_rs), (d, num_samples, backend)
    # and the streams continue identically
    nxt = ref_rs.randint(0, 2**31, 5)
    for rs in rest:
        assert np.array_equal(rs.randint(0, 2**31, 5), nxt)


# ---------------------------------------------------------------- masks
@needs_numba
@pytest.mark.parametrize("d", [1, 2, 3, 7, 64, 255, 1000])
def test_masks_equal_lime_choice_and_state_advances_identically(d):
    for seed in (0, 1, 12345):
        for num_samples in (1, 2, 17, 120):
            check_all_agree(d, num_samples, three(seed + d))


@needs_numba
@pytest.mark.parametrize("d", [1, 3, 255])
def test_masks_from_a_used_random_state(d):
    """The key position is in the middle of the 624-word buffer (and odd)."""
    for warm in (1, 311, 500):
        check_all_agree(d, 40, three(7, warm=warm))


@needs_numba
@pytest.mark.parametrize("pos", [0, 1, 615, 620, 622, 623, 624])
def test_masks_across_the_624_word_boundary(pos):
    """The next draws regenerate the key (pos = 624: the very next one), during ``randint`` or
    during the shuffles (num_samples = 1 or 2 draw no or one size)."""
    for d, num_samples in ((7, 1), (7, 2), (2, 12), (30, 3), (255, 5)):
        check_all_agree(d, num_samples, three(99, pos=pos))


@needs_numba
def test_masks_over_many_regenerations():
    check_all_agree(255, 400, three(2024))   # ~ 400 * 254 draws: ~ 160 regenerations


@needs_numba
def test_shuffle_masks_kernel_direct():
    """The kernel on its own: key advanced in place, new pos returned, uint8 and bool masks."""
    d, sizes = 9, np.array([1, 9, 4, 2], dtype=np.int64)
    for dtype in (np.uint8, bool):
        rs, ref = np.random.RandomState(3), np.random.RandomState(3)
        st = rs.get_state(legacy=False)
        key = np.array(st["state"]["key"], dtype=np.uint32)
        masks = np.ones((len(sizes), d), dtype=dtype)
        pos = K.shuffle_masks(key, st["state"]["pos"], d, sizes, masks)
        expect = K.shuffle_masks_numpy(ref, d, sizes)
        assert np.array_equal(masks.astype(bool), expect)
        assert np.array_equal(masks.sum(1), d - sizes)
        st2 = ref.get_state(legacy=False)
        assert np.array_equal(key, st2["state"]["key"]) and pos == st2["state"]["pos"]


def test_numpy_backend_equals_lime_choice():
    """No numba needed: the numpy twin against lime's loop."""
    for d in (1, 2, 7, 64):
        check_all_agree(d, 30, three(d)[:2], backends=("numpy",))


@needs_numba
def test_non_mt19937_random_state_takes_the_numpy_path():
    rss = [np.random.RandomState(np.random.PCG64(5)) for _ in range(2)]
    expect = lime_masks(20, 25, rss[0])
    masks, used = K.sample_masks(20, 25, rss[1], "numba")
    assert used == "numpy"
    assert np.array_equal(masks, expect)
    assert rss[0].random_sample() == rss[1].random_sample()


def test_sample_masks_rejects_bad_arguments():
    with pytest.raises(ValueError, match="backend"):
        K.sample_masks(5, 10, np.random.RandomState(0), "cuda")
    with pytest.raises(TypeError, match="RandomState"):
        K.sample_masks(5, 10, np.random.default_rng(0))


# ---------------------------------------------------------------- deletion sums
def random_deletion_problem(rng: np.random.Generator, K_: int, n: int = 300, d: int = 40,
                            T: int = 60, dtype=bool):
    masks = (rng.random((n, d)) < rng.uniform(0.05, 0.95, (n, 1))).astype(dtype)
    masks[0] = 1
    masks[1] = 0
    word_index = rng.integers(0, d, T)
    word_index[:d // 2] = np.arange(d // 2)        # repeated words and every feature used
    # magnitudes as in the evaluator: exp(...) in (0, 1], values of either sign
    A = np.concatenate([rng.normal(size=(T, K_)), np.exp(-rng.exponential(3, (T, K_)))], 1)
    A[:, :K_] *= A[:, K_:]
    B = np.concatenate([np.exp(-rng.exponential(3, (T, K_))), rng.normal(size=(T, K_))], 1)
    B[:, K_:] *= B[:, :K_]
    return masks, word_index, A, B


def reference_sums(masks, word_index, A, B):
    """The definition, in Python (the order of the additions is the kernels')."""
    K_ = A.shape[1] // 2
    out, counts = np.zeros((len(masks), 2 * K_)), np.zeros(len(masks), dtype=np.int64)
    for i, z in enumerate(masks):
        kept = [t for t in range(len(word_index)) if z[word_index[t]]]
        for q, t in enumerate(kept):
            for k in range(K_):
                out[i, k] += A[t, k] * B[q, k] + A[t, K_ + k] * B[q, K_ + k]
                out[i, K_ + k] += A[t, K_ + k] * B[q, k]
        counts[i] = len(kept)
    return out, counts


@needs_numba
@pytest.mark.parametrize("K_", [1, 2, 4, 6, 7, 11, 12])
def test_delete_sums_numba_equals_numpy_to_the_bit(K_):
    rng = np.random.default_rng(K_)
    for dtype in (bool, np.uint8):
        masks, word_index, A, B = random_deletion_problem(rng, K_, dtype=dtype)
        a, ca, ua = K.deletion_sums(masks, word_index, A, B, backend="numba")
        b, cb, ub = K.deletion_sums(masks, word_index, A, B, backend="numpy",
                                    table=K.delete_table(A, B))
        assert (ua, ub) == ("numba", "numpy")
        assert a.dtype == b.dtype == np.float64 and a.shape == b.shape == (len(masks), 2 * K_)
        assert np.array_equal(ca, cb) and ca.dtype == cb.dtype == np.int64
        assert np.array_equal(a, b)
        # the kernel called directly, into preallocated arrays
        out, counts = np.full_like(a, np.nan), np.full(len(masks), -1, dtype=np.int64)
        K.delete_sums(masks, word_index, A, B, out, counts)
        assert np.array_equal(out, a) and np.array_equal(counts, ca)
    # nonzero = kept: uint8 masks with values other than 1 (the vector loop needs 0/1 bytes)
    wide = masks.astype(np.uint8) * np.uint8(7) + (masks != 0).astype(np.uint8) * np.uint8(200)
    c, cc, _ = K.deletion_sums(wide, word_index, A, B, backend="numba")
    assert np.array_equal(c, a) and np.array_equal(cc, ca)
    out = np.full_like(a, np.nan)
    K.delete_sums(wide, word_index, A, B, out, counts)
    assert np.array_equal(out, a)


@pytest.mark.parametrize("K_", [1, 6])
def test_delete_sums_numpy_matches_the_definition(K_):
    rng = np.random.default_rng(10 + K_)
    masks, word_index, A, B = random_deletion_problem(rng, K_, n=40, d=12, T=20)
    out, counts = K.delete_sums_numpy(masks, word_index, A, B)
    ref, ref_counts = reference_sums(masks, word_index, A, B)
    assert np.array_equal(counts, ref_counts)
    assert np.array_equal(out, ref)
    assert np.array_equal(counts[:2], [20, 0]) and np.all(out[1] == 0)


def test_deletion_sums_rejects_bad_shapes():
    rng = np.random.default_rng(0)
    masks, word_index, A, B = random_deletion_problem(rng, 2, n=5, d=6, T=8)
    with pytest.raises(ValueError):
        K.deletion_sums(masks, word_index, A, B[:, :3], backend="numpy")
    with pytest.raises(ValueError):
        K.deletion_sums(masks, word_index + 6, A, B, backend="numpy")


# ---------------------------------------------------------------- backend choice
def test_fallback_warns_once_and_gives_the_same_numbers(monkeypatch):
    rng = np.random.default_rng(1)
    masks, word_index, A, B = random_deletion_problem(rng, 6, n=50)
    expect_masks, _ = K.sample_masks(30, 50, np.random.RandomState(4), "numpy")
    expect_sums, _, _ = K.deletion_sums(masks, word_index, A, B, backend="numpy")
    monkeypatch.setattr(K, "_NUMBA_IMPORT_ERROR", "ImportError: simulated")
    monkeypatch.setattr(K, "_FALLBACK_WARNED", False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            got, used = K.sample_masks(30, 50, np.random.RandomState(4))
            assert used == "numpy" and np.array_equal(got, expect_masks)
            sums, _, used = K.deletion_sums(masks, word_index, A, B)
            assert used == "numpy" and np.array_equal(sums, expect_sums)
    runtime = [w for w in caught if issubclass(w.category, RuntimeWarning)]
    assert len(runtime) == 1, [str(w.message) for w in caught]
    assert "numba" in str(runtime[0].message) and "same numbers" in str(runtime[0].message)
    assert runtime[0].filename == __file__        # attributed to the caller
    assert K.backend_status()[0] == "numpy"


def test_backend_numba_without_numba_raises(monkeypatch):
    monkeypatch.setattr(K, "_NUMBA_IMPORT_ERROR", "ImportError: simulated")
    rs = np.random.RandomState(0)
    with pytest.raises(RuntimeError, match="numba"):
        K.sample_masks(5, 10, rs, "numba")
    assert same_state(rs, np.random.RandomState(0))     # nothing drawn
    with pytest.raises(RuntimeError, match="numba"):
        K.deletion_sums(np.ones((2, 3), bool), [0, 1], np.ones((2, 2)), np.ones((2, 2)),
                        backend="numba")


def test_env_var_forces_numpy_without_warning(monkeypatch):
    monkeypatch.setenv("ATTNXAI_NATIVE", "0")
    monkeypatch.setattr(K, "_FALLBACK_WARNED", False)
    for missing in (None, "ImportError: simulated"):
        monkeypatch.setattr(K, "_NUMBA_IMPORT_ERROR", missing)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            _, used = K.sample_masks(5, 10, np.random.RandomState(0))
            _, _, used2 = K.deletion_sums(np.ones((2, 3), bool), [0, 1], np.ones((2, 2)),
                                          np.ones((2, 2)))
        assert used == used2 == "numpy"
        assert K.backend_status() == ("numpy", "disabled by ATTNXAI_NATIVE=0")
        with pytest.raises(RuntimeError, match="ATTNXAI_NATIVE"):
            K.sample_masks(5, 10, np.random.RandomState(0), "numba")


@needs_numba
def test_auto_uses_numba():
    _, used = K.sample_masks(5, 10, np.random.RandomState(0))
    assert used == "numba" and K.backend_status()[0] == "numba"


# ---------------------------------------------------------------- on-disk cache
@needs_numba
def test_compiled_kernels_are_cached_on_disk_and_git_ignored():
    # compile (or load) the signatures the dispatchers use
    K.sample_masks(10, 5, np.random.RandomState(0), "numba")
    K.deletion_sums(np.ones((3, 4), bool), [0, 1, 3], np.ones((3, 4)), np.ones((3, 4)),
                    backend="numba")
    files = []
    for fn in (K.shuffle_masks, K.delete_sums, K._mt_twist, K._temper_all):
        cache = fn._cache
        assert type(cache).__name__ == "FunctionCache", f"{fn.__name__} is not cached"
        nbi = list(Path(cache._cache_path).glob(f"kernels.{fn.__name__}-*.nbi"))
        nbc = list(Path(cache._cache_path).glob(f"kernels.{fn.__name__}-*.nbc"))
        assert nbi and nbc, (fn.__name__, cache._cache_path)
        files += nbi + nbc
    # a fresh process loads them instead of compiling
    src = str(Path(K.__file__).resolve().parents[1])
    code = ("import numpy as np\n"
            "from attnxai.fastlime import kernels as K\n"
            "K.sample_masks(10, 5, np.random.RandomState(0), 'numba')\n"
            "K.deletion_sums(np.ones((3, 4), bool), [0, 1, 3], np.ones((3, 4)), np.ones((3, 4)),"
            " backend='numba')\n"
            "print(sum(K.shuffle_masks.stats.cache_hits.values()),"
            " sum(K.delete_sums.stats.cache_hits.values()),"
            " sum(K.shuffle_masks.stats.cache_misses.values()) +"
            " sum(K.delete_sums.stats.cache_misses.values()))\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([src, os.environ.get("PYTHONPATH", "")]))
    env.pop("ATTNXAI_NATIVE", None)
    res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=300)
    assert res.returncode == 0, res.stderr
    hits_shuffle, hits_delete, misses = map(int, res.stdout.split()[-3:])
    assert hits_shuffle >= 1 and hits_delete >= 1 and misses == 0, res.stdout
    # and git ignores them (when this is a git checkout)
    repo = Path(K.__file__).resolve().parents[2]
    if (repo / ".git").exists():
        try:
            chk = subprocess.run(["git", "-C", str(repo), "check-ignore", *map(str, files)],
                                 capture_output=True, text=True, timeout=60)
        except FileNotFoundError:
            pytest.skip("git not installed")
        assert chk.returncode == 0 and len(chk.stdout.splitlines()) == len(files), chk


@needs_numba
@pytest.mark.parametrize("K_", [2, 6, 9])
def test_plain_python_delete_sums_equals_the_compiled(K_, monkeypatch):
    """Without numba, delete_sums runs as Python with _group_sums_py in place of the vector
    intrinsic: the same bits."""
    rng = np.random.default_rng(20 + K_)
    masks, word_index, A, B = random_deletion_problem(rng, K_, n=9, d=7, T=11, dtype=np.uint8)
    masks[3] *= 5                                          # nonzero = kept
    compiled, ccounts = np.empty((9, 2 * K_)), np.empty(9, dtype=np.int64)
    K.delete_sums(masks, word_index, A, B, compiled, ccounts)
    monkeypatch.setattr(K, "_group_sums", K._group_sums_py)
    plain, pcounts = np.empty_like(compiled), np.empty_like(ccounts)
    K.delete_sums.py_func(masks, word_index, A, B, plain, pcounts)
    assert np.array_equal(plain, compiled) and np.array_equal(pcounts, ccounts)
