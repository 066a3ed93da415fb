"""The chapters' conventions for launching and teaching (README.md, "Conventions for chapters").

* the first code cell of a chapter that has one is the launch cell, installing attnxai from
  _config.yml's repository;
* beside such a chapter, a ``.ipynb`` without outputs equal to what the ``.md`` gives (Colab and
  the download menu open it): ``python -m attnxai notebooks`` rewrites them;
* no wrapped line of inline maths starts with a Markdown list marker (it would become a bullet);
* the student edition keeps every exercise and no solution;
* ``attnxai.course.start`` falls back to the quick model when the paper's is not trained.
"""

import dataclasses
import json
import os
import re
from pathlib import Path

import pytest

from attnxai import course
from attnxai.settings import Session

ROOT = Path(__file__).resolve().parents[2]
CHAPTERS = course.chapters(ROOT)
LAUNCHED = course.launched(ROOT)
TOC_CHAPTERS = course.toc_chapters(ROOT)
PAGES = CHAPTERS + sorted((ROOT / "book").glob("*.md"))


def test_the_toc_lists_the_chapters():
    names = [p.stem for p in TOC_CHAPTERS]
    assert names[:7] == ["01_model", "02_attention", "03_gradient", "04_gradient_variants",
                         "05_lime_text", "06_lime_attention", "07_faithfulness"]
    # every chapter written is in the book (only_build_toc_files would drop it silently)
    assert {p.resolve() for p in CHAPTERS} <= {p.resolve() for p in TOC_CHAPTERS}


@pytest.mark.parametrize("md", TOC_CHAPTERS, ids=lambda p: p.stem)
def test_every_chapter_of_the_toc_opens_with_the_launch_cell(md):
    """Every chapter the table of contents lists (a new one too): the title, the learning
    objectives, a few lines of introduction, then the launch cell as the first code cell (input
    hidden), and an .ipynb beside it."""
    problems = course.opening_problems(md)
    assert not problems, f"{md.relative_to(ROOT)} (listed in _toc.yml): " + "; ".join(problems)


def test_a_new_chapter_in_the_toc_without_the_conventions_is_caught(tmp_path):
    """A chapter added to a numbered part of _toc.yml (say, 08 and 09 in "Beyond one layer") is
    one of toc_chapters, and one without the launch cell and its .ipynb has opening problems."""
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "_toc.yml").write_text(
        "format: jb-book\nroot: book/intro\nparts:\n"
        "  - caption: Front matter\n    chapters:\n      - file: book/launch\n"
        "  - caption: Beyond one layer\n    numbered: true\n    chapters:\n"
        "      - file: notebooks/08_layers\n        sections:\n          - file: book/extra\n"
        "  - caption: Back matter\n    chapters:\n      - file: notebooks/09_more.md\n")
    found = course.toc_chapters(tmp_path)
    assert [p.relative_to(tmp_path).as_posix() for p in found] == [
        "notebooks/08_layers.md", "book/extra.md", "notebooks/09_more.md"]
    good = (ROOT / "notebooks" / "01_model.md").read_text()
    (tmp_path / "notebooks" / "08_layers.md").write_text(good)
    (tmp_path / "notebooks" / "08_layers.ipynb").write_text("{}")
    assert course.opening_problems(tmp_path / "notebooks" / "08_layers.md") == []
    bare = good.replace(course.launch_cell_md(course.repository_url(ROOT)) + "\n", "")
    (tmp_path / "notebooks" / "09_more.md").write_text(bare)
    problems = course.opening_problems(tmp_path / "notebooks" / "09_more.md")
    assert any("launch cell" in p for p in problems) and any(".ipynb" in p for p in problems)
    assert course.opening_problems(tmp_path / "book" / "extra.md") == [
        f"{tmp_path / 'book' / 'extra.md'} does not exist"]


@pytest.mark.parametrize("md", LAUNCHED, ids=lambda p: p.stem)
def test_launch_cell_installs_from_the_configured_repository(md):
    cell = course.launch_cell_source(md.read_text())
    assert cell == course.launch_cell(course.repository_url(ROOT)), (
        f"{md.name}: the launch cell differs from attnxai.course.launch_cell() for _config.yml's "
        "repository; run `python -m attnxai notebooks --launch-cells`")


def test_launch_cell_is_valid_ipython():
    from IPython.core.inputtransformer2 import TransformerManager

    code = TransformerManager().transform_cell(course.launch_cell("https://github.com/x/y"))
    compile(code, "<launch cell>", "exec")
    assert "run_line_magic('pip'" in code and "git+https://github.com/x/y" in code
    local = TransformerManager().transform_cell(course.launch_cell(""))
    compile(local, "<launch cell>", "exec")
    assert "pip" not in local.replace("pip install -e .", "") and "github" not in local


