"""The book's trained models, published beside the site and downloaded, verified, by readers.

**Publishing.** :func:`publish` (``python -m attnxai publish-models --out DIR``; the deploy
workflow runs it into ``_build/html/models`` after ``make book``) copies cached checkpoint
folders, verified, to ``DIR/<profile>-<key>/`` and writes ``DIR/index.json``::

    {"index_version": 1, "published": ..., "attnxai": ..., "commit": ...,
     "models": {"<profile>-<key>": {"profile", "key", "train", "data_sha256", "format", "arch",
                                     "test_accuracy", "files": {name: {"sha256", "bytes"}}}}}

``<profile>-<key>`` is the cache folder's name (:func:`attnxai.model.store.cache.folder_name`: the training
configuration, the IMDb archive's sha256 and the format version), so a reader's code asks for
exactly the model it would train.

**Where.** :func:`index_url`: ``$ATTNXAI_MODELS_URL`` (the folder holding ``index.json``, or the
index itself), else ``models/index.json`` on the GitHub Pages site of the book's repository
(:func:`attnxai.store.repository.book_repository`). None, with the reason, when ``ATTNXAI_OFFLINE=1`` or
no repository is named (the placeholder): then nothing is downloaded.

**Downloading.** :func:`fetch` reads the index, takes the entry whose name is the folder the code
asks for (never another key: other code, recipe or data), checks that the entry records the same
training configuration, data and format, and, under the folder's writers' lock (the one training
takes, so two processes download once), downloads every file with a progress bar
(:func:`attnxai.store.download.download`: each bounded by the index's size while it streams, every
wait bounded) into a temporary folder. Each file's size and sha256 must equal the index's;
then the config must name the same key, and the checkpoint must pass :mod:`attnxai.model.store.checkpoint`'s
verification (every file against its own manifest, the pieces against each other). Only then is
it swapped into the cache (:func:`attnxai.model.store.checkpoint.save_files`, one atomic rename), with an
``origin.json`` saying where it came from (credentials in ``$ATTNXAI_MODELS_URL`` are never
shown nor stored: :func:`attnxai.store.download.redact`). Any failure raises :class:`HubError` and leaves nothing
in the cache. :func:`attnxai.pretrained` calls it between the cache and training.
"""

from __future__ import annotations

import io
import json
import os
import re
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from filelock import Timeout

from .cache import FORMAT_VERSION, cache_key, folder_name
from .checkpoint import FILES, CheckpointError, check_replaceable, checkpoint_files, save_files
from ...data import source_checkout
from ...store.download import ENV_OFFLINE, DownloadError, download, offline, redact
from ...errors import UserError
from ...store.files import sha256 as _sha256
from ...store.files import (TMP_PREFIX, WAIT_SECONDS, atomic_write, loads_json, replace_folder,
                           write_durably, writer_lock)
from ..profiles import TrainConfig
from ...store.provenance import package_version, source_state
from ...store.repository import ENV_REPOSITORY, book_repository, pages_url

__all__ = ["ENV_MODELS_URL", "ENV_OFFLINE", "HubError", "INDEX", "compare_published", "fetch",
           "index_url", "offline", "publish", "read_index"]

ENV_MODELS_URL = "ATTNXAI_MODELS_URL"
INDEX = "index.json"
INDEX_VERSION = 1
#: A published file larger than this is refused before it is downloaded (the paper's weights
#: are 46 MB).
MAX_BYTES = 2 << 30
#: The largest index read (one entry is about 2 KB).
INDEX_BYTES = 4 << 20
_SHA256 = re.compile(r"[0-9a-f]{64}")


class HubError(UserError, RuntimeError):
    """A published model could not be had: downloading is off, the index cannot be read or has
    no model for this code, or a download was refused (the message says which and why)."""


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {str(exc)[:300]}"


# ---------------------------------------------------------------------- where
def _turn_on() -> str:
    return (f"to download the book's models, set {ENV_REPOSITORY}=owner/name (the GitHub "
            f"repository whose Pages site publishes them) or {ENV_MODELS_URL}=<the URL of the "
            f"folder holding {INDEX}>")


