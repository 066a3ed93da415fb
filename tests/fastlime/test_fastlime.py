"""attnxai.fastlime against the real lime 0.2.0.1: same masks, same weights, same coefficients.

Most tests use tiny random float64 models (conftest.make_tiny): the fast path is exact for any
weights, so no trained model is needed; a few run on the trained quick model for realism."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse
import torch
from lime.lime_text import LimeTextExplainer
from sklearn.linear_model import Ridge
from sklearn.metrics.pairwise import pairwise_distances
from threadpoolctl import threadpool_limits

import attnxai
from attnxai import fastlime as L
from attnxai.model.textmodel import Pretrained
from attnxai.fastlime import kernels
from attnxai.fastlime.problem import Problem
from attnxai.model.single_layer import AttentionClassifier
from conftest import make_tiny, tiny_text


@pytest.fixture(scope="module", autouse=True)
def one_blas_thread():
    # the machine is shared: a 2-thread BLAS waiting for a busy core is 10x slower
    with threadpool_limits(1):
        yield


@pytest.fixture(scope="module")
def reviews():
    """Three normalised texts for the tiny model (max_len 256): short, medium, and 255 tokens."""
    return {"short": tiny_text(12, 1), "medium": tiny_text(37, 2), "full": tiny_text(255, 3)}


@pytest.fixture(scope="module")
def model64():
    return make_tiny(max_len=256)


@pytest.fixture(scope="module")
def unk_model64():
    """The authors' padding: UNK fill to max_len, attended."""
    return make_tiny("unk", max_len=64)


@pytest.fixture(scope="module")
def real_reviews(imdb):
    """Normalised test reviews for the trained model: medium, and 255 tokens (its limit)."""
    texts = [attnxai.normalize_for_lime(r.text) for r in imdb.test[:400]]
    lengths = np.array([len(t.split()) for t in texts])
    medium = texts[int(np.flatnonzero((lengths > 120) & (lengths < 200))[0])]
    full = texts[int(np.flatnonzero(lengths == 255)[0])]
    return {"medium": medium, "full": full}


def lime_explain(classifier_fn, text, *, bow, seed, num_samples, d, mask_string="UNK",
                 kernel_width=25):
    exp = LimeTextExplainer(kernel_width=kernel_width, bow=bow, mask_string=mask_string,
                            random_state=seed)
    return exp.explain_instance(text, classifier_fn, labels=(1,), num_features=d,
                                num_samples=num_samples)


def assert_same(res: L.LimeResult, e, tol=1e-8):
    coef = np.zeros(res.num_features)
    ids = [j for j, _ in e.local_exp[1]]
    assert sorted(ids) == list(range(res.num_features))  # lime kept every feature
    for j, c in e.local_exp[1]:
        coef[j] = c
    assert res.words == list(e.domain_mapper.indexed_string.inverse_vocab)
    np.testing.assert_allclose(res.coef, coef, rtol=0, atol=tol)
    assert abs(res.intercept - e.intercept[1]) < tol
    assert abs(res.score - e.score) < tol
    assert abs(res.local_pred - e.local_pred[0]) < tol
    np.testing.assert_allclose(res.prediction, e.predict_proba, rtol=0, atol=tol)


# ---------------------------------------------------------------- exactness on the fast path
@pytest.mark.parametrize("bow", [True, False])
@pytest.mark.parametrize("which", ["short", "medium", "full"])
@pytest.mark.parametrize("seed", [0, 20240])
def test_fast_path_equals_lime(model64, reviews, bow, which, seed):
    fast_equals_lime(model64, reviews[which], bow, seed, 1000)


def fast_equals_lime(pre, text, bow, seed, n):
    """attnxai.fastlime on the fast path and lime itself, same seed: the same explanation."""
    res = L.explain_instance(pre, text, bow=bow, num_samples=n, random_state=seed)
    assert res.path == "fast", res.reason
    e = lime_explain(pre.predict_logits, text, bow=bow, seed=seed, num_samples=n,
                     d=res.num_features)
    assert_same(res, e)
    return res, e


@pytest.mark.parametrize("bow", [True, False])
def test_trained_model_5000_samples_equals_lime(quick_model64, real_reviews, bow):
    res, e = fast_equals_lime(quick_model64, real_reviews["full"], bow, 3, 5000)
    assert [w for w, _ in res.as_list()[:10]] == [w for w, _ in e.as_list(label=1)[:10]]


