"""LIME (Ribeiro et al., 2016) and its large-sample limit: lime 0.2.0.1's coefficients, exactly
and fast (:func:`attnxai.fastlime.explain_instance`), and their limit as ``num_samples`` grows, in
closed form (:func:`attnxai.theory.lime_limit`, chapter 6). Both take their settings whole:
:class:`~attnxai.limit_settings.LimeSettings` and :class:`~attnxai.limit_settings.LimitSettings`
(the limit shares LIME's ``kernel_width`` and ``bow``: given once)."""

from __future__ import annotations

import numpy as np

from ..limit_settings import LimeSettings, LimitSettings
from .base import Compared, Document, Method, bow_level

__all__ = ["LimeSettings", "LimitSettings", "METHODS"]


def _lime(doc: Document, s: LimeSettings) -> np.ndarray:
    from .. import fastlime                  # (loads numba: only when LIME is asked)

    res = fastlime.explain_instance(doc.pre, doc.text, s, target=doc.target)
    doc.results["LIME"] = res
    if not s.bow:                                     # one coefficient per position
        return np.asarray(res.coef, dtype=np.float64)
    return doc.words.align(res.words, res.coef)


def _lime_limit(doc: Document, s: LimitSettings) -> np.ndarray:
    from .. import fastlime, theory          # (imports SymPy: only when the limit is asked)

    beta = theory.lime_limit(doc.pre, doc.text, s, target=doc.target)
    if not s.bow:
        return np.asarray(beta, dtype=np.float64)
    return doc.words.align(fastlime.lime_features(doc.tokens, True)[0], beta)


def _thousand_times(i: int) -> int:
    return 1000 * i


METHODS = (
    Method("LIME", "word", "LIME", LimeSettings, _lime,
           "lime's coefficients (fastlime: lime 0.2.0.1's algorithm, exactly)", bow_level,
           study_seed=_thousand_times,
           recorded=("lime", "fastlime.explain, bow=True, random_state = 1000 * test_index, "
                             "logit = the explained class"),
           compared=Compared("LIME", 2)),
    Method("LIME limit", "word", "LIME limit", LimitSettings, _lime_limit,
           "LIME's large-sample limit, in closed form", bow_level,
           recorded=("limit", "theory.lime_limit(pre, text, bow=True), default settings"),
           follows=("LIME", ("kernel_width", "bow")), compared=Compared("LIME limit", 3)),
)

