"""LIME's settings, each default written once: :class:`LimeSettings`, what one LIME run takes
(samples, kernel width, removal mode, mask, seed, compiled loops), and :class:`LimitSettings`,
how its large-sample limit (:func:`attnxai.theory.lime_limit`) is computed; the limit's kernel
width and removal mode default to LIME's.

One :class:`LimeSettings` travels whole from the command line (whose ``--num-samples``,
``--kernel-width``... are generated from its fields, :func:`attnxai.cli.flags.add_settings_flags`)
through the studies (:mod:`attnxai.experiment`, which resolve every method's settings once, in
:func:`attnxai.registry.study_settings`, and give each review
:func:`attnxai.explanation.explain_with`) to :func:`attnxai.fastlime.explain_instance` and its
kernel, and :meth:`LimeSettings.limit` gives the closed forms the same width and mode. It is
checked once, when built (``__post_init__``); a review's seed is replaced with
:meth:`LimeSettings.of`, which checks the seed alone; nothing downstream checks the width again
(``tests/cli/test_kernel_width_walk.py`` follows it from ``attnxai faithfulness`` to the kernel).

This module sits below the closed forms, fastlime and the registry (it imports only
:mod:`attnxai.validate`), so that naming a setting loads neither SymPy nor numba.
"""

from __future__ import annotations

import copy
import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

from . import validate

__all__ = ["LimeSettings", "LimitSettings"]


def _help(text: str) -> dict[str, str]:
    """A field's one-line help (the command line's ``--help`` for its generated flag)."""
    return {"help": text}


@dataclass(frozen=True)
class LimeSettings:
    """One LIME run (:func:`attnxai.fastlime.explain_instance`, lime 0.2.0.1's
    ``LimeTextExplainer``): ``num_samples`` perturbed texts, exponential kernel of width
    ``kernel_width`` on lime's cosine distance (times 100), ``bow`` (True: a dropped word is
    deleted with all its occurrences, one coefficient per word; False: a dropped position is
    replaced by ``mask_string``, one coefficient per position), ``seed`` (lime's
    ``random_state``; None: the explanation's seed, or numpy's global state in
    :func:`~attnxai.fastlime.explain_instance`) and ``backend`` (the compiled loops: ``"auto"``,
    ``"numba"``, ``"numpy"``; the same numbers either way). Checked when built."""

    num_samples: int = field(default=5000, metadata=_help(
        "LIME's perturbed samples (the default is lime's)"))
    kernel_width: float = field(default=25.0, metadata=_help(
        "LIME's kernel width, also its limit's (the default is lime's)"))
    bow: bool = field(default=True, metadata=_help(
        "true: delete a dropped word's occurrences; false: replace positions by the mask"))
    mask_string: str = field(default="UNK", metadata=_help(
        "bow=false replacement (default UNK, the model's unknown word)"))
    seed: int | None = field(default=None, metadata=_help("lime's random_state"))
    backend: str = field(default="auto", metadata=_help(
        "LIME's compiled loops: auto, numba or numpy (the same numbers)"))

    def __post_init__(self):
        self._check(tuple(_LIME_CHECKS))

    def _check(self, names: tuple[str, ...]) -> None:
        """Check the fields ``names`` (each by its rule in :data:`_LIME_CHECKS`), storing the
        normalised value (``kernel_width`` as a float)."""
        for name in names:
            object.__setattr__(self, name, _LIME_CHECKS[name](getattr(self, name)))

    @classmethod
    def of(cls, settings: LimeSettings | None = None, /, **given: Any) -> LimeSettings:
        """``settings`` (default: the defaults) with the fields ``given`` replaced (checked once,
        here): what :func:`~attnxai.fastlime.explain_instance` takes, as an object or as
        keywords."""
        return _replaced(cls, settings, given, "LIME")

    def limit(self, **given: Any) -> LimitSettings:
        """The settings of this run's large-sample limit: the same ``kernel_width`` and
        ``bow``, the limit's own defaults for the rest (``given`` replaces any)."""
        return LimitSettings.of(kernel_width=self.kernel_width, bow=self.bow, **given)


def _mask_string(value: Any) -> str:
    # (whether the model reads it as its unknown word is the model's check:
    # attnxai.fastlime.check_mask_string)
    if not isinstance(value, str):
        raise TypeError(f"mask_string must be a str, got {type(value).__name__}")
    if not value.strip():
        raise ValueError(f"mask_string must be a non-empty str, got {value!r}")
    return value


def _seed(value: Any) -> int | None:
    if value is not None:
        validate.random_state(value)
    return value


