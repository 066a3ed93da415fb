"""The commands about models: ``train``, ``info``, ``publish-models``, ``adopt``."""

from __future__ import annotations

import argparse
import json
import sys

from ..chapters import paper
from .flags import _progress_flag, training_profile

def _train_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--profile", default="paper",
                   help="paper (the authors' settings), quick, multilayer (our 6 x 6 "
                        "reconstruction; resumes at its last finished epoch if killed), "
                        "multilayer-quick or paper-skip")
    p.add_argument("--archive", default=None,
                   help="IMDb .tar.gz on disk (else $ATTNXAI_IMDB_ARCHIVE, else download)")
    p.add_argument("--device", default="cpu",
                   help="where to train: cpu (default), cuda, cuda:N or mps (results equal the "
                        "CPU's to float rounding)")
    p.add_argument("--no-download", action="store_true",
                   help="train here even when the book's published model of the same cache key "
                        "could be downloaded")
    _authors_flag(p)
    _progress_flag(p)


def _authors_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument("--authors-optimizer", action="store_true",
                   help="the profile trained the authors' way, with dense AdamW instead of lazy "
                        "AdamW (paper, quick, paper-skip; another cache key)")


def _profile_config(args: argparse.Namespace):
    """The profile name, or its configuration with the authors' optimiser."""
    from ..model.profiles import authors_recipe

    config = training_profile(args)
    return authors_recipe(config) if args.authors_optimizer else config


def _train_run(args: argparse.Namespace) -> int:
    from ..model.trained import pretrained

    pre = pretrained(_profile_config(args), archive=args.archive, device=args.device,
                     download=not args.no_download, progress=not args.no_progress)
    m = pre.metrics
    ref = paper.reported("multilayer_accuracy" if pre.model.n_layers > 1 else
                         "single_layer_accuracy")
    print(f"checkpoint: {pre.path}")
    print(f"test accuracy {m['test_accuracy']:.4f} on {m['n_test']} reviews "
          f"(paper: {ref}); validation "
          f"{m['valid_accuracy']:.4f}; trained in {m['train_seconds']:.0f} s "
          f"({m['train_reviews_per_second']:.0f} reviews/s)")
    return 0


def _info_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--profile", default="paper", help="paper or quick (default paper)")
    p.add_argument("--archive", default=None,
                   help="IMDb .tar.gz the model was trained on (default: $ATTNXAI_IMDB_ARCHIVE, "
                        "else any known IMDb archive; nothing is downloaded)")
    p.add_argument("--path", default=None,
                   help="a checkpoint folder to verify and describe instead of a cached profile")
    p.add_argument("--published", action="store_true",
                   help="also compare it, file by file (sha256), with the model the book "
                        "publishes under the same key (reads the published index)")
    _authors_flag(p)


def _info_run(args: argparse.Namespace) -> int:
    """Offline: finds the cached model (or loads --path), verifies it, prints its key, the
    sha256 of its files, where it came from and its metrics; ``--published`` compares it with the
    book's published model (online)."""
    from ..model.store.checkpoint import describe, load
    from ..model.trained import pretrained

    if args.path is not None:
        pre = load(args.path)
    else:
        pre = pretrained(_profile_config(args), archive=args.archive, train_if_missing=False,
                         download=False, progress=False)
    out = describe(pre)
    same = True
    if args.published:
        from ..model.store.hub import compare_published

        same, out["published"] = compare_published(pre.path)
    print(json.dumps(out, indent=2))
    return 0 if same else 1


def _publish_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", required=True,
                   help="the folder to write (e.g. _build/html/models, served beside the site): "
                        "one folder per model and index.json")
    p.add_argument("--profiles", default="paper,multilayer",
                   help="comma-separated profiles whose cached models to publish (default "
                        "paper,multilayer); one not in the cache is skipped, saying so")
    p.add_argument("--require", default="paper",
                   help="comma-separated profiles that must be in the cache (default paper; "
                        "'' for none)")
    p.add_argument("--archive", default=None,
                   help="IMDb .tar.gz the models were trained on (default: any known archive)")


def _publish_run(args: argparse.Namespace) -> int:
    """Copies the cached models (verified) and writes the index the package downloads from."""
    from ..model.store.cache import candidates
    from ..model.store.hub import publish
    names = [s.strip() for s in args.profiles.split(",") if s.strip()]
    required = {s.strip() for s in args.require.split(",") if s.strip()}
    missing = required - set(names)
    if missing:
        raise ValueError(f"--require names {sorted(missing)}, which --profiles does not list")
    folders = []
    for name in names:
        found = [f for f, _ in candidates(training_profile(args, name), args.archive)
                 if f.is_dir()]
        if not found and name in required:
            raise FileNotFoundError(f"no cached {name!r} model to publish: run `python -m "
                                    f"attnxai train --profile {name}` first")
        if not found:
            print(f"attnxai publish-models: {name}: not in the cache, skipped", file=sys.stderr)
        folders += found
    if not folders:
        raise FileNotFoundError(f"none of {names} is in the cache: nothing to publish")
    index = publish(folders, args.out)
    for folder in folders:
        print(f"{args.out}/{folder.name}")
    print(index)
    return 0


def _adopt_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("path", help="a checkpoint folder without manifest.json, or a results folder "
                                "whose parts carry no checksum")


def _adopt_run(args: argparse.Namespace) -> int:
    """Record, for files that have no record, their checksums as they are now: the one command
    that makes unverifiable files verifiable, by trusting them (it says what it trusted)."""
    from pathlib import Path

    from ..model.store import checkpoint
    from ..store import results as store

    path = Path(args.path).expanduser()
    if (path / store.META).is_file():
        adopted = store.adopt(path)
        print(f"{path}: {len(adopted)} part(s) given the checksum of their rows as they are now "
              f"and the settings of {store.META} (trusted: that nobody changed them since they "
              "were written and that those settings made them; every other part was verified); "
              "from now on a change to any part or to its settings is detected")
        return 0
    manifest = checkpoint.adopt(path)
    print(f"{manifest}: written. Checked first: the file set, that every file reads, the "
          "vocabulary size against the embedding and config.json, the weights against the model, "
          "finite weights. Trusted: that the files are as they were saved (a change made before "
          "now cannot be detected); from now on every load verifies them against this manifest")
    return 0


