"""Read the built PDF as a teacher who prints it would: `tests/check_pdf.sh` runs this after
`make pdf`'s build. Exit status 1 if any check finds a problem; each check prints one line.

* margins: every page rendered (pdftoppm, 72 dpi, one pixel a point) and its ink compared with
  the text block that the LaTeX log states (book/_ext/attnxai_book.py types it there);
* missing outputs: a Python repr (``<pandas.io.formats.style.Styler at 0x...>``,
  ``<IPython.core.display.HTML object>``, ``<Figure size ...>``) printed where an output with
  no LaTeX form stood;
* numbering: chapters numbered as on the site (_toc.yml: chapters of numbered parts 1, 2, ...,
  front and back matter without numbers), every theorem, exercise, figure, table and equation
  numbered "chapter.k" in its own chapter, exercises 1, 2, ... in each chapter, and the
  syllabus's table of exercises the same list as the book's;
* boxes: none without a title (an empty title bar) and none whose title is the last line of a
  page; no output table set as an equation;
* the proof index: entries named "Theorem 3.1 (...)", not labels and file paths;
* overfull boxes: what TeX itself reports wider than its space by more than 3 pt (a squeezed
  table cell, a formula) with its source lines in the .tex; characters a font lacks (they print
  as nothing);
* the editions (``--edition``): no solution in the student's PDF; in the instructor's, every
  solution after its chapter's exercises, linked both ways;
* what paper cannot do: text for the site only (click, hover, Binder, Colab, a launch button,
  "the cell below", a scroll cue, the launch cell's cache line), figures cited by their place
  ("the plot above") or never by number, figure text shrunk under 7 pt; and NaN, dict reprs or
  placeholders printed as values; the paper's figures and sections named without "the paper's"
  (the book numbers its own: "Figure 4" alone reads as the book's);
* a print cut a teacher can hand out: code wrapped over lines (the ↪ mark) and code blocks split
  across pages (Sphinx's "continues on next page") within their budgets (print shows only the
  code a chapter teaches); no empty page (nothing in the text block: part titles have theirs);
  no git hash, load average or "uncommitted" on a chapter's pages (the provenance of the numbers
  is on the reproducibility page); in the student's PDF, nothing that says where the solutions
  are.

    python tests/check_pdf.py _build/pdfcheck/_build/latex [--shots DIR] [--edition student]

``--shots DIR`` writes an 80-dpi PNG of every page with a problem into DIR.
"""

from __future__ import annotations

import argparse
import functools
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import yaml
from PIL import Image

ROOT = Path(__file__).resolve().parents[1]
INK = 200                 # grey level below which a pixel is ink (0 black, 255 white)
MARGIN_TOLERANCE = 5.0    # points of ink allowed past the text block (Sphinx's code frames: 4)
OVERFULL_TOLERANCE = 3.0  # points
KINDS = ("Axiom", "Theorem", "Lemma", "Algorithm", "Definition", "Remark", "Conjecture",
         "Corollary", "Criterion", "Example", "Property", "Observation", "Proposition",
         "Assumption", "Notation")
REPR = re.compile(r"<(?:[A-Za-z_]\w*\.)+[A-Za-z_]\w*(?: object(?: at 0x[0-9a-fA-F]+)?"
                  r"| at 0x[0-9a-fA-F]+)>|<Figure size [\d.]+x[\d.]+ with \d+ Axes>")
BOX_TITLE = re.compile(rf"^(?:{'|'.join(KINDS)}|Exercise|Solution to Exercise)(?: \d+(?:\.\d+)*)?"
                       r"(?: \(.*\))?$|^(?:Proof|Learning objectives|Note|Warning|Important|Tip)$")


def run(*cmd: str) -> str:
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


