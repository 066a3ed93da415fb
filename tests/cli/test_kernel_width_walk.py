"""The walk of LIME's kernel width from ``attnxai faithfulness --kernel-width`` to the kernel.

The command line builds one :class:`~attnxai.limit_settings.LimeSettings` (its flags generated
from the fields), which checks the width once; the study resolves every method's settings once,
in :mod:`attnxai.registry`, before its first review; each review then goes through
:mod:`attnxai.explanation` (``explain_with``: nothing checked again), the LIME method and
:mod:`attnxai.fastlime`, whose kernel (``sampling.weights_by_count``) takes the width as checked.

The test runs the command in this process under ``sys.setprofile`` and records every call into
a room of the package (``attnxai.<room>``) from another room whose arguments carry the settings
object (directly, or inside a dict or list of settings) or the width itself, until the kernel
runs. Calls into :mod:`attnxai.limit_settings` (the settings' own type: building the object,
replacing a review's seed, which checks the seed alone) and :mod:`attnxai.validate` are counted
apart. It fails when a room is entered twice on the way, when the walk changes, and when the
width is checked more than once in the whole run (two reviews). Before this walk was laid out it
was cli -> experiment -> registry -> explanation -> registry -> explanation -> methods ->
fastlime, and the width was checked once more per review, by the kernel.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping

import pytest

from attnxai.limit_settings import LimeSettings

#: An unusual width, so that the value is recognised wherever it goes.
WIDTH = 17.25
#: The kernel: where the walk ends.
KERNEL = ("attnxai.fastlime.sampling", ("weights_by_count", "count_weights"))
#: The rooms the settings are carried through, in order, each once.
WALK = ["attnxai.cli", "attnxai.experiment", "attnxai.registry", "attnxai.explanation",
        "attnxai.methods", "attnxai.fastlime"]
OWN_TYPE, CHECKS = "attnxai.limit_settings", "attnxai.validate"


def carries(value, depth: int = 0) -> bool:
    """Whether ``value`` is the walking settings object (or holds it), or the width unpacked."""
    if isinstance(value, LimeSettings):
        return value.kernel_width == WIDTH
    if depth == 0 and isinstance(value, float):
        return value == WIDTH
    if depth < 3 and isinstance(value, Mapping):
        return any(carries(v, depth + 1) for v in value.values())
    if depth < 3 and isinstance(value, (list, tuple)):
        return any(carries(v, depth + 1) for v in value)
    return False


def room(module: str) -> str:
    return ".".join(module.split(".")[:2])


def _caller_room(frame) -> str:
    """The room of the nearest calling frame in the package (a context manager or a partial
    between them is not a room)."""
    frame = frame.f_back
    while frame is not None and not frame.f_globals.get("__name__", "").startswith("attnxai."):
        frame = frame.f_back
    return room(frame.f_globals["__name__"]) if frame is not None else ""


def walk(run) -> tuple[list[tuple[str, str]], int, list[str]]:
    """(room entered, function) for each entry carrying the settings before the kernel runs; the
    width's checks in the whole run; the rooms that called the settings type's own operations
    before the kernel."""
    entries: list[tuple[str, str]] = []
    own: list[str] = []
    state = {"checks": 0, "kernel": False}

    def profile(frame, event, arg):
        if event != "call":
            return
        module = frame.f_globals.get("__name__", "")
        if not module.startswith("attnxai."):
            return
        code = frame.f_code
        n = (code.co_argcount + code.co_kwonlyargcount + bool(code.co_flags & 4)
             + bool(code.co_flags & 8))
        if not any(carries(frame.f_locals.get(a)) for a in code.co_varnames[:n]):
            return
        if module == CHECKS and code.co_name == "kernel_width":
            state["checks"] += 1
        if state["kernel"]:
            return
        caller = _caller_room(frame)
        if room(module) == OWN_TYPE:
            if caller != OWN_TYPE:
                own.append(caller)
        elif room(module) != CHECKS and room(module) != caller:
            entries.append((room(module), f"{module}.{code.co_name}"))
        if module == KERNEL[0] and code.co_name in KERNEL[1]:
            state["kernel"] = True

    sys.setprofile(profile)
    try:
        status = run()
    finally:
        sys.setprofile(None)
    assert status == 0 and state["kernel"], "the command failed or never reached the kernel"
    return entries, state["checks"], own


def test_the_kernel_width_walks_once_through_each_room(quick_model, archive, tmp_path,
                                                        monkeypatch):
    from attnxai.cli import main

    monkeypatch.delenv("ATTNXAI_SEED", raising=False)
    entries, checks, own = walk(lambda: main(
        ["faithfulness", "--profile", "quick", "--reviews", "2", "--chunk", "1",
         "--methods", "LIME", "--kernel-width", str(WIDTH), "--num-samples", "60",
         "--perturbations", "delete", "--selections", "positive", "--archive", archive,
         "--out", str(tmp_path / "out"), "--no-progress"]))
    rooms = ["attnxai.cli"] + [r for r, _ in entries]
    assert len(rooms) == len(set(rooms)), f"a room entered twice on the way: {entries}"
    assert rooms == WALK, entries
    assert checks == 1, f"the width was checked {checks} times in a run of two reviews"
    # the settings' own type, before the kernel: built by the command line, read whole by the
    # study, given the placeholder seed when resolved, the review's seed, read by fastlime (none
    # checks the width again)
    assert own == ["attnxai.cli", "attnxai.experiment", "attnxai.registry",
                   "attnxai.explanation", "attnxai.fastlime"], own


def test_the_walk_sees_a_second_entry_and_a_second_check():
    """The recorder is not blind: a room entered twice, and a width checked twice, are seen."""
    from attnxai import validate
    from attnxai.registry import study_settings

    def twice():
        settings = LimeSettings(kernel_width=WIDTH)
        study_settings(["LIME"], {"LIME": settings})
        validate.kernel_width(settings.kernel_width)
        study_settings(["LIME"], {"LIME": settings})
        from attnxai.fastlime.sampling import count_weights
        import numpy as np

        count_weights(np.array([3, 2]), 3, settings.kernel_width)
        return 0

    entries, checks, _ = walk(twice)
    rooms = [r for r, _ in entries]
    assert rooms.count("attnxai.registry") == 2 and checks == 3, (entries, checks)


@pytest.mark.parametrize("width", [0.0, -1.0, float("nan")])
def test_a_bad_width_is_refused_at_the_edge(width, capsys):
    """The one check is at the edge: the command refuses a bad width before any model is read."""
    from attnxai.cli import main

    assert main(["faithfulness", "--profile", "quick", "--kernel-width", str(width),
                 "--out", "/nonexistent/never-written"]) == 2
    assert "kernel_width" in capsys.readouterr().err
