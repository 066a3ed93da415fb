"""environment.yml (conda/Binder) and pyproject.toml list the same dependencies."""

import re
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def _names(specs):
    return {re.split(r"[<>=!~\[ ;]", s.strip(), maxsplit=1)[0].lower() for s in specs}


def test_environment_yml_matches_pyproject():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    deps = project["dependencies"] + extras["book"] + extras["test"] + extras["dask"]
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    listed = [s for s in pip if not s.startswith("-")]
    assert _names(listed) == _names(deps)
    assert "torch==2.13.0" in listed and "torch==2.13.0" in deps


def test_torch_pinned_in_constraints():
    lines = (ROOT / "constraints.txt").read_text().splitlines()
    assert "torch==2.13.0" in lines


def test_binder_installs_the_cpu_build_of_torch():
    """Binder's Linux machine gets torch from PyTorch's CPU wheel index (a +cpu wheel is
    2.13.0 to pip's ==2.13.0), not the default index's CUDA build."""
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    options = [s.split() for s in pip if s.startswith("-")]
    assert ["--extra-index-url", "https://download.pytorch.org/whl/cpu"] in options


def _setup_recipe(tmp_path, **env):
    """The shell lines `make setup` would run from an empty venv (make -n: nothing runs)."""
    import os
    import subprocess

    run_env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"} | env
    out = subprocess.run(["make", "-n", "-B", "setup", f"VENV={tmp_path / 'venv'}"], cwd=ROOT,
                         env=run_env, capture_output=True, text=True, check=True).stdout
    return [ln.strip().rstrip("\\").strip() for ln in out.splitlines()]


def test_setup_with_uv_installs_the_pins_with_torch_from_pips_sources(tmp_path):
    """uv is pinned; torch is installed first, by uv from pip's configured sources (they decide
    which build: uv reads no pip configuration), by pip itself if that fails; uv then installs the
    same pinned spec as the pip fallback; then, where PYTHONDONTWRITEBYTECODE stops Python writing
    bytecode as it imports, the modules the book's processes import are imported once with
    writing on (uv compiles nothing itself)."""
    pins = [ln for ln in (ROOT / "constraints.txt").read_text().splitlines() if ln.startswith("uv==")]
    assert len(pins) == 1
    spec = '-c constraints.txt -e ".[book,test,dask]"'
    for dont_write in ("", "1"):
        lines = _setup_recipe(tmp_path, **({"PYTHONDONTWRITEBYTECODE": "1"} if dont_write else {}))
        get_uv = next(i for i, ln in enumerate(lines) if "pip install --quiet -c constraints.txt uv" in ln)
        torch_uv = next(i for i, ln in enumerate(lines) if '"$UV_WITH_PIP_SOURCES"' in ln)
        torch_pip = next(i for i, ln in enumerate(lines)
                         if ln.endswith("-m pip install --quiet --no-deps --no-compile -c "
                                        "constraints.txt torch; } &&"))
        uv = next(i for i, ln in enumerate(lines) if "/uv pip install" in ln)
        fallback = next(i for i, ln in enumerate(lines) if "-m pip install --quiet " + spec in ln)
        assert get_uv < torch_uv < torch_pip < uv < fallback
        assert lines[torch_uv + 1].endswith("--no-deps -c constraints.txt torch ||")
        assert "--compile-bytecode" not in lines[uv] and lines[uv].endswith(spec + " &&")
        assert lines[uv + 1].startswith('{ [ -z "$PYTHONDONTWRITEBYTECODE" ] || '
                                        "PYDEVD_DISABLE_FILE_VALIDATION=1 ")
        assert lines[uv + 2].startswith('"$PRECOMPILE_IMPORTS" "torch ')
    assert '[ "pip" = uv ]' in " ".join(_setup_recipe(tmp_path, INSTALLER="pip"))


