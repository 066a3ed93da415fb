"""theory.shapley_values, theory.ig_theorem and their SymPy derivations: entry points, word
order, the routes against each other and against enumeration, the efficiency axiom on long
documents, the binomial approximation's error, refusals. The property-based falsification tests
are in tests/results/test_results_shapley.py."""

from __future__ import annotations

import math

import numpy as np
import pytest
import sympy as sp
import torch
from conftest import make_tiny, tiny_text

from attnxai import fastlime, theory
from attnxai.theory import ig_theorem
from attnxai.theory import shapley_exhaustive as sx
from attnxai.theory import shapley_symbolic as ss
from attnxai.theory import shapley_values as sv
from attnxai.theory import shapley_weights as sw
from attnxai.theory.lime_inputs import resolve, tables


def rel(a, b) -> float:
    return float(np.linalg.norm(np.asarray(a) - b) / np.linalg.norm(b))


# ---------------------------------------------------------------- entry points
@pytest.mark.parametrize("bow", [True, False])
def test_one_value_per_lime_word_in_lime_order(tiny, bow):
    text = "good film good plot but the acting was awful and the plot boring"
    res = fastlime.explain_instance(tiny, text, num_samples=50, bow=bow, random_state=0)
    for values in (theory.shapley(tiny, text, bow=bow), theory.banzhaf(tiny, text, bow=bow)):
        assert values.shape == (len(res.words),)
    ig = theory.integrated_gradients(tiny, text)
    assert ig.tokens.shape == (len(text.split()),)
    assert ig.words.shape == (len(fastlime.explain_instance(tiny, text, num_samples=50,
                                                            random_state=0).words),)
    model, ids, feats = resolve(tiny, text, bow, None)
    np.testing.assert_allclose(theory.shapley(tiny, text, bow=bow),
                               theory.shapley(model, ids, bow=bow, features=feats), rtol=0,
                               atol=0)


def test_heads_average_to_the_whole(tiny):
    text = "good film but the plot was very boring"
    for bow in (True, False):
        heads = sv.shapley_heads(tiny, text, bow=bow)
        assert heads.shape[0] == tiny.model.n_heads
        np.testing.assert_allclose(heads.mean(0), sv.shapley(tiny, text, bow=bow), atol=1e-15)
    assert np.allclose(ig_theorem.integrated_gradients(tiny, text).heads.mean(0),
                       ig_theorem.integrated_gradients(tiny, text).tokens)


@pytest.mark.parametrize("bow", [True, False])
def test_both_routes_and_enumeration_agree_on_distinct_words(tiny, bow):
    text = "good film but the plot was very boring and awful"
    model, ids, feats = resolve(tiny, text, bow, None)
    ref = sx.exact_shapley(model, ids, feats, bow=bow)
    chain = sv.shapley(tiny, text, bow=bow, method="chain", ksub=3)
    gauss = sv.shapley(tiny, text, bow=bow, method="gauss", n_nodes=5, ksub=3)
    assert rel(chain, ref) < 1e-11 and rel(gauss, ref) < 1e-11
    assert rel(sv.banzhaf(tiny, text, bow=bow, ksub=3),
               sx.exact_banzhaf(model, ids, feats, bow=bow)) < 1e-11


def test_repeated_words_deletion_routes(tiny):
    """With a repeated word, deletion's default is the exact route (every configuration of the
    repeated words) when it fits its budget: equal to enumeration; the binomial positions only
    by name (an approximation, measured here against enumeration); positions='tokens' is the
    tokens' game summed per word, exact for that game."""
    text = "good film good plot but the plot was boring the end"
    model, ids, feats = resolve(tiny, text, True, None)
    ref = sx.exact_shapley(model, ids, feats, bow=True)
    assert rel(sv.shapley(tiny, text, bow=True), ref) < 1e-10
    assert rel(sv.shapley(tiny, text, bow=True, positions="exact"), ref) < 1e-10
    assert rel(sv.banzhaf(tiny, text, bow=True), sx.exact_banzhaf(model, ids, feats, bow=True)) \
        < 1e-10
    binomial = sv.shapley(tiny, text, bow=True, positions="binomial")
    assert 0 < rel(binomial, ref) < 0.2
    tokens = [np.array([t]) for t in range(1, ids.size)]
    token_game = sx.exact_shapley(model, ids, tokens, bow=True)
    owner = np.zeros(ids.size - 1, int)
    for j, f in enumerate(feats):
        owner[f - 1] = j
    summed = np.bincount(owner, token_game, len(feats))
    assert rel(sv.shapley(tiny, text, bow=True, positions="tokens"), summed) < 1e-10
    with pytest.raises(ValueError, match="method='chain' follows the positions exactly"):
        sv.shapley(tiny, text, bow=True, positions="binomial", method="chain")