@pytest.mark.parametrize("bow", [True, False])
def test_random_state_object_is_advanced_like_lime(model64, reviews, bow):
    text = reviews["short"]
    ours, theirs = np.random.RandomState(5), np.random.RandomState(5)
    r1 = L.explain_instance(model64, text, bow=bow, num_samples=300, random_state=ours)
    r2 = L.explain_instance(model64, text, bow=bow, num_samples=300, random_state=ours)
    exp = LimeTextExplainer(bow=bow, mask_string="UNK", random_state=theirs)
    e1 = exp.explain_instance(text, model64.predict_logits, labels=(1,),
                              num_features=r1.num_features, num_samples=300)
    e2 = exp.explain_instance(text, model64.predict_logits, labels=(1,),
                              num_features=r1.num_features, num_samples=300)
    assert_same(r1, e1)
    assert_same(r2, e2)
    assert not np.allclose(r1.coef, r2.coef)
    s1, s2 = ours.get_state(), theirs.get_state()
    assert s1[2] == s2[2] and np.array_equal(s1[1], s2[1])


def test_global_random_state(model64, reviews):
    """random_state=None uses numpy's global RandomState, as lime does."""
    text = reviews["short"]
    np.random.seed(11)
    res = L.explain_instance(model64, text, num_samples=200, random_state=None)
    after_ours = np.random.random()
    np.random.seed(11)
    e = lime_explain(model64.predict_logits, text, bow=True, seed=None, num_samples=200,
                     d=res.num_features)
    assert np.random.random() == after_ours
    assert_same(res, e)


@pytest.mark.parametrize("bow", [True, False])
def test_unk_padding_model_equals_lime(unk_model64, reviews, bow):
    fast_equals_lime(unk_model64, reviews["medium"], bow, 1, 600)


@pytest.mark.parametrize("bow", [True, False])
def test_other_target_and_kernel_width(model64, reviews, bow):
    text = reviews["short"]
    res = L.explain_instance(model64, text, bow=bow, num_samples=400, random_state=2, target=0,
                    kernel_width=3.5)
    exp = LimeTextExplainer(kernel_width=3.5, bow=bow, mask_string="UNK", random_state=2)
    e = exp.explain_instance(text, model64.predict_logits, labels=(0,),
                             num_features=res.num_features, num_samples=400)
    coef = np.zeros(res.num_features)
    for j, c in e.local_exp[0]:
        coef[j] = c
    np.testing.assert_allclose(res.coef, coef, rtol=0, atol=1e-8)
    assert abs(res.intercept - e.intercept[0]) < 1e-8


def test_tiny_documents(model64):
    """d <= 6: lime's 'auto' runs forward selection, which still keeps every feature."""
    for text, bow in [("good", True), ("good", False), ("bad movie bad", True),
                      ("a truly awful film", False)]:
        res = L.explain_instance(model64, text, bow=bow, num_samples=300, random_state=4)
        e = lime_explain(model64.predict_logits, text, bow=bow, seed=4, num_samples=300,
                         d=res.num_features)
        assert_same(res, e)


def test_float32_model_close_to_lime(quick_model, real_reviews):
    """Fast path in float64, lime through the float32 forward: equal to float32 rounding."""
    text = real_reviews["medium"]
    res = L.explain_instance(quick_model, text, num_samples=500, random_state=9)
    e = lime_explain(quick_model.predict_logits, text, bow=True, seed=9, num_samples=500,
                     d=res.num_features)
    coef = np.zeros(res.num_features)
    for j, c in e.local_exp[1]:
        coef[j] = c
    np.testing.assert_allclose(res.coef, coef, rtol=0, atol=1e-4)


# ---------------------------------------------------------------- the generic path
def test_generic_path_sends_lime_the_same_strings(model64, reviews):
    """Same masks in the same order: classifier_fn receives exactly lime's list of strings."""
    raw = "This film was GOOD, not great... but good! Good acting; bad plot (very bad)."
    for text in (raw, reviews["short"]):
        for bow in (True, False):
            seen_ours, seen_lime = [], []

            def ours_fn(texts):
                seen_ours.extend(texts)
                return model64.predict_logits(texts)

            def lime_fn(texts):
                seen_lime.extend(texts)
                return model64.predict_logits(texts)

            res = L.explain_instance(ours_fn, text, bow=bow, num_samples=300, random_state=8)
            assert res.path == "generic"
            e = lime_explain(lime_fn, text, bow=bow, seed=8, num_samples=300,
                             d=res.num_features)
            assert seen_ours == seen_lime
            assert_same(res, e)


