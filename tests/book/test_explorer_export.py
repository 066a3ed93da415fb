"""attnxai.explorer without a browser: the exported model is the model (the same function), the
files say what they hold, and a model the page cannot compute is refused with the reason.
(The page's numbers against the package, in Chromium: tests/book/test_explorer.py.)"""

from __future__ import annotations

import hashlib
import json
import re

import numpy as np
import pytest
import torch

from attnxai import explorer
from conftest import make_tiny, tiny_text


@pytest.mark.parametrize("seed,d_embed,n_heads", [(0, 8, 3), (1, 32, 2), (2, 64, 6)])
def test_the_exported_model_is_the_same_function(seed, d_embed, n_heads):
    """Projecting the word vectors on the directions the outputs read changes no logit and no
    explanation (float64 models: to rounding), and leaves [CLS]'s vector (the query) untouched."""
    pre = make_tiny(seed=seed, d_embed=d_embed, n_heads=n_heads)
    out = explorer.projected_model(pre)
    assert torch.equal(out.model.W_e[pre.model.cls_id], pre.model.W_e[pre.model.cls_id])
    if 3 * n_heads < d_embed:                   # fewer directions than dimensions: a projection
        assert not torch.allclose(out.model.W_e, pre.model.W_e)
    texts = [tiny_text(n, seed=seed + n) for n in (3, 9, 30)]
    a, b = pre.predict_logits(texts), out.predict_logits(texts)
    assert np.abs(a - b).max() <= 1e-12 * max(1.0, np.abs(a).max())
    for text in texts:
        ea, eb = (explorer.explain_page(m, text) for m in (pre, out))
        for m in explorer.METHODS:
            x, y = ea.token_scores[m.method], eb.token_scores[m.method]
            assert np.abs(x - y).max() <= 1e-9 * np.abs(x).max(), m.label


def test_the_files_say_what_they_hold(tmp_path):
    pre = make_tiny(seed=4, d_embed=16)
    meta = explorer.export(pre, tmp_path)
    data = (tmp_path / "model.bin").read_bytes()
    assert json.loads((tmp_path / "model.json").read_text()) == meta
    assert meta["format"] == explorer.FORMAT and len(data) == meta["binary"]["bytes"]
    assert hashlib.sha256(data).hexdigest() == meta["binary"]["sha256"]
    V, K, C = len(meta["words"]) + 2, pre.model.n_heads, pre.model.n_classes
    shapes = {"pos_score": [pre.model.max_len, K], "pos_value": [pre.model.max_len, K, C],
              "U": [pre.model.d_embed, K], "H": [pre.model.d_embed, K, C],
              "word_score": [V, K], "word_value": [V, K, C]}
    end = 0
    for name, a in meta["binary"]["arrays"].items():
        assert a["shape"] == shapes[name] and a["offset"] == end, name
        assert a["offset"] % (8 if a["dtype"] == "f8" else 4) == 0, name
        end += int(np.prod(a["shape"])) * (8 if a["dtype"] == "f8" else 4)
    assert end == len(data)
    assert all(re.fullmatch(r"[0-9a-z]+", w) for w in meta["words"]) and "unk" not in meta["words"]
    # a word's row holds its projections: W_e'[x] . U
    proj_W = explorer.projected_model(pre).model.W_e.detach().double().numpy()
    a = meta["binary"]["arrays"]["word_score"]
    table = np.frombuffer(data, "<f4", int(np.prod(a["shape"])), a["offset"]).reshape(a["shape"])
    U = np.frombuffer(data, "<f8", pre.model.d_embed * K, meta["binary"]["arrays"]["U"]["offset"])
    word = meta["words"][5]
    want = proj_W[pre.vocab.stoi[word]] @ U.reshape(-1, K)
    assert np.allclose(table[2 + 5], want, rtol=1e-6, atol=1e-6)
    assert meta["model"] == {"model": "in memory", "note": "not loaded from a checkpoint folder"}


def test_a_model_the_page_cannot_compute_is_refused():
    with pytest.raises(ValueError, match="padding"):
        explorer.projected_model(make_tiny("unk"))
    skip = make_tiny()
    skip.model.skip = True
    with pytest.raises(ValueError, match="skip connection"):
        explorer.export(skip, "/nonexistent/never-written")
    with pytest.raises(TypeError, match="Pretrained"):
        explorer.projected_model(make_tiny().model)
