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
