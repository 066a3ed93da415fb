"""Explainers of Figure 1: attention, gradients, per-word scores, corpus statistics."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from attnxai import AttentionClassifier, corpus, explainers, registry
from attnxai.model.interface import iter_batches
from conftest import random_model


def tiny(padding: str = "mask", seed: int = 0) -> AttentionClassifier:
    return random_model(40, seed=seed, d_embed=6, d_attn=3, d_value=4, n_heads=3, max_len=10,
                        padding=padding, init_range=1.0)


def batch(model: AttentionClassifier) -> torch.Tensor:
    return model.collate([[1, 5, 6, 7, 8, 5], [1, 9, 10], [1, 3, 4, 11, 12, 13, 14]])


# ---------------------------------------------------------------------- attention
def test_attention_shapes_and_properties():
    model = tiny()
    ids = batch(model)
    mask = explainers.valid_mask(model, ids)
    avg = explainers.attention(model, ids, "mean")
    mx = explainers.attention(model, ids, "max")
    heads = explainers.attention(model, ids, "none")
    assert avg.shape == mx.shape == ids.shape
    assert heads.shape == (3, model.n_heads, ids.shape[1])
    assert torch.isnan(avg[~mask]).all() and torch.isnan(mx[~mask]).all()
    assert (avg[mask] > 0).all()
    assert torch.allclose(torch.nansum(avg, dim=1), torch.ones(3, dtype=torch.float64))
    assert torch.allclose(heads.sum(-1), torch.ones(3, model.n_heads, dtype=torch.float64))
    assert (mx[mask] >= avg[mask]).all()


def test_attention_unk_padding_scores_every_position():
    model = tiny("unk")
    avg = explainers.attention(model, batch(model))
    assert avg.shape == (3, model.max_len)
    assert not torch.isnan(avg).any()


def test_attention_bad_reduce():
    with pytest.raises(ValueError, match="reduce must be"):
        explainers.attention(tiny(), batch(tiny()), "median")


def test_flipping_output_layer():
    model = tiny()
    ids = batch(model)
    flipped = explainers.flip_output_layer(model)
    assert torch.allclose(flipped(ids), -model(ids))
    for reduce in ("mean", "max"):
        a, b = explainers.attention(model, ids, reduce), explainers.attention(flipped, ids, reduce)
        assert torch.equal(torch.isnan(a), torch.isnan(b))
        assert torch.allclose(torch.nan_to_num(a), torch.nan_to_num(b), atol=0, rtol=0)
    assert torch.allclose(explainers.gradient(flipped, ids), -explainers.gradient(model, ids))
    assert model.W_l.sum() != flipped.W_l.sum()           # the original is left alone


# ---------------------------------------------------------------------- gradients
def test_gradient_matches_finite_differences():
    model = tiny()
    ids = torch.tensor([[1, 5, 6, 7]])
    grad, e = explainers.gradient(model, ids, 1, return_embeddings=True)
    h = 1e-6
    for t in range(4):
        for j in range(model.d_embed):
            ep, em = e.clone(), e.clone()
            ep[0, t, j] += h
            em[0, t, j] -= h
            with torch.no_grad():
                fd = (model.forward_embeddings(ep)[0, 1] - model.forward_embeddings(em)[0, 1]) / (2 * h)
            assert math.isclose(float(fd), float(grad[0, t, j]), abs_tol=1e-8)


def test_gradient_of_a_review_does_not_depend_on_its_batch():
    model = tiny()
    ids = batch(model)
    alone = explainers.gradient(model, ids[1:2, :3])
    assert torch.allclose(explainers.gradient(model, ids)[1, :3], alone[0], atol=1e-15)


def test_summaries_definitions_and_padding():
    model = tiny()
    ids = batch(model)
    grad, e = explainers.gradient(model, ids, 1, return_embeddings=True)
    s = explainers.gradient_summaries(model, ids, 1)
    mask = explainers.valid_mask(model, ids)
    assert set(s) == set(explainers.GRADIENT_METHODS)
    torch.testing.assert_close(s["G-avg"][mask], grad.mean(-1)[mask])
    torch.testing.assert_close(s["G-l1"][mask], grad.abs().sum(-1)[mask])
    torch.testing.assert_close(s["G-l2"][mask], grad.pow(2).sum(-1).sqrt()[mask])
    torch.testing.assert_close(s["GxI"][mask], torch.einsum("btd,btd->bt", grad, e)[mask])
    for v in s.values():
        assert torch.isnan(v[~mask]).all()


def test_summarize_gradient_shape_check():
    with pytest.raises(ValueError, match="must both be"):
        explainers.summarize_gradient(torch.zeros(1, 2, 3), torch.zeros(1, 2, 4))


def test_explain_all_methods():
    model = tiny()
    ids = batch(model)
    out = registry.position_scores(model, ids)
    assert list(out) == list(registry.POSITION_METHODS)
    assert all(v.shape == ids.shape for v in out.values())
    assert list(registry.position_scores(model, ids, methods=["GxI", "alpha-max"])) == ["GxI", "alpha-max"]
    with pytest.raises(ValueError, match="LIME is per word"):
        registry.position_scores(model, ids, methods=["LIME"])
    with pytest.raises(ValueError, match="unknown method"):
        registry.position_scores(model, ids, methods=["saliency"])


def test_bad_inputs():
    model = tiny()
    with pytest.raises(ValueError, match="empty input"):
        explainers.attention(model, torch.zeros((0, 3), dtype=torch.long))
    with pytest.raises(ValueError, match="empty input"):
        explainers.gradient(model, torch.zeros((2, 0), dtype=torch.long))
    with pytest.raises(ValueError, match=r"token ids must lie in \[0, 40\)"):
        explainers.gradient_summaries(model, torch.tensor([[1, 99]]))
    with pytest.raises(ValueError, match="target class 2 does not exist"):
        explainers.gradient(model, batch(model), target=2)
    with pytest.raises(ValueError, match="target class 7 does not exist"):
        registry.position_scores(model, batch(model), target=7)
    with pytest.raises(TypeError, match="ClassifierBase"):
        explainers.attention(torch.nn.Linear(2, 2), batch(model))
    with pytest.raises(TypeError, match="target must be an int"):
        explainers.gradient(model, batch(model), target=1.0)
    with pytest.raises(ValueError, match="layer 1 does not exist"):
        explainers.attention(model, batch(model), layer=1)
    with pytest.raises(ValueError, match="only padding"):
        explainers.attention(model, torch.tensor([[0, 0, 0]]))
    with pytest.raises(ValueError, match="longer than the model accepts"):
        explainers.gradient(model, torch.ones((1, 11), dtype=torch.long))
    with pytest.raises(ValueError, match="no documents"):
        list(iter_batches(model, []))


# ---------------------------------------------------------------------- statistics
def test_review_spearman():
    a = np.array([[0.0, 1, 2, 3, 4], [0, 1, 2, 3, 4], [0, 1, 1, 1, 1]])
    b = np.array([[0.0, 10, 20, 30, 40], [0, 4, 3, 2, 1], [0, 1, 2, 3, 4]])
    mask = np.ones_like(a, dtype=bool)
    rho = corpus.review_spearman(a, b, mask)            # [CLS] (column 0) left out
    np.testing.assert_allclose(rho[:2], [1.0, -1.0])
    assert np.isnan(rho[2])                                  # constant scores: undefined
    with pytest.raises(ValueError, match="shapes differ"):
        corpus.review_spearman(a, b[:, :3], mask)


def test_review_spearman_matches_scipy_with_ties_and_padding():
    from scipy.stats import spearmanr

    rng = np.random.default_rng(0)
    a = rng.integers(0, 4, size=(6, 12)).astype(float)       # many ties
    b = rng.normal(size=(6, 12))
    mask = np.ones_like(a, dtype=bool)
    mask[2, 7:] = False                                      # padding
    a[2, 7:] = np.nan
    rho = corpus.review_spearman(a, b, mask)
    for r in range(6):
        m = mask[r].copy()
        m[0] = False
        np.testing.assert_allclose(rho[r], spearmanr(a[r, m], b[r, m]).statistic, atol=1e-12)


def test_corpus_statistics_tiny():
    model = tiny()
    seqs = [[1, 5, 6, 7, 8, 5], [1, 9, 10, 11], [1, 3, 4, 11, 12, 13, 14]]
    st = corpus.corpus_statistics(model, seqs, batch_size=2)
    assert set(st["spearman"]) == {*explainers.GRADIENT_METHODS, "|G-avg|", "|GxI|"}
    assert all(len(v) == 3 for v in st["spearman"].values())
    np.testing.assert_array_equal(st["n_tokens"], [5, 3, 6])
    assert len(st["alpha_all"]) == len(st["gxi_all"]) == 14
    assert st["logits"].shape == (3, 2) and ((st["head_tops"] >= 1) & (st["head_tops"] <= 3)).all()
    # the flag agrees with a direct computation
    ex = registry.position_scores(model, model.collate(seqs))
    alpha = ex["alpha-avg"].clone()
    alpha[:, 0] = float("nan")
    top = torch.nan_to_num(alpha, nan=-1).argmax(1)
    expect = (ex["GxI"][torch.arange(3), top] < 0).numpy()
    np.testing.assert_array_equal(st["top_gxi_negative"], expect)
    np.testing.assert_array_equal(st["n_negative_gxi"],
                                  [int((ex["GxI"][r, 1:len(s)] < 0).sum()) for r, s in enumerate(seqs)])


# ---------------------------------------------------------------------- figures
def test_plots_for_these_chapters():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from attnxai.chapters import plots

    model = tiny()
    ids = torch.tensor([[1, 5, 6, 7]])
    alpha = explainers.attention(model, ids, "none")[0].numpy()
    ax = plots.attention_heatmap(["[CLS]", "a", "b", "c"], alpha)
    assert [t.get_text() for t in ax.get_xticklabels()] == ["[CLS]", "a", "b", "c"]
    assert len(ax.get_yticklabels()) == model.n_heads
    plt.close("all")
    with pytest.raises(ValueError, match="3 tokens but alpha has 4 columns"):
        plots.attention_heatmap(["a", "b", "c"], alpha)


def test_figures_are_displayed_with_readable_text():
    """setup() raises every text below MIN_FONT to MIN_FONT when IPython displays a figure."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from IPython.core.interactiveshell import InteractiveShell
    from matplotlib.figure import Figure

    from attnxai.chapters import plots

    fig, ax = plt.subplots()
    ax.plot([0, 1], label="a line")
    ax.legend(fontsize=7)
    ax.set_title("title", fontsize=12)
    assert plots.readable(fig)
    assert min(t.get_fontsize() for t in fig.findobj(matplotlib.text.Text)
               if t.get_text().strip()) == plots.MIN_FONT
    assert ax.title.get_fontsize() == 12 and not plots.readable(fig)
    plt.close(fig)

    shell = InteractiveShell.instance()
    try:
        plots.setup()
        plots.setup()                               # twice: wrapped once
        png = shell.display_formatter.formatters["image/png"]
        assert png.lookup_by_type(Figure)._attnxai_readable
        fig, ax = plt.subplots()
        ax.set_xlabel("x", fontsize=6)
        png(fig)
        assert ax.xaxis.label.get_fontsize() == plots.MIN_FONT
        plt.close(fig)
    finally:
        InteractiveShell.clear_instance()


