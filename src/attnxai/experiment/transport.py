"""What a study's workers need, shipped to them: no shared file system, nothing trusted unchecked.

**The model.** A study names the checkpoint its tasks use (:meth:`Study.model
<attnxai.experiment.runner.Study.model>`). The runner reads the checkpoint folder once, verified
as :func:`attnxai.model.store.checkpoint.load` verifies it, into a :class:`ModelBundle`: the bytes of
``model.safetensors``, ``config.json``, ``vocab.json``, ``metrics.json`` and ``manifest.json``
(the sha256 and size of each file, the vocabulary size and the config hash). Its handle, a
:class:`ModelRef` (the folder's name and the sha256 of the manifest, a few hundred bytes), is
what a task carries instead of a path. Before the tasks run, the runner installs the bundle once
in every worker process (:func:`install`: in a local worker's start-up, or through a Dask worker
plugin that the scheduler also gives to workers that join, or restart, later). The worker checks
the manifest against the handle's sha256, every file against the manifest, and the pieces
against each other (:func:`attnxai.model.store.checkpoint.from_files`); a copy damaged on the way raises
:class:`~attnxai.model.store.checkpoint.CheckpointError` naming the file and the worker. A task then gets
the model with ``ref.load()``: the verified copy in its own process, loaded once.

**The reviews** travel by content, inside the work items (a few kB of text per review): a
worker needs neither the IMDb archive nor the cache.

:func:`install` is also what runs in this process for ``jobs=1``, so every way of running loads
the model from the same verified bytes.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from ..model.store.checkpoint import MANIFEST, CheckpointError, checkpoint_files, from_files
from ..model.devices import check_device
from ..store.files import sha256 as _sha256
from ..model.textmodel import Pretrained

__all__ = ["DTYPES", "ModelBundle", "ModelRef", "install", "installed", "uninstall"]

#: The dtypes a shipped model can be loaded in.
DTYPES = {"float32": torch.float32, "float64": torch.float64}
#: How many models one process keeps installed (least recently installed dropped first).
MAX_INSTALLED = 4


def _here() -> str:
    return f"{socket.gethostname()} (pid {os.getpid()})"


def _dtype_name(dtype: str | torch.dtype) -> str:
    for name, dt in DTYPES.items():
        if dtype in (name, dt):
            return name
    raise ValueError(f"a shipped model is float32 or float64, got {dtype!r}")


@dataclass(frozen=True)
class ModelRef:
    """A task's handle on a shipped checkpoint (picklable, a few hundred bytes).

    ``name``: the checkpoint folder's name; ``digest``: the sha256 of its ``manifest.json``
    (which records the sha256 of every file, so it identifies the whole checkpoint); ``dtype``:
    what the model is loaded as; ``source``: ``host:path`` it was read from (for messages, and
    for :meth:`load` outside a run on that same host)."""

    name: str
    digest: str
    dtype: str = "float32"
    source: str = ""

    @property
    def key(self) -> tuple[str, str]:
        return (self.digest, self.dtype)

    def load(self) -> Pretrained:
        """The model installed in this process by the runner (verified, loaded once).

        Outside a run (a task function called directly), on the host the checkpoint was read
        from, it is read from its folder (and checked to be the same checkpoint); anywhere else
        this raises ``RuntimeError``."""
        with _LOCK:
            entry = _INSTALLED.get(self.key)
        if entry is not None:
            return entry.pre
        host, _, path = self.source.partition(":")
        if host == socket.gethostname() and path and Path(path).is_dir():
            bundle = ModelBundle.read(path, dtype=self.dtype)
            if bundle.ref.digest != self.digest:
                raise CheckpointError(
                    f"the checkpoint folder {path} changed since this task was planned (its "
                    f"manifest's sha256 is {bundle.ref.digest[:12]}..., the task expects "
                    f"{self.digest[:12]}...): rerun the command")
            return install(bundle, origin="folder")
        raise RuntimeError(
            f"model {self.name} (manifest sha256 {self.digest[:12]}...) is not installed in "
            f"{_here()}: the runner (attnxai.experiment.run) installs a study's model() in every "
            "worker before its tasks run; a task function called outside a run needs the "
            f"checkpoint folder on this host ({self.source or 'unknown source'})")


@dataclass(frozen=True, eq=False)
class ModelBundle:
    """A checkpoint's files in memory, with their :class:`ModelRef` (what travels to workers)."""

    ref: ModelRef
    files: dict[str, bytes]

    @classmethod
    def read(cls, model: Pretrained | str | os.PathLike,
             dtype: str | torch.dtype | None = None) -> "ModelBundle":
        """Read and verify the checkpoint folder of ``model`` (a :class:`~attnxai.Pretrained`
        loaded from one, or the folder's path). For a ``Pretrained`` the dtype defaults to its
        own and its weights in memory must be the folder's: a model changed after loading cannot
        be shipped as that folder (save it to a folder of its own first)."""
        pre = model if isinstance(model, Pretrained) else None
        if pre is not None:
            if pre.path is None:
                raise ValueError("the study's model has no checkpoint folder to ship: save it "
                                 "first (attnxai.save(pre, folder)) and load it from there")
            path = Path(pre.path)
            if dtype is None:
                dtype = next(pre.model.parameters()).dtype
        elif isinstance(model, (str, os.PathLike)):
            path = Path(model).expanduser()
        else:
            raise TypeError(f"a study's model() is a Pretrained or a checkpoint folder, got "
                            f"{type(model).__name__}")
        dtype_name = _dtype_name(dtype if dtype is not None else "float32")
        files = checkpoint_files(path)
        ref = ModelRef(name=path.name, digest=_sha256(files[MANIFEST]), dtype=dtype_name,
                       source=f"{socket.gethostname()}:{path.resolve()}")
        bundle = cls(ref, files)
        if pre is not None:
            bundle._check_same_weights(pre)
        return bundle

    def _check_same_weights(self, pre: Pretrained) -> None:
        from safetensors.torch import load as load_safetensors

        saved = load_safetensors(self.files["model.safetensors"])
        live = {k: v.detach() for k, v in pre.model.state_dict().items()}
        dtype = DTYPES[self.ref.dtype]
        changed = sorted(k for k in saved.keys() | live.keys()
                         if k not in saved or k not in live
                         or not torch.equal(saved[k].to(dtype), live[k].to("cpu", dtype)))
        if changed:
            raise ValueError(f"the study's model differs from its checkpoint folder {pre.path} "
                             f"(weights {changed[:4]} changed in memory after loading): the "
                             "workers would get the folder's weights. Save the changed model to a "
                             "folder of its own (attnxai.save) and load it from there")

    @property
    def nbytes(self) -> int:
        return sum(len(v) for v in self.files.values())

    def verify(self, where: str = "") -> None:
        """The manifest is the one the handle names (each file is checked against it when the
        model is built); ``CheckpointError`` otherwise."""
        if MANIFEST not in self.files or _sha256(self.files[MANIFEST]) != self.ref.digest:
            raise CheckpointError(
                f"the copy of checkpoint {self.ref.name} received {where or 'here'} is damaged: "
                f"its {MANIFEST} is not the one sent (sha256 {self.ref.digest[:12]}...). Rerun; "
                "if it happens again, check the network and the worker's memory")


