"""`make test`'s scheduling over its pytest-xdist processes (tests/conftest.py): a group runs in
one process (so the book's test site is built once and its browser and PDF checks read it),
a module's tests travel together, and the longest units of work start first."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import longest_units_first, split_group, torch_threads, work_unit

ROOT = Path(__file__).resolve().parents[1]


def test_a_group_suffix_is_read_as_pytest_xdist_reads_it():
    assert split_group("tests/a.py::t@book") == ("tests/a.py::t", "book")
    assert split_group("tests/a.py::t[x]@other-weights") == ("tests/a.py::t[x]", "other-weights")
    assert split_group("tests/a.py::t[a@b]") == ("tests/a.py::t[a@b]", None)   # a parameter's '@'
    assert split_group("tests/a.py::C::t") == ("tests/a.py::C::t", None)


def test_units_are_groups_else_modules():
    assert work_unit("tests/a.py::t@book") == work_unit("tests/b.py::C::u[1]@book") == "@book"
    assert work_unit("tests/a.py::t") == work_unit("tests/a.py::C::u[1]") == "tests/a.py"
    assert work_unit("tests/a.py::t@g") != work_unit("tests/a.py::t")


def test_longest_units_first_keeps_each_units_tests_together_and_in_order():
    ids = ["tests/a.py::t1", "tests/b.py::u1", "tests/c.py::v@g", "tests/a.py::t2",
           "tests/d.py::w@g", "tests/b.py::u2", "tests/e.py::new"]
    seconds = {"tests/a.py::t1": 1.0, "tests/a.py::t2": 2.0, "tests/b.py::u1": 10.0,
               "tests/c.py::v": 2.0, "tests/d.py::w": 5.0, "tests/b.py::u2": 0.5}
    order = [ids[i] for i in longest_units_first(ids, seconds)]
    # b: 10.5 s, group g: 7 s, a: 3 s, e: unknown (1 s)
    assert order == ["tests/b.py::u1", "tests/b.py::u2", "tests/c.py::v@g", "tests/d.py::w@g",
                     "tests/a.py::t1", "tests/a.py::t2", "tests/e.py::new"]
    assert sorted(longest_units_first(ids, {})) == list(range(len(ids)))


def test_the_units_that_read_the_test_site_go_last():
    """However long, a unit of a "site-" group (browser, PDF) goes after the others, so that the
    process that does not build the site has other work meanwhile."""
    ids = ["tests/p.py::pdf@site-pdf", "tests/a.py::t", "tests/book.py::build@book",
           "tests/w.py::b@site-browser", "tests/x.py::y"]
    seconds = {"tests/p.py::pdf": 300.0, "tests/a.py::t": 5.0, "tests/book.py::build": 600.0,
               "tests/w.py::b": 200.0, "tests/x.py::y": 50.0}
    order = [ids[i] for i in longest_units_first(ids, seconds)]
    assert order == ["tests/book.py::build@book", "tests/x.py::y", "tests/a.py::t",
                     "tests/p.py::pdf@site-pdf", "tests/w.py::b@site-browser"]


#: Tests of the "book" group that need no build, in two modules.
BOOK_GROUP_UNIT_TESTS = ("test_repository_comes_from_the_environment or test_source_maps_are_dropped"
                         " or test_bibliography_labels_are_author_year"
                         " or test_a_box_breaks_the_page_before_its_label")


def test_a_group_runs_in_one_process_under_make_tests_options():
    """pytest -n 2 --dist loadgroup (`make test`) on four tests of the group "book" in two
    modules: one process runs them all, each reported with its group. Without the group (as
    pytest-xdist alone does on pytest >= 9.2) two processes share them out."""
    pytest.importorskip("xdist")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT / "src"), *filter(None, [os.environ.get("PYTHONPATH")])])}
    run = subprocess.run([sys.executable, "-m", "pytest", "-n", "2", "--dist", "loadgroup", "-v",
                          "-p", "no:cacheprovider", "-k", BOOK_GROUP_UNIT_TESTS,
                          "tests/book/test_book.py", "tests/book/test_book_latex.py"],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, (run.stdout + run.stderr)[-4000:]
    ran = re.findall(r"\[(gw\d+)\] \[\s*\d+%\] PASSED (\S+)", run.stdout)
    assert len(ran) == 4, run.stdout[-4000:]
    assert {worker for worker, _ in ran} == {ran[0][0]}, ran
    assert all(split_group(nodeid)[1] == "book" for _, nodeid in ran), ran


def test_a_worker_takes_its_share_of_the_cores():
    assert torch_threads(2, 1) == 2 and torch_threads(16, 1) == 2      # alone: two threads
    assert torch_threads(2, 2) == 1 and torch_threads(3, 2) == 1       # make test on 2-3 cores
    assert torch_threads(4, 2) == 2 and torch_threads(1, 1) == 1
    assert torch_threads(None, 4) == 1
