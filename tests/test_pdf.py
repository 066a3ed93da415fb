"""The printed book: tests/check_pdf.sh builds the PDF on the quick model (reusing the test
build's executed chapters) and reads every page (tests/check_pdf.py). Where XeLaTeX or poppler
is missing (this project's CI machines) the test is skipped and says what to install."""

import shutil
import subprocess

import pytest

from booksite import ROOT, BuildFailed, build_site

TOOLS = ("xelatex", "latexmk", "pdftoppm", "pdftotext", "pdfinfo")


@pytest.mark.slow
def test_the_pdf_reads_well_on_paper(quick_model):
    missing = [t for t in TOOLS if shutil.which(t) is None]
    if missing:
        pytest.skip(f"the PDF check needs {', '.join(missing)}: Debian's TeX packages and "
                    "poppler-utils (README.md, 'Teaching from it')")
    try:
        build_site()          # its executed chapters are what the PDF build reuses
    except BuildFailed as exc:
        pytest.fail(str(exc))
    run = subprocess.run(["bash", str(ROOT / "tests" / "check_pdf.sh")], cwd=ROOT,
                         capture_output=True, text=True, timeout=3600)
    assert run.returncode == 0, (run.stdout + run.stderr)[-6000:]