# ---------------------------------------------------------------- geometry
def text_block(log: str) -> dict[str, float]:
    """The text block in points from the top-left corner (book/_ext/attnxai_book.py types
    ``attnxai-textblock: left=..pt, ...`` into the log)."""
    flat = log.replace("\n", "")            # TeX wraps its log at 79 characters
    m = re.search(r"attnxai-textblock:(.*?paperheight=[\d.]+pt)", flat)
    if not m:
        raise SystemExit("the LaTeX log states no text block (attnxai-textblock): was the PDF "
                         "built with the book's extension?")
    text = m.group(1)
    # TeX points (1/72.27 in) to PDF points (1/72 in), the unit of the page images
    return {k: float(v) * 72 / 72.27 for k, v in re.findall(r"(\w+)=([\d.]+)pt", text)}


@functools.lru_cache(maxsize=2)
def page_ink(pdf: Path) -> dict[int, np.ndarray]:
    """{page: where it has ink}, each page rendered once (pdftoppm, 72 dpi: one pixel a point)
    for every check that looks at the ink."""
    with tempfile.TemporaryDirectory() as tmp:
        run("pdftoppm", "-r", "72", "-gray", str(pdf), f"{tmp}/p")
        return {int(path.stem.split("-")[1]): np.asarray(Image.open(path)) < INK
                for path in Path(tmp).glob("p-*.pgm")}


def margin_overflows(pdf: Path, block: dict[str, float]) -> dict[int, str]:
    """{page: what overflows} for pages with ink outside the text block (header and footer
    lines included)."""
    left, right = block["left"], block["left"] + block["width"]
    top, bottom = block["top"], block["bottom"]
    out = {}
    for page, ink in sorted(page_ink(pdf).items()):
        cols, rows = np.flatnonzero(ink.any(axis=0)), np.flatnonzero(ink.any(axis=1))
        if not cols.size:
            continue
        past = {"left": left - cols[0], "right": cols[-1] + 1 - right,
                "top": top - rows[0], "bottom": rows[-1] + 1 - (bottom + 4)}
        bad = {k: v for k, v in past.items() if v > MARGIN_TOLERANCE}
        if bad:
            out[page] = ", ".join(f"{v:.0f} pt past the {k}" for k, v in bad.items())
    return out


# ---------------------------------------------------------------- text
def pages_text(pdf: Path) -> list[str]:
    return run("pdftotext", "-layout", str(pdf), "-").split("\f")


def literal_outputs(pages: list[str]) -> dict[int, list[str]]:
    out = {}
    for i, text in enumerate(pages, 1):
        found = REPR.findall(" ".join(text.split()))
        if found:
            out[i] = found
    return out


def titles_at_page_foot(pdf: Path, block: dict[str, float]) -> dict[int, str]:
    """{page: title} where the last line of the page's body is a box title."""
    xml = run("pdftotext", "-bbox-layout", str(pdf), "-")
    out = {}
    body_top, body_bottom = block["bodytop"], block["bodybottom"]
    for i, page in enumerate(re.findall(r"<page .*?</page>", xml, re.DOTALL), 1):
        lines = []
        for line in re.findall(r'<line xMin="[\d.]+" yMin="([\d.]+)" xMax="[\d.]+" '
                               r'yMax="([\d.]+)">(.*?)</line>', page, re.DOTALL):
            y0, y1, words = float(line[0]), float(line[1]), line[2]
            if y0 >= body_top - 2 and y1 <= body_bottom + 2:
                text = " ".join(re.findall(r">([^<]*)</word>", words))
                lines.append((y1, _unescape(text)))
        if lines:
            last = max(lines)[1].strip()
            if BOX_TITLE.match(last):
                out[i] = last
    return out


def _unescape(text: str) -> str:
    return text.replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">") \
        .replace("&quot;", '"').replace("&apos;", "'")


# ---------------------------------------------------------------- numbering
def web_only_pages() -> tuple[str, ...]:
    """The pages the book's extension leaves out of print (book/_ext/attnxai_book.py)."""
    sys.path.insert(0, str(ROOT / "book" / "_ext"))
    from attnxai_book import WEB_ONLY_PAGES

    return WEB_ONLY_PAGES


