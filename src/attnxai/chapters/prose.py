"""Numbers for the chapters' prose: a chapter's sentences are plain Markdown a writer edits, and
the numbers in them come from the cells that computed them.

* :func:`glue` records values under names, without output; the Markdown then says
  ``{glue:text}`name:.1%``` (myst-nb's glue: the number formatted where it is read). It writes
  myst-nb's glue protocol itself (a ``display_data`` with ``scrapbook`` metadata, papermill's
  MIME prefix), so a chapter runs where myst-nb is not installed (Colab, a bare Jupyter); there
  the Markdown shows the roles as written.
* :func:`glue_md` records a Markdown fragment (a list of words in code, a clause with maths):
  ``{glue:md}`name:myst```. For a sentence that must branch on the data, glue the words that
  change; the sentence stays in the Markdown (``tests/chapters/test_glue_keys.py``).
* :func:`paired_shift` says what paired per-review differences show (a signed-rank test), so
  that a sentence about a direction follows the data.
* :func:`times_against` and :func:`quadrature_against` compare two errors in words ("12 times",
  "3 times smaller than"); :func:`interval_verdict` says where an interval lies from 0;
  :func:`predicted_class` names the class two logits predict.
* :func:`number`, :func:`signed`, :func:`pct`, :func:`ratio` and :func:`interval` format a
  number for reading (significant digits, no negative zero, thousands separated, "x" for a
  ratio); glued strings use them where a format spec cannot say it.
"""

from __future__ import annotations

import math
import numbers

#: myst-nb's glue: the MIME prefix of a value recorded without display (papermill's), and the
#: metadata key that names it (scrapbook's).
GLUE_PREFIX = "application/papermill.record/"


def _plain(name: str, value):
    """``value`` as a Python scalar or string (numpy scalars unwrapped): myst-nb reads a glued
    value back from its ``repr``, which must be a literal."""
    if hasattr(value, "item") and getattr(value, "shape", None) == ():
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, (numbers.Real, str)):
        raise TypeError(f"glue {name!r}: a number or a string, got {type(value).__name__} "
                        f"({value!r:.60}); glue words rather than a flag, format a list first")
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        value = float(value)
        if not math.isfinite(value):
            raise ValueError(f"glue {name!r}: {value} is not a number a sentence can state")
        return value + 0.0                        # no negative zero
    return value


def _record(name: str, bundle: dict[str, str]) -> None:
    from IPython.display import display

    if not name.isidentifier():
        raise ValueError(f"glue name {name!r}: letters, digits and underscores only")
    display({GLUE_PREFIX + k: v for k, v in bundle.items()}, raw=True,
            metadata={"scrapbook": {"name": name, "mime_prefix": GLUE_PREFIX}})


def glue(**values) -> None:
    """Record each value (a number or a string) under its name for the chapter's Markdown
    (``{glue:text}`name``` or ``{glue:text}`name:.3f```); nothing is displayed."""
    for name, value in values.items():
        _record(name, {"text/plain": repr(_plain(name, value))})


def glue_md(**fragments: str) -> None:
    """Record Markdown fragments (MyST: maths, code, emphasis) for ``{glue:md}`name:myst```."""
    for name, text in fragments.items():
        if not isinstance(text, str):
            raise TypeError(f"glue_md {name!r}: Markdown text, got {type(text).__name__}")
        _record(name, {"text/markdown": text, "text/plain": repr(text)})


# ---------------------------------------------------------------- numbers for reading
def number(x: float, digits: int = 3) -> str:
    """``x`` to ``digits`` significant digits, as a reader writes it: ``0.0123``, ``1.50``,
    ``20`` (19.8), ``3.1e-07`` for a tiny one; a number with more whole digits than ``digits``
    keeps them all (``197``, ``2,097,150``: no ``2.1e+06``); never ``-0``."""
    x = float(x)
    if not math.isfinite(x):
        raise ValueError(f"{x} is not a number to print")
    if x == 0:
        return "0"
    magnitude = math.floor(math.log10(abs(x)))
    if magnitude < -4:
        return f"{x:.{max(digits - 1, 0)}e}"
    decimals = max(digits - 1 - magnitude, 0)
    text = f"{round(x, decimals):,.{decimals}f}"
    if decimals == 0 and magnitude + 1 > digits:       # whole and longer than asked: exact
        text = f"{round(x):,}"
    return "0" if float(text.replace(",", "")) == 0 else text


def signed(x: float, digits: int = 3) -> str:
    """:func:`number` with its sign always written: ``+0.12``, ``-0.0012``, ``0`` (no ``+0``)."""
    text = number(x, digits)
    return text if text == "0" or text.startswith("-") else "+" + text


def predicted_class(logits) -> str:
    """The class two logits ``(f_0, f_1)`` predict, as a sentence says it: "positive" when
    ``f_1 > f_0``, else "negative" (a tie predicts class 0, as ``argmax`` does)."""
    f0, f1 = (float(v) for v in logits)
    return "positive" if f1 > f0 else "negative"


