import math

import pytest
import torch

from attnxai.model.config import AttentionConfig
from attnxai.model.single_layer import AttentionClassifier, sinusoidal_positions


def naive_forward(model: AttentionClassifier, ids: torch.Tensor) -> torch.Tensor:
    """Section 2, one document and one token at a time, with explicit loops (reference)."""
    out = []
    for doc in ids:
        doc = [int(x) for x in doc if int(x) != model.pad_id]
        P = model.positions(len(doc))
        e = [model.W_e[x] + P[t] for t, x in enumerate(doc)]
        f = 0
        for i in range(model.n_heads):
            q1 = model.W_q[i] @ e[0]
            s = torch.stack([q1 @ (model.W_k[i] @ et) / math.sqrt(model.d_attn) for et in e])
            a = torch.exp(s - s.max()) / torch.exp(s - s.max()).sum()
            vt = sum(a[t] * (model.W_v[i] @ e[t]) for t in range(len(e)))
            f = f + model.W_l[i] @ vt
        out.append(f / model.n_heads)
    return torch.stack(out)


@pytest.fixture
def small():
    torch.manual_seed(0)
    m = AttentionClassifier(AttentionConfig(50, d_embed=8, d_attn=4, d_value=6, n_heads=3,
                                            max_len=12)).double()
    with torch.no_grad():
        m.W_q.mul_(5)
        m.W_k.mul_(5)
    return m.eval()


def test_shapes_and_internals(small):
    ids = small.collate([[1, 4, 5, 6], [1, 7, 8]])
    out = small(ids, return_internals=True)
    B, T, K = 2, 4, 3
    assert small(ids).shape == (B, 2)
    assert out.e.shape == (B, T, 8) and out.q1.shape == (B, K, 4)
    assert out.k.shape == (B, K, T, 4) and out.v.shape == (B, K, T, 6)
    assert out.alpha.shape == (B, K, T) and out.v_tilde.shape == (B, K, 6)
    assert out.head_logits.shape == (B, K, 2) and out.token_scores.shape == (B, K, T, 2)
    assert torch.allclose(out.alpha.sum(-1), torch.ones(B, K, dtype=torch.float64))
    assert (out.alpha[1, :, 3] == 0).all()  # padding gets no attention
    assert torch.allclose(out.logits, small(ids), atol=1e-14)
    # lemma: each head's output is the alpha-weighted average of per-token scores
    assert torch.allclose((out.alpha[..., None] * out.token_scores).sum(2), out.head_scores, atol=1e-14)
    assert torch.equal(out.head_scores, out.head_logits)      # no skip term: the same
    assert set(out.as_dict()) >= {"e", "q1", "k", "v", "alpha", "v_tilde", "logits"}


def test_matches_naive_reference_float64(small):
    gen = torch.Generator().manual_seed(3)
    seqs = [[1] + torch.randint(3, 50, (n,), generator=gen).tolist() for n in (11, 3, 7, 1)]
    ids = small.collate(seqs)
    with torch.no_grad():
        err = (small(ids) - naive_forward(small, ids)).abs().max().item()
    assert err < 1e-12


def test_padding_invariance_mask_and_unk(small):
    for mode in ("mask", "unk"):
        torch.manual_seed(1)
        m = AttentionClassifier(AttentionConfig(30, d_embed=6, d_attn=3, d_value=3, n_heads=2,
                                                max_len=10, padding=mode)).double()
        alone = m(m.collate([[1, 5, 6]]))
        batch = m(m.collate([[1, 5, 6], list(range(1, 11))]))[:1]
        padded = m(torch.tensor([[1, 5, 6, 0, 0, 0, 0]]))
        assert torch.allclose(alone, batch, atol=1e-14) and torch.allclose(alone, padded, atol=1e-14)


def test_unk_padding_attends_to_unk(small):
    torch.manual_seed(1)
    m = AttentionClassifier(AttentionConfig(30, d_embed=6, d_attn=3, d_value=3, n_heads=2,
                                            max_len=10, padding="unk"))
    out = m(torch.tensor([[1, 5]]), return_internals=True)
    assert out.alpha.shape[-1] == 10 and (out.ids[0, 2:] == m.unk_id).all()
    assert (out.alpha[0, :, 2:] > 0).all()


