"""Verifying a checkpoint's files and building its model: every file against the manifest, then
the pieces against each other (the vocabulary's size against the embedding's rows and the config,
the weights' names and shapes against the model, finite weights). Any mismatch raises
:class:`~attnxai.model.store.manifest.CheckpointError` naming the damaged file and saying how to
rebuild the checkpoint; the bytes verified are the bytes loaded.
"""

from __future__ import annotations

import shlex
from pathlib import Path

import torch
from safetensors.torch import load as load_safetensors

from ...store import files as _files
from ...store.files import sha256 as _sha256
from ...text import Vocab
from ..interface import ClassifierBase
from ..textmodel import Pretrained
from .cache import rebuild_hint
from .manifest import (CONTENT_FILES, MANIFEST, MODEL_CLASSES, CheckpointError, config_sha256,
                       damaged)

__all__ = ["MAX_DIMENSION", "build_model", "unverified", "verify_files"]


def verify_files(path: Path, files: dict[str, bytes]) -> tuple[dict, Vocab, dict, dict]:
    """Verify the files (manifest, then consistency); returns config, vocab, metrics, state."""
    profile = None
    try:
        profile = _files.loads_json(files["config.json"], "config.json")["train"]["profile"]
    except Exception:
        pass
    missing = [f for f in CONTENT_FILES if f not in files]
    if len(missing) == len(CONTENT_FILES) and MANIFEST not in files:
        raise FileNotFoundError(f"{path} is not an attnxai checkpoint folder: it holds none of "
                                f"{', '.join((*CONTENT_FILES, MANIFEST))}. Give the folder a checkpoint "
                                "was saved in (attnxai.model.store.checkpoint.save, `python -m attnxai train`)")
    if missing:
        raise FileNotFoundError(f"{path} is not a complete attnxai checkpoint: missing {missing}. "
                                f"{rebuild_hint(path, profile)}")
    manifest = None
    if MANIFEST in files:
        try:
            manifest = _files.loads_json(files[MANIFEST], MANIFEST)
            recs = {n: (str(manifest["files"][n]["sha256"]), int(manifest["files"][n]["bytes"]))
                    for n in CONTENT_FILES}
        except Exception as exc:
            raise damaged(path, [f"{MANIFEST} cannot be read ({type(exc).__name__}: {exc})"],
                           profile) from None
        problems = []
        for name in CONTENT_FILES:
            sha, size = recs[name]
            data = files[name]
            if len(data) > size:
                problems.append(f"{name} has more than the {size} bytes the manifest recorded "
                                "(extended)")
            elif len(data) != size:
                problems.append(f"{name} has {len(data)} bytes, the manifest recorded {size} "
                                "(truncated)")
            elif _sha256(data) != sha:
                problems.append(f"{name} does not match its manifest (sha256 "
                                f"{_sha256(data)[:12]}..., recorded {sha[:12]}...): its content "
                                "changed since it was saved")
        if problems:
            raise damaged(path, problems, profile)

    def parse(name: str, fn):
        try:
            return fn(files[name])
        except Exception as exc:
            raise damaged(path, [f"{name} cannot be read ({type(exc).__name__}: "
                                  f"{str(exc)[:200]})"], profile) from None

    config = parse("config.json", lambda b: _files.loads_json(b, "config.json"))
    if not isinstance(config, dict) or not isinstance(config.get("model"), dict):
        raise damaged(path, ["config.json has no 'model' section"], profile)
    vocab = parse("vocab.json", Vocab.from_json)
    metrics = parse("metrics.json", lambda b: _files.loads_json(b, "metrics.json"))
    state = parse("model.safetensors", load_safetensors)
    W_e = state.get("W_e")
    n_emb = int(W_e.shape[0]) if W_e is not None and W_e.dim() == 2 else None
    n_cfg = config["model"].get("vocab_size")
    if not (len(vocab) == n_emb == n_cfg):
        votes = {"vocab.json": len(vocab), "model.safetensors": n_emb, "config.json": n_cfg}
        odd = [f for f, v in votes.items() if list(votes.values()).count(v) == 1]
        raise damaged(path, [f"the vocabulary sizes disagree: vocab.json has {len(vocab)} words "
                              f"(with the 3 specials), the embedding W_e in model.safetensors has "
                              f"{n_emb} rows, config.json says {n_cfg}"
                              + (f" ({', '.join(odd)} is the odd one out)" if len(odd) == 1
                                 else "")], profile)
    if manifest is not None:
        if manifest.get("vocab_size") != len(vocab) or \
                manifest.get("config_sha256") != config_sha256(config):
            raise damaged(path, [f"{MANIFEST} disagrees with the files it lists (vocabulary size "
                                  "or config hash): it was edited"], profile)
    # A NaN or inf makes the sum non-finite (fast); only then look element by element.
    bad = [k for k, v in state.items() if v.is_floating_point() and v.numel()
           and not bool(torch.isfinite(v.sum())) and not bool(torch.isfinite(v).all())]
    if bad:
        raise damaged(path, [f"model.safetensors holds NaN or infinite weights in {bad}"], profile)
    return config, vocab, metrics, state