def expected_chapters(toc_file: Path = ROOT / "_toc.yml") -> list[tuple[str, str, int | None]]:
    """(docname, title, site number or None) of every chapter in print, in the order of _toc.yml
    (the chapters of numbered parts are numbered on, across parts, as jupyter-book numbers them;
    the pages for the site only are not in print)."""
    toc = yaml.safe_load(toc_file.read_text())
    out, n = [], 0
    for part in toc.get("parts", []):
        for chapter in part.get("chapters", []):
            name = chapter["file"]
            if name in web_only_pages():
                continue
            path = ROOT / (name if Path(name).suffix else name + ".md")
            title = next((line[2:].strip() for line in path.read_text().splitlines()
                          if line.startswith("# ")), name)
            number = None
            if part.get("numbered"):
                n += 1
                number = n
            out.append((name, title, number))
    return out


def web_only_pages_printed(latex_dir: Path) -> list[str]:
    """Titles of the site-only pages (web_only_pages) found in the PDF's table of contents."""
    toc = (latex_dir / "attnxai-book.toc").read_text()
    out = []
    for name in web_only_pages():
        path = ROOT / (name if Path(name).suffix else name + ".md")
        title = next(line[2:].strip() for line in path.read_text().splitlines()
                     if line.startswith("# "))
        if _plain(title) in _plain(toc):
            out.append(title)
    return out


def _plain(tex: str) -> str:
    tex = re.sub(r"\\sphinxhyphen\s*\{\}", "-", tex)
    tex = re.sub(r"\\[A-Za-z]+\s*", "", tex)
    return re.sub(r"[^a-z0-9]+", "", tex.lower())


def numbering_problems(latex_dir: Path, tex: str) -> list[str]:
    problems = []
    chapters = expected_chapters()
    toc = (latex_dir / "attnxai-book.toc").read_text()
    entries = re.findall(r"\\contentsline \{chapter\}\{(\\numberline \{(\d+)\})?(.*?)\}\{[^}]*\}"
                         r"\{[^}]*\}%", toc)
    # the LaTeX build moves the bibliography to the end and adds the indexes: find each
    # chapter by its title; the numbered ones must come in the site's order
    used, positions = set(), []
    for name, title, number in chapters:
        at = next((i for i, e in enumerate(entries) if i not in used
                   and _plain(e[2]) == _plain(title)), None)
        if at is None:
            problems.append(f"chapter {title!r} ({name}) is not in the PDF's table of contents")
            continue
        used.add(at)
        got = int(entries[at][1]) if entries[at][1] else None
        if got != number:
            problems.append(f"chapter {title!r}: numbered {got} in the PDF, {number} on the site")
        if number is not None:
            positions.append(at)
    if positions != sorted(positions):
        problems.append("the numbered chapters are not in the site's order")
    number_of = {name: number for name, _, number in chapters}
    # boxes (theorems, exercises): "Kind C.k" inside chapter C, exercises 1, 2, ... per chapter
    current, exercises, seen = None, {}, []
    box = re.compile(rf"\\label\{{\\detokenize\{{([^}}:]+)::doc\}}\}}|\\begin\{{sphinxadmonition\}}"
                     rf"\{{\w+\}}\{{((?:{'|'.join(KINDS)}|Exercise|Solution to Exercise)) "
                     rf"([\d.]+)")
    for m in box.finditer(tex):
        if m.group(1):
            current = m.group(1) if m.group(1) in number_of else current
            continue
        kind, num = m.group(2), m.group(3)
        chapter = number_of.get(current)
        parts = num.split(".")
        if chapter is None or len(parts) != 2 or parts[0] != str(chapter):
            problems.append(f"{kind} {num} in {current} (chapter {chapter}): expected "
                            f"{kind} {chapter}.k")
        if kind == "Exercise" and len(parts) == 2:
            k = exercises.setdefault(parts[0], 0) + 1
            exercises[parts[0]] = k
            if parts[1] != str(k):
                problems.append(f"Exercise {num} is exercise {k} of chapter {parts[0]}")
            seen.append(num)
    syllabus = re.findall(r"^\| (\d+\.\d+) \|", (ROOT / "book" / "syllabus.md").read_text(),
                          re.MULTILINE)
    if seen and syllabus != seen:
        problems.append(f"the syllabus lists exercises {_span(syllabus)}, the book has "
                        f"{_span(seen)}")
    # figures, tables, equations of a chapter: numbered within it
    aux = (latex_dir / "attnxai-book.aux").read_text()
    for doc, num, anchor in re.findall(r"\\newlabel\{([^}:]+):[^}]*\}\{\{([\d.]+)\}\{[^}]*\}"
                                       r"\{.*?\}\{((?:figure|table|equation)\.[^}]*)\}", aux):
        chapter = number_of.get(doc)
        if chapter is not None and num.split(".")[0] != str(chapter):
            problems.append(f"{anchor.split('.')[0]} {num} of {doc} (chapter {chapter})")
    return problems


