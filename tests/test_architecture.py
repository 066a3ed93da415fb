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
