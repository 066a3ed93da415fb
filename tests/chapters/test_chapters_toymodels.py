"""attnxai.chapters.toymodels: chapter 5's classifiers of word presence, against the presence
vectors written out by hand, and through lime itself."""

import numpy as np
import pytest

from attnxai.chapters.toymodels import presence_classifier


def test_presence_vectors_and_logits():
    words = ["good", "bad", "film"]
    f = presence_classifier(words, lambda z: z @ np.array([1.0, -2.0, 0.5]) + 0.1)
    out = f(["good film", "bad bad", "", "goodness filmic"])
    z = np.array([[1, 0, 1], [0, 1, 0], [0, 0, 0], [0, 0, 0]], float)   # whole words only
    expected = z @ np.array([1.0, -2.0, 0.5]) + 0.1
    assert out.shape == (4, 2)
    assert np.allclose(out[:, 1], expected) and np.allclose(out[:, 0], -expected)


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="distinct"):
        presence_classifier(["a", "a"], lambda z: z.sum(1))
    with pytest.raises(ValueError, match="distinct"):
        presence_classifier([], lambda z: z.sum(1))
    f = presence_classifier(["a", "b"], lambda z: z)          # (texts, 2): not one score a text
    with pytest.raises(ValueError, match="shape"):
        f(["a b"])


def test_lime_recovers_a_linear_model():
    lime_text = pytest.importorskip("lime.lime_text")
    words = "one two three four five".split()
    c = np.array([0.8, -0.6, 0.3, 0.0, -0.2])
    f = presence_classifier(words, lambda z: z @ c)
    exp = lime_text.LimeTextExplainer(kernel_width=25, random_state=1).explain_instance(
        " ".join(words), f, labels=(1,), num_features=5, num_samples=2000)
    coef = np.array([dict(exp.local_exp[1])[j] for j in range(5)])
    assert np.allclose(coef, c, atol=0.02)
