"""The chapters' tables (attnxai.chapters.tables): human headers, one number format per column
(3 significant digits, whole numbers as such, scientific notation only where a column needs it,
booleans as words, a dash for a missing value, never -0), a narrow view for a phone beside the
full table, and the same full table as LaTeX for the PDF."""

import math
import re

import numpy as np
import pandas as pd
import pytest

from attnxai.chapters import printforms, tables
from attnxai.chapters.tables import table


def _cells(t, column):
    return t.frame[column].tolist()


def test_numbers_read_to_three_significant_digits_one_format_per_column():
    df = pd.DataFrame({"float": [0.123456, 12.3456, -0.0004],
                       "whole": [13.0, 28.0, 67.0],
                       "tiny": [3.9968028886505635e-15, 0.2, 0.5],
                       "big": [25000, 1234567, 3],
                       "flag": [True, False, np.True_],
                       "gap": [np.nan, 1.5, None],
                       "text": ["a", "b", "c"]})
    t = table(df)
    assert _cells(t, "float") == ["0.123", "12.3", "-0.000400"]
    assert _cells(t, "whole") == ["13", "28", "67"]              # not 13.0, 28.0, 67
    assert _cells(t, "tiny") == ["4.00e-15", "2.00e-1", "5.00e-1"]   # one notation per column
    assert _cells(t, "big") == ["25,000", "1,234,567", "3"]
    assert _cells(t, "flag") == ["yes", "no", "yes"]
    assert _cells(t, "gap") == [tables.MISSING, "1.50", tables.MISSING]
    assert _cells(t, "text") == ["a", "b", "c"]
    assert not t.index                    # a default 0, 1, 2 index is not shown
    assert "3.9968028886505635e-15" not in t._repr_html_()


def test_formats_by_column_and_by_row_and_no_negative_zero():
    df = pd.DataFrame({"share": [0.8019, 0.5], "gap": [-0.00004, 0.25], "n": [5000.0, 12.0]},
                      index=["accuracy", "other"])
    t = table(df, formats={"share": ("pct", 4), "gap": "{:.3f}"}, row_formats={"other": "sci"})
    assert _cells(t, "share") == ["80.19 %", "5.00e-1"]
    assert _cells(t, "gap") == ["0.000", "2.50e-1"]               # "-0.000" reads 0.000
    assert _cells(t, "n") == ["5,000", "1.20e1"]
    assert _cells(table(df, formats={"gap": "sci"}), "gap") == ["-4.00e-5", "2.50e-1"]
    assert _cells(table(pd.DataFrame({"x": [0.0, 3e-52]}), formats={"x": "sci"}), "x") == \
        ["0", "3.00e-52"]                                           # an exact zero reads 0
    assert t.index                                                  # a named index is shown
    with pytest.raises(ValueError, match="columns the table does not have: \\['nope'\\]"):
        table(df, formats={"nope": "pct"})
    with pytest.raises(ValueError, match="rows the table does not have"):
        table(df, row_formats={"nope": "pct"})
    with pytest.raises(ValueError, match="a format string"):
        table(df, formats={"share": "percent"})
    assert _cells(table(df, formats={"share": lambda v: f"<{v}>"}), "share") == ["<0.8019>",
                                                                                 "<0.5>"]


def test_headers_the_books_names_and_a_table_missing_text():
    df = pd.DataFrame({"tau_loo": [0.1, np.nan], "deletion_auc": [0.5, 0.6], "mine": [1, 2]},
                      index=pd.Index(["tau_loo", "x"], name="metric"))
    t = table(df, headers={"mine": "mine (s)", "metric": "measure"}, missing="not run")
    assert list(t.frame.columns) == ["τ-LOO", "deletion area", "mine (s)"]
    assert list(t.frame.index) == ["τ-LOO", "x"] and t.frame.index.name == "measure"
    assert _cells(t, "τ-LOO") == ["0.100", "not run"]
    # a header given here wins over the book's
    assert list(table(df, headers={"tau_loo": "tau"}).frame.columns)[0] == "tau"


def test_multi_level_rows_and_columns_read_like_cells():
    rows = pd.MultiIndex.from_tuples([("delete", True), ("replace", False)],
                                     names=["mode", "distinct"])
    cols = pd.MultiIndex.from_tuples([("error", "tau_loo"), ("slope", "tau_loo")])
    t = table(pd.DataFrame([[1e-11, -0.5], [2e-12, -0.48]], index=rows, columns=cols))
    assert list(t.frame.index) == [("delete", "yes"), ("replace", "no")]
    assert list(t.frame.columns) == [("error", "τ-LOO"), ("slope", "τ-LOO")]
    assert t.frame.iloc[0, 0] == "1.00e-11"