@dataclass
class _Installed:
    pre: Pretrained
    name: str
    device: str
    origin: str
    seconds: float


_LOCK = threading.Lock()
_INSTALLED: "OrderedDict[tuple[str, str], _Installed]" = OrderedDict()


def install(bundle: ModelBundle, device: str | torch.device = "cpu", *,
            origin: str = "shipped") -> Pretrained:
    """Verify ``bundle`` and load its model in this process, on ``device``, for
    :meth:`ModelRef.load` (once: a model already installed there is reused). ``origin`` says how
    it came (``shipped``, ``in-process``, ``folder``; see :func:`installed`)."""
    if not isinstance(bundle, ModelBundle):
        raise TypeError(f"install takes a ModelBundle, got {type(bundle).__name__}")
    dev = str(check_device(device))
    ref = bundle.ref
    with _LOCK:
        entry = _INSTALLED.get(ref.key)
        if entry is not None and entry.device == dev:
            return entry.pre
    where = f"by {_here()}"
    t0 = time.perf_counter()
    bundle.verify(where)
    try:
        pre = from_files(bundle.files, where=f"{ref.name} (copy received {where} from "
                                             f"{ref.source})", dtype=DTYPES[ref.dtype])
    except CheckpointError as exc:
        raise CheckpointError(f"the copy of checkpoint {ref.name} received {where} is damaged: "
                              f"{exc}") from None
    pre.model.to(dev)
    with _LOCK:
        _INSTALLED[ref.key] = _Installed(pre, ref.name, dev, origin, time.perf_counter() - t0)
        _INSTALLED.move_to_end(ref.key)
        while len(_INSTALLED) > MAX_INSTALLED:
            _INSTALLED.popitem(last=False)
    return pre


def uninstall(ref: ModelRef | None = None) -> None:
    """Forget the model of ``ref`` (every model: ``None``) in this process."""
    with _LOCK:
        if ref is None:
            _INSTALLED.clear()
        else:
            _INSTALLED.pop(ref.key, None)


def installed() -> list[dict[str, Any]]:
    """The models installed in this process: name, manifest sha256 (``digest``), dtype, device,
    origin, seconds to verify and load, pid (diagnostics: ``client.run(installed)`` on a
    cluster)."""
    with _LOCK:
        return [{"name": e.name, "digest": digest, "dtype": dtype, "device": e.device,
                 "origin": e.origin, "seconds": e.seconds, "pid": os.getpid()}
                for (digest, dtype), e in _INSTALLED.items()]
