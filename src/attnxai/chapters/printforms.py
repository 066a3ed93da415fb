"""Print forms of the chapters' rich outputs: the ``text/latex`` that the PDF (and any LaTeX
reader of a notebook) gets beside what the site shows.

:func:`register` (called by :func:`attnxai.chapters.plots.setup`, which every chapter runs) installs them
as IPython display formatters, so no chapter needs code of its own:

* **Tables.** A pandas ``Styler`` or ``DataFrame`` gets a LaTeX tabular of the very table its
  HTML shows (:func:`table_latex`: the Styler's formats, hidden index or columns, the cells as
  text), with columns sized to fit the page. The site keeps the HTML (_config.yml ranks
  ``text/html`` before ``text/latex``); the PDF, which cannot show HTML, takes the LaTeX.
* **SymPy.** An expression wider than a phone's column (:data:`DISPLAY_PT`; the site and the
  PDF show the same rows) is broken over lines (:func:`sympy_latex`): an equation at its sign, a
  sum between its terms, a product at its widest sum, a fraction in its numerator or
  denominator. Widths are estimated with matplotlib's mathtext, which typesets
  within a few per cent of TeX. An expression that fits is printed exactly as SymPy prints it.
"""

from __future__ import annotations

import re
from functools import lru_cache
from html.parser import HTMLParser

#: The width of a cell output in the PDF, in points (the 468 pt text block less the 20 pt indent
#: of outputs); tables are sized against it.
LINE_PT = 448.0
#: The width SymPy output is broken for, in points at 10 pt (an em is 10 pt): a phone's column.
#: The site and the PDF show the same LaTeX, and MathJax keeps a fraction whole
#: (book/static/attnxai-mathjax.js), so an expression is set in rows that a 390 px screen shows
#: whole: its 358 px column holds about 17 em of the site's display maths (about 21 px an em:
#: an equation mathtext measures at 175 pt is 368 px wide there), rows of at most SAFETY times
#: this leave room for a row's indent; the PDF prints the same rows in its wider column.
DISPLAY_PT = 160.0
#: Font size of the PDF's body text, in points (the size mathtext measures at).
FONT_PT = 10.0
#: Text in tables: average advance of a character at 10 pt, in points (serif body font; a
#: little wide on purpose, so that an estimate that fits does fit).
CHAR_PT = 5.0
#: mathtext's widths come within a few per cent of TeX's, less where sub- and superscripts
#: abound (TeX's script fonts are wider than its text fonts scaled down, by up to 15 %): a row
#: is broken when its estimate passes this share of the line.
SAFETY = 0.85


# ---------------------------------------------------------------- tables
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


# ---------------------------------------------------------------- SymPy
@lru_cache(maxsize=4096)
def math_width(tex: str, display: bool = True) -> float:
    """Estimated width in points of maths ``tex`` at :data:`FONT_PT` (mathtext; ``display``:
    fractions in display style, else as in a line of text); for what mathtext cannot parse,
    5 pt per visible character (a command counts as one)."""
    from matplotlib.font_manager import FontProperties

    probe = tex.replace(r"\limits", "").replace(r"\displaystyle", "")
    if display:
        probe = probe.replace(r"\frac", r"\dfrac")
    probe = re.sub(r"\\(Big|big|Bigg|bigg)([lr])?", "", probe)
    try:
        # The layout's width (advances), as TeX sets it: the ink's extents of the glyphs' outlines
        # (TextPath.get_extents) cost more than the parse itself on a long formula.
        with _mathtext_fonts():
            parsed = _path_parser().parse(f"${probe}$", dpi=72,
                                          prop=FontProperties(family="serif", size=FONT_PT))
        return float(parsed.width)
    except (ValueError, RuntimeError, KeyError):
        visible = re.sub(r"\\[A-Za-z]+", "x", tex)      # a command is about one symbol
        return 5.0 * len(re.sub(r"[{}^_&\s]", "", visible))


@lru_cache(maxsize=1)
def _path_parser():
    from matplotlib.mathtext import MathTextParser

    return MathTextParser("path")


class _mathtext_fonts:
    """Measure in Computer Modern, the fonts TeX's maths use, whatever the figures' style."""

    def __enter__(self):
        import matplotlib

        self._ctx = matplotlib.rc_context({"mathtext.fontset": "cm"})
        self._ctx.__enter__()

    def __exit__(self, *exc):
        self._ctx.__exit__(*exc)