def _checked(check: Any) -> Any:
    """A rule that checks a value and keeps it as given."""
    def rule(value: Any) -> Any:
        check(value)
        return value
    return rule


#: How each field of :class:`LimeSettings` is checked (and normalised): the one place.
_LIME_CHECKS = {
    "num_samples": _checked(validate.num_samples),
    "kernel_width": validate.kernel_width,
    "bow": _checked(validate.bow),
    "mask_string": _mask_string,
    "seed": _seed,
    "backend": _checked(lambda v: validate.choice(v, "backend", ("auto", "numba", "numpy"))),
}


def _replaced(cls: type, settings: Any, given: dict[str, Any], what: str) -> Any:
    """``settings`` with the fields ``given`` replaced. A :class:`LimeSettings` checks only the
    fields replaced (the others were checked when it was built)."""
    if settings is not None and not isinstance(settings, cls):
        raise TypeError(f"settings must be a {cls.__name__}, got {type(settings).__name__}")
    fields = [f.name for f in dataclasses.fields(cls)]
    unknown = sorted(set(given) - set(fields))
    if unknown:
        raise TypeError(f"unknown setting(s) {unknown} of {what}; its settings are {fields}")
    if settings is None:
        return cls(**given)
    if not given:
        return settings
    if not hasattr(cls, "_check"):
        return dataclasses.replace(settings, **given)
    new = copy.copy(settings)
    for name, value in given.items():
        object.__setattr__(new, name, value)
    new._check(tuple(given))
    return new


@dataclass(frozen=True)
class LimitSettings:
    """How :func:`attnxai.theory.lime_limit` computes LIME's limit.

    ``kernel_width`` and ``bow``: LIME's (the explained perturbations; ``math.inf`` allowed, the
    wide-kernel limit). ``law``: ``"lime"`` (lime's own law, the exact chain), ``"discrete"`` or
    ``"continuous"`` (independent removal); ``positions`` (deletion): ``"exact"``,
    ``"binomial"``, ``"mean"``, ``"sampled"`` or ``"tokens"``; None for each: chosen from the
    document (the defaults of :mod:`attnxai.theory.lime_attention`, which checks both names).
    ``method``: ``"integral"`` or ``"meanfield"``; ``n_nodes`` (>= 3) nodes in ``p`` of the
    profile form; ``lambda_step`` (> 0) its step in ``log lambda``; ``ksub`` (>= 1) the chain's
    rule has steps ``log(2)/ksub``. ``tol``, ``budget``, ``seed``: the exact and sampled routes of
    deletion with repeated words (None: :mod:`attnxai.theory.deletion_routes`' defaults, which
    checks them). Checked when built (the choices of names by the closed form it goes to)."""

    kernel_width: float = LimeSettings.kernel_width
    bow: bool = LimeSettings.bow
    law: str | None = None
    positions: str | None = None
    method: str = "integral"
    n_nodes: int = 25
    lambda_step: float = 0.7
    ksub: int = 1
    tol: float | None = None
    budget: float | None = None
    seed: int | None = None

    def __post_init__(self):
        validate.kernel_width(self.kernel_width, allow_inf=True)
        validate.bow(self.bow)
        for name in ("law", "positions", "method"):
            value = getattr(self, name)
            if not (isinstance(value, str) or (value is None and name != "method")):
                raise TypeError(f"{name} must be a str{'' if name == 'method' else ' or None'}, "
                                f"got {type(value).__name__} ({value!r})")
        validate.positive_int(self.n_nodes, "n_nodes", minimum=3)
        step = self.lambda_step
        if not (isinstance(step, (int, float)) and not isinstance(step, bool) and step > 0
                and math.isfinite(step)):
            raise ValueError(f"lambda_step must be a positive number, got {step!r}")
        validate.positive_int(self.ksub, "ksub")

    @classmethod
    def of(cls, settings: LimitSettings | None = None, /, **given: Any) -> LimitSettings:
        """``settings`` (default: the defaults) with the fields ``given`` replaced: what the closed
        forms take, as an object or as keywords (``lime_limit(pre, text, bow=False)``)."""
        return _replaced(cls, settings, given, "LIME's limit")

    def chosen(self) -> bool:
        """Whether an approximation was asked for by name (a ``law``, ``positions`` or a method
        other than the integral), rather than left to the defaults."""
        return self.law is not None or self.positions is not None or self.method != "integral"

    def route_kwargs(self) -> dict[str, Any]:
        """``tol``, ``budget``, ``seed`` where set (the deletion routes' keywords)."""
        return {k: getattr(self, k) for k in ("tol", "budget", "seed") if getattr(self, k) is not None}
