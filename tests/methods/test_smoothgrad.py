"""SmoothGrad (attnxai.explainers.smoothgrad, the registry's "SmoothGrad"): checked against a
reference written here, one noisy copy at a time, each gradient by its own autograd call."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import attnxai
from attnxai import explainers, registry

from conftest import make_tiny, random_model, tiny_text


def reference(model, ids: torch.Tensor, target: int, n: int, noise: float, seed: int):
    """The mean over n draws of d f_target / d e at e + sigma * z, one review and one draw at a
    time: z the draws of the documented generator call, sigma = noise * (max - min) of the
    review's non-padding embedding coordinates; no noise on padding."""
    e = model.embed(model.check_ids(ids)).detach()
    mask = model.ids_and_mask(ids)[1]
    z = torch.randn((n, *e.shape), generator=torch.Generator().manual_seed(seed), dtype=e.dtype)
    out = torch.zeros_like(e)
    for b in range(e.shape[0]):
        valid = mask[b]
        sigma = noise * (e[b][valid].max() - e[b][valid].min())
        for k in range(n):
            x = (e[b] + sigma * z[k, b] * valid[:, None]).clone().requires_grad_(True)
            logit = model.forward_embeddings(x[None], mask[b:b + 1])[0, target]
            logit.backward()
            out[b] += x.grad / n
    return out, e


@pytest.mark.parametrize("padding", ["mask", "unk"])
def test_smoothgrad_is_the_mean_of_the_noisy_gradients(padding):
    pre = make_tiny(padding)
    model = pre.model
    with torch.no_grad():      # a padding embedding far outside the words' range: sigma ignores it
        model.W_e[model.pad_id] = 50.0
    ids = model.collate([[1, 5, 6, 7, 8, 5], [1, 9, 10], [1, 3, 4, 11, 12, 13, 14]])
    grad, e = explainers.smoothgrad(model, ids, 0, n_samples=7, noise=0.3, seed=5)
    want, e_ref = reference(model, ids, 0, 7, 0.3, 5)
    torch.testing.assert_close(e, e_ref, rtol=0, atol=0)
    torch.testing.assert_close(grad, want, rtol=1e-10, atol=1e-12)
    plain = explainers.gradient(model, ids, 0)
    assert (grad - plain).abs().max() > 1e-3            # the noise moves it (a real average)


def test_smoothgrad_without_noise_is_the_gradient_and_the_seed_matters():
    model = make_tiny().model
    ids = model.collate([[1, 5, 6, 7], [1, 9, 10, 11, 12]])
    grad, _ = explainers.smoothgrad(model, ids, 1, n_samples=3, noise=0.0)
    torch.testing.assert_close(grad, explainers.gradient(model, ids, 1), rtol=1e-12, atol=1e-14)
    a, _ = explainers.smoothgrad(model, ids, 1, n_samples=4, seed=1)
    b, _ = explainers.smoothgrad(model, ids, 1, n_samples=4, seed=1)
    c, _ = explainers.smoothgrad(model, ids, 1, n_samples=4, seed=2)
    torch.testing.assert_close(a, b, rtol=0, atol=0)
    assert (a - c).abs().max() > 1e-6


def test_smoothgrad_on_the_multilayer_model():
    model = random_model(30, n_layers=2, d_value=4, max_len=12, init_range=0.5)
    ids = model.collate([[1, 4, 5, 6], [1, 7, 8, 9, 10, 11]])
    grad, _ = explainers.smoothgrad(model, ids, 1, n_samples=4, noise=0.2, seed=3)
    torch.testing.assert_close(grad, reference(model, ids, 1, 4, 0.2, 3)[0], rtol=1e-9,
                               atol=1e-12)


def test_the_registry_entry_explains_a_text():
    pre = make_tiny()
    text = tiny_text(12, seed=3, unknown=False)
    ex = attnxai.explain(pre, text, ["SmoothGrad", "G-l2"], seed=4,
                         settings={"SmoothGrad": {"n_samples": 6, "summary": "GxI"}})
    ids = torch.as_tensor(ex.ids)[None]
    want, e = reference(pre.model, ids, 1, 6, 0.15, 4)
    np.testing.assert_allclose(ex.token_scores["SmoothGrad"],
                               (want * e).sum(-1)[0, 1:].numpy(), rtol=1e-10, atol=1e-13)
    assert ex.settings["SmoothGrad"] == {"n_samples": 6, "noise": 0.15, "summary": "GxI",
                                         "seed": 4}
    default = attnxai.explain(pre, text, ["SmoothGrad"], seed=4)        # l2 norm, 50 draws
    want, _ = reference(pre.model, ids, 1, 50, 0.15, 4)
    np.testing.assert_allclose(default.token_scores["SmoothGrad"],
                               want.norm(dim=-1)[0, 1:].numpy(), rtol=1e-10, atol=1e-13)


@pytest.mark.parametrize("fields, exc, msg", [
    ({"n_samples": 0}, ValueError, "n_samples must be an int >= 1"),
    ({"noise": -0.1}, ValueError, "noise must be a finite number >= 0"),
    ({"noise": "0.1"}, TypeError, "noise must be a number"),
    ({"summary": "G-l3"}, ValueError, "summary must be one of"),
    ({"seed": -1}, ValueError, "seed must be an int in"),
])
def test_bad_smoothgrad_settings_are_refused(fields, exc, msg):
    with pytest.raises(exc, match=msg):
        registry.SmoothGradSettings(**fields)
