"""The print forms of the chapters' outputs (attnxai.chapters.printforms): tables and long SymPy output
get a LaTeX form that says what the site shows and fits the PDF's line. Where XeLaTeX is
installed, the forms are typeset and TeX's own overfull-box report is read."""

import re
import shutil
import subprocess

import numpy as np
import pandas as pd
import pytest
import sympy as sp

from attnxai.chapters import printforms
from attnxai.chapters.printforms import LINE_PT, math_width, sympy_latex, table_latex


def _rows(tex):
    return [r for r in tex.split("\n") if r.endswith(r"\\")]


# ---------------------------------------------------------------- tables
def test_a_styled_table_keeps_its_formats_and_escapes_latex():
    df = pd.DataFrame({"share_of_reviews": [0.1234, 0.5], "command": ["a_b --jobs 2", "x & y"]},
                      index=pd.Index(["neg", "pos"], name="class"))
    tex = table_latex(df.style.format({"share_of_reviews": "{:.1%}"})._repr_html_())
    assert r"12.3\%" in tex and r"50.0\%" in tex            # the Styler's format, % escaped
    assert r"a\_\allowbreak{}b -{}-{}jobs 2" in tex          # _ escaped, -- not a dash
    assert r"x \& y" in tex
    rows = _rows(tex)
    # the index name moves into the header's corner: one header row, two body rows
    assert rows[0].startswith("class & share")
    assert len(rows) == 3
    assert re.search(r"\\begin\{tabular\}\{lrl\}", tex)      # index left, numbers right


def test_hidden_index_and_plain_dataframes():
    df = pd.DataFrame({"a": [1, 2], "b": ["x", "y"]})
    hidden = table_latex(df.style.hide(axis="index")._repr_html_())
    assert _rows(hidden)[0] == r"a & b \\" and r"\begin{tabular}{rl}" in hidden
    plain = table_latex(df._repr_html_())                    # the DataFrame's own HTML
    assert _rows(plain)[1] == r"0 & 1 & x \\"


def test_column_and_row_spans_stay_aligned():
    cols = pd.MultiIndex.from_tuples([("LIME", "mean"), ("LIME", "std"), ("GxI", "mean")])
    rows = pd.MultiIndex.from_tuples([("deletion", "abs"), ("deletion", "positive"),
                                      ("replace", "abs")])
    df = pd.DataFrame(np.arange(9.0).reshape(3, 3), index=rows, columns=cols)
    tex = table_latex(df.style.format("{:.1f}")._repr_html_())
    lines = _rows(tex)
    assert r"\multicolumn{2}{c}{LIME}" in lines[0]
    # every row has the same number of cells; the spanned index cell is blank below
    widths = {len(re.split(r"(?<!\\)&", r)) for r in lines[1:]}
    assert widths == {5}
    assert lines[2].startswith("deletion & abs") and lines[3].startswith(" & positive")


def test_a_wide_table_wraps_text_but_never_below_its_longest_word():
    long = "a long explanation of what this row measures, in many words " * 2
    df = pd.DataFrame({"what": [long, "short"], "value": [1.0, 2.0],
                       "unbreakable": ["x" * 40, "y"]})
    tex = table_latex(df.style.hide(axis="index")._repr_html_())
    widths = [float(w) for w in re.findall(r"p\{([\d.]+)\\linewidth\}", tex)]
    assert widths and sum(widths) <= 1.0
    assert r"\raggedright" in tex
    # the 40-character word keeps its width at the type size chosen
    scale = {"": 1.0, "small": 0.9, "footnotesize": 0.8, "scriptsize": 0.7}[
        (re.search(r"^\{\\(\w+)", tex) or [None, ""])[1]]
    need = 40 * printforms.CHAR_PT * scale / LINE_PT
    spec = re.search(r"\\begin\{tabular\}\{(.*)\}\n", tex).group(1)
    last = spec.rsplit("p{", 1)[-1] if spec.endswith("linewidth}") else None
    assert last is None or float(last.split("\\")[0]) >= need - 1e-3


def test_many_rows_make_a_longtable_and_no_table_is_an_error():
    df = pd.DataFrame({"x": range(30)})
    assert r"\begin{longtable}" in table_latex(df.style._repr_html_()) and r"\endhead" in \
        table_latex(df.style._repr_html_())
    with pytest.raises(ValueError, match="no <table>"):
        table_latex("<p>not a table</p>")


def test_fit_columns_gives_up_excess_in_proportion_and_keeps_minimums():
    assert printforms.fit_columns([10, 20], [5, 5], 100) == [10, 20]
    w = printforms.fit_columns([100, 100], [90, 10], 150)
    assert w[0] >= 90 and w[1] >= 10 and abs(sum(w) - 150) < 1e-9
    # too narrow for the minimums: each column stops at its minimum
    assert printforms.fit_columns([100, 100], [80, 80], 100) == [80, 80]


