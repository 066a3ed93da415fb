"""Tokens shaded by weight, as in the paper's Figure 1: the book's colour convention (green
pushes the explained logit up, red down; book/notation.md), :class:`TokenShading` (HTML on the
site and in notebooks, LaTeX colour boxes in the PDF), the rows of one or several explainers
(:func:`token_html`, :func:`explanations_html`) and Figure 1 as a self-contained offline HTML page
(:func:`figure1_page`, what :meth:`attnxai.explanation.Explanation.to_html` writes).

Plain strings and NumPy only (no plotting library): an explanation renders itself without the
chapters' figure helpers (:mod:`attnxai.chapters.plots`, which draws with seaborn).
"""

from __future__ import annotations

import html
from collections.abc import Sequence

import numpy as np

__all__ = ["AWAY", "TOWARDS", "TokenShading", "contrast", "explanations_html", "figure1_page",
           "shade", "token_html"]


#: The book's colour convention (book/notation.md), for every signed weight it shades: green, a
#: weight that pushes the explained logit (logit 1, "positive") up; red, one that pushes it down.
TOWARDS = (46, 125, 50)
AWAY = (198, 40, 40)



def shade(rgb: Sequence[int], strength: float) -> tuple[int, int, int]:
    """``rgb`` at ``strength`` (0: white, 1: the colour itself) mixed with white: the opaque
    shade of a token, on the site and in print."""
    return tuple(int(round(255 - strength * (255 - c))) for c in rgb)