def index_url() -> tuple[str | None, str]:
    """The URL of the published index and where it comes from, or None and why nothing is
    downloaded (module docstring)."""
    if offline():
        return None, f"{ENV_OFFLINE}={os.environ[ENV_OFFLINE]} is set (unset it to download)"
    explicit = os.environ.get(ENV_MODELS_URL, "").strip()
    if explicit:
        if not re.match(r"https?://", explicit):
            raise ValueError(f"{ENV_MODELS_URL} must be an http(s) URL, got "
                             f"{redact(explicit)!r}")
        url = explicit if explicit.endswith(".json") else explicit.rstrip("/") + "/" + INDEX
        return url, f"${ENV_MODELS_URL}"
    repo, where = book_repository(source_checkout())
    if repo is None:
        return None, f"{where}; {_turn_on()}"
    site = pages_url(repo)
    if site is None:
        return None, (f"the book's repository {repo} (from {where}) is not on GitHub, so there is "
                      f"no Pages site to download from: set {ENV_MODELS_URL}")
    return f"{site}models/{INDEX}", f"the GitHub Pages site of {repo} (from {where})"


def read_index(url: str) -> dict[str, Any]:
    """The published index at ``url`` (read afresh: it changes with every deploy; at most
    :data:`INDEX_BYTES`, bounded in time as every download, :func:`attnxai.store.download.download`,
    and in depth)."""
    buf = io.BytesIO()
    shown = redact(url)
    try:
        download(url, buf, max_bytes=INDEX_BYTES, what=f"the published index {shown}")
    except DownloadError as exc:
        raise HubError(f"could not read the published index {shown} ({exc})") from None
    try:
        index = loads_json(buf.getvalue(), shown)
    except ValueError as exc:
        raise HubError(f"{shown} is not an index of published models (not JSON: "
                       f"{str(exc)[:200]})") from None
    url = shown
    if not isinstance(index, dict) or not isinstance(index.get("models"), dict):
        raise HubError(f"{url} is not an index of published models (no 'models' table)")
    if index.get("index_version") != INDEX_VERSION:
        raise HubError(f"{url} is an index of version {index.get('index_version')!r}; this "
                       f"attnxai reads version {INDEX_VERSION}: update attnxai")
    return index


# ---------------------------------------------------------------------- what is the model
def _identity_problems(record: dict[str, Any], name: str, config: TrainConfig) -> list[str]:
    """Why ``record`` (an index entry, or a checkpoint's config.json) is not the model of the
    folder ``name`` for ``config``: its training configuration, data and format must give that
    key."""
    train = record.get("train")
    want = json.loads(json.dumps(config.to_dict()))
    problems = []
    if train != want:
        differ = sorted(k for k in set(want) | set(train if isinstance(train, dict) else {})
                        if not isinstance(train, dict) or train.get(k) != want.get(k))
        problems.append(f"another training configuration (differs in {', '.join(differ)})")
    if record.get("format") != FORMAT_VERSION:
        problems.append(f"format {record.get('format')!r}, this code's is {FORMAT_VERSION}")
    sha = record.get("data_sha256")
    if not isinstance(sha, str) or f"{config.profile}-{cache_key(config, sha)}" != name:
        problems.append(f"data of sha256 {str(sha)[:16]}..., which does not give the key {name}")
    return problems


def _checked_entry(entry: Any, name: str, config: TrainConfig, url: str) -> dict[str, Any]:
    """The index's entry for ``name``, checked: the same model (identity) and a file table with
    exactly the checkpoint's files, sizes and sha256."""
    if not isinstance(entry, dict) or not isinstance(entry.get("files"), dict):
        raise HubError(f"the entry for {name} in {url} has no file table: refused")
    problems = _identity_problems(entry, name, config)
    if problems:
        raise HubError(f"the entry for {name} in {url} records another model than this code asks "
                       f"for ({'; '.join(problems)}): refused, nothing downloaded")
    files = entry["files"]
    if set(files) != set(FILES):
        raise HubError(f"the entry for {name} in {url} lists the files {sorted(files)}, a "
                       f"checkpoint has {sorted(FILES)}: refused, nothing downloaded")
    for fname, rec in files.items():
        ok = isinstance(rec, dict) and isinstance(rec.get("sha256"), str) \
            and _SHA256.fullmatch(rec["sha256"]) and isinstance(rec.get("bytes"), int) \
            and 0 < rec["bytes"] <= MAX_BYTES
        if not ok:
            raise HubError(f"the entry for {name} in {url} records no valid sha256 and size for "
                           f"{fname} (sizes up to {MAX_BYTES} bytes): refused, nothing "
                           "downloaded")
    return entry


