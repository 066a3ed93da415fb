"""Figures shared by the chapters (seaborn styling, token shading as in the paper's Figure 1, the
paper's Figure 2 drawn).

The book's figures are drawn for a 750-pixel column: at most :data:`MAX_WIDTH` inches wide at
100 dpi, text of at least 10 pt, and saved at twice that resolution (``retina``: 200 dpi, shown at
half size), so that they are sharp on high-density screens. A phone shows a figure whole, scaled
to its column (legend included), and a tap opens it at full size (the book's script).
:func:`setup` enforces the smallest text size on every figure a notebook displays
(:func:`readable`), whatever size a cell asked for.
"""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
import seaborn as sns

from ..shading import AWAY, TOWARDS
from . import printforms

#: The widest figure, in inches at 100 dpi (the book's column is about 750 CSS pixels).
MAX_WIDTH = 7.2
#: The smallest font size, in points, of any text in a figure.
MIN_FONT = 10


#: Line styles that matplotlib's lines take in turn with the colours (the book's
#: ``axes.prop_cycle``): lines told apart in print, where the colours become greys. MARKERS:
#: for points (error bars, scatters) that a greyscale print must tell apart, one a group.
LINE_STYLES = ("-", (0, (4, 1.5)), (0, (1, 1.2)), (0, (5, 1.5, 1, 1.5)), (0, (9, 2.5)),
               (0, (3, 1, 1, 1, 1, 1)), (0, (1, 3)), (0, (9, 2, 1, 2, 1, 2)), (0, (2, 2)),
               (0, (12, 2, 3, 2)), (0, (6, 1, 1, 1, 1, 1, 1, 1)), (0, (14, 3)))
MARKERS = ("o", "s", "^", "D", "v", "X", "P", "*", "<", "h", ">", "p")


def setup() -> None:
    """The book's figure style (call once per chapter): 100 dpi on screen, 2x in the notebook
    output (retina PNG), text of at least 10 pt, figures at most :data:`MAX_WIDTH` inches wide,
    lines told apart by their style as well as their colour (:data:`LINE_STYLES`); each displayed
    figure is checked in grey (:func:`grey_twins`, recorded in its output's metadata); and the
    print forms of tables and SymPy output (:func:`attnxai.chapters.printforms.register`; call
    it after ``sympy.init_printing``)."""
    from cycler import cycler

    sns.set_theme(context="notebook", style="whitegrid", palette="colorblind")
    colours = sns.color_palette("colorblind", len(LINE_STYLES))
    plt.rcParams.update({
        "axes.prop_cycle": cycler(color=colours) + cycler(linestyle=list(LINE_STYLES)),
        "lines.markersize": 5,
        "figure.dpi": 100, "savefig.dpi": 200, "savefig.bbox": "tight",
        "figure.figsize": (MAX_WIDTH, 3.4),
        "font.size": 11, "axes.titlesize": 12, "axes.labelsize": 11,
        "xtick.labelsize": MIN_FONT, "ytick.labelsize": MIN_FONT,
        "legend.fontsize": MIN_FONT, "legend.title_fontsize": MIN_FONT,
    })
    try:   # inside IPython: PNGs at twice the resolution, displayed at their CSS size
        from matplotlib_inline.backend_inline import set_matplotlib_formats

        set_matplotlib_formats("retina")
    except ImportError:    # pragma: no cover - matplotlib_inline comes with IPython
        pass
    _readable_when_displayed()
    printforms.register()      # tables and wide SymPy output get a LaTeX form for the PDF


def readable(fig, min_font: float = MIN_FONT) -> bool:
    """Raise every visible text of ``fig`` smaller than ``min_font`` points (tick labels, legends,
    annotations, titles) to ``min_font``; True if any changed. The layout is left as it is (the
    figure is saved with ``bbox_inches="tight"``, so nothing is cut off)."""
    from matplotlib.text import Text

    changed = False
    for text in fig.findobj(Text):
        if text.get_visible() and text.get_text().strip() and text.get_fontsize() < min_font:
            text.set_fontsize(min_font)
            changed = True
    return changed