def test_binomial_error_on_random_models_is_what_chapter_9_states():
    """The median relative error of the binomial positions against enumeration on small random
    models with repeated words (11-12 words in 14 tokens): measured 4.5 %, worst 16 %."""
    errs = []
    for seed in range(8):
        pre = make_tiny(seed=seed)
        text = tiny_text(14, seed=seed, unknown=False)
        model, ids, feats = resolve(pre, text, True, None)
        ref = sx.exact_shapley(model, ids, feats, bow=True)
        errs.append(rel(sv.shapley(pre, text, bow=True, positions="binomial"), ref))
    assert 0.01 < np.median(errs) < 0.1 and max(errs) < 0.25


# ---------------------------------------------------------------- long documents
@pytest.fixture(scope="module")
def long_doc():
    pre = make_tiny(max_len=256, seed=4)
    return pre, tiny_text(255, seed=4)


def test_efficiency_and_routes_on_a_long_document(long_doc):
    pre, text = long_doc
    model, ids, feats = resolve(pre, text, False, None)
    full, empty = sv.endpoint_values(tables(model, ids, 1), "replace")
    gap = (full - empty).mean()
    scale = max(abs(gap), 1.0)
    gauss = sv.shapley(pre, text, bow=False)                      # 25 nodes, d = 255
    chain = sv.shapley(pre, text, bow=False, method="chain", ksub=3)
    assert abs(chain.sum() - gap) < 1e-12 * scale                 # by construction
    assert abs(gauss.sum() - gap) < 1e-9 * scale                  # to the quadrature's error
    assert rel(gauss, chain) < 1e-8
    ig = theory.integrated_gradients(pre, text)
    assert abs(ig.completeness_gap) < 1e-10 * scale
    assert ig.output - ig.baseline_output == pytest.approx(gap, abs=1e-12)
    # deletion with repeated words: the binomial route converges in its nodes
    d40 = sv.shapley(pre, text, bow=True)
    d80 = sv.shapley(pre, text, bow=True, n_nodes=80)
    assert rel(d40, d80) < 1e-3


def test_trained_model_efficiency_on_a_long_review(quick_model64, imdb):
    from attnxai.experiment.lime_corpus import review_text

    for i in range(50):
        text = review_text(imdb, i, quick_model64.model.max_len)
        if len(text.split()) == quick_model64.model.max_len - 1:
            break
    # Only what holds on any weights: the chain's efficiency by construction, and Gauss-Legendre
    # with ceil(d/2) nodes exact in p. The default's 25 nodes are not exact at d = 255: their error
    # depends on the weights (1.8e-9 on one trained model, the module's docstring), so it is
    # measured there, never asserted on a model this machine happened to train.
    chain = sv.shapley(quick_model64, text, bow=False, method="chain", ksub=3)
    model, ids, _ = resolve(quick_model64, text, False, None)
    full, empty = sv.endpoint_values(tables(model, ids, 1), "replace")
    gap = (full - empty).mean()
    assert abs(chain.sum() - gap) < 1e-12 * max(1.0, abs(gap))
    whole = sv.shapley(quick_model64, text, bow=False, n_nodes=math.ceil(len(chain) / 2))
    assert abs(whole.sum() - gap) < 1e-9 * max(1.0, abs(gap))
    assert rel(whole, chain) < 1e-9


# ---------------------------------------------------------------- weights and curves
def test_weight_functions():
    for d in (1, 2, 7, 40):
        w = sw.weight_functions(d) if d > 1 else None
        if w is None:
            with pytest.raises(ValueError):
                sw.weight_functions(d)
            continue
        for name, (p, q) in w.items():
            assert q.sum() == pytest.approx(1.0) and np.all((p >= 0) & (p <= 1))
    x, wq = sw.gauss_nodes(200)
    assert float(wq @ sw.lime_weight(x)) == pytest.approx(1.0, rel=1e-6)
    np.testing.assert_allclose(sw.lime_weight(x, math.inf), 6 * x * (1 - x), rtol=1e-9)
    with pytest.raises(ValueError):
        sw.lime_weight([1.5])
    np.testing.assert_allclose(sv.size_weights(4), [0, 4 / 3, 1, 4 / 3, 1 / 4])


def test_effect_curves_end_points(tiny):
    """At p = 1 the effect is leave-one-out, at p = 0 the word alone against the empty document."""
    text = "good film but the plot was very boring"
    model, ids, feats = resolve(tiny, text, False, None)
    v, _ = sx.game_table(model, ids, feats, bow=False)
    c = sv.effect_curves(tiny, text, [0.0, 1.0], bow=False, ksub=3)
    d = len(feats)
    full = 2 ** d - 1
    np.testing.assert_allclose(c.delta[1], [v[full] - v[full ^ (1 << j)] for j in range(d)],
                               atol=1e-11)
    np.testing.assert_allclose(c.delta[0], [v[1 << j] - v[0] for j in range(d)], atol=1e-11)
    for bad in ([], [1.2], [[0.5]], [np.nan]):
        with pytest.raises(ValueError, match="kept fractions"):
            sv.effect_curves(tiny, text, bad)


