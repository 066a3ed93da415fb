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
