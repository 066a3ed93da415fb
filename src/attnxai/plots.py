"""Figures shared by the chapters (seaborn styling, token shading as in the paper's Figure 1).

The book's figures are drawn for a 750-pixel column: at most :data:`MAX_WIDTH` inches wide at
100 dpi, text of at least 10 pt, and saved at twice that resolution (``retina``: 200 dpi, shown at
half size), so that they are sharp on high-density screens and their labels stay readable when a
phone shows them at three quarters of their size (the book's script lets them scroll there).
:func:`setup` enforces the smallest text size on every figure a notebook displays
(:func:`readable`), whatever size a cell asked for.
"""

from __future__ import annotations

import html
from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
import seaborn as sns

from . import printforms

#: The widest figure, in inches at 100 dpi (the book's column is about 750 CSS pixels).
MAX_WIDTH = 7.2
#: The smallest font size, in points, of any text in a figure.
MIN_FONT = 10


def setup() -> None:
    """The book's figure style (call once per chapter): 100 dpi on screen, 2x in the notebook
    output (retina PNG), text of at least 10 pt, figures at most :data:`MAX_WIDTH` inches wide;
    and the print forms of tables and SymPy output (:func:`attnxai.printforms.register`; call
    it after ``sympy.init_printing``)."""
    sns.set_theme(context="notebook", style="whitegrid", palette="colorblind")
    plt.rcParams.update({
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


def _readable_when_displayed() -> None:
    """Inside IPython, apply :func:`readable` to every matplotlib figure before it is rendered
    for display (the inline backend displays figures through these formatters)."""
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
            return _render(fig, *args, **kwargs)

        render_readable._attnxai_readable = True
        fmt.for_type(Figure, render_readable)


def token_html(tokens: Sequence[str], weights: Sequence[float], *, scale: float | None = None,
               title: str | None = None) -> str:
    """Tokens shaded green (positive weight) or red (negative), opacity ~ |weight| / scale.

    ``scale`` defaults to the largest absolute weight, so the strongest token is fully coloured.
    Returns an HTML string (wrap it in ``IPython.display.HTML`` to show it).
    """
    w = np.asarray(weights, dtype=float)
    if len(tokens) != len(w):
        raise ValueError(f"{len(tokens)} tokens but {len(w)} weights")
    scale = float(np.max(np.abs(w))) if scale is None else float(scale)
    scale = scale or 1.0
    spans = []
    for tok, x in zip(tokens, w):
        a = min(abs(x) / scale, 1.0)
        rgb = "46,125,50" if x >= 0 else "198,40,40"
        spans.append(f'<span title="{x:.4g}" style="background: rgba({rgb},{a:.3f}); '
                     f'padding: 1px 2px; margin: 1px; border-radius: 3px">{html.escape(tok)}</span>')
    head = f"<b>{html.escape(title)}</b>: " if title else ""
    return f'<div style="line-height: 1.9; font-family: monospace">{head}{" ".join(spans)}</div>'


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


def explanations_html(tokens: Sequence[str], scores: dict[str, Sequence[float]], *,
                      shared_scale: bool = False) -> str:
    """Figure 1: one shaded line of tokens per explainer (see :func:`token_html`).

    Each explainer has its own scale (its strongest token fully coloured) unless
    ``shared_scale``; NaN scores (e.g. a missing LIME word) are shown unshaded.
    """
    rows = []
    top = max((np.nanmax(np.abs(np.asarray(v, float))) for v in scores.values()), default=1.0)
    width = max((len(k) for k in scores), default=0)
    for name, w in scores.items():
        w = np.nan_to_num(np.asarray(w, dtype=float), nan=0.0)
        label = name.ljust(width).replace(" ", "&nbsp;")
        body = token_html(tokens, w, scale=top if shared_scale else None)
        rows.append(body.replace('font-family: monospace">',
                                 f'font-family: monospace"><b>{label}</b>&nbsp; ', 1))
    return "\n".join(rows)


def figure1_page(tokens: Sequence[str], scores: dict[str, Sequence[float]], *,
                 title: str = "Explanations", subtitle: str | None = None,
                 notes: Sequence[str] = ()) -> str:
    """Figure 1 as a complete, self-contained HTML page (no external CSS, JavaScript or fonts, so
    it opens offline): one row per explainer, each token in a box shaded green (weight >= 0) or red
    (weight < 0) with opacity ``|w| / max |w|`` of that row, as in the paper. Hovering a token shows
    its weight; a NaN weight is left unshaded. ``notes`` are shown under the figure."""
    if not scores:
        raise ValueError("no explanation to draw")
    rows = []
    for name, w in scores.items():
        w = np.asarray(w, dtype=float)
        if len(w) != len(tokens):
            raise ValueError(f"{name}: {len(tokens)} tokens but {len(w)} weights")
        finite = np.abs(w[np.isfinite(w)])
        top = float(finite.max()) if finite.size and finite.max() > 0 else 1.0
        cells = []
        for tok, x in zip(tokens, w):
            fg = "#222"
            if not np.isfinite(x):
                bg, tip = "transparent", "no weight"
            else:
                rgb = "46,125,50" if x >= 0 else "198,40,40"
                a = min(abs(x) / top, 1.0)
                bg, tip = f"rgba({rgb},{a:.3f})", f"{x:+.4g}"
                fg = "#fff" if a > 0.55 else fg        # readable on a strong colour
            cells.append(f'<span class="tok" style="background:{bg};color:{fg}" '
                         f'title="{html.escape(tip)}">{html.escape(str(tok))}</span>')
        rows.append(f'<tr><th scope="row">{html.escape(name)}<br><small>max |w| = '
                    f'{top:.3g}</small></th><td>{" ".join(cells)}</td></tr>')
    note_html = "".join(f"<p class=\"note\">{html.escape(n)}</p>" for n in notes)
    sub = f"<p class=\"sub\">{html.escape(subtitle)}</p>" if subtitle else ""
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{html.escape(title)}</title>
<style>
body {{ font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 1.5em;
       color: #222; background: #fff; }}
h1 {{ font-size: 1.3em; margin-bottom: .2em; }}
.sub, .note, .legend {{ color: #555; font-size: .9em; }}
table {{ border-collapse: collapse; width: 100%; }}
th {{ text-align: left; vertical-align: top; padding: .5em 1em .5em 0; white-space: nowrap;
      font-family: ui-monospace, Menlo, Consolas, monospace; }}
th small {{ font-weight: normal; color: #777; }}
td {{ padding: .4em 0; line-height: 2.1; border-top: 1px solid #eee; }}
tr:first-child td {{ border-top: none; }}
.tok {{ padding: 2px 4px; margin: 1px; border-radius: 3px; border: 1px solid #ddd;
        font-family: ui-monospace, Menlo, Consolas, monospace; }}
.sw {{ display: inline-block; width: 1em; height: 1em; vertical-align: middle;
       border-radius: 2px; margin: 0 .3em 0 .8em; }}
</style>
</head>
<body>
<h1>{html.escape(title)}</h1>
{sub}
<p class="legend">Each row is one explainer. <span class="sw" style="background:rgb(46,125,50)">
</span>weight &ge; 0 <span class="sw" style="background:rgb(198,40,40)"></span>weight &lt; 0;
opacity = |weight| / largest |weight| of the row (hover a token for its weight).</p>
<table>
{chr(10).join(rows)}
</table>
{note_html}
</body>
</html>
"""


def ci_forest(table, *, y: str = "method", hue: str | None = None, x: str = "mean",
              lo: str = "ci_low", hi: str = "ci_high", order: Sequence[str] | None = None,
              hue_order: Sequence[str] | None = None, ax=None, reference: float | None = None,
              xlabel: str | None = None):
    """Means with their (precomputed) confidence intervals, one row per ``y`` value, dodged by
    ``hue``: a forest plot of a summary table (e.g. the committed faithfulness summary, whose
    intervals come from the bootstrap, not from seaborn's own). Returns the axes."""
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
        ax.errorbar(xs, ys, xerr=err, fmt="o", ms=4, capsize=2, color=colors[j],
                    label=None if h is None else str(h))
    ax.set_yticks(range(len(order)))
    ax.set_yticklabels(order)
    ax.set_ylim(len(order) - 0.5, -0.5)
    if reference is not None:
        ax.axvline(reference, color="0.5", lw=0.8, ls="--")
    if hue is not None:
        ax.legend(title=hue, loc="best")
    ax.set_xlabel(xlabel or x)
    return ax
