"""The registry assembles the method families of attnxai.methods (explicitly, in FAMILIES'
order); the lists other modules used to keep by hand are derived from its entries."""

from __future__ import annotations

import types

import pytest

from attnxai import registry
from attnxai.methods import attention, baselines, games, gradients, lime
from attnxai.methods.base import Method, NoSettings


def test_every_family_method_is_registered_once_in_order():
    names = [m.name for f in registry.FAMILIES for m in f.METHODS]
    assert sorted(names) == sorted(registry.ALL_METHODS) and len(set(names)) == len(names)
    assert registry.ALL_METHODS[:7] == registry.PAPER_METHODS
    rest = [n for n in names if n not in registry.PAPER_METHODS]
    assert list(registry.EXTRA_METHODS) == rest
    assert registry.FAMILIES == (attention, lime, games, gradients, baselines)


def test_derived_lists():
    assert registry.SHARED == (("LIME limit", "LIME", ("kernel_width", "bow")),)
    assert registry.POSITION_METHODS == ("alpha-avg", "alpha-max", "G-avg", "G-l1", "G-l2", "GxI")
    assert registry.GAME_METHODS == ("Shapley (delete)", "Shapley (replace)", "Banzhaf (delete)",
                                     "Banzhaf (replace)", "IG")


def _family(*methods):
    return types.SimpleNamespace(__name__="fake", METHODS=methods)


def _method(name, **kw):
    return Method(name, "token", name, NoSettings, lambda doc, s: None, "test", **kw)


def test_assembly_refuses_duplicates_missing_paper_methods_and_unknown_leaders():
    paper = _family(*(_method(n) for n in registry.PAPER_METHODS))
    assert list(registry._assemble((paper, _family(_method("x"))))) == \
        [*registry.PAPER_METHODS, "x"]
    with pytest.raises(ValueError, match="two methods are named 'x'"):
        registry._assemble((paper, _family(_method("x")), _family(_method("x"))))
    with pytest.raises(ValueError, match="paper's methods"):
        registry._assemble((_family(_method("x")),))
    with pytest.raises(ValueError, match="follows 'nobody'"):
        registry._assemble((paper, _family(_method("x", follows=("nobody", ("bow",))))))
    with pytest.raises(ValueError, match="level"):
        _method("x").__class__("y", "sentence", "g", NoSettings, print, "bad level")
    with pytest.raises(TypeError, match="dataclass"):
        Method("y", "token", "g", dict, print, "settings not a dataclass")