# ---------------------------------------------------------------------- downloading
def _download(entry: dict[str, Any], base: str, models: Path, name: str,
              progress: bool) -> dict[str, bytes]:
    """Every file of the entry, each checked against the index's size and sha256 (streamed to
    a temporary folder beside the cache's folders, removed on the way out)."""
    out: dict[str, bytes] = {}
    with tempfile.TemporaryDirectory(dir=models, prefix=f"{TMP_PREFIX}{name}-download-") as tmp:
        for fname in FILES:
            rec, real_url = entry["files"][fname], f"{base}{fname}"
            url = redact(real_url)
            target = Path(tmp) / fname
            try:
                with open(target, "wb") as sink:
                    download(real_url, sink, max_bytes=rec["bytes"], what=url,
                             progress=progress and rec["bytes"] > 1 << 20)
            except DownloadError as exc:
                raise HubError(f"the download of {url} failed ({exc}): nothing was saved") \
                    from None
            data = target.read_bytes()
            if len(data) != rec["bytes"]:
                raise HubError(f"{url} gave {len(data)} bytes, the published index records "
                               f"{rec['bytes']} ({'truncated' if len(data) < rec['bytes'] else 'longer'}"
                               "): refused, nothing was saved")
            if _sha256(data) != rec["sha256"]:
                raise HubError(f"{url} does not match the published index (sha256 "
                               f"{_sha256(data)[:12]}..., the index records "
                               f"{rec['sha256'][:12]}...): it is not the file that was published;"
                               " refused, nothing was saved")
            out[fname] = data
    return out


def fetch(config: TrainConfig, folders: list[Path], *, progress: bool = True,
          wait_seconds: float = WAIT_SECONDS) -> Path:
    """Download ``config``'s model into the first of the cache ``folders`` (its candidate
    folders, :func:`attnxai.model.store.cache.candidates`) that the published index holds; returns that
    folder. Raises :class:`HubError` saying why when there is none or it is refused (module
    docstring). A folder that appears while waiting for its lock (another process downloaded or
    trained it) is returned as it is; that wait lasts ``wait_seconds`` at most (then
    :class:`~attnxai.model.store.checkpoint.CheckpointError`, naming the lock)."""
    url, where = index_url()
    if url is None:
        raise HubError(f"downloading is off: {where}")
    index = read_index(url)
    real_url, url = url, redact(url)
    published = sorted(index["models"])
    folder = next((f for f in folders if f.name in index["models"]), None)
    if folder is None:
        raise HubError(f"the index {url} publishes {', '.join(published) or 'no model'}, not "
                       f"{' or '.join(f.name for f in folders)}: the published models were trained "
                       "by other code, with another recipe or on other data, so none is "
                       "downloaded for this one")
    name = folder.name
    entry = _checked_entry(index["models"][name], name, config, url)
    real_base = real_url.rsplit("/", 1)[0] + f"/{name}/"
    base = redact(real_base)
    say = (lambda msg: print(f"attnxai: {msg}", file=sys.stderr, flush=True)) if progress \
        else (lambda msg: None)
    folder.parent.mkdir(parents=True, exist_ok=True)
    lock = writer_lock(folder)
    try:
        lock.acquire(timeout=0)
    except Timeout:
        say(f"another process is downloading or training {name}; waiting for it (at most "
            f"{wait_seconds:.0f} s; lock {lock.lock_file})")
        try:
            lock.acquire(timeout=wait_seconds)
        except Timeout:
            raise CheckpointError(
                f"another process has been downloading or training {name} for more than "
                f"{wait_seconds:.0f} s (it holds {lock.lock_file}): let it finish and run this "
                "again, or stop it") from None
    try:
        if folder.is_dir():
            return folder
        size = sum(rec["bytes"] for rec in entry["files"].values())
        say(f"downloading the book's {config.profile!r} model {name} ({size / 1e6:.0f} MB) from "
            f"{base} ({where})")
        files = _download(entry, real_base, folder.parent, name, progress)
        try:
            record = loads_json(files["config.json"], f"{base}config.json")
        except ValueError:
            raise HubError(f"{base}config.json is not JSON: refused, nothing was saved") from None
        problems = _identity_problems(record if isinstance(record, dict) else {}, name, config)
        if problems:
            raise HubError(f"{base}config.json describes another model than the index says "
                           f"({'; '.join(problems)}): refused, nothing was saved")
        origin = {"url": base, "index": url, "downloaded": _now(),
                  "by": f"attnxai {package_version()}",
                  "verified": "every file's size and sha256 against the published index, then "
                              "against the checkpoint's own manifest"}
        try:
            save_files(files, folder, where=base, origin=origin)
        except CheckpointError as exc:
            why = "; ".join(getattr(exc, "problems", None) or [str(exc)])
            raise HubError(f"the checkpoint downloaded from {base} is not consistent with its own "
                           f"manifest: {why}. Refused, nothing was saved") from None
        say(f"verified (every file against the published index and the checkpoint's manifest);"
            f" cached at {folder}")
    finally:
        lock.release()
    return folder


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


