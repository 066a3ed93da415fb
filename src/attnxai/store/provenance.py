"""Where a number came from: the code (git commit, uncommitted changes), the package version, the
machine and its load. Recorded with every trained model (``metrics.json``) and every corpus run
(the results folder's run log), and read back by the book's summary headers; this module is the
one place these are measured.
"""

from __future__ import annotations

import hashlib
import os
import platform
import socket
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["code_label", "cpu", "host", "loadavg", "package_version", "source_state",
           "weights_sha256"]

#: The instruction-set flags (of /proc/cpuinfo's) that decide which kernels torch and the BLAS
#: pick, and so the rounding of a training run: two machines that differ here may train other
#: weights from the same seed (book/reproducibility.md).
_ISA_PREFIXES = ("sse", "ssse", "avx", "fma", "f16c", "amx", "bmi", "vnni", "asimd", "sve", "neon")


def source_state() -> dict[str, Any]:
    """``{"commit": ..., "dirty": ...}``: the git commit of the package's source and whether
    tracked files differ from it (both None outside a git checkout)."""
    src = Path(__file__).resolve().parent
    try:
        head = subprocess.run(["git", "-C", str(src), "rev-parse", "HEAD"], capture_output=True,
                              text=True, timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(src), "status", "--porcelain",
                                "--untracked-files=no"], capture_output=True, text=True,
                               timeout=10, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "dirty": None}
    return {"commit": head, "dirty": bool(dirty)}


def code_label(commit: str | None = None, dirty: bool | None = None) -> str:
    """How the book's summaries name code: ``commit``, marked when tracked files differed from
    it. Without arguments, this checkout's (:func:`source_state`)."""
    if commit is None and dirty is None:
        src = source_state()
        commit, dirty = src["commit"], src["dirty"]
    return f"{commit or 'not recorded'}{' (with uncommitted changes!)' if dirty else ''}"


def loadavg() -> list[float] | None:
    """The machine's 1, 5 and 15 minute load averages, rounded to 0.01 (None where the OS has
    none)."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def package_version() -> str:
    """The installed attnxai's version (``"unknown"`` when it is not installed)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("attnxai")
    except PackageNotFoundError:
        return "unknown"


def host() -> str:
    """This machine's name."""
    return socket.gethostname()


def cpu() -> dict[str, Any]:
    """The processor a number was computed on: its model name, architecture and the
    instruction-set flags that choose the numeric kernels (``flags``: sorted; empty where the OS
    has no /proc/cpuinfo)."""
    model, flags = platform.processor() or "unknown", []
    try:
        text = Path("/proc/cpuinfo").read_text(errors="replace")
    except OSError:
        text = ""
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key = key.strip().lower()
        if key in ("model name", "hardware", "cpu model") and model in ("unknown", platform.machine()):
            model = value.strip() or model
        elif key in ("flags", "features") and not flags:
            flags = sorted(f for f in value.split() if f.lower().startswith(_ISA_PREFIXES))
    return {"model": model, "machine": platform.machine(), "flags": flags}


def weights_sha256(state: Mapping[str, Any]) -> str:
    """The sha256 of a model's weights (a ``state_dict``: names to tensors), independent of the
    file format: each tensor's name, dtype, shape and bytes in name order. Equal digests mean
    bit-identical weights."""
    h = hashlib.sha256()
    for name in sorted(state):
        t = state[name].detach().cpu().contiguous()
        h.update(f"{name}|{t.dtype}|{tuple(t.shape)}|".encode())
        try:
            raw = t.numpy().tobytes()
        except TypeError:             # bfloat16 has no numpy type: float32 holds it exactly
            raw = t.float().numpy().tobytes()
        h.update(raw)
    return h.hexdigest()
