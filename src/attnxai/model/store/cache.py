"""Where trained models are kept: the one rule that names a profile's checkpoint folder in the
cache, and finds it.

A profile's model lives in ``<cache>/models/<profile>-<key>`` (:func:`attnxai.data.cache_dir`
for ``<cache>``), ``key`` being :func:`cache_key` of the training configuration, the sha256 of
the IMDb archive it was trained on and :data:`FORMAT_VERSION`: the book trains
a profile once and every chapter, command and worker reuses it.

**Offline.** :func:`candidates` finds the folder from the profile and the archive's checksum
without parsing the archive; with no archive given (argument or ``$ATTNXAI_IMDB_ARCHIVE``) it
looks for the model of either known IMDb archive (:data:`attnxai.data.KNOWN_SHA256`), so finding a
cached model needs neither the archive nor the network. Loading it is :mod:`attnxai.model.store.checkpoint`;
training it when it is missing is :func:`attnxai.pretrained` (:mod:`attnxai.model.trained`).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
from pathlib import Path

from ...data import (ENV_ARCHIVE, ENV_CACHE, KNOWN_SHA256, OFFICIAL_SHA256, archive_path, cache_dir,
                    default_cache_dir, file_sha256)
from ..profiles import PROFILES, TrainConfig

__all__ = ["FORMAT_VERSION", "cache_key", "candidates", "folder_name", "models_dir",
           "profile_of", "rebuild_hint"]

#: Bump when a change to the code changes what a given config trains to (every cached model is
#: then retrained).
FORMAT_VERSION = 1
_FOLDER = re.compile(r"(.+)-[0-9a-f]{16}")


def cache_key(config: TrainConfig, data_checksum: str) -> str:
    """The 16 hex digits that name ``config``'s model trained on the archive of sha256
    ``data_checksum``."""
    blob = json.dumps({"config": config.to_dict(), "data": data_checksum, "format": FORMAT_VERSION},
                      sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def models_dir(*, create: bool = False) -> Path:
    """``<cache>/models``, the folder of every cached checkpoint."""
    return cache_dir(create=create) / "models"


def folder_name(config: TrainConfig, data_checksum: str) -> str:
    """The checkpoint folder's name: ``<profile>-<cache_key>``."""
    return f"{config.profile}-{cache_key(config, data_checksum)}"


def candidates(config: TrainConfig, archive: str | os.PathLike | None = None
               ) -> list[tuple[Path, str]]:
    """The cache folders that can hold ``config``'s model, with the archive each was trained on.

    With an archive (argument or ``$ATTNXAI_IMDB_ARCHIVE``): the one folder of that archive's
    sha256 (the file is hashed, not parsed, and nothing is downloaded). Without one: the folders of
    the known archives (the official one, then the labelled copy)."""
    models = models_dir()
    if archive is not None or os.environ.get(ENV_ARCHIVE):
        path = archive_path(archive)
        shas = [(file_sha256(path), str(path))]
    else:
        shas = [(OFFICIAL_SHA256, KNOWN_SHA256[OFFICIAL_SHA256])]
        shas += [(s, n) for s, n in KNOWN_SHA256.items() if s != OFFICIAL_SHA256]
    return [(models / folder_name(config, sha), name) for sha, name in shas]


def profile_of(path: str | os.PathLike) -> str | None:
    """The profile whose cached model the folder ``path`` is (``<cache>/models/<profile>-<key>``
    of a known profile), else None."""
    path = Path(path)
    m = _FOLDER.fullmatch(path.name)
    if path.parent.name != "models" or m is None:
        return None
    return m.group(1) if m.group(1) in PROFILES else None


def rebuild_hint(path: str | os.PathLike, profile: str | None = None) -> str:
    """How to rebuild the checkpoint at ``path``: for a folder this package recognises as its own
    cache entry (``<cache>/models/<profile>-<key>`` of a known profile), the exact commands (the
    folder's removal, quoted for the shell, then ``python -m attnxai train``, with
    ``ATTNXAI_CACHE=`` when that cache is not the current one); for any other folder, how to
    replace it, never a command that deletes it (it may hold anything: ``/``, a home folder).
    ``profile`` is accepted for the callers' sake; the folder's own name decides."""
    path = Path(path)
    own = profile_of(path)              # the folder's name says which profile rebuilds it
    if own is not None:
        cache = path.parent.parent
        env = os.environ.get(ENV_CACHE)
        current = Path(env).expanduser() if env else default_cache_dir()
        prefix = ("" if current.resolve() == cache.resolve() else
                  f"ATTNXAI_CACHE={shlex.quote(str(cache))} ")
        return (f"Rebuild it: delete the cached model (rm -rf {shlex.quote(str(path))}) and run "
                f"`{prefix}python -m attnxai train --profile {own}`")
    return ("Save the model into that folder again (attnxai.model.store.checkpoint.save replaces a checkpoint "
            "folder), or restore the folder from a good copy")
