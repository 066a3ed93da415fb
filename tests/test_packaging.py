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


def test_setup_with_uv_installs_the_pins_with_torch_from_pip(tmp_path):
    """uv is pinned; torch is installed by pip first (pip's configured sources decide which build:
    uv reads no pip configuration) and uv then installs the same pinned spec as the pip
    fallback; uv compiles bytecode exactly when PYTHONDONTWRITEBYTECODE stops Python doing it."""
    pins = [ln for ln in (ROOT / "constraints.txt").read_text().splitlines() if ln.startswith("uv==")]
    assert len(pins) == 1
    spec = '-c constraints.txt -e ".[book,test,dask]"'
    for dont_write in ("", "1"):
        lines = _setup_recipe(tmp_path, **({"PYTHONDONTWRITEBYTECODE": "1"} if dont_write else {}))
        get_uv = next(i for i, ln in enumerate(lines) if "pip install --quiet -c constraints.txt uv" in ln)
        torch_ = next(i for i, ln in enumerate(lines) if ln.endswith("-c constraints.txt torch &&"))
        uv = next(i for i, ln in enumerate(lines) if "/uv pip install" in ln)
        fallback = next(i for i, ln in enumerate(lines) if "-m pip install --quiet " + spec in ln)
        assert get_uv < torch_ < uv < fallback and "--no-deps" in lines[torch_]
        assert lines[uv].endswith(spec + ";")
        assert ("--compile-bytecode" in lines[uv]) == bool(dont_write)
    assert '[ "pip" = uv ]' in " ".join(_setup_recipe(tmp_path, INSTALLER="pip"))