def _span(numbers: list[str]) -> str:
    return f"{len(numbers)} ({numbers[0]} to {numbers[-1]})" if numbers else "none"


# ---------------------------------------------------------------- boxes, index, overfull
def empty_box_titles(tex: str) -> list[str]:
    """Boxes whose title argument is missing (LaTeX takes the next token for the title and
    draws an empty bar) or empty."""
    bad = []
    for m in re.finditer(r"\\begin\{sphinxadmonition\}\{\w+\}(\s*\{\s*\}|(?!\{))", tex):
        line = tex.count("\n", 0, m.start()) + 1
        bad.append(f"attnxai-book.tex:{line}")
    return bad


def tables_set_as_maths(tex: str) -> list[str]:
    """Output tables that went in as equations (an output's LaTeX that the extension did not
    recognise as a table: centred, and never broken across pages)."""
    return [f"attnxai-book.tex:{tex.count(chr(10), 0, m.start()) + 1}" for m in
            re.finditer(r"\\begin\{split\}\s*(%[^\n]*\n)?\s*(\{\\\w+size|\{\\small|\\begin\{(tabular|longtable)\})", tex)]


def proof_index_problems(tex: str) -> list[str]:
    m = re.search(r"\\renewcommand\{\\indexname\}\{Proof Index\}(.*?)\\end\{sphinxtheindex\}",
                  tex, re.DOTALL)
    if "prf:" not in tex and m is None:
        return []
    if m is None:
        return ["no proof index"]
    problems = []
    arg = r"\{((?:[^{}]|\{[^{}]*\})*)\}"          # one argument, braces one level deep
    for name, extra in re.findall(rf"\\sphinxstyleindexentry{arg}(?:\\sphinxstyleindexextra{arg})?",
                                  m.group(1)):
        name = re.sub(r"\\sphinxhyphen\{\}", "-", name)
        if not re.match(rf"(?:{'|'.join(KINDS)})( \d+\.\d+)?( |$)", name):
            problems.append(f"entry {name!r} is not 'Kind number (title)'")
        if "/" in extra or "\\_" in extra:
            problems.append(f"entry {name!r} shows a file path ({extra})")
    return problems


def missing_characters(log: str) -> list[str]:
    """Characters that a font of the PDF lacks (XeLaTeX leaves a gap where they were)."""
    return sorted(set(re.findall(r"Missing character: There is no (.*?) in font ([^/\n]*)", log)))


def overfull_boxes(log: str) -> list[tuple[float, str]]:
    out = []
    for m in re.finditer(r"Overfull \\hbox \(([\d.]+)pt too wide\) (in paragraph at lines "
                         r"(\d+)--\d+|detected at line (\d+))", log):
        if float(m.group(1)) > OVERFULL_TOLERANCE:
            out.append((float(m.group(1)), f"attnxai-book.tex:{m.group(3) or m.group(4)}"))
    return out


# ---------------------------------------------------------------- what a reader of paper meets
#: Text that only makes sense on the site (a click, a hover, a launch button, a scroll cue), or
#: that names this machine (the launch cell's cache line).
WEB_ONLY = re.compile(r"\bclick(?:ing)? to\b|\(also collapsed\)|\bhover(?:ing)? (?:a|the|over)\b|"
                      r"\brocket\b|\bBinder\b|\bColab\b|scroll sideways|^\s*cache: \S+|"
                      r"launch buttons?\b|download (?:button|menu)|\bthe (?:next |previous )?cells? "
                      r"(?:below|above|checks|fails|says|measures)|\bin the (?:next|previous) cell\b",
                      re.IGNORECASE | re.MULTILINE)
