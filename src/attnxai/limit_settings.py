"""The settings of LIME's large-sample limit (:func:`attnxai.theory.lime_limit`): one dataclass,
its defaults in one place, shared by the closed forms (``attnxai.theory.lime_attention``) and
the table of methods (:data:`attnxai.registry.METHODS`, method ``"LIME limit"``).

It sits below both (it imports only :mod:`attnxai.validate`), so that the registry, and with it
``import attnxai``, does not load SymPy and numba (the closed forms') to name a setting.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

from . import validate

__all__ = ["LimitSettings"]


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

    kernel_width: float = 25.0
    bow: bool = True
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
        if settings is not None and not isinstance(settings, cls):
            raise TypeError(f"settings must be a LimitSettings, got {type(settings).__name__}")
        fields = [f.name for f in dataclasses.fields(cls)]
        unknown = sorted(set(given) - set(fields))
        if unknown:
            raise TypeError(f"unknown setting(s) {unknown} of LIME's limit; its settings are "
                            f"{fields}")
        return dataclasses.replace(settings or cls(), **given)

    def chosen(self) -> bool:
        """Whether an approximation was asked for by name (a ``law``, ``positions`` or a method
        other than the integral), rather than left to the defaults."""
        return self.law is not None or self.positions is not None or self.method != "integral"

    def route_kwargs(self) -> dict[str, Any]:
        """``tol``, ``budget``, ``seed`` where set (the deletion routes' keywords)."""
        return {k: getattr(self, k) for k in ("tol", "budget", "seed") if getattr(self, k) is not None}
