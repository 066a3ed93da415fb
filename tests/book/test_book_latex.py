"""The book's LaTeX transforms (book/_ext/attnxai_book.py) on small doctrees: the instructor's
PDF gathers each chapter's solutions at its end with links both ways, print leaves out the launch
cell and the sources of hidden inputs, and a box's page break comes before its label."""

import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

# The extension's unit tests join the group of the build they configure (tests/book/test_book.py):
# quick members of a group of two modules, which tests/test_xdist_schedule.py runs under
# `make test`'s options to check that a group holds.
pytestmark = pytest.mark.xdist_group("book")

pytest.importorskip("sphinx_exercise")
from docutils import nodes  # noqa: E402
from docutils.utils import new_document  # noqa: E402
from sphinx import addnodes  # noqa: E402
from sphinx_exercise.nodes import exercise_enumerable_node, solution_node  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "book" / "_ext"))
import attnxai_book as ext  # noqa: E402


def _chapter():
    doc = new_document("test")
    sof = addnodes.start_of_file(docname="notebooks/01_model")
    chapter = nodes.section()
    chapter += nodes.title("", "The model")
    for k in (1, 2):
        ex = exercise_enumerable_node(label=f"ex-{k}")
        ex += nodes.title("", f"Exercise 1.{k}")
        ex += nodes.paragraph("", "Do it.")
        sol = solution_node(label=f"sol-{k}", target_label=f"ex-{k}")
        sol += nodes.title("", f"Solution to Exercise 1.{k}")
        sol += nodes.paragraph("", "Done.")
        chapter += [ex, sol]
    chapter += nodes.section("", nodes.title("", "Discussion"))
    sof += chapter
    doc += sof
    registry = {f"sol-{k}": {"docname": "notebooks/01_model"} for k in (1, 2)}
    return doc, chapter, SimpleNamespace(sphinx_exercise_registry=registry)


def test_solutions_go_to_the_end_of_their_chapter_linked_both_ways():
    doc, chapter, env = _chapter()
    ext._LatexSolutions.apply(doc, env)
    kinds = [type(c).__name__ for c in chapter.children]
    # exercises and the discussion first, then the heading and the two solutions
    assert kinds == ["title", "exercise_enumerable_node", "exercise_enumerable_node", "section",
                     "raw", "solution_node", "solution_node"]
    assert r"\section*{Solutions}" in chapter[4].astext()
    ex1, sol1 = chapter[1], chapter[5]
    assert r"\hyperref[notebooks/01_model:sol-1]{Solution: page" in ex1[-1].astext()
    assert r"\hyperref[exercise:ex-1]{The exercise: page" in sol1[1].astext()
    assert isinstance(sol1[0], nodes.title)               # the title stays first


def test_print_drops_the_launch_cell_and_hidden_sources():
    doc = new_document("test")
    def cell(tags, classes=()):
        c = nodes.container(nb_element="cell_code", cell_metadata={"tags": tags},
                            classes=["cell", *classes])
        c += nodes.container(nb_element="cell_code_source")
        c += nodes.container(nb_element="cell_code_output")
        return c
    launch, hidden, shown = cell(["hide-input"], [ext.LAUNCH_CLASS]), cell(["hide-input"]), cell([])
    doc += [launch, hidden, shown]
    ext._LatexCells.apply(doc)
    assert launch not in doc.children and len(doc.children) == 2
    assert [c["nb_element"] for c in hidden.children] == ["cell_code_output"]
    assert [c["nb_element"] for c in shown.children] == ["cell_code_source", "cell_code_output"]


def test_print_shows_a_cells_code_only_where_the_chapter_teaches_it():
    """The print cut: a cell's code and its log (stream output) are left out of print, its
    results kept (a table, a figure, maths), unless it is tagged print-code."""
    def cell(tags):
        c = nodes.container(nb_element="cell_code", cell_metadata={"tags": tags}, classes=["cell"])
        c += nodes.container(nb_element="cell_code_source")
        out = nodes.container(nb_element="cell_code_output")
        out += nodes.literal_block("", "timing: 3 s", classes=["output", "stream"])
        out += nodes.math_block("", "x^2", classes=["output", "text_latex"])
        c += out
        return c
    plain, taught = cell([]), cell([ext.PRINT_CODE])
    ext._print_cut(plain)
    assert [c["nb_element"] for c in plain.children] == ["cell_code_output"]
    assert [type(n).__name__ for n in plain[0].children] == ["math_block"]
    assert [c["nb_element"] for c in taught.children] == ["cell_code_source", "cell_code_output"]
    assert len(taught[1].children) == 2