#: Code wrapped over lines (Sphinx's continuation mark) and code blocks split across pages (its
#: "continues on next page"): at most a tenth of what print showed before it left out the code
#: the chapters do not teach (635 marks and 38 split blocks at commit 7c24e1d, quick model).
WRAP_MARK = "\u21aa"
SPLIT_MARK = "(continues on next page)"          # a table's says it without brackets
MAX_WRAPPED_CODE = 63
MAX_SPLIT_CODE = 3
#: A git hash or another hex digest, a load average, a note of uncommitted changes: provenance,
#: which belongs on the reproducibility page, not on a chapter's pages.
PROVENANCE = re.compile(r"\b(?<!\.)(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,64}\b(?![-+]\d)|load averages?\b|"
                        r"\bload (?:at|before|after)\b|uncommitted", re.IGNORECASE)
#: The student's edition never says where the solutions are.
SOLUTIONS_WHERE = re.compile(r"solutions stay on|main branch|instructor edition at the top",
                             re.IGNORECASE)
#: The paper's figures and sections, named as such: "Figure 4" alone (no chapter number) must
#: be preceded by "paper's" (or "its", "the paper ... "), or it reads as one of the book's.
PAPER_NUMBER = re.compile(r"\b(?:Figure|Fig\.|Section|Table)s? \d+\b(?![.:]\d)"
                          r"(?!\s*[\u2013-]\s*continued)")       # a long table's running head
PAPER_NAMED = re.compile(r"(?:paper[’']s|its|paper,|paper \(|authors[’']|their)\s*$", re.IGNORECASE)
#: A value a table or sentence shows for a missing one, a Python repr, an unfilled placeholder.
MISSING = re.compile(r"\{'[^'\n]{1,40}': |\b[A-Z]+(?:-[A-Z]+)*_(?:PAPER|QUICK)\b|\{\{\s*[a-z_]+\s*\}\}")
#: A table cell (pdftotext's layout separates columns by two spaces or more) that prints a
#: missing value: prose may name NaN, a table should say what the absence means.
MISSING_CELL = {"NaN", "nan", "None", "<NA>"}
#: A figure pointed at by its place on the page, which print does not keep.
PLACE_REFERENCE = re.compile(r"\b(?:plot|figure|chart|graph|picture|heat ?map)s?\s+(?:above|below)\b",
                             re.IGNORECASE)
#: The smallest text a figure may print (points); figures draw theirs at plots.MIN_FONT.
MIN_FIGURE_PT = 7.0
DRAWN_FONT_PT = 10.0


def _hits(pattern, pages: list[str]) -> dict[int, list[str]]:
    out = {}
    for i, text in enumerate(pages, 1):
        found = [m.group(0).strip() for m in pattern.finditer(text)]
        if found:
            out[i] = found
    return out


def web_only_text(pages: list[str]) -> dict[int, list[str]]:
    """{page: phrases} of text meant for the site: "click to show", "hover a token", the rocket,
    Binder and Colab buttons, a scroll cue, the launch cell's ``cache:`` line."""
    found = {}
    for i, text in enumerate(pages, 1):
        hits = [m.group(0).strip() for m in WEB_ONLY.finditer(text)
                # "Alexander Binder" is an author of the bibliography, not a button
                if not re.search(r"[A-Z][a-z]+\s+$", text[max(0, m.start() - 30):m.start()])]
        if hits:
            found[i] = hits
    return found


def code_in_print(pages: list[str]) -> tuple[dict[int, int], list[int]]:
    """({page: code lines wrapped there}, [pages where a code block continues on the next])."""
    wrapped = {i: text.count(WRAP_MARK) for i, text in enumerate(pages, 1) if WRAP_MARK in text}
    split = [i for i, text in enumerate(pages, 1) for _ in range(text.count(SPLIT_MARK))]
    return wrapped, split