#: Two legend keys of the same line style and marker print the same when their greys (0 black,
#: 1 white, as a greyscale printer renders the colour on white paper) differ by less than this.
GREY_STEP = 0.15
#: The key of an output's image metadata where :func:`setup`'s display hook records the check.
GREY_METADATA = "attnxai_grey"


def grey(colour, alpha: float | None = None) -> float:
    """The grey a greyscale printer renders ``colour`` (any matplotlib colour, with its alpha,
    or ``alpha`` when given: an artist's own) as on white paper: ITU-R 601 luma of the colour
    blended with white; 0 black, 1 white."""
    from matplotlib.colors import to_rgba

    r, g, b, a = to_rgba(colour, alpha)
    luma = 0.299 * r + 0.587 * g + 0.114 * b
    return 1.0 - a * (1.0 - luma)


def _grey_key(handle):
    """A legend key as printed in grey: (its grey, its dash pattern, its marker), or None for a
    key that is not a line or scattered points (bars and areas are named by their axis)."""
    from matplotlib.collections import PathCollection
    from matplotlib.lines import Line2D

    if isinstance(handle, Line2D):
        style = handle.get_linestyle()
        # the dash pattern itself (every custom dash reads "--" through get_linestyle)
        dashes = None if style in ("-", "solid", "None", "none", " ", "") else \
            getattr(handle, "_unscaled_dash_pattern", style)
        marker = handle.get_marker()
        marker = None if marker in (None, "None", "none", "", " ") else str(marker)
        line = handle.get_color() if style not in ("None", "none", " ", "") else \
            handle.get_markerfacecolor()
        return (grey(line, handle.get_alpha()), "none" if style in ("None", "none", " ", "") else str(dashes),
                marker, handle.get_fillstyle() if marker else None)
    if isinstance(handle, PathCollection):
        faces = handle.get_facecolor()
        paths = handle.get_paths()
        shape = tuple(np.round(paths[0].vertices, 2).ravel()) if len(paths) else None
        return (grey(faces[0], handle.get_alpha()) if len(faces) else 1.0, "none",
                str(hash(shape)), None)
    return None


def _legends(fig):
    for legend in [*fig.legends, *(ax.get_legend() for ax in fig.axes)]:
        if legend is not None:
            yield legend


def grey_twins(fig) -> list[tuple[str, str]]:
    """Pairs of labels of one legend of ``fig`` whose keys print the same in grey: the same dash
    pattern and the same marker, and greys (:func:`grey`) closer than :data:`GREY_STEP`. Empty
    for a figure that a reader of a greyscale print can decode, which the book asks of every line
    plot (lines told apart by their style or marker as well as their colour)."""
    twins = []
    for legend in _legends(fig):
        keys = [(text.get_text(), key) for handle, text in
                zip(legend.legend_handles, legend.get_texts())
                if (key := _grey_key(handle)) is not None]
        for i, (a, ka) in enumerate(keys):
            for b, kb in keys[i + 1:]:
                if ka[1:] == kb[1:] and abs(ka[0] - kb[0]) < GREY_STEP:
                    twins.append((a, b))
    return twins


def _readable_when_displayed() -> None:
    """Inside IPython, apply :func:`readable` to every matplotlib figure before it is rendered
    for display (the inline backend displays figures through these formatters), and record
    :func:`grey_twins` in the image's metadata (``GREY_METADATA``: the legend keys that print
    the same in grey; tests/book/test_book.py reads it from every figure of the built book)."""
    try:
        from IPython import get_ipython
        from matplotlib.figure import Figure
    except ImportError:    # pragma: no cover
        return
    ip = get_ipython()
    if ip is None:
        return
    for fmt in ip.display_formatter.formatters.values():
        try:
            render = fmt.lookup_by_type(Figure)
        except KeyError:
            continue
        if getattr(render, "_attnxai_readable", False):
            continue

        def render_readable(fig, *args, _render=render, **kwargs):
            readable(fig)
            out = _render(fig, *args, **kwargs)
            if out is None:
                return out
            data, meta = out if isinstance(out, tuple) else (out, {})
            twins = grey_twins(fig)
            return data, {**(meta or {}), GREY_METADATA: {"twins": [list(t) for t in twins]}}

        render_readable._attnxai_readable = True
        fmt.for_type(Figure, render_readable)


