"""How big the chapters' experiments are: the session's book profile
(:func:`attnxai.settings.current`, which ``course.start`` sets or ``ATTNXAI_PROFILE`` names) and
the sample sizes it implies.

``paper`` (default) runs every chapter on the paper's model at the sizes the text quotes;
``quick`` (the test build) runs the same code on the quick model with small samples, so a broken
chapter fails fast. Chapters call :func:`sized` for every sample size they use.
"""

from __future__ import annotations

from .. import settings


def profile() -> str:
    """The book profile this session runs on ("paper" or "quick")."""
    return settings.current().book_profile


def sized(paper, quick):
    """``paper`` under the paper profile, ``quick`` under the quick one."""
    return paper if profile() == "paper" else quick