def empty_pages(pdf: Path, block: dict[str, float]) -> list[int]:
    """Pages with no ink in the text block (a blank page, or a running head over nothing); a
    part's title page has its title there."""
    left, right = block["left"], block["left"] + block["width"]
    top, bottom = block["bodytop"], block["bodybottom"]
    out = []
    for page, ink in sorted(page_ink(pdf).items()):
        body = ink[int(top) + 2:int(bottom) - 2, int(left):int(right)]
        if not body.any():
            out.append(page)
    return out


def chapter_pages(pages: list[str]) -> list[int]:
    """The pages of the numbered chapters: from each page that opens with "CHAPTER" to the next
    page that opens with another heading of the book's own (front or back matter)."""
    out, inside = [], False
    for i, text in enumerate(pages, 1):
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        head = lines[0] if lines else ""
        if head == "CHAPTER":
            inside = True
        elif head.isupper() and len(head) > 3 and not head.startswith("CONTENTS"):
            inside = False                  # an unnumbered chapter: front or back matter
        if inside:
            out.append(i)
    return out


def provenance_in_chapters(pages: list[str]) -> dict[int, list[str]]:
    """{page: hits} of hashes, load averages and "uncommitted" on the chapters' pages."""
    found = {}
    for i in chapter_pages(pages):
        hits = [m.group(0) for m in PROVENANCE.finditer(pages[i - 1])]
        if hits:
            found[i] = hits
    return found


def paper_numbers_unnamed(pages: list[str]) -> dict[int, list[str]]:
    """{page: phrases} where a figure, section or table is named by a number without its chapter
    ("Figure 4") and without "the paper's" before it: the paper's, read as the book's."""
    found = {}
    for i, text in enumerate(pages, 1):
        flat = " ".join(text.split())
        hits = [flat[max(0, m.start() - 25):m.end()] for m in PAPER_NUMBER.finditer(flat)
                if not PAPER_NAMED.search(flat[max(0, m.start() - 25):m.start()])]
        if hits:
            found[i] = hits
    return found


def missing_values(pages: list[str]) -> dict[int, list[str]]:
    """{page: values} printed where a value is absent or unformatted: NaN (or None) as a table
    cell, a dict's repr, a placeholder such as RUN-TIME_PAPER or {{ name }}."""
    out = _hits(MISSING, pages)
    for i, text in enumerate(pages, 1):
        for line in text.splitlines():
            cells = re.split(r"\s{2,}", line.strip())
            if len(cells) > 1 and MISSING_CELL & set(cells):
                out.setdefault(i, []).append(line.strip()[:60])
    return out


def place_references(pages: list[str]) -> dict[int, list[str]]:
    """{page: phrases} such as "the plot above": print floats figures, so cite them by number."""
    return _hits(PLACE_REFERENCE, pages)


def uncited_figures(tex: str) -> list[str]:
    """Labels of figures that no text cites by number (a {numref} becomes ``\\ref{label}``)."""
    labels = re.findall(r"\\begin\{figure\}.*?\\label\{\\detokenize\{([^}]*)\}\}.*?\\end\{figure\}",
                        tex, re.DOTALL)
    return [label for label in labels if f"\\ref{{\\detokenize{{{label}}}}}" not in tex]


def small_figure_text(tex: str, block: dict[str, float]) -> list[tuple[float, str]]:
    """(smallest printed text in points, label) of figures shrunk so much that text drawn at
    DRAWN_FONT_PT prints under MIN_FIGURE_PT. A figure is drawn at 100 px per inch and Sphinx
    gives its size in px (``\\sphinxpxdimen``, 0.75 pt), then scales it down to the line's width
    and to 0.8 of the text height (book/_ext/attnxai_book.py)."""
    width = block["width"]
    height = 0.8 * (block["bodybottom"] - block["bodytop"])
    out = []
    for fig in re.findall(r"\\begin\{figure\}.*?\\end\{figure\}", tex, re.DOTALL):
        m = re.search(r"\\sphinxincludegraphics\[width=([\d.]+)\\sphinxpxdimen,"
                      r"height=([\d.]+)\\sphinxpxdimen\]", fig)
        if not m:
            continue
        w, h = float(m.group(1)) * 0.75, float(m.group(2)) * 0.75     # printed at natural size
        scale = min(1.0, width / w, height / h) * 0.75 / 0.72             # drawn: 0.72 pt a px
        label = re.search(r"\\label\{\\detokenize\{([^}]*)\}\}", fig)
        if DRAWN_FONT_PT * scale < MIN_FIGURE_PT:
            out.append((DRAWN_FONT_PT * scale, label.group(1) if label else "a figure"))
    return out


