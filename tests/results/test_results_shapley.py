"""Falsification tests of chapter 9's results: Shapley, Banzhaf and LIME as three weightings of
the effects ``delta_j(p)``, the size-weighted chain, and Integrated Gradients as the gradient
theorem integrated along the path. Random float64 models (every scale, both paddings) and
documents (repeated words, UNK, one word); the reference is always independent: the model run on
all ``2^d`` coalitions and the defining sums, or automatic differentiation along the path.
Marker ``falsifies``: ``tests/results/test_results_registry.py``; settings: ``tests/hypo.py``."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch
from hypothesis import event, given
from hypothesis import strategies as st
from hypo import documents, examples, models, relative

from attnxai.theory import ig_theorem, lime_attention as la
from attnxai.theory import lime_exhaustive as lx
from attnxai.theory import lime_text as lt
from attnxai.theory import shapley_exhaustive as sx
from attnxai.theory import shapley_values as sv
from attnxai.theory import shapley_weights as sw

#: Why a closed form may refuse a model (documented refusals: hard attention).
REFUSALS = ("too wide a range", "would need", "did not converge")


def closed_or_refused(fn):
    """``fn()``, or None when it refuses for a documented reason (attention logits spanning more
    than float64 can integrate: the models of scale 30)."""
    try:
        return fn()
    except ValueError as exc:
        assert any(r in str(exc) for r in REFUSALS), exc
        event("refused: hard attention")
        return None


def game(model, ids, bow):
    v, feats = sx.game_table(model, ids, bow=bow)
    return v, feats, float(np.abs(v).max())


def bow_documents(data, bow: bool, max_size: int = 8):
    """Deletion needs distinct words for the exact routes (with UNK; lime's features)."""
    return data.draw(documents(min_size=1, max_size=max_size, distinct=bow))


# ---------------------------------------------------------------- the Beta integral
@pytest.mark.falsifies("thm-shapley-integral")
@examples(120)
@given(spec=models(paddings=("mask",)), bow=st.booleans(), data=st.data())
def test_shapley_is_the_integral_of_the_effects(spec, bow, data):
    """phi_j = int_0^1 delta_j(p) dp: the effects at the Gauss-Legendre nodes, integrated with
    ceil(d/2) nodes (exact for their degree d - 1), against the defining sum over all 2^d
    coalitions; and delta_j(p) itself against the 2^d sum under Bernoulli(p) at a few p."""
    model = spec.build()
    ids = bow_documents(data, bow)
    v, feats, scale = game(model, ids, bow)
    d = len(feats)
    n = max(1, math.ceil(d / 2))
    x, w = sv.gauss_nodes(n)
    curves = closed_or_refused(lambda: sv.effect_curves(model, ids, np.concatenate(
        [x, [0.0, 0.3, 1.0]]), bow=bow, ksub=3))
    if curves is None:
        return
    ref = sx.shapley_from_table(v)
    assert relative(w @ curves.delta[:n], ref, scale) < 1e-9
    Z = sx.coalitions(d)
    for i, p in enumerate(curves.p[n:]):
        prob = np.prod(np.where(Z == 1, p, 1 - p), axis=1)
        for j in range(d):
            on, off = prob * Z[:, j], prob * (1 - Z[:, j])
            want = (on @ v / on.sum() if on.sum() else 0.0) - (off @ v / off.sum() if off.sum()
                                                                  else 0.0)
            if 0 < p < 1:
                assert abs(curves.delta[n + i, j] - want) <= 1e-9 * scale
        assert abs(curves.phi[n + i] - prob @ v) <= 1e-9 * scale
    event(f"d = {d}")


@pytest.mark.falsifies("prop-shapley-chain")
@examples(120)
@given(spec=models(), bow=st.booleans(), data=st.data())
def test_size_weighted_chain_is_the_shapley_value(spec, bow, data):
    """The chain with the size weights, one pass, against the 2^d sum; the efficiency axiom
    holds to rounding; replacement any document and padding, deletion distinct words."""
    model = spec.build()
    if bow and model.padding == "unk":
        with pytest.raises(NotImplementedError):
            sv.shapley(model, np.array([1, 3, 4]), bow=True)
        return
    ids = bow_documents(data, bow, max_size=9)
    v, feats, scale = game(model, ids, bow)
    got = closed_or_refused(lambda: sv.shapley(model, ids, bow=bow, method="chain", ksub=3))
    if got is None:
        return
    ref = sx.shapley_from_table(v)
    assert relative(got, ref, scale) < 1e-9
    assert abs(got.sum() - (v[-1] - v[0])) <= 1e-12 * max(scale, 1.0)     # efficiency
    default = sv.shapley(model, ids, bow=bow)
    assert relative(default, ref, scale) < 1e-8
    event(f"{'delete' if bow else 'replace'}, d = {len(feats)}")


def shapley_by_definition(model, ids) -> tuple[np.ndarray, float]:
    """(phi, max |v|). Replacement by UNK: the model run on all 2^d coalitions (its forward pass, which no closed
    form uses) and the defining sum ``sum_S |S|! (d-1-|S|)! / d! [v(S + j) - v(S)]`` written out
    here (no code of shapley_values or shapley_exhaustive)."""
    d = ids.size - 1
    Z = np.array(list(itertools.product((0.0, 1.0), repeat=d)))
    y = lx.perturbed_outputs(model, ids, [np.array([t]) for t in range(1, d + 1)], Z, False)
    v = {tuple(int(x) for x in z): float(f) for z, f in zip(Z, y)}
    phi = np.zeros(d)
    for z, value in v.items():
        s = sum(z)
        for j in range(d):
            if z[j] == 0:
                w = math.factorial(s) * math.factorial(d - 1 - s) / math.factorial(d)
                phi[j] += w * (v[z[:j] + (1,) + z[j + 1:]] - value)
    return phi, float(np.abs(y).max())


@pytest.mark.falsifies("prop-shapley-chain", "thm-shapley-integral")
@examples(40)
@given(spec=models(scales=(1.0, 3.0)), d=st.integers(1, 9), data=st.data())
def test_the_default_route_is_exact_at_every_length(spec, d, data):
    """``shapley(model, ids, bow=False)`` with every default (Gauss-Legendre in p with ceil(d/2)
    nodes, exact for the effects' degree d - 1) against the defining sum, odd and even d alike:
    one node fewer leaves out the curve's top coefficient (3e-2 of max |v| at d = 3)."""
    model = spec.build()
    ids = data.draw(documents(min_size=d, max_size=d))
    got = closed_or_refused(lambda: sv.shapley(model, ids, bow=False))
    if got is None:
        return
    ref, scale = shapley_by_definition(model, ids)
    assert relative(got, ref, scale) < 1e-8
    event(f"d {'odd' if d % 2 else 'even'}")


# ---------------------------------------------------------------- three weightings
@pytest.mark.falsifies("prop-three-weightings")
@examples(80)
@given(spec=models(paddings=("mask",)), bow=st.booleans(), uniform=st.booleans(),
       nu=st.sampled_from([25.0, 8.0, 100.0, math.inf]), data=st.data())
def test_shapley_banzhaf_lime_weigh_one_curve(spec, bow, uniform, nu, data):
    """Banzhaf = delta(1/2) against its 2^d sum; LIME's profile limit = the lime-weighted centred
    effects plus the slope over d (the weights of weight_functions against lime_limit); and for an
    additive game (uniform attention W_q = 0, replacement: f linear in z) all three coincide."""
    model = spec.build(query_gain=0.0 if uniform else 1.0)
    if uniform:
        bow = False
    ids = bow_documents(data, bow)
    v, feats, scale = game(model, ids, bow)
    d = len(feats)
    bz = closed_or_refused(lambda: sv.banzhaf(model, ids, bow=bow, ksub=3))
    if bz is None:
        return
    assert relative(bz, sx.banzhaf_from_table(v), scale) < 1e-9
    if d < 2:
        return
    try:
        weights = sw.weight_functions(d, nu)
        lime = la.lime_limit(model, ids, bow=bow, kernel_width=nu, law="discrete",
                             n_nodes=d + 1, lambda_step=0.25, ksub=3)
    except ValueError as exc:
        assert "narrow" in str(exc) or "underflow" in str(exc) or "singular" in str(exc), exc
        event("refused: kernel too narrow for d")
        return
    ps, ws = weights["Shapley"]                      # the Shapley weighting of the same curve
    assert relative(ws @ sv.effect_curves(model, ids, ps, bow=bow, ksub=3).delta,
                    sx.shapley_from_table(v), scale) < 1e-9
    pb, wb = weights["Banzhaf"]
    assert relative(wb @ sv.effect_curves(model, ids, pb, bow=bow, ksub=3).delta, bz, scale) < 1e-9
    p, wl = weights["LIME"]
    curves = sv.effect_curves(model, ids, p, bow=bow, ksub=3)
    law = lt.removal_law(d, nu)
    mp = float(law.tilted @ law.p)
    slope = float(law.tilted @ ((law.p - mp) * curves.phi)) / float(law.tilted @ (law.p - mp) ** 2)
    centred = curves.delta - curves.delta.mean(axis=1, keepdims=True)
    assert relative(wl @ centred + slope / d, lime, scale) < 1e-8
    if uniform:
        phi = sv.shapley(model, ids, bow=False)
        assert relative(phi, bz, scale) < 1e-9 and relative(lime, phi, scale) < 1e-8
        ig = ig_theorem.integrated_gradients(model, ids)              # attention does not move
        assert relative(ig.words if bow else ig.tokens, phi, scale) < 1e-9
        event("additive game: the three coincide")


# ---------------------------------------------------------------- Integrated Gradients
def _autograd_ig(model, ids, n: int, target: int = 1) -> np.ndarray:
    """IG by automatic differentiation of the model at ``n`` Gauss-Legendre nodes of the path
    (one batch: every node is a sample)."""
    ids_t = torch.as_tensor(ids)[None]
    ids_t, mask = model.ids_and_mask(ids_t)
    base = ids_t.clone()
    base[:, 1:ids.size] = model.unk_id
    e, e0 = model.embed(ids_t).detach(), model.embed(base).detach()
    x, w = sv.gauss_nodes(n)
    sig = torch.tensor(x)[:, None, None]
    path = (e0 + sig * (e - e0)).requires_grad_(True)                 # (n, T, D)
    out = model.forward_embeddings(path, mask.expand(n, -1))[:, target]
    (g,) = torch.autograd.grad(out.sum(), path)
    per_node = ((e - e0) * g).sum(-1)                                  # (n, T)
    return (torch.tensor(w) @ per_node)[1:ids.size].numpy()


@pytest.mark.falsifies("thm-ig-closed-form")
@examples(60)
@given(spec=models(scales=(0.1, 1.0, 3.0)), ids=documents(min_size=1, max_size=9),
       target=st.integers(0, 1))
def test_integrated_gradients_closed_form(spec, ids, target):
    """The closed form against automatic differentiation along the same path (Gauss-Legendre
    with 400 nodes), completeness sum IG = f(x) - f(baseline) against the model's own outputs,
    and a word's attribution the sum of its tokens'."""
    model = spec.build()
    ig = closed_or_refused(lambda: ig_theorem.integrated_gradients(model, ids, target=target))
    if ig is None:
        return
    ref = _autograd_ig(model, ids, 2 * ig.n_nodes, target=target)
    base = ids.copy()
    base[1:] = model.unk_id
    with torch.no_grad():
        f1 = float(model(torch.as_tensor(ids)[None])[0, target])
        f0 = float(model(torch.as_tensor(base)[None])[0, target])
    scale = max(float(np.abs(ref).max(initial=0.0)), abs(f1 - f0), 1e-12)
    assert relative(ig.tokens, ref, scale) < 1e-9
    assert ig.output == pytest.approx(f1, abs=1e-12) and ig.baseline_output == pytest.approx(
        f0, abs=1e-12)
    assert abs(ig.completeness_gap) <= 1e-10 * max(1.0, abs(f1), abs(f0))
    words = {}
    for t, x in enumerate(ids[1:]):
        words.setdefault(int(x), 0.0)
        words[int(x)] += ig.tokens[t]
    np.testing.assert_allclose(ig.words, list(words.values()), rtol=1e-12, atol=1e-15)
    event(f"{ig.n_nodes} nodes")
