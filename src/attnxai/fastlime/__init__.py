"""LIME for text, exactly as ``lime`` 0.2.0.1 computes it, as fast as the mathematics allows.

:func:`explain_instance` returns what ``lime.lime_text.LimeTextExplainer(kernel_width=..., bow=...,
mask_string=..., random_state=...).explain_instance(text, classifier_fn, labels=(target,),
num_features=d, num_samples=...)`` returns for the full-feature fit (``d`` = number of features,
so every feature is kept): the intercept, one coefficient per feature in lime's feature order,
the weighted R^2 ``score`` and ``local_pred``. lime's algorithm, from its source:

1. **Features** (:func:`lime_features`). lime splits the text on ``\\W+`` (case-sensitive).
   ``bow=True``: the features are the distinct words, in order of first occurrence; dropping a
   word **deletes every occurrence** (``mask_string`` is ignored). ``bow=False``: every word
   position is a feature and a dropped position is **replaced in place** by ``mask_string``.
2. **Sampling** (:mod:`~attnxai.fastlime.sampling`) with one ``numpy.random.RandomState``: sample
   0 is the document; then ``sizes = rs.randint(1, d + 1, num_samples - 1)`` and, for each sample
   in turn, ``rs.choice(range(d), size, replace=False)`` picks the features to drop.
3. **Weights.** ``D = 100 * cosine_distance(z, 1)`` and ``w = sqrt(exp(-D^2 / width^2))``.
4. **Fit** (:mod:`~attnxai.fastlime.ridge`). ``Ridge(alpha=1, fit_intercept=True)`` with
   ``sample_weight=w`` on all features; ``score`` is the weighted R^2 of that fit on the samples
   and ``local_pred`` its prediction on sample 0. A weight depends on a mask only through its
   number of kept features, so the normal equations are sums over those numbers of integer
   co-occurrence counts (:mod:`~attnxai.fastlime.counts`: bit-packed rows and popcounts, exact)
   instead of a dense ``(sqrt(W) X)^T (sqrt(W) X)``.

**Exactness contract.** For the same ``random_state`` (an int, a ``RandomState``, advanced exactly
as lime advances it, or ``None`` for numpy's global one), text and model, the masks are lime's
masks in lime's order, the weights are bitwise lime's, and the coefficients agree with lime's to
rounding (tested to 1e-8, ``tests/fastlime/test_fastlime.py``; on the paper model's first 10 full
reviews, in float64, within 3.0e-14: ``benchmarks/bench_lime.py``). On the fast path the model is evaluated in float64
from the same weights, whereas lime calls ``Pretrained.predict_logits``, which runs the model in
its own dtype: for a comparison to 1e-8 load the model in float64.

**Two paths.** ``path="fast"`` needs an :class:`attnxai.Pretrained` holding the single-layer
:class:`~attnxai.model.single_layer.AttentionClassifier` and a text in :func:`attnxai.normalize_for_lime` form
(lowercase ``[0-9a-z]+`` tokens joined by single spaces, at most ``max_len - 1`` tokens): there
lime's words and the model's tokens coincide and the model is evaluated on the 0/1 masks from its
float64 projections (:mod:`~attnxai.fastlime.evaluate`, :mod:`attnxai.model.network`). Any other input
(another model class, a raw text, a plain ``classifier_fn(list[str]) -> (n, n_classes)``) takes
``path="generic"``: lime's own ``IndexedString`` builds the perturbed strings from the same masks
and the classifier scores them in one call, as lime does. :attr:`LimeResult.path`,
:attr:`LimeResult.reason` and :attr:`LimeResult.backend` say what ran.

**Compiled loops.** lime's Fisher-Yates shuffles, the deletion and replacement sums and the
co-occurrence counts run in numba (:mod:`~attnxai.fastlime.kernels`,
:mod:`~attnxai.fastlime.counts`, ``@njit(cache=True)``); without numba (or with
``ATTNXAI_NATIVE=0``) numpy code gives the same numbers, slower, with one warning.
``benchmarks/bench_lime.py`` measures the whole explanation against ``lime``, stage by stage
(sampling, the model's outputs, weights, normal equations, solve), and against its floor.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..limit_settings import LimeSettings
from ..model.textmodel import Pretrained
from .kernels import backend_status
from .problem import (PATHS, Problem, check_mask_string, check_memory, fast_path_reason,
                      is_normalized, lime_features)
from .result import LimeResult
from .ridge import weighted_ridge
from .sampling import BACKENDS, NarrowKernelWarning, kernel_weights, sample_masks

__all__ = ["BACKENDS", "LimeResult", "LimeSettings", "NarrowKernelWarning", "PATHS",
           "backend_status", "check_mask_string", "check_memory", "explain_instance",
           "explain_repeats", "fast_path_reason", "is_normalized", "kernel_weights",
           "lime_features", "sample_masks", "weighted_ridge"]

Model = Pretrained | Callable[[list[str]], np.ndarray]


def explain_instance(model: Model, text: str, settings: LimeSettings | None = None, *,
                     random_state: Any = None, target: int = 1, path: str = "auto",
                     keep_data: bool = False, chunk_size: int = 4096, **lime: Any) -> LimeResult:
    """lime's explanation of ``model`` at ``text``, exactly (see the module docstring).

    Same result as ``LimeTextExplainer(kernel_width=kernel_width, bow=bow,
    mask_string=mask_string, random_state=random_state).explain_instance(text, classifier_fn,
    labels=(target,), num_features=d, num_samples=num_samples)``, all ``d`` features kept.

    ``settings``: a :class:`~attnxai.limit_settings.LimeSettings` (``num_samples``,
    ``kernel_width``, ``bow``, ``mask_string``, ``seed``, ``backend``; default lime's defaults),
    checked when it was built; ``**lime``: any of its fields, replacing the object's
    (``explain_instance(pre, text, kernel_width=5)``). ``model``: an :class:`attnxai.Pretrained`
    (its ``predict_logits`` is lime's classifier_fn: raw logits) or any
    ``classifier_fn(list[str]) -> (n, n_classes)``. ``random_state``: an int, a
    ``numpy.random.RandomState`` (advanced exactly as lime advances it) or None (the settings'
    ``seed``; when that is None too, numpy's global state, as lime). ``target``: the class (logit)
    explained. ``mask_string`` is ignored with ``bow=True`` (as in lime); with ``bow=False`` and a
    ``Pretrained`` it must be read by the model as the UNK token. ``keep_data=True`` keeps the
    masks, labels and weights; ``chunk_size`` samples are evaluated at once; ``backend`` picks the
    compiled loops (``"auto"``, ``"numba"``, ``"numpy"``).

    Raises ``TypeError`` for arguments of the wrong type (a str ``bow``, a float ``num_samples``,
    an unknown keyword) and ``ValueError`` for an empty text or one without word characters,
    ``num_samples < 2``, a non-positive or non-finite ``kernel_width``, a ``target`` outside the
    classes, a ``mask_string`` the model would read as a real word (``bow=False``), and a text
    longer than the model accepts.
    """
    s = LimeSettings.of(settings, **lime)
    problem = _problem(model, text, s, target, path, chunk_size)
    rs = s.seed if random_state is None else random_state
    return problem.run(s, rs, keep_data)


def explain_repeats(model: Model, text: str, random_states: Sequence[Any],
                    settings: LimeSettings | None = None, *, target: int = 1, path: str = "auto",
                    keep_data: bool = False, chunk_size: int = 4096,
                    **lime: Any) -> list[LimeResult]:
    """:func:`explain_instance` once per entry of ``random_states`` (e.g. 5 seeds: lime's run-to-run
    spread), sharing the per-document preparation (``settings`` and ``**lime`` as there; the
    settings' ``seed`` is not used)."""
    s = LimeSettings.of(settings, **lime)
    if isinstance(random_states, (str, bytes)) or not isinstance(random_states, Sequence):
        raise TypeError("random_states must be a sequence (one random_state per repeat), got "
                        f"{type(random_states).__name__}")
    problem = _problem(model, text, s, target, path, chunk_size)
    return [problem.run(s, rs, keep_data) for rs in random_states]


def _problem(model: Model, text: str, s: LimeSettings, target: int, path: str,
             chunk_size: int) -> Problem:
    return Problem(model, text, bow=s.bow, mask_string=s.mask_string, target=target, path=path,
                   chunk_size=chunk_size, backend=s.backend)