def test_print_leaves_out_the_sites_pages_and_unboxes_the_objectives():
    doc = new_document("test")
    launch = addnodes.start_of_file(docname="book/launch")
    launch += nodes.section("", nodes.title("", "Launch and run"))
    chapter = addnodes.start_of_file(docname="notebooks/01_model")
    section = nodes.section("", nodes.title("", "The model"))
    box = nodes.admonition("", nodes.title("", "Learning objectives"),
                           nodes.paragraph("", "After this chapter you can"), nodes.bullet_list())
    other = nodes.admonition("", nodes.title("", "Note"), nodes.paragraph("", "x"))
    section += [box, other]
    chapter += section
    doc += [launch, chapter]
    assert "book/launch" in ext.WEB_ONLY_PAGES
    ext._drop_web_only_pages(doc)
    assert launch not in doc.children and chapter in doc.children
    ext._objectives_unboxed(doc)
    kinds = [type(c).__name__ for c in section.children]
    assert kinds == ["title", "rubric", "paragraph", "bullet_list", "admonition"]
    assert section[1].astext() == "Learning objectives"


def test_a_box_breaks_the_page_before_its_label():
    doc = new_document("test")
    box = nodes.admonition()
    doc += [nodes.target(ids=["thm-x"]), box]
    ext._needspace_before_boxes(doc)
    assert isinstance(doc[1], nodes.raw) and r"\needspace" in doc[1].astext() and doc[2] is box


def test_solutions_stay_in_their_chapter_when_the_next_one_is_nested_in_it():
    """Two chapters of one part: the assembled book puts the second's start inside the first's
    section; the first's solutions go before it, the second's at its own end."""
    doc, chapter, env = _chapter()
    nxt = addnodes.start_of_file(docname="notebooks/02_next")
    sec = nodes.section()
    sec += nodes.title("", "Next")
    ex = exercise_enumerable_node(label="ex-9")
    ex += nodes.title("", "Exercise 2.1")
    sol = solution_node(label="sol-9", target_label="ex-9")
    sol += nodes.title("", "Solution to Exercise 2.1")
    sec += [ex, sol]
    nxt += sec
    chapter += nxt
    env.sphinx_exercise_registry["sol-9"] = {"docname": "notebooks/02_next"}
    ext._LatexSolutions.apply(doc, env)
    kinds = [type(c).__name__ for c in chapter.children]
    assert kinds[-4:] == ["raw", "solution_node", "solution_node", "start_of_file"]
    assert [type(c).__name__ for c in sec.children] == ["title", "exercise_enumerable_node", "raw",
                                                        "solution_node"]


def test_each_profile_and_seed_has_its_execution_cache():
    """jupyter-cache keys a chapter on its code alone: the same code run on another model (profile
    or seed) must find another cache, or it would show the first model's outputs."""
    names = {ext.execution_cache_name(env) for env in (
        {}, {"ATTNXAI_PROFILE": "paper"}, {"ATTNXAI_PROFILE": "quick"},
        {"ATTNXAI_SEED": "43"}, {"ATTNXAI_PROFILE": "quick", "ATTNXAI_SEED": "43"},
        {"ATTNXAI_PROFILE": "quick", "ATTNXAI_SEED": "44"})}
    assert names == {".jupyter_cache", ".jupyter_cache-quick", ".jupyter_cache-seed43",
                     ".jupyter_cache-quick-seed43", ".jupyter_cache-quick-seed44"}
    assert ext.execution_cache_name({"ATTNXAI_SEED": " 43 "}) == ".jupyter_cache-seed43"
    assert ext.execution_cache_name({"ATTNXAI_SEED": ""}) == ".jupyter_cache"
    with pytest.raises(ValueError, match="ATTNXAI_SEED"):
        ext.execution_cache_name({"ATTNXAI_SEED": "forty-three"})
