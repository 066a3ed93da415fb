"""Falsification tests of the LIME results of chapters 5 and 6: each tries to break its labelled
statement on random functions of the perturbation, random float64 models and documents, and
kernel widths from 0.3 (where lime's weights underflow and the closed forms must refuse) to the
wide-kernel limit. The reference shares no code with the closed forms: the weighted normal
equations over all 2^d perturbations in 40-digit arithmetic, with lime's law, cosine distance and
kernel written out in this file (:func:`beta_mp`), on a table of any function (chapter 5) or on
the model's outputs on every perturbed document (chapter 6: its forward pass, which no closed form
uses); for independent removal, the theorem's right-hand side written out here on the 2^d sums
under Bernoulli(p). Marker ``falsifies``: ``tests/results/test_results_registry.py``;
settings: ``tests/hypo.py``."""

from __future__ import annotations

import itertools
import math

import mpmath
import numpy as np
import pytest
from hypothesis import assume, event, given
from hypothesis import strategies as st
from hypo import documents, examples, kernel_widths, models, relative
from hypo import narrowest_width as hypo_narrowest

from attnxai import fastlime
from attnxai.theory import lime_attention as la
from attnxai.theory import lime_exhaustive as lx
from attnxai.theory import lime_text as lt

REFUSALS = ("singular", "narrow", "underflow", "too wide a range", "would need")


def refused(exc: ValueError) -> bool:
    """A refusal the closed forms document (kernel too narrow, scores spanning too wide a range)."""
    return any(r in str(exc) for r in REFUSALS)


# ---------------------------------------------------------------- an independent reference
def lime_law_mp(d: int, nu: float):
    """All z in {0,1}^d with lime's probability and kernel weight, in 40-digit arithmetic, written
    out here from lime_text.py's own steps (no code of attnxai): lime draws the number of removed
    features s uniformly in 1..d, then which ones uniformly (probability 1 / (d C(d, s))); the
    distance is 100 times sklearn's cosine distance between z and the all-ones row, and the
    weight ``sqrt(exp(-D^2 / nu^2))`` (sklearn's similarity of the all-zero row is 0)."""
    mpmath.mp.dps = 40
    rows = []
    for z in itertools.product((0, 1), repeat=d):
        s = d - sum(z)
        if s == 0:                      # sample 0 (z = 1) has probability 0 as n -> infinity
            continue
        prob = mpmath.mpf(1) / (d * math.comb(d, s))
        dot = sum(mpmath.mpf(x) for x in z)                      # z . 1
        norms = mpmath.sqrt(sum(mpmath.mpf(x) ** 2 for x in z)) * mpmath.sqrt(d)
        dist = 100 * (1 - (dot / norms if norms else 0))        # sklearn: a zero row, 0
        w = mpmath.mpf(1) if math.isinf(nu) else mpmath.sqrt(mpmath.exp(-dist ** 2
                                                                       / mpmath.mpf(nu) ** 2))
        rows.append((z, prob * w))
    return rows


def lime_law_by_size_mp(d: int, nu: float):
    """[(s, P(s removed) * kernel weight)] for s = 1..d: :func:`lime_law_mp` summed by size."""
    by = {}
    for z, q in lime_law_mp(d, nu):
        by[d - sum(z)] = by.get(d - sum(z), 0) + q
    return sorted(by.items())


def beta_mp(values: dict, d: int, nu: float) -> np.ndarray:
    """Sigma^{-1} Gamma (coefficients) by a 40-digit linear solve of the weighted normal equations:
    LIME's n -> infinity limit by its definition."""
    rows = lime_law_mp(d, nu)
    S = mpmath.matrix(d + 1, d + 1)
    G = mpmath.matrix(d + 1, 1)
    for z, q in rows:
        x = (1, *z)
        for a in range(d + 1):
            G[a] += q * x[a] * mpmath.mpf(values[z])
            for b in range(d + 1):
                S[a, b] += q * x[a] * x[b]
    sol = mpmath.lu_solve(S, G)
    return np.array([float(sol[j]) for j in range(1, d + 1)])


def f_table(d: int):
    """A function of z as a table over {0,1}^d (any values: the theorem is for every f)."""
    n = 2 ** d
    return st.lists(st.floats(-5, 5, allow_nan=False), min_size=n, max_size=n).map(
        lambda v: dict(zip(itertools.product((0, 1), repeat=d), v)))


def as_function(table: dict):
    return lambda Z: np.array([table[tuple(int(x) for x in z)] for z in Z])


