"""Helpers of the hostile-input tests (tests/test_hostile.py): a study with no model, a process
that holds a results folder, the tiny model standing in for the command line's, and the reader of
a one-line error. Helpers only, no test (as tests/checkpoints.py and tests/hubserver.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import make_tiny

from attnxai.model import trained
from attnxai.experiment.runner import Study, chunked

ROOT = Path(__file__).resolve().parents[1]


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "ATTNXAI_IMDB_ARCHIVE"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), str(ROOT / "tests"),
                                         env.get("PYTHONPATH", "")])
    return env


class Squares(Study):
    """A study with no model: row i holds i squared (``offset`` changes the settings)."""

    key_columns = ("i",)
    name = "squares"

    def __init__(self, n: int = 6, offset: int = 0, chunk: int = 2):
        self.n, self.offset, self.chunk = n, offset, chunk

    def settings(self):
        return {"n": self.n, "offset": self.offset}

    def plan(self, done):
        return chunked([{"i": i} for i in range(self.n) if (i,) not in done], self.chunk)

    def task(self):
        return _squares

    def finish(self, out, jobs, client, progress):
        return 0


def _squares(items):
    return [{"i": it["i"], "rank": it["i"], "y": float(it["i"] ** 2), "words": ["a", "b"][:it["i"]],
             "coef": [0.5 * it["i"]] * 3} for it in items]


HOLDER = textwrap.dedent("""
    import json, sys
    from pathlib import Path
    from attnxai.store import results as store
    out, settings = Path(sys.argv[1]), json.loads(sys.argv[2])
    with store.hold(out, settings, ["attnxai", "holder"]) as held:
        held.record()
        print("held", flush=True)
        sys.stdin.read()                      # hold until the test closes our stdin
""")


@pytest.fixture
def holder(tmp_path):
    """Start a process that holds a results folder (with given settings) until released."""
    procs = []

    def start(out: Path, settings: dict):
        p = subprocess.Popen([sys.executable, "-c", HOLDER, str(out), json.dumps(settings)],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=_env())
        assert p.stdout.readline().strip() == "held"           # an event, not a sleep
        procs.append(p)
        return p

    yield start
    for p in procs:
        p.stdin.close()
        p.wait(timeout=60)


@pytest.fixture
def tiny_cli(monkeypatch):
    pre = make_tiny(seed=3)
    monkeypatch.setattr(trained, "pretrained", lambda profile="paper", **kw: pre)
    return pre


def _one_line(capsys) -> str:
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if "error:" in line]
    assert "Traceback" not in err and len(lines) == 1, err
    return lines[0]