def signed_cmap():
    """The convention as a colour map for signed values (red, white at 0, green): heat maps of
    LIME coefficients, correlations. Use it with ``center=0`` (or vmin = -vmax)."""
    from matplotlib.colors import LinearSegmentedColormap

    return LinearSegmentedColormap.from_list(
        "attnxai_signed", [tuple(c / 255 for c in AWAY), (1, 1, 1), tuple(c / 255 for c in TOWARDS)])


def attention_heatmap(tokens: Sequence[str], alpha, *, ax=None, head_labels: Sequence[str] | None = None,
                      annotate: bool | None = None, cmap: str = "rocket_r", title: str | None = None,
                      orientation: str = "horizontal"):
    """Figure 3: the [CLS] attention of every head on one review.

    ``alpha`` is (K, T) (e.g. ``explainers.attention(model, ids, "none")[0]``), ``tokens`` its T
    tokens. Rows for alpha-avg and alpha-max can be appended by the caller. ``orientation``:
    "horizontal" (default) is the paper's layout (heads as rows, tokens as columns); "vertical"
    puts the tokens down the page, one per row, so that a long review stays readable on a narrow
    screen (the book uses it). ``annotate``
    writes the weights in the cells (default: when there are at most 40 tokens). Returns the axes.
    """
    a = np.asarray(alpha, dtype=float)
    if a.ndim != 2:
        raise ValueError(f"alpha must be (heads, tokens), got shape {a.shape}")
    if a.shape[1] != len(tokens):
        raise ValueError(f"{len(tokens)} tokens but alpha has {a.shape[1]} columns")
    if orientation not in ("vertical", "horizontal"):
        raise ValueError(f"orientation must be 'vertical' or 'horizontal', got {orientation!r}")
    labels = list(head_labels) if head_labels is not None else [f"head {i + 1}" for i in range(a.shape[0])]
    if len(labels) != a.shape[0]:
        raise ValueError(f"{len(labels)} row labels for {a.shape[0]} rows")
    annotate = a.shape[1] <= 40 if annotate is None else annotate
    vertical = orientation == "vertical"
    data = a.T if vertical else a
    if ax is None:
        if vertical:
            size = (min(MAX_WIDTH, 0.62 * a.shape[0] + 2.6), 0.26 * a.shape[1] + 1.4)
        else:
            size = (min(MAX_WIDTH, 0.42 * a.shape[1] + 1.5), 0.45 * a.shape[0] + 1.6)
        _, ax = plt.subplots(figsize=size)
    sns.heatmap(data, ax=ax, cmap=cmap, vmin=0, vmax=max(float(np.nanmax(a)), 1e-12), annot=annotate,
                fmt=".2f", annot_kws={"fontsize": MIN_FONT},
                xticklabels=labels if vertical else list(tokens),
                yticklabels=list(tokens) if vertical else labels,
                cbar_kws={"label": r"$\alpha_t$", "pad": 0.02}, linewidths=0.3, linecolor="white")
    ax.tick_params(axis="x", labelrotation=90 if not vertical else 45, labelsize=MIN_FONT)
    ax.tick_params(axis="y", labelrotation=0, labelsize=MIN_FONT)
    if vertical:
        ax.xaxis.tick_top()
        plt.setp(ax.get_xticklabels(), ha="left")
    if title:
        ax.set_title(title)
    return ax



