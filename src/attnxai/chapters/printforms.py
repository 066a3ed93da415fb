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

The forms are built by :mod:`~attnxai.chapters.latex_tables` and
:mod:`~attnxai.chapters.latex_maths` against the page of :mod:`~attnxai.chapters.page`; this
module installs them and is where the chapters and the book's extension import them from.
"""

from __future__ import annotations

from .latex_maths import math_width, sympy_latex
from .latex_tables import TABLE_MARK, fit_columns, is_number_text, table_latex, tex_escape
from .page import CHAR_PT, DISPLAY_PT, FONT_PT, LINE_PT

__all__ = ["CHAR_PT", "DISPLAY_PT", "FONT_PT", "LINE_PT", "TABLE_MARK", "fit_columns",
           "is_number_text", "math_width", "register", "sympy_latex", "table_latex", "tex_escape"]


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
