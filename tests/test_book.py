"""The whole book builds, warnings as errors, on the quick model (a broken chapter fails here)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_book_builds_on_quick_profile(quick_model):
    jb = Path(sys.executable).parent / "jupyter-book"
    if not jb.exists():
        pytest.fail("jupyter-book is not installed in this environment: pip install -e '.[book]'")
    env = {**os.environ, "ATTNXAI_PROFILE": "quick"}
    out = subprocess.run([str(jb), "build", str(ROOT), "-W", "--keep-going",
                          "--path-output", str(ROOT / "_build" / "test")],
                         capture_output=True, text=True, env=env, cwd=ROOT)
    log = out.stdout + out.stderr
    if out.returncode != 0:
        reports = sorted((ROOT / "_build" / "test" / "_build" / "html" / "reports").glob("**/*.err.log"))
        extra = "\n".join(p.read_text()[-4000:] for p in reports)
        pytest.fail(f"jupyter-book build failed (exit {out.returncode}):\n{log[-8000:]}\n{extra}")
    html = ROOT / "_build" / "test" / "_build" / "html"
    for page in ("book/intro.html", "notebooks/01_model.html", "book/reproducibility.html"):
        assert (html / page).is_file(), page
    chapter = (html / "notebooks" / "01_model.html").read_text()
    assert "text_latex" in chapter          # SymPy output rendered as LaTeX, not images
    assert "solution dropdown" in chapter   # exercises with dropdown solutions
