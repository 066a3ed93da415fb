"""The printed book: tests/check_pdf.sh builds the PDF on the quick model (reusing the test
build's executed chapters) and reads every page (tests/check_pdf.py). Where XeLaTeX or poppler
is missing the test is skipped and says what to install, except in CI (`CI=true`), where
.ci/run installs them and a skip fails (tests/conftest.py)."""

import shutil
import subprocess

import pytest

from booksite import ROOT, STUDENT_LOCK, BuildFailed, book_env, build_site

# A unit of `make test`'s (pytest-xdist, --dist loadgroup) that reads the test site: sent to
# whichever process asks for work first once the book's group has built it (tests/conftest.py,
# next_unit), it finds the site built once for the run (tests/booksite.py, once_per_run).
pytestmark = pytest.mark.xdist_group("site-pdf")

TOOLS = ("xelatex", "latexmk", "pdftoppm", "pdftotext", "pdfinfo")


@pytest.mark.slow
def test_the_pdf_reads_well_on_paper(book_model):
    missing = [t for t in TOOLS if shutil.which(t) is None]
    if missing:
        pytest.skip(f"the PDF check needs {', '.join(missing)}: Debian's TeX packages and "
                    "poppler-utils (README.md, 'Teaching from it')")
    try:
        build_site()          # its executed chapters are what the PDF build reuses
    except BuildFailed as exc:
        pytest.fail(str(exc))
    from filelock import FileLock

    STUDENT_LOCK.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(STUDENT_LOCK)):
        run = subprocess.run(["bash", str(ROOT / "tests" / "check_pdf.sh")], cwd=ROOT,
                             capture_output=True, text=True, timeout=3600, env=book_env())
    assert run.returncode == 0, (run.stdout + run.stderr)[-6000:]


def test_ci_installs_the_tex_packages_the_readme_names():
    """.ci/run installs the PDF check's Debian packages when they are missing (CI machines start
    without TeX): the same list as README.md's install line, so the check runs in CI instead of
    being skipped (tests/conftest.py fails a skip under CI=true)."""
    import re

    readme = (ROOT / "README.md").read_text()
    line = re.search(r"`apt-get install (texlive[^`]*)`", readme, re.DOTALL)
    assert line, "README.md names the TeX packages in an `apt-get install ...` line"
    ci = (ROOT / ".ci" / "run").read_text()
    listed = re.search(r'TEX_PACKAGES="([^"]*)"', ci)
    assert listed, ".ci/run has a TEX_PACKAGES list"
    assert sorted(listed.group(1).split()) == sorted(line.group(1).split())
    for tool in TOOLS:
        assert tool in ci, f".ci/run checks for {tool}"
