"""A table's LaTeX form: the very table its HTML shows (a pandas ``Styler``'s formats, hidden
index or columns, the cells as text) as a LaTeX tabular with columns sized to fit the PDF's line
(:func:`table_latex`; what :func:`attnxai.chapters.printforms.register` gives the PDF).
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

from .page import CHAR_PT, LINE_PT

__all__ = ["TABLE_MARK", "fit_columns", "is_number_text", "table_latex", "tex_escape"]

class _TableCells(HTMLParser):
    """The header and body rows of the first ``<table>`` of an HTML string, as text, with each
    cell's colspan and whether it is a heading (``<th>``); rowspans are filled with blanks."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.head: list[list[tuple[str, int, bool]]] = []
        self.body: list[list[tuple[str, int, bool]]] = []
        self._section = None
        self._cell = None
        self._depth = 0
        self._spans: dict[tuple[str, int], int] = {}    # (section, column) -> rows still spanned

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "table":
            self._depth += 1
        elif self._depth != 1:
            return
        elif tag in ("thead", "tbody"):
            self._section = self.head if tag == "thead" else self.body
        elif tag == "tr" and self._section is not None:
            self._section.append([])
            self._fill_spans()
        elif tag in ("td", "th") and self._section is not None and self._section:
            colspan = int(attrs.get("colspan") or 1)
            rowspan = int(attrs.get("rowspan") or 1)
            if rowspan > 1:
                name = "head" if self._section is self.head else "body"
                self._spans[(name, self._column())] = rowspan - 1
            self._cell = ([], colspan, tag == "th")
        elif tag == "br" and self._cell is not None:
            self._cell[0].append(" ")

    def _column(self) -> int:
        return sum(c[1] for c in self._section[-1])

    def _fill_spans(self):
        name = "head" if self._section is self.head else "body"
        while (name, self._column()) in self._spans:
            key = (name, self._column())
            self._section[-1].append(("", 1, True))
            self._spans[key] -= 1
            if not self._spans[key]:
                del self._spans[key]

    def handle_endtag(self, tag):
        if tag == "table":
            self._depth -= 1
        elif self._depth == 1 and tag in ("td", "th") and self._cell is not None:
            parts, colspan, heading = self._cell
            text = " ".join("".join(parts).split())
            self._section[-1].append((text, colspan, heading))
            self._cell = None
            self._fill_spans()
        elif self._depth == 1 and tag in ("thead", "tbody"):
            self._section = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell[0].append(data)


#: The first line of every table's LaTeX form: the book's extension recognises it (myst-nb hands
#: a ``text/latex`` output over as maths) and sets the table as LaTeX, not as an equation.
TABLE_MARK = "% attnxai.printforms table"     # as it was before the module moved: executed chapters carry it

_TEX_SPECIAL = {"\\": r"\textbackslash{}", "{": r"\{", "}": r"\}", "$": r"\$", "&": r"\&",
                "%": r"\%", "#": r"\#", "_": r"\_", "~": r"\textasciitilde{}",
                "^": r"\textasciicircum{}", "\u00a0": "~", "\u00ad": r"\-"}
_NUMBER = re.compile(r"^[-+\u2212]?(\d[\d,]*(\.\d*)?|\.\d+)([eE][-+]?\d+)?\s*%?$|^(nan|NaN|inf|-inf)$"
                     r"|^[\u2013\u2212]$|^[-\u2212]?\u221e$")   # a missing value's dash, infinity


def is_number_text(text: str) -> bool:
    """Whether a table cell's text is a number (``1,234``, ``-0.5``, ``12 %``, ``4.0e-15``): a
    column of them is right-aligned."""
    return bool(_NUMBER.match(text.strip()))


def tex_escape(text: str) -> str:
    """``text`` as LaTeX text: the ten special characters escaped."""
    return "".join(_TEX_SPECIAL.get(ch, ch) for ch in text)


def _text_pt(text: str) -> float:
    return CHAR_PT * len(text)


_BREAKS = re.compile(r"\s+|(?<=[_/-])")


def _word_pt(text: str) -> float:
    """The widest piece of ``text`` that cannot break (spaces, and after ``_``, ``/`` or
    ``-``, where :func:`_cell_tex` allows a break)."""
    return max((_text_pt(w) for w in _BREAKS.split(text)), default=0.0)


