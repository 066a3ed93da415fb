"""The flags every command shares, and the flags generated from a settings dataclass's fields
(:func:`add_settings_flags`: ``LimeSettings.kernel_width`` is ``--kernel-width``, with the field's
type, default and help), so that a default is written once, in the dataclass."""

from __future__ import annotations

import argparse
import dataclasses
import sys
import typing
from typing import Any

class _Deprecated(argparse.Action):
    """An old spelling of a flag: stores into the new one's destination and says so."""

    def __init__(self, option_strings, dest, new: str, **kwargs):
        self.new = new
        super().__init__(option_strings, dest, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        print(f"{parser.prog}: note: {option_string} is deprecated, use {self.new}",
              file=sys.stderr)
        setattr(namespace, self.dest, values)


def _deprecated(p: argparse.ArgumentParser, old: str, new: str) -> None:
    """Accept ``old`` as a deprecated spelling of the flag ``new`` (hidden from --help)."""
    p.add_argument(old, dest=new.lstrip("-").replace("-", "_"), action=_Deprecated, new=new,
                   help=argparse.SUPPRESS)


def training_profile(args: argparse.Namespace, name: str | None = None) -> Any:
    """The training configuration (:class:`~attnxai.model.profiles.TrainConfig`) of ``--profile``
    (or of ``name``) at the seed the command line's session names (``args.seed_of_session``,
    :func:`attnxai.cli.main` reads ``ATTNXAI_SEED`` once; None: the profile's own): what a
    command hands the package, which reads no setting of its own."""
    from ..model.profiles import get_config

    return get_config(args.profile if name is None else name,
                      seed=getattr(args, "seed_of_session", None))


def _progress_flag(p: argparse.ArgumentParser) -> None:
    """``--no-progress``, taken by every command that shows progress (a training, a study, an
    explanation). In a log (output that is not a terminal) a bar writes a line every few
    seconds at most (:mod:`attnxai.progress`)."""
    p.add_argument("--no-progress", action="store_true", help="no progress bar")


def _set_flag(p: argparse.ArgumentParser) -> None:
    """``--set METHOD.FIELD=VALUE``: any setting of any method
    (:func:`attnxai.registry.parse_settings`)."""
    p.add_argument("--set", action="append", default=[], metavar="METHOD.FIELD=VALUE",
                   help="a setting of one method, e.g. SmoothGrad.n_samples=20 or "
                        "LIME.bow=false (repeatable; the fields of attnxai.registry's settings "
                        "classes)")




def add_settings_flags(p: argparse.ArgumentParser, cls: type, names: tuple[str, ...]) -> None:
    """One flag per field ``names`` of the settings dataclass ``cls``: ``--num-samples`` for
    ``num_samples``, typed as the field (``int``, ``float``, ``str``), its default the field's,
    its help the field's ``metadata["help"]``. The value is checked when the settings object is
    built (:func:`settings_from_args`), once."""
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    for name in names:
        f = fields[name]
        kind = hints[name]
        if kind not in (int, float, str):
            raise TypeError(f"{cls.__name__}.{name}: no flag for a field of type {kind}")
        p.add_argument("--" + name.replace("_", "-"), type=kind, default=f.default,
                       help=f"{f.metadata.get('help', name)} (default {f.default:g})"
                       if kind is not str else f"{f.metadata.get('help', name)}")


def settings_from_args(args: argparse.Namespace, cls: type, names: tuple[str, ...],
                       **fixed: Any) -> Any:
    """The settings object of the flags :func:`add_settings_flags` added (and ``fixed`` fields):
    checked here, at the edge, by the class's ``__post_init__``."""
    return cls(**{n: getattr(args, n) for n in names}, **fixed)