def test_uv_gets_pips_sources(tmp_path):
    """UV_WITH_PIP_SOURCES runs uv with pip's configured sources (here from PIP_* variables, as
    `pip config list` reports them), each once, before the arguments it was given."""
    import os
    import re
    import subprocess
    import sys

    make = (ROOT / "Makefile").read_text()
    script = re.search(r"^define UV_WITH_PIP_SOURCES\n(.*?)^endef", make, re.S | re.M).group(1)
    fake_uv = tmp_path / "uv"
    fake_uv.write_text("#!/bin/sh\nprintf '%s\\n' \"$@\"\n")
    fake_uv.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")} | {
        "PIP_CONFIG_FILE": os.devnull, "PIP_FIND_LINKS": "/wheels/a /wheels/b",
        "PIP_EXTRA_INDEX_URL": "https://download.pytorch.org/whl/cpu",
        "PIP_INDEX_URL": "https://example.org/simple"}
    out = subprocess.run([sys.executable, "-c", script, str(fake_uv), "--no-deps", "torch"],
                         env=env, capture_output=True, text=True, check=True).stdout.split("\n")
    args = out[:-1]
    assert args[:2] == ["pip", "install"] and args[-2:] == ["--no-deps", "torch"]
    pairs = sorted(zip(args[2:-2:2], args[3:-2:2]))
    assert pairs == sorted([("--find-links", "/wheels/a"), ("--find-links", "/wheels/b"),
                            ("--extra-index-url", "https://download.pytorch.org/whl/cpu"),
                            ("--index-url", "https://example.org/simple")])


def _make_variable(name: str) -> str:
    import re

    make = (ROOT / "Makefile").read_text()
    found = re.search(rf"^define {name}\n(.*?)^endef", make, re.S | re.M)
    if found:
        return found.group(1)
    value = re.search(rf"^{name} := ((?:.*\\\n)*.*)$", make, re.M).group(1)
    return " ".join(value.replace("\\\n", " ").split())


def test_the_modules_precompiled_at_set_up_exist():
    """Every module the set-up imports to write its bytecode is one the pinned environment has
    (a name misspelt, or gone in a new version, would stop `make setup`)."""
    import importlib.util

    for group in ("PRECOMPILE_NUMERICS", "PRECOMPILE_NOTEBOOKS"):
        names = _make_variable(group).split()
        assert len(names) > 10
        missing = [n for n in names if importlib.util.find_spec(n) is None]
        assert missing == [], f"{group} names modules this environment lacks: {missing}"
    numerics = _make_variable("PRECOMPILE_NUMERICS").split()
    assert numerics[0] == "torch"     # the one uv installs in a call of its own


def test_precompiling_writes_each_groups_bytecode_despite_pythondontwritebytecode(tmp_path):
    """PRECOMPILE_IMPORTS imports each group (one process per group) with bytecode writing on,
    under PYTHONDONTWRITEBYTECODE=1, and fails when a module of any group fails to import."""
    import os
    import subprocess
    import sys

    for name in ("alpha", "beta", "gamma"):
        (tmp_path / f"{name}.py").write_text(f"VALUE = {name!r}\n")
    (tmp_path / "broken.py").write_text("raise ImportError('broken on purpose')\n")
    script = _make_variable("PRECOMPILE_IMPORTS")
    env = os.environ | {"PYTHONDONTWRITEBYTECODE": "1", "PYTHONPATH": str(tmp_path),
                        "PRECOMPILE_IMPORTS": script}
    run = subprocess.run([sys.executable, "-c", script, "alpha beta", "gamma"], env=env,
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    written = sorted(p.name.split(".")[0] for p in (tmp_path / "__pycache__").glob("*.pyc"))
    assert written == ["alpha", "beta", "gamma"]
    for groups in (["alpha", "broken"], ["broken", "alpha"]):
        run = subprocess.run([sys.executable, "-c", script, *groups], env=env,
                             capture_output=True, text=True)
        assert run.returncode != 0 and "broken on purpose" in run.stderr