@st.composite
def functions(draw, max_d: int = 7):
    """(d, a table of f over {0,1}^d, a kernel width for d)."""
    d = draw(st.integers(2, max_d))
    return d, draw(f_table(d)), draw(kernel_widths(d))


def rounding(d: int, nu: float) -> float:
    """The float64 error allowed in Sigma^{-1} Gamma, relative to the function's scale: 1e-11 plus
    the conditioning a / (a + d b) times 2e-14 (measured: about 1e-15 times it)."""
    mo = lt.moments(d, nu)
    return 1e-11 + 2e-14 * mo.a / (mo.a + d * mo.b)


# ---------------------------------------------------------------- chapter 5
@pytest.mark.falsifies("thm-lime-text-limit")
@examples(120)
@given(df=functions())
def test_lime_text_limit_for_any_function(df):
    d, table, nu = df
    f = as_function(table)
    scale = max(abs(v) for v in table.values())
    try:
        got = lt.beta_from_delta(lt.delta_exact(f, d, nu), nu)       # kappa (Delta - lambda mean)
    except ValueError as exc:
        assert refused(exc), exc
        assert not nu > hypo_narrowest(d) * (1 + 1e-9), "refused a kernel it should accept"
        event("refused: kernel too narrow")
        return
    mo = lt.moments(d, nu)
    ref = beta_mp(table, d, nu)
    assert relative(got, ref, scale) < rounding(d, nu)
    assert relative(lt.beta_exact(f, d, nu)[1], ref, scale) < rounding(d, nu)
    assert relative(lt.beta_high_precision(f, d, nu), ref, scale) < 1e-13     # the package's own
    event("kernel within 30 % of the refusal limit" if nu < 1.3 * hypo_narrowest(d) * (1 + 1e-6)
          else "kernel width away from the limit")
    if math.isinf(nu):                                                # the wide-kernel constants
        assert mo.scale == pytest.approx(1.5 * (1 - 1 / d), rel=1e-12)
        assert mo.shrink == pytest.approx((d - 3) / (d - 1), rel=1e-12, abs=1e-14)


@pytest.mark.falsifies("prop-lime-profile")
@examples(120)
@given(df=functions(), linear=st.lists(st.floats(-3, 3), min_size=8, max_size=8))
def test_limit_through_the_kept_fraction(df, linear):
    d, table, nu = df
    scale = max(abs(v) for v in table.values())
    try:
        law = lt.removal_law(d, nu)
        mo = lt.moments(d, nu)
        lt.sigma_inverse(d, nu)
    except ValueError as exc:
        assert refused(exc), exc
        event("refused: kernel too narrow")
        return
    # the first display, exact for every f: from E[f | s] and D_j(p) = E[f | s, z_j=1] - ...
    Z = np.array(list(itertools.product((0, 1), repeat=d)), float)
    y = as_function(table)(Z)
    kept = Z.sum(1)
    p = law.p
    cond_mean = np.array([y[kept == d - s].mean() for s in law.s])
    D = np.zeros((law.s.size, d))
    for i, s in enumerate(law.s):
        sel = kept == d - s
        for j in range(d):
            on, off = sel & (Z[:, j] == 1), sel & (Z[:, j] == 0)
            if on.any() and off.any():
                D[i, j] = y[on].mean() - y[off].mean()
    w = p * (1 - p)
    Dbar = D.mean(1)
    var = law.mean((p - law.mean(p)) ** 2)
    first = (d - 1) / d * law.mean(w[:, None] * (D - Dbar[:, None])) / law.mean(w)
    common = (law.mean((p - law.mean(p)) * cond_mean) + law.mean(w * Dbar)) / (d * var)
    assert relative(first + common, beta_mp(table, d, nu), scale) < rounding(d, nu)
    # beta_from_effects is the profile form E[w (delta - mean delta)] / E[w] + Cov(p, Phi) /
    # (d Var p), w = p (1 - p), under lime's law written out here, for any effects and outputs
    tilt = np.array([float(q) for _, q in lime_law_by_size_mp(d, nu)])
    tilt = tilt / tilt.sum()
    ps = (d - np.arange(1, d + 1)) / d
    mean_p = tilt @ ps
    profile = (tilt @ ((ps * (1 - ps))[:, None] * (D - D.mean(axis=1, keepdims=True)))
               / (tilt @ (ps * (1 - ps))) + tilt @ ((ps - mean_p) * cond_mean)
               / (d * (tilt @ (ps - mean_p) ** 2)))
    assert relative(lt.beta_from_effects(law, D, cond_mean), profile, scale) < rounding(d, nu)
    # the second display is exact for every f linear in z: delta_j = c_j, Phi = c_0 + p sum c
    c0, c = linear[0], np.array(linear[1:d + 1])
    approx = lt.beta_from_effects(law, np.tile(c, (p.size, 1)), c0 + p * c.sum())
    assert relative(approx, c, max(abs(c0), 1.0)) < rounding(d, nu)
    del mo


