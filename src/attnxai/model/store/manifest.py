"""A checkpoint's format: the files of its folder, its manifest (sha256 and size of every file,
the vocabulary size, the config's hash), the model classes it may hold, and the error that names a
damaged one. What :mod:`attnxai.model.store.folder` writes and reads and
:mod:`attnxai.model.store.verify` checks; the folder's layout is described in
:mod:`attnxai.model.store.checkpoint`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ...errors import UserError
from ...store.files import sha256 as _sha256
from ..interface import ClassifierBase
from ..multilayer import MultiLayerClassifier
from ..single_layer import AttentionClassifier
from .cache import FORMAT_VERSION, rebuild_hint

__all__ = ["CONTENT_FILES", "CheckpointError", "CheckpointWarning", "FILES", "MANIFEST",
           "MANIFEST_VERSION", "MODEL_CLASSES", "ORIGIN", "config_sha256", "damaged", "is_ours",
           "manifest_bytes"]

#: The model classes a checkpoint can hold, by the name its config.json records (``arch``).
MODEL_CLASSES: dict[str, type[ClassifierBase]] = {"AttentionClassifier": AttentionClassifier,
                                                   "MultiLayerClassifier": MultiLayerClassifier}
#: The files that hold the model (the manifest lists them).
CONTENT_FILES = ("model.safetensors", "config.json", "vocab.json", "metrics.json")
MANIFEST = "manifest.json"
#: Every file of a checkpoint folder, the manifest last (what is published and downloaded).
FILES = (*CONTENT_FILES, MANIFEST)
#: Where a downloaded checkpoint came from (:func:`save_files`; not verified, not published).
ORIGIN = "origin.json"
MANIFEST_VERSION = 1


class CheckpointError(UserError, RuntimeError):
    """A checkpoint folder is damaged, inconsistent or cannot be written (the message says which
    file and how to rebuild it)."""


class CheckpointWarning(UserWarning):
    """Something about a checkpoint the reader should know."""


# ---------------------------------------------------------------------- manifest and messages
def config_sha256(config: dict[str, Any]) -> str:
    """sha256 of a checkpoint config as canonical JSON (sorted keys, no spaces)."""
    return _sha256(json.dumps(config, sort_keys=True, separators=(",", ":")).encode())


def manifest_bytes(files: dict[str, bytes], config: dict[str, Any], vocab_size: int, *,
              adopted: bool = False) -> bytes:
    m = {"manifest_version": MANIFEST_VERSION,
         "format": config.get("format", FORMAT_VERSION),
         "files": {name: {"sha256": _sha256(files[name]), "bytes": len(files[name])}
                   for name in CONTENT_FILES},
         "vocab_size": int(vocab_size),
         "config_sha256": config_sha256(config)}
    if adopted:
        m["adopted"] = ("written by `attnxai adopt` for a checkpoint without a manifest: its files "
                        "passed every check that needs no manifest and were trusted as found")
    return json.dumps(m, indent=2, sort_keys=True).encode()


def damaged(path: Path, problems: list[str], profile: str | None) -> CheckpointError:
    what = "; ".join(problems)
    err = CheckpointError(f"checkpoint {path} is damaged: {what}. It cannot be trusted. "
                          f"{rebuild_hint(path, profile)}")
    err.problems = problems                 # what is wrong, without the advice (attnxai.model.store.hub)
    return err


def is_ours(name: str, doc: Any) -> bool:
    """Whether ``doc``, the content of a checkpoint's ``manifest.json`` or ``config.json``, is one
    attnxai writes: a manifest with its version, file table of checkpoint files and config hash;
    a config naming an architecture attnxai knows, with the model's and the training's sections
    and the format (two common keys such as ``arch`` and ``model`` are not enough)."""
    if not isinstance(doc, dict):
        return False
    if name == MANIFEST:
        return isinstance(doc.get("manifest_version"), int) and isinstance(doc.get("files"), dict) \
            and set(doc["files"]) <= set(CONTENT_FILES) and isinstance(doc.get("config_sha256"), str)
    return doc.get("arch", "AttentionClassifier") in MODEL_CLASSES and "arch" in doc \
        and isinstance(doc.get("model"), dict) and isinstance(doc.get("train"), dict) \
        and "format" in doc
