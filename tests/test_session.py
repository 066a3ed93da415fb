"""The session (book profile and seed) is resolved at an entry point and travels as an argument.

``ATTNXAI_PROFILE`` and ``ATTNXAI_SEED`` are read by :mod:`attnxai.settings` on behalf of the
entry points only: a chapter's launch cell (:func:`attnxai.course.start`), the command line
(:func:`attnxai.cli.main`) and the book's build (``book/_ext``, outside the package). Every other
module takes the session, or the profile and seed it names, as an argument; none holds a session
of its own. These tests fail when a module below the entry points reads the variables (or asks
:mod:`attnxai.settings` to), when :mod:`attnxai.settings` grows a process-wide session again, and
when ``pretrained``/``get_config`` answer with anything but what they were given.
"""

from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest

import attnxai
from attnxai import settings
from attnxai.model import trained
from attnxai.model.profiles import get_config
from attnxai.settings import Session

SRC = Path(attnxai.__file__).resolve().parent

#: What reads the session from the environment: the variables' names and the functions of
#: attnxai.settings that read them.
READERS = {"ATTNXAI_PROFILE", "ATTNXAI_SEED", "ENV_PROFILE", "ENV_SEED", "from_environment",
           "chosen_profile", "chosen_seed", "environ", "getenv"}
SESSION_VARIABLES = {"ATTNXAI_PROFILE", "ATTNXAI_SEED", "ENV_PROFILE", "ENV_SEED",
                     "from_environment", "chosen_profile", "chosen_seed"}
#: The entry points, and what each may use: the package's only readers of the session.
ALLOWED = {
    "settings.py": SESSION_VARIABLES | {"environ"},   # the one reader, on the entry points' behalf
    "course.py": {"chosen_profile", "chosen_seed", "ENV_PROFILE", "ENV_SEED"},  # launch cell
    "cli/__init__.py": {"chosen_seed"},                 # the command line's main()
}


def _docstrings(tree: ast.AST) -> set[int]:
    """The ids of the docstring nodes of ``tree`` (prose may name the variables)."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                out.add(id(body[0].value))
    return out


def session_reads(path: Path) -> set[str]:
    """The names of :data:`READERS` that the code of ``path`` uses (not its docstrings or
    comments): string constants naming the variables, and names or attributes."""
    tree = ast.parse(path.read_text(), str(path))
    docs, found = _docstrings(tree), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            found |= {v for v in ("ATTNXAI_PROFILE", "ATTNXAI_SEED") if v in node.value}
        elif isinstance(node, ast.Name) and node.id in READERS:
            found.add(node.id)
        elif isinstance(node, ast.Attribute) and node.attr in READERS:
            found.add(node.attr)
        elif isinstance(node, ast.alias) and node.name.split(".")[-1] in READERS:
            found.add(node.name.split(".")[-1])
    return found


def test_only_the_entry_points_read_the_session():
    """No module below the entry points reads ATTNXAI_PROFILE or ATTNXAI_SEED, or asks
    attnxai.settings for them; the entry points read what they need and no more."""
    bad, seen = [], {}
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        used = session_reads(path) & SESSION_VARIABLES | (
            session_reads(path) & {"environ", "getenv"} if rel == "settings.py" else set())
        seen[rel] = used
        extra = used - ALLOWED.get(rel, set())
        if extra:
            bad.append(f"{rel}: {sorted(extra)}")
    assert not bad, ("modules below the entry points read the session (take it as an argument "
                     f"instead): {bad}")
    for rel, allowed in ALLOWED.items():          # the list of readers is not stale
        assert seen.get(rel), f"{rel} is listed as an entry point but reads nothing"


def test_the_scan_sees_a_reader(tmp_path):
    """The scan is not blind: each way of reading the session is caught."""
    cases = {"os.environ.get('ATTNXAI_PROFILE')": "ATTNXAI_PROFILE",
             "from ..settings import from_environment": "from_environment",
             "settings.chosen_seed()": "chosen_seed",
             "x = settings.ENV_SEED": "ENV_SEED"}
    for code, name in cases.items():
        path = tmp_path / "m.py"
        path.write_text(f'"""ATTNXAI_SEED in a docstring is prose."""\n{code}\n')
        assert name in session_reads(path), code
    path.write_text('"""ATTNXAI_SEED, ATTNXAI_PROFILE: prose."""\n')
    assert not session_reads(path) & SESSION_VARIABLES


def test_settings_holds_no_session_of_its_own():
    """attnxai.settings parses; it keeps no process-wide session (no current()/use(), no global
    assignment), so a session exists only where an entry point passed it."""
    assert not hasattr(settings, "current") and not hasattr(settings, "use")
    tree = ast.parse(Path(settings.__file__).read_text())
    assert not [n for n in ast.walk(tree) if isinstance(n, ast.Global)]
    session = Session("quick", 7)
    assert hash(session) == hash(Session("quick", 7))          # a frozen value


class _Asked(Exception):
    """Raised by the spy in place of the cache's lookup: what pretrained() asked for."""