def sympy_latex(expr, *, line_pt: float = LINE_PT, printed: str | None = None) -> str:
    """``expr`` as display LaTeX (``$\\displaystyle ...$``) that fits ``line_pt`` points.

    ``printed`` is what SymPy's own formatter gives (default: ``sympy.latex(expr)``); it is
    returned unchanged when it fits. Otherwise the expression is set in an ``aligned`` block,
    broken where a reader breaks it by hand: after the relation of an equation, between the
    terms of a sum, inside the widest sum of a product (``\\Bigl( ... \\Bigr)``), in the
    numerator or the denominator of a fraction. A part that cannot be broken stays whole.
    """
    import sympy as sp

    body = printed if printed is not None else sp.latex(expr)
    body = re.sub(r"^\$+\s*(\\displaystyle\s*)?|\s*\$+$", "", body)
    if math_width(body) <= SAFETY * line_pt:
        return f"$\\displaystyle {body}$"
    rows = _Breaker(line_pt).rows(expr)
    if len(rows) == 1 and rows[0].lstrip("&") == sp.latex(expr):
        return f"$\\displaystyle {body}$"       # nothing to break at
    return "$\\displaystyle \\begin{aligned}" + " \\\\\n".join(rows) + "\\end{aligned}$"


def _gathered(rows: list[str]) -> str:
    """One row as it is, several in a ``gathered`` block (a numerator or a denominator)."""
    if len(rows) == 1:
        return rows[0]
    return (r"\begin{gathered}" + r" \\ ".join(rows[:1] + [_binary(r) for r in rows[1:]])
            + r"\end{gathered}")


def _binary(row: str) -> str:
    """A row that starts with + or - continues a sum: ``{}`` before the sign spaces it as the
    binary operator it is, not as a unary sign."""
    return "{}" + row if row[:1] in "+-" else row


class _Breaker:
    """Rows of an ``aligned`` block for one SymPy expression (see :func:`sympy_latex`)."""

    INDENT = r"\quad "

    def __init__(self, line_pt):
        import sympy as sp

        self.sp = sp
        self.line = line_pt
        self.indent_pt = math_width(r"\quad x") - math_width("x")
        # what a binary sign adds between two terms (its spaces included)
        self.sign_pt = math_width("x + x") - 2 * math_width("x")

    def tex(self, e) -> str:
        return self.sp.latex(e)

    def rows(self, expr) -> list[str]:
        sp = self.sp
        if isinstance(expr, sp.core.relational.Relational):
            lhs = self.tex(expr.lhs)
            rel = {"==": "=", "!=": r"\neq", "<": "<", "<=": r"\leq", ">": ">", ">=": r"\geq"}
            rel = rel.get(expr.rel_op, expr.rel_op)
            head = f"{lhs} &{rel} "
            budget = self.line - math_width(f"{lhs} {rel}")
            parts = self.lines(expr.rhs, budget) if budget >= self.line / 3 else []
            if len(parts) <= 1 and not (parts and self.fits(f"{lhs} {rel} {parts[0]}", self.line)):
                # a long left side, or a right side that does not break and does not fit beside
                # it: the relation starts a row under the left side, both rows from the
                # alignment point (so that the block is no wider than its widest row)
                first, *more = self.lines(expr.rhs, self.line - self.indent_pt)
                return [f"&{lhs}", f"&{self.INDENT}{rel} {first}"] + \
                    ["&" + self.INDENT + _binary(p) for p in more]
            return [head + parts[0]] + ["&" + self.INDENT + _binary(p) for p in parts[1:]]
        parts = self.lines(expr, self.line)
        return ["&" + parts[0]] + ["&" + self.INDENT + _binary(p) for p in parts[1:]]

    def fits(self, tex, budget) -> bool:
        return math_width(tex) <= SAFETY * budget

    def lines(self, e, budget, first=None) -> list[str]:
        """``e`` as one or more rows where possible: the first at most ``first`` wide (default
        ``budget``: it may follow something on its row), the others, which start one indent
        after the alignment point, at most ``budget`` less that indent."""
        sp = self.sp
        first = budget if first is None else first
        whole = self.tex(e)
        if self.fits(whole, first):
            return [whole]
        if isinstance(e, sp.Add):
            return self.sum_lines(e, budget, first)
        if isinstance(e, sp.Mul):
            # the factors as they are: rebuilding num * 1/den would let SymPy distribute a
            # number over a sum (3 (a + b) -> 3 a + 3 b)
            factors = sp.Mul.make_args(e)
            den = [f.base ** -f.exp for f in factors if f.is_Pow and f.exp.is_negative]
            num = [f for f in factors if not (f.is_Pow and f.exp.is_negative)]
            den_tex = self.tex(sp.Mul(*den, evaluate=False)) if den else ""
            num_tex = self.tex(sp.Mul(*num, evaluate=False)) if num else "1"
            if den and not self.fits(den_tex, first):
                # a denominator too wide for the line: the fraction stays one fraction, its
                # denominator (and its numerator, if it is too wide too) set in rows
                den_rows = self.lines(sp.Mul(*den, evaluate=False), first, first - self.indent_pt)
                num_rows = [num_tex] if self.fits(num_tex, first) or not num else \
                    self.lines(sp.Mul(*num, evaluate=False), first, first - self.indent_pt)
                return [rf"\frac{{{_gathered(num_rows)}}}{{{_gathered(den_rows)}}}"]
            return self.product_lines(num, den, budget, first) or [whole]
        return [whole]

    def sum_lines(self, e, budget, first) -> list[str]:
        from sympy.printing.latex import LatexPrinter

        terms = LatexPrinter()._as_ordered_terms(e)
        rows, row, row_w = [], "", 0.0
        for i, term in enumerate(terms):
            negative = term.could_extract_minus_sign()
            tex = self.tex(-term if negative else term)
            if i and self.sp.Add in type(-term if negative else term).__mro__:
                tex = rf"\left({tex}\right)"
            sign = "- " if negative else ("+ " if i else "")
            width = first if not rows else budget - self.indent_pt
            # A row's width is the sum of its terms' and signs' (boxes set side by side): each
            # term is measured once, not every row again as it grows.
            term_w = math_width(tex) + (self.sign_pt if sign else 0.0)
            if row and row_w + term_w > SAFETY * width:
                rows.append(row)
                row, row_w = sign + tex, term_w
            else:
                row, row_w = (row + " " + sign + tex).strip(), row_w + term_w
            if row_w > SAFETY * width:          # one term alone too wide: break it too
                sub = self.lines(-term if negative else term, budget,
                                 width - math_width(sign or "x"))
                if sub != [tex]:                  # rows, or one fraction set in rows
                    head = row[: len(row) - len(tex)]
                    if len(sub) > 1:
                        rows.append(head + sub[0])
                        rows.extend(sub[1:-1])
                        row = sub[-1]
                    else:
                        row = head + sub[0]
                    row_w = math_width(row)
        rows.append(row)
        return rows

    def product_lines(self, num, den, budget, first) -> list[str] | None:
        """The product of factors ``num`` over those of ``den`` with the widest sum among
        ``num`` broken inside ``\\Bigl( ... \\Bigr)``, the other factors (the coefficient)
        before it; None if there is no sum to break."""
        sp = self.sp
        sums = [f for f in num if isinstance(f, sp.Add)]
        if not sums:
            return None
        widest = max(sums, key=lambda f: math_width(self.tex(f)))
        others = [f for f in num if f is not widest]
        factors = others + [1 / d for d in den]
        coeff = sp.Mul(*factors)
        if isinstance(coeff, sp.Add):           # SymPy distributed a number over a sum
            coeff = sp.Mul(*factors, evaluate=False)
        prefix = {"1": "", "-1": "-"}.get(self.tex(coeff), self.tex(coeff))
        inner = self.lines(widest, budget, first - math_width(prefix + r"\Bigl("))
        if len(inner) == 1:
            return None
        return [prefix + r" \Bigl(" + inner[0]] + inner[1:-1] + [inner[-1] + r" \Bigr)"]


