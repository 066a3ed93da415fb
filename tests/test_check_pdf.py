"""tests/check_pdf.py, the reader of the printed book, fails on each problem it is there for:
fed small LaTeX outputs with one fault each (no TeX needed), and, where poppler is installed, a
page with ink in the margin."""

import shutil
import subprocess

import pytest

import check_pdf as c

CHAPTERS = c.expected_chapters()


def _toc_and_aux(tmp_path, numbers, figure="1.1"):
    lines = []
    for (name, title, number), got in zip(CHAPTERS, numbers):
        head = rf"\numberline {{{got}}}" if got is not None else ""
        lines.append(rf"\contentsline {{chapter}}{{{head}{title}}}{{1}}{{chapter.1}}%")
    (tmp_path / "attnxai-book.toc").write_text("\n".join(lines) + "\n")
    first = next(name for name, _, n in CHAPTERS if n == 1)
    (tmp_path / "attnxai-book.aux").write_text(
        rf"\newlabel{{{first}:fig-x}}{{{{{figure}}}{{3}}{{cap}}{{figure.caption.1}}{{}}}}" "\n")


def _tex(*boxes):
    first = next(name for name, _, n in CHAPTERS if n == 1)
    body = "".join(rf"\begin{{sphinxadmonition}}{{note}}{{{b}}}x\end{{sphinxadmonition}}"
                   for b in boxes)
    return rf"\label{{\detokenize{{{first}::doc}}}}" + body


def test_numbering_as_on_the_site_passes_and_every_shift_fails(tmp_path, monkeypatch):
    site = [n for _, _, n in CHAPTERS]
    monkeypatch.setattr(c, "ROOT", tmp_path)
    (tmp_path / "book").mkdir()
    (tmp_path / "book" / "syllabus.md").write_text("| 1.1 | a | ★ |\n| 1.2 | b | ★ |\n")
    monkeypatch.setattr(c, "expected_chapters", lambda: CHAPTERS)
    _toc_and_aux(tmp_path, site)
    assert c.numbering_problems(tmp_path, _tex("Exercise 1.1", "Theorem 1.1", "Exercise 1.2")) == []
    # the front matter counted as chapters: every number shifted by five
    _toc_and_aux(tmp_path, [None if n is None else n + 5 for n in site])
    assert any("numbered 6 in the PDF, 1 on the site" in p
               for p in c.numbering_problems(tmp_path, _tex()))
    _toc_and_aux(tmp_path, site, figure="6.1")
    assert any(p.startswith("figure 6.1") for p in c.numbering_problems(tmp_path, _tex()))
    _toc_and_aux(tmp_path, site)
    problems = c.numbering_problems(tmp_path, _tex("Exercise 1.6.1"))
    assert any("Exercise 1.6.1" in p for p in problems)
    problems = c.numbering_problems(tmp_path, _tex("Exercise 1.2"))     # the first is 1.1
    assert any("is exercise 1 of chapter 1" in p for p in problems)
    assert any("the syllabus lists exercises" in p for p in problems)


def test_box_and_table_faults_are_found():
    assert c.empty_box_titles(r"\begin{sphinxadmonition}{note}" "\n" r"\sphinxAtStartPar Proof.")
    assert c.empty_box_titles(r"\begin{sphinxadmonition}{note}{}x")
    assert not c.empty_box_titles(r"\begin{sphinxadmonition}{note}{Proof}x")
    assert c.tables_set_as_maths(r"\begin{split}\begin{tabular}{ll}a&b\end{tabular}\end{split}")
    assert not c.tables_set_as_maths(r"\begin{split}x^2\end{split}")
    for title in ("Theorem 5.1 (LIME's large-sample limit for text)", "Exercise 4.2", "Proof"):
        assert c.BOX_TITLE.match(title), title
    for line in ("Theorem 5.1 (LIME's limit), 72", "Exercise 4.2 asks for more.", "Proofs"):
        assert not c.BOX_TITLE.match(line), line


def test_proof_index_and_overfull_boxes():
    raw = (r"\renewcommand{\indexname}{Proof Index}\begin{sphinxtheindex}"
           r"\item\relax\sphinxstyleindexentry{cor\sphinxhyphen{}gxi}"
           r"\sphinxstyleindexextra{notebooks/04\_gradient\_variants}\end{sphinxtheindex} prf:x")
    assert len(c.proof_index_problems(raw)) == 2
    good = (r"\renewcommand{\indexname}{Proof Index}\begin{sphinxtheindex}"
            r"\item\relax\sphinxstyleindexentry{Corollary 4.1 (Gradient times input)}"
            r"\end{sphinxtheindex}")
    assert c.proof_index_problems(good) == []
    log = ("Overfull \\hbox (825.3pt too wide) detected at line 6007\n"
           "Overfull \\hbox (31.4pt too wide) in paragraph at lines 7220--7220\n"
           "Overfull \\hbox (0.8pt too wide) in paragraph at lines 596--596\n")
    assert c.overfull_boxes(log) == [(825.3, "attnxai-book.tex:6007"),
                                     (31.4, "attnxai-book.tex:7220")]
    log = "Missing character: There is no \u29f5 (U+29F5) in font [latinmodern-math.otf]/OT:scr\n"
    assert c.missing_characters(log) == [("\u29f5 (U+29F5)", "[latinmodern-math.otf]")]


def test_the_text_block_is_read_from_a_wrapped_log():
    log = ("attnxai-textblock: left=72.26999pt, width=469.75502pt, top=35.26999pt, bodytop=\n"
           "72.26999pt, bodybottom=722.7pt, bottom=752.7pt, paperwidth=614.295pt, paperheig\n"
           "ht=794.96999pt\n")
    block = c.text_block(log)
    assert block["left"] == pytest.approx(72.0) and block["paperheight"] == pytest.approx(792.0)
    with pytest.raises(SystemExit, match="no text block"):
        c.text_block("nothing here")


@pytest.mark.skipif(shutil.which("pdftoppm") is None or shutil.which("xelatex") is None,
                    reason="needs poppler and XeLaTeX")
def test_ink_past_the_margin_is_measured(tmp_path):
    (tmp_path / "t.tex").write_text(
        r"\documentclass{article}\usepackage[letterpaper,margin=1in]{geometry}"
        r"\pagestyle{empty}\begin{document}\noindent\rule{\dimexpr\textwidth+40pt}{2pt}"
        r"\newpage x\end{document}")
    subprocess.run(["xelatex", "-interaction=nonstopmode", "t.tex"], cwd=tmp_path,
                   capture_output=True, timeout=300)
    block = {"left": 72.0, "width": 468.0, "top": 36.0, "bottom": 756.0}
    over = c.margin_overflows(tmp_path / "t.pdf", block)
    assert list(over) == [1] and "past the right" in over[1]
    assert 35 <= float(over[1].split()[0]) <= 41