def solution_problems(tex: str, edition: str) -> list[str]:
    """The student's PDF has no solution; the instructor's has every solution after the last
    exercise of its chapter (not under its exercise), linked both ways."""
    title = re.compile(r"\\begin\{sphinxadmonition\}\{\w+\}\{(Exercise|Solution to Exercise) (\d+)\.(\d+)")
    boxes = [(m.group(1), m.group(2), m.group(3), m.start()) for m in title.finditer(tex)]
    solutions = [b for b in boxes if b[0] != "Exercise"]
    exercises = [b for b in boxes if b[0] == "Exercise"]
    if edition == "student":
        return [f"Solution to Exercise {c}.{k} in the student's PDF" for _, c, k, _ in solutions]
    problems = []
    last = {}
    for _, c, k, at in exercises:
        last[c] = at
    for _, c, k, at in solutions:
        if at < last.get(c, -1):
            problems.append(f"Solution to Exercise {c}.{k} stands before the chapter's last exercise")
        later = sorted({ec for _, ec, _, e_at in exercises if ec != c and last.get(c, -1) < e_at < at})
        if later:
            problems.append(f"Solution to Exercise {c}.{k} stands after chapter {later[0]}'s exercises")
    for _, c, k, _ in exercises:
        if not any((c, k) == (sc, sk) for _, sc, sk, _ in solutions):
            problems.append(f"Exercise {c}.{k} has no solution in the instructor's PDF")
    links = len(re.findall(r"\\hyperref\[[^]]*\]\{Solution: page", tex))
    back = len(re.findall(r"\\hyperref\[exercise:[^]]*\]\{The exercise: page", tex))
    if solutions and (links != len(solutions) or back != len(solutions)):
        problems.append(f"{len(solutions)} solutions, {links} links to them and {back} back")
    return problems