def test_fast_and_generic_paths_agree(model64, reviews):
    for bow in (True, False):
        fast = L.explain_instance(model64, reviews["medium"], bow=bow, num_samples=400,
                         random_state=6, keep_data=True)
        gen = L.explain_instance(model64, reviews["medium"], bow=bow, num_samples=400,
                        random_state=6, keep_data=True, path="generic")
        assert (fast.path, gen.path) == ("fast", "generic")
        assert gen.reason == "path='generic' requested"
        np.testing.assert_array_equal(fast.masks, gen.masks)
        np.testing.assert_allclose(fast.labels, gen.labels, rtol=0, atol=1e-12)
        np.testing.assert_array_equal(fast.weights, gen.weights)
        np.testing.assert_allclose(fast.coef, gen.coef, rtol=0, atol=1e-10)


def test_raw_text_takes_the_generic_path_and_equals_lime(model64):
    text = "A Wonderful film. The acting was superb; the ending, sadly, was weak!"
    res = L.explain_instance(model64, text, num_samples=300, random_state=1)
    assert res.path == "generic" and "normalize_for_lime" in res.reason
    e = lime_explain(model64.predict_logits, text, bow=True, seed=1, num_samples=300,
                     d=res.num_features)
    assert_same(res, e)
    assert "Wonderful" in res.words  # lime is case-sensitive


def test_generic_path_recovers_a_linear_function():
    """A classifier linear in word presence: lime recovers its coefficients (up to the ridge
    shrinkage), and our generic path returns exactly lime's numbers."""
    beta = {"great": 2.0, "awful": -3.0, "plot": 0.5, "the": 0.0, "Acting": 1.0}

    def classifier_fn(texts):
        out = np.zeros((len(texts), 2))
        for i, t in enumerate(texts):
            words = set(t.replace(",", " ").replace(".", " ").split())
            out[i, 1] = 0.3 + sum(b for w, b in beta.items() if w in words)
            out[i, 0] = -out[i, 1]
        return out

    text = "The plot, great. Acting awful."
    res = L.explain_instance(classifier_fn, text, num_samples=3000, random_state=0)
    assert res.path == "generic"
    got = dict(zip(res.words, res.coef))
    assert set(got) == {"The", "plot", "great", "Acting", "awful"}
    for w, b in [("great", 2.0), ("awful", -3.0), ("plot", 0.5), ("Acting", 1.0), ("The", 0.0)]:
        assert got[w] == pytest.approx(b, abs=0.02)
    e = lime_explain(classifier_fn, text, bow=True, seed=0, num_samples=3000,
                     d=res.num_features)
    assert_same(res, e)


# ---------------------------------------------------------------- the building blocks
def test_sample_masks_numba_and_numpy_agree_and_advance_state():
    for d in (1, 2, 3, 9, 168, 255, 300):
        for n in (2, 17, 700):
            r1, r2 = np.random.RandomState(d + n), np.random.RandomState(d + n)
            r1.random_sample(5), r2.random_sample(5)
            a, used_a = L.sample_masks(d, n, r1, backend="numba")
            b, used_b = L.sample_masks(d, n, r2, backend="numpy")
            assert (used_a, used_b) == ("numba", "numpy")
            np.testing.assert_array_equal(a, b)
            assert r1.random_sample() == r2.random_sample()


def test_sample_masks_are_lime_choices():
    """Row i drops exactly lime's choice(range(d), size, replace=False)."""
    d, n = 13, 50
    masks, _ = L.sample_masks(d, n, 42)
    rs = np.random.RandomState(42)
    sizes = rs.randint(1, d + 1, n - 1)
    assert masks[0].all()
    for i, size in enumerate(sizes, start=1):
        dropped = rs.choice(range(d), size, replace=False)
        expect = np.ones(d, dtype=bool)
        expect[dropped] = False
        np.testing.assert_array_equal(masks[i], expect)


@pytest.mark.parametrize("backend", ["numba", "numpy"])
def test_both_backends_equal_lime(model64, reviews, backend):
    for bow in (True, False):
        res = L.explain_instance(model64, reviews["full"], bow=bow, num_samples=800, random_state=2,
                        backend=backend)
        assert res.backend == backend
        e = lime_explain(model64.predict_logits, reviews["full"], bow=bow, seed=2,
                         num_samples=800, d=res.num_features)
        assert_same(res, e)