def test_html_for_the_site_latex_for_the_pdf():
    df = pd.DataFrame({"method": ["LIME", "GxI"], "share": [0.5, 0.25]})
    t = table(df, formats={"share": "pct"})
    html = t._repr_html_()
    assert html.count("<table") == 1 and 'class="dataframe attnxai-table"' in html
    assert re.search(r'<td class="[^"]*attnxai-num[^"]*"\s*>50.0 %</td>', html)
    assert "data-attnxai-phone" not in html
    tex = t._repr_latex_()
    assert tex.startswith(printforms.TABLE_MARK)
    assert r"50.0 \%" in tex and r"\begin{tabular}{lr}" in tex       # text left, numbers right
    # two tables of the page have two ids; the same table has the same id at every run
    other = table(df.assign(share=[0.1, 0.2]))._repr_html_()
    ident = re.compile(r'<table id="([^"]+)"')
    assert ident.search(html).group(1) != ident.search(other).group(1)
    assert ident.search(table(df, formats={"share": "pct"})._repr_html_()).group(1) == \
        ident.search(html).group(1)
    assert "attnxai-table-wrap" in table(df, wrap=True)._repr_html_()


def test_a_phone_gets_fewer_columns_the_full_table_collapsed_under_them():
    df = pd.DataFrame({"method": ["LIME", "GxI"], "comprehensiveness": [0.39, 0.36],
                       "sufficiency": [0.1, 0.2], "tau_loo": [0.3, 0.4]})
    t = table(df, phone=["method", "tau_loo"])
    html = t._repr_html_()
    full, rest = html.split('<div class="attnxai-table-phone" hidden>')
    assert 'data-attnxai-phone="1"' in full and full.count("<table") == 1
    narrow, collapsed = rest.replace("\u00ad", "").split('<details class="attnxai-table-more">')
    assert len(re.findall(r"<th[ >]", narrow)) == 2 and "τ-LOO" in narrow and "sufficiency" not in narrow
    assert "The whole table (4 columns" in collapsed and "sufficiency" in collapsed
    # print shows the full table, once
    tex = t._repr_latex_()
    # a long header word breaks at its soft hyphens: on a phone, and in print at \-
    assert tex.count(r"\begin{tabular}") == 1 and r"suffi\-{}ciency" in tex
    assert "suffi\u00adciency" in html
    with pytest.raises(ValueError, match="phone columns the table does not have"):
        table(df, phone=["nope"])
    with pytest.raises(ValueError, match="'transpose'"):
        table(df, phone="sideways")


def test_a_phone_gets_a_wide_table_transposed():
    df = pd.DataFrame({"a": [1.0], "b": [2.5], "c": [True]}, index=pd.Index(["run"], name="what"))
    t = table(df, phone="transpose")
    assert list(t.phone.index) == ["a", "b", "c"] and list(t.phone.columns) == ["run"]
    assert t.phone["run"].tolist() == ["1", "2.50", "yes"] and t.phone_index


def test_column_formatter_on_its_own():
    cell = tables.column_formatter([1e-12, 0.5, math.inf, -math.inf])
    assert [cell(x) for x in (1e-12, 0.5, math.inf, -math.inf)] == ["1.00e-12", "5.00e-1", "∞",
                                                                     "−∞"]
    assert tables.column_formatter([0.1234], digits=2)(0.1234) == "0.12"
    # a column whose numbers span more than SPAN goes scientific, else it stays fixed
    assert tables.column_formatter([1.5, 2e6])(1.5) == "1.50e0"
    assert tables.column_formatter([1.5, 2e5])(2e5) == "200,000"
    assert tables.column_formatter([1.0, 2e6])(2e6) == "2,000,000"       # whole numbers stay
    with pytest.raises(TypeError, match="DataFrame or Series"):
        table([1, 2])


def test_a_mean_with_its_interval_as_a_cell():
    row = {"mean": 0.1234, "ci_low": -0.0004, "ci_high": 0.2, "std": 0.05}
    assert tables.mean_interval(row) == "0.123 [0.000, 0.200]"            # never -0.000
    assert tables.mean_interval(row, signed=True) == "+0.123 [+0.000, +0.200]"
    assert tables.mean_interval(row, std=True) == "0.123 ± 0.050  [0.000, 0.200]"
    assert tables.mean_interval({"mean": -0.5, "ci_low": -0.7, "ci_high": -0.3},
                                signed=True) == "-0.500 [-0.700, -0.300]"
