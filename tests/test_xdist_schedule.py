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
from conftest import longest_units_first, next_unit, split_group, torch_threads, work_unit

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


def test_a_unit_that_reads_the_site_is_sent_once_the_site_is_built():
    queue = ["@site-pdf", "tests/a.py", "@site-browser", "tests/b.py"]
    assert next_unit(queue, site_built=False) == "tests/a.py"
    assert next_unit(queue, site_built=True) == "@site-pdf"
    assert next_unit(["@site-pdf", "@site-browser"], site_built=False) == "@site-pdf"  # all left
    with pytest.raises(ValueError, match="empty"):
        next_unit([], site_built=True)


class _Node:
    """A pytest-xdist worker as the scheduler sees it: the tests sent to it, in order."""

    def __init__(self, name: str):
        import types

        self.name, self.sent, self.shutting_down = name, [], False
        self.gateway = types.SimpleNamespace(id=name)

    def send_runtest_some(self, indices):
        self.sent.extend(indices)

    def shutdown(self):
        self.shutting_down = True


def _simulate(seconds: dict[str, float]) -> dict:
    """`make test`'s scheduler (tests/conftest.py) on two simulated processes running tests of
    the given seconds (node ids with their groups, in the order the workers collect them), a test
    of a "site-" group starting no earlier than the book group's end (it waits for the site: a
    lock, tests/booksite.py). Returns each test's (process, start, end)."""
    import types

    from conftest import SITE_BUILDER, pytest_xdist_make_scheduler

    ids = [list(seconds)[i] for i in longest_units_first(list(seconds), {
        split_group(n)[0]: s for n, s in seconds.items()})]
    config = types.SimpleNamespace(option=types.SimpleNamespace(), getvalue=lambda name: {
        "dist": "loadgroup", "tx": ["2*popen"]}[name])
    sched = pytest_xdist_make_scheduler(config, None)
    nodes = [_Node("gw0"), _Node("gw1")]
    for node in nodes:
        sched.add_node(node)
        sched.add_node_collection(node, ids)
    sched.schedule()
    book = [n for n in ids if work_unit(n) == SITE_BUILDER]
    clock, ran = {n.name: 0.0 for n in nodes}, {}

    def next_test(node):
        """(start, node id) of the node's next test, or None: nothing sent, or waiting for the
        site that a test not yet run builds."""
        count = len([r for r in ran.values() if r[0] == node.name])
        if count == len(node.sent):
            return None
        nodeid = ids[node.sent[count]]
        if not work_unit(nodeid).startswith("@site-"):
            return clock[node.name], nodeid
        if not set(book) <= set(ran):
            return None
        return max([clock[node.name], *(ran[b][2] for b in book)]), nodeid

    while len(ran) < len(ids):
        ready = [(t + seconds[n], t, n, node) for node in nodes
                 if (nt := next_test(node)) is not None for t, n in [nt]]
        assert ready, f"no process can run a test: {ran}"
        end, t, nodeid, node = min(ready, key=lambda r: r[0])
        clock[node.name] = end
        ran[nodeid] = (node.name, t, end)
        sched.mark_test_complete(node, ids.index(nodeid))
    return ran


def test_the_long_units_that_read_the_site_start_once_it_is_built():
    """On two simulated processes: the book's group (the site's build) in one, the other's units
    meanwhile; once the group is done the units that read the site (the longest left) go next
    (after the at most two units pytest-xdist had already sent each process), so that no process
    waits for the build and the two end within two short units of each other. Sending them last
    (as before) ended the processes 70 s apart here; sending them at once, one waited 120 s."""
    seconds = {"tests/book.py::build@book": 100.0, "tests/book.py::student@book": 20.0,
               "tests/p.py::pdf@site-pdf": 80.0, "tests/w.py::pages@site-browser": 60.0,
               "tests/x.py::page@site-explorer": 50.0,
               "tests/a.py::t1": 50.0, "tests/a.py::t2": 10.0, "tests/b.py::t": 40.0,
               **{f"tests/s{k}.py::t": 10.0 for k in range(16)}}
    ran = _simulate(seconds)
    book_end = max(ran[n][2] for n in ran if n.endswith("@book"))
    for process in ("gw0", "gw1"):               # no process was idle: each test followed the last
        spans = sorted((s, e) for p, s, e in ran.values() if p == process)
        assert spans[0][0] == 0.0 and all(a[1] == b[0] for a, b in zip(spans, spans[1:])), ran
    for reader in [n for n in seconds if "@site-" in n]:
        assert ran[reader][1] >= book_end, ran
    ends = {p: max(e for q, _, e in ran.values() if q == p) for p in ("gw0", "gw1")}
    assert abs(ends["gw0"] - ends["gw1"]) <= 20.0, ends
    assert max(ends.values()) <= sum(seconds.values()) / 2 + 10.0, ends


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
