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


# ---------------------------------------------------------------- what paper cannot do
def test_website_only_text_is_found_and_plain_text_is_not():
    pages = ["The output is wider than the page (click to show it):\n",
             "shaded tokens (hover a token for its weight)\n", "the rocket button opens Binder\n",
             "   cache: ../.cache\n", "wide content: scroll sideways \u2192\n",
             "The exercise clicks into place. The cache of a model is a folder.\n",
             "[Samek et al., 2017] Wojciech Samek, Alexander Binder, Grégoire Montavon\n"]
    found = c.web_only_text(pages)
    assert sorted(found) == [1, 2, 3, 4, 5]
    assert found[3] == ["rocket", "Binder"]
    print_only = ["its p-value is in the cell below, so\n", "from a launch button.\n",
                  "(first checked on one seed in the next cell)\n", "and the cell checks them\n",
                  "the build checks it on one seed; the cells of a grid; see below.\n"]
    assert sorted(c.web_only_text(print_only)) == [1, 2, 3, 4]


# ---------------------------------------------------------------- a print cut a teacher hands out
def test_wrapped_and_split_code_is_counted():
    pages = ["x = 1\n  \u21aaand more\n  \u21aaagain\n(continues on next page)\n",
             "(continued from previous page)\nrest\n", "prose only\n",
             "a long table\ncontinues on next page\n"]
    wrapped, split = c.code_in_print(pages)
    assert wrapped == {1: 2} and split == [1]


def test_provenance_only_on_the_chapters_pages_is_found():
    front = "                REPRODUCIBILITY\ncode: a377cd7a152da6; load average before 3.1\n"
    chapter = "         CHAPTER\n          ONE\n  THE MODEL\nprofile: quick | model: quick-6468f19043c3e6d1\n"
    more = "Attention meets\nmax |difference| 1.3306690738754696e-16, 4.0e-15, weights 2e7d32\n"
    hashes = "the run at commit 22935f8\nwall time 424 s; load average before 0.39\n"
    back = "                 BIBLIOGRAPHY\ndoi 10.1000/abc1234def\n"
    pages = [front, chapter, more, hashes, back]
    assert c.chapter_pages(pages) == [2, 3, 4]
    found = c.provenance_in_chapters(pages)
    assert found == {2: ["6468f19043c3e6d1"], 4: ["22935f8", "load average"]}


def test_the_papers_figures_are_named_as_the_papers():
    pages = ["As the paper's Figure 4 shows, and Fig. 6.2 and Figure 6.2 here.\n",
             "the review of Figure 3, as in Section 5 of the paper\n",
             "(its Figure 1) and the authors' Table 2\n",
             "Table 1 – continued from previous page\n"]
    found = c.paper_numbers_unnamed(pages)
    assert sorted(found) == [2] and len(found[2]) == 2


def test_the_student_pdf_says_nothing_of_where_the_solutions_are():
    assert c._hits(c.SOLUTIONS_WHERE, ["The solutions stay on the repository's main branch\n",
                                       "Your teacher has the instructor edition.\n"]) == {
        1: ["solutions stay on", "main branch"]}


def test_the_launch_chapter_is_not_printed(tmp_path):
    (tmp_path / "attnxai-book.toc").write_text(
        r"\contentsline {chapter}{Launch and run}{5}{chapter*.2}%" "\n")
    assert c.web_only_pages_printed(tmp_path) == ["Launch and run"]
    (tmp_path / "attnxai-book.toc").write_text(r"\contentsline {chapter}{Syllabus}{5}{x}%" "\n")
    assert c.web_only_pages_printed(tmp_path) == []


@pytest.mark.skipif(shutil.which("pdftoppm") is None, reason="poppler-utils not installed")
def test_empty_pages_are_found(tmp_path):
    """A page with ink in its text block is not empty, a blank one and one with only a running
    head above the block are."""
    from PIL import Image, ImageDraw

    pages = []
    for kind in ("text", "blank", "head"):
        im = Image.new("L", (612, 792), 255)            # letter, one pixel a point at 72 dpi
        draw = ImageDraw.Draw(im)
        if kind == "text":
            draw.rectangle((100, 300, 400, 310), fill=0)
        elif kind == "head":
            draw.rectangle((72, 40, 540, 48), fill=0)
        pages.append(im)
    pdf = tmp_path / "p.pdf"
    pages[0].save(pdf, save_all=True, append_images=pages[1:], resolution=72)
    block = {"left": 72.0, "width": 468.0, "bodytop": 72.0, "bodybottom": 720.0}
    assert c.empty_pages(pdf, block) == [2, 3]


