"""The run's settings: which book profile a session runs on and which seed a named training profile
trains with.

A :class:`RunSettings` value is what the package uses; code below the entry points never reads the
environment for them. The environment (``ATTNXAI_PROFILE``, ``ATTNXAI_SEED``) is read in one
function, :func:`from_environment`, once per process: by :func:`current` the first time a session
needs its settings (an entry point: the CLI, a chapter's launch cell through
:func:`attnxai.course.start`, the book's build, a plain ``import attnxai``), unless an entry point
chose them first with :func:`use` (``course.start`` falls back to the quick model that way).

``paper`` (default) runs every chapter on the paper's model at the sizes the text quotes;
``quick`` (the test build) runs the same code on the quick model with small samples. A seed
replaces the seed of every named training profile (:func:`attnxai.model.profiles.get_config`), so
the same commands build the book, and run the tests, on a model of other weights: the seed is part
of the cache key, so each seed's model is cached beside the default one.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, replace

__all__ = ["BOOK_PROFILES", "ENV_PROFILE", "ENV_SEED", "RunSettings", "current", "from_environment",
           "parse_profile", "parse_seed", "use"]

ENV_PROFILE = "ATTNXAI_PROFILE"
ENV_SEED = "ATTNXAI_SEED"
#: The profiles a book session runs on.
BOOK_PROFILES = ("paper", "quick")
#: The profile of a session that named none.
DEFAULT_PROFILE = "paper"


def parse_profile(raw: str) -> str:
    """``raw`` as a book profile; ``ValueError`` naming ``ATTNXAI_PROFILE`` otherwise."""
    if raw not in BOOK_PROFILES:
        raise ValueError(f"{ENV_PROFILE} must be one of {BOOK_PROFILES}, got {raw!r}")
    return raw


def parse_seed(raw: str | int | None) -> int | None:
    """``raw`` as a training seed (a whole number in [0, 2**63)), or None when it is None or empty;
    ``ValueError`` naming ``ATTNXAI_SEED`` otherwise."""
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return None
    if isinstance(raw, bool):
        raise ValueError(f"{ENV_SEED} must be a whole number >= 0, got {raw!r}")
    try:
        seed = int(raw.strip()) if isinstance(raw, str) else int(raw)
    except (TypeError, ValueError):
        raise ValueError(f"{ENV_SEED} must be a whole number >= 0, got {raw!r}") from None
    if not isinstance(raw, str) and seed != raw:
        raise ValueError(f"{ENV_SEED} must be a whole number >= 0, got {raw!r}")
    if seed < 0 or seed >= 2**63:
        raise ValueError(f"{ENV_SEED} must be a whole number in [0, 2**63), got {raw!r}")
    return seed


@dataclass(frozen=True)
class RunSettings:
    """A session's settings. ``profile``: the book profile it runs on, None when nobody chose one
    (then :attr:`book_profile` is ``paper``, and ``course.start`` may fall back to ``quick``);
    ``seed``: the seed of every named training profile, None for each profile's own."""

    profile: str | None = None
    seed: int | None = None

    def __post_init__(self):
        if self.profile is not None:
            parse_profile(self.profile)
        object.__setattr__(self, "seed", parse_seed(self.seed))

    @property
    def book_profile(self) -> str:
        """The profile the session runs on: the chosen one, else :data:`DEFAULT_PROFILE`."""
        return self.profile if self.profile is not None else DEFAULT_PROFILE


def from_environment(environ: Mapping[str, str] | None = None) -> RunSettings:
    """The settings that ``environ`` (default ``os.environ``) names: ``ATTNXAI_PROFILE`` (unset or
    empty: none chosen) and ``ATTNXAI_SEED`` (unset or empty: none). The one place the package
    reads them."""
    env = os.environ if environ is None else environ
    profile = env.get(ENV_PROFILE, "").strip() or None
    return RunSettings(profile=profile, seed=env.get(ENV_SEED))


_session: RunSettings | None = None


def current() -> RunSettings:
    """This process's settings: those an entry point gave :func:`use`, else the environment's,
    read the first time and kept."""
    global _session
    if _session is None:
        _session = from_environment()
    return _session


def use(settings: RunSettings | None = None, **changes) -> RunSettings:
    """Make ``settings`` (default: the current ones) with ``changes`` (``profile=``, ``seed=``)
    this process's settings, and return them. ``use(from_environment())`` reads the environment
    again (a test that changed it)."""
    global _session
    base = current() if settings is None else settings
    _session = replace(base, **changes) if changes else base
    return _session
