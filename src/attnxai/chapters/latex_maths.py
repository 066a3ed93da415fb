"""A SymPy expression's LaTeX broken over lines to fit a width (:func:`sympy_latex`): an equation at
its sign, a sum between its terms, a product at its widest sum, a fraction in its numerator or
denominator; widths estimated with matplotlib's mathtext (:func:`math_width`), within a few per
cent of TeX.
"""

from __future__ import annotations

import math
import re
from functools import lru_cache

from .page import FONT_PT, LINE_PT, SAFETY

__all__ = ["math_width", "sympy_latex"]

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
    breaker = _Breaker(line_pt)
    if not breaker.too_wide(expr, line_pt) and math_width(body) <= SAFETY * line_pt:
        return f"$\\displaystyle {body}$"
    rows = breaker.rows(expr)
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

    def fits(self, tex, budget, e=None) -> bool:
        """Whether ``tex`` (the LaTeX of ``e``, if given) fits ``budget``."""
        if e is not None and self.too_wide(e, budget):
            return False
        return math_width(tex) <= SAFETY * budget

    #: How much wider than its budget an expression's parts must add up to before it is taken
    #: as too wide without measuring it whole (the parts are set side by side, so the whole is
    #: at least as wide as they are added; the margin covers what a part printed alone differs).
    MARGIN = 1.25

    def too_wide(self, e, budget) -> bool:
        """Whether ``e`` is certainly wider than ``budget``, from its parts: a sum's terms, a
        product's factors (numbers left out) or an equation's sides added; a fraction's numerator
        or denominator alone; each part measured only where it is not itself too wide. False
        means: measure it whole. mathtext takes 10 s to parse the whole of a long derivative
        that is 13 times too wide; its parts, far less."""
        sp = self.sp
        if isinstance(e, sp.core.relational.Relational):
            parts = (e.lhs, e.rhs)
        elif isinstance(e, sp.Add):
            parts = e.args
        elif isinstance(e, sp.Mul):
            factors = sp.Mul.make_args(e)
            den = [f.base ** -f.exp for f in factors if f.is_Pow and f.exp.is_negative]
            num = [f for f in factors if not (f.is_Pow and f.exp.is_negative)]
            if den:
                return any(self.too_wide(sp.Mul(*part, evaluate=False), budget)
                           for part in (num, den) if part)
            parts = [f for f in factors if not f.is_Number]
        else:
            return False
        total, limit = 0.0, SAFETY * budget * self.MARGIN
        for part in parts:
            if self.too_wide(part, budget):
                return True
            total += math_width(self.tex(part))
            if total > limit:
                return True
        return False

    def lines(self, e, budget, first=None) -> list[str]:
        """``e`` as one or more rows where possible: the first at most ``first`` wide (default
        ``budget``: it may follow something on its row), the others, which start one indent
        after the alignment point, at most ``budget`` less that indent."""
        sp = self.sp
        first = budget if first is None else first
        whole = self.tex(e)
        if self.fits(whole, first, e):
            return [whole]
        if isinstance(e, sp.Add):
            return self.sum_lines(e, budget, first)
        if isinstance(e, sp.Mul):
            # the factors as they are: rebuilding num * 1/den would let SymPy distribute a
            # number over a sum (3 (a + b) -> 3 a + 3 b)
            factors = sp.Mul.make_args(e)
            den = [f.base ** -f.exp for f in factors if f.is_Pow and f.exp.is_negative]
            num = [f for f in factors if not (f.is_Pow and f.exp.is_negative)]
            den_e = sp.Mul(*den, evaluate=False) if den else None
            num_e = sp.Mul(*num, evaluate=False) if num else None
            den_tex = self.tex(den_e) if den else ""
            num_tex = self.tex(num_e) if num else "1"
            if den and not self.fits(den_tex, first, den_e):
                # a denominator too wide for the line: the fraction stays one fraction, its
                # denominator (and its numerator, if it is too wide too) set in rows
                den_rows = self.lines(sp.Mul(*den, evaluate=False), first, first - self.indent_pt)
                num_rows = [num_tex] if not num or self.fits(num_tex, first, num_e) else \
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
            whole_w = math.inf if self.too_wide(-term if negative else term, width) else \
                math_width(tex)
            term_w = whole_w + (self.sign_pt if sign else 0.0)
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
        # one sum is the widest without measuring it (a long one takes mathtext seconds)
        widest = sums[0] if len(sums) == 1 else max(sums, key=lambda f: math_width(self.tex(f)))
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
