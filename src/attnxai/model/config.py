"""The architecture of a classifier, carried whole: one frozen dataclass per model class, built
and checked once, the way Hugging Face's ``PretrainedConfig`` and our own
:class:`~attnxai.model.profiles.TrainConfig` carry theirs.

``AttentionClassifier(AttentionConfig(vocab_size, d_embed=8, n_heads=2))`` (the paper's
single-layer model, :mod:`attnxai.model.single_layer`) and
``MultiLayerClassifier(MultiLayerConfig(vocab_size, n_layers=3))``
(:mod:`attnxai.model.multilayer`); ``model.config`` is the object it was built from, and
``dataclasses.replace(model.config, padding="unk")`` another model's. Every field is checked in
``__post_init__``, by name, and nothing downstream checks it again.

On disk a checkpoint's ``config.json`` holds :meth:`ModelConfig.to_dict` under ``"model"``
(the format of every checkpoint saved before these classes: the single-layer model records no
``init_range`` and ``skip`` only when on) and :meth:`ModelConfig.from_dict` reads it back.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import KW_ONLY, asdict, dataclass
from typing import Any

__all__ = ["AttentionConfig", "ModelConfig", "MultiLayerConfig", "NORMS", "PADDING_MODES"]

PADDING_MODES = ("mask", "unk")
NORMS = ("none", "pre", "post")


def _positive(config: Any, *names: str) -> None:
    for name in names:
        v = getattr(config, name)
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"{name} must be a positive int, got {v!r}")


def _flag(config: Any, name: str) -> None:
    v = getattr(config, name)
    if not isinstance(v, bool):
        raise TypeError(f"{name} must be True or False, got {type(v).__name__}")


@dataclass(frozen=True)
class ModelConfig:
    """What every classifier has (:class:`~attnxai.model.interface.ClassifierBase`): the
    vocabulary and its special ids, the embedding width, the longest document (``[CLS]``
    included), the classes, the heads (of the last layer), the padding mode (``"mask"``: padded
    positions get no attention; ``"unk"``: the authors' fill with ``UNK`` up to ``max_len``)
    and ``init_range``, the half-width of the uniform law of every weight but the word embedding
    (drawn N(0, 1), as the authors')."""

    vocab_size: int
    _: KW_ONLY
    d_embed: int = 128
    n_heads: int = 6
    max_len: int = 256
    n_classes: int = 2
    padding: str = "mask"
    pad_id: int = 0
    cls_id: int = 1
    unk_id: int = 2
    init_range: float = 0.1

    def __post_init__(self):
        if self.padding not in PADDING_MODES:
            raise ValueError(f"padding must be one of {PADDING_MODES}, got {self.padding!r}")
        ids = (self.pad_id, self.cls_id, self.unk_id)
        for name, v in zip(("pad_id", "cls_id", "unk_id"), ids):
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise ValueError(f"{name} must be an int >= 0, got {v!r}")
        if len(set(ids)) != 3:
            raise ValueError(f"pad_id, cls_id and unk_id must differ, got {ids}")
        _positive(self, "vocab_size", "d_embed", "max_len", "n_classes", "n_heads")
        if max(ids) >= self.vocab_size:
            raise ValueError(f"vocab_size={self.vocab_size} is too small for the special ids")
        r = self.init_range
        if isinstance(r, bool) or not isinstance(r, (int, float)) or not (
                math.isfinite(r) and r >= 0):
            raise ValueError(f"init_range must be a finite number >= 0, got {r!r}")

    def to_dict(self) -> dict[str, Any]:
        """The ``"model"`` section of a checkpoint's ``config.json`` (module docstring)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, fields: dict[str, Any]) -> ModelConfig:
        """The configuration of a ``"model"`` section (:meth:`to_dict`); ``TypeError`` naming a
        key that is not a field, ``ValueError``/``TypeError`` naming a bad value."""
        if not isinstance(fields, dict):
            raise TypeError(f"a model section is a dict of fields, got {type(fields).__name__}")
        known = [f.name for f in dataclasses.fields(cls)]
        unknown = sorted(set(fields) - set(known))
        if unknown:
            raise TypeError(f"unknown field(s) {unknown} of {cls.__name__}; its fields are "
                            f"{known}")
        return cls(**fields)


@dataclass(frozen=True)
class AttentionConfig(ModelConfig):
    """The paper's single-layer classifier (:class:`~attnxai.model.single_layer.
    AttentionClassifier`): per head a query and key of ``d_attn`` and a value of ``d_value``;
    ``skip`` the skip-connection ablation (off by default)."""

    _: KW_ONLY
    d_attn: int = 64
    d_value: int = 64
    skip: bool = False

    def __post_init__(self):
        super().__post_init__()
        _positive(self, "d_attn", "d_value")
        _flag(self, "skip")

    def to_dict(self) -> dict[str, Any]:
        """As every single-layer checkpoint has it: without ``init_range`` (the weights are
        saved), ``skip`` only when on (so that the config of a model without it is unchanged)."""
        out = super().to_dict()
        del out["init_range"]
        if not self.skip:
            del out["skip"]
        return out


@dataclass(frozen=True)
class MultiLayerConfig(ModelConfig):
    """Our reconstruction of the paper's multi-layer classifier (:class:`~attnxai.model.
    multilayer.MultiLayerClassifier`): ``n_layers`` layers, the last one the paper's; each block
    with ``residual`` connections, LayerNorm ``norm`` (one of :data:`NORMS`), a feed-forward
    block of width ``d_ff`` (0: none) and ``dropout`` in [0, 1) (training only)."""

    _: KW_ONLY
    n_layers: int = 6
    d_attn: int = 32
    d_value: int = 32
    residual: bool = True
    norm: str = "pre"
    d_ff: int = 0
    dropout: float = 0.0

    def __post_init__(self):
        super().__post_init__()
        _positive(self, "n_layers", "d_attn", "d_value")
        if self.norm not in NORMS:
            raise ValueError(f"norm must be one of {NORMS}, got {self.norm!r}")
        _flag(self, "residual")
        d_ff = self.d_ff
        if isinstance(d_ff, bool) or not isinstance(d_ff, int) or d_ff < 0:
            raise ValueError(f"d_ff must be an int >= 0 (0: no feed-forward block), got {d_ff!r}")
        p = self.dropout
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0.0 <= float(p) < 1.0:
            raise ValueError(f"dropout must lie in [0, 1), got {p!r}")
        object.__setattr__(self, "dropout", float(p))
