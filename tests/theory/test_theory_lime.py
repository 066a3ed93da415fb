"""LIME's large-sample limit: lime_text (any document) and lime_attention (the attention model)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from attnxai import AttentionClassifier, Pretrained, Vocab
from attnxai.theory import lime_attention as la
from attnxai.theory import lime_exhaustive as lx
from attnxai.theory import lime_text as lt
from conftest import random_model


# ----------------------------------------------------------------------------- helpers
def lime_draws(d: int, n: int, seed: int) -> np.ndarray:
    """lime's perturbations, drawn exactly as LimeTextExplainer draws them (sample 0 excluded)."""
    rs = np.random.RandomState(seed)
    sizes = rs.randint(1, d + 1, n)
    z = np.ones((n, d))
    for i, size in enumerate(sizes):
        z[i, rs.choice(range(d), size, replace=False)] = 0
    return z


def tiny_model(seed: int = 0, vocab: int = 40, heads: int = 2, scale: float = 1.0, **kw) -> AttentionClassifier:
    return random_model(vocab, seed=seed, n_heads=heads, d_value=4, max_len=32, init_range=scale,
                        **kw)


def tiny_pretrained(model: AttentionClassifier) -> Pretrained:
    words = [f"w{i}" for i in range(model.vocab_size - 3)]
    return Pretrained(model, Vocab(words), {}, {})


def doc(n: int, seed: int = 0, repeat: bool = False) -> np.ndarray:
    rng = np.random.default_rng(seed)
    body = rng.choice(np.arange(3, 40), n, replace=repeat)
    return np.concatenate([[1], body])


# ----------------------------------------------------------------------------- lime_text
@pytest.mark.parametrize("d", [1, 2, 3, 7, 40])
@pytest.mark.parametrize("nu", [25.0, 40.0, math.inf])
def test_sigma_inverse_closed_form(d, nu):
    S = lt.sigma(d, nu)
    if d == 1:  # one feature: always removed, Sigma singular
        with pytest.raises(ValueError, match="singular"):
            lt.sigma_inverse(d, nu)
        return
    np.testing.assert_allclose(lt.sigma_inverse(d, nu) @ S, np.eye(d + 1), atol=1e-9)


@pytest.mark.parametrize("d", [4, 9, 100])
def test_wide_constants(d):
    mo, wc = lt.moments(d, math.inf), lt.wide_constants(d)
    for k in ("m", "a", "b", "scale", "shrink"):
        assert getattr(mo, k) == pytest.approx(wc[k], abs=1e-12)
    inv = lt.sigma_inverse(d, math.inf)[1:, 1:]
    np.testing.assert_allclose(inv, 6 * (d / (d + 1)) * (np.eye(d) - np.ones((d, d)) * (d - 3) / ((d - 1) * d)),
                               atol=1e-9)


def test_kernel_and_distance_match_lime():
    from lime.lime_text import LimeTextExplainer
    from sklearn.metrics.pairwise import pairwise_distances

    d = 9
    z = lime_draws(d, 50, 3)
    ours = lt.distance(d, d - z.sum(1))
    theirs = pairwise_distances(z, np.ones((1, d)), metric="cosine").ravel() * 100
    np.testing.assert_allclose(ours, theirs, atol=1e-9)
    kfn = LimeTextExplainer(kernel_width=25).base.kernel_fn
    np.testing.assert_allclose(lt.kernel(ours, 25), kfn(theirs), rtol=1e-12)


def test_sigma_matches_lime_draws():
    d, n = 12, 40_000
    z = lime_draws(d, n, 0)
    w = lt.kernel(lt.distance(d, d - z.sum(1)), 25)
    x = np.hstack([np.ones((n, 1)), z])
    emp = (x * w[:, None]).T @ x / n
    assert np.abs(emp - lt.sigma(d, 25)).max() < 0.01


def test_symbolic_limit_constants_are_the_integrals():
    """The closed forms of symbolic_limit_constants (SymPy, by parts above v^1) against the
    integrals computed numerically (scipy's quad), at kernel widths from narrow to wide."""
    import sympy as sp
    from scipy.integrate import quad

    sym = lt.symbolic_limit_constants()
    for c_value in (0.05, 1.0, 8.0, 50.0):
        moments = [quad(lambda v, k=k: 2 * (1 - v) ** (2 * k + 1) * math.exp(-c_value * v * v),
                        0, 1, epsabs=0, epsrel=1e-13)[0] for k in range(3)]
        for k, name in enumerate(("I0", "I1", "I2")):
            value = float(sym[name].subs(sym["c"], sp.Rational(c_value)).evalf(30))
            assert value == pytest.approx(moments[k], rel=1e-10), (name, c_value)
        m = moments[1] / moments[0]
        scale = m * (1 - m) / ((moments[1] - moments[2]) / moments[0])
        assert float(sym["scale"].subs(sym["c"], sp.Rational(c_value)).evalf(30)) == \
            pytest.approx(scale, rel=1e-9)


