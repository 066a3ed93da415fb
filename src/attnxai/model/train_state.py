"""The training's state, carried from one epoch to the next (:class:`TrainState`), saved after
every epoch when a ``state_dir`` is given (:func:`save_state`: safetensors and JSON, each written
atomically, the JSON last with the tensors' sha256), found again for the same configuration
(:func:`load_state`) and restored (:func:`resume`), so that an interrupted training resumes where
it stopped (:func:`attnxai.model.train.train`).
"""

from __future__ import annotations

import hashlib
import json
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from ..store.files import atomic_write
from .interface import ClassifierBase
from .profiles import TrainConfig

__all__ = ["StateWriter", "TrainState", "load_state", "resume", "save_state"]


@dataclass
class TrainState:
    """Everything a training carries from one epoch to the next (what :func:`save_state`
    writes): ``epoch`` epochs are done; ``best`` is the best validation accuracy so far and
    ``best_state`` its weights."""

    model: ClassifierBase
    opt: torch.optim.Optimizer
    sched: torch.optim.lr_scheduler.LRScheduler | None
    gen: torch.Generator
    epoch: int = 0
    history: list[dict[str, Any]] = field(default_factory=list)
    best: float = -1.0
    best_state: dict[str, torch.Tensor] | None = None
    timing: dict[str, Any] = field(default_factory=lambda: {
        "train_seconds": 0.0, "valid_seconds": 0.0, "resumed_at": []})
    padded: tuple[torch.Tensor, torch.Tensor] | None = None   # see padded_train_ids


_STATE_TENSORS = "state.safetensors"
_STATE_JSON = "state.json"


def save_state(folder: str | Path, state: TrainState, config: TrainConfig) -> None:
    """The training state after ``state.epoch`` epochs (safetensors + JSON, each written
    atomically; the JSON, written last, records the sha256 of the tensors). The schedule is saved
    through its public ``state_dict``."""
    _write_state(Path(folder), *_snapshot(state, config))


class StateWriter:
    """:func:`save_state` in a background thread, one state at a time: the training goes on with
    its next epoch while the last one's state is written (for the paper's model about 190 MB to
    serialise, hash and flush to disk, 1.5 s per epoch). :meth:`submit` copies what the next
    epoch changes in place (weights, the optimiser's moments) before it returns; :meth:`wait`
    returns once the state submitted last is on disk, and raises the error its writing met."""

    def __init__(self, folder: str | Path, config: TrainConfig) -> None:
        self.folder, self.config = Path(folder), config
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None

    def submit(self, state: TrainState) -> None:
        self.wait()
        tensors, meta = _snapshot(state, self.config)
        self._thread = threading.Thread(target=self._write, args=(tensors, meta),
                                        name="attnxai-train-state")
        self._thread.start()

    def _write(self, tensors: dict[str, torch.Tensor], meta: dict[str, Any]) -> None:
        try:
            _write_state(self.folder, tensors, meta)
        except BaseException as exc:      # noqa: BLE001 - raised again by wait()
            self._error = exc

    def wait(self) -> None:
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if self._error is not None:
            error, self._error = self._error, None
            raise error


def _snapshot(state: TrainState, config: TrainConfig
              ) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
    """The tensors and the JSON record of the state, copied: the training may change its
    weights, moments and history as soon as this returns."""
    tensors = {f"model.{k}": v.detach().cpu().clone().contiguous()
               for k, v in state.model.state_dict().items()}
    if state.best_state is not None:        # replaced by a new copy when it improves, never changed
        tensors.update({f"best.{k}": v.detach().cpu().contiguous()
                        for k, v in state.best_state.items()})
    osd = state.opt.state_dict()
    for idx, st in osd["state"].items():
        for name, v in st.items():
            tensors[f"opt.{idx}.{name}"] = torch.as_tensor(v).detach().cpu().clone().contiguous()
    tensors["rng.gen"] = state.gen.get_state()
    tensors["rng.torch"] = torch.get_rng_state()
    meta = json.loads(json.dumps(
        {"config": config.to_dict(), "epoch": state.epoch, "history": state.history,
         "best": state.best, "has_best": state.best_state is not None,
         "param_groups": osd["param_groups"],
         "sched": None if state.sched is None else state.sched.state_dict(),
         "timing": state.timing}))
    return tensors, meta


def _write_state(folder: Path, tensors: dict[str, torch.Tensor], meta: dict[str, Any]) -> None:
    from safetensors.torch import save as save_safetensors

    folder.mkdir(parents=True, exist_ok=True)
    blob = save_safetensors(tensors)
    meta = {**meta, "sha256": hashlib.sha256(blob).hexdigest()}
    atomic_write(folder / _STATE_TENSORS, blob)
    atomic_write(folder / _STATE_JSON, json.dumps(meta))


def load_state(folder: str | Path, config: TrainConfig) -> tuple[dict, dict] | None:
    """(meta, tensors) of a saved state of ``config``'s training, or None (no state, another
    config, or files that do not match)."""
    from safetensors.torch import load as load_safetensors

    from ..budget import budget
    from ..store.files import read_json, read_small_file

    folder = Path(folder)
    try:        # never waits on a FIFO nor reads a device without end (then: no state, retrain)
        meta = read_json(folder / _STATE_JSON)
        blob = read_small_file(folder / _STATE_TENSORS, budget()[0])
    except (OSError, ValueError):
        return None
    if meta.get("config") != json.loads(json.dumps(config.to_dict())) or \
            hashlib.sha256(blob).hexdigest() != meta.get("sha256"):
        return None
    return meta, load_safetensors(blob)


def resume(state: TrainState, config: TrainConfig, folder: str | Path,
           device: torch.device) -> bool:
    """Restore ``state`` from the state saved in ``folder`` for ``config`` (weights, best weights,
    optimiser, schedule through ``load_state_dict``, both random generators, history); False,
    with ``state`` untouched, when there is none."""
    saved = load_state(folder, config)
    if saved is None:
        return False
    meta, tensors = saved
    state.model.load_state_dict({k[6:]: v for k, v in tensors.items() if k.startswith("model.")})
    if meta["has_best"]:
        state.best_state = {k[5:]: v for k, v in tensors.items() if k.startswith("best.")}
    osd = {"state": {}, "param_groups": meta["param_groups"]}
    for k, v in tensors.items():
        if k.startswith("opt."):
            _, idx, name = k.split(".", 2)
            osd["state"].setdefault(int(idx), {})[name] = v.to(device) if name != "step" else v
    for g in osd["param_groups"]:
        g["betas"] = tuple(g["betas"])
    state.opt.load_state_dict(osd)
    if state.sched is not None:
        state.sched.load_state_dict(meta["sched"])
    state.gen.set_state(tensors["rng.gen"])
    torch.set_rng_state(tensors["rng.torch"])
    state.history, state.best, state.epoch = meta["history"], meta["best"], meta["epoch"]
    state.timing = meta["timing"]
    state.timing["resumed_at"].append(state.epoch)
    return True