@pytest.fixture
def asked(monkeypatch):
    """The TrainConfig that ``trained.pretrained`` looks up, captured before any file is read;
    the environment names another profile and seed, which must not matter."""
    monkeypatch.setenv("ATTNXAI_PROFILE", "quick")
    monkeypatch.setenv("ATTNXAI_SEED", "43")

    def spy(config, archive=None):
        raise _Asked(config)

    monkeypatch.setattr(trained, "candidates", spy)

    def ask(*args, **kwargs):
        with pytest.raises(_Asked) as got:
            trained.pretrained(*args, progress=False, **kwargs)
        return got.value.args[0]

    return ask


def test_the_profile_travels_as_an_argument(asked):
    """pretrained(session) is the session's profile at its seed; pretrained("paper") and
    pretrained() the paper's model at its own seed, whatever the environment names; a TrainConfig
    is used as it is."""
    got = asked(Session("quick", 43))
    assert (got.profile, got.seed) == ("quick", 43)
    got = asked(Session("quick"))
    assert (got.profile, got.seed) == ("quick", get_config("quick").seed)
    for args in ((), ("paper",)):
        got = asked(*args)
        assert (got.profile, got.seed) == ("paper", 42), args
    cfg = get_config("multilayer-quick", seed=5)
    assert asked(cfg) == cfg
    with pytest.raises(ValueError, match="unknown profile None"):
        trained.pretrained(None, progress=False)          # the old "session's profile" spelling


def test_the_chapters_session_reaches_the_model(asked, monkeypatch):
    """What a chapter does, end to end: the launch cell's session (ATTNXAI_PROFILE and
    ATTNXAI_SEED read once) passed to pretrained(); changing the environment afterwards changes
    nothing, since nothing reads it again."""
    from attnxai import course

    session = course.start(verbose=False)
    assert session == Session("quick", 43)
    monkeypatch.setenv("ATTNXAI_PROFILE", "paper")
    monkeypatch.delenv("ATTNXAI_SEED")
    got = asked(session)
    assert (got.profile, got.seed) == ("quick", 43)
    assert os.environ["ATTNXAI_PROFILE"] == "paper"


def test_the_command_line_passes_its_seed_on(monkeypatch, tmp_path, capsys):
    """The command line reads ATTNXAI_SEED once, in main(), and hands the profile at that seed to
    the package: ``attnxai train --profile quick`` asks pretrained() for quick at seed 43."""
    from attnxai.cli import main

    monkeypatch.setenv("ATTNXAI_SEED", "43")
    seen = []

    def spy(config, archive=None):
        seen.append(config)
        raise FileNotFoundError("spy: nothing is trained in this test")

    monkeypatch.setattr(trained, "candidates", spy)
    assert main(["info", "--profile", "quick"]) == 2
    assert [(c.profile, c.seed) for c in seen] == [("quick", 43)]
    monkeypatch.delenv("ATTNXAI_SEED")
    seen.clear()
    assert main(["info", "--profile", "quick"]) == 2
    assert [(c.profile, c.seed) for c in seen] == [("quick", get_config("quick").seed)]