def pct(x: float, digits: int = 2) -> str:
    """A share (0.123) as a percentage to ``digits`` significant digits: ``12 %``, ``0.54 %``."""
    return f"{number(100 * float(x), digits)} %"


def ratio(x: float, digits: int = 2) -> str:
    """A ratio of two times (or sizes) as ``19x``, ``1.5x``."""
    return f"{number(x, digits)}x"


def interval(lo: float, hi: float, digits: int = 2) -> str:
    """A range: ``91 to 197``, or one number when both ends print the same."""
    a, b = number(lo, digits), number(hi, digits)
    return a if a == b else f"{a} to {b}"


def times_against(a: float, b: float) -> str:
    """How ``a`` compares with ``b`` (both > 0) as a sentence puts it before "b's ...": ``"12
    times"`` when ``a >= b``, else ``"3 times smaller than"``."""
    a, b = float(a), float(b)
    if not (a > 0 and b > 0 and math.isfinite(a) and math.isfinite(b)):
        raise ValueError(f"times_against: two positive numbers, got {a} and {b}")
    return f"{a / b:.0f} times" if a >= b else f"{b / a:.0f} times smaller than"


def interval_verdict(low: float, high: float) -> str:
    """What an interval of a difference says: "higher" when it lies above 0, "lower" when below,
    "not distinguishable" when it holds 0."""
    low, high = float(low), float(high)
    if not low <= high:
        raise ValueError(f"interval_verdict: low {low} above high {high}")
    return "higher" if low > 0 else "lower" if high < 0 else "not distinguishable"


def quadrature_against(err: float, systematic_part: float, whose: str) -> str:
    """A quadrature's error on one review (relative, >= 0) set against an approximation's
    systematic error (a share of LIME's norm, > 0), ``whose`` naming the approximation ("the
    chain's"): ``"3e-05, 400 times smaller than the chain's systematic part"``, or ``"0 (to the
    last bit; the chain's systematic part: 1.2 %)"`` when the error is exactly 0."""
    err = float(err)
    if not (err >= 0 and math.isfinite(err)):
        raise ValueError(f"quadrature_against: an error >= 0, got {err}")
    if err == 0:
        return f"0 (to the last bit; {whose} systematic part: {pct(systematic_part)})"
    return f"{err:.0e}, {times_against(err, systematic_part)} {whose} systematic part"


def rel(a, b) -> float:
    """||a - b|| / ||b|| in norm 2 (numbers or arrays of the same shape; absolute when b is 0):
    how far a value is from its reference."""
    import numpy as np

    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.shape != b.shape:
        raise ValueError(f"rel: shapes {a.shape} and {b.shape} differ")
    scale = float(np.linalg.norm(b))
    return float(np.linalg.norm(a - b)) / (scale if scale else 1.0)


def overlap(a: tuple[float, float], b: tuple[float, float]) -> bool:
    """Whether two closed intervals (confidence intervals: (low, high)) share a point."""
    (a0, a1), (b0, b1) = sorted(a), sorted(b)
    return a0 <= b1 and b0 <= a1


def quote(text: str) -> str:
    """``text`` (a review as IMDb stores it) as plain Markdown: its line breaks (``<br />``) as
    spaces and every character Markdown or MyST would read as markup escaped, so that a glued
    fragment (``glue_md``) shows the words, not emphasis, links, HTML or maths."""
    import re

    flat = " ".join(re.sub(r"<br\s*/?>", " ", str(text)).split())
    return re.sub(r"([\\`*_{}\[\]<>()#+\-!|$~^=:.])", r"\\\1", flat)


def listing(items) -> str:
    """Words as a sentence lists them: ``a``, ``a and b``, ``a, b and c``."""
    items = [str(x) for x in items]
    if not items:
        raise ValueError("nothing to list")
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def paired_shift(diff, subject: str, *, level: float = 0.01, slight: float = 0.01) -> str:
    """What the paired differences ``diff`` (per review: a measure with the reference minus with
    an approximation) say about the approximation's effect on ``subject``: "understate" or
    "overstate" when Wilcoxon's signed-rank test rejects a zero median at ``level`` ("slightly"
    when the median difference is under ``slight``), else "do not measurably change"; with the
    median and the p-value."""
    import numpy as np
    from scipy.stats import wilcoxon

    diff = np.asarray(diff, dtype=float)
    if diff.ndim != 1 or diff.size < 2 or not np.isfinite(diff).all():
        raise ValueError("paired_shift: a 1-d array of at least 2 finite differences")
    p = float(wilcoxon(diff).pvalue)
    med = float(np.median(diff))
    if p >= level:
        return (f"the binomial positions do not measurably change {subject} (Wilcoxon's "
                f"signed-rank test, p = {p:.2g})")
    word = ("slightly " if abs(med) < slight else "") + ("understate" if med > 0 else "overstate")
    return (f"the binomial positions {word} {subject} (median paired difference {med:+.3f}; "
            f"Wilcoxon's signed-rank test, p = {p:.0e})")
