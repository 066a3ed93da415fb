"""Figures shared by the chapters (seaborn styling, token shading as in the paper's Figure 1).

The book's figures are drawn for a 750-pixel column: at most :data:`MAX_WIDTH` inches wide at
100 dpi, text of at least 10 pt, and saved at twice that resolution (``retina``: 200 dpi, shown at
half size), so that they are sharp on high-density screens and their labels stay readable when a
phone shows them at three quarters of their size (the book's script lets them scroll there).
"""

from __future__ import annotations

import html
from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
import seaborn as sns


#: The widest figure, in inches at 100 dpi (the book's column is about 750 CSS pixels).
MAX_WIDTH = 7.2
#: The smallest font size, in points, of any text in a figure.
MIN_FONT = 10


def setup() -> None:
    """The book's figure style (call once per chapter): 100 dpi on screen, 2x in the notebook
    output (retina PNG), text of at least 10 pt, figures at most :data:`MAX_WIDTH` inches wide."""
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
