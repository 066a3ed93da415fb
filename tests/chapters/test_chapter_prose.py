"""The chapters read as a book: no reader sees the code that writes a sentence, every glued name
is glued, every figure is cited by number and none by its place on the page (README.md,
"Conventions for chapters", 3). Static checks of the chapters' sources (jupytext), no build."""

import ast
import re
from pathlib import Path

import jupytext
import pytest

from attnxai import course

ROOT = Path(__file__).resolve().parents[2]
CHAPTERS = [p if p.is_absolute() else ROOT / p for p in course.toc_chapters(ROOT)]
GLUE_ROLE = re.compile(r"\{glue(?::\w+)?\}`(?:[^`:]+::)?([A-Za-z_]\w*)(?::[^`]*)?`")
PLACE = re.compile(r"\b(?:plot|figure|chart|graph|heat ?map)s?\s+(?:above|below)\b", re.IGNORECASE)


def _glued_names(source: str) -> list[str]:
    """The keyword names of every glue(...) / glue_md(...) call of a cell."""
    try:
        tree = ast.parse(source)
    except SyntaxError:                     # IPython magics: not a glue cell
        return []
    return [k.arg for node in ast.walk(tree) if isinstance(node, ast.Call)
            and getattr(node.func, "id", getattr(node.func, "attr", None)) in ("glue", "glue_md")
            for k in node.keywords if k.arg]


def _cells(path):
    return jupytext.read(path).cells


def _tags(cell):
    return set(cell.metadata.get("tags", []))


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_prose_generators_are_hidden(path):
    shown = [c.source.splitlines()[0][:70] for c in _cells(path) if c.cell_type == "code"
             and "Markdown(" in c.source and not _tags(c) & {"remove-input", "remove-cell"}]
    assert not shown, f"cells that display Markdown with their code shown: {shown}"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_every_glued_name_is_glued_once(path):
    cells = _cells(path)
    used = {m.group(1) for c in cells if c.cell_type == "markdown"
            for m in GLUE_ROLE.finditer(c.source)}
    glued = [name for c in cells if c.cell_type == "code" for name in _glued_names(c.source)]
    missing = used - set(glued)
    twice = {n for n in glued if glued.count(n) > 1}
    assert not missing, f"{path.name}: {{glue}} of names no cell glues: {sorted(missing)}"
    assert not twice, f"{path.name}: names glued twice: {sorted(twice)}"
    hidden = [c.source.splitlines()[0] for c in cells if c.cell_type == "code"
              and _glued_names(c.source) and not _tags(c) & {"remove-cell", "remove-input"}]
    assert not hidden, f"{path.name}: cells that glue but show their code: {hidden}"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_figures_are_cited_by_number_not_by_place(path):
    text = path.read_text()
    names = re.findall(r"^\s+name: (fig-[\w-]+)", text, re.MULTILINE)
    uncited = [n for n in names if f"{{numref}}`{n}`" not in text]
    assert not uncited, f"{path.name}: figures never cited with {{numref}}: {uncited}"
    places = [m.group(0) for m in PLACE.finditer(text)]
    assert not places, f"{path.name}: figures cited by their place: {places}"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_site_only_phrases_are_kept_from_print(path):
    outside = []
    inside = False
    for line in path.read_text().splitlines():
        if re.match(r"^(`{3,}|:{3,})\{only\} html", line):
            inside = True
        elif inside and re.match(r"^(`{3,}|:{3,})\s*$", line):
            inside = False
        elif not inside and re.search(r"click to|\bhover\b|\(also collapsed\)", line, re.I):
            outside.append(line.strip()[:80])
    assert not outside, f"{path.name}: website-only text outside {{only}} html: {outside}"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_no_glue_inside_maths(path):
    """A role inside $...$ is maths, not a role: the reader would see its name."""
    text = re.sub(r"```\{code-cell\}.*?\n```", "", path.read_text(), flags=re.S)
    inside = [m.group(0)[:60] for m in re.finditer(r"(?<!\$)\$(?!\$)([^$]*?)\$", text)
              if "{glue" in m.group(1)]
    assert not inside, f"{path.name}: glue roles inside maths: {inside}"


def _undefined_names(cells) -> list[str]:
    """Names a chapter's code reads that no cell of it defines or imports (order aside): what a
    helper's move out of a chapter leaves behind."""
    import builtins

    defined, loads = set(dir(builtins)) | {"display", "get_ipython"}, set()
    for c in cells:
        if c.cell_type != "code":
            continue
        try:
            tree = ast.parse(c.source)
        except SyntaxError:                 # IPython magics
            continue
        for n in ast.walk(tree):
            if isinstance(n, ast.Name):
                (defined.add(n.id) if isinstance(n.ctx, (ast.Store, ast.Del)) else loads.add(n.id))
            elif isinstance(n, (ast.FunctionDef, ast.ClassDef)):
                defined.add(n.name)
            elif isinstance(n, (ast.Import, ast.ImportFrom)):
                defined |= {(a.asname or a.name).split(".")[0] for a in n.names}
            elif isinstance(n, ast.arg):
                defined.add(n.arg)
            elif isinstance(n, ast.ExceptHandler) and n.name:
                defined.add(n.name)
    return sorted(loads - defined)


def test_the_undefined_name_check_finds_a_left_behind_helper():
    cells = [jupytext.reads("```{code-cell} ipython3\nx = cell(1)\n```\n", "md").cells[0]]
    assert _undefined_names(cells) == ["cell"]


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_every_name_the_code_reads_is_defined(path):
    missing = _undefined_names(_cells(path))
    assert not missing, f"{path.name}: names no cell defines or imports: {missing}"
