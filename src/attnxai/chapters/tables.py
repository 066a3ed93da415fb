"""Tables made for readers: what a chapter shows of a ``DataFrame``.

:func:`table` turns a frame into a :class:`ReaderTable`: human headers (``headers=``, units in
them: "time (s)"), every number to 3 significant digits unless a column's format says otherwise
(``formats=``: a format string, a function, or one of :data:`KINDS`), whole numbers as whole
numbers with thousands separated, booleans as words, a missing value as a dash, never ``-0``.
One column is formatted one way: a column whose numbers span more than six orders of
magnitude, or reach below 1e-4, is written in scientific notation throughout.

Where it is shown:

* the site and Jupyter get its HTML (``_repr_html_``). A table given ``phone=`` (the columns a
  narrow screen shows, or ``"transpose"``) carries a second, narrow view beside the full one:
  the book's script (book/static/attnxai.js) shows it, with the full table collapsed under it,
  wherever the full table is wider than its column (a phone), and the full table elsewhere;
  without the book's script (Jupyter, Colab) the full table shows;
* the PDF gets the full table as LaTeX (``_repr_latex_``, :func:`attnxai.chapters.printforms.table_latex`:
  columns sized to fit the page).

    table(frame, headers={"tau_loo": "τ-LOO"}, formats={"share": "pct"}, phone=["method", "τ-LOO"])
"""

from __future__ import annotations

import hashlib
import html
import math
import re
import numbers
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from . import printforms
from .prose import number

#: How a missing value (NaN, None) reads in a table.
MISSING = "–"
#: Booleans as words: (true, false).
BOOLEANS = ("yes", "no")
#: A column's numbers are written in scientific notation when one of them (not zero) is
#: smaller than this, or when the largest is more than SPAN times the smallest.
SMALL = 1e-4
SPAN = 1e6


#: The book's headers for the names its studies and summaries give their columns (and rows:
#: a metric named in an index): every table reads them so unless its ``headers=`` say otherwise.
HEADERS = {
    # (long words with soft hyphens: a phone's column breaks them there, print at \-)
    "comprehensiveness": "compre\u00adhensive\u00adness", "sufficiency": "suffi\u00adciency",
    "tau_loo": "τ-LOO", "deletion_auc": "deletion area", "insertion_auc": "insertion area",
    "n_rationales": "rationales", "n": "n",
    "err2_mean": "norm-2 error (mean)", "relerr_mean": "relative error (mean)",
    "spearman_mean": "Spearman ρ (mean)", "mean_abs": "mean of |·|",
    "test_accuracy": "test accuracy", "valid_accuracy": "validation accuracy",
    "train_accuracy": "training accuracy", "train_accuracy_running": "training accuracy",
    "train_loss": "training loss", "valid_loss": "validation loss",
    "train_seconds": "training time (s)", "best_epoch": "kept epoch", "seconds": "time (s)",
    "wall_seconds": "wall time (s)", "run_seconds": "run time (s)",
    "explanations_per_second": "explanations per second",
    "speedup_vs_jobs1_best": "speed-up against --jobs 1", "load_1min_after": "load average after",
    "test_index": "test review", "n_tokens": "tokens", "n_words": "words",
    "coef_pearson": "Pearson r of the coefficients", "coef_rel_l2": "relative norm-2 difference",
    "top10_shared": "top-10 words shared", "max_layer_corr_change": "largest change of a layer's r",
    "rollout_corr_change": "change of rollout's r", "lime_seconds_fp32": "LIME, fp32 (s)",
    "lime_seconds_bf16": "LIME, bf16 (s)", "lime_cpu_seconds_fp32": "LIME CPU, fp32 (s)",
    "lime_cpu_seconds_bf16": "LIME CPU, bf16 (s)",
    "p10": "10th percentile", "p90": "90th percentile", "ci_low": "95 % CI, low",
    "ci_high": "95 % CI, high", "max_rel_error": "largest relative error",
    "max_abs_diff": "largest |difference|", "max_abs_grad": "largest |gradient|",
}


def _sci(x: float, digits: int) -> str:
    if x == 0:                                  # an exact zero reads 0, not 0.00e0
        return "0"
    mantissa, exponent = f"{x:.{max(digits - 1, 0)}e}".split("e")
    return f"{mantissa}e{int(exponent)}"


