"""LIME's limit takes one settings object (attnxai.limit_settings.LimitSettings), shared by the
closed forms and the registry; keywords are its fields, checked once when it is built."""

from __future__ import annotations

import math

import numpy as np
import pytest

from attnxai.limit_settings import LimitSettings
from conftest import make_tiny, tiny_text


def test_the_registry_and_the_closed_forms_share_one_class_and_its_defaults():
    from attnxai import registry
    from attnxai.theory.lime_text import DEFAULT_KERNEL_WIDTH

    assert registry.LimitSettings is LimitSettings
    assert registry.METHODS["LIME limit"].settings is LimitSettings
    assert LimitSettings().kernel_width == DEFAULT_KERNEL_WIDTH
    assert registry.LimeSettings().kernel_width == LimitSettings().kernel_width


def test_an_object_and_keywords_give_the_same_limit():
    from attnxai import theory

    pre, text = make_tiny(), tiny_text(12, seed=3)
    s = LimitSettings(bow=False, n_nodes=31, lambda_step=0.5)
    by_object = theory.lime_limit(pre, text, s)
    by_keywords = theory.lime_limit(pre, text, bow=False, n_nodes=31, lambda_step=0.5)
    assert np.array_equal(by_object, by_keywords)
    # a keyword replaces the object's field
    assert np.array_equal(theory.lime_limit(pre, text, s, n_nodes=25),
                          theory.lime_limit(pre, text, bow=False, lambda_step=0.5))
    assert not np.array_equal(theory.lime_limit(pre, text, s, kernel_width=math.inf), by_object)


@pytest.mark.parametrize("given, error, match", [
    ({"n_nodes": 2}, ValueError, "n_nodes must be an int >= 3"),
    ({"n_nodes": 3.0}, TypeError, "n_nodes must be an int"),
    ({"lambda_step": 0}, ValueError, "lambda_step must be a positive number"),
    ({"ksub": 0}, ValueError, "ksub must be an int >= 1"),
    ({"kernel_width": -1.0}, ValueError, "kernel_width must be > 0"),
    ({"method": None}, TypeError, "method must be a str"),
    ({"law": 3}, TypeError, "law must be a str or None"),
    ({"nodes": 25}, TypeError, r"unknown setting\(s\) \['nodes'\]"),
])
def test_bad_settings_are_refused_when_built(given, error, match):
    from attnxai import theory

    with pytest.raises(error, match=match):
        LimitSettings.of(**given)
    with pytest.raises(error, match=match):               # the closed form: the same message
        theory.lime_limit(make_tiny(), tiny_text(6), **given)


def test_names_are_checked_by_the_closed_form():
    from attnxai import theory

    with pytest.raises(ValueError, match="law must be one of"):
        theory.lime_limit(make_tiny(), tiny_text(6), law="uniform")
    with pytest.raises(TypeError, match="settings must be a LimitSettings"):
        theory.lime_limit(make_tiny(), tiny_text(6), {"bow": True})


# ---------------------------------------------------------------- LIME's own settings
def test_one_lime_settings_type_from_the_registry_to_fastlime_and_the_limit():
    from attnxai import fastlime, registry
    from attnxai.limit_settings import LimeSettings
    from attnxai.methods import lime
    from attnxai.theory.lime_text import DEFAULT_KERNEL_WIDTH

    assert registry.LimeSettings is LimeSettings is lime.LimeSettings is fastlime.LimeSettings
    assert registry.METHODS["LIME"].settings is LimeSettings
    # each default written once: the limit's and the closed forms' are LIME's
    assert LimitSettings().kernel_width == LimeSettings().kernel_width == DEFAULT_KERNEL_WIDTH
    assert LimitSettings().bow is LimeSettings().bow is True
    s = LimeSettings(kernel_width=5, bow=False)
    assert s.kernel_width == 5.0 and isinstance(s.kernel_width, float)
    assert s.limit() == LimitSettings(kernel_width=5.0, bow=False)
    assert s.limit(law="lime").law == "lime"


@pytest.mark.parametrize("given, error, match", [
    ({"num_samples": 1}, ValueError, "num_samples"),
    ({"num_samples": 2.5}, TypeError, "num_samples"),
    ({"kernel_width": 0}, ValueError, "kernel_width must be > 0"),
    ({"kernel_width": math.inf}, ValueError, "finite"),
    ({"kernel_width": "25"}, TypeError, "kernel_width"),
    ({"bow": "true"}, TypeError, "bow"),
    ({"mask_string": None}, TypeError, "mask_string must be a str"),
    ({"backend": "gpu"}, ValueError, "backend"),
    ({"width": 3}, TypeError, r"unknown setting\(s\) \['width'\] of LIME"),
])
def test_bad_lime_settings_are_refused_when_built(given, error, match):
    from attnxai import fastlime
    from attnxai.limit_settings import LimeSettings

    with pytest.raises(error, match=match):
        LimeSettings.of(**given)
    with pytest.raises(error, match=match):               # fastlime's keywords: the same check
        fastlime.explain_instance(make_tiny(), tiny_text(6), **given)


def test_fastlime_takes_the_object_or_its_fields():
    from attnxai import fastlime
    from attnxai.limit_settings import LimeSettings

    pre, text = make_tiny(), tiny_text(8, seed=1)
    s = LimeSettings(num_samples=300, kernel_width=5.0, bow=False, seed=7)
    a = fastlime.explain_instance(pre, text, s)
    b = fastlime.explain_instance(pre, text, num_samples=300, kernel_width=5.0, bow=False,
                                  random_state=7)
    assert np.array_equal(a.coef, b.coef)
    c = fastlime.explain_instance(pre, text, s, kernel_width=25.0)       # a field replaced
    assert not np.array_equal(a.coef, c.coef)
    reps = fastlime.explain_repeats(pre, text, [7, 8], s)
    assert np.array_equal(reps[0].coef, a.coef) and not np.array_equal(reps[1].coef, a.coef)


def test_the_studies_take_lime_whole_or_by_fields_and_refuse_other_keywords():
    from attnxai.experiment import faithfulness as XF
    from attnxai.experiment import lime_corpus as XL
    from attnxai.experiment import shapley_corpus as XS
    from attnxai.limit_settings import LimeSettings

    s = LimeSettings(num_samples=300)
    assert XL.study_lime(s, {}, "X") is s                        # whole: not rebuilt
    assert XL.study_lime(s, {"kernel_width": 5}, "X") == LimeSettings(num_samples=300,
                                                                     kernel_width=5.0)
    for study in (XL.LimeCorpus, XS.ShapleyCorpus):
        with pytest.raises(TypeError, match=r"got unexpected keyword argument\(s\) \['reviws'\]"):
            study(reviws=3)                                      # before any model is loaded
        with pytest.raises(ValueError, match="kernel_width must be > 0"):
            study(kernel_width=0.0)
    # the faithfulness study takes LIME's settings whole only (lime=LimeSettings(...))
    for bad in ({"reviws": 3}, {"kernel_width": 25.0}):
        with pytest.raises(TypeError, match=f"unexpected keyword argument '{next(iter(bad))}'"):
            XF.FaithfulnessStudy(**bad)
    with pytest.raises(TypeError, match="settings must be a LimeSettings"):
        XF.FaithfulnessStudy(lime={"kernel_width": 5.0})