#: The largest size config.json may give any dimension of a model (a vocabulary of 16 million
#: words; the book's models have at most 50 000): larger is damage, refused before any tensor.
MAX_DIMENSION = 1 << 24


def _model(arch: str, section: dict) -> ClassifierBase:
    """The untrained model of a ``"model"`` section of config.json (its class's
    :meth:`~attnxai.model.config.ModelConfig.from_dict`)."""
    cls = MODEL_CLASSES[arch]
    return cls(cls.config_class.from_dict(section))


def _check_shapes(path: Path, arch: str, args: dict, state: dict, profile: str | None) -> None:
    """Refuse, before the model allocates anything, a config whose sizes are not sane (each a
    whole number within :data:`MAX_DIMENSION`) or whose weights' shapes (built on torch's
    ``meta`` device: shapes, no memory) are not those of ``state``, the weights in the file."""
    bad = [f"{k}={v!r}" for k, v in args.items() if isinstance(v, int)
           and not isinstance(v, bool) and not 0 <= v <= MAX_DIMENSION]
    if bad:
        raise damaged(path, [f"config.json's model section gives sizes no model has "
                              f"({', '.join(bad)}; each must be a whole number from 0 to "
                              f"{MAX_DIMENSION})"], profile)
    try:
        with torch.device("meta"):
            wanted = {k: tuple(v.shape) for k, v in _model(arch, args).state_dict().items()}
    except (TypeError, ValueError, RuntimeError) as exc:
        raise damaged(path, [f"config.json's model section is not valid for {arch} "
                              f"({str(exc)[:200]})"], profile) from None
    have = {k: tuple(v.shape) for k, v in state.items()}
    differ = [f"{k}: {wanted.get(k)} in config.json, {have.get(k)} in model.safetensors"
              for k in sorted(set(wanted) | set(have)) if wanted.get(k) != have.get(k)]
    if differ:
        raise damaged(path, ["model.safetensors does not hold the weights config.json describes "
                              f"({'; '.join(differ[:4])})"], profile)


def build_model(path: Path, config: dict, vocab: Vocab, metrics: dict, state: dict,
           dtype: torch.dtype) -> Pretrained:
    """The model of verified checkpoint pieces (``path``: where they came from, for messages)."""
    arch = config.get("arch", "AttentionClassifier")
    if arch not in MODEL_CLASSES:
        raise ValueError(f"{path} holds a {arch!r} model, unknown to this version of attnxai "
                         f"(known: {sorted(MODEL_CLASSES)})")
    profile = (config.get("train") or {}).get("profile")
    _check_shapes(path, arch, config["model"], state, profile)
    try:
        model = _model(arch, config["model"])
    except (TypeError, ValueError, RuntimeError) as exc:
        raise damaged(path, [f"config.json's model section is not valid for {arch} ({exc})"],
                       profile) from None
    try:
        model.load_state_dict(state)
    except RuntimeError as exc:
        raise damaged(path, ["model.safetensors does not hold the weights config.json describes "
                              f"({str(exc)[:300]})"], profile) from None
    model.to(dtype).eval()
    return Pretrained(model, vocab, config, metrics, path)


def unverified(path: Path, files: dict[str, bytes]) -> CheckpointError:
    """The refusal of a folder without a manifest: how to adopt it, or rebuild it."""
    profile = None
    try:
        profile = _files.loads_json(files["config.json"], "config.json")["train"]["profile"]
    except Exception:  # noqa: BLE001 - only for the hint
        pass
    hint = rebuild_hint(path, profile)
    return CheckpointError(
        f"checkpoint {path} has no {MANIFEST}, so its files cannot be verified (it was saved by an "
        "attnxai older than checkpoint verification, or its manifest was deleted). If you trust "
        f"its files as they are, adopt it: `python -m attnxai adopt {shlex.quote(str(path))}` "
        "(it checks everything that needs no manifest, then records the files' sha256). "
        f"Otherwise, {hint[0].lower()}{hint[1:]}")