def test_missing_values_reprs_and_placeholders_are_found():
    pages = ["deletion   NaN   0.73\n", "{'t = 1 ([CLS])': 0.5, 't = 2': 0.1}\n",
             "chapter 9   RUN-TIME_PAPER   RUN-TIME_QUICK\n",
             "the {{ launch_note }} here; BibTeX: author = {{The attnxai team}}\n",
             "x = float(\"nan\") if y is None else np.nan\n", "Nantes, nano, NaNs-free: 0.5\n",
             "padding positions get NaN (they have no score)\n", "  replace   None    12\n"]
    found = c.missing_values(pages)
    assert sorted(found) == [1, 2, 3, 4, 8]
    assert found[3] == ["RUN-TIME_PAPER", "RUN-TIME_QUICK"]


def test_figures_cited_by_place_and_never_by_number():
    found = c.place_references(["as the plot above shows", "Fig. 2.1 shows", "heat maps below",
                                "the bar plot\nabove shows"])
    assert sorted(found) == [1, 3, 4]
    tex = (r"\begin{figure}[htbp]x\label{\detokenize{notebooks/a:fig-one}}\end{figure}"
           r"\begin{figure}[htbp]y\label{\detokenize{notebooks/a:fig-two}}\end{figure}"
           r"see \hyperref[\detokenize{notebooks/a:fig-one}]{Fig.\@ \ref{\detokenize{notebooks/a:fig-one}}}")
    assert c.uncited_figures(tex) == ["notebooks/a:fig-two"]


def test_figures_shrunk_under_seven_points_are_found():
    block = {"width": 470.0, "bodytop": 72.0, "bodybottom": 722.0}   # 520 pt for a figure's height
    def fig(w, h, label):
        return (r"\begin{figure}[htbp]\noindent\sphinxincludegraphics[width=%d\sphinxpxdimen,"
                r"height=%d\sphinxpxdimen]{{x}.png}\label{\detokenize{%s}}\end{figure}" % (w, h, label))
    tex = fig(720, 340, "a:wide") + fig(700, 1400, "a:tall") + fig(400, 300, "a:small")
    found = c.small_figure_text(tex, block)
    # 720 px wide: 540 pt shrunk to 470 (x 0.87), text 10 pt * 0.87 * 0.75 / 0.72 = 9.1 pt: fine;
    # 1400 px tall: 1050 pt shrunk to 520 (x 0.495), 5.2 pt: too small
    assert [label for _, label in found] == ["a:tall"]
    assert found[0][0] == pytest.approx(10 * 520 / 1050 * 0.75 / 0.72, rel=1e-3)


def _boxes(*titles):
    return "".join(rf"\begin{{sphinxadmonition}}{{note}}{{{t}}}x\end{{sphinxadmonition}}" for t in titles)


def test_solutions_by_edition():
    links = (r"\hyperref[d:s1]{Solution: page~\pageref*{d:s1}}"
             r"\hyperref[exercise:e1]{The exercise: page~\pageref*{exercise:e1}}")
    gathered = _boxes("Exercise 1.1", "Exercise 1.2") + links * 2 + _boxes(
        "Solution to Exercise 1.1", "Solution to Exercise 1.2")
    assert c.solution_problems(gathered, "instructor") == []
    assert c.solution_problems(_boxes("Exercise 1.1", "Exercise 1.2"), "student") == []
    assert c.solution_problems(gathered, "student") == [
        "Solution to Exercise 1.1 in the student's PDF", "Solution to Exercise 1.2 in the student's PDF"]
    # each solution under its exercise, as the site shows them
    under = _boxes("Exercise 1.1", "Solution to Exercise 1.1", "Exercise 1.2",
                   "Solution to Exercise 1.2") + links * 2
    assert c.solution_problems(under, "instructor") == [
        "Solution to Exercise 1.1 stands before the chapter's last exercise"]
    missing = _boxes("Exercise 1.1", "Exercise 1.2", "Solution to Exercise 1.1") + links
    assert c.solution_problems(missing, "instructor") == [
        "Exercise 1.2 has no solution in the instructor's PDF"]
    unlinked = _boxes("Exercise 1.1", "Solution to Exercise 1.1")
    assert c.solution_problems(unlinked, "instructor") == ["1 solutions, 0 links to them and 0 back"]
    # two chapters of one part: chapter 1's solutions after chapter 2's exercises
    late = _boxes("Exercise 1.1", "Exercise 2.1", "Solution to Exercise 1.1",
                  "Solution to Exercise 2.1") + links * 2
    assert c.solution_problems(late, "instructor") == [
        "Solution to Exercise 1.1 stands after chapter 2's exercises"]
