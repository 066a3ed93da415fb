"""The book's chapters run in parallel before Sphinx reads them (book/_ext/attnxai_execute.py), into
the cache myst-nb then reads: on a two-chapter book, both are executed by the extension, two at a
time, and myst-nb finds both in the cache (it executes none); a failing chapter is left to
myst-nb, whose report fails the build as before."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXT = ROOT / "book" / "_ext"


def _extension():
    spec = importlib.util.spec_from_file_location("attnxai_execute", EXT / "attnxai_execute.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod          # its dataclasses look their module up there
    spec.loader.exec_module(mod)
    return mod


def test_jobs_reads_the_environment(monkeypatch):
    ext = _extension()
    monkeypatch.setenv(ext.ENV_JOBS, "3")
    assert ext.jobs(9) == 3 and ext.jobs(2) == 2
    monkeypatch.setenv(ext.ENV_JOBS, "1")
    assert ext.jobs(9) == 1
    for bad in ("two", "0", "-1"):
        monkeypatch.setenv(ext.ENV_JOBS, bad)
        with pytest.raises(ValueError, match=ext.ENV_JOBS):
            ext.jobs(9)
    monkeypatch.delenv(ext.ENV_JOBS)
    assert 1 <= ext.jobs(9) <= 4


CHAPTER = """\
---
jupytext:
  text_representation:
    extension: .md
    format_name: myst
kernelspec:
  display_name: Python 3
  language: python
  name: python3
---

# {title}

```{{code-cell}} ipython3
import os, time
print("threads", os.environ.get("OMP_NUM_THREADS"), {value})
```
"""


def _book(tmp: Path, failing: bool = False) -> Path:
    (tmp / "_config.yml").write_text(textwrap.dedent(f"""\
        title: t
        execute:
          execute_notebooks: cache
          timeout: 120
        sphinx:
          local_extensions:
            attnxai_execute: {EXT}
        """))
    (tmp / "_toc.yml").write_text("format: jb-book\nroot: intro\nchapters:\n  - file: one\n"
                                  "  - file: two\n")
    (tmp / "intro.md").write_text("# Intro\n")
    (tmp / "one.md").write_text(CHAPTER.format(title="One", value="1 / 0" if failing else "1"))
    (tmp / "two.md").write_text(CHAPTER.format(title="Two", value="2"))
    return tmp


def _build(book: Path) -> subprocess.CompletedProcess:
    jb = Path(sys.executable).parent / "jupyter-book"
    env = {**os.environ, "ATTNXAI_BUILD_JOBS": "2"}
    return subprocess.run([str(jb), "build", str(book)], capture_output=True, text=True,
                          env=env, cwd=book, timeout=600)


def test_the_longest_chapters_start_first(tmp_path):
    """By the committed seconds; a chapter the table does not know by its size (1 s a kB)."""
    ext = _extension()
    paths = {}
    for name, size in (("a", 10_000), ("b", 90_000), ("c", 30_000), ("new", 50_000)):
        paths[name] = tmp_path / f"{name}.md"
        paths[name].write_text("x" * size)
    chapters = [ext.Chapter(f"notebooks/{n}", p, None, None, None) for n, p in paths.items()]
    seconds = {"notebooks/a": 150.0, "notebooks/b": 20.0, "notebooks/c": 60.0}
    order = [c.docname.split("/")[1] for c in ext.longest_first(chapters, seconds)]
    assert order == ["a", "c", "new", "b"]
    table = ext.committed_seconds()
    chapters_md = {f"notebooks/{p.stem}" for p in (ROOT / "notebooks").glob("*.md")}
    assert chapters_md <= set(table), "book/data/chapter_seconds.csv lists every chapter"
    assert all(v > 0 for v in table.values())


def test_chapters_run_in_parallel_into_myst_nbs_cache(tmp_path):
    run = _build(_book(tmp_path))
    log = run.stdout + run.stderr
    assert run.returncode == 0, log[-4000:]
    assert "[attnxai] executing 2 chapters, 2 at a time" in log, log[-4000:]
    assert log.count("Using cached notebook") == 2, log[-4000:]
    assert "Executing notebook using" not in log         # myst-nb ran nothing itself
    page = (tmp_path / "_build" / "html" / "one.html").read_text()
    assert "threads 1 1" in page                          # one thread per kernel
    again = _build(tmp_path)                              # nothing left to run
    assert again.returncode == 0 and "[attnxai] executing" not in again.stdout + again.stderr


def test_a_failing_chapter_is_reported_by_myst_nb(tmp_path):
    run = _build(_book(tmp_path, failing=True))
    log = run.stdout + run.stderr
    assert "[attnxai] one: FAILED" in log, log[-4000:]
    assert "Executing notebook failed" in log.replace("\n", " "), log[-4000:]   # myst-nb's report
    report = (tmp_path / "_build" / "html" / "reports" / "one.err.log").read_text()
    assert "ZeroDivisionError" in report                 # the failing cell, as myst-nb saw it
    assert "two" in (tmp_path / "_build" / "html" / "two.html").read_text().lower()