def contrast(a: Sequence[int], b: Sequence[int]) -> float:
    """WCAG contrast ratio of two sRGB colours (1 to 21)."""
    def luminance(rgb):
        lin = [(c / 255) / 12.92 if c / 255 <= 0.04045 else ((c / 255 + 0.055) / 1.055) ** 2.4
               for c in rgb]
        return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]

    hi, lo = sorted((luminance(a), luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)



class TokenShading:
    """Rows of tokens shaded by weight, with a colour key: what :func:`token_html` and
    :func:`explanations_html` return. ``display()`` it: HTML on the site and in notebooks
    (``_repr_html_``), LaTeX boxes in the PDF (``_repr_latex_``, ``\\colorbox``); ``str()`` is its
    HTML.

    ``rows``: (label, weights) pairs, weights aligned with ``tokens`` (NaN: unshaded); each row
    is scaled by its own largest |weight| unless ``scale`` is given. ``key``: which explainer and
    which score are shaded, said before the colours' meaning; ``towards``: the class the weights
    explain (logit 1, "positive", in the book)."""

    def __init__(self, tokens: Sequence[str], rows: Sequence[tuple[str, Sequence[float]]], *,
                 key: str, scale: float | None = None, towards: str = '"positive"'):
        if not key or not key.strip():
            raise ValueError("a token shading needs its key: which explainer and which score it shades")
        if not rows:
            raise ValueError("no row of weights to shade")
        self.tokens = [str(t) for t in tokens]
        self.key = key.strip()
        self.towards = towards
        self.rows = []
        for label, w in rows:
            w = np.asarray(w, dtype=float)
            if w.shape != (len(self.tokens),):
                raise ValueError(f"{label or 'row'}: {len(self.tokens)} tokens but {w.size} weights")
            finite = np.abs(w[np.isfinite(w)])
            top = float(scale) if scale is not None else (float(finite.max()) if finite.size else 0.0)
            self.rows.append((label, w, top or 1.0))

    def cells(self):
        """Per row: (label, [(token, weight, rgb or None, opacity)]), the colours of the
        convention (None: no weight)."""
        out = []
        for label, w, top in self.rows:
            cells = []
            for tok, x in zip(self.tokens, w):
                if not np.isfinite(x):
                    cells.append((tok, x, None, 0.0))
                else:
                    cells.append((tok, x, TOWARDS if x >= 0 else AWAY, min(abs(x) / top, 1.0)))
            out.append((label, cells))
        return out

    def _repr_html_(self) -> str:
        """Opaque shades (the colour mixed with white, as in print), so that the text colour can
        be chosen for contrast whatever the page's colour mode: black or white, whichever
        contrasts more, at least 4.6:1 on any shade (WCAG AA asks 4.5:1)."""
        width = max((len(label) for label, _, _ in self.rows), default=0)
        swatch = ('<span style="background: rgb({}); padding: 0 .6em; border-radius: 2px; '
                  'margin: 0 .3em"></span>')
        key = (f'<div class="attnxai-key" style="font-family: sans-serif; font-size: .85em; '
               f'color: #555; line-height: 1.5; margin-bottom: .2em">{html.escape(self.key)}. '
               f'{swatch.format("%d,%d,%d" % TOWARDS)}towards {html.escape(self.towards)}, '
               f'{swatch.format("%d,%d,%d" % AWAY)}away (underlined); strength |weight| / '
               "largest |weight| of the row (hover a token for its weight).</div>")
        lines = []
        for label, cells in self.cells():
            spans = []
            for tok, x, rgb, a in cells:
                if rgb is None:
                    style, tip = "", "no weight"
                else:
                    bg = shade(rgb, a)
                    fg = "#fff" if contrast(bg, (255, 255, 255)) > contrast(bg, (0, 0, 0)) \
                        else "#000"
                    under = "; text-decoration: underline" if x < 0 else ""
                    style = f"background: rgb({bg[0]},{bg[1]},{bg[2]}); color: {fg}{under}"
                    tip = f"{x:+.4g}"
                spans.append(f'<span class="attnxai-tok" data-weight="{x:.6g}" title="{tip}" '
                             f'style="{style}; padding: 1px 2px; margin: 1px; border-radius: 3px">'
                             f"{html.escape(tok)}</span>")
            head = (f"<b>{html.escape(label.ljust(width)).replace(' ', '&nbsp;')}</b>&nbsp; "
                    if label else "")
            lines.append(f'<div class="attnxai-row">{head}{" ".join(spans)}</div>')
        return (f'<div class="attnxai-shading" style="line-height: 1.9; font-family: monospace">'
                f'{key}{"".join(lines)}</div>')

    def _repr_latex_(self) -> str:
        """The same rows as LaTeX colour boxes (xcolor's ``\\colorbox``, the shade mixed with
        white), in a paragraph box so that long rows wrap."""
        def box(tok, rgb, a):
            text = rf"\strut\texttt{{{_latex_escape(tok)}}}"
            if rgb is None or a < 0.005:
                return rf"\fbox{{{text}}}" if rgb is None else text
            bg = shade(rgb, a)
            fg = r"\color{white}" if contrast(bg, (255, 255, 255)) > contrast(bg, (0, 0, 0)) else ""
            if rgb == AWAY:                  # in greyscale the underline tells red from green
                text = rf"\underline{{{text}}}"
            return rf"\colorbox[RGB]{{{','.join(map(str, bg))}}}{{{fg}{text}}}"

        rows = []
        for label, cells in self.cells():
            head = rf"\textbf{{{_latex_escape(label)}}}\enspace " if label else ""
            rows.append(head + " ".join(box(tok, rgb, a) for tok, _, rgb, a in cells))
        key = _latex_escape(f"{self.key}. Green: towards {self.towards}; red, underlined: away; "
                            "strength |weight| / largest |weight| of the row.")
        # \newline, not \par: the PDF builder puts the output in an amsmath environment
        body = r" \newline ".join([rf"\textit{{{key}}}"] + rows)
        return (r"$\displaystyle \parbox{0.95\linewidth}{\raggedright\setlength{\fboxsep}{1pt}"
                rf"\footnotesize {body}}}$")

    def __str__(self) -> str:
        return self._repr_html_()


_LATEX_SPECIAL = {"\\": r"\textbackslash{}", "{": r"\{", "}": r"\}", "$": r"\$", "&": r"\&",
                  "#": r"\#", "^": r"\textasciicircum{}", "_": r"\_", "%": r"\%",
                  "~": r"\textasciitilde{}", '"': "''"}


def _latex_escape(text: str) -> str:
    return "".join(_LATEX_SPECIAL.get(ch, ch) for ch in str(text))


def token_html(tokens: Sequence[str], weights: Sequence[float], *, explainer: str, score: str,
               scale: float | None = None, title: str | None = None,
               towards: str = '"positive"') -> TokenShading:
    """Tokens shaded by the book's convention (book/notation.md: green pushes logit 1,
    "positive", up, red down), opacity ~ |weight| / ``scale``, with a colour key that names the
    ``explainer`` and the ``score`` shaded (e.g. ``explainer="the model's own scores"``,
    ``score="s_t of logit 1, mean over heads"``). ``scale`` defaults to the largest |weight|, so
    the strongest token is fully coloured; ``title`` labels the row. ``display()`` the result."""
    return TokenShading(tokens, [(title or "", weights)],
                        key=f"Shaded: {score}, from {explainer}", scale=scale, towards=towards)



def explanations_html(tokens: Sequence[str], scores: dict[str, Sequence[float]], *,
                      score: str = "each explainer's weight of the token for logit 1",
                      shared_scale: bool = False, towards: str = '"positive"') -> TokenShading:
    """Figure 1: one shaded line of tokens per explainer (the row's label; see :func:`token_html`
    for the colours), with a key that says what is shaded (``score``).

    Each explainer has its own scale (its strongest token fully coloured) unless
    ``shared_scale``; NaN scores (e.g. a missing LIME word) are shown unshaded.
    """
    if not scores:
        raise ValueError("no explanation to draw")
    top = max((np.nanmax(np.abs(np.asarray(v, float))) for v in scores.values()), default=1.0)
    return TokenShading(tokens, list(scores.items()),
                        key=f"One row per explainer ({', '.join(scores)}); shaded: {score}",
                        scale=top if shared_scale else None, towards=towards)


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
                rgb = "%d,%d,%d" % (TOWARDS if x >= 0 else AWAY)
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
<p class="legend">Each row is one explainer. <span class="sw" style="background:rgb({"%d,%d,%d" % TOWARDS})">
</span>weight &ge; 0 (towards "positive") <span class="sw" style="background:rgb({"%d,%d,%d" % AWAY})"></span>weight &lt; 0 (away);
opacity = |weight| / largest |weight| of the row (hover a token for its weight).</p>
<table>
{chr(10).join(rows)}
</table>
{note_html}
</body>
</html>
"""
