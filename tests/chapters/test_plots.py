"""The chapters' figures (attnxai.chapters.plots): the signed colour map of the book's
convention, tables without negative zeros, Figure 2 drawn, and figures told apart in grey."""

import numpy as np

from attnxai import shading
from attnxai.chapters import plots


def test_signed_colour_map_is_the_convention():
    cmap = plots.signed_cmap()
    assert np.allclose(np.array(cmap(0.0)[:3]) * 255, shading.AWAY, atol=1)
    assert np.allclose(np.array(cmap(1.0)[:3]) * 255, shading.TOWARDS, atol=1)
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
    metadata, which tests/book/test_book.py reads from every figure of the built book."""
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


def test_ci_forest_draws_each_interval_from_its_named_columns():
    """``interval`` names the estimate's and its ends' columns together; each row's error bar spans
    exactly [lower, upper] around the estimate; a malformed ``interval`` is refused."""
    import matplotlib
    import pandas as pd
    import pytest

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    table = pd.DataFrame({"method": ["a", "b", "a", "b"], "g": ["x", "x", "y", "y"],
                          "m": [0.1, 0.2, 0.3, 0.4], "l": [0.0, 0.1, 0.25, 0.3],
                          "h": [0.3, 0.25, 0.5, 0.45]})
    ax = plots.ci_forest(table, hue="g", interval=("m", "l", "h"), order=["b", "a"])
    bars = [c for c in ax.containers]
    assert len(bars) == 2
    for bar, sub in zip(bars, (table[table.g == "x"], table[table.g == "y"])):
        x, _ = bar.lines[0].get_data()
        segs = bar.lines[2][0].get_segments()
        rows = sub.set_index("method").loc[["b", "a"]]
        assert np.allclose(x, rows.m) and np.allclose([s[0][0] for s in segs], rows.l)
        assert np.allclose([s[1][0] for s in segs], rows.h)
    with pytest.raises(ValueError, match="three columns"):
        plots.ci_forest(table, interval=("m", "l"))
    plt.close("all")