def test_deletion_sums_numba_equal_numpy(model64, reviews):
    kw = dict(bow=True, mask_string="UNK", target=1, path="fast", chunk_size=4096)
    z, _ = L.sample_masks(len(set(reviews["full"].split())), 500, 0)
    a, ca = Problem(model64, reviews["full"], backend="numba", **kw).evaluator.sums(z)
    b, cb = Problem(model64, reviews["full"], backend="numpy", **kw).evaluator.sums(z)
    np.testing.assert_array_equal(ca, cb)
    np.testing.assert_allclose(a, b, rtol=1e-13, atol=0)


def test_compiled_head_outputs_are_the_numpy_expression_bit_for_bit():
    """DeleteEvaluator.heads divides in one compiled pass (kernels.head_ratios): the bits of
    the numpy expression on the same sums, with the UNK fill or without, 1 to 12 heads."""
    from conftest import random_model

    from attnxai.fastlime.evaluate import DeleteEvaluator
    from attnxai.model.network import Projections

    if kernels.resolve("auto") != "numba":
        pytest.skip("numba is off: heads takes the numpy expression itself")
    rng = np.random.default_rng(3)
    for case in range(40):
        K = int(rng.integers(1, 13))
        m = random_model(40, seed=case, n_heads=K, max_len=30, padding=("mask", "unk")[case % 2],
                         init_range=float(rng.choice([0.1, 1.0, 3.0])))
        T = int(rng.integers(1, 29))
        ids = np.r_[1, rng.integers(2, 40, T)]
        d = int(rng.integers(1, T + 1))
        word_index = np.r_[np.arange(d), rng.integers(0, d, T - d)]
        ev = DeleteEvaluator(Projections.of(m).document(ids, target=1), word_index)
        if not ev.ok:
            continue
        z = (rng.random((int(rng.integers(1, 600)), d)) < rng.random()).astype(np.uint8)
        got = ev.heads(z)
        r, counts = ev.sums(z)
        num, den = r[:, :K] + ev.cls_num, r[:, K:] + ev.cls_den
        if ev.fill_num is not None:
            num, den = num + ev.fill_num[counts], den + ev.fill_den[counts]
        assert ev.backend == "numba"
        np.testing.assert_array_equal(got.view(np.int64), (num / den).view(np.int64))


def test_lime_random_state_is_lime_s_stream():
    """An int seeds a reused scratch RandomState to RandomState(int)'s state (also after the
    scratch one was used, and for the largest seed); other values go through
    validate.random_state (a RandomState is used in place, bad seeds refused)."""
    from attnxai.fastlime.problem import lime_random_state

    for seed in (0, 7, 2**32 - 1, np.int64(12), 7):
        rs = lime_random_state(seed)
        want = np.random.RandomState(int(seed))
        got = rs.get_state()
        for a, b in zip(got, want.get_state()):
            assert np.array_equal(a, b)
        rs.randint(1, 10, 100)                        # used: the next seed must not see it
        np.random.RandomState(0).standard_normal()
        rs.standard_normal()                          # a cached gaussian is reset by seed()
    own = np.random.RandomState(3)
    assert lime_random_state(own) is own
    for bad, err in ((2**32, ValueError), (-1, ValueError), (True, TypeError), (1.0, TypeError)):
        with pytest.raises(err):
            lime_random_state(bad)


def test_kernel_weights_are_bitwise_lime():
    for d in (1, 2, 7, 100, 255):
        masks, _ = L.sample_masks(d, 400, d)
        data = scipy.sparse.csr_matrix(masks.astype(float))
        dist = pairwise_distances(data, data[0], metric="cosine").ravel() * 100
        expect = np.sqrt(np.exp(-(dist ** 2) / 25 ** 2))
        np.testing.assert_array_equal(L.kernel_weights(masks, 25), expect)