def test_limit_constants_closed_form_and_large_d():
    for nu in (25.0, 60.0, math.inf):
        c = lt.limit_constants(nu)
        q = lt.law_constants(lt.continuous_law(nu, 64))
        for k in c:
            assert c[k] == pytest.approx(q[k], rel=1e-9)
    assert lt.limit_constants(math.inf)["scale"] == 1.5
    assert lt.limit_constants(25)["scale"] == pytest.approx(1.2479, abs=1e-4)
    assert lt.moments(4000, 25).scale == pytest.approx(lt.limit_constants(25)["scale"], abs=2e-3)
    assert lt.moments(4000, math.inf).scale == pytest.approx(1.5, abs=1e-3)


@pytest.mark.parametrize("nu", [25.0, math.inf])
def test_linear_model_gives_its_coefficients(nu):
    d = 8
    c = np.linspace(-1, 2, d)
    f = lambda z: z @ c + 0.3  # noqa: E731
    b0, beta = lt.beta_exact(f, d, nu)
    np.testing.assert_allclose(beta, c, atol=1e-10)
    assert b0 == pytest.approx(0.3)
    law = lt.removal_law(d, nu)
    np.testing.assert_allclose(lt.beta_from_effects(law, np.tile(c, (d, 1)), law.p * c.sum() + 0.3), c, atol=1e-10)
    # the paper's (3/2)(Delta - mean Delta) misses the common part (here: the mean coefficient)
    assert np.abs(lt.three_halves(lt.delta_exact(f, d, nu)) - c).max() > 0.3


@pytest.mark.parametrize("nu", [25.0, 7.0, math.inf])
def test_delta_form_is_exact(nu):
    d = 7
    rng = np.random.default_rng(1)
    c = rng.normal(size=d)
    f = lambda z: np.tanh(z @ c - 1) + z[:, 0] * z[:, 1] - 0.5 * z[:, 2] * z[:, 3] * z[:, 4]  # noqa: E731
    _, beta = lt.beta_exact(f, d, nu)
    np.testing.assert_allclose(lt.beta_from_delta(lt.delta_exact(f, d, nu), nu), beta, atol=1e-12)


def test_profile_identity_is_exact_for_any_f():
    """beta_from_effects with the exact conditional effects reproduces Sigma^{-1} Gamma."""
    d, nu = 6, 25.0
    rng = np.random.default_rng(2)
    c = rng.normal(size=d)
    f = lambda z: np.sin(z @ c) + z[:, 0] * z[:, 5]  # noqa: E731
    z, prob, w = lt.perturbation_law(d, nu)
    y = f(z)
    law = lt.removal_law(d, nu)
    kept = z.sum(1)
    D = np.zeros((d, d))
    phi = np.zeros(d)
    for i, s in enumerate(law.s.astype(int)):
        sel = kept == d - s
        phi[i] = y[sel].mean()
        for j in range(d):
            on, off = sel & (z[:, j] == 1), sel & (z[:, j] == 0)
            D[i, j] = (y[on].mean() if on.any() else 0.0) - (y[off].mean() if off.any() else 0.0)
    # D_j = (d delta_j - sum_k delta_k)/(d-1)  <=>  delta_j - mean delta = (d-1)/d (D_j - mean D)
    delta = (d - 1) / d * (D - D.mean(1, keepdims=True))
    # the common level of delta does not matter except through Phi
    _, beta = lt.beta_exact(f, d, nu)
    main = lt.beta_from_effects(law, delta, phi)
    # beta_from_effects assumes mean_k D_k(p) = 0 (true to first order); add its exact share back
    extra = law.mean(law.p * (1 - law.p) * D.mean(1)) / (d * law.mean((law.p - law.mean(law.p)) ** 2))
    np.testing.assert_allclose(main + extra, beta, atol=1e-10)