# ---------------------------------------------------------------- SymPy
def test_an_expression_that_fits_is_printed_as_sympy_prints_it():
    x, y = sp.symbols("x y")
    assert sympy_latex(x**2 + y) == f"$\\displaystyle {sp.latex(x**2 + y)}$"
    assert math_width(sp.latex(x)) < math_width(sp.latex(x**2 + y + sp.sin(x)))


def test_a_long_sum_is_broken_between_its_terms_and_every_term_is_kept():
    xs = sp.symbols("x_1:40")
    expr = sp.Eq(sp.Symbol("S"), sum(sp.exp(x) * x for x in xs))
    tex = sympy_latex(expr)
    assert r"\begin{aligned}" in tex
    rows = tex.removeprefix("$\\displaystyle \\begin{aligned}").removesuffix("\\end{aligned}$")
    rows = rows.split("\\\\\n")
    assert len(rows) > 3 and rows[0].startswith("S &=")
    for row in rows:
        assert math_width(row.replace("&", "")) <= LINE_PT
    for x in xs:
        assert tex.count(f"{sp.latex(x)} e^{{{sp.latex(x)}}}") == 1


def test_a_fraction_breaks_its_numerator_or_its_denominator():
    a = sp.symbols("a_1:30")
    b = sp.Symbol("b")
    wide_num = sp.Mul(3, sum(a), 1 / (b**4 * (b + 1)), evaluate=False)
    tex = sympy_latex(wide_num)
    assert r"\frac{3}{b^{4} \left(b + 1\right)} \Bigl(" in tex and r"\Bigr)" in tex
    wide_den = sp.exp(a[0]) / sum(sp.exp(x * b) for x in a)
    tex = sympy_latex(wide_den)
    assert r"\begin{gathered}" in tex and tex.startswith(r"$\displaystyle \begin{aligned}&\frac{e^{a_{1}}}")


def test_a_fraction_too_wide_for_a_phone_stays_one_fraction_in_rows():
    """Rows for a phone (DISPLAY_PT): a term whose denominator is wider than the row keeps its
    fraction whole, its denominator (and a numerator too wide) set in rows; an equation whose
    right side does not break goes under its left side."""
    a = sp.symbols("a_1:7")
    x = sp.Symbol("x")
    den = sum(sp.exp(ai * x + ai ** 2) for ai in a)            # about 250 pt wide
    assert math_width(sp.latex(den)) > printforms.DISPLAY_PT
    term = sp.exp(a[0] * x) * (a[1] + a[2]) / den
    tex = sympy_latex(sp.Eq(sp.Symbol("S"), term + term.subs(a[0], a[1])),
                      line_pt=printforms.DISPLAY_PT)
    assert tex.count(r"\frac{") == 2 and r"}{\begin{gathered}" in tex
    # every part of the printed LaTeX is still a fraction of the same pieces
    assert tex.count(r"\begin{gathered}") == tex.count(r"\end{gathered}")
    s, d = sp.symbols("s d", positive=True, integer=True)
    eq = sp.Eq(sp.Integral(x ** s * (1 - x) ** (d - s - 1), (x, 0, 1)),
               sp.gamma(d - s) * sp.gamma(s + 1) / sp.gamma(d + 1))
    rows = sympy_latex(eq, line_pt=printforms.DISPLAY_PT).split("\\\\\n")
    assert len(rows) == 2 and rows[1].startswith(r"&\quad = ")
    assert rows[0].startswith(r"$\displaystyle \begin{aligned}&\int")     # both from "&"


def test_the_shortcut_for_expressions_too_wide_changes_no_row(monkeypatch):
    """An expression whose parts already add up to well over the line is not measured whole
    (``_Breaker.too_wide``: mathtext takes seconds on a long derivative); the rows are those of
    measuring everything, from just under the line to many times it, for sums, products,
    fractions and equations, on a phone's line and the page's."""
    from attnxai.chapters import latex_maths

    rng = np.random.default_rng(5)
    a = sp.symbols("a_1:9")
    x = sp.Symbol("x")

    def term(k):
        picks = rng.choice(len(a), size=3)
        return sp.exp(a[picks[0]] * x) * (a[picks[1]] + k) / (a[picks[2]] ** 2 + 1)

    exprs = []
    for n in (2, 3, 5, 9):
        s_ = sum(term(k) for k in range(n))
        exprs += [s_, sp.Eq(sp.Symbol("S"), s_), sp.exp(a[0]) / s_, s_ * (a[1] - x)]
    measured = {}
    for pt in (printforms.DISPLAY_PT, LINE_PT):
        measured[pt] = [sympy_latex(e, line_pt=pt) for e in exprs]
    monkeypatch.setattr(latex_maths._Breaker, "too_wide", lambda self, e, budget: False)
    for pt in (printforms.DISPLAY_PT, LINE_PT):
        assert [sympy_latex(e, line_pt=pt) for e in exprs] == measured[pt], pt