# ---------------------------------------------------------------------- publishing
def _published(path: Path) -> tuple[str, dict[str, Any], dict[str, bytes]]:
    """The index entry (name, record) that publishes the checkpoint folder ``path``, and its
    files' bytes, verified first (:func:`attnxai.model.store.checkpoint.checkpoint_files`). A folder whose
    name is not the key of the model it holds is refused: readers would never find it."""
    files = checkpoint_files(path)
    conf = loads_json(files["config.json"], f"{path}/config.json")
    try:
        config = TrainConfig(**conf["train"])
        name = folder_name(config, conf["data_sha256"])
    except (KeyError, TypeError) as exc:
        raise HubError(f"{path} records no training configuration and data checksum "
                       f"({_describe(exc)}): it cannot be published") from None
    problems = _identity_problems(conf, path.name, config)
    if problems:
        raise HubError(f"{path} holds the model {name}, not the one its name says "
                       f"({'; '.join(problems)}): it cannot be published under that name")
    metrics = loads_json(files["metrics.json"], f"{path}/metrics.json")
    record = {"profile": config.profile, "key": name.rsplit("-", 1)[1], "train": conf["train"],
              "data_sha256": conf["data_sha256"], "format": conf["format"],
              "arch": conf.get("arch"), "test_accuracy": metrics.get("test_accuracy"),
              "files": {n: {"sha256": _sha256(files[n]), "bytes": len(files[n])} for n in FILES}}
    return name, record, files


def compare_published(path: str | os.PathLike) -> tuple[bool, str]:
    """Whether the cached checkpoint folder ``path`` is, byte for byte, the model the book
    publishes under its name (every file's sha256 equal to the published index's), and a
    sentence saying so or why not. Reads the index (the network); :class:`HubError` when there
    is none to read."""
    path = Path(path)
    url, where = index_url()
    if url is None:
        raise HubError(f"no published index to compare with: {where}")
    name, record, _ = _published(path)
    entry = read_index(url)["models"].get(name)
    url = redact(url)
    if not isinstance(entry, dict) or not isinstance(entry.get("files"), dict):
        return False, f"{url} publishes no model {name}"
    differ = [n for n in FILES if (entry["files"].get(n) or {}).get("sha256")
              != record["files"][n]["sha256"]]
    if differ:
        return False, (f"{name} differs from the model published at {url} in "
                       f"{', '.join(differ)}")
    return True, f"{name} is the model published at {url} (the sha256 of all {len(FILES)} files)"


def _check_publishable(out: Path, names: list[str]) -> None:
    """Refuse to publish into ``out`` where it would replace what attnxai did not write: an
    ``index.json`` that is not a published index, a ``<profile>-<key>/`` folder that is not a
    checkpoint (the rule :func:`attnxai.model.store.checkpoint.save` follows)."""
    from ...store.files import read_json

    index = out / INDEX
    if index.exists() or index.is_symlink():
        try:
            doc = read_json(index)
            ours = isinstance(doc, dict) and doc.get("index_version") == INDEX_VERSION \
                and isinstance(doc.get("models"), dict)
        except (OSError, ValueError):
            ours = False
        if not ours:
            raise HubError(f"{index} exists and is not an index of published models that "
                           "attnxai wrote: publishing replaces it, so it refuses to (nothing was "
                           "changed); choose another --out, or move that file away")
    for name in names:
        try:
            check_replaceable(out / name)
        except CheckpointError as exc:
            raise HubError(f"cannot publish {name} into {out}: {exc}") from None


def publish(folders: list[Path], out: str | os.PathLike) -> Path:
    """Copy the checkpoint folders (verified) to ``out/<profile>-<key>/`` and write
    ``out/index.json`` listing them (module docstring); returns the index's path."""
    out = Path(out).expanduser()
    published = [_published(Path(folder)) for folder in folders]
    _check_publishable(out, [name for name, _, _ in published])     # before anything is written
    out.mkdir(parents=True, exist_ok=True)
    models = {}
    for name, record, files in published:

        def fill(tmp: Path, files=files) -> None:
            for fname in FILES:
                write_durably(tmp / fname, files[fname])

        replace_folder(out / name, fill)
        models[name] = record
    index = {"index_version": INDEX_VERSION, "published": _now(),
             "attnxai": package_version(), "commit": source_state()["commit"], "models": models}
    return atomic_write(out / INDEX, json.dumps(index, indent=2, sort_keys=True) + "\n")