@pytest.mark.parametrize("d", [1, 4, 60, 255])
def test_weighted_ridge_equals_sklearn(d):
    rng = np.random.default_rng(d)
    masks, _ = L.sample_masks(d, 2000, d)
    y = masks @ rng.normal(size=d) + 0.3 * rng.normal(size=2000) + 2.0
    w = L.kernel_weights(masks, 25)
    X = masks.astype(float)
    ridge = Ridge(alpha=1, fit_intercept=True).fit(X, y, sample_weight=w)
    for chunk in (8192, 333):
        coef, intercept, score, local_pred = L.weighted_ridge(masks, y, w, chunk_size=chunk)
        np.testing.assert_allclose(coef, ridge.coef_, rtol=0, atol=1e-10)
        assert intercept == pytest.approx(ridge.intercept_, abs=1e-10)
        assert score == pytest.approx(ridge.score(X, y, sample_weight=w), abs=1e-10)
        assert local_pred == pytest.approx(ridge.predict(X[:1])[0], abs=1e-10)


def test_weighted_ridge_constant_target():
    masks, _ = L.sample_masks(5, 100, 0)
    coef, intercept, score, _ = L.weighted_ridge(masks, np.full(100, 3.0), np.ones(100))
    np.testing.assert_allclose(coef, 0, atol=1e-12)
    assert intercept == pytest.approx(3.0) and score == 1.0


def test_result_helpers(model64, reviews):
    res = L.explain_instance(model64, reviews["short"], num_samples=200, random_state=0)
    amap = res.as_map()
    assert [abs(c) for _, c in amap] == sorted((abs(c) for c in res.coef), reverse=True)
    assert res.as_list()[0][0] == res.words[amap[0][0]]
    assert res.masks is None and res.num_samples == 200 and res.target == 1


def test_wide_score_range_falls_back_to_generic(model64, reviews):
    m = model64.model
    big = AttentionClassifier(m.config).double()
    big.load_state_dict(m.state_dict())
    with torch.no_grad():
        big.W_q.mul_(3e4)
    pre = Pretrained(big.eval(), model64.vocab, model64.config, model64.metrics)
    res = L.explain_instance(pre, reviews["short"], num_samples=100, random_state=0)
    assert res.path == "generic" and "range" in res.reason
    with pytest.raises(ValueError, match="span more than"):
        L.explain_instance(pre, reviews["short"], num_samples=100, random_state=0, path="fast")


# ---------------------------------------------------------------- bad inputs
@pytest.mark.parametrize("kwargs, exc, match", [
    (dict(text=""), ValueError, "empty"),
    (dict(text="   \n"), ValueError, "empty"),
    (dict(text="?!... --"), ValueError, "no letter or digit"),
    (dict(text=b"bytes"), TypeError, "text must be a str"),
    (dict(num_samples=1), ValueError, "num_samples must be >= 2"),
    (dict(num_samples=2.5), TypeError, "num_samples must be an int"),
    (dict(kernel_width=0), ValueError, "kernel_width"),
    (dict(kernel_width=float("nan")), ValueError, "kernel_width"),
    (dict(kernel_width=float("inf")), ValueError, "finite"),
    (dict(kernel_width="25"), TypeError, "kernel_width must be a positive number"),
    (dict(kernel_width=True), TypeError, "kernel_width must be a positive number"),
    (dict(bow="yes"), TypeError, "bow must be True"),
    (dict(bow="false"), TypeError, "bow must be True"),
    (dict(bow=1), TypeError, "bow must be True"),
    (dict(mask_string=None), TypeError, "mask_string must be a str"),
    (dict(bow=False, mask_string="the"), ValueError, "vocabulary word 'the'"),
    (dict(bow=False, mask_string="two words"), ValueError, "one token"),
    (dict(bow=False, mask_string=""), ValueError, "mask_string must be a non-empty str"),
    (dict(target=2), ValueError, "target class 2 does not exist"),
    (dict(target=-1), ValueError, "target must be a class index"),
    (dict(target=True), TypeError, "target must be an int"),
    (dict(target=1.0), TypeError, "target must be an int"),
    (dict(random_state="abc"), TypeError, "random_state must be"),
    (dict(random_state=np.random.default_rng(0)), TypeError, "random_state must be"),
    (dict(random_state=-1), ValueError, "random_state must be an int in"),
    (dict(path="faster"), ValueError, "path must be one of"),
    (dict(path="fast", text="Not Normalised!"), ValueError, "path='fast' is not possible"),
    (dict(chunk_size=0), ValueError, "chunk_size"),
    (dict(backend="cuda"), ValueError, "backend must be one of"),
])
def test_bad_inputs(model64, kwargs, exc, match):
    args = dict(text="a good movie", num_samples=50, random_state=0)
    args.update(kwargs)
    text = args.pop("text")
    with pytest.raises(exc, match=match):
        L.explain_instance(model64, text, **args)


