"""The book's test sites, built once per test session on the quick profile, shared by
tests/book/test_book.py (the builds themselves) and tests/book/test_browser.py (the sites in a real browser).

* :func:`build_site`: the whole book, warnings as errors, for the repository _config.yml names
  (the environment's ``ATTNXAI_REPOSITORY`` and ``GITHUB_REPOSITORY`` are ignored, so that the
  test reads the same site on a laptop and in GitHub Actions): while _config.yml names none, a
  site with no repository, no launch button and no made-up address.
* :func:`build_repository_site`: a few pages (:data:`REPOSITORY_PAGES`) built for the repository
  :data:`TEST_REPOSITORY`, as the deploy workflow builds for ``$GITHUB_REPOSITORY``: buttons,
  links and launch cells must all point there.

``ATTNXAI_TEST_SITE=/path/to/_build/html`` (and ``ATTNXAI_TEST_REPOSITORY_SITE`` for the second)
uses an already built site instead (e.g. to run the browser test against another branch's site);
nothing is built then. ``ATTNXAI_TEST_TOC=/path/to/_toc.yml`` builds (or, with
``ATTNXAI_TEST_SITE``, reads) a book of that table of contents instead of _toc.yml (e.g. a few
chapters); the browser test checks the chapters it lists.
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
#: The repository the second test build names (owner/name; nothing is fetched from it).
TEST_REPOSITORY = "attnxai-test/companion"
REPOSITORY_OUT = ROOT / "_build" / "test-repository"
#: The pages of the second build: front matter with repository links, a page with code but no
#: notebook for Colab (no launch button), and a chapter (launch buttons, launch cell).
REPOSITORY_PAGES = {"root": "book/intro",
                    "front": ["book/launch", "book/licence", "book/reproducibility"],
                    "chapters": ["notebooks/01_model"]}
_REPOSITORY_VARS = ("ATTNXAI_REPOSITORY", "GITHUB_REPOSITORY")


#: Held by every build into _build/student-test (the student site of tests/book/test_book.py, the
#: student PDF of tests/check_pdf.sh, which reuses that folder's read documents): they may run in
#: the two processes of `make test` at once, and one folder takes one build at a time.
STUDENT_LOCK = ROOT / "_build" / ".student-test.lock"


class BuildFailed(RuntimeError):
    pass


def _build(out: Path, toc: Path, env: dict, *, strict: bool = True) -> tuple[Path, str, float]:
    jb = Path(sys.executable).parent / "jupyter-book"
    if not jb.exists():
        raise BuildFailed("jupyter-book is not installed in this environment: "
                          "pip install -e '.[book]'")
    start = time.perf_counter()
    args = ["--toc", str(toc)] if toc != (ROOT / "_toc.yml").resolve() else []
    out_html = out / "_build" / "html"
    run = subprocess.run([str(jb), "build", str(ROOT), *(["-W"] if strict else []), "--keep-going",
                          "--path-output", str(out), *args],
                         capture_output=True, text=True, env=env, cwd=ROOT)
    seconds = time.perf_counter() - start
    log = run.stdout + run.stderr
    if run.returncode != 0:
        reports = sorted((out_html / "reports").glob("**/*.err.log"))
        extra = "\n".join(p.read_text()[-4000:] for p in reports)
        raise BuildFailed(f"jupyter-book build failed (exit {run.returncode}):\n{log[-8000:]}\n"
                          f"{extra}")
    return out_html, log, seconds


def book_env(**extra) -> dict:
    """The environment of every test build of the book (site, student site, PDF): the quick
    profile on the tests' quick model (``conftest.quick_test_seed``), so that a build reuses the
    test site's executed chapters (their execution cache is the profile's and the seed's)."""
    from conftest import quick_test_seed

    env = {k: v for k, v in os.environ.items() if k not in _REPOSITORY_VARS}
    return {**env, "ATTNXAI_PROFILE": "quick", "ATTNXAI_SEED": str(quick_test_seed()), **extra}



