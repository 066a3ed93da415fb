"""attnxai.chapters.prose: values glued for the chapters' Markdown are read back by myst-nb itself (its
own glue extraction and text formatting, the reference), and numbers print as a reader expects."""

import numpy as np
import pytest

from attnxai.chapters import prose


def _glued(fn, **values):
    """What myst-nb extracts from the outputs of a cell that calls ``fn(**values)``."""
    nbformat = pytest.importorskip("nbformat")
    glue_ext = pytest.importorskip("myst_nb.ext.glue")
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.utils.capture import capture_output

    InteractiveShell.instance()
    with capture_output() as cap:
        fn(**values)
    outputs = [nbformat.v4.new_output("display_data", data=o.data, metadata=o.metadata)
               for o in cap.outputs]
    cell = nbformat.v4.new_code_cell(source="", outputs=outputs)
    found = dict(glue_ext.extract_glue_data_cell(cell))
    assert cell.outputs == [], "a glued value must not be displayed"
    return found


def test_glued_numbers_and_words_read_back_through_myst_nb():
    from myst_nb.core.variables import format_plain_text

    found = _glued(prose.glue, share=np.float64(0.1234), n=np.int64(5000), side="below",
                   zero=-0.0)
    assert format_plain_text(found["share"].data["text/plain"], ".1%") == "12.3%"
    assert format_plain_text(found["n"].data["text/plain"], ",d") == "5,000"
    assert format_plain_text(found["side"].data["text/plain"], "s") == "below"
    assert format_plain_text(found["zero"].data["text/plain"], ".2f") == "0.00"   # no -0.00


def test_glued_markdown_keeps_its_maths():
    found = _glued(prose.glue_md, words="`good`, `bad` and $\\alpha_t$")
    assert found["words"].data["text/markdown"] == "`good`, `bad` and $\\alpha_t$"


def test_what_cannot_be_glued_is_refused_with_its_name():
    with pytest.raises(TypeError, match="glue 'flag'"):
        prose.glue(flag=True)
    with pytest.raises(TypeError, match="glue 'xs'"):
        prose.glue(xs=[1, 2])
    with pytest.raises(ValueError, match="glue 'm'.*nan"):
        prose.glue(m=float("nan"))
    with pytest.raises(ValueError, match="glue name"):
        prose._record("a-b", {"text/plain": "1"})


@pytest.mark.parametrize("x, digits, text", [
    (0.0123456, 3, "0.0123"), (1.5, 3, "1.50"), (2097150.0, 3, "2,097,150"), (19.8, 2, "20"),
    (-0.00004, 2, "-4.0e-05"), (-0.0004, 1, "-0.0004"), (-1e-12, 3, "-1.00e-12"), (0.0, 3, "0"),
    (1234.567, 3, "1,235"), (-0.0, 2, "0")])
def test_numbers_print_with_significant_digits(x, digits, text):
    assert prose.number(x, digits) == text


def test_number_never_prints_a_negative_zero():
    for x in np.linspace(-1e-3, 1e-3, 41):
        for digits in (1, 2, 3):
            out = prose.number(x, digits)
            assert not (out.startswith("-") and float(out.replace(",", "")) == 0), (x, out)


def test_shares_ratios_intervals_and_distances():
    assert prose.pct(0.1234) == "12 %" and prose.pct(0.00543) == "0.54 %"
    assert prose.ratio(19.76) == "20x" and prose.ratio(1.52) == "1.5x"
    assert prose.interval(91.2, 197.4) == "91 to 197" and prose.interval(1.501, 1.499) == "1.5"
    assert prose.rel(1.1, 1.0) == pytest.approx(0.1) and prose.rel(0.5, 0.0) == 0.5
    assert prose.rel([3.0, 4.0], [0.0, 5.0]) == pytest.approx(np.hypot(3, 1) / 5)
    with pytest.raises(ValueError, match="shapes"):
        prose.rel([1.0, 2.0], [1.0])
    assert prose.overlap((0.1, 0.3), (0.25, 0.5)) and not prose.overlap((0.1, 0.2), (0.3, 0.4))
    assert prose.overlap((0.3, 0.1), (0.1, 0.0))                      # ends in any order, touching
    with pytest.raises(ValueError, match="not a number"):
        prose.number(float("inf"))


