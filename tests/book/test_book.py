"""The whole book builds, warnings as errors, on the quick model (a broken chapter fails here).

The site is built once per session (tests/booksite.py); tests/book/test_browser.py then reads it in
a real browser.
"""

import pytest

from booksite import BuildFailed, build_site

# `make test` runs the suite in two processes (pytest-xdist, --dist loadgroup): every test that
# reads the built site stays in one of them, so the site is built once (tests/booksite.py).
pytestmark = pytest.mark.xdist_group("book")


@pytest.mark.slow
def test_book_builds_on_quick_profile(book_model):
    try:
        html, _, _ = build_site()
    except BuildFailed as exc:
        pytest.fail(str(exc))
    for page in ("book/intro.html", "notebooks/01_model.html", "book/reproducibility.html",
                 "book/launch.html", "book/syllabus.html", "book/licence.html"):
        assert (html / page).is_file(), page
    chapter = (html / "notebooks" / "01_model.html").read_text()
    assert "text_latex" in chapter          # SymPy output rendered as LaTeX, not images
    assert "solution dropdown" in chapter   # exercises with dropdown solutions
    assert not list(html.rglob("*.map")), "source maps are not shipped"
    assert "sphinx-thebe" not in chapter and "binder-examples" not in chapter


def _site_files(html):
    """The pages and the downloadable notebooks and sources of a built site."""
    return [p for p in html.rglob("*") if p.suffix in (".html", ".ipynb", ".md", ".txt")
            and "reports" not in p.parts]


@pytest.mark.slow
def test_no_folder_of_the_building_machine_reaches_a_reader(book_model):
    """No page, downloadable notebook or source shows an absolute path of the machine that built
    the book (its checkout, the model cache, the home folder): a reader's machine has other
    folders (the launch cell names the cache relative to the chapter)."""
    import os
    from pathlib import Path

    from attnxai.data import cache_dir

    try:
        html, _, _ = build_site()
    except BuildFailed as exc:
        pytest.fail(str(exc))
    mine = {str(p) for p in (Path(__file__).resolve().parents[2], cache_dir().resolve(),
                             Path(os.environ.get("ATTNXAI_CACHE", cache_dir())).resolve())}
    home = str(Path.home().resolve())
    if home not in ("/", ""):
        mine.add(home + "/")
    found = [f"{p.relative_to(html)}: {where}" for p in _site_files(html)
             for where in sorted(mine) if where in p.read_text(errors="replace")]
    assert not found, "absolute paths of the building machine:\n" + "\n".join(found[:10])


@pytest.mark.slow
def test_sympy_symbols_are_readable(book_model):
    """SymPy output shows symbols a reader can read: no label turned into a subscript
    (\\alpha_{0 = \\E[\\pi]}) and no argument into one (\\delta_{j(p)})."""
    import re

    try:
        html, _, _ = build_site()
    except BuildFailed as exc:
        pytest.fail(str(exc))
    # in SymPy's output (class text_latex): a subscript holding "= \\E[...]" or "j(p)"
    mangled = re.compile(r"_\{[^{}]*=[^{}]*\[[^{}]*\}|_\{\w+\(\w+\)\}")
    outputs = re.compile(r'<div class="[^"]*\btext_latex\b[^"]*">(.*?)</div>', re.DOTALL)
    found = [f"{p.name}: {m.group(0)}" for p in sorted((html / "notebooks").glob("*.html"))
             for out in outputs.finditer(p.read_text()) for m in mangled.finditer(out.group(1))]
    assert not found, found[:10]


