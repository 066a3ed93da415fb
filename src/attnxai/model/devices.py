"""Where a model runs: the one parser of a ``device`` argument (``"cpu"``, ``"cuda"``,
``"cuda:N"``, ``"mps"``).

:func:`parse_device` checks the form only (what a cluster client can check before its workers,
which may have devices this machine lacks, are asked); :func:`check_device` also checks that this
torch can use the device here.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["DEVICE_TYPES", "check_device", "parse_device"]

DEVICE_TYPES = ("cpu", "cuda", "mps")
_FORM = re.compile(r"(cpu|mps|cuda)(:\d+)?")


def parse_device(device: Any) -> str:
    """``device`` in canonical form (lower case, no spaces): ``"cpu"``, ``"cuda"``, ``"cuda:N"``
    or ``"mps"``; a ``torch.device`` is accepted. ``TypeError`` for another type, ``ValueError``
    for another form. Whether the device exists here is :func:`check_device`'s question."""
    if type(device).__name__ == "device" and type(device).__module__ == "torch":
        device = str(device)
    if not isinstance(device, str):
        raise TypeError(f"device must be a str such as 'cpu' or 'cuda', got "
                        f"{type(device).__name__}")
    dev = device.strip().lower()
    if not _FORM.fullmatch(dev):
        raise ValueError(f"device must be cpu, cuda, cuda:N or mps, got {device!r}")
    return "cpu" if dev.startswith("cpu") else dev


def check_device(device: Any = "cpu"):
    """``device`` as a ``torch.device`` this torch can use here (:func:`parse_device`, then
    availability); ``ValueError`` naming the device and what this torch sees otherwise."""
    import torch

    dev = torch.device(parse_device(device))
    if dev.type == "cpu":
        return torch.device("cpu")
    if dev.type == "cuda":
        n = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if n == 0:
            raise ValueError(f"device {device!r} is not available: torch {torch.__version__} sees "
                             "no CUDA device here (torch.cuda.is_available() is False); use cpu")
        if dev.index is not None and dev.index >= n:
            raise ValueError(f"device {device!r} is not available: torch sees {n} CUDA "
                             f"device(s), cuda:0 to cuda:{n - 1}")
        return dev
    if not torch.backends.mps.is_available():
        raise ValueError(f"device {device!r} is not available: torch {torch.__version__} sees "
                         "no Apple GPU (torch.backends.mps.is_available() is False); use cpu")
    return dev
