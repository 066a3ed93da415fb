"""The whole book builds, warnings as errors, on the quick model (a broken chapter fails here).

The site is built once per session (tests/booksite.py); tests/test_browser.py then reads it in
a real browser.
"""

import pytest

from booksite import BuildFailed, build_site


@pytest.mark.slow
def test_book_builds_on_quick_profile(quick_model):
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


@pytest.mark.slow
def test_student_site_has_no_solutions(quick_model):
    """The student edition (`make student`'s site): every exercise, no solution, neither on the
    pages nor in the downloadable sources; it reuses the test build's executed chapters."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    from booksite import OUT, ROOT

    try:
        build_site()
    except BuildFailed as exc:
        pytest.fail(str(exc))
    out = ROOT / "_build" / "student-test"
    jb = Path(sys.executable).parent / "jupyter-book"
    env = {**os.environ, "ATTNXAI_PROFILE": "quick", "ATTNXAI_EDITION": "student"}
    run = subprocess.run([str(jb), "build", str(ROOT), "-W", "--keep-going",
                          "--path-output", str(out)], capture_output=True, text=True, env=env,
                         cwd=ROOT)
    assert run.returncode == 0, (run.stdout + run.stderr)[-6000:]
    assert "Executing notebook" not in run.stdout, "the student build ran chapters again"
    html = out / "_build" / "html"
    teacher = OUT / "_build" / "html"
    for page in sorted((html / "notebooks").glob("*.html")):
        text = page.read_text()
        assert 'class="solution' not in text, page.name
        assert text.count('class="exercise') == \
            (teacher / "notebooks" / page.name).read_text().count('class="exercise'), page.name
    for src in (html / "_sources").rglob("*"):
        if src.suffix in (".md", ".ipynb"):
            assert "{solution" not in src.read_text(), src
