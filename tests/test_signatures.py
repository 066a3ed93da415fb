"""No function of the package takes more than :data:`MAX_PARAMETERS` parameters (issue 44):
settings that travel together are carried whole in one frozen, validated dataclass (the model's
architecture, LIME's settings, the sampled route's), not as a dozen loose keywords. Counted from
the source with ``ast``: positional, keyword-only, ``*args`` and ``**kwargs``, ``self``/``cls``
aside; public and private functions, methods and compiled kernels alike."""

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "attnxai"
MAX_PARAMETERS = 10


def parameters(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    """The names of ``fn``'s parameters, ``self``/``cls`` aside."""
    a = fn.args
    names = [p.arg for p in a.posonlyargs + a.args + a.kwonlyargs]
    names += [p.arg for p in (a.vararg, a.kwarg) if p is not None]
    return names[1:] if names[:1] in (["self"], ["cls"]) else names


def offenders(root: Path, limit: int = MAX_PARAMETERS) -> list[str]:
    """``path:line name (n)`` for every function under ``root`` with more than ``limit``."""
    out = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        fns = [node for node in ast.walk(tree)
               if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]
        for fn in sorted(fns, key=lambda fn: fn.lineno):
            n = len(parameters(fn))
            if n > limit:
                out.append(f"{path.relative_to(root.parent)}:{fn.lineno} {fn.name} ({n})")
    return out


def test_no_function_takes_more_than_ten_parameters():
    bad = offenders(PACKAGE)
    assert not bad, (f"{len(bad)} functions take more than {MAX_PARAMETERS} parameters (carry "
                     "the settings that travel together in one dataclass):\n" + "\n".join(bad))


def test_the_count_sees_every_kind_of_parameter(tmp_path):
    """The scan counts positional, keyword-only, *args and **kwargs, and not self or cls."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "m.py").write_text(
        "def ok(a, b, /, c, *d, e, **f): pass\n"
        "class K:\n"
        "    def method(self, a, b, c, d, e, f, g, h, i, j): pass\n"
        "    def wide(self, a, b, c, d, e, f, g, h, i, j, k): pass\n"
        "def hidden(a, b, c, d, e, f, g, h, i, *args, **kwargs): pass\n")
    assert offenders(pkg, limit=10) == ["pkg/m.py:4 wide (11)", "pkg/m.py:5 hidden (11)"]
    assert offenders(pkg, limit=5) == ["pkg/m.py:1 ok (6)", "pkg/m.py:3 method (10)",
                                       "pkg/m.py:4 wide (11)", "pkg/m.py:5 hidden (11)"]