def test_distinct_head_tops():
    alpha = torch.tensor([[[0.1, 0.8, 0.1], [0.1, 0.7, 0.2]], [[0.9, 0.05, 0.05], [0.1, 0.2, 0.7]]])
    mask = torch.tensor([[False, True, True], [False, True, True]])
    np.testing.assert_array_equal(corpus.distinct_head_tops(alpha, mask), [1, 2])
    with pytest.raises(ValueError, match="need alpha"):
        corpus.distinct_head_tops(alpha[0], mask)


def test_sample_reviews(quick_model, imdb):
    chosen, seqs = corpus.sample_reviews(quick_model, imdb.test, 5, seed=1)
    again, _ = corpus.sample_reviews(quick_model, imdb.test, 5, seed=1)
    assert [r.id for r in chosen] == [r.id for r in again] and len(seqs) == 5
    assert all(s[0] == quick_model.vocab.cls_id and len(s) <= quick_model.model.max_len for s in seqs)
    assert len(corpus.sample_reviews(quick_model, imdb.test[:3], 10)[0]) == 3
    with pytest.raises(ValueError, match="no reviews"):
        corpus.sample_reviews(quick_model, [], 3)
    with pytest.raises(ValueError, match="n must be"):
        corpus.sample_reviews(quick_model, imdb.test, 0)