def test_float32_and_float64_agree(small):
    ids = small.collate([[1, 2, 3, 4, 5]])
    f64 = small(ids)
    f32 = small.float()(ids)
    assert f32.dtype == torch.float32 and torch.allclose(f64.float(), f32, atol=1e-5)


def test_positions():
    p = sinusoidal_positions(5, 4)
    assert p.dtype == torch.float32
    assert torch.allclose(p[0], torch.tensor([0.0, 1.0, 0.0, 1.0]))
    assert abs(p[3, 2].item() - math.sin(3 / 10000 ** 0.5)) < 1e-6


def test_bad_inputs(small):
    with pytest.raises(TypeError, match="integer tensor"):
        small(torch.zeros(1, 3))
    with pytest.raises(TypeError, match="torch.Tensor"):
        small([[1, 2]])
    with pytest.raises(ValueError, match="empty input"):
        small(torch.zeros(0, 3, dtype=torch.long))
    with pytest.raises(ValueError, match="shape"):
        small(torch.ones(3, dtype=torch.long))
    with pytest.raises(ValueError, match="longer than the model accepts"):
        small(torch.ones(1, 13, dtype=torch.long))
    with pytest.raises(ValueError, match=r"token ids must lie in \[0, 50\)"):
        small(torch.tensor([[1, 50]]))
    with pytest.raises(ValueError, match="empty batch"):
        small.collate([])
    with pytest.raises(ValueError, match="padding must be"):
        AttentionConfig(10, padding="zeros")
    e = small.embed(torch.tensor([[1, 2]])).float()
    with pytest.raises(TypeError, match="embeddings are torch.float32"):
        small.forward_embeddings(e)


def test_cls_attention_is_the_forward_attention(small):
    ids = small.collate([[1, 4, 5, 6], [1, 7, 8]])
    out = small(ids, return_internals=True)
    alpha = small.cls_attention(small.embed(ids), small.pad_mask(ids))
    assert alpha.shape == (2, 1, 3, 4)                 # (B, L, K, T): one layer
    assert torch.allclose(alpha[:, 0], out.alpha, atol=1e-14)


def test_per_head_logits_average_to_the_logits(small):
    ids = small.collate([[1, 4, 5, 6], [1, 7, 8]])
    heads = small(ids, per_head=True)
    assert heads.shape == (2, 3, 2)
    assert torch.allclose(heads.mean(1), small(ids), atol=1e-14)
    assert torch.allclose(heads, small(ids, return_internals=True).head_logits, atol=1e-14)


def test_positions_in_the_model_dtype(small):
    """A float64 model gets the exact sinusoids, not a float32 table cast up."""
    exact = torch.tensor([[math.sin(t / 10000 ** (2 * (j // 2) / 8)) if j % 2 == 0
                           else math.cos(t / 10000 ** (2 * (j // 2) / 8)) for j in range(8)]
                          for t in range(12)], dtype=torch.float64)
    assert small.positions(12).dtype == torch.float64
    assert (small.positions(12) - exact).abs().max().item() < 1e-15
    f32 = AttentionClassifier(AttentionConfig(50, d_embed=8, d_attn=4, d_value=6, n_heads=3,
                                              max_len=12))
    assert torch.equal(f32.positions(12), exact.float())
    assert small.positions(20).shape == (20, 8)       # beyond max_len on request


@pytest.mark.parametrize("ids, match", [
    ([[4, 5, 6]], r"do not start with \[CLS\]"),
    ([[1, 5, 1, 6]], r"\[CLS\] \(id 1\) appears after position 0"),
    ([[1, 5, 0, 6]], "padding .* before a real token"),
])
def test_ids_must_be_a_document(small, ids, match):
    with pytest.raises(ValueError, match=match):
        small(torch.tensor(ids))