def test_no_repository_no_placeholder(tmp_path):
    """With no repository in _config.yml the launch cells install nothing (no made-up address);
    with one they install from it; a placeholder owner/name is never in a chapter."""
    (tmp_path / "_config.yml").write_text("repository:\n  url: ''\n")
    assert course.repository_url(tmp_path) == ""
    (tmp_path / "_config.yml").write_text("title: x\n")
    assert course.repository_url(tmp_path) == ""
    (tmp_path / "_config.yml").write_text("repository:\n  url: https://github.com/a/b/\n")
    assert course.repository_url(tmp_path) == "https://github.com/a/b"
    text = (ROOT / "notebooks" / "01_model.md").read_text()
    with_repo = course.with_launch_cell(text, "https://github.com/a/b")
    assert 'git+https://github.com/a/b"' in with_repo
    assert course.with_launch_cell(with_repo, "") == course.with_launch_cell(text, "")
    for md in LAUNCHED:
        assert "OWNER/REPOSITORY" not in md.read_text() and \
            "OWNER/REPOSITORY" not in md.with_suffix(".ipynb").read_text(), md.name


def test_ipynb_beside_the_chapters_are_in_sync():
    stale = course.stale_notebooks(ROOT)
    assert not stale, "\n".join(stale) + "\nrun `python -m attnxai notebooks`"
    for md in LAUNCHED:
        nb = json.loads(md.with_suffix(".ipynb").read_text())
        code = [c for c in nb["cells"] if c["cell_type"] == "code"]
        assert all(c["outputs"] == [] and c["execution_count"] is None for c in code)
        assert "".join(code[0]["source"]).startswith(course.LAUNCH_MARKER)


@pytest.mark.parametrize("md", PAGES, ids=lambda p: p.stem)
def test_no_wrapped_inline_maths_line_starts_with_a_list_marker(md):
    """A line inside $...$ that starts with `+ `, `- `, `* ` or `1. ` becomes a list item."""
    stack, problems, open_dollars = [], [], 0     # open fences: "code" or "directive"
    for n, line in enumerate(md.read_text().splitlines(), 1):
        fence = re.match(r"^\s*(`{3,}|:{3,})\s*(\S*)", line)
        if fence:
            info = fence.group(2)
            if stack and not info:
                stack.pop()
            elif info.startswith("{") and not info.startswith("{code-cell"):
                stack.append("directive")
            else:
                stack.append("code")
            open_dollars = 0
            continue
        if "code" in stack:
            continue
        if not line.strip() or line.strip() == "$$":
            open_dollars = 0
            continue
        if open_dollars % 2 == 1 and re.match(r"^\s*([-+*]|\d+[.)])\s", line):
            problems.append(f"{md.name}:{n}: {line.strip()[:60]}")
        open_dollars += len(re.findall(r"(?<![\\$])\$(?!\$)", line))
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("md", CHAPTERS, ids=lambda p: p.stem)
def test_student_edition_has_every_exercise_and_no_solution(md):
    nb = course.chapter_notebook(md, student=True)
    text = "".join("".join(c["source"]) for c in nb["cells"])
    src = md.read_text()
    assert text.count("{exercise}") == src.count("{exercise}")
    assert "{solution" not in text
    code_in = [c for c in course.chapter_notebook(md)["cells"] if c["cell_type"] == "code"]
    code_out = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert len(code_in) == len(code_out)


def test_strip_solutions_forms():
    text = ("a\n\n```{solution} ex\n:class: dropdown\n\nx $y$\n```\n\nb\n\n"
            "::::{solution} ex2\nz\n::::\n\nc\n\n"
            "```{solution-start} ex3\n```\nhidden\n```{code-cell}\n1\n```\n```{solution-end}\n```\n\nd\n")
    assert course.strip_solutions_md(text) == "a\n\nb\n\nc\n\nd\n"
    # text for teachers (where the solutions are) leaves with them; the student's stays
    teachers = ("a\n\n````{only} instructor\n- the solutions are on main\n````\n\n"
                "```{only} instructor and latex\nx\n```\n\n```{only} student\ns\n```\n")
    assert course.strip_solutions_md(teachers) == "a\n\n```{only} student\ns\n```\n"