# ---------------------------------------------------------------- chapter 6
def lime_features(ids, bow: bool) -> list:
    """lime's features, written out: each distinct word with all its positions, in order of first
    occurrence (``bow=True``), or one per position (``bow=False``)."""
    if not bow:
        return [np.array([t]) for t in range(1, ids.size)]
    first = list(dict.fromkeys(ids[1:].tolist()))
    return [np.flatnonzero(ids == w) for w in first]


def exact(model, ids, bow, nu, feats=None, head=None):
    """(LIME's limit by the 2^d sum, the largest |f| over the perturbed documents): the model run
    on every perturbed document (``perturbed_outputs``: its forward pass, which no closed form
    uses) and the weighted normal equations in 40 digits (:func:`beta_mp`), with lime's law and
    kernel written out in this file: no code shared with the closed forms."""
    feats = feats if feats is not None else lime_features(ids, bow)
    Z = np.array(list(itertools.product((0.0, 1.0), repeat=len(feats))))
    y = lx.perturbed_outputs(model, ids, feats, Z, bow, head=head)
    table = {tuple(int(x) for x in z): float(v) for z, v in zip(Z, y)}
    return beta_mp(table, len(feats), nu), float(np.abs(y).max())


def _closed_or_refused(call, d=None, nu=None):
    """The closed form's value, or None after checking that a refusal is one it documents (and,
    for a kernel refusal, that the kernel is indeed beyond the limit)."""
    try:
        return call()
    except ValueError as exc:
        assert refused(exc), exc
        if d is not None and ("singular" in str(exc) or "narrow" in str(exc)):
            assert not nu > hypo_narrowest(d) * 1.0001, f"refused nu={nu} for d={d}: {exc}"
        event("refused: " + next(r for r in REFUSALS if r in str(exc)))
        return None


@pytest.mark.falsifies("thm-lime-chain")
@examples(120)
@given(spec=models(paddings=("mask",)), bow=st.booleans(), data=st.data())
def test_chain_is_lime_limit(spec, bow, data):
    """Replacement on any document (repeated words: one feature per position), deletion on
    documents of distinct words: the chain against the sum over all 2^d perturbations."""
    ids = data.draw(documents(min_size=2, max_size=8, distinct=bow, unk=not bow))
    d = ids.size - 1
    nu = data.draw(kernel_widths(d))
    model = spec.build()
    tight = _closed_or_refused(lambda: la.lime_limit(model, ids, bow=bow, kernel_width=nu,
                                                    law="lime", ksub=2), d, nu)
    if tight is None:
        return
    default = la.lime_limit(model, ids, bow=bow, kernel_width=nu, law="lime")
    ref, scale = exact(model, ids, bow, nu)
    # the errors measured on a fixed population: lime_attention.CHAIN_ERRORS (1.9e-10, 9.2e-5)
    assert relative(tight, ref, scale) < 1e-9 + rounding(d, nu)     # ksub=2
    assert relative(default, ref, scale) < 1e-3                    # ksub=1
    event(f"d = {d}")


@pytest.mark.falsifies("thm-lime-attention-limit")
@examples(80)
@given(spec=models(), ids=documents(min_size=2, max_size=7), uniform=st.booleans(),
       data=st.data())
