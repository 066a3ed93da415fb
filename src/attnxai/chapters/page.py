"""The page the chapters' outputs are printed for: the PDF's line, the phone's column for display
maths, the body text's size, a table character's advance (:mod:`~attnxai.chapters.latex_tables`
and :mod:`~attnxai.chapters.latex_maths` size their LaTeX against them).
"""

from __future__ import annotations

__all__ = ["CHAR_PT", "DISPLAY_PT", "FONT_PT", "LINE_PT", "SAFETY"]

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