def test_expected_ridge_tends_to_limit():
    d = 6
    c = np.arange(d, dtype=float)
    gamma = lt.gamma_exact(lambda z: z @ c, d, 25)
    _, lim = lt.beta_from_gamma(gamma, 25)
    errs = [np.abs(lt.beta_expected_ridge(gamma, c.sum(), n, 25)[1] - lim).max() for n in (100, 1000, 10000)]
    assert errs[0] > errs[1] > errs[2] and errs[2] < 1e-2


def test_symbolic_moments():
    import sympy as sp

    s = lt.symbolic_moments()
    d = s["d"]
    assert sp.simplify(s["alpha1_wide"] - (d - 1) / (2 * d)) == 0
    assert sp.simplify(s["alpha2_wide"] - (d - 2) / (3 * d)) == 0
    val = float(s["alpha1"].subs({d: 10, s["nu"]: 25}).doit())
    assert val == pytest.approx(lt.moments(10, 25).alpha1, rel=1e-12)


@pytest.mark.parametrize("bad, exc", [(0, ValueError), (-3, ValueError), (2.5, TypeError), ("4", TypeError),
                                      (True, TypeError)])
def test_bad_d(bad, exc):
    with pytest.raises(exc, match="d"):
        lt.moments(bad)


@pytest.mark.parametrize("bad, exc", [(0, ValueError), (-1.0, ValueError), (float("nan"), ValueError),
                                      ("wide", TypeError), (None, TypeError)])
def test_bad_kernel_width(bad, exc):
    with pytest.raises(exc, match="kernel_width"):
        lt.moments(5, bad)
    with pytest.raises(exc, match="kernel_width"):
        lt.limit_constants(bad)


def test_bad_vectors():
    with pytest.raises(ValueError, match="delta"):
        lt.beta_from_delta([])
    with pytest.raises(ValueError, match="gamma"):
        lt.beta_from_gamma([1.0])
    with pytest.raises(ValueError, match="too large"):
        lt.perturbation_law(25)
    with pytest.raises(ValueError, match="one value per row"):
        lt.gamma_exact(lambda z: np.zeros(3), 4)
    with pytest.raises(ValueError, match="s"):
        lt.distance(5, 6)
    with pytest.raises(ValueError, match="singular"):
        lt.sigma_inverse(2, 5.0)
    with pytest.raises(ValueError, match="singular"):      # d Var(p) lost to rounding, not underflow
        lt.beta_from_delta(np.arange(8.0), 1.0)
    with pytest.raises(ValueError, match="weight 0"):
        lt.moments(1, 1.0)
    law = lt.removal_law(4)
    with pytest.raises(ValueError, match="delta_p"):
        lt.beta_from_effects(law, np.zeros((3, 4)), np.zeros(4))


# ----------------------------------------------------------------------------- lime_attention
def test_lime_features_order():
    f = la.document_features(["b", "a", "b", "c", "a"], bow=True)
    assert [x.tolist() for x in f] == [[1, 3], [2, 5], [4]]
    assert [x.tolist() for x in la.document_features(["b", "a", "b"], bow=False)] == [[1], [2], [3]]
    with pytest.raises(ValueError, match="no word"):
        la.document_features([], bow=True)


def test_uniform_attention_replacement_is_exact():
    """W_q = 0: uniform attention, f linear in z under replacement, so the limit is exact."""
    m = tiny_model(1, query_gain=0.0)
    ids = doc(7, 1)
    unk = m.unk_id

    def f(z):
        x = np.tile(ids, (z.shape[0], 1))
        x[:, 1:][z == 0] = unk
        with torch.no_grad():
            return m(torch.as_tensor(x))[:, 1].numpy()

    _, exact = lt.beta_exact(f, ids.size - 1, 25.0)
    for method in ("integral", "meanfield"):
        got = la.lime_limit(m, ids, bow=False, method=method, lambda_step=0.25)
        np.testing.assert_allclose(got, exact, atol=1e-8)
    # the default step trades ~1e-6 relative accuracy for speed
    np.testing.assert_allclose(la.lime_limit(m, ids, bow=False), exact, rtol=1e-5, atol=1e-7)


def _bernoulli_truth(m, ids, feats, p, removal):
    """E[f | p, z_j = 1] - E[f | p, z_j = 0] and E[f | p] under independent Bernoulli(p)."""
    d = len(feats)
    z, _, _ = lt.perturbation_law(d, 25.0)
    z = np.vstack([z])
    prob = np.prod(np.where(z == 1, p, 1 - p), axis=1)
    y = lx.perturbed_outputs(m, ids, feats, z, bow=removal == "delete")   # the model's own forward
    on = np.array([(prob * y * z[:, j]).sum() / (prob * z[:, j]).sum() for j in range(d)])
    off = np.array([(prob * y * (1 - z[:, j])).sum() / (prob * (1 - z[:, j])).sum() for j in range(d)])
    return on - off, (prob * y).sum()