# ---------------------------------------------------------------- IPython
def _html_of(obj) -> str | None:
    try:
        return obj._repr_html_()
    except Exception:        # noqa: BLE001 - a table without HTML gets no LaTeX either
        return None


def _table_formatter(obj):
    html = _html_of(obj)
    return table_latex(html) if html and "<table" in html else None


def register(ip=None) -> bool:
    """Install the print forms in IPython ``ip`` (default: the running one); False outside
    IPython. Call after ``sympy.init_printing`` (whose LaTeX it wraps). Idempotent."""
    try:
        from IPython import get_ipython
    except ImportError:       # pragma: no cover - IPython comes with the book's dependencies
        return False
    ip = ip if ip is not None else get_ipython()
    if ip is None:
        return False
    latex = ip.display_formatter.formatters["text/latex"]
    try:
        import pandas as pd
        from pandas.io.formats.style import Styler

        latex.for_type(pd.DataFrame, _table_formatter)
        latex.for_type(Styler, _table_formatter)
    except ImportError:       # pragma: no cover
        pass
    try:
        import sympy as sp
    except ImportError:       # pragma: no cover
        return True
    # sympy.init_printing sets the method _repr_latex_ of SymPy's objects (None when it turns
    # LaTeX off); a formatter registered for the type runs instead of it, and calls it.
    def fitted(obj):
        printed = obj._repr_latex_()
        if printed is None or not isinstance(obj, (sp.Add, sp.Mul, sp.core.relational.Relational)):
            return printed
        return sympy_latex(obj, printed=printed, line_pt=DISPLAY_PT)

    latex.for_type(sp.Basic, fitted)
    return True


__all__ = ["DISPLAY_PT", "LINE_PT", "TABLE_MARK", "fit_columns", "is_number_text", "math_width", "register",
           "sympy_latex", "table_latex", "tex_escape"]
