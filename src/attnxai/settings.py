"""A session's settings: the book profile it runs on and the seed its named training profiles
train with, as one frozen value (:class:`Session`) that its entry point resolves and passes on.

**Entry points resolve it; everything below takes it as an argument.** The environment
(``ATTNXAI_PROFILE``, ``ATTNXAI_SEED``) is read here only, by :func:`from_environment` (and
:func:`chosen_profile`, :func:`chosen_seed`), and only the entry points call them: a chapter's
launch cell (``session = attnxai.course.start()``), the command line (:mod:`attnxai.cli`, for
the seed) and the book's build (``book/_ext``, the book pages without a launch cell). The package
below them holds no session of its own and reads no global setting: a chapter passes its
``session`` on (``attnxai.pretrained(session)``, ``session.sized(paper=..., quick=...)``,
``get_config(name, seed=session.seed)``); ``tests/test_session.py`` fails on any other reader.

``paper`` (default) runs every chapter on the paper's model at the sizes the text quotes;
``quick`` (the test build) runs the same code on the quick model with small samples. A seed
replaces the seed of every named training profile (:func:`attnxai.model.profiles.get_config`), so
the same commands build the book, and run the tests, on a model of other weights: the seed is part
of the cache key, so each seed's model is cached beside the default one.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TypeVar

__all__ = ["BOOK_PROFILES", "DEFAULT_PROFILE", "ENV_PROFILE", "ENV_SEED", "Session",
           "chosen_profile", "chosen_seed", "from_environment", "parse_profile", "parse_seed"]

ENV_PROFILE = "ATTNXAI_PROFILE"
ENV_SEED = "ATTNXAI_SEED"
#: The profiles a book session runs on.
BOOK_PROFILES = ("paper", "quick")
#: The profile of a session that names none, and of ``attnxai.pretrained()`` without argument.
DEFAULT_PROFILE = "paper"

T = TypeVar("T")


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
class Session:
    """What a session runs on, resolved once at its entry point and passed on as an argument.

    ``profile``: the book profile ("paper" or "quick"); ``seed``: the seed of every named
    training profile, None for each profile's own. ``attnxai.pretrained(session)`` is the
    session's model; ``session.sized(paper=..., quick=...)`` its sample sizes."""

    profile: str = DEFAULT_PROFILE
    seed: int | None = None

    def __post_init__(self):
        parse_profile(self.profile)
        object.__setattr__(self, "seed", parse_seed(self.seed))

    def sized(self, paper: T, quick: T) -> T:
        """``paper`` in a session on the paper profile, ``quick`` on the quick one: every sample
        size a chapter uses."""
        return paper if self.profile == "paper" else quick


def chosen_profile(environ: Mapping[str, str] | None = None) -> str | None:
    """The book profile ``ATTNXAI_PROFILE`` names in ``environ`` (default ``os.environ``), None
    when it is unset or empty; ``ValueError`` for another name."""
    env = os.environ if environ is None else environ
    raw = env.get(ENV_PROFILE, "").strip()
    return parse_profile(raw) if raw else None


def chosen_seed(environ: Mapping[str, str] | None = None) -> int | None:
    """The seed ``ATTNXAI_SEED`` names in ``environ`` (default ``os.environ``), None when it is
    unset or empty; ``ValueError`` for anything but a whole number in [0, 2**63)."""
    env = os.environ if environ is None else environ
    return parse_seed(env.get(ENV_SEED))


def from_environment(environ: Mapping[str, str] | None = None) -> Session:
    """The session that ``environ`` (default ``os.environ``) names: ``ATTNXAI_PROFILE`` (unset or
    empty: :data:`DEFAULT_PROFILE`) and ``ATTNXAI_SEED`` (unset or empty: none). For an entry
    point that runs without a launch cell (the book's build); a chapter's launch cell calls
    :func:`attnxai.course.start`, which may fall back to the quick model."""
    return Session(chosen_profile(environ) or DEFAULT_PROFILE, chosen_seed(environ))