def test_an_unbreakable_wide_expression_is_left_whole():
    x = sp.Symbol("x")
    wide = sp.exp(sp.Add(*[x**k for k in range(1, 60)]))       # a power: no place to break
    assert sympy_latex(wide) == f"$\\displaystyle {sp.latex(wide)}$"


# ---------------------------------------------------------------- IPython
def test_register_adds_latex_beside_html_and_fits_sympy():
    from IPython.core.interactiveshell import InteractiveShell

    ip = InteractiveShell.instance()
    sp.init_printing(use_latex="mathjax", ip=ip)
    assert printforms.register(ip)
    assert printforms.register(ip)                            # twice is harmless
    fmt = ip.display_formatter.format
    data, _ = fmt(pd.DataFrame({"a": [1]}).style.format("{:.2f}"))
    assert {"text/html", "text/latex"} <= set(data) and "1.00" in data["text/latex"]
    x = sp.Symbol("x")
    assert fmt(x + 1)[0]["text/latex"] == f"$\\displaystyle {sp.latex(x + 1)}$"
    long = sum(sp.Symbol(f"y_{{{i}}}") * sp.exp(x * i) for i in range(40))
    tex = fmt(long)[0]["text/latex"]
    assert r"\begin{aligned}" in tex
    # rows a phone shows whole (the PDF prints the same rows)
    rows = tex.removeprefix("$\\displaystyle \\begin{aligned}").removesuffix("\\end{aligned}$")
    assert all(math_width(r.replace("&", "")) <= printforms.DISPLAY_PT for r in rows.split("\\\\\n"))
    # an expression wider than a phone, narrower than the PDF's line: in rows all the same
    mid = sum(sp.Symbol(f"y_{{{i}}}") * x**i for i in range(12))
    assert math_width(sp.latex(mid)) < LINE_PT
    assert r"\begin{aligned}" in fmt(mid)[0]["text/latex"]
    assert printforms.register(None) is True                 # None: the running shell, ip


def test_register_outside_ipython_is_a_no_op():
    """No IPython shell running: ``register()`` installs nothing and says so."""
    import os
    import subprocess
    import sys

    code = "from attnxai.chapters import printforms; print(printforms.register())"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=os.environ, timeout=300, check=True)
    assert out.stdout.strip() == "False"


# ---------------------------------------------------------------- typeset by TeX
@pytest.mark.skipif(shutil.which("xelatex") is None, reason="TeX is not installed")
def test_the_forms_typeset_without_overfull_boxes(tmp_path):
    tables = [
        pd.DataFrame(np.random.default_rng(0).random((6, 13)),
                     columns=[f"column_name_{i}_seconds" for i in range(13)]).style.format("{:.5f}"),
        pd.DataFrame({"command": ["multilayer-lime --profile multilayer --reviews 200 --out "
                                  "results/ml_lime --no-progress"] * 3, "minutes": [1.0, 2.0, 3.0]}
                     ).style.hide(axis="index"),
    ]
    a = sp.symbols("a_1:40")
    maths = [sympy_latex(sp.Eq(sp.Symbol("S"), sum(sp.exp(x) * x for x in a))),
             sympy_latex(sp.Mul(3, sum(a), 1 / (a[0] ** 4 * (a[1] + 1)), evaluate=False)),
             sympy_latex(sp.exp(a[0]) / sum(sp.exp(x * a[1]) for x in a))]
    body = "\n".join(r"\begin{adjustwidth}{20pt}{}" + table_latex(t._repr_html_())
                     + r"\end{adjustwidth}\bigskip" for t in tables)
    body += "\n".join(r"\begin{adjustwidth}{20pt}{}\begin{equation*}\begin{split}"
                      + m.strip("$") + r"\end{split}\end{equation*}\end{adjustwidth}" for m in maths)
    # the PDF's geometry: letter paper, 1 in margins (468 pt), outputs indented by 20 pt
    (tmp_path / "t.tex").write_text(
        r"\documentclass[10pt]{report}\usepackage[letterpaper,hmargin=1in]{geometry}"
        r"\usepackage{amsmath,array,longtable,changepage,fontspec}\setmainfont{FreeSerif}"
        "\n\\begin{document}\n" + body + "\n\\end{document}\n")
    run = subprocess.run(["xelatex", "-interaction=nonstopmode", "t.tex"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=300)
    log = (tmp_path / "t.log").read_text(errors="replace")
    assert run.returncode == 0, log[-3000:]
    overfull = [float(w) for w in re.findall(r"Overfull \\hbox \(([\d.]+)pt", log)]
    assert max(overfull, default=0) < 3, log[-3000:]