# ---------------------------------------------------------------- refusals
def test_refusals(tiny):
    text = "good film but the plot"
    with pytest.raises(ValueError, match="method"):
        sv.shapley(tiny, text, method="kernel")
    with pytest.raises(ValueError, match="positions"):
        sv.shapley(tiny, text, positions="mean")
    with pytest.raises((ValueError, TypeError)):
        sv.shapley(tiny, text, bow=False, n_nodes=0)
    with pytest.raises((ValueError, TypeError)):
        sv.shapley(tiny, text, ksub=0)
    with pytest.raises(ValueError, match="normalize_for_lime"):
        sv.shapley(tiny, "Good film!")
    with pytest.raises(ValueError, match="tol"):
        theory.integrated_gradients(tiny, text, tol=0)
    unk = make_tiny("unk")
    with pytest.raises(NotImplementedError, match="padding"):
        sv.shapley(unk, text, bow=True)
    assert np.isfinite(sv.shapley(unk, text, bow=False)).all()


def test_ig_refuses_when_it_cannot_converge(monkeypatch):
    pre = make_tiny(scale=30.0, seed=2)
    text = "good film but the plot was very boring and awful"
    monkeypatch.setattr(ig_theorem, "MAX_NODES", 16)
    with pytest.raises(ValueError, match="did not converge"):
        ig_theorem.integrated_gradients(pre, text)
    fixed = ig_theorem.integrated_gradients(pre, text, n_nodes=16)   # asked for: no refusal
    assert fixed.n_nodes == 16 and fixed.error > 0


def test_ig_one_word_and_unk():
    pre = make_tiny()
    with pytest.raises(ValueError, match="vocabulary"):               # all UNK: refused, as
        theory.integrated_gradients(pre, "zork")                      # LIME's limit refuses it
    ig = theory.integrated_gradients(pre, "zork good")                # UNK: does not move
    assert ig.tokens[0] == 0.0
    assert ig.tokens.sum() == pytest.approx(ig.output - ig.baseline_output, abs=1e-13)
    one = theory.integrated_gradients(pre, "good")
    assert one.tokens[0] == pytest.approx(one.output - one.baseline_output, abs=1e-13)


# ---------------------------------------------------------------- SymPy
def test_symbolic_derivations():
    b = ss.symbolic_beta_integral()
    assert b["difference"] == 0 and set(b["checks"]) == {0}
    for d in (1, 2, 3, 4):
        g = ss.symbolic_game(d)
        assert all(sp.simplify(x) == 0 for x in g["differences"]), d
        assert g["degree"] == [d - 1] * d or d == 1
    a = ss.symbolic_additive_game(3)
    assert all(x == 0 for x in a["differences"]) and a["lime"] == list(a["a"])
    assert all(x == 0 for x in ss.symbolic_ig_path(3)["differences"])


def test_enumeration_refuses_large_games():
    with pytest.raises(ValueError, match="2\\^d"):
        sx.coalitions(17)
    with pytest.raises(ValueError, match="2\\^d"):
        sx.shapley_from_table(np.zeros(3))


def test_autograd_agrees_with_ig_on_a_trained_model(quick_model64):
    text = "a dull film with a great score and a moving story"
    ig = theory.integrated_gradients(quick_model64, text)
    m = quick_model64.model
    ids = torch.as_tensor(quick_model64.encode(text)).reshape(1, -1)
    base = ids.clone()
    base[:, 1:] = m.unk_id
    e, e0 = m.embed(ids).detach(), m.embed(base).detach()
    x, w = sw.gauss_nodes(2 * ig.n_nodes)
    path = (e0 + torch.tensor(x)[:, None, None] * (e - e0)).requires_grad_(True)
    (g,) = torch.autograd.grad(m.forward_embeddings(path)[:, 1].sum(), path)
    ref = (torch.tensor(w) @ ((e - e0) * g).sum(-1))[1:].numpy()
    assert rel(ig.tokens, ref) < 1e-10


# ---------------------------------------------------------------- approximations say so
def test_binomial_default_warns_and_explicit_choices_are_silent():
    import warnings

    pre = make_tiny()
    repeated, distinct = "good film good plot", "good film bad plot"
    for fn, value in ((theory.shapley, "Shapley"), (theory.banzhaf, "Banzhaf")):
        with pytest.warns(theory.LimitApproximationWarning,
                          match=rf"{value} values.*binomial-position.*positions='binomial'"):
            approx = fn(pre, repeated, bow=True,               # the exact route over budget
                        sampling=theory.SamplingSettings(budget=0))
        with warnings.catch_warnings():
            warnings.simplefilter("error")            # any warning fails these
            chosen = fn(pre, repeated, bow=True, positions="binomial")
            fn(pre, distinct, bow=True)
            fn(pre, repeated, bow=False)
            fn(pre, repeated, bow=True)                   # within budget: exact, silent
        np.testing.assert_array_equal(approx, chosen)   # the warning changes nothing
    with pytest.warns(theory.LimitApproximationWarning, match="curves values"):
        sv.effect_curves(pre, repeated, [0.5], bow=True,
                         sampling=theory.SamplingSettings(budget=0))
