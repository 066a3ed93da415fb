"""The registry of stated results: every theorem, proposition, corollary and lemma of the book
(a ``prf:`` directive in ``notebooks/*.md`` or ``book/*.md``) has a ``:label:`` and at least one
property-based test that tries to break it, and every such test names a label that exists.

A test registers with the marker ``@pytest.mark.falsifies("<label>")`` next to hypothesis's
``@given`` (README, "Conventions for chapters"); this file reads the markers from the test
sources (no import, so it holds whatever subset of the suite runs). ``python
tests/results/test_results_registry.py`` prints the registry: each result, where it is stated, and its
tests.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
KINDS = ("theorem", "proposition", "corollary", "lemma")
#: A prf directive opening: MyST colon fence (:::) or backtick fence (```), any length.
OPEN = re.compile(r"^(?P<fence>:{3,}|`{3,})\{prf:(?P<kind>" + "|".join(KINDS) + r")\}(?P<title>.*)$")
LABEL = re.compile(r"^:label:\s*(?P<label>\S+)\s*$")


def book_sources() -> list[Path]:
    return sorted((ROOT / "notebooks").glob("*.md")) + sorted((ROOT / "book").glob("*.md"))


def stated_results() -> list[dict]:
    """Every theorem, proposition, corollary and lemma: file, line, kind, title, label (None if the
    directive has no ``:label:`` among its options)."""
    out = []
    for path in book_sources():
        lines = path.read_text(encoding="utf-8").splitlines()
        for i, line in enumerate(lines):
            m = OPEN.match(line.strip())
            if not m:
                continue
            label = None
            for opt in lines[i + 1:i + 6]:               # the options follow the opening line
                if not opt.startswith(":"):
                    break
                lm = LABEL.match(opt.strip())
                if lm:
                    label = lm["label"]
            out.append({"file": path.relative_to(ROOT).as_posix(), "line": i + 1,
                        "kind": m["kind"], "title": m["title"].strip(), "label": label})
    return out


def _decorator_name(node: ast.expr) -> str:
    """``pytest.mark.falsifies(...)`` -> "pytest.mark.falsifies", ``given(...)`` -> "given"."""
    if isinstance(node, ast.Call):
        node = node.func
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))


def falsification_tests() -> list[dict]:
    """Every test function marked ``falsifies``: file, name, labels, and whether it is
    property-based (also decorated with hypothesis's ``given``)."""
    out = []
    for path in sorted((ROOT / "tests").rglob("test_*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            names = [_decorator_name(d) for d in node.decorator_list]
            labels = []
            for d in node.decorator_list:
                if _decorator_name(d).endswith("mark.falsifies"):
                    assert isinstance(d, ast.Call) and d.args and all(
                        isinstance(a, ast.Constant) and isinstance(a.value, str) for a in d.args), \
                        f"{path.name}::{node.name}: falsifies() takes the labels as string literals"
                    labels += [a.value for a in d.args]
            if labels:
                out.append({"file": path.relative_to(ROOT).as_posix(), "test": node.name,
                            "labels": labels,
                            "property_based": any(n.split(".")[-1] == "given" for n in names)})
    return out


def test_every_stated_result_has_a_label():
    missing = [f"{r['file']}:{r['line']} {r['kind']} {r['title']!r}" for r in stated_results()
               if r["label"] is None]
    assert not missing, f"give these results a :label: (and a falsification test): {missing}"


def test_labels_are_unique():
    labels = [r["label"] for r in stated_results() if r["label"]]
    assert len(labels) == len(set(labels)), sorted(x for x in labels if labels.count(x) > 1)


def test_every_stated_result_has_a_falsification_test():
    tested = {label for t in falsification_tests() for label in t["labels"]}
    untested = [f"{r['label']} ({r['file']}:{r['line']}, {r['kind']})" for r in stated_results()
                if r["label"] and r["label"] not in tested]
    assert not untested, ("no test tries to break these results: add a property-based test "
                          f"marked @pytest.mark.falsifies('<label>') for each: {untested}")


def test_every_falsification_test_names_a_stated_result():
    known = {r["label"] for r in stated_results()}
    stale = [f"{t['file']}::{t['test']} -> {label}" for t in falsification_tests()
             for label in t["labels"] if label not in known]
    assert not stale, f"these tests name labels that no theorem, proposition, corollary or " \
                      f"lemma of the book has: {stale}"


def test_falsification_tests_are_property_based():
    plain = [f"{t['file']}::{t['test']}" for t in falsification_tests() if not t["property_based"]]
    assert not plain, f"a falsification test is a hypothesis test (@given): {plain}"


def test_the_registry_reads_what_it_should(tmp_path):
    """The parser on a sample: both fences, a label after other options, a result without one."""
    sample = ("::::{prf:theorem} A\n:class: x\n:label: thm-a\n\nText\n::::\n"
              "```{prf:lemma} B\n:label: lem-b\n```\n:::{prf:corollary}\nNo label\n:::\n"
              ":::{prf:definition} D\n:label: def-d\n:::\n")
    lines = sample.splitlines()
    found = [(OPEN.match(x.strip())["kind"], i) for i, x in enumerate(lines) if OPEN.match(x.strip())]
    assert [k for k, _ in found] == ["theorem", "lemma", "corollary"]
    assert LABEL.match(":label: thm-a")["label"] == "thm-a"


if __name__ == "__main__":
    tests = falsification_tests()
    for r in stated_results():
        names = [f"{t['file']}::{t['test']}" for t in tests if r["label"] in t["labels"]]
        print(f"{r['label'] or '(no label)':28s} {r['kind']:11s} {r['file']}:{r['line']}")
        for n in names or ["(no test)"]:
            print(f"{'':28s}   {n}")
