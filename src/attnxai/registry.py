"""The explainers :func:`attnxai.explain` can run on a text: :data:`METHODS`, assembled from the
method families of :mod:`attnxai.methods` (in :data:`FAMILIES`' order, the paper's seven first),
the settings given on the command line (:func:`parse_settings`), and what the corpus studies read
about each method.

**Adding an explainer** is one :class:`~attnxai.methods.base.Method` entry in its family's module
(:mod:`attnxai.methods.baselines`, ...): its name, the level it scores (``"token"``: one score per
token; ``"word"``: one per distinct word, see :mod:`attnxai.words`), its settings (a frozen
dataclass whose fields have the defaults, validated in its ``__post_init__``), a function
``compute(doc, settings) -> scores`` and, for the corpus studies, its seed rule and the line a
results folder records about it. Nothing else is registered anywhere: :func:`attnxai.explain`,
the ``attnxai explain`` and ``attnxai faithfulness`` commands (``--set METHOD.FIELD=VALUE`` sets
any field of any method's settings), the faithfulness study, :func:`position_scores` (the methods
with a ``batch`` form), chapter 9's agreement study (the methods with a ``compared`` place), the
book's chapter 7 and the renderings of :class:`attnxai.explanation.Explanation` read this table.

**One target, one seed.** Every method explains the same logit (``target``, set once for the
whole explanation: a method's settings cannot carry their own). Methods that draw random numbers
take ``seed`` from their settings, and when it is not given there the explanation's seed
(:data:`DEFAULT_SEED` unless the caller gives another). Settings two methods must share (LIME's
limit is LIME's large-sample limit, so it takes LIME's ``kernel_width`` and ``bow``: its entry's
``follows``) are given once; two different values are refused.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from torch import Tensor

from . import validate
from .limit_settings import LimeSettings, LimitSettings
from .methods import attention, baselines, games, gradients, lime
from .methods.attention import AttentionSettings
from .methods.base import DEFAULT_SEED, LEVELS, Compared, Document, Method, NoSettings
from .methods.baselines import RandomSettings
from .methods.games import BanzhafSettings, DELETION_POSITIONS, IGSettings, ShapleySettings
from .methods.gradients import SmoothGradSettings

__all__ = ["ALL_METHODS", "Compared", "DEFAULT_SEED", "DELETION_POSITIONS", "Document",
           "EXTRA_METHODS", "FAMILIES", "GAME_METHODS", "LEVELS", "METHODS", "Method",
           "PAPER_METHODS", "POSITION_METHODS", "SHARED", "AttentionSettings", "BanzhafSettings",
           "IGSettings", "LimeSettings", "LimitSettings", "NoSettings", "RandomSettings",
           "ShapleySettings", "SmoothGradSettings", "parse_settings", "position_scores",
           "resolve_settings", "study_given", "study_records", "study_seeds", "study_settings"]

#: The method families, in the order their methods follow the paper's seven (registered here,
#: explicitly: nothing is discovered by scanning).
FAMILIES = (attention, lime, games, gradients, baselines)
#: The paper's seven explainers, in its Figure 1 order (the default of :func:`attnxai.explain`).
PAPER_METHODS = ("alpha-avg", "alpha-max", "LIME", "G-avg", "G-l1", "G-l2", "GxI")


def _assemble(families: Sequence[Any]) -> dict[str, Method]:
    """Every family's methods by name: the paper's seven in Figure 1's order, then the others in
    the families' order. Two methods of one name, or a paper method missing, are refused."""
    found: dict[str, Method] = {}
    for family in families:
        for m in family.METHODS:
            if m.name in found:
                raise ValueError(f"two methods are named {m.name!r} ({family.__name__})")
            found[m.name] = m
    missing = [m for m in PAPER_METHODS if m not in found]
    if missing:
        raise ValueError(f"the paper's methods {missing} are in no family")
    for m in found.values():
        if m.follows is not None and m.follows[0] not in found:
            raise ValueError(f"{m.name} follows {m.follows[0]!r}, which no family defines")
    return {**{m: found[m] for m in PAPER_METHODS}, **found}


#: Every method, in the order an explanation lists them: the seven of the paper's Figure 1, then
#: the extra scores (``alpha x s``: attention times the token's own score, the value part of GxI;
#: LIME's closed-form limit; the Shapley and Banzhaf values of both removal modes and Integrated
#: Gradients, chapter 9; SmoothGrad, the gradient averaged over noisy embeddings, which no
#: committed study holds (chapter 7 computes it live); the baselines).
METHODS: dict[str, Method] = _assemble(FAMILIES)
#: The game values and path integral of chapter 9 (beyond the paper).
GAME_METHODS = tuple(m.name for m in games.METHODS)
#: The scores beyond the paper's seven.
EXTRA_METHODS = tuple(m for m in METHODS if m not in PAPER_METHODS)
ALL_METHODS = tuple(METHODS)
#: Settings that must agree between two methods: (method, follows, the shared fields).
SHARED = tuple((m.name, *m.follows) for m in METHODS.values() if m.follows is not None)
#: The methods that score the positions of a batch of ids (:func:`position_scores`).
POSITION_METHODS = tuple(m.name for m in METHODS.values() if m.batch is not None)


