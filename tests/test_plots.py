"""The token shadings and the colour convention of attnxai.plots (book/notation.md, Colours):
green for a weight that pushes logit 1 up, red for one that pushes it down, a key on every
shading, an HTML form for the site and a LaTeX form for the PDF."""

import re

import numpy as np
import pytest

from attnxai import plots


def _spans(html: str) -> list[str]:
    return re.findall(r'<span class="attnxai-tok"[^>]*>', html)


def test_weights_are_shaded_by_the_convention():
    sh = plots.token_html(["good", "<bad>", "x", "zero"], [2.0, -1.0, np.nan, 0.0],
                          explainer="LIME", score="its coefficient")
    html = sh._repr_html_()
    good, bad, none, zero = _spans(html)
    assert "rgba(%d,%d,%d,1.000)" % plots.TOWARDS in good and "underline" not in good
    assert "rgba(%d,%d,%d,0.500)" % plots.AWAY in bad and "underline dotted" in bad
    assert "background" not in none and 'title="no weight"' in none
    assert "rgba(%d,%d,%d,0.000)" % plots.TOWARDS in zero
    assert "&lt;bad&gt;" in html and "<bad>" not in html
    key = re.search(r'<div class="attnxai-key".*?</div>', html).group(0)
    assert "LIME" in key and "its coefficient" in key and "towards" in key and "away" in key
    assert str(sh) == html


def test_every_shading_names_what_it_shades():
    with pytest.raises(TypeError):
        plots.token_html(["a"], [1.0])                           # no explainer, no score
    with pytest.raises(ValueError, match="needs its key"):
        plots.TokenShading(["a"], [("", [1.0])], key=" ")
    with pytest.raises(ValueError, match="GxI: 2 tokens but 3 weights"):
        plots.explanations_html(["a", "b"], {"GxI": [1.0, 2.0, 3.0]})
    with pytest.raises(ValueError, match="no explanation"):
        plots.explanations_html(["a"], {})


def test_rows_have_their_own_scale_unless_shared():
    scores = {"GxI": [1.0, -0.5], "LIME": [np.nan, 4.0]}
    own = plots.explanations_html(["good", "bad"], scores)._repr_html_()
    shared = plots.explanations_html(["good", "bad"], scores, shared_scale=True)._repr_html_()
    assert own.count('class="attnxai-row"') == 2 and "GxI" in own and "LIME" in own
    assert "rgba(%d,%d,%d,1.000)" % plots.TOWARDS in _spans(own)[0]          # GxI's own max
    assert "rgba(%d,%d,%d,0.250)" % plots.TOWARDS in _spans(shared)[0]       # 1 / 4
    assert "One row per explainer (GxI, LIME)" in own


def test_latex_form_for_the_pdf():
    sh = plots.explanations_html(["a_b", "50%", "{x}", "n"], {"A": [1.0, -1.0, 0.5, np.nan]})
    tex = sh._repr_latex_()
    assert tex.startswith("$") and tex.endswith("$") and r"\parbox" in tex
    assert tex.count(r"\colorbox[RGB]") == 3 and r"\fbox" in tex            # NaN: framed, unshaded
    assert r"\colorbox[RGB]{%d,%d,%d}" % plots.TOWARDS in tex                # full weight
    assert r"\colorbox[RGB]{%d,%d,%d}" % plots.AWAY in tex
    assert r"a\_b" in tex and r"50\%" in tex and r"\{x\}" in tex
    # the PDF builder wraps text/latex in an amsmath environment, where \par is not allowed
    assert not re.search(r"\\par\b", tex) and "\n\n" not in tex
    assert "towards" in tex and "One row per explainer" in tex


def test_signed_colour_map_is_the_convention():
    cmap = plots.signed_cmap()
    assert np.allclose(np.array(cmap(0.0)[:3]) * 255, plots.AWAY, atol=1)
    assert np.allclose(np.array(cmap(1.0)[:3]) * 255, plots.TOWARDS, atol=1)
    assert np.allclose(cmap(0.5)[:3], 1.0, atol=0.01)


def test_rounded_tables_show_no_negative_zero():
    import pandas as pd

    frame = pd.DataFrame({"word": ["a", "b"], "w": [-0.0004, 0.25], "n": [3, 0]})
    out = plots.rounded(frame, 3)
    assert out.to_string().count("-0.0") == 0 and list(out.word) == ["a", "b"]
    assert out.n.dtype.kind == "i" and out.w.tolist() == [0.0, 0.25]
    assert "-" not in plots.rounded(pd.Series([-1e-9, 2.0]), 2).to_string()
    wide = pd.DataFrame([[-0.0001, 1.0]], columns=pd.MultiIndex.from_tuples([("a", "x"), ("a", "y")]))
    assert plots.rounded(wide, 2).iloc[0].tolist() == [0.0, 1.0]


def test_architecture_is_figure_2_with_the_papers_symbols():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ax = plots.architecture()
    texts = " ".join(t.get_text() for t in ax.texts)
    for symbol in (r"\mathtt{[CLS]}", "W_e[x_t] + p_t", "W_q e_1", "W_k e_t", "W_v e_t",
                   r"\mathrm{softmax}_t", r"\sqrt{d_{\mathrm{att}}}", r"\tilde v = \sum_t \alpha_t v_t",
                   r"W_\ell\, \tilde v", r"\frac{1}{K} \sum_{i=1}^{K}"):
        assert symbol in texts, symbol
    assert ax.figure.get_figwidth() <= plots.MAX_WIDTH
    assert min(t.get_fontsize() for t in ax.texts) >= plots.MIN_FONT
    plt.close(ax.figure)
