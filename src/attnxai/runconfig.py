"""How big the chapters' experiments are: the book's profile, from ``ATTNXAI_PROFILE``.

``paper`` (default) runs every chapter on the paper's model at the sizes the text quotes;
``quick`` (the test build) runs the same code on the quick model with small samples, so a broken
chapter fails fast. Chapters call :func:`sized` for every sample size they use.
"""

from __future__ import annotations

import os

PROFILES = ("paper", "quick")


def profile() -> str:
    p = os.environ.get("ATTNXAI_PROFILE", "paper")
    if p not in PROFILES:
        raise ValueError(f"ATTNXAI_PROFILE must be one of {PROFILES}, got {p!r}")
    return p


def sized(paper: int, quick: int) -> int:
    """``paper`` under the paper profile, ``quick`` under the quick one."""
    return paper if profile() == "paper" else quick
