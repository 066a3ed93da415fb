"""Every sentence of the book is Markdown a writer edits (issue 44, deliverable 4): no chapter
writes a sentence with ``display(Markdown(...))``, every glued number has a name that says what
it holds (``lime_vs_theory_median``, not ``b12``), unique across the book, and the ``{glue}``
roles of the Markdown and the ``glue(...)`` calls of the code match both ways. Static checks of
the chapters' sources (jupytext), no execution."""

import ast
import collections
import re
from pathlib import Path

import jupytext
import pytest

from attnxai import course

ROOT = Path(__file__).resolve().parents[2]
CHAPTERS = [p if p.is_absolute() else ROOT / p for p in course.toc_chapters(ROOT)]
GLUE_ROLE = re.compile(r"\{glue(?::\w+)?\}`(?:[^`:]+::)?([A-Za-z_]\w*)(?::[^`]*)?`")
#: lower-case words joined by "_": at least two of them, one a word of three letters or more
KEY = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)+")
#: a part that is a code rather than a word: a letter or two and a number (``b12``, ``i22b``,
#: ``se6``); the norms' names ``l1`` and ``l2`` are words of the subject
CODE = re.compile(r"[a-z]{1,2}\d+[a-z]?")
NORMS = {"l1", "l2"}


def opaque(name: str) -> str | None:
    """Why ``name`` does not say what it holds, or None when it does."""
    if not KEY.fullmatch(name):
        return "not two or more lower-case words joined by '_'"
    parts = name.split("_")
    codes = [p for p in parts if CODE.fullmatch(p) and p not in NORMS]
    if codes:
        return f"a code, not a word: {codes}"
    if not any(p.isalpha() and len(p) >= 3 for p in parts):
        return "no word of three letters or more"
    return None


def glue_calls(source: str) -> list[str]:
    """The keyword names of every glue(...) / glue_md(...) call of a cell's source (a cell with
    IPython magics is not a glue cell)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call)
             and getattr(node.func, "id", getattr(node.func, "attr", None)) in ("glue", "glue_md")]
    if any(k.arg is None for c in calls for k in c.keywords):
        raise AssertionError("glue(**...): name every glued value where it is glued")
    return [k.arg for c in calls for k in c.keywords]


def roles(markdown: str) -> list[str]:
    return [m.group(1) for m in GLUE_ROLE.finditer(markdown)]


def _chapter(path):
    cells = jupytext.read(path).cells
    glued = [n for c in cells if c.cell_type == "code" for n in glue_calls(c.source)]
    used = [n for c in cells if c.cell_type == "markdown" for n in roles(c.source)]
    return cells, glued, used


def test_the_name_rule_rejects_codes_and_keeps_words():
    for bad in ("b12", "i61", "f1", "i22b", "gap", "cert_se6", "g_n", "Top_Word"):
        assert opaque(bad), bad
    for good in ("lime_vs_theory_median", "rho_l1", "n_reviews", "bfloat16_reviews",
                 "first_five_negative_lime_pred_positive"):
        assert opaque(good) is None, good


def test_the_parsers_find_roles_and_glued_names():
    md = "Median {glue:text}`lime_median:.1%`, {glue:md}`top_words:myst` and {glue}`n_runs`."
    assert roles(md) == ["lime_median", "top_words", "n_runs"]
    assert glue_calls("glue(a_b=1, c_d=x)\nprose.glue_md(e_f='w')") == ["a_b", "c_d", "e_f"]
    with pytest.raises(AssertionError, match=r"glue\(\*\*"):
        glue_calls("glue(**values)")


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_no_sentence_is_written_in_python(path):
    cells = jupytext.read(path).cells
    writers = [c.source.strip().splitlines()[0][:70] for c in cells if c.cell_type == "code"
               and re.search(r"\bMarkdown\s*\(", c.source)]
    assert not writers, (f"{path.name}: cells that write a sentence with Markdown(...): {writers}; "
                         "write it in the Markdown and glue the words that change")


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_glued_names_say_what_they_hold(path):
    _, glued, used = _chapter(path)
    bad = {n: opaque(n) for n in sorted(set(glued) | set(used)) if opaque(n)}
    assert not bad, f"{path.name}: glue names that do not say what they hold: {bad}"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_every_glued_name_is_read_and_every_role_is_glued(path):
    _, glued, used = _chapter(path)
    unread = sorted(set(glued) - set(used))
    missing = sorted(set(used) - set(glued))
    assert not missing, f"{path.name}: roles of names no cell glues: {missing}"
    assert not unread, f"{path.name}: glued names no sentence reads: {unread}"


def test_glued_names_are_unique_across_the_book():
    where = collections.defaultdict(list)
    for path in CHAPTERS:
        for name in _chapter(path)[1]:
            where[name].append(path.stem)
    twice = {n: ps for n, ps in where.items() if len(ps) > 1}
    assert not twice, f"names glued more than once in the book: {twice}"
