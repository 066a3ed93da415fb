"""The book's test site: built once per test session on the quick profile, shared by
tests/test_book.py (the build itself) and tests/test_browser.py (the site in a real browser).

``ATTNXAI_TEST_SITE=/path/to/_build/html`` uses an already built site instead (e.g. to run the
browser test against another branch's site); nothing is built then.
``ATTNXAI_TEST_TOC=/path/to/_toc.yml`` builds (or, with ``ATTNXAI_TEST_SITE``, reads) a book of
that table of contents instead of _toc.yml (e.g. a few chapters); the browser test checks the
chapters it lists.
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "_build" / "test"
HTML = OUT / "_build" / "html"
TOC = Path(os.environ.get("ATTNXAI_TEST_TOC") or ROOT / "_toc.yml").resolve()


class BuildFailed(RuntimeError):
    pass


@functools.lru_cache(maxsize=1)
def build_site() -> tuple[Path, str, float]:
    """(html folder, build log, seconds). Raises BuildFailed with the log's tail."""
    given = os.environ.get("ATTNXAI_TEST_SITE")
    if given:
        return Path(given), f"(using the site at {given}, not built)", 0.0
    jb = Path(sys.executable).parent / "jupyter-book"
    if not jb.exists():
        raise BuildFailed("jupyter-book is not installed in this environment: "
                          "pip install -e '.[book]'")
    env = {**os.environ, "ATTNXAI_PROFILE": "quick"}
    start = time.perf_counter()
    toc = ["--toc", str(TOC)] if TOC != (ROOT / "_toc.yml").resolve() else []
    out = subprocess.run([str(jb), "build", str(ROOT), "-W", "--keep-going",
                          "--path-output", str(OUT), *toc],
                         capture_output=True, text=True, env=env, cwd=ROOT)
    seconds = time.perf_counter() - start
    log = out.stdout + out.stderr
    if out.returncode != 0:
        reports = sorted((HTML / "reports").glob("**/*.err.log"))
        extra = "\n".join(p.read_text()[-4000:] for p in reports)
        raise BuildFailed(f"jupyter-book build failed (exit {out.returncode}):\n{log[-8000:]}\n"
                          f"{extra}")
    return HTML, log, seconds