#: Named formats for ``formats=``: a share as a percentage, a whole number, a number in
#: scientific notation, a signed number, text as it is.
KINDS: dict[str, Callable[[Any, int], str]] = {
    "pct": lambda x, d: f"{number(100 * float(x), d)} %",
    "int": lambda x, d: f"{int(round(float(x))):,}",
    "sci": lambda x, d: _sci(float(x), d),
    "signed": lambda x, d: ("+" if float(x) > 0 and number(x, d) != "0" else "") + number(x, d),
    "text": lambda x, d: str(x),
}


def _missing(x) -> bool:
    if x is None:
        return True
    try:
        return isinstance(x, numbers.Real) and math.isnan(float(x))
    except (TypeError, ValueError):
        return False


def _is_bool(x) -> bool:
    return isinstance(x, bool) or type(x).__name__ == "bool_"


def _is_number(x) -> bool:
    return isinstance(x, numbers.Real) and not _is_bool(x)


def column_formatter(values: Sequence, digits: int = 3) -> Callable[[Any], str]:
    """How the cells of one column read (see the module): whole numbers as such, other numbers
    to ``digits`` significant digits, in scientific notation when the column spans too many
    orders of magnitude, booleans as words, anything else as its text."""
    nums = [float(v) for v in values if _is_number(v) and not _missing(v)]
    finite = [abs(v) for v in nums if math.isfinite(v) and v != 0]
    whole = bool(nums) and all(math.isfinite(v) and float(v).is_integer() for v in nums)
    sci = bool(finite) and not whole and (min(finite) < SMALL or max(finite) / min(finite) > SPAN)

    def cell(x) -> str:
        if _missing(x):
            return MISSING
        if _is_bool(x):
            return BOOLEANS[0] if x else BOOLEANS[1]
        if _is_number(x):
            x = float(x)
            if not math.isfinite(x):
                return "∞" if x > 0 else "−∞"
            if whole:
                return f"{int(x):,}"
            if sci and x != 0:
                return _sci(x, digits)
            return number(x, digits)
        return str(x)

    return cell


_NEGATIVE_ZERO = re.compile(r"^([-\u2212])(0(?:[.,]0*)?)(?![\d.,]*[1-9])")


def _no_negative_zero(text: str) -> str:
    """"-0.000" (a small negative number rounded) as "0.000"."""
    return _NEGATIVE_ZERO.sub(r"\2", text)


def _format(spec, digits: int) -> Callable[[Any], str]:
    if isinstance(spec, tuple) and len(spec) == 2 and spec[0] in KINDS:
        spec, digits = spec                     # a kind with its own significant digits
    if callable(spec):
        return lambda x: MISSING if _missing(x) else str(spec(x))
    if spec in KINDS:
        kind = KINDS[spec]
        return lambda x: MISSING if _missing(x) else kind(x, digits)
    if isinstance(spec, str) and "{" in spec:
        return lambda x: MISSING if _missing(x) else _no_negative_zero(spec.format(x))
    raise ValueError(f"a column format is a format string ('{{:.1%}}'), a function, one of "
                     f"{', '.join(KINDS)} or (one of them, its significant digits); got {spec!r}")