def position_scores(model: Any, ids: Tensor, target: int = 1,
                    methods: Iterable[str] = POSITION_METHODS, *,
                    layer: int = 0) -> dict[str, Tensor]:
    """The position-level explainers named in ``methods`` (:data:`POSITION_METHODS`: the
    methods with a ``batch`` form) on a (B, T0) batch of ids on any classifier of the package:
    dict of (B, T), NaN on padding (shapes: :mod:`attnxai.explainers`); attention from layer
    ``layer``, the other settings their defaults."""
    try:
        methods = validate.names(methods, POSITION_METHODS, kind="method", allow_empty=True)
    except ValueError as exc:
        asked = [methods] if isinstance(methods, str) else list(methods)
        other = [m for m in asked if isinstance(m, str) and m in METHODS]
        if other:
            raise ValueError(f"{exc} ({', '.join(f'{m} is per {METHODS[m].level}' for m in other)}"
                             ", of one text: use attnxai.explain)") from None
        raise
    shared: dict[str, Any] = {}
    out = {}
    for name in methods:
        cls = METHODS[name].settings
        settings = cls(layer=layer) if cls is AttentionSettings else cls()
        out[name] = METHODS[name].batch(model, ids, target, settings, shared)
    return out


# ---------------------------------------------------------------------- settings as text
def _from_text(text: str, hint: Any, where: str) -> Any:
    """``text`` as a value of the field type ``hint`` (``int``, ``float``, ``bool``, ``str`` or
    one of them ``| None``; ``"none"`` is None where the field allows it)."""
    kinds = [t for t in (typing.get_args(hint) or (hint,)) if t is not type(None)]
    if text.strip().lower() == "none" and len(kinds) < len(typing.get_args(hint) or (hint,)):
        return None
    for kind in kinds:
        if kind is bool:
            low = text.strip().lower()
            if low in ("true", "false"):
                return low == "true"
        elif kind in (int, float):
            try:
                return kind(text)
            except ValueError:
                pass
        elif kind is str:
            return text
    names = " or ".join(getattr(k, "__name__", str(k)) for k in kinds)
    raise ValueError(f"{where}: {text!r} is not of type {names}")


def parse_settings(specs: Iterable[str] | None) -> dict[str, dict[str, Any]]:
    """``METHOD.FIELD=VALUE`` strings (the commands' ``--set``; the method's name in any case, the
    value read as the field's type) as the ``settings`` of :func:`attnxai.explain`: any field of
    any method of :data:`METHODS`, e.g. ``["SmoothGrad.n_samples=20", "LIME.bow=false"]``. The
    values are checked by the settings classes when they are built."""
    out: dict[str, dict[str, Any]] = {}
    by_lower = {m.lower(): m for m in METHODS}
    for spec in specs or ():
        key, eq, text = spec.partition("=")
        method, dot, name = key.strip().rpartition(".")
        if not (eq and dot and method and name):
            raise ValueError(f"--set takes METHOD.FIELD=VALUE (e.g. SmoothGrad.n_samples=20), "
                             f"got {spec!r}")
        if method.lower() not in by_lower:
            raise ValueError(f"--set {spec!r}: unknown method {method!r}; choose among "
                             f"{list(METHODS)}")
        method = by_lower[method.lower()]
        cls = METHODS[method].settings
        hints = typing.get_type_hints(cls)
        if name not in hints:
            raise ValueError(f"--set {spec!r}: {method} has no setting {name!r}; its settings "
                             f"are {list(hints) or 'none'}")
        out.setdefault(method, {})[name] = _from_text(text, hints[name], f"--set {spec!r}")
    return out


# ---------------------------------------------------------------------- settings, resolved
def _given(settings: Mapping[str, Any] | None, names: list[str]) -> dict[str, dict[str, Any]]:
    """The settings given per method, as dicts of fields, checked against each method's fields
    (a settings object: all its fields, and the object itself under :data:`_OBJECT`)."""
    if settings is None:
        return {}
    if not isinstance(settings, Mapping):
        raise TypeError(f"settings must map a method's name to its settings, got "
                        f"{type(settings).__name__}")
    out = {}
    for name, given in settings.items():
        if name not in METHODS:
            raise ValueError(f"settings for an unknown method {name!r}; choose among "
                             f"{list(METHODS)}")
        if name not in names:
            raise ValueError(f"settings for {name!r}, which is not among the methods asked "
                             f"({', '.join(names)})")
        cls = METHODS[name].settings
        if isinstance(given, cls):
            out[name] = {**{f.name: getattr(given, f.name) for f in dataclasses.fields(cls)},
                         _OBJECT: given}
            continue
        if not isinstance(given, Mapping):
            raise TypeError(f"settings[{name!r}] must be a dict or a {cls.__name__}, got "
                            f"{type(given).__name__}")
        known = [f.name for f in dataclasses.fields(cls)]
        if "target" in given:
            raise ValueError(f"settings[{name!r}] sets a target: the explained class is one for "
                             "every method; pass target= to explain() instead")
        bad = [k for k in given if k not in known]
        if bad:
            raise ValueError(f"{name} has no setting {bad}; its settings are "
                             f"{known or 'none'}")
        out[name] = dict(given)
    return out


