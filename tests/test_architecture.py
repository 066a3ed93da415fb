"""The package's architecture: import-linter's contracts (pyproject.toml) hold, so no import cycle
and no upward import can come back unnoticed."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_import_contracts_hold(tmp_path):
    lint = Path(sys.executable).parent / "lint-imports"
    out = subprocess.run([str(lint), "--no-cache", "--config", str(ROOT / "pyproject.toml")],
                         capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
    assert "0 broken" in out.stdout


def test_every_module_is_in_a_layer():
    """A new module must be placed in the layers contract (else it is unconstrained)."""
    import tomllib

    conf = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    layers = next(c for c in conf["contracts"] if c["type"] == "layers")["layers"]
    listed = {m.strip().split(".")[1] for layer in layers for m in layer.split("|")}
    pkg = ROOT / "src" / "attnxai"
    modules = {p.stem for p in pkg.glob("*.py") if p.stem not in ("__init__", "__main__")}
    modules |= {p.name for p in pkg.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert modules <= listed, f"not in the layers contract: {sorted(modules - listed)}"


ROOMS = ("model", "model.store", "store", "store.results", "chapters", "experiment", "perturbation",
         "theory.lime_kernels", "theory.lime_text", "methods", "cli")


def _modules(folder: Path) -> set[str]:
    mods = {p.stem for p in folder.glob("*.py") if p.stem not in ("__init__", "__main__")}
    return mods | {p.name for p in folder.iterdir() if p.is_dir() and (p / "__init__.py").exists()}


def test_every_module_of_a_room_is_in_its_contract():
    """Each room (model/, model/store/, store/, store/results/, chapters/, experiment/,
    perturbation/, theory/lime_kernels/, theory/lime_text/) has a contract naming all its
    modules."""
    import tomllib

    conf = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    for room in ROOMS:
        listed = set()
        for c in conf["contracts"]:
            if c.get("containers") == [f"attnxai.{room}"]:
                listed |= {m.strip() for layer in c["layers"] for m in layer.split("|")}
            elif c["type"] == "independence" and all(m.startswith(f"attnxai.{room}.")
                                                      for m in c["modules"]):
                listed |= {m.rpartition(".")[2] for m in c["modules"]}
        missing = _modules(ROOT / "src" / "attnxai" / room.replace(".", "/")) - listed
        assert not missing, f"attnxai.{room}: not in a contract: {sorted(missing)}"


def test_the_layer_docstring_names_every_module():
    """``attnxai/__init__``'s layer diagram names every top-level module and every module of the
    rooms (theory/ and fastlime/ list theirs in their own docstrings)."""
    import re

    import attnxai

    doc = attnxai.__doc__
    pkg = ROOT / "src" / "attnxai"
    names = _modules(pkg) | {m for room in ROOMS for m in _modules(pkg / room.replace(".", "/"))}
    missing = sorted(m for m in names if not re.search(rf"(?<![\w]){m}(?![\w])", doc))
    assert not missing, f"not in attnxai's layer docstring: {missing}"