def formatted(frame, *, headers: Mapping | None = None, formats: Mapping | None = None,
              row_formats: Mapping | None = None, digits: int = 3, missing: str = MISSING):
    """``frame`` (a DataFrame or a Series) as a DataFrame of the strings a reader sees, columns
    and index renamed by ``headers``. ``formats`` is keyed by the original column names,
    ``row_formats`` by the original row labels (a table of different quantities, one a row);
    ``missing`` is what a missing value reads."""
    import pandas as pd

    if isinstance(frame, pd.Series):
        frame = frame.to_frame()
    if not isinstance(frame, pd.DataFrame):
        raise TypeError(f"table: a pandas DataFrame or Series, got {type(frame).__name__}")
    formats = dict(formats or {})
    unknown = [k for k in formats if k not in frame.columns]
    if unknown:
        raise ValueError(f"table: formats for columns the table does not have: {unknown}; "
                         f"its columns: {list(frame.columns)}")
    row_formats = dict(row_formats or {})
    unknown = [k for k in row_formats if k not in frame.index]
    if unknown:
        raise ValueError(f"table: row formats for rows the table does not have: {unknown}; "
                         f"its rows: {list(frame.index)}")
    out = pd.DataFrame(index=frame.index)
    plain = [label not in row_formats for label in frame.index]
    rows = {label: _format(spec, digits) for label, spec in row_formats.items()}
    for j, name in enumerate(frame.columns):
        values = frame.iloc[:, j].tolist()
        cell = (_format(formats[name], digits) if name in formats
                else column_formatter([v for v, keep in zip(values, plain) if keep], digits))
        out[j] = [missing if _missing(v) else cell(v) if keep else rows[label](v)
                  for v, keep, label in zip(values, plain, frame.index)]
    out.columns = frame.columns
    if not isinstance(frame.index, pd.RangeIndex):       # row labels read like the cells
        levels = []
        for k in range(frame.index.nlevels):
            values = list(frame.index.get_level_values(k))
            cell = column_formatter(values, digits)
            levels.append([cell(v) if _is_number(v) or _is_bool(v) or _missing(v) else v
                           for v in values])
        out.index = (pd.Index(levels[0], name=frame.index.name) if frame.index.nlevels == 1 else
                     pd.MultiIndex.from_arrays(levels, names=frame.index.names))
    headers = {**HEADERS, **dict(headers or {})}
    if headers:
        out = out.rename(columns=headers, index=headers)
        out = out.rename_axis(index=[headers.get(n, n) for n in out.index.names],
                              columns=[headers.get(n, n) for n in out.columns.names])
    return out


class ReaderTable:
    """A table as the book shows it (made by :func:`table`): HTML for the site and Jupyter,
    LaTeX for the PDF. ``frame`` holds the strings shown; ``phone``, the narrow view (a
    DataFrame of strings) or None."""

    def __init__(self, frame, *, index: bool, phone=None, phone_index: bool = False,
                 caption: str | None = None, wrap: bool = False):
        self.frame = frame
        self.wrap = wrap
        self.index = index
        self.phone = phone
        self.phone_index = phone_index
        self.caption = caption

    def _html(self, frame, index: bool) -> str:
        from pandas.io.formats.style import Styler

        numeric = frame.apply(lambda col: col.map(
            lambda v: "attnxai-num" if isinstance(v, str) and printforms.is_number_text(v)
            else ""))
        # an id of its own per table (the page's HTML ids are unique), the same at every run
        uid = hashlib.sha1(frame.to_json().encode()).hexdigest()[:10]
        styler = Styler(frame, uuid=uid, cell_ids=False).set_td_classes(numeric)
        if not index:
            styler = styler.hide(axis="index")
        classes = "dataframe attnxai-table" + (" attnxai-table-wrap" if self.wrap else "")
        return styler.set_table_attributes(f'class="{classes}"').to_html()

    def _repr_html_(self) -> str:
        full = self._html(self.frame, self.index)
        caption = (f'<p class="attnxai-table-caption">{html.escape(self.caption)}</p>'
                   if self.caption else "")
        if self.phone is None:
            return f'<div class="attnxai-tables">{caption}{full}</div>'
        n = self.frame.shape[1]
        return (f'<div class="attnxai-tables" data-attnxai-phone="1">{caption}'
                f'<div class="attnxai-table-full">{full}</div>'
                f'<div class="attnxai-table-phone" hidden>'
                f'{self._html(self.phone, self.phone_index)}'
                f'<details class="attnxai-table-more"><summary>The whole table ({n} columns; '
                f'it scrolls sideways)</summary>{self._html(self.frame, self.index)}</details>'
                "</div></div>")

    def _repr_latex_(self) -> str:
        return printforms.table_latex(self._html(self.frame, self.index))

    def __repr__(self) -> str:
        return self.frame.to_string(index=self.index)


