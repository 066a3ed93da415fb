"""How big the chapters' experiments are: the book's profile, from ``ATTNXAI_PROFILE``; and which
seed a named training profile uses, from ``ATTNXAI_SEED``.

``paper`` (default) runs every chapter on the paper's model at the sizes the text quotes;
``quick`` (the test build) runs the same code on the quick model with small samples, so a broken
chapter fails fast. Chapters call :func:`sized` for every sample size they use.
"""

from __future__ import annotations

import os

BOOK_PROFILES = ("paper", "quick")


def profile() -> str:
    p = os.environ.get("ATTNXAI_PROFILE", "paper")
    if p not in BOOK_PROFILES:
        raise ValueError(f"ATTNXAI_PROFILE must be one of {BOOK_PROFILES}, got {p!r}")
    return p


def seed_override() -> int | None:
    """``ATTNXAI_SEED`` as a seed (an integer >= 0), or None when it is unset or empty.

    It replaces the seed of every named training profile (:func:`attnxai.model.profiles.get_config`),
    so the same commands build the book, and run the tests, on a model of other weights: the seed
    is part of the cache key, so each seed's model is cached beside the default one."""
    raw = os.environ.get("ATTNXAI_SEED", "").strip()
    if not raw:
        return None
    try:
        seed = int(raw)
    except ValueError:
        raise ValueError(f"ATTNXAI_SEED must be a whole number >= 0, got {raw!r}") from None
    if seed < 0 or seed >= 2**63:
        raise ValueError(f"ATTNXAI_SEED must be a whole number in [0, 2**63), got {raw!r}")
    return seed


def sized(paper: int, quick: int) -> int:
    """``paper`` under the paper profile, ``quick`` under the quick one."""
    return paper if profile() == "paper" else quick
