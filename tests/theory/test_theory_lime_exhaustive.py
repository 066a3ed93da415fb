"""lime_exhaustive: LIME's limit by enumeration, random models and documents, the regime map."""

from __future__ import annotations

import numpy as np
import pytest

from attnxai.theory import lime_attention as la
from attnxai.theory import lime_exhaustive as lx
from attnxai.theory import lime_text as lt


def test_random_document_has_the_requested_words():
    ids = lx.random_document(3, 5, 9)
    assert ids[0] == 1 and ids.size == 10 and len(set(ids[1:].tolist())) == 5
    with pytest.raises(ValueError):
        lx.random_document(0, 6, 5)


def test_exact_limit_matches_beta_exact_and_the_chain():
    model = lx.random_model(1, word_scale=1.0)
    ids = lx.random_document(1, 7, 7)
    feats = la.document_features(ids[1:].tolist(), True)
    ex = lx.exact_limit(model, ids, feats, bow=True)
    f = lambda Z: lx.perturbed_outputs(model, ids, feats, Z, True)   # noqa: E731
    np.testing.assert_allclose(ex, lt.beta_exact(f, 7, 25.0)[1], atol=1e-13)
    np.testing.assert_allclose(la.lime_limit(model, ids, bow=True, ksub=4), ex, atol=1e-10)
    # replacement: every position is a feature, the chain is exact with repeats too
    ids = lx.random_document(2, 4, 8)
    ex = lx.exact_limit(model, ids, bow=False)
    np.testing.assert_allclose(la.lime_limit(model, ids, bow=False, law="lime", ksub=4), ex,
                               atol=1e-10)


def test_regime_map_rows():
    df = lx.regime_map(n_words=(5,), repeat_shares=(0.0, 0.4), word_scales=(1.0,), seeds=(0,))
    assert set(df.approximation) == set(lx.APPROXIMATION_KWARGS)
    assert len(df) == 2 * len(lx.APPROXIMATION_KWARGS)
    chain = df[(df.approximation == "chain (lime's law)") & (df.repeated_share == 0)]
    assert chain.relative_error.max() < 1e-8            # distinct words: exact
    assert (df.relative_error[df.repeated_share > 0] > 0).all()
    assert (df.position_weight > 0).all()