def _resolve(names: list[str], given: dict[str, dict[str, Any]], seed: int) -> dict[str, Any]:
    """Each method's settings object: its defaults, the shared settings of the method it follows,
    what was given, and the explanation's seed where the method draws random numbers."""
    given = {m: dict(v) for m, v in given.items()}
    for method, leader, keys in SHARED:
        for k in keys:
            a, b = given.get(method, {}).get(k), given.get(leader, {}).get(k)
            if a is not None and b is not None and a != b:
                raise ValueError(f"{method} and {leader} must share {k}, but {method} was given "
                                 f"{a!r} and {leader} {b!r}: give it once")
            value = a if a is not None else b
            if value is not None:
                for m in (method, leader):
                    if m in names:
                        given.setdefault(m, {})[k] = value
    out = {}
    for m in names:
        cls = METHODS[m].settings
        kw = given.get(m, {})
        if "seed" in {f.name for f in dataclasses.fields(cls)} and kw.get("seed") is None:
            kw = {**kw, "seed": seed}
        out[m] = _built(cls, kw)
    return out


#: The key under which :func:`_given` keeps a settings object given whole.
_OBJECT = "<settings object>"


def _built(cls: type, kw: dict[str, Any]) -> Any:
    """The settings object of the fields ``kw``: a settings object given whole is kept (checked
    when it was built), with only the fields that changed replaced (and checked) where the class
    can (``cls.of``, :class:`~attnxai.limit_settings.LimeSettings`)."""
    kw = dict(kw)
    base = kw.pop(_OBJECT, None)
    if base is None:
        return cls(**kw)
    changed = {k: v for k, v in kw.items() if getattr(base, k) != v
               or type(getattr(base, k)) is not type(v)}
    if not changed:
        return base
    return cls.of(base, **changed) if hasattr(cls, "of") else dataclasses.replace(base, **changed)



def resolve_settings(methods: list[str], settings: Mapping[str, Any] | None = None, *,
                     seed: int = DEFAULT_SEED) -> dict[str, Any]:
    """Each of ``methods``' settings object (module docstring: ``settings`` per method, a dict
    of its fields or its settings object; ``seed`` for the random methods given none): every
    check :func:`attnxai.explain` makes of its settings, before any text is read, and the
    objects :func:`attnxai.explanation.explain_with` runs."""
    return _resolve(methods, _given(settings, methods), validate.integer(seed, "seed"))


# ---------------------------------------------------------------------- the corpus studies
def study_given(settings: Mapping[str, Mapping[str, Any]] | None,
                methods: Sequence[str]) -> dict[str, dict[str, Any]]:
    """A corpus study's further settings per method (its ``--set``), as a fresh dict: refused when
    not a mapping, or when they name a method the study does not run (one of ``methods``)."""
    if not isinstance(settings, (Mapping, type(None))):
        raise TypeError(f"settings must map a method's name to its settings, got "
                        f"{type(settings).__name__}")
    given = {m: dict(v) for m, v in (settings or {}).items()}
    idle = [m for m in given if m not in methods]
    if idle:
        raise ValueError(f"settings for {idle}, which the study does not run (its methods: "
                         f"{', '.join(dict.fromkeys(methods))})")
    return given


def study_settings(methods: Sequence[str], given: Mapping[str, Any] | None = None
                   ) -> dict[str, Any]:
    """The settings objects of a corpus study's methods (:func:`resolve_settings` of ``given``:
    per method, a dict of fields, or a settings object, which keeps its other fields), checked
    once, before its first review; a seed given to a method that draws one per review (its
    ``study_seed`` rule) is refused. Each review replaces those seeds
    (:func:`study_seeds`, :func:`attnxai.explanation.explain_with`)."""
    given = {m: v for m, v in (given or {}).items() if m in methods}
    for m in methods:
        rule, own = METHODS[m].study_seed, given.get(m, {})
        if rule is not None and ((own.seed is not None) if isinstance(own, METHODS[m].settings)
                                 else "seed" in own):
            raise ValueError(f"{m}'s seed is the study's (one per review: "
                             f"{rule.__name__}(test_index)): do not set it")
    return resolve_settings(list(methods), given)


def study_seeds(methods: Sequence[str], test_index: int) -> dict[str, int]:
    """The seed of each of ``methods`` that draws random numbers on test review ``test_index``
    (its ``study_seed`` rule: LIME ``1000 * test_index``, SmoothGrad and the random baseline
    ``test_index``)."""
    return {m: METHODS[m].study_seed(int(test_index)) for m in methods
            if METHODS[m].study_seed is not None}


def study_records(methods: Sequence[str]) -> dict[str, str]:
    """What a results folder records about its methods (their ``recorded`` lines, each key once,
    in the table's order)."""
    return dict(METHODS[m].recorded for m in METHODS if m in methods and METHODS[m].recorded)
