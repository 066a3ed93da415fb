"""The token shading of the paper's Figure 1 (attnxai.shading): the book's colour convention,
green for a weight that pushes logit 1 up, red for one that pushes it down, a key on every
shading, an HTML form for the site and a LaTeX form for the PDF."""

import re

import numpy as np
import pytest

from attnxai import shading


def _spans(html: str) -> list[str]:
    return re.findall(r'<span class="attnxai-tok"[^>]*>', html)


def test_weights_are_shaded_by_the_convention():
    sh = shading.token_html(["good", "<bad>", "x", "zero"], [2.0, -1.0, np.nan, 0.0],
                            explainer="LIME", score="its coefficient")
    html = sh._repr_html_()
    good, bad, none, zero = _spans(html)
    assert "rgb(%d,%d,%d)" % shading.TOWARDS in good and "underline" not in good
    # half strength: half-way to white (255 - 57/2, 255 - 215/2, ...), and underlined
    assert "rgb(226,148,148)" in bad and "underline" in bad
    assert "background" not in none and 'title="no weight"' in none
    assert "rgb(255,255,255)" in zero
    assert "&lt;bad&gt;" in html and "<bad>" not in html
    key = re.search(r'<div class="attnxai-key".*?</div>', html).group(0)
    assert "LIME" in key and "its coefficient" in key and "towards" in key and "away" in key
    assert str(sh) == html


def test_every_shading_names_what_it_shades():
    with pytest.raises(TypeError):
        shading.token_html(["a"], [1.0])                           # no explainer, no score
    with pytest.raises(ValueError, match="needs its key"):
        shading.TokenShading(["a"], [("", [1.0])], key=" ")
    with pytest.raises(ValueError, match="GxI: 2 tokens but 3 weights"):
        shading.explanations_html(["a", "b"], {"GxI": [1.0, 2.0, 3.0]})
    with pytest.raises(ValueError, match="no explanation"):
        shading.explanations_html(["a"], {})


def test_rows_have_their_own_scale_unless_shared():
    scores = {"GxI": [1.0, -0.5], "LIME": [np.nan, 4.0]}
    own = shading.explanations_html(["good", "bad"], scores)._repr_html_()
    shared = shading.explanations_html(["good", "bad"], scores, shared_scale=True)._repr_html_()
    assert own.count('class="attnxai-row"') == 2 and "GxI" in own and "LIME" in own
    assert "rgb(%d,%d,%d)" % shading.TOWARDS in _spans(own)[0]                 # GxI's own max
    assert "rgb(203,222,204)" in _spans(shared)[0]                           # 1 / 4 of the way
    assert "One row per explainer (GxI, LIME)" in own


def test_latex_form_for_the_pdf():
    sh = shading.explanations_html(["a_b", "50%", "{x}", "n"], {"A": [1.0, -1.0, 0.5, np.nan]})
    tex = sh._repr_latex_()
    assert tex.startswith("$") and tex.endswith("$") and r"\parbox" in tex
    assert tex.count(r"\colorbox[RGB]") == 3 and r"\fbox" in tex            # NaN: framed, unshaded
    assert r"\colorbox[RGB]{%d,%d,%d}" % shading.TOWARDS in tex                # full weight
    assert r"\colorbox[RGB]{%d,%d,%d}" % shading.AWAY in tex
    # greyscale print: the negative weight is underlined, the positive ones are not
    assert tex.count(r"\underline{") == 1 and "underlined" in tex
    assert r"a\_b" in tex and r"50\%" in tex and r"\{x\}" in tex
    # the PDF builder wraps text/latex in an amsmath environment, where \par is not allowed
    assert not re.search(r"\\par\b", tex) and "\n\n" not in tex
    assert "towards" in tex and "One row per explainer" in tex


def _luminance(hex_or_rgb):
    rgb = [int(hex_or_rgb[i:i + 2], 16) for i in (1, 3, 5)] if isinstance(hex_or_rgb, str) \
        else hex_or_rgb
    c = np.array(rgb) / 255.0
    c = np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)
    return float(c @ [0.2126, 0.7152, 0.0722])


def test_every_shade_keeps_text_readable():
    """WCAG AA: at least 4.5:1 between a token and its shade, at every strength and for both
    colours (the luminance formula written out here, not shading.contrast)."""
    weights = np.linspace(-1, 1, 81)
    html = shading.token_html([f"t{i}" for i in range(81)], weights, explainer="x", score="y")._repr_html_()
    worst = 21.0
    for span in _spans(html):
        bg = [int(v) for v in re.search(r"background: rgb\((\d+),(\d+),(\d+)\)", span).groups()]
        fg = re.search(r"color: (#[0-9a-f]{3,6})", span).group(1)
        fg = "#ffffff" if fg == "#fff" else "#000000" if fg == "#000" else fg
        hi, lo = sorted([_luminance(bg), _luminance(fg)], reverse=True)
        worst = min(worst, (hi + 0.05) / (lo + 0.05))
    assert worst >= 4.5, worst
    assert shading.contrast((255, 255, 255), (0, 0, 0)) == pytest.approx(21.0)
