"""The GitHub Actions workflows: valid (check-jsonschema's vendored GitHub-workflow schema, run
with every network route closed, so it needs none), and doing what the README says: deploy builds
the book with `make book` and publishes _build/html with the Pages actions, with caches keyed on
their inputs; the tests workflow runs `bash .ci/run` on pull requests."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
CHECK = Path(sys.executable).parent / "check-jsonschema"
OFFLINE = {"HTTP_PROXY": "http://127.0.0.1:9", "HTTPS_PROXY": "http://127.0.0.1:9",
           "http_proxy": "http://127.0.0.1:9", "https_proxy": "http://127.0.0.1:9",
           "NO_PROXY": "", "no_proxy": ""}


def _validate(*paths):
    if not CHECK.exists():
        pytest.fail("check-jsonschema is not installed: pip install -e '.[test]'")
    return subprocess.run([str(CHECK), "--builtin-schema", "vendor.github-workflows",
                           *map(str, paths)], capture_output=True, text=True,
                          env={**os.environ, **OFFLINE}, timeout=120)


def _load(name):
    data = yaml.safe_load((ROOT / ".github" / "workflows" / name).read_text())
    data["on"] = data.pop(True, data.get("on"))     # YAML 1.1 reads the key `on` as True
    return data


def _steps(workflow):
    return [s for job in workflow["jobs"].values() for s in job.get("steps", [])]


def test_workflows_match_the_github_schema_offline():
    assert {p.name for p in WORKFLOWS} >= {"deploy.yml", "tests.yml"}
    out = _validate(*WORKFLOWS)
    assert out.returncode == 0, out.stdout + out.stderr


def test_the_validator_rejects_a_broken_workflow(tmp_path):
    bad = tmp_path / "bad.yml"
    bad.write_text("name: bad\non: push\njobs:\n  x:\n    runs-on: ubuntu-latest\n"
                   "    steps:\n      - uses: actions/checkout@v4\n        withh: {}\n")
    out = _validate(bad)
    assert out.returncode != 0, "the schema check accepted an unknown step key"


def test_deploy_builds_with_the_readme_command_and_publishes_pages():
    wf = _load("deploy.yml")
    assert "push" in wf["on"] and wf["on"]["push"]["branches"] == ["main"]
    assert wf["permissions"]["pages"] == "write" and wf["permissions"]["id-token"] == "write"
    steps = _steps(wf)
    uses = [s.get("uses", "") for s in steps]
    runs = "\n".join(s.get("run", "") for s in steps)
    assert "make book" in runs and "make book" in (ROOT / "README.md").read_text()
    assert any(u.startswith("actions/upload-pages-artifact@") for u in uses)
    assert any(u.startswith("actions/deploy-pages@") for u in uses)
    upload = next(s for s in steps if s.get("uses", "").startswith("actions/upload-pages-artifact"))
    assert upload["with"]["path"] == "_build/html"
    caches = {s["with"]["path"]: s["with"]["key"] for s in steps
              if s.get("uses", "").startswith("actions/cache@")}
    assert "_build/.jupyter_cache" in caches and ".cache" in caches
    for key in caches.values():
        assert "hashFiles(" in key, key
    assert "src/" in caches["_build/.jupyter_cache"] and "notebooks/" in caches["_build/.jupyter_cache"]
    # the repository comes from the one it runs in, never written in the workflow
    text = (ROOT / ".github" / "workflows" / "deploy.yml").read_text()
    assert "github.com/" not in text.replace("https://github.com/actions", "")


def test_deploy_publishes_the_books_models_beside_the_site():
    """After `make book`, the cached models go to _build/html/models (the folder the package
    downloads from: attnxai.model.store.hub), before the site is uploaded."""
    wf = _load("deploy.yml")
    steps = _steps(wf)
    names = [s.get("run", "") + s.get("uses", "") for s in steps]
    build = next(i for i, n in enumerate(names) if "make book" in n)
    publish = next(i for i, n in enumerate(names) if "publish-models" in n)
    upload = next(i for i, n in enumerate(names) if n.startswith("actions/upload-pages-artifact"))
    assert build < publish < upload
    assert "--out _build/html/models" in names[publish]
    assert names[publish].split()[0] == ".venv/bin/python"
    from attnxai.model.store.hub import INDEX
    from attnxai.store.repository import pages_url

    # readers look where the Pages site of the repository serves that folder
    assert pages_url("https://github.com/o/n") + "models/" + INDEX == "https://o.github.io/n/models/index.json"
    assert wf["jobs"]["build"]["env"]["ATTNXAI_REPOSITORY"] == "${{ github.repository }}"


def test_pull_requests_run_the_ci_script():
    wf = _load("tests.yml")
    assert "pull_request" in wf["on"]
    assert any(s.get("run", "").strip().endswith("bash .ci/run") for s in _steps(wf))


def test_deploy_publishes_the_student_edition_and_its_branch():
    """`make student` beside the book (under student/), and the chapters without solutions
    pushed, last, to the branch that the student site's Binder and Colab buttons open."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("attnxai_book_ext",
                                                  ROOT / "book" / "_ext" / "attnxai_book.py")
    ext = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ext)
    wf = _load("deploy.yml")
    build = wf["jobs"]["build"]
    assert build["permissions"]["contents"] == "write"      # to push the branch
    runs = [s.get("run", "") for s in build["steps"]]
    text = "\n".join(runs)
    book = next(i for i, r in enumerate(runs) if "make book" in r)
    student = next(i for i, r in enumerate(runs) if "make student" in r)
    strip = next(i for i, r in enumerate(runs) if "--student --in-place" in r)
    upload = next(i for i, s in enumerate(build["steps"])
                  if s.get("uses", "").startswith("actions/upload-pages-artifact"))
    assert book < student < strip < upload
    assert "cp -r _build/student/_build/html _build/html/student" in text
    push = runs[strip]
    assert f"git switch -C {ext.STUDENT_BRANCH}" in push
    assert f"git push --force origin {ext.STUDENT_BRANCH}" in push
    assert "make student" in (ROOT / "Makefile").read_text()