def test_start_falls_back_to_quick_without_a_trained_paper_model(tmp_path, monkeypatch, capsys,
                                                                 archive):
    """The fallback is the session start() returns, a value the chapter passes on (not through
    the environment, nor a setting held in the package): what the chapter's pretrained(session)
    and session.sized() use."""
    monkeypatch.setenv("ATTNXAI_CACHE", str(tmp_path))
    monkeypatch.delenv("ATTNXAI_PROFILE", raising=False)
    monkeypatch.setenv("ATTNXAI_SEED", "43")
    session = course.start()
    assert session == Session("quick", 43) and "ATTNXAI_PROFILE" not in os.environ
    assert session.sized(paper=10, quick=2) == 2 and Session().sized(paper=10, quick=2) == 10
    out = capsys.readouterr().out
    assert "FALLS BACK TO THE QUICK MODEL" in out and "seed 43 (ATTNXAI_SEED)" in out
    with pytest.raises(dataclasses.FrozenInstanceError):
        session.profile = "paper"                       # a session is a value: never changed


def test_start_respects_an_explicit_profile(monkeypatch, capsys):
    monkeypatch.setenv("ATTNXAI_PROFILE", "quick")
    monkeypatch.delenv("ATTNXAI_SEED", raising=False)
    assert course.start() == Session("quick", None)
    assert "ATTNXAI_PROFILE=quick is set" in capsys.readouterr().out
    monkeypatch.setenv("ATTNXAI_PROFILE", "nonsense")
    with pytest.raises(ValueError, match="ATTNXAI_PROFILE"):
        course.start()


def test_every_chapter_passes_its_session_on():
    """A chapter (and a book page with code) names the model and the sizes of its session: no
    ``attnxai.pretrained()`` without an argument (the paper's model, even in the quick build), no
    module-level ``sized``/``profile()`` of a session held elsewhere; a chapter with a launch cell
    gets its ``session`` there."""
    import jupytext

    pages = course.toc_chapters(ROOT) + [ROOT / "book" / "explore.md",
                                         ROOT / "book" / "reproducibility.md"]
    bare = re.compile(r"attnxai\.pretrained\(\s*(\)|progress=|archive=|train_if_missing=)")
    held = re.compile(r"(?<![\w.])(sized|profile)\(|chapters\.runconfig|settings\.current")
    checked = 0
    for page in pages:
        if not page.is_file() or "```{code-cell}" not in page.read_text():
            continue
        code = "\n".join(c.source for c in jupytext.read(page, fmt="md:myst").cells
                         if c.cell_type == "code")
        assert not bare.search(code), f"{page.name}: attnxai.pretrained() without the session"
        assert not held.search(code), f"{page.name}: {held.search(code).group(0)}"
        if course.launch_cell_source(page.read_text()) is not None:
            assert "session = attnxai.course.start()" in code, page.name
        if "pretrained(" in code or "sized(" in code:
            assert "session" in code, page.name
        checked += 1
    assert checked >= 10, checked


def test_cli_notebooks_check_and_student(tmp_path):
    from attnxai.cli import main

    assert main(["notebooks", "--root", str(ROOT), "--check"]) == 0
    assert main(["notebooks", "--root", str(ROOT), "--student", "--out", str(tmp_path)]) == 0
    written = sorted(p.stem for p in tmp_path.glob("*.ipynb"))
    assert written == [p.stem for p in CHAPTERS]
    assert main(["notebooks", "--root", str(ROOT), "--student"]) == 2   # needs --out


def test_binder_installs_the_package_and_opens_md_as_notebooks():
    import yaml

    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    assert "-e ." in pip and any(p.startswith("jupytext") for p in pip)
    post = ROOT / "postBuild"
    assert post.is_file() and os.access(post, os.X_OK)
    body = post.read_text()
    settings = json.loads(body.split("<<'JSON'\n", 1)[1].split("\nJSON\n", 1)[0])
    viewers = settings["@jupyterlab/docmanager-extension:plugin"]["defaultViewers"]
    assert viewers["markdown"] == "Jupytext Notebook"
    # repo2docker ignores the root's files when one of these folders exists
    assert not (ROOT / "binder").exists() and not (ROOT / ".binder").exists()


def test_the_launch_cell_shows_no_folder_of_the_machine(tmp_path, monkeypatch):
    """The launch cell's output is read on the site and in downloaded notebooks: the cache is
    named relative to the chapter's folder or the home folder, never by an absolute path."""
    chapter = tmp_path / "book" / "notebooks"
    chapter.mkdir(parents=True)
    monkeypatch.chdir(chapter)
    assert course.shown_path(tmp_path / "book" / ".cache") == "../.cache"
    assert course.shown_path(Path.home() / ".cache" / "attnxai") == "~/.cache/attnxai"
    assert course.shown_path("/srv/elsewhere/cache") == "…/cache"
