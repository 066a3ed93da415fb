"""tests/booksite.py's builds happen once per run, whichever of `make test`'s processes asks first
(once_per_run): the others wait and read its result, a failure included."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from booksite import BuildFailed, once_per_run

HERE = Path(__file__).resolve().parents[1]

# Two processes of one run ask for the same build at once; the build counts itself and is slow
# enough that the second one asks while the first builds.
ASK = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    sys.path.insert(0, {tests!r})
    from booksite import BuildFailed, once_per_run
    out, fail = Path(sys.argv[1]), sys.argv[2] == "fail"
    def build():
        with open(out.parent / "builds.txt", "a") as f:
            f.write("x")
        time.sleep(1.5)
        if fail:
            raise BuildFailed("chapter 3 failed")
        return out / "html", "the log", 1.5
    try:
        print(once_per_run(out, build))
    except BuildFailed as exc:
        print("FAILED", exc)
""")


def _ask_twice(tmp_path: Path, run: str, how: str) -> list[str]:
    script = tmp_path / "ask.py"
    script.write_text(ASK.format(tests=str(HERE)))
    env = {"PYTEST_XDIST_TESTRUNUID": run, "PATH": "/usr/bin:/bin"}
    procs = [subprocess.Popen([sys.executable, str(script), str(tmp_path / "site"), how],
                              env=env, stdout=subprocess.PIPE, text=True) for _ in range(2)]
    return [p.communicate(timeout=120)[0].strip() for p in procs]


@pytest.mark.parametrize("how", ["ok", "fail"])
def test_two_processes_of_one_run_build_once(tmp_path, how):
    outs = _ask_twice(tmp_path, "run-1", how)
    assert (tmp_path / "builds.txt").read_text() == "x"            # one build for both
    assert outs[0] == outs[1], outs
    assert ("FAILED chapter 3 failed" in outs[0]) == (how == "fail"), outs
    _ask_twice(tmp_path, "run-2", how)                              # another run builds again
    assert (tmp_path / "builds.txt").read_text() == "xx"


def test_without_a_run_id_nothing_is_shared(tmp_path, monkeypatch):
    monkeypatch.delenv("PYTEST_XDIST_TESTRUNUID", raising=False)
    calls = []

    def build():
        calls.append(1)
        return tmp_path / "html", "log", 0.0

    once_per_run(tmp_path / "site", build)
    once_per_run(tmp_path / "site", build)
    assert len(calls) == 2
    with pytest.raises(BuildFailed, match="boom"):
        once_per_run(tmp_path / "site", lambda: (_ for _ in ()).throw(BuildFailed("boom")))
