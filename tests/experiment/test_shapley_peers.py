"""The closed forms against the libraries a reader uses: shap's exact explainer (equal to
rounding on small documents, both removals), its permutation explainer (converging to ours as
its evaluations grow) and captum's IntegratedGradients on the same embeddings and baseline.

shap and captum are test peers (the ``test`` extra, pinned in ``constraints.txt``), not
dependencies of the package or of the book's pages: chapter 9 reads what
``book/data/make_shapley_peers.py`` measured with them."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from conftest import make_tiny, tiny_text

from attnxai import theory
from attnxai.theory import shapley_exhaustive as sx
from attnxai.theory import shapley_values as sv
from attnxai.theory.lime_exhaustive import perturbed_outputs
from attnxai.theory.lime_inputs import resolve

import captum.attr as captum_attr  # noqa: E402  (test peers: the test extra installs them)
import shap  # noqa: E402


def _game(pre, text, bow):
    model, ids, feats = resolve(pre, text, bow, None)
    return (lambda Z: perturbed_outputs(model, ids, feats, np.asarray(Z), bow)), len(feats)


def _fast_game(pre, text, bow):
    """The same game through the fast LIME's float64 evaluator (exact for a float64 model)."""
    from attnxai.fastlime.problem import Problem

    prob = Problem(pre, text, bow=bow, mask_string="UNK", target=1, path="fast",
                   chunk_size=4096, backend="auto")
    return (lambda Z: prob.evaluator(np.asarray(Z))), len(prob.words)


def _shap_exact(f, d):
    masker = shap.maskers.Independent(np.zeros((1, d)), max_samples=1)
    return shap.explainers.Exact(f, masker)(np.ones((1, d))).values[0]


@pytest.mark.parametrize("bow", [True, False])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_shap_exact_explainer_equals_the_closed_form(bow, seed):
    pre = make_tiny(seed=seed)
    words = "good film but the plot was very boring and awful".split()
    text = " ".join(np.random.default_rng(seed).permutation(words)[:8 + seed])
    f, d = _game(pre, text, bow)
    got = _shap_exact(f, d)
    np.testing.assert_allclose(got, sx.shapley_from_table(f(sx.coalitions(d))), atol=1e-13)
    scale = max(1.0, np.abs(got).max())
    # the lambda rule's floor: ~1e-11 of the scale at the default ksub=2, a few 1e-12 at ksub=4
    np.testing.assert_allclose(sv.shapley(pre, text, bow=bow), got, rtol=0, atol=5e-11 * scale)
    np.testing.assert_allclose(sv.shapley(pre, text, bow=bow, ksub=4), got, rtol=0,
                               atol=1e-11 * scale)


def test_shap_permutation_converges_to_the_closed_form():
    """Replacement on a 60-token document: shap's permutation estimate (fixed seed) against the
    exact values, its error falling with the evaluations (about as 1/sqrt)."""
    pre = make_tiny(max_len=64, seed=3)
    text = tiny_text(60, seed=3)
    f, d = _fast_game(pre, text, False)
    exact = sv.shapley(pre, text, bow=False)
    masker = shap.maskers.Independent(np.zeros((1, d)), max_samples=1)
    errs = []
    for evals in (2_000, 32_000):
        est = shap.PermutationExplainer(f, masker, seed=0)(np.ones((1, d)), max_evals=evals,
                                                           silent=True).values[0]
        errs.append(np.linalg.norm(est - exact) / np.linalg.norm(exact))
        assert est.sum() == pytest.approx(exact.sum(), abs=1e-9)     # both are efficient
    assert errs[1] < errs[0] / 2


def _embeddings(model, text_ids):
    ids = torch.as_tensor(text_ids).reshape(1, -1)
    base = ids.clone()
    base[:, 1:] = model.unk_id
    return model.embed(ids).detach(), model.embed(base).detach()


def _captum(model, text_ids, n_steps, method):
    e, e0 = _embeddings(model, text_ids)
    ig = captum_attr.IntegratedGradients(lambda x: model.forward_embeddings(x)[:, 1])
    att = ig.attribute(e, baselines=e0, n_steps=n_steps, method=method)
    return att[0].sum(-1)[1:].double().numpy()


def _autograd(model, text_ids, x, w):
    e, e0 = _embeddings(model, text_ids)
    path = (e0 + torch.tensor(x)[:, None, None] * (e - e0)).requires_grad_(True)
    (g,) = torch.autograd.grad(model.forward_embeddings(path)[:, 1].sum(), path)
    return (torch.tensor(w) @ ((e - e0) * g).sum(-1))[1:].numpy()


def test_captum_integrated_gradients_equals_the_closed_form():
    """captum (gausslegendre) against the closed form: equal up to captum's float32 quadrature
    weights (``torch.tensor(step_sizes).float()`` in captum 0.9.0's IntegratedGradients), about
    2e-9 relative; with those weights rounded the same way, automatic differentiation at
    captum's nodes reproduces captum to 1e-12, and with float64 weights the closed form."""
    pre = make_tiny(seed=5)
    text = "good film but the plot was very boring and awful"
    ours = theory.integrated_gradients(pre, text, tol=1e-14)
    ids = pre.encode(text).reshape(-1)
    scale = np.abs(ours.tokens).max()
    n = 2 * ours.n_nodes
    got = _captum(pre.model, ids, n, "gausslegendre")
    x, w = sv.gauss_nodes(n)
    w32 = w.astype(np.float32).astype(np.float64)
    assert np.abs(got - _autograd(pre.model, ids, x, w32)).max() < 1e-12 * scale
    assert np.abs(_autograd(pre.model, ids, x, w) - ours.tokens).max() < 1e-12 * scale
    assert np.abs(got - ours.tokens).max() < 1e-8 * scale
    coarse = _captum(pre.model, ids, 20, "riemann_trapezoid")          # captum's other rule
    assert np.abs(coarse - ours.tokens).max() > 1e-6 * scale
    fine = _captum(pre.model, ids, 2000, "riemann_trapezoid")
    assert np.abs(fine - ours.tokens).max() < np.abs(coarse - ours.tokens).max() / 100


def test_benchmark_helpers():
    """benchmarks/bench_shapley.py: its game is the enumeration's, its evaluations counted, and
    the budget search stops at the first budget within the target (or at the cap)."""
    from conftest import load_script

    bench = load_script("benchmarks/bench_shapley.py")
    pre = make_tiny(seed=2)
    text = "good film but the plot was very boring"
    for bow in (True, False):
        game = bench.PeerGame(pre, text, bow)
        f, d = _game(pre, text, bow)
        Z = sx.coalitions(d)
        np.testing.assert_allclose(game(Z), f(Z), atol=1e-12)
        assert game.calls == len(Z)
    exact = sv.shapley(pre, text, bow=False, ksub=4)
    game = bench.PeerGame(pre, text, False)
    evals, wall, cpu, err = bench.evaluations_to(lambda n: bench.permutation_values(game, n),
                                                 exact, 1e-2, 64, 2 ** 14)
    assert err <= 1e-2 and 64 <= evals <= 2 ** 14 and wall > 0 and cpu > 0
    evals, _, _, err = bench.evaluations_to(lambda n: bench.permutation_values(game, n),
                                            exact, 1e-30, 64, 256)
    assert evals <= 256 and err > 1e-30                        # the cap: reported, not reached