def architecture(ax=None):
    """The paper's Figure 2, drawn: the single-layer classifier of chapter 1 with the paper's
    symbols, from the tokens ([CLS] first) and their embeddings (word plus position) through one
    head (keys and values of every token, the [CLS] query, the softmax, the attention output and
    the head's output layer, the K heads stacked behind) to the average over heads, the logits.
    Returns the axes (a figure :data:`MAX_WIDTH` inches wide when ``ax`` is None)."""
    from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

    if ax is None:
        _, ax = plt.subplots(figsize=(MAX_WIDTH, 4.4))
    ax.set_xlim(0, 14.4)
    ax.set_ylim(0, 8.8)
    ax.axis("off")
    C = {"tok": "#f2f2f2", "emb": "#dbe9f6", "head": "#fff7e8", "att": "#fde0dd", "out": "#e5f5e0"}

    def box(x, y, w, h, text, color, **kw):
        ax.add_patch(FancyBboxPatch((x - w / 2, y - h / 2), w, h,
                                    boxstyle="round,pad=0.02,rounding_size=0.15",
                                    fc=color, ec="0.35", lw=0.9, zorder=3))
        if text:
            note(x, y, text, **kw)

    def note(x, y, text, **kw):
        ax.text(x, y, text, **{"ha": "center", "va": "center", "fontsize": 10, "zorder": 4, **kw})

    def arrow(a, b, **kw):
        ax.add_patch(FancyArrowPatch(a, b, arrowstyle="-|>", mutation_scale=10, lw=0.9,
                                     color="0.3", shrinkA=0, shrinkB=0, zorder=2, **kw))

    rows = {"1": 6.2, "2": 4.7, "T": 2.6}
    for k, off in enumerate((0.3, 0.15, 0.0)):          # the K heads, head i in front
        ax.add_patch(FancyBboxPatch((3.55 + off, 0.3 + off), 7.15, 8.1,
                                    boxstyle="round,pad=0.02,rounding_size=0.25",
                                    fc=C["head"], ec="0.55", lw=0.8, zorder=1 + 0.1 * k))
    note(7.1, 0.75, r"head $i$ of $K$: its own $W_q^{(i)}, W_k^{(i)}, W_v^{(i)}, W_\ell^{(i)}$")
    note(0.75, 8.3, "token")
    note(2.55, 8.3, "embedding")
    for r, y in rows.items():
        box(0.75, y, 1.3, 0.8, r"$\mathtt{[CLS]}$" if r == "1" else f"$x_{r}$", C["tok"])
        box(2.55, y, 1.1, 0.8, f"$e_{r}$", C["emb"])
        arrow((1.4, y), (2.0, y))
        box(4.85, y, 1.55, 0.8, f"$k_{r},\\ v_{r}$", C["emb"])
        arrow((3.1, y), (4.07, y))
        arrow((5.63, y), (6.0, y))
    for x in (0.75, 2.55, 4.85):
        note(x, 3.65, r"$\vdots$", fontsize=12)
    note(2.2, 1.55, "$e_t = W_e[x_t] + p_t$\nword + position")
    note(4.85, 1.55, "$k_t = W_k e_t$\n$v_t = W_v e_t$")
    box(4.85, 7.65, 1.8, 0.7, r"$q_1 = W_q e_1$", C["att"])
    arrow((2.95, 6.6), (3.95, 7.55), connectionstyle="arc3,rad=-0.2")
    # attention: the [CLS] query against every key, a softmax over t
    box(7.0, 4.4, 2.0, 4.6, "", C["att"])
    note(7.0, 5.3, "$\\alpha_t =$\n" r"$\mathrm{softmax}_t$" "\n"
         r"$\left(\frac{q_1^\top k_t}{\sqrt{d_{\mathrm{att}}}}\right)$")
    note(7.0, 3.1, "only the\n[CLS] row", color="0.3")
    arrow((5.75, 7.65), (6.55, 6.72), connectionstyle="arc3,rad=-0.25")
    # the head's output, then the average over heads
    box(9.3, 5.3, 2.1, 0.9, r"$\tilde v = \sum_t \alpha_t v_t$", C["out"])
    box(9.3, 3.3, 2.1, 0.8, r"$W_\ell\, \tilde v$", C["out"])
    arrow((8.0, 5.3), (8.25, 5.3))
    arrow((9.3, 4.85), (9.3, 3.7))
    box(12.65, 3.3, 3.3, 1.2, r"$f(x) = \frac{1}{K} \sum_{i=1}^{K} W_\ell^{(i)} \tilde v^{(i)}$", C["out"])
    note(12.65, 4.5, "average over the\nheads: the logits")
    arrow((10.35, 3.3), (11.0, 3.3))
    return ax


