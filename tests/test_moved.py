"""The old import paths of the modules that moved into rooms (attnxai.moved): each still imports,
warns with the new path, and is the module at its new place; nothing else is kept."""

from __future__ import annotations

import importlib
import sys
import warnings
from pathlib import Path

import pytest

import attnxai
from attnxai.moved import MOVED

SRC = Path(attnxai.__file__).parent.parent


def _forget(name: str) -> None:
    """Make the next import of the old path ``name`` go through the finder again."""
    sys.modules.pop(name, None)
    parent, _, child = name.rpartition(".")
    if child in vars(sys.modules[parent]):
        delattr(sys.modules[parent], child)


@pytest.mark.parametrize("old", sorted(MOVED))
def test_an_old_path_warns_with_the_new_one_and_is_the_new_module(old):
    new = importlib.import_module(MOVED[old])
    _forget(old)
    with pytest.warns(DeprecationWarning, match=rf"^{old} has moved to {MOVED[old]}:") as got:
        mod = importlib.import_module(old)
    assert mod is new and mod.__name__ == MOVED[old]
    assert mod.__spec__.name == MOVED[old]          # the module keeps its own spec
    assert sys.modules[old] is new


def test_the_warning_points_at_the_readers_import_line():
    _forget("attnxai.plots")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        from attnxai import plots  # noqa: F401
    dep = [w for w in caught if issubclass(w.category, DeprecationWarning)]
    assert len(dep) == 1 and dep[0].filename == __file__, [(w.filename, w.lineno) for w in dep]
    assert "attnxai.chapters.plots" in str(dep[0].message)


def test_old_paths_are_not_modules_and_new_paths_are():
    for old, new in MOVED.items():
        rel = Path(*old.split("."))
        assert not (SRC / rel).with_suffix(".py").exists() and not (SRC / rel).is_dir(), old
        assert importlib.util.find_spec(new) is not None, new


def test_a_path_moved_without_a_reader_keeps_no_alias():
    assert "attnxai.hub" not in MOVED
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("attnxai.hub")