# ---------------------------------------------------------------- main
def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("latex_dir", type=Path)
    parser.add_argument("--shots", type=Path, help="write PNGs of the pages with problems here")
    parser.add_argument("--edition", choices=("instructor", "student"), default="instructor",
                        help="the student's PDF has no solutions, the instructor's has them all")
    args = parser.parse_args(argv)
    pdf = args.latex_dir / "attnxai-book.pdf"
    log = (args.latex_dir / "attnxai-book.log").read_text(errors="replace")
    tex = (args.latex_dir / "attnxai-book.tex").read_text()
    block = text_block(log)
    pages = pages_text(pdf)
    n_pages = int(re.search(r"^Pages:\s+(\d+)", run("pdfinfo", str(pdf)), re.MULTILINE).group(1))

    failed = False
    bad_pages: set[int] = set()

    def report(name, problems, detail):
        nonlocal failed
        failed |= bool(problems)
        print(f"{name}: {len(problems)}" + (f": {detail}" if problems else ""))

    print(f"pages: {n_pages}")
    margins = margin_overflows(pdf, block)
    bad_pages |= set(margins)
    report("pages with ink past the margins", margins,
           "; ".join(f"p{p} {w}" for p, w in sorted(margins.items())))
    literals = literal_outputs(pages)
    bad_pages |= set(literals)
    n_literals = sum(len(v) for v in literals.values())
    report("outputs printed as a Python repr", [x for v in literals.values() for x in v],
           f"{n_literals} on {len(literals)} pages: " + "; ".join(
               f"p{p} {', '.join(sorted(set(re.sub(' at 0x[0-9a-f]+', '', x) for x in v)))}"
               for p, v in sorted(literals.items())))
    numbering = numbering_problems(args.latex_dir, tex)
    report("numbering problems", numbering, "; ".join(numbering[:12]))
    site_only = web_only_pages_printed(args.latex_dir)
    report("pages for the site only, printed", site_only, ", ".join(site_only))
    empty = empty_box_titles(tex)
    report("boxes without a title", empty, ", ".join(empty[:12]))
    as_maths = tables_set_as_maths(tex)
    report("tables set as equations", as_maths, ", ".join(as_maths[:12]))
    feet = titles_at_page_foot(pdf, block)
    bad_pages |= set(feet)
    report("box titles at a page foot", feet,
           "; ".join(f"p{p} {t!r}" for p, t in sorted(feet.items())))
    index = proof_index_problems(tex)
    report("proof index problems", index, "; ".join(index[:6]))
    missing = missing_characters(log)
    report("characters missing from the fonts", missing,
           "; ".join(f"{ch} in {font}" for ch, font in missing))
    overfull = overfull_boxes(log)
    report("overfull boxes (TeX)", overfull,
           "; ".join(f"{w:.0f} pt at {where}" for w, where in sorted(overfull, reverse=True)[:12]))
    solutions = solution_problems(tex, args.edition)
    report(f"solution problems ({args.edition}'s PDF)", solutions, "; ".join(solutions[:8]))
    for name, found in (("website-only text", web_only_text(pages)),
                        ("missing values, reprs or placeholders", missing_values(pages)),
                        ("figures cited by their place", place_references(pages))):
        bad_pages |= set(found)
        report(name, found, "; ".join(f"p{p} {', '.join(sorted(set(v)))[:80]}"
                                      for p, v in sorted(found.items())[:12]))
    wrapped, split = code_in_print(pages)
    n_wrapped = sum(wrapped.values())
    print(f"code lines wrapped (the {WRAP_MARK} mark): {n_wrapped} on {len(wrapped)} pages "
          f"(at most {MAX_WRAPPED_CODE}); code blocks split across pages: {len(split)} "
          f"(at most {MAX_SPLIT_CODE})")
    over = ([f"{n_wrapped} wrapped code lines"] if n_wrapped > MAX_WRAPPED_CODE else []) + \
        ([f"{len(split)} split code blocks"] if len(split) > MAX_SPLIT_CODE else [])
    if over:
        bad_pages |= set(wrapped) | set(split)
    report("code beyond the print budget", over,
           "; ".join(over) + ": pages " + ", ".join(map(str, sorted(set(wrapped) | set(split))[:20])))
    blank = empty_pages(pdf, block)
    bad_pages |= set(blank)
    report("empty pages", blank, "pages " + ", ".join(map(str, blank[:20])))
    provenance = provenance_in_chapters(pages)
    bad_pages |= set(provenance)
    report("hashes, load averages or 'uncommitted' on the chapters' pages", provenance,
           "; ".join(f"p{p} {', '.join(sorted(set(v)))[:70]}" for p, v in sorted(provenance.items())[:12]))
    unnamed = paper_numbers_unnamed(pages)
    bad_pages |= set(unnamed)
    report("the paper's figures or sections without \"the paper's\"", unnamed,
           "; ".join(f"p{p} {' | '.join(v)[:90]}" for p, v in sorted(unnamed.items())[:12]))
    if args.edition == "student":
        leaks = _hits(SOLUTIONS_WHERE, pages)
        bad_pages |= set(leaks)
        report("where the solutions are, in the student's PDF", leaks,
               "; ".join(f"p{p} {', '.join(v)}" for p, v in sorted(leaks.items())))
    uncited = uncited_figures(tex)
    report("figures never cited by number", uncited, ", ".join(uncited[:12]))
    small = small_figure_text(tex, block)
    report(f"figures with text under {MIN_FIGURE_PT:g} pt", small,
           "; ".join(f"{label} {pt:.1f} pt" for pt, label in small[:12]))
    if args.shots and bad_pages:
        args.shots.mkdir(parents=True, exist_ok=True)
        for p in sorted(bad_pages):
            run("pdftoppm", "-r", "80", "-png", "-f", str(p), "-l", str(p), str(pdf),
                str(args.shots / "page"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