@pytest.mark.slow
def test_every_figure_reads_in_greyscale(book_model):
    """Printed in grey, every line plot of the book can still be read: each figure a chapter
    displays went through plots.setup()'s display hook, which records in the image's metadata
    the legend keys that print the same in grey (plots.grey_twins: same line style, same marker,
    greys closer than plots.GREY_STEP), and no figure has any."""
    from pathlib import Path

    from attnxai.chapters import plots
    from booksite import ROOT, book_env, execution_cache

    try:
        build_site()
    except BuildFailed as exc:
        pytest.fail(str(exc))
    from jupyter_cache import get_cache

    # the chapters as the build executed them: each one's latest record in the execution cache
    # (myst-nb's jupyter_execute copies keep no outputs when the cache answers)
    cache = get_cache(execution_cache(book_env()))
    latest = {}
    for record in sorted(cache.list_cache_records(), key=lambda r: r.created):
        latest[Path(record.uri).stem] = record
    chapters = [md.stem for md in sorted((ROOT / "notebooks").glob("*.md"))]
    assert set(chapters) <= set(latest), f"chapters not in the execution cache: " \
        f"{sorted(set(chapters) - set(latest))}"
    unchecked, twins, figures = [], [], 0
    for stem in chapters:
        nb = cache.get_cache_bundle(latest[stem].pk).nb
        path = Path(stem)
        for k, cell in enumerate(nb["cells"]):
            for out in cell.get("outputs", []):
                plain = "".join(out.get("data", {}).get("text/plain", ""))
                if "image/png" not in out.get("data", {}):
                    if plain.startswith("<Figure size"):     # a figure its formatter failed on
                        unchecked.append(f"{path.stem} cell {k} (not drawn: {plain})")
                    continue
                figures += 1
                check = (out.get("metadata", {}).get("image/png") or {}).get(plots.GREY_METADATA)
                if check is None:
                    unchecked.append(f"{path.stem} cell {k}")
                elif check["twins"]:
                    twins.append(f"{path.stem} cell {k}: {check['twins'][:4]}")
    assert figures, "no figure in the executed chapters"
    assert not unchecked, f"figures displayed without the book's grey check: {unchecked}"
    assert not twins, "legend keys that print the same in grey (give each line a style or " \
        "marker: seaborn's style=, or the book's line cycle):\n" + "\n".join(twins)


def test_student_site_has_no_solutions(book_model):
    """The student edition (`make student`'s site): every exercise, no solution, neither on the
    pages nor in the downloadable sources; it reuses the test build's executed chapters."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    from filelock import FileLock

    from booksite import OUT, ROOT, STUDENT_LOCK, book_env

    try:
        build_site()
    except BuildFailed as exc:
        pytest.fail(str(exc))
    out = ROOT / "_build" / "student-test"
    jb = Path(sys.executable).parent / "jupyter-book"
    env = book_env(ATTNXAI_EDITION="student")
    with FileLock(str(STUDENT_LOCK)):
        run = subprocess.run([str(jb), "build", str(ROOT), "-W", "--keep-going",
                              "--path-output", str(out)], capture_output=True, text=True,
                             env=env, cwd=ROOT)
    assert run.returncode == 0, (run.stdout + run.stderr)[-6000:]
    assert "Executing notebook" not in run.stdout, "the student build ran chapters again"
    html = out / "_build" / "html"
    teacher = OUT / "_build" / "html"
    ext = _extension()
    for page in sorted((html / "notebooks").glob("*.html")):
        text = page.read_text()
        assert 'class="solution' not in text, page.name
        assert text.count('class="exercise') == \
            (teacher / "notebooks" / page.name).read_text().count('class="exercise'), page.name
        # this build names no repository (as the test build): no launch button at all
        assert "colab.research.google.com" not in text and "mybinder.org" not in text, page.name
    for page in [html / "book" / "syllabus.html", *sorted((html / "notebooks").glob("*.html"))]:
        assert ext.STUDENT_BANNER.split(":")[0] in page.read_text(), page.name
    syllabus = (html / "book" / "syllabus.html").read_text()
    assert "This is the student edition" in syllabus and "instructor edition:" not in syllabus
    assert "This is the instructor edition" in (teacher / "book" / "syllabus.html").read_text()
    for src in (html / "_sources").rglob("*"):
        if src.suffix in (".md", ".ipynb"):
            assert "{solution" not in src.read_text(), src
    # nothing in the student edition says where the solutions are (the teachers' note in
    # book/launch.md is for the instructor edition only), neither on a page nor in a source
    import re

    where = re.compile(r"solutions stay on|main branch|instructor edition at the top", re.IGNORECASE)
    assert where.search((teacher / "book" / "launch.html").read_text()), \
        "the instructor edition's teachers' note moved: update this check"
    leaks = [str(p.relative_to(html)) for p in html.rglob("*")
             if p.suffix in (".html", ".md", ".ipynb", ".txt") and where.search(p.read_text())]
    assert not leaks, f"the student edition says where the solutions are: {leaks}"


def test_student_launch_buttons_open_the_student_branch(book_model):
    """With a repository named, the student edition's Binder and Colab buttons open the student
    branch's solution-free notebook of the chapter (a few pages, booksite.REPOSITORY_PAGES)."""
    from booksite import REPOSITORY_PAGES, build_repository_site

    try:
        html, _, _ = build_repository_site("student")
    except BuildFailed as exc:
        pytest.fail(str(exc))
    ext = _extension()
    for chapter in REPOSITORY_PAGES["chapters"]:
        text = (html / f"{chapter}.html").read_text()
        assert 'class="solution' not in text, chapter
        assert f"/blob/{ext.STUDENT_BRANCH}/{chapter}.ipynb" in text, chapter
        assert f"/{ext.STUDENT_BRANCH}?urlpath=lab/tree/{chapter}.ipynb" in text, chapter


