"""The memory budget: how much memory one request may take, checked before it allocates.

A request whose size the user chooses (LIME's ``num_samples``, the number of features it
enumerates...) is estimated first and refused with :class:`attnxai.errors.OverBudget` when the
estimate exceeds the budget, instead of growing until the kernel's out-of-memory killer stops it
(and other work on the machine with it). The budget is ``$ATTNXAI_MEMORY_BUDGET`` when set (bytes,
or with a unit: ``512M``, ``8G``, ``1.5T``; or a fraction of the machine's memory: ``0.25``),
else half of the machine's memory (its physical memory, or the container's limit when lower).
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

__all__ = ["ENV", "budget", "check", "describe", "machine_memory"]

ENV = "ATTNXAI_MEMORY_BUDGET"
#: The budget's share of the machine's memory when ``$ATTNXAI_MEMORY_BUDGET`` is not set.
DEFAULT_FRACTION = 0.5
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
_CGROUP_LIMITS = ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes")
#: Seconds a reading of :func:`machine_memory` is reused: reading it costs about 55 us (two
#: files), as much as a hundredth of a fast LIME explanation, which checks the budget each time.
MEMORY_READ_TTL = 1.0
_last_read: tuple[float, tuple, int | None] | None = None


def machine_memory() -> int | None:
    """Bytes of memory this process can use: the physical memory, or the cgroup (container)
    limit when it is lower; None where neither can be read. A reading is reused for
    :data:`MEMORY_READ_TTL` seconds (a changed limit is seen after that)."""
    global _last_read
    now = time.monotonic()
    if _last_read is not None and now - _last_read[0] < MEMORY_READ_TTL \
            and _last_read[1] == _CGROUP_LIMITS:
        return _last_read[2]
    value = _read_machine_memory()
    _last_read = (now, _CGROUP_LIMITS, value)
    return value


def _read_machine_memory() -> int | None:
    found = []
    try:
        found.append(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, OSError, ValueError):
        pass
    for name in _CGROUP_LIMITS:
        try:
            text = Path(name).read_text().strip()
        except OSError:
            continue
        if text.isdigit() and int(text) < 1 << 60:      # "max" or a huge number: no limit
            found.append(int(text))
    return min(found) if found else None


def _parse(text: str) -> tuple[int | None, float | None]:
    """``(bytes, None)`` or ``(None, fraction)`` from a budget setting; ValueError if neither."""
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([KMGT]?)(?:i?B)?\s*", text, re.IGNORECASE)
    if m is None:
        raise ValueError(f"${ENV}={text!r} is not a memory size: give bytes (8000000000), a size "
                         "with a unit (512M, 8G) or a fraction of the machine's memory (0.25)")
    value, unit = float(m.group(1)), m.group(2).upper()
    if not unit and value < 1:
        if value <= 0:
            raise ValueError(f"${ENV}={text!r}: the budget must be positive")
        return None, value
    return int(value * _UNITS[unit]), None


def budget() -> tuple[int, str]:
    """``(bytes, where it comes from)``: the memory one request may take (module docstring)."""
    setting = os.environ.get(ENV, "").strip()
    total = machine_memory()
    if setting:
        nbytes, fraction = _parse(setting)
        if nbytes is not None:
            return nbytes, f"${ENV}={setting}"
        if total is None:
            raise ValueError(f"${ENV}={setting} is a fraction, but this machine's memory is "
                             "unknown: give a size (8G)")
        return int(fraction * total), f"${ENV}={setting} of this machine's {_size(total)}"
    if total is None:
        return 8 << 30, f"8 GiB (this machine's memory is unknown; set ${ENV})"
    return int(DEFAULT_FRACTION * total), (f"half of this machine's {_size(total)}; set ${ENV} "
                                           "to change it")


def _size(nbytes: float) -> str:
    for unit, div in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if nbytes >= div:
            return f"{nbytes / div:.1f} {unit}"
    return f"{int(nbytes)} bytes"


def describe() -> str:
    """The budget in words (for messages and ``attnxai info``)."""
    nbytes, source = budget()
    return f"{_size(nbytes)} ({source})"


def check(nbytes: float, what: str, fix: str) -> None:
    """Refuse a request estimated at ``nbytes`` when it exceeds the budget
    (:class:`attnxai.errors.OverBudget`): ``what`` names the request, ``fix`` what to change."""
    from .errors import OverBudget

    limit, source = budget()
    if nbytes > limit:
        raise OverBudget(f"{what} would need about {_size(nbytes)} of memory, more than the "
                         f"budget of {_size(limit)} ({source}): {fix}")
