"""The token shadings and the colour convention of attnxai.chapters.plots (book/notation.md, Colours):
green for a weight that pushes logit 1 up, red for one that pushes it down, a key on every
shading, an HTML form for the site and a LaTeX form for the PDF."""

import re

import numpy as np
import pytest

from attnxai.chapters import plots


def _spans(html: str) -> list[str]:
    return re.findall(r'<span class="attnxai-tok"[^>]*>', html)


def test_weights_are_shaded_by_the_convention():
    sh = plots.token_html(["good", "<bad>", "x", "zero"], [2.0, -1.0, np.nan, 0.0],
                          explainer="LIME", score="its coefficient")
    html = sh._repr_html_()
    good, bad, none, zero = _spans(html)
    assert "rgb(%d,%d,%d)" % plots.TOWARDS in good and "underline" not in good
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
    assert "rgb(%d,%d,%d)" % plots.TOWARDS in _spans(own)[0]                 # GxI's own max
    assert "rgb(203,222,204)" in _spans(shared)[0]                           # 1 / 4 of the way
    assert "One row per explainer (GxI, LIME)" in own


def test_latex_form_for_the_pdf():
    sh = plots.explanations_html(["a_b", "50%", "{x}", "n"], {"A": [1.0, -1.0, 0.5, np.nan]})
    tex = sh._repr_latex_()
    assert tex.startswith("$") and tex.endswith("$") and r"\parbox" in tex
    assert tex.count(r"\colorbox[RGB]") == 3 and r"\fbox" in tex            # NaN: framed, unshaded
    assert r"\colorbox[RGB]{%d,%d,%d}" % plots.TOWARDS in tex                # full weight
    assert r"\colorbox[RGB]{%d,%d,%d}" % plots.AWAY in tex
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
    colours (the luminance formula written out here, not plots.contrast)."""
    weights = np.linspace(-1, 1, 81)
    html = plots.token_html([f"t{i}" for i in range(81)], weights, explainer="x", score="y")._repr_html_()
    worst = 21.0
    for span in _spans(html):
        bg = [int(v) for v in re.search(r"background: rgb\((\d+),(\d+),(\d+)\)", span).groups()]
        fg = re.search(r"color: (#[0-9a-f]{3,6})", span).group(1)
        fg = "#ffffff" if fg == "#fff" else "#000000" if fg == "#000" else fg
        hi, lo = sorted([_luminance(bg), _luminance(fg)], reverse=True)
        worst = min(worst, (hi + 0.05) / (lo + 0.05))
    assert worst >= 4.5, worst
    assert plots.contrast((255, 255, 255), (0, 0, 0)) == pytest.approx(21.0)


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


# ---------------------------------------------------------------- figures in greyscale print
def _grey_png(fig) -> np.ndarray:
    """The figure as a greyscale printer prints it (PIL's "L": ITU-R 601 luma)."""
    import io

    from PIL import Image

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=60)
    return np.asarray(Image.open(buf).convert("L"))


def test_lines_that_differ_only_by_colour_are_twins_in_grey():
    """A legend whose keys differ by colour alone prints as identical lines (Figs 6.1, 6.2 and
    7.1 did, with six or nine of them): grey_twins names them; the book's line cycle (style and
    marker with each colour) and seaborn's style= leave none."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import pandas as pd
    import seaborn as sns

    plots.setup()
    colours = sns.color_palette("colorblind", 6)
    fig, ax = plt.subplots()
    for i, c in enumerate(colours):
        ax.plot([0, 1], [i, i + 1], color=c, ls="-", marker="", label=f"m{i}")
    ax.legend()
    twins = plots.grey_twins(fig)
    # blue (0, 114, 178) and vermilion (213, 94, 0) of the colourblind palette print 0.02 apart
    assert ("m0", "m3") in twins
    assert abs(plots.grey(colours[0]) - plots.grey(colours[3])) < plots.GREY_STEP
    plt.close(fig)
    # grey() is what a greyscale print shows: the two colours rendered and converted to grey
    # (PIL's luma) land within GREY_STEP of each other, and of grey()'s values
    for c in (colours[0], colours[3], (0.0, 0.0, 0.0, 0.25)):
        fig = plt.figure(figsize=(1, 1))
        fig.patch.set_facecolor("white")
        fig.add_artist(plt.Rectangle((0, 0), 1, 1, color=c, transform=fig.transFigure))
        printed = float(np.median(_grey_png(fig))) / 255
        assert abs(printed - plots.grey(c)) < 0.02, (c, printed, plots.grey(c))
        plt.close(fig)

    fig, ax = plt.subplots()
    for i in range(len(plots.LINE_STYLES)):
        ax.plot([0, 1], [i, i + 1], label=f"m{i}")                   # the book's cycle
    ax.legend()
    assert plots.grey_twins(fig) == []
    plt.close(fig)

    frame = pd.DataFrame({"x": np.tile(np.arange(4), 5), "y": np.arange(20.0),
                          "method": np.repeat(list("abcde"), 4)})
    ax = sns.lineplot(frame, x="x", y="y", hue="method")
    assert plots.grey_twins(ax.figure), "seaborn's hue alone: colour only"
    plt.close(ax.figure)
    ax = sns.lineplot(frame, x="x", y="y", hue="method", style="method", markers=True)
    assert plots.grey_twins(ax.figure) == []
    plt.close(ax.figure)
    # grey levels far apart are told apart, whatever the style; a translucent line is lighter
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1], color="black", ls="-", marker="", label="dark")
    ax.plot([0, 1], [1, 0], color="0.75", ls="-", marker="", label="light")
    ax.plot([0, 1], [1, 1], color="black", alpha=0.25, ls="-", marker="", label="faint")
    ax.legend()
    assert plots.grey_twins(fig) == [("light", "faint")]
    assert plots.grey("black") == 0.0 and abs(plots.grey((0, 0, 0, 0.25)) - 0.75) < 1e-12
    plt.close(fig)


def test_every_displayed_figure_records_its_grey_check():
    """setup()'s display hook renders each figure and records grey_twins in the image's
    metadata, which tests/test_book.py reads from every figure of the built book."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    try:
        plots.setup()
        fig, ax = plt.subplots()
        ax.plot([0, 1], [0, 1], color="C0", ls="-", marker="", label="a")
        ax.plot([0, 1], [1, 0], color="C0", ls="-", marker="", label="b")
        ax.legend()
        data, meta = shell.display_formatter.format(fig, include=["image/png"])
        assert data["image/png"]
        assert meta["image/png"][plots.GREY_METADATA] == {"twins": [["a", "b"]]}
        plt.close(fig)
    finally:
        InteractiveShell.clear_instance()