def test_np_int64_target_accepted(model64, reviews):
    a = L.explain_instance(model64, reviews["short"], num_samples=100, random_state=0, target=np.int64(0))
    b = L.explain_instance(model64, reviews["short"], num_samples=100, random_state=0, target=0)
    np.testing.assert_array_equal(a.coef, b.coef)


def test_too_long_text_is_refused(model64):
    text = " ".join(["good"] * 300)
    with pytest.raises(ValueError, match="300 tokens but the model reads at most 255"):
        L.explain_instance(model64, text, num_samples=50)
    res = L.explain_instance(model64, attnxai.normalize_for_lime(text), num_samples=50,
                    random_state=0, bow=False)
    assert res.num_features == 255


def test_bad_classifier_fn():
    with pytest.raises(ValueError, match=r"\(n, n_classes\) array"):
        L.explain_instance(lambda texts: np.zeros(len(texts)), "a b c", num_samples=20)
    with pytest.raises(ValueError, match="target class 1 does not exist"):
        L.explain_instance(lambda texts: np.zeros((len(texts), 1)), "a b c", num_samples=20)
    with pytest.raises(TypeError, match="attnxai.Pretrained or a classifier_fn"):
        L.explain_instance(42, "a b c", num_samples=20)


def test_random_state_on_another_bit_generator(model64, reviews):
    """A RandomState over PCG64 (not MT19937) takes the numpy sampler: still lime's masks."""
    text = reviews["short"]
    ours = np.random.RandomState(np.random.PCG64(3))
    theirs = np.random.RandomState(np.random.PCG64(3))
    res = L.explain_instance(model64, text, num_samples=200, random_state=ours)
    exp = LimeTextExplainer(bow=True, mask_string="UNK", random_state=theirs)
    e = exp.explain_instance(text, model64.predict_logits, labels=(1,),
                             num_features=res.num_features, num_samples=200)
    assert_same(res, e)
    assert ours.random_sample() == theirs.random_sample()


def test_projections_follow_the_weights(reviews):
    """The fast path keeps a model's projections between calls (fastlime.problem.projections);
    changing the weights in place (an optimiser step, load_state_dict) must be seen."""
    from attnxai.fastlime.problem import projections

    pre = make_tiny(max_len=256, seed=5)
    text = reviews["medium"]
    kw = dict(bow=True, num_samples=300, random_state=3)
    before = L.explain_instance(pre, text, **kw)
    assert projections(pre.model) is projections(pre.model)           # kept
    saved = {k: v.clone() for k, v in pre.model.state_dict().items()}
    with torch.no_grad():
        pre.model.W_q.mul_(1.5)
        pre.model.W_e[3:40] += 0.2
    changed = L.explain_instance(pre, text, **kw)
    fresh = make_tiny(max_len=256, seed=5)
    fresh.model.load_state_dict(pre.model.state_dict())
    assert np.array_equal(changed.coef, L.explain_instance(fresh, text, **kw).coef)
    assert not np.allclose(changed.coef, before.coef)
    pre.model.load_state_dict(saved)
    assert np.array_equal(L.explain_instance(pre, text, **kw).coef, before.coef)


@pytest.mark.parametrize("text", [
    "the movie, the plot; and THE end. the",
    "  leading spaces, trailing punctuation!!  ",
    "\u00e9t\u00e9 \u2014 caf\u00e9 caf\u00e9, na\u00efve: \u4e2d\u6587 words words",
    "one",
    "a b a b a b c",
])
@pytest.mark.parametrize("bow,mask_string", [(True, None), (False, None), (False, "[MASK]")])
def test_generic_path_strings_are_limes(text, bow, mask_string):
    """The texts the generic path classifies are lime's IndexedString.inverse_removing of every
    mask row (row 0: the document), string for string, dropped (bow) or masked (positions)."""
    from lime.lime_text import IndexedString

    from attnxai.fastlime.problem import perturbed_strings

    indexed = IndexedString(text, bow=bow, mask_string=mask_string)
    d = indexed.num_words()
    rng = np.random.default_rng(len(text) + d)
    masks = rng.integers(0, 2, (300, d))
    masks[0] = 1
    masks[1] = 0                                  # every feature removed
    expected = [text] + [indexed.inverse_removing(np.flatnonzero(row == 0)) for row in masks[1:]]
    assert perturbed_strings(indexed, masks, chunk=7) == expected