def rounded(frame, decimals: int = 3):
    """``frame`` (a DataFrame or Series) rounded for display to ``decimals``, its numeric columns
    without negative zeros: a weight of -0.0004 shows as 0.000, not -0.000 (adding 0 turns
    -0.0 into 0.0). Other columns are left as they are."""
    out = frame.round(decimals)
    if not hasattr(out, "select_dtypes"):                  # a Series
        return out + 0 if out.dtype.kind in "fi" else out
    out = out.copy()
    for column in out.select_dtypes("number").columns:     # names may be tuples (MultiIndex)
        out[column] = out[column] + 0
    return out


def ci_forest(table, *, y: str = "method", hue: str | None = None,
              interval: tuple[str, str, str] = ("mean", "ci_low", "ci_high"),
              order: Sequence[str] | None = None, hue_order: Sequence[str] | None = None,
              ax=None, reference: float | None = None, xlabel: str | None = None):
    """Means with their (precomputed) confidence intervals, one row per ``y`` value, dodged by
    ``hue``: a forest plot of a summary table (e.g. the committed faithfulness summary, whose
    intervals come from the bootstrap, not from seaborn's own). ``interval``: the columns of the
    estimate and of its interval's lower and upper ends, together. Returns the axes."""
    if len(interval) != 3 or not all(isinstance(c, str) for c in interval):
        raise ValueError("interval names three columns (estimate, lower end, upper end), got "
                         f"{interval!r}")
    x, lo, hi = interval
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 0.35 * table[y].nunique() + 1.2))
    order = list(order) if order is not None else list(dict.fromkeys(table[y]))
    hues = [None] if hue is None else (list(hue_order) if hue_order is not None
                                       else list(dict.fromkeys(table[hue])))
    colors = sns.color_palette(n_colors=max(len(hues), 1))
    width = 0.7
    for j, h in enumerate(hues):
        sub = table if h is None else table[table[hue] == h]
        sub = sub.set_index(y)
        off = 0.0 if len(hues) == 1 else (j - (len(hues) - 1) / 2) * width / len(hues)
        ys, xs, err = [], [], [[], []]
        for i, name in enumerate(order):
            if name not in sub.index:
                continue
            r = sub.loc[name]
            ys.append(i + off)
            xs.append(float(r[x]))
            err[0].append(float(r[x]) - float(r[lo]))
            err[1].append(float(r[hi]) - float(r[x]))
        # each group its own marker too: the groups are told apart in a greyscale print
        ax.errorbar(xs, ys, xerr=err, fmt=MARKERS[j % len(MARKERS)], ms=4, capsize=2,
                    color=colors[j], label=None if h is None else str(h))
    ax.set_yticks(range(len(order)))
    ax.set_yticklabels(order)
    ax.set_ylim(len(order) - 0.5, -0.5)
    if reference is not None:
        ax.axvline(reference, color="0.5", lw=0.8, ls="--")
    if hue is not None:
        ax.legend(title=hue, loc="best")
    ax.set_xlabel(xlabel or x)
    return ax
