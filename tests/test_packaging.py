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