def test_the_student_branch_recipe_leaves_no_solution(tmp_path):
    """What the deploy step does to its checkout, on a copy: every chapter keeps its
    exercises and loses its solutions, in the .md and in the .ipynb that Colab opens."""
    import json
    import shutil

    from attnxai.cli import main

    shutil.copy(ROOT / "_config.yml", tmp_path)
    shutil.copytree(ROOT / "notebooks", tmp_path / "notebooks")
    before = {p.name: p.read_text().count("{exercise}") for p in (tmp_path / "notebooks").glob("*.md")}
    assert main(["notebooks", "--root", str(tmp_path), "--student", "--in-place"]) == 0
    for md in sorted((tmp_path / "notebooks").glob("*.md")):
        text = md.read_text()
        assert "{solution" not in text and text.count("{exercise}") == before[md.name], md.name
        nb = json.loads(md.with_suffix(".ipynb").read_text())
        source = "".join("".join(c["source"]) for c in nb["cells"])
        assert "{solution" not in source and "Student edition" in source, md.name
    assert main(["notebooks", "--root", str(tmp_path), "--in-place"]) == 2   # needs --student


def test_targets_that_reuse_a_built_book_do_not_need_imdb():
    """`make student` and `make pdf` reuse `make book`'s executed chapters: with the model in
    the cache they must not fetch IMDb (no archive, no network: they stopped at "could not
    download the IMDb archive"). Only training a missing model reaches the `data` target."""
    import re

    rules, recipes, target = {}, {}, None
    for line in (ROOT / "Makefile").read_text().splitlines():
        m = re.match(r"^([\w.-]+):(?!=)\s*(.*)$", line)
        if m and not line.startswith("\t"):
            target = m.group(1)
            rules[target] = m.group(2).split()
            recipes[target] = []
        elif line.startswith("\t") and target:
            recipes[target].append(line.strip())

    def needs(t, seen=()):
        out = set()
        for dep in rules.get(t, []):
            if dep not in seen:
                out |= {dep} | needs(dep, seen + (dep,))
        return out

    for target in ("pdf", "student"):
        assert "model" in needs(target) and "data" not in needs(target), target
    # `model`: the paper's model and chapter 8's live one, each checked offline first, trained
    # at once where missing; the trainings load IMDb themselves (no process of its own for `data`)
    assert "-j2 model-paper model-live" in "\n".join(recipes["model"])
    paper = "\n".join(recipes["model-paper"])
    assert "attnxai info --profile paper" in paper and "|| $(MAKE)" in paper
    assert "setup" in needs("train-paper") and "train-paper" in paper
    assert any("attnxai train --profile paper" in r for r in recipes["train-paper"])
    live = " ".join(r.rstrip("\\").strip() for r in recipes["model-live"])
    assert "attnxai info --profile multilayer-quick" in live
    assert "|| OMP_NUM_THREADS=1 " in live and "attnxai train --profile multilayer-quick" in live
