"""Training profiles: the configurations that determine a trained model (and so its cache key).

``paper`` is the authors' setting (their code: AdamW, lr 1e-4, batch 16, 10 epochs, best
validation checkpoint, seed 42, 20,000 / 5,000 / 25,000 reviews) trained with lazy AdamW
(:data:`FAST`: the embedding's rows are updated only by the batches that use them;
:func:`authors_recipe` is the authors' dense AdamW); ``quick`` trains in under a minute on a
laptop core and is what the tests and the test build of the book use.
``multilayer`` is our reconstruction of the paper's 6-layer x 6-head model
(:class:`~attnxai.model.multilayer.MultiLayerClassifier`, chapter 8) with its recipe (warm-up then linear
decay, gradient clipping, dropout, length-bucketed batches); ``multilayer-quick`` the same recipe
on 2 layers and the quick profile's data (about a minute on one core); ``paper-skip`` the paper
profile with the single-layer skip connection (chapter 8). The recipe lives in
``TrainConfig.extra`` (:func:`recipe`): an empty ``extra`` is the authors' recipe, whose cache
keys are those of the models trained before the recipe changed.

This module holds data only (no torch): the training loop is :mod:`attnxai.model.train`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any

from .. import validate
from ..settings import Session

__all__ = ["EXTRA_DEFAULTS", "FAST", "PROFILES", "TrainConfig", "authors_recipe", "get_config",
           "recipe"]


@dataclass(frozen=True)
class TrainConfig:
    """Everything that determines the trained weights (and so the cache key).

    ``extra`` holds what the single-layer profiles of the paper never set (so that their cache
    keys stay what they were): the model class and its options, and the training recipe beyond
    plain AdamW (:data:`EXTRA_DEFAULTS`, :func:`recipe`). An empty ``extra`` is the paper's
    single-layer model trained as the authors train it."""

    profile: str
    n_train: int = 20_000
    n_valid: int = 5_000
    n_test: int = 25_000
    epochs: int = 10
    batch_size: int = 16
    lr: float = 1e-4
    weight_decay: float = 0.01  # AdamW's default
    seed: int = 42
    min_freq: int = 1
    d_embed: int = 128
    d_attn: int = 64
    d_value: int = 64
    n_heads: int = 6
    max_len: int = 256
    padding: str = "mask"
    extra: dict[str, Any] = field(default_factory=dict)

    def model_kwargs(self) -> dict[str, Any]:
        kw = dict(d_embed=self.d_embed, d_attn=self.d_attn, d_value=self.d_value,
                  n_heads=self.n_heads, max_len=self.max_len, padding=self.padding)
        r = recipe(self)
        if r["arch"] == "multilayer":
            kw.update(n_layers=r["n_layers"], residual=r["residual"], norm=r["norm"],
                      d_ff=r["d_ff"], dropout=r["dropout"])
        elif r["skip"]:
            kw["skip"] = True
        return kw

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


#: The keys ``TrainConfig.extra`` may hold and their values when absent (the paper's recipe):
#: ``arch`` "single" (:class:`~attnxai.model.single_layer.AttentionClassifier`) or "multilayer"
#: (:class:`~attnxai.model.multilayer.MultiLayerClassifier`, with ``n_layers``, ``residual``, ``norm``,
#: ``d_ff``, ``dropout``); ``skip`` the single-layer skip connection; ``warmup`` the fraction of
#: the steps of linear warm-up; ``schedule`` "constant" or "linear" (decay to 0 at the last step
#: of ``epochs``); ``clip`` the gradient-norm clip (None: none); ``batching`` "random" (a
#: permutation cut into batches) or "bucketed" (length buckets, :func:`bucketed_batches`);
#: ``stop_after`` epochs actually trained of the ``epochs``-long schedule (None: all; screens);
#: ``optimizer`` "adamw" (torch's AdamW over every weight, the authors') or "lazy-adamw"
#: (:class:`~attnxai.model.optim.LazyAdamW`: the same AdamW for every weight but the word
#: embedding, whose rows are updated only when a batch uses them; the batch's logits are
#: computed by the model's ``forward_rows`` from those rows, on one thread).
EXTRA_DEFAULTS: dict[str, Any] = dict(arch="single", n_layers=1, residual=False, norm="none",
                                      d_ff=0, dropout=0.0, skip=False, warmup=0.0,
                                      schedule="constant", clip=None, batching="random",
                                      stop_after=None, optimizer="adamw")


def recipe(config: TrainConfig) -> dict[str, Any]:
    """``config.extra`` completed with :data:`EXTRA_DEFAULTS` and checked."""
    unknown = sorted(set(config.extra) - set(EXTRA_DEFAULTS))
    if unknown:
        raise ValueError(f"unknown TrainConfig.extra keys {unknown}; known: "
                         f"{sorted(EXTRA_DEFAULTS)}")
    r = {**EXTRA_DEFAULTS, **config.extra}
    validate.choice(r["arch"], "arch", ("single", "multilayer"))
    validate.choice(r["schedule"], "schedule", ("constant", "linear"))
    validate.choice(r["batching"], "batching", ("random", "bucketed"))
    validate.choice(r["optimizer"], "optimizer", ("adamw", "lazy-adamw"))
    if r["skip"] and r["arch"] != "single":
        raise ValueError("skip is the single-layer ablation; the multi-layer model has residual")
    if not 0.0 <= float(r["warmup"]) < 1.0:
        raise ValueError(f"warmup is a fraction of the steps in [0, 1), got {r['warmup']!r}")
    if r["clip"] is not None and not float(r["clip"]) > 0:
        raise ValueError(f"clip must be None or > 0, got {r['clip']!r}")
    if r["stop_after"] is not None:
        stop = validate.positive_int(r["stop_after"], "stop_after")
        if stop > config.epochs:
            raise ValueError(f"stop_after={stop} is more than the {config.epochs} epochs")
    return r


#: The training recipe of the single-layer profiles (``paper``, ``quick``, ``paper-skip``, and so
#: of every seed of them): the authors' loop (AdamW with their lr, batch, epochs and weight decay,
#: random batches, best validation checkpoint) with lazy AdamW
#: (:class:`~attnxai.model.optim.LazyAdamW`): every weight but the word embedding gets AdamW's
#: update, and the embedding's rows get AdamW's update, weight decay included, at the steps whose
#: batch uses them and at no other (dense AdamW also moves an unused row, by its momentum and its
#: decay). The logits of a training batch come from the model's ``forward_rows`` (the same
#: function as its forward), on one thread. Measured: a step 7.5 times faster than the authors'
#: recipe in one run on a quiet machine (8.4 ms against 62 ms, ``benchmarks/bench_train.py``),
#: the paper model's 10 epochs in 132 s at a load average of 2 to 3; test accuracy 79.63, 80.66
#: and 80.53 % on seeds 42 to 44, against 79.68, 80.06 and 80.58 % with the authors' recipe
#: (``book/data/skip_ablation.csv``, now and at commit 2476160).
#: Without it (:func:`authors_recipe`, ``python -m attnxai train --authors-optimizer``) a profile
#: trains the authors' way (dense AdamW over all 11.6 M weights), under the cache key of the
#: models trained before the change.
FAST = {"optimizer": "lazy-adamw"}

_MULTILAYER = dict(arch="multilayer", n_layers=6, residual=True, norm="pre", d_ff=0, dropout=0.1,
                   warmup=0.05, schedule="linear", clip=1.0, batching="bucketed")

PROFILES: dict[str, TrainConfig] = {
    # The authors' settings: 20k/5k/25k, 10 epochs, batch 16, AdamW lr 1e-4, seed 42; lazy AdamW.
    "paper": TrainConfig(profile="paper", extra=dict(FAST)),
    # A few thousand reviews, a larger step, two epochs: under a minute on 2 cores.
    "quick": TrainConfig(profile="quick", n_train=4_000, n_valid=1_000, n_test=5_000, epochs=2,
                         batch_size=32, lr=2e-3, min_freq=2, extra=dict(FAST)),
    # Our reconstruction of the paper's 6-layer x 6-head model (chapter 8): pre-LN residual
    # blocks without feed-forward, 32-wide heads, the paper's layer as the read-out; AdamW lr 1e-3,
    # 5 % warm-up then linear decay, clip 1.0, batch 32 in length buckets, 4 epochs.
    "multilayer": TrainConfig(profile="multilayer", epochs=4, batch_size=32, lr=1e-3, d_attn=32,
                              d_value=32, extra=dict(_MULTILAYER)),
    # The same recipe on 2 layers x 4 heads and the quick profile's data: about a minute on one
    # core (the book's live version of chapter 8 and the tests).
    "multilayer-quick": TrainConfig(profile="multilayer-quick", n_train=4_000, n_valid=1_000,
                                    n_test=5_000, epochs=2, batch_size=32, lr=2e-3, min_freq=2,
                                    d_attn=16, d_value=16, n_heads=4,
                                    extra={**_MULTILAYER, "n_layers": 2}),
    # The single-layer skip-connection ablation (chapter 8): the paper profile plus skip=True.
    "paper-skip": TrainConfig(profile="paper-skip", extra={**FAST, "skip": True}),
}


def authors_recipe(profile: str | TrainConfig) -> TrainConfig:
    """``profile``'s configuration (:func:`get_config`) trained the authors' way: with dense AdamW
    instead of :data:`FAST`'s lazy AdamW, everything else the same; the cache key of the models
    trained before the recipe changed (``paper``: ``paper-b287d8a53a883860`` on the labelled
    archive). ``ValueError`` for a profile that does not train with lazy AdamW (the multi-layer
    profiles have their own recipe)."""
    config = get_config(profile)
    if recipe(config)["optimizer"] != "lazy-adamw":
        raise ValueError(f"profile {config.profile!r} does not train with lazy AdamW, so it has no "
                         "authors' recipe to go back to (the single-layer profiles have: "
                         f"{sorted(n for n, c in PROFILES.items() if c.extra.get('optimizer'))})")
    return replace(config, extra={k: v for k, v in config.extra.items() if k != "optimizer"})


def get_config(profile: str | TrainConfig | Session, **overrides: Any) -> TrainConfig:
    """The configuration of ``profile`` (a name of :data:`PROFILES`, a TrainConfig, or a
    :class:`~attnxai.settings.Session`: its book profile at its seed), with ``overrides``
    replaced; ``ValueError`` for an unknown name. ``seed=None`` keeps the profile's own seed, so
    that ``get_config(name, seed=session.seed)`` is the profile ``name`` at the session's seed
    (its own when the session names none): how the book is built on a model of other weights.
    Nothing here reads the environment or a session held elsewhere."""
    if isinstance(profile, Session):
        profile, overrides = profile.profile, {"seed": profile.seed, **overrides}
    if overrides.get("seed", 0) is None:
        overrides = {k: v for k, v in overrides.items() if k != "seed"}
    if isinstance(profile, TrainConfig):
        return replace(profile, **overrides)
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}; choose one of {sorted(PROFILES)}")
    return replace(PROFILES[profile], **overrides)