def execution_cache(env: dict, build: Path = OUT) -> Path:
    """The execution cache a build of ``build`` (a ``--path-output``) in environment ``env`` uses:
    the book extension's name for its profile and seed (book/_ext/attnxai_book.py)."""
    ext = str(ROOT / "book" / "_ext")
    if ext not in sys.path:
        sys.path.insert(0, ext)
    from attnxai_book import execution_cache_name

    return build / "_build" / execution_cache_name(env)


def once_per_run(out: Path, build) -> tuple[Path, str, float]:
    """``build()`` (a ``_build`` of the folder ``out``) once per test run, whichever of `make
    test`'s processes asks first: the others wait for it (a lock beside ``out``) and read its
    result (html folder, log and seconds, or the failure) from a record of the run's id
    (``PYTEST_XDIST_TESTRUNUID``; a run without pytest-xdist records nothing for another). So the
    tests that read the site (browser, explorer, PDF: groups of their own, sent once the book's
    group is done, tests/conftest.py) run in either process, instead of all in the process that
    built it."""
    import json

    from filelock import FileLock

    out.parent.mkdir(parents=True, exist_ok=True)
    record = out.parent / f".{out.name}.built.json"
    run = os.environ.get("PYTEST_XDIST_TESTRUNUID") or f"pid{os.getpid()}-{time.time_ns()}"
    with FileLock(str(record) + ".lock"):
        if record.is_file():
            done = json.loads(record.read_text())
            if done.get("run") == run:
                if done["failure"] is not None:
                    raise BuildFailed(done["failure"])
                return Path(done["html"]), done["log"], done["seconds"]
        try:
            html, log, seconds = build()
            done = {"run": run, "html": str(html), "log": log, "seconds": seconds, "failure": None}
        except BuildFailed as exc:
            done = {"run": run, "failure": str(exc)}
        record.write_text(json.dumps(done))
    if done["failure"] is not None:
        raise BuildFailed(done["failure"])
    return html, log, seconds


@functools.lru_cache(maxsize=1)
def build_site() -> tuple[Path, str, float]:
    """(html folder, build log, seconds) of the book for _config.yml's repository, built once per
    run (:func:`once_per_run`). Raises BuildFailed with the log's tail."""
    given = os.environ.get("ATTNXAI_TEST_SITE")
    if given:
        return Path(given), f"(using the site at {given}, not built)", 0.0
    return once_per_run(OUT, lambda: _build(OUT, TOC, book_env()))


@functools.lru_cache(maxsize=2)
def build_repository_site(edition: str = "instructor") -> tuple[Path, str, float]:
    """(html folder, build log, seconds) of :data:`REPOSITORY_PAGES` built for
    :data:`TEST_REPOSITORY`, in the instructor or the student edition. Not with -W: the pages link
    to others this small book leaves out."""
    given = os.environ.get("ATTNXAI_TEST_REPOSITORY_SITE")
    if given and edition == "instructor":
        return Path(given), f"(using the site at {given}, not built)", 0.0
    out = REPOSITORY_OUT if edition == "instructor" else REPOSITORY_OUT.with_name(
        f"{REPOSITORY_OUT.name}-{edition}")
    out.mkdir(parents=True, exist_ok=True)
    toc = out / "_toc.yml"
    pages = REPOSITORY_PAGES
    toc.write_text("format: jb-book\nroot: " + pages["root"] + "\nparts:\n"
                   "  - caption: Front matter\n    chapters:\n"
                   + "".join(f"      - file: {f}\n" for f in pages["front"])
                   + "  - caption: Chapters\n    numbered: true\n    chapters:\n"
                   + "".join(f"      - file: {f}\n" for f in pages["chapters"]))
    # Its checks read buttons, links and launch cells, not outputs: no chapter runs
    # (the launch cell for a repository is code no other build executes).
    return once_per_run(out, lambda: _build(
        out, toc, book_env(ATTNXAI_REPOSITORY=TEST_REPOSITORY, ATTNXAI_EDITION=edition,
                       ATTNXAI_EXECUTE="off"), strict=False))
