"""Old import paths of the modules that moved into rooms (issue 32): a reader's notebook written
for an earlier edition of the book still imports them, and each such import warns
(DeprecationWarning), naming the new path, and gives the module at its new place (the same module
object, not a copy). Only the paths the chapters or the documentation used are kept here; the
others moved without one.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import warnings

__all__ = ["MOVED", "install"]

#: Old module path -> new module path.
MOVED = {
    "attnxai.checkpoint": "attnxai.model.store.checkpoint",
    "attnxai.experiment.multilayer": "attnxai.experiment.beyond_one_layer",
    "attnxai.faithfulness": "attnxai.perturbation",
    "attnxai.interface": "attnxai.model.interface",
    "attnxai.multilayer": "attnxai.model.multilayer",
    "attnxai.network": "attnxai.model.network",
    "attnxai.paper": "attnxai.chapters.paper",
    "attnxai.plots": "attnxai.chapters.plots",
    "attnxai.printforms": "attnxai.chapters.printforms",
    "attnxai.profiles": "attnxai.model.profiles",
    "attnxai.prose": "attnxai.chapters.prose",
    "attnxai.runconfig": "attnxai.chapters.runconfig",
    "attnxai.symbolic": "attnxai.model.symbolic",
    "attnxai.train": "attnxai.model.train",
}


class _OldPath(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds an old path of :data:`MOVED` and loads it as the module at its new path."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in MOVED:
            return None
        return importlib.machinery.ModuleSpec(fullname, self)

    def create_module(self, spec):
        new = MOVED[spec.name]
        # stacklevel 2: the first frame outside the import machinery, the reader's import line
        warnings.warn(f"{spec.name} has moved to {new}: import it from there "
                      f"(the old path will be removed)", DeprecationWarning, stacklevel=2)
        module = importlib.import_module(new)
        self._specs = getattr(self, "_specs", {})
        self._specs[spec.name] = module.__spec__
        return module

    def exec_module(self, module):
        # the import machinery set the old path's spec on the module: give it back its own
        module.__spec__ = self._specs.pop(module.__spec__.name, module.__spec__)


def install() -> None:
    """Put the old paths' finder on ``sys.meta_path`` (once)."""
    if not any(isinstance(f, _OldPath) for f in sys.meta_path):
        sys.meta_path.append(_OldPath())