def table_latex(html: str, *, line_pt: float = LINE_PT) -> str:
    """The LaTeX form of the HTML table ``html`` (a pandas ``Styler`` or ``DataFrame`` as its
    ``_repr_html_`` shows it): a ``tabular`` with the same header rows and cells, index cells
    left-aligned, numeric columns right-aligned, ruled above, below the header and at the end.

    Columns take their natural width when the table fits ``line_pt``; otherwise headers wrap,
    then text columns wrap (never narrower than their longest word), then the type shrinks to
    ``\\small`` and ``\\footnotesize``. More than 20 body rows make a ``longtable`` (it breaks
    across pages and repeats its header). Raises ``ValueError`` if ``html`` holds no table.
    """
    cells = _TableCells()
    cells.feed(html)
    head, body = cells.head, cells.body
    if not head and not body:
        raise ValueError("no <table> with rows in this HTML")
    ncols = max(sum(c[1] for c in row) for row in head + body)
    n_index = max((_leading_headings(row) for row in body), default=0)
    head = _merge_index_names(head, n_index)
    grid = [[c for c in row] + [("", 1, False)] * (ncols - sum(c[1] for c in row))
            for row in head + body]
    body_grid = grid[len(head):]
    numeric = [j >= n_index and any(r[j][0] for r in body_grid if j < len(r))
               and all(_NUMBER.match(r[j][0]) for r in body_grid if j < len(r) and r[j][0]
                       and r[j][1] == 1)
               for j in range(ncols)]
    spec, size, sep = _column_spec(head, body_grid, ncols, numeric, line_pt)
    lines = [" & ".join(_cell_tex(text, span) for text, span, _ in row) + r" \\" for row in grid]
    top = lines[:len(head)]
    rest = lines[len(head):]
    colspec = "".join(spec)
    if len(body) > 20:        # a long table breaks across pages instead of leaving a gap
        # flush left, as the short tables are (longtable centres by default)
        out = [r"{\setlength{\LTleft}{0pt}\setlength{\LTright}{\fill}",
               rf"\begin{{longtable}}{{{colspec}}}", r"\hline", *top, r"\hline", r"\endhead",
               r"\hline", r"\endlastfoot", *rest, r"\end{longtable}}"]
    else:
        out = [rf"\begin{{tabular}}{{{colspec}}}", r"\hline", *top, r"\hline" if top else "",
               *rest, r"\hline", r"\end{tabular}"]
    body_tex = "\n".join(x for x in out if x)
    if size != "normalsize":
        body_tex = f"{{\\{size}\\setlength{{\\tabcolsep}}{{{sep:g}pt}}\n{body_tex}\n}}"
    return f"{TABLE_MARK}\n{body_tex}"


def _merge_index_names(head, n_index):
    """pandas puts the index names on a header row of their own, blank elsewhere: move them up
    into the blank corner of the row above (one header row less, as the eye reads it)."""
    if len(head) < 2 or not n_index:
        return head
    last, above = head[-1], head[-2]
    names, rest = last[:n_index], last[n_index:]
    if any(text for text, _, _ in rest) or any(text for text, _, _ in above[:n_index]) \
            or any(span != 1 for _, span, _ in above[:n_index]):
        return head
    return head[:-2] + [names + above[n_index:]]


def _positions(row):
    j = 0
    for text, span, heading in row:
        yield j, (text, span, heading)
        j += span


def fit_columns(natural: list[float], minimum: list[float], room: float) -> list[float]:
    """Column widths that add up to ``room`` where they can: each column's ``natural`` width
    (its longest cell on one line) if all fit, else every column gives up a share of what it has
    above its ``minimum`` (its widest unbreakable piece), in proportion to that excess. The book's
    extension sizes the PDF's Markdown tables with it too."""
    width = list(natural)
    if sum(natural) > room:
        shrink = [max(n - m, 0.0) for n, m in zip(natural, minimum)]
        excess = min(sum(natural) - room, sum(shrink))
        width = [n - excess * s / (sum(shrink) or 1.0) for n, s in zip(natural, shrink)]
    return width


#: Type sizes tried in turn, with their scale and column separation (\\tabcolsep, in points).
_SIZES = ((1.0, "normalsize", 6.0), (0.9, "small", 6.0), (0.8, "footnotesize", 4.0),
          (0.7, "scriptsize", 3.0))


def _column_spec(head, body, ncols, numeric, line_pt):
    """Column types, a type size and a column separation that fit ``line_pt`` (see
    :func:`table_latex`). Widths are measured at 10 pt and scaled to the size tried."""
    def widest(rows, measure):
        w = [0.0] * ncols
        for row in rows:
            for j, (text, span, _) in _positions(row):
                if span == 1:
                    w[j] = max(w[j], measure(text))
        return w

    natural = [max(b, h) for b, h in zip(widest(body, _text_pt), widest(head, _text_pt))]
    body_w, head_word, body_word = widest(body, _text_pt), widest(head, _word_pt), widest(body, _word_pt)
    # numbers never wrap; text and headers wrap down to their longest word
    minimum = [max(bw if num else bword, hw)
               for bw, bword, hw, num in zip(body_w, body_word, head_word, numeric)]
    for scale, size, sep in _SIZES:
        room = (line_pt - 2 * sep * ncols) / scale     # in 10 pt units
        if sum(minimum) > room and size != _SIZES[-1][1]:
            continue
        width = fit_columns(natural, minimum, room)
        spec = []
        for j in range(ncols):
            if width[j] >= natural[j] - 0.5:
                spec.append("r" if numeric[j] else "l")
            else:
                align = r"\raggedleft" if numeric[j] else r"\raggedright"
                spec.append(rf">{{{align}\arraybackslash}}p{{{width[j] * scale / line_pt:.3f}\linewidth}}")
        return spec, size, sep
    raise AssertionError("unreachable")      # pragma: no cover - the last size always returns


def _leading_headings(row) -> int:
    """How many columns of ``row`` are index cells (``<th>`` before the first ``<td>``)."""
    n = 0
    for _, span, heading in row:
        if not heading:
            break
        n += span
    return n


def _cell_tex(text, span):
    # breaks allowed after _ and /; -{} keeps -- from becoming a dash (command-line options)
    tex = tex_escape(text).replace(r"\_", r"\_\allowbreak{}").replace("/", r"/\allowbreak{}")
    tex = tex.replace("-", "-{}")
    if span > 1:
        return rf"\multicolumn{{{span}}}{{c}}{{{tex}}}"
    return tex
