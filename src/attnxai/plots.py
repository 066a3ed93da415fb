"""Figures shared by the chapters (seaborn styling, token shading as in the paper's Figure 1)."""

from __future__ import annotations

import html
from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
import seaborn as sns


def setup() -> None:
    """The book's figure style (call once per chapter)."""
    sns.set_theme(context="notebook", style="whitegrid", palette="colorblind")
    plt.rcParams.update({"figure.dpi": 110, "savefig.bbox": "tight", "figure.figsize": (7, 3.5)})


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
                      annotate: bool | None = None, cmap: str = "rocket_r", title: str | None = None):
    """Figure 3: the [CLS] attention of every head on one review, heads as rows, tokens as columns.

    ``alpha`` is (K, T) (e.g. ``explainers.attention(model, ids, "none")[0]``), ``tokens`` its T
    tokens. Rows for alpha-avg and alpha-max can be appended by the caller. ``annotate`` writes
    the weights in the cells (default: when there are at most 25 tokens). Returns the axes.
    """
    a = np.asarray(alpha, dtype=float)
    if a.ndim != 2:
        raise ValueError(f"alpha must be (heads, tokens), got shape {a.shape}")
    if a.shape[1] != len(tokens):
        raise ValueError(f"{len(tokens)} tokens but alpha has {a.shape[1]} columns")
    labels = list(head_labels) if head_labels is not None else [f"head {i + 1}" for i in range(a.shape[0])]
    if len(labels) != a.shape[0]:
        raise ValueError(f"{len(labels)} row labels for {a.shape[0]} rows")
    annotate = a.shape[1] <= 25 if annotate is None else annotate
    if ax is None:
        _, ax = plt.subplots(figsize=(max(6.0, 0.42 * a.shape[1] + 1.5), 0.45 * a.shape[0] + 1.6))
    sns.heatmap(a, ax=ax, cmap=cmap, vmin=0, vmax=max(float(np.nanmax(a)), 1e-12), annot=annotate,
                fmt=".2f", annot_kws={"fontsize": 7}, xticklabels=list(tokens), yticklabels=labels,
                cbar_kws={"label": r"$\alpha_t$", "pad": 0.01}, linewidths=0.3, linecolor="white")
    ax.tick_params(axis="x", labelrotation=90, labelsize=8)
    ax.tick_params(axis="y", labelrotation=0)
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
        ax.legend(title=hue, fontsize=8, title_fontsize=8, loc="best")
    ax.set_xlabel(xlabel or x)
    return ax