@pytest.mark.parametrize("bow", [False, True])
def test_integral_is_exact_for_independent_replacement(bow):
    """The lambda-integral gives E[M/N] exactly when features are kept independently (features
    = positions, or words grouping their positions)."""
    m = tiny_model(2, scale=2.0)  # peaked attention
    ids = doc(9, 2, repeat=True)
    feats = la.document_features(ids[1:].tolist(), bow)
    eff = la.conditional_effects(m, ids, bow=False, features=feats, law="continuous", n_nodes=3,
                                 lambda_step=0.35)
    for i, p in enumerate(eff.law.p):
        truth_d, truth_phi = _bernoulli_truth(m, ids, feats, p, "replace")
        np.testing.assert_allclose(eff.delta[i], truth_d, atol=1e-7)
        assert eff.phi[i] == pytest.approx(truth_phi, abs=1e-7)


def test_deletion_is_exact_for_independent_distinct_words():
    """Deletion, distinct words, independent removal: the chain gives the effects exactly."""
    m = tiny_model(3, scale=0.5)
    ids = doc(10, 3)
    feats = la.document_features(ids[1:].tolist(), True)
    prof = la.conditional_effects(m, ids, bow=True, law="continuous", n_nodes=5, ksub=4)
    for i in (1, 3):
        truth_d, truth_phi = _bernoulli_truth(m, ids, feats, prof.law.p[i], "delete")
        np.testing.assert_allclose(prof.delta[i], truth_d, atol=1e-9)
        assert prof.phi[i] == pytest.approx(truth_phi, abs=1e-9)


@pytest.mark.parametrize("bow", [False, True])
def test_limit_matches_lime(bow):
    """Against attnxai.fastlime (lime's algorithm) with many samples on a small random model."""
    from attnxai import fastlime as alime

    m = tiny_model(4, vocab=60, heads=2, scale=1.0)
    pre = tiny_pretrained(m)
    rng = np.random.default_rng(4)
    words = [f"w{i}" for i in rng.integers(0, 57, 28)]
    text = " ".join(words)
    ids, feats = la.text_inputs(pre, text, bow)
    runs = [alime.explain_instance(pre, text, num_samples=20_000, bow=bow, random_state=s).coef for s in (0, 1)]
    ref = np.mean(runs, axis=0)
    noise = np.linalg.norm(runs[0] - runs[1]) / 2  # about the noise of the mean of the two
    lim = la.lime_limit(m, ids, bow=bow, features=feats)
    paper = la.lime_paper(m, ids, bow=bow, features=feats)
    err = np.linalg.norm(lim - ref)
    if not bow:   # replacement: the limit is exact up to 1/d corrections
        assert err < 3 * noise + 0.02 * np.linalg.norm(ref), (err, noise)
    else:         # deletion on a small model with strong position effects: approximate
        assert err < 0.3 * np.linalg.norm(ref), (err, noise)
    assert err < 0.5 * np.linalg.norm(paper - ref)


def test_paper_formula_from_internals():
    m = tiny_model(5)
    ids = doc(8, 5, repeat=True)
    feats = la.document_features(ids[1:].tolist(), True)
    with torch.no_grad():
        real = m(torch.as_tensor(ids)[None], return_internals=True)
        unk = torch.full((1, ids.size), m.unk_id)
        unk[0, 0] = ids[0]
        allunk = m(unk, return_internals=True)
    per_pos = (real.alpha[0] * real.token_scores[0, :, :, 1] - allunk.alpha[0] * allunk.token_scores[0, :, :, 1]).mean(0)
    want = np.array([1.5 * per_pos[f].sum().item() for f in feats])
    np.testing.assert_allclose(la.lime_paper(m, ids, bow=True), want, atol=1e-10)
    np.testing.assert_allclose(la.lime_paper(m, ids, bow=False), 1.5 * per_pos[1:].numpy(), atol=1e-10)


