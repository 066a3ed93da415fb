import numpy as np
import sympy as sp
import torch

from attnxai.model import symbolic


def test_symbolic_matches_torch_float64():
    sm = symbolic.symbolic_model(T=4, d_embed=3, d_attn=2, d_value=2, n_heads=2, n_classes=2)
    model = symbolic.tiny_torch_model(sm, vocab_size=20, seed=5)
    gen = torch.Generator().manual_seed(0)
    worst = 0.0
    for _ in range(20):
        ids = torch.randint(3, 20, (1, 4), generator=gen)
        ids[0, 0] = 1
        out = model(ids, return_internals=True)
        f_sym = sm.evaluate(sm.f, model, out.e[0]).ravel()
        worst = max(worst, np.abs(f_sym - out.logits[0].detach().numpy()).max())
    assert worst < 1e-12


def test_lemma_head_output_is_weighted_average_of_token_scores():
    sm = symbolic.symbolic_model(T=3, d_embed=2, d_attn=1, d_value=2, n_heads=1)
    gap = sm.head_out[0][0] - sum(sm.alpha[0][t] * sm.token_scores[0][t][0] for t in range(3))
    assert sp.expand(gap) == 0
    assert sp.simplify(sum(sm.alpha[0]) - 1) == 0


def test_bad_dimensions():
    import pytest

    with pytest.raises(ValueError, match=">= 1"):
        symbolic.symbolic_model(T=0)
    sm = symbolic.symbolic_model(T=2, d_embed=2, d_attn=1, d_value=1, n_heads=1)
    with pytest.raises(ValueError, match="shape"):
        sm.values_from_torch(symbolic.tiny_torch_model(sm), torch.zeros(3, 2))