def _extension():
    import importlib.util

    from booksite import ROOT

    spec = importlib.util.spec_from_file_location("attnxai_book_ext",
                                                  ROOT / "book" / "_ext" / "attnxai_book.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_repository_comes_from_the_environment(monkeypatch):
    ext = _extension()
    monkeypatch.delenv("ATTNXAI_REPOSITORY", raising=False)
    monkeypatch.delenv("GITHUB_REPOSITORY", raising=False)
    assert ext.repository_override() is None
    monkeypatch.setenv("GITHUB_REPOSITORY", "someone/fork-of-the-book")
    assert ext.repository_override() == "https://github.com/someone/fork-of-the-book"
    monkeypatch.setenv("ATTNXAI_REPOSITORY", "me/mine")
    assert ext.repository_override() == "https://github.com/me/mine"
    monkeypatch.setenv("ATTNXAI_REPOSITORY", "not a repository")
    with pytest.raises(ValueError):
        ext.repository_override()


def test_no_repository_means_no_button_and_no_address(monkeypatch):
    """Without a repository (none in _config.yml, none in the environment) the build turns off the
    repository button and the launch services, and the pages' substitutions say so in words;
    with one, everything points there."""
    from types import SimpleNamespace

    ext = _extension()
    monkeypatch.delenv("ATTNXAI_REPOSITORY", raising=False)
    monkeypatch.delenv("GITHUB_REPOSITORY", raising=False)
    launch = {"notebook_interface": "jupyterlab", "binderhub_url": "https://mybinder.org",
              "colab_url": "https://colab.research.google.com", "thebe": False}

    def configured(url):
        config = SimpleNamespace(html_theme_options={"repository_url": url, "launch_buttons": launch},
                                 myst_substitutions={})
        ext._repository_options(config)
        return config.html_theme_options, config.myst_substitutions

    opts, subs = configured("")
    assert opts["use_repository_button"] is False and opts["repository_url"] == ""
    assert not {"binderhub_url", "colab_url"} & set(opts["launch_buttons"])
    assert subs["repository_url"] == "" and "github" not in " ".join(subs.values())
    assert subs["launch_note"] and subs["clone"] == "take a copy of the book's source"
    monkeypatch.setenv("ATTNXAI_REPOSITORY", "me/mine")
    opts, subs = configured("")
    assert opts["use_repository_button"] is True
    assert opts["repository_url"] == "https://github.com/me/mine"
    assert opts["launch_buttons"]["colab_url"] == "https://colab.research.google.com"
    assert subs["clone"] == "clone [me/mine](https://github.com/me/mine)" and subs["launch_note"] == ""


def test_source_maps_are_dropped(tmp_path):
    ext = _extension()
    (tmp_path / "a.js").write_text("var a = 1;\n//# sourceMappingURL=a.js.map\n")
    (tmp_path / "a.js.map").write_text("{}")
    (tmp_path / "b.css").write_text("a{}\n/*# sourceMappingURL=b.css.map */")
    ext._drop_source_maps(tmp_path)
    assert not list(tmp_path.glob("*.map"))
    assert "sourceMappingURL" not in (tmp_path / "a.js").read_text() + (tmp_path / "b.css").read_text()


def test_bibliography_labels_are_author_year():
    from pybtex.database import parse_file

    from booksite import ROOT

    ext = _extension()
    bib = parse_file(str(ROOT / "book" / "references.bib"))
    labels = dict(zip(bib.entries, ext.AuthorYearLabels().format_labels(bib.entries.values())))
    assert labels["lopardo2024attention"] == "Lopardo et al., 2024"
    assert labels["jain2019attention"] == "Jain and Wallace, 2019"
    for key, entry in bib.entries.items():     # every entry links somewhere
        assert {"doi", "eprint", "url"} & set(entry.fields), key


def test_the_student_edition_says_so_and_launches_its_branch(monkeypatch):
    """ATTNXAI_EDITION=student: the edition is a Sphinx tag ({only} in the syllabus), every page
    has the banner, and the launch buttons open the student branch; the instructor edition
    keeps the repository's branch and has no banner."""
    from types import SimpleNamespace

    from booksite import ROOT

    ext = _extension()
    for name, branch in (("student", ext.STUDENT_BRANCH), ("instructor", "main")):
        monkeypatch.setenv("ATTNXAI_EDITION", name)
        app = SimpleNamespace(tags=set())
        config = SimpleNamespace(html_theme_options={"repository_branch": "main"})
        ext._edition_config(app, config)
        assert name in app.tags
        assert config.html_theme_options["repository_branch"] == branch
        assert ("announcement" in config.html_theme_options) == (name == "student")
    syllabus = (ROOT / "book" / "syllabus.md").read_text()
    assert "```{only} student" in syllabus and "```{only} instructor" in syllabus


PRINTABLE = {"text/latex", "text/markdown", "image/png", "image/jpeg", "application/pdf"}


@pytest.mark.slow
def test_every_rich_output_has_a_form_the_pdf_can_print(book_model):
    """An output that the site shows as HTML needs a LaTeX (or image) form too, or the PDF
    prints its Python repr (README.md, chapter conventions 9). Read in the executed chapters of
    the test build, so it holds where TeX is not installed too (tests/book/test_pdf.py reads the PDF
    itself where it is)."""
    import json

    try:
        html, _, _ = build_site()
    except BuildFailed as exc:
        pytest.fail(str(exc))
    executed = sorted((html.parent / "jupyter_execute").rglob("*.ipynb"))
    assert executed, "no executed notebooks in the test build"
    missing = []
    for path in executed:
        for cell in json.loads(path.read_text())["cells"]:
            if "hide-output" in cell.get("metadata", {}).get("tags", []):
                continue                                   # not in the PDF either
            for out in cell.get("outputs", []):
                data = out.get("data", {})
                if "text/html" in data and not PRINTABLE & set(data):
                    plain = "".join(data.get("text/plain", ""))[:60]
                    missing.append(f"{path.stem}: {plain}")
    assert not missing, f"{len(missing)} outputs with only an HTML form: {missing[:10]}"