def test_listing_reads_as_english():
    assert prose.listing(["a"]) == "a" and prose.listing(["a", "b"]) == "a and b"
    assert prose.listing(("layer 2", "layer 3", "layer 4")) == "layer 2, layer 3 and layer 4"
    with pytest.raises(ValueError, match="nothing"):
        prose.listing([])


def test_paired_shift_follows_the_differences():
    """The direction and its qualifier come from the data: a clear positive shift understates,
    a small negative one slightly overstates, noise around zero changes nothing."""
    rng = np.random.default_rng(0)
    assert "binomial positions understate x" in prose.paired_shift(
        rng.normal(0.06, 0.05, 300), "x")
    assert "slightly overstate x" in prose.paired_shift(rng.normal(-0.004, 0.005, 300), "x")
    assert "do not measurably change x" in prose.paired_shift(rng.normal(0, 0.05, 300), "x")
    with pytest.raises(ValueError, match="finite"):
        prose.paired_shift([0.1, np.nan], "x")


def test_a_quoted_review_shows_its_words_not_markup():
    """prose.quote: a review's own text in a displayed sentence, its <br /> as spaces and every
    Markdown or MyST markup character escaped (rendered, it reads as the review does)."""
    from markdown_it import MarkdownIt

    from attnxai.chapters.prose import quote

    review = "A *great* film<br /><br />1. with $5, [a link](x) and `code` #1 -- <b>bold</b>_x_"
    text = quote(review)
    html = MarkdownIt("commonmark").render(text)
    assert "<em>" not in html and "<a " not in html and "<code>" not in html \
        and "<ol>" not in html and "<b>" not in html
    visible = MarkdownIt("commonmark").render(text).replace("<p>", "").replace("</p>", "").strip()
    import html as h
    assert h.unescape(visible) == ("A *great* film 1. with $5, [a link](x) and `code` #1 -- "
                                   "<b>bold</b>_x_")


def test_signed_numbers_and_predicted_classes():
    assert prose.signed(0.1234, 2) == "+0.12"
    assert prose.signed(-0.0012, 2) == "-0.0012"
    assert prose.signed(-0.0000001, 2) == "-1.0e-07"
    assert prose.signed(0.0, 2) == "0" and prose.signed(-0.0, 2) == "0"
    assert prose.predicted_class(np.array([0.2, 1.5])) == "positive"
    assert prose.predicted_class([1.5, 0.2]) == "negative"
    assert prose.predicted_class([0.3, 0.3]) == "negative"          # a tie: argmax picks class 0
    with pytest.raises(ValueError):
        prose.predicted_class([1.0, 2.0, 3.0])


def test_errors_compared_in_words():
    assert prose.times_against(12.3, 1.0) == "12 times"
    assert prose.times_against(1.0, 1.0) == "1 times"
    assert prose.times_against(0.01, 0.03) == "3 times smaller than"
    with pytest.raises(ValueError, match="two positive"):
        prose.times_against(0.0, 1.0)
    assert (prose.quadrature_against(3e-5, 0.012, "the chain's")
            == "3e-05, 400 times smaller than the chain's systematic part")
    assert (prose.quadrature_against(0.0, 0.012, "the chain's")
            == "0 (to the last bit; the chain's systematic part: 1.2 %)")
    assert prose.quadrature_against(0.05, 0.01, "x's") == "5e-02, 5 times x's systematic part"
    with pytest.raises(ValueError, match="an error >= 0"):
        prose.quadrature_against(float("nan"), 0.01, "x's")


def test_interval_verdict_says_where_zero_lies():
    assert prose.interval_verdict(0.01, 0.2) == "higher"
    assert prose.interval_verdict(-0.2, -0.01) == "lower"
    assert prose.interval_verdict(-0.1, 0.1) == "not distinguishable"
    assert prose.interval_verdict(0.0, 0.1) == "not distinguishable"       # 0 is in the interval
    with pytest.raises(ValueError, match="above high"):
        prose.interval_verdict(0.3, 0.1)