def _flat(frame):
    """``frame`` with its row labels, and its column labels, in one level each (several joined
    by commas): a phone's narrow view has one column of labels, and one header row."""
    import pandas as pd

    out = frame.copy()
    if out.index.nlevels > 1:
        names = [n for n in out.index.names if n]
        out.index = pd.Index([", ".join(str(x) for x in key if str(x)) for key in out.index],
                             name=", ".join(map(str, names)) or None)
    if out.columns.nlevels > 1:
        out.columns = [", ".join(str(x) for x in key if str(x)) for key in out.columns]
    return out


def table(frame, *, headers: Mapping | None = None, formats: Mapping | None = None,
          row_formats: Mapping | None = None, digits: int = 3, missing: str = MISSING,
          index: bool | None = None,
          phone: Sequence | str | None = None, caption: str | None = None,
          wrap: bool = False) -> ReaderTable:
    """``frame`` (a DataFrame or Series) as a reader's table; ``display()`` it or leave it as a
    cell's last expression.

    ``headers`` renames columns, index names and row labels (original name -> header, with its
    unit), over the book's own names for its studies' columns (:data:`HEADERS`: ``tau_loo``
    reads τ-LOO);
    ``formats`` gives a column (by its original name) its own format: a format string
    (``"{:.1%}"``), a function of the value, one of :data:`KINDS` (``"pct"``, ``"int"``,
    ``"sci"``, ``"signed"``, ``"text"``) or such a kind with its own significant digits
    (``("pct", 4)``: 80.19 %, where the digits matter); ``row_formats`` the same for a row (by
    its original label: a table of different quantities, one a row); ``missing``: what a
    missing value reads (default a dash: say what the absence means where it means something);
    other columns read to ``digits`` significant digits
    (:func:`column_formatter`). ``index``: show the index as row labels (default: unless it is
    the default 0, 1, 2, ...). ``phone``: the columns (original names) a phone shows, the full
    table collapsed under them, or ``"transpose"`` (rows and columns swapped: a table of few
    rows and many columns); None when the table fits a phone as it is. Raises ``ValueError``
    for a format or a phone column the table does not have. ``wrap``: long words (commands,
    hashes) may break anywhere, so that a table of text fits a phone as it is.
    """
    import pandas as pd

    if index is None:
        index = not (isinstance(frame.index, pd.RangeIndex) and frame.index.name is None)
    shown = formatted(frame, headers=headers, formats=formats, row_formats=row_formats,
                      digits=digits, missing=missing)
    narrow, narrow_index = None, index
    if isinstance(phone, str):
        if phone != "transpose":
            raise ValueError(f"table: phone is a list of columns or 'transpose', got {phone!r}")
        narrow, narrow_index = _flat((shown if index else shown.reset_index(drop=True)).T), True
    elif phone is not None:
        source = frame.to_frame() if isinstance(frame, pd.Series) else frame
        missing = [c for c in phone if c not in source.columns]
        if missing:
            raise ValueError(f"table: phone columns the table does not have: {missing}; "
                             f"its columns: {list(source.columns)}")
        positions = [list(source.columns).index(c) for c in phone]
        narrow = _flat(shown.iloc[:, positions])
    return ReaderTable(shown, index=index, phone=narrow, phone_index=narrow_index,
                       caption=caption, wrap=wrap)


def mean_interval(row: Mapping, *, signed: bool = False, std: bool = False) -> str:
    """A mean with its 95 % interval as a table cell: ``0.123 [0.100, 0.150]`` (``signed``:
    ``+0.123 [+0.100, +0.150]``; ``std``: ``0.123 ± 0.045  [0.100, 0.150]``); never ``-0.000``.
    ``row``: a mapping (a row of a summary) with ``mean``, ``ci_low``, ``ci_high`` and, for
    ``std``, ``std``."""

    def f(x):                                    # never "-0.000" (nor "+-0.000")
        text = _no_negative_zero(f"{x:.3f}")
        return "+" + text if signed and not text.startswith("-") else text

    spread = f" ± {f(row['std']).lstrip('+')} " if std else ""
    return f"{f(row['mean'])}{spread} [{f(row['ci_low'])}, {f(row['ci_high'])}]"


__all__ = ["BOOLEANS", "HEADERS", "KINDS", "MISSING", "ReaderTable", "column_formatter",
           "formatted", "mean_interval", "table"]