def test_heads_average():
    m = tiny_model(6, heads=3)
    ids = doc(12, 6)
    for bow in (False, True):
        heads = la.lime_limit_heads(m, ids, bow=bow)
        assert heads.shape == (3, 12)
        np.testing.assert_allclose(heads.mean(0), la.lime_limit(m, ids, bow=bow), atol=1e-12)


def test_discrete_interpolation_and_continuous_close():
    m = tiny_model(7, vocab=60)
    ids = doc(30, 7)
    full = la.lime_limit(m, ids, bow=False, n_nodes=40)     # every value of p
    interp = la.lime_limit(m, ids, bow=False, n_nodes=9)    # 9 nodes + interpolation
    np.testing.assert_allclose(interp, full, atol=1e-6 * np.abs(full).max())


def test_unk_padding_replacement():
    m = tiny_model(8, padding="unk")
    ids = doc(6, 8)
    lim = la.lime_limit(m, ids, bow=False)
    assert np.all(np.isfinite(lim))
    with pytest.raises(NotImplementedError, match="padding"):
        la.lime_limit(m, ids, bow=True)


def test_approximations_table():
    from attnxai.theory import APPROXIMATIONS as reg

    for name in ("paper", "limit", "meanfield", "limit_wide", "limit_meanpos"):
        assert name in reg
    m = tiny_model(9, vocab=60)
    pre = tiny_pretrained(m)
    text = "w1 w2 w3 w1 w5"
    assert reg["limit"](pre, text, bow=True, kernel_width=25.0).shape == (4,)
    assert reg["paper"](pre, text, bow=False, kernel_width=25.0).shape == (5,)


def test_bad_inputs():
    m = tiny_model(10)
    ids = doc(5, 10)
    with pytest.raises(TypeError, match="AttentionClassifier"):
        la.lime_limit(object(), ids)
    with pytest.raises(ValueError, match="one document"):
        la.lime_limit(m, np.tile(ids, (2, 1)))
    with pytest.raises(ValueError, match="no token after"):
        la.lime_limit(m, ids[:1])
    with pytest.raises(TypeError, match="integers"):
        la.lime_limit(m, ids.astype(float))
    with pytest.raises(ValueError, match="token ids"):
        la.lime_limit(m, np.array([1, 999]))
    with pytest.raises(ValueError, match="kernel_width"):
        la.lime_limit(m, ids, kernel_width=0)
    with pytest.raises(TypeError, match="bow must be True"):
        la.lime_limit(m, ids, bow="false")
    with pytest.raises(TypeError, match="kernel_width must be a positive number"):
        la.lime_limit(m, ids, kernel_width="25")
    with pytest.raises(ValueError, match=r"do not start with \[CLS\]"):
        la.lime_limit(m, ids[1:])
    with pytest.raises(ValueError, match="positions"):
        la.lime_limit(m, ids, positions="averaged")
    with pytest.raises(ValueError, match="method"):
        la.lime_limit(m, ids, method="mc")
    with pytest.raises(ValueError, match="law"):
        la.lime_limit(m, ids, law="uniform")
    with pytest.raises(ValueError, match="partition"):
        la.lime_limit(m, ids, features=[[1, 2], [2, 3]])
    with pytest.raises(ValueError, match="target"):
        la.lime_limit(m, ids, target=2)
    with pytest.raises(ValueError, match="n_nodes"):
        la.lime_limit(m, ids, n_nodes=2)
    pre = tiny_pretrained(m)
    with pytest.raises(ValueError, match="normalize_for_lime"):
        la.text_inputs(pre, "w1, w2!", True)


def test_limit_takes_a_pretrained_and_a_text_like_fastlime():
    """lime_limit(pre, text) gives one coefficient per lime word, even when out-of-vocabulary
    words share the UNK id (with ids, they would be one feature)."""
    from attnxai import fastlime

    m = tiny_model(11, vocab=60)
    pre = tiny_pretrained(m)
    text = "w1 zork w2 blarg w1 w3"                  # zork and blarg are both UNK
    words = fastlime.explain_instance(pre, text, num_samples=50, random_state=0).words
    assert words == ["w1", "zork", "w2", "blarg", "w3"]
    for bow, d in ((True, 5), (False, 6)):
        by_text = la.lime_limit(pre, text, bow=bow)
        assert by_text.shape == (d,)
        ids, feats = la.text_inputs(pre, text, bow)
        np.testing.assert_array_equal(by_text, la.lime_limit(m, ids, bow=bow, features=feats))
    assert la.lime_limit(m, ids, bow=True).shape == (4,)   # by id: w1, UNK, w2, w3