def test_independent_removal_limit(spec, ids, uniform, data):
    """Replacement by UNK: the profile form with lime's law of p is exact for independent removal
    (against the 2^d sum under Bernoulli(p) at every p of lime's law), and exact for lime's law
    when the model is linear in z (uniform attention, W_q = 0)."""
    model = spec.build(query_gain=0.0 if uniform else 1.0)
    d = ids.size - 1
    nu = data.draw(kernel_widths(d))
    got = _closed_or_refused(lambda: la.lime_limit(model, ids, bow=False, kernel_width=nu,
                                                  law="discrete", n_nodes=d + 1,
                                                  lambda_step=0.25), d, nu)
    if got is None:
        return
    # the theorem's right-hand side, written out here: lime's law of the kept fraction p = (d-s)/d,
    # s uniform in 1..d, tilted by the kernel of lime's distance 100 (1 - sqrt(p)); the effects
    # and the mean output by the 2^d sum under Bernoulli(p)
    ps = (d - np.arange(1, d + 1)) / d
    tilt = np.array([float(w) for _, w in lime_law_by_size_mp(d, nu)])
    tilt = tilt / tilt.sum()
    feats = [np.array([t]) for t in range(1, d + 1)]
    Z = np.array(list(itertools.product((0.0, 1.0), repeat=d)))
    y = lx.perturbed_outputs(model, ids, feats, Z, False)
    delta, phi = np.zeros((ps.size, d)), np.zeros(ps.size)
    for i, p in enumerate(ps):
        prob = np.prod(np.where(Z == 1, p, 1 - p), axis=1)
        phi[i] = prob @ y
        for j in range(d):
            on, off = prob * Z[:, j], prob * (1 - Z[:, j])
            delta[i, j] = ((on @ y) / on.sum() if on.sum() > 0 else 0.0) - \
                ((off @ y) / off.sum() if off.sum() > 0 else 0.0)
    w = ps * (1 - ps)
    mean_p = tilt @ ps
    main = tilt @ (w[:, None] * (delta - delta.mean(axis=1, keepdims=True))) / (tilt @ w)
    independent = main + (tilt @ ((ps - mean_p) * phi)) / (d * (tilt @ (ps - mean_p) ** 2))
    scale = float(np.abs(y).max())
    assert relative(got, independent, scale) < 1e-9 + rounding(d, nu)
    if uniform:
        event("uniform attention: f linear in z")
        assert relative(got, exact(model, ids, False, nu)[0], scale) < 1e-9 + rounding(d, nu)


@pytest.mark.falsifies("prop-lime-heads")
@examples(50)
@given(spec=models(paddings=("mask",), heads=(2, 3)), nu=st.sampled_from([25.0, 8.0, 100.0]),
       bow=st.booleans(), seed=st.integers(0, 2**31), data=st.data())
def test_lime_is_linear_in_the_explained_function(spec, nu, bow, seed, data):
    from conftest import WORDS

    pre = spec.pretrained()
    model = pre.model
    text = " ".join(data.draw(st.lists(st.sampled_from(list(WORDS)), min_size=2, max_size=7)))

    def head(i):
        return lambda texts: pre.predict_logits(texts, head=i)

    kw = dict(num_samples=60, kernel_width=nu, bow=bow, path="generic")
    whole = fastlime.explain_instance(pre, text, random_state=seed, **kw)
    heads = [fastlime.explain_instance(head(i), text, random_state=seed, **kw) for i in range(model.n_heads)]
    assert all(h.words == whole.words for h in heads)
    mean = np.mean([h.coef for h in heads], axis=0)
    # rounding relative to the outputs explained (coefficients can all be rounding noise)
    assert relative(mean, whole.coef, float(np.abs(whole.prediction).max())) < 1e-9
    # and the limits: each head's closed form against its own 2^d sum, their mean against f's
    if not bow or len(set(text.split())) == len(text.split()):
        ids, feats = la.text_inputs(pre, text, bow=bow)
        per_head = _closed_or_refused(lambda: la.lime_limit_heads(
            model, ids, bow=bow, kernel_width=nu, features=feats, law="lime", ksub=2))
        if per_head is None:
            return
        for i in range(model.n_heads):
            assert relative(per_head[i], exact(model, ids, bow, nu, feats, head=i)[0], 1.0) < 1e-8
        whole_limit = la.lime_limit(model, ids, bow=bow, kernel_width=nu, features=feats,
                                    law="lime", ksub=2)
        ref = exact(model, ids, bow, nu, feats)[0]
        assert relative(per_head.mean(0), ref, 1.0) < 1e-8
        assert relative(whole_limit, ref, 1.0) < 1e-8            # lime_limit: the heads' mean


def test_the_papers_formula_is_off_by_three_halves_for_uniform_attention():
    """The paper's Section 5 formula (chapter 6's conjecture) under all of its assumptions but a
    long document: uniform attention (W_q = 0) and replacement make f linear in z, LIME's limit is
    then the exact coefficient, and the formula is 3/2 of it at every length."""
    for seed, d in ((0, 4), (1, 9)):
        from hypo import ModelSpec

        model = ModelSpec(seed, 2, 4, 2, 3, 1.0, 1.0, "mask", 2, False).build(query_gain=0.0)
        ids = np.array([1, *range(3, 3 + d)])
        limit = exact(model, ids, False, math.inf)[0]
        paper = la.lime_paper(model, ids, bow=False)
        np.testing.assert_allclose(paper, 1.5 * limit, rtol=1e-9, atol=1e-12)
