"""The explainers :func:`attnxai.explain` can run on a text: one table, :data:`METHODS`, one entry
per method, and the :class:`Document` every method reads.

**Adding an explainer** is one entry in :data:`METHODS`: a :class:`Method` with its name, the
level it scores (``"token"``: one score per token; ``"word"``: one per distinct word, see
:mod:`attnxai.words`), its settings (a frozen dataclass whose fields have the defaults, validated
in its ``__post_init__``), a function ``compute(doc, settings) -> scores`` and, for the corpus
studies, its seed rule (``study_seed``: the seed of test review ``i``) and the line a results
folder records about it (``recorded``: compared when the folder resumes). Nothing else is
registered anywhere: :func:`attnxai.explain`, the ``attnxai explain`` and ``attnxai
faithfulness`` commands (``--set METHOD.FIELD=VALUE`` sets any field of any method's settings,
:func:`parse_settings`), the faithfulness study, the book's chapter 7 (which reads the methods a
committed study holds from its file, and computes the others live) and the renderings of
:class:`attnxai.explanation.Explanation` read this table, and the token and word scores of every
method come from the one converter. SmoothGrad was added so: this entry, its settings class and
:func:`attnxai.explainers.smoothgrad`.

**One target, one seed.** Every method explains the same logit (``target``, set once for the
whole explanation: a method's settings cannot carry their own). Methods that draw random numbers
take ``seed`` from their settings, and when it is not given there the explanation's seed
(:data:`DEFAULT_SEED` unless the caller gives another). Settings two methods must share (LIME's
limit is LIME's large-sample limit, so it takes LIME's ``kernel_width`` and ``bow``) are given
once; two different values are refused.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from . import explainers, validate
from .limit_settings import LimitSettings
from .model.textmodel import Pretrained
from .words import Words

__all__ = ["ALL_METHODS", "DEFAULT_SEED", "DELETION_POSITIONS", "Document", "EXTRA_METHODS",
           "GAME_METHODS", "LEVELS", "METHODS", "Method", "PAPER_METHODS", "SHARED", "AttentionSettings", "BanzhafSettings",
           "IGSettings", "LimeSettings", "LimitSettings", "NoSettings", "RandomSettings",
           "ShapleySettings", "SmoothGradSettings", "parse_settings", "study_given", "study_records",
           "study_settings"]

#: The seed of every random method (LIME's ``random_state``, the random baseline) when neither the
#: caller nor the method's settings give one.
DEFAULT_SEED = 0
LEVELS = ("token", "word")


# ---------------------------------------------------------------------- the document
@dataclass
class Document:
    """One text as the model reads it, and what the methods share on it.

    ``text``: in :func:`attnxai.normalize_for_lime` form and cut to the model's length (so that
    lime's words are the model's tokens); ``tokens`` (n,) its tokens; ``ids`` (n + 1,) int64,
    ``[CLS]`` first; ``words``: the word layout (:class:`attnxai.words.Words`); ``target``: the
    explained class; ``logits`` (C,) float64, the model's output on it. ``results`` keeps what a
    method returns besides its scores (``"LIME"``: the :class:`~attnxai.fastlime.LimeResult`).
    """

    pre: Pretrained
    text: str
    tokens: list[str]
    ids: np.ndarray
    words: Words
    target: int
    logits: np.ndarray
    results: dict[str, Any] = field(default_factory=dict)
    _shared: dict[Any, Any] = field(default_factory=dict, repr=False)

    @property
    def ids_tensor(self) -> torch.Tensor:
        """(1, n + 1) ids, as the explainers take them."""
        return torch.as_tensor(self.ids)[None]

    def shared(self, key: Any, compute: Callable[[], Any]) -> Any:
        """``compute()`` once per document and ``key`` (e.g. every gradient summary comes from one
        backward pass)."""
        if key not in self._shared:
            self._shared[key] = compute()
        return self._shared[key]

    def tokens_of(self, scores: torch.Tensor) -> np.ndarray:
        """(n,) float64 from a (1, T) position score ([CLS] dropped)."""
        return scores[0, 1:len(self.ids)].double().numpy()


# ---------------------------------------------------------------------- settings
@dataclass(frozen=True)
class NoSettings:
    """A method without settings."""


@dataclass(frozen=True)
class AttentionSettings:
    """``layer``: the layer whose ``[CLS]`` attention is read (multi-layer models; default the
    first)."""

    layer: int = 0

    def __post_init__(self):
        validate.integer(self.layer, "layer")


@dataclass(frozen=True)
class LimeSettings:
    """lime's settings (:func:`attnxai.fastlime.explain_instance`): ``num_samples``, ``kernel_width``,
    ``bow`` (True: delete words, one coefficient per word; False: replace positions by UNK, one
    per token), ``seed`` (its ``random_state``; None: the explanation's seed) and ``backend``
    (the compiled loops: ``"auto"``, ``"numba"``, ``"numpy"``; the same numbers either way)."""

    num_samples: int = 5000
    kernel_width: float = 25.0
    bow: bool = True
    seed: int | None = None
    backend: str = "auto"

    def __post_init__(self):
        validate.num_samples(self.num_samples)
        validate.kernel_width(self.kernel_width)
        validate.bow(self.bow)
        if self.seed is not None:
            validate.random_state(self.seed)
        validate.choice(self.backend, "backend", ("auto", "numba", "numpy"))


@dataclass(frozen=True)
class RandomSettings:
    """``seed`` of ``numpy.random.default_rng`` (None: the explanation's seed)."""

    seed: int | None = None

    def __post_init__(self):
        if self.seed is not None and validate.integer(self.seed, "seed") < 0:
            raise ValueError(f"seed must be >= 0, got {self.seed}")


@dataclass(frozen=True)
class SmoothGradSettings:
    """SmoothGrad (:func:`attnxai.explainers.smoothgrad`): ``n_samples`` noisy copies of the
    embeddings, noise of standard deviation ``noise`` times the range of the review's embedding
    coordinates, ``summary`` of the averaged gradient (one of
    :data:`attnxai.explainers.GRADIENT_METHODS`: ``"G-l2"``, its norm, by default) and ``seed`` of
    the noise (None: the explanation's seed)."""

    n_samples: int = 50
    noise: float = 0.15
    summary: str = "G-l2"
    seed: int | None = None

    def __post_init__(self):
        validate.positive_int(self.n_samples, "n_samples")
        validate.nonnegative(self.noise, "noise")
        validate.choice(self.summary, "summary", explainers.GRADIENT_METHODS)
        if self.seed is not None:
            validate.seed(self.seed)


def _set_fields(settings: Any) -> dict[str, Any]:
    """The fields of a settings object that are not None (the closed forms' keywords)."""
    return {f.name: getattr(settings, f.name) for f in dataclasses.fields(settings)
            if getattr(settings, f.name) is not None}


def _optional_positive(value, name):
    if value is not None:
        validate.positive_int(value, name)


#: The deletion games' ``positions`` a method's settings may ask for: the exact route, its certified
#: estimate (``"sampled"``, its 95 % intervals within a relative 1e-2,
#: :mod:`attnxai.theory.deletion_routes`) or the binomial approximation.
DELETION_POSITIONS = ("exact", "sampled", "binomial")


@dataclass(frozen=True)
class ShapleySettings:
    """The closed form of the Shapley values (:func:`attnxai.theory.shapley`): ``method``
    (``"chain"``, exact in ``p``, or ``"gauss"``), ``n_nodes`` (Gauss-Legendre nodes), ``ksub``
    (the lambda rule's steps per octave) and, for deletion, ``positions`` (one of
    :data:`DELETION_POSITIONS`); each None for the function's own default (chapter 9 measures
    them)."""

    method: str | None = None
    n_nodes: int | None = None
    ksub: int | None = None
    positions: str | None = None

    def __post_init__(self):
        if self.method is not None:
            validate.choice(self.method, "method", ("chain", "gauss"))
        if self.positions is not None:
            validate.choice(self.positions, "positions", DELETION_POSITIONS)
        _optional_positive(self.n_nodes, "n_nodes")
        _optional_positive(self.ksub, "ksub")

    def kwargs(self) -> dict[str, Any]:
        return _set_fields(self)


@dataclass(frozen=True)
class BanzhafSettings:
    """The closed form of the Banzhaf values (:func:`attnxai.theory.banzhaf`): ``ksub`` and, for
    deletion, ``positions``; None for the function's defaults."""

    ksub: int | None = None
    positions: str | None = None

    def __post_init__(self):
        if self.positions is not None:
            validate.choice(self.positions, "positions", DELETION_POSITIONS)
        _optional_positive(self.ksub, "ksub")

    def kwargs(self) -> dict[str, Any]:
        return _set_fields(self)


@dataclass(frozen=True)
class IGSettings:
    """Integrated Gradients from the UNK baseline in closed form
    (:func:`attnxai.theory.integrated_gradients`): ``n_nodes`` (None: doubled until ``tol``)."""

    n_nodes: int | None = None
    tol: float = 1e-12

    def __post_init__(self):
        _optional_positive(self.n_nodes, "n_nodes")
        if not (isinstance(self.tol, (int, float)) and not isinstance(self.tol, bool)
                and self.tol > 0):
            raise ValueError(f"tol must be a positive number, got {self.tol!r}")


# ---------------------------------------------------------------------- the methods
def _attention(reduce: str):
    def compute(doc: Document, s: AttentionSettings) -> np.ndarray:
        return doc.tokens_of(explainers.attention(doc.pre.model, doc.ids_tensor, reduce,
                                                  layer=s.layer))
    return compute


def _gradient(name: str):
    def compute(doc: Document, s: NoSettings) -> np.ndarray:
        summaries = doc.shared("gradient summaries", lambda: explainers.gradient_summaries(
            doc.pre.model, doc.ids_tensor, doc.target))
        return doc.tokens_of(summaries[name])
    return compute


def _alpha_times_score(doc: Document, s: NoSettings) -> np.ndarray:
    return doc.tokens_of(explainers.alpha_times_score(doc.pre.model, doc.ids_tensor, doc.target))


def _lime(doc: Document, s: LimeSettings) -> np.ndarray:
    from . import fastlime                  # (loads numba: only when LIME is asked)

    res = fastlime.explain_instance(doc.pre, doc.text, num_samples=s.num_samples,
                           kernel_width=s.kernel_width, bow=s.bow, random_state=s.seed,
                           target=doc.target, backend=s.backend)
    doc.results["LIME"] = res
    if not s.bow:                                     # one coefficient per position
        return np.asarray(res.coef, dtype=np.float64)
    return doc.words.align(res.words, res.coef)


def _lime_limit(doc: Document, s: LimitSettings) -> np.ndarray:
    from . import fastlime, theory          # (imports SymPy: only when the limit is asked)

    beta = theory.lime_limit(doc.pre, doc.text, s, target=doc.target)
    if not s.bow:
        return np.asarray(beta, dtype=np.float64)
    return doc.words.align(fastlime.lime_features(doc.tokens, True)[0], beta)


def _game(value: str, bow: bool):
    """Shapley or Banzhaf values of one removal mode (chapter 9): per word for deletion, per
    position for replacement (lime's features of that mode)."""
    def compute(doc: Document, s: Any) -> np.ndarray:
        from . import theory                 # (imports SymPy: only when asked)

        if not bow and s.positions is not None:
            raise ValueError(f"positions is a setting of deletion: {value} with replacement "
                             "keeps every position")
        fn = theory.shapley if value == "Shapley" else theory.banzhaf
        values = fn(doc.pre, doc.text, bow=bow, target=doc.target, **s.kwargs())
        if not bow:
            return np.asarray(values, dtype=np.float64)
        return doc.words.align(doc.words.words, values)
    return compute


def _integrated_gradients(doc: Document, s: IGSettings) -> np.ndarray:
    from . import theory

    ig = theory.integrated_gradients(doc.pre, doc.text, target=doc.target, n_nodes=s.n_nodes,
                                     tol=s.tol)
    doc.results["IG"] = ig
    return np.asarray(ig.tokens, dtype=np.float64)


def _smoothgrad(doc: Document, s: SmoothGradSettings) -> np.ndarray:
    grad, e = explainers.smoothgrad(doc.pre.model, doc.ids_tensor, doc.target,
                                    n_samples=s.n_samples, noise=s.noise, seed=s.seed)
    return doc.tokens_of(explainers.summarize_gradient(grad, e)[s.summary])


def _random(doc: Document, s: RandomSettings) -> np.ndarray:
    return np.random.default_rng(s.seed).standard_normal(len(doc.tokens))


@dataclass(frozen=True)
class Method:
    """One explainer of :data:`METHODS` (module docstring).

    ``level``: what ``compute`` returns, ``"token"`` (n,) or ``"word"`` (d,) float64 scores
    (a method whose level depends on its settings, LIME's ``bow``, says so in ``level_of``);
    ``group``: what is timed together; ``settings``: its settings class; ``about``: one line.
    For the corpus studies: ``study_seed`` maps a test review's index to the seed of a method that
    draws random numbers (its settings' ``seed``); ``recorded`` is ``(key, description)``, what a
    results folder records about the method (a key shared by several methods is written once;
    the folder's record is compared when it resumes, so an existing description is never
    reworded)."""

    name: str
    level: str
    group: str
    settings: type
    compute: Callable[[Document, Any], np.ndarray]
    about: str
    level_of: Callable[[Any], str] | None = None
    study_seed: Callable[[int], int] | None = None
    recorded: tuple[str, str] | None = None

    def level_for(self, settings: Any) -> str:
        return self.level if self.level_of is None else self.level_of(settings)


def _bow_level(s: Any) -> str:
    return "word" if s.bow else "token"


_GRADIENTS = "attention+gradients"


def _index(i: int) -> int:
    return i


def _thousand_times(i: int) -> int:
    return 1000 * i


# the records of the existing results folders, word for word (fastlime.explain is now
# fastlime.explain_instance): a resumed folder compares them
_GAMES = ("game values", "theory.shapley, theory.banzhaf (bow=True: delete, bow=False: replace), "
                         "theory.integrated_gradients: default settings")

#: Every method, in the order an explanation lists them: the seven of the paper's Figure 1, then
#: the extra scores (``alpha x s``: attention times the token's own score, the value part of GxI;
#: LIME's closed-form limit; the Shapley and Banzhaf values of both removal modes and Integrated
#: Gradients, chapter 9; SmoothGrad, the gradient averaged over noisy embeddings, which no
#: committed study holds (chapter 7 computes it live); a random baseline).
METHODS: dict[str, Method] = {m.name: m for m in (
    Method("alpha-avg", "token", _GRADIENTS, AttentionSettings, _attention("mean"),
           "the [CLS] attention weight, mean over heads"),
    Method("alpha-max", "token", _GRADIENTS, AttentionSettings, _attention("max"),
           "the [CLS] attention weight, max over heads"),
    Method("LIME", "word", "LIME", LimeSettings, _lime,
           "lime's coefficients (fastlime: lime 0.2.0.1's algorithm, exactly)", _bow_level,
           study_seed=_thousand_times,
           recorded=("lime", "fastlime.explain, bow=True, random_state = 1000 * test_index, "
                             "logit = the explained class")),
    Method("G-avg", "token", _GRADIENTS, NoSettings, _gradient("G-avg"),
           "mean of the gradient's coordinates"),
    Method("G-l1", "token", _GRADIENTS, NoSettings, _gradient("G-l1"), "l1 norm of the gradient"),
    Method("G-l2", "token", _GRADIENTS, NoSettings, _gradient("G-l2"), "l2 norm of the gradient"),
    Method("GxI", "token", _GRADIENTS, NoSettings, _gradient("GxI"), "gradient times input"),
    Method("alpha x s", "token", _GRADIENTS, NoSettings, _alpha_times_score,
           "attention times the token's own score (the value part of GxI)"),
    Method("LIME limit", "word", "LIME limit", LimitSettings, _lime_limit,
           "LIME's large-sample limit, in closed form", _bow_level,
           recorded=("limit", "theory.lime_limit(pre, text, bow=True), default settings")),
    Method("Shapley (delete)", "word", "Shapley", ShapleySettings, _game("Shapley", True),
           "Shapley values of the words, deleted with all their occurrences (closed form)",
           recorded=_GAMES),
    Method("Shapley (replace)", "token", "Shapley", ShapleySettings, _game("Shapley", False),
           "Shapley values of the positions, replaced by UNK in place (closed form)",
           recorded=_GAMES),
    Method("Banzhaf (delete)", "word", "Banzhaf", BanzhafSettings, _game("Banzhaf", True),
           "Banzhaf values of the words, deleted (closed form: the effect at p = 1/2)",
           recorded=_GAMES),
    Method("Banzhaf (replace)", "token", "Banzhaf", BanzhafSettings, _game("Banzhaf", False),
           "Banzhaf values of the positions, replaced by UNK (closed form)",
           recorded=_GAMES),
    Method("IG", "token", "IG", IGSettings, _integrated_gradients,
           "Integrated Gradients from the UNK baseline (closed form, Gauss-Legendre)",
           recorded=_GAMES),
    Method("SmoothGrad", "token", "SmoothGrad", SmoothGradSettings, _smoothgrad,
           "the gradient averaged over noisy copies of the embeddings (SmoothGrad), summarised "
           "by its l2 norm", study_seed=_index,
           recorded=("smoothgrad", "explainers.smoothgrad, seed = test_index, SmoothGradSettings "
                                   "defaults unless 'method settings' says otherwise")),
    Method("random", "token", "random", RandomSettings, _random,
           "i.i.d. standard normal scores (a baseline)", study_seed=_index,
           recorded=("random", "numpy default_rng(test_index).standard_normal(n)")),
)}
#: The paper's seven explainers, in its Figure 1 order (the default of :func:`attnxai.explain`).
PAPER_METHODS = ("alpha-avg", "alpha-max", "LIME", "G-avg", "G-l1", "G-l2", "GxI")
#: The game values and path integral of chapter 9 (beyond the paper).
GAME_METHODS = ("Shapley (delete)", "Shapley (replace)", "Banzhaf (delete)", "Banzhaf (replace)",
                "IG")
#: The scores beyond the paper's seven.
EXTRA_METHODS = tuple(m for m in METHODS if m not in PAPER_METHODS)
ALL_METHODS = tuple(METHODS)
#: Settings that must agree between two methods: (method, follows, the shared fields).
SHARED = (("LIME limit", "LIME", ("kernel_width", "bow")),)


# ---------------------------------------------------------------------- settings as text
def _from_text(text: str, hint: Any, where: str) -> Any:
    """``text`` as a value of the field type ``hint`` (``int``, ``float``, ``bool``, ``str`` or
    one of them ``| None``; ``"none"`` is None where the field allows it)."""
    kinds = [t for t in (typing.get_args(hint) or (hint,)) if t is not type(None)]
    if text.strip().lower() == "none" and len(kinds) < len(typing.get_args(hint) or (hint,)):
        return None
    for kind in kinds:
        if kind is bool:
            low = text.strip().lower()
            if low in ("true", "false"):
                return low == "true"
        elif kind in (int, float):
            try:
                return kind(text)
            except ValueError:
                pass
        elif kind is str:
            return text
    names = " or ".join(getattr(k, "__name__", str(k)) for k in kinds)
    raise ValueError(f"{where}: {text!r} is not of type {names}")


def parse_settings(specs: Iterable[str] | None) -> dict[str, dict[str, Any]]:
    """``METHOD.FIELD=VALUE`` strings (the commands' ``--set``; the method's name in any case, the
    value read as the field's type) as the ``settings`` of :func:`attnxai.explain`: any field of
    any method of :data:`METHODS`, e.g. ``["SmoothGrad.n_samples=20", "LIME.bow=false"]``. The
    values are checked by the settings classes when they are built."""
    out: dict[str, dict[str, Any]] = {}
    by_lower = {m.lower(): m for m in METHODS}
    for spec in specs or ():
        key, eq, text = spec.partition("=")
        method, dot, name = key.strip().rpartition(".")
        if not (eq and dot and method and name):
            raise ValueError(f"--set takes METHOD.FIELD=VALUE (e.g. SmoothGrad.n_samples=20), "
                             f"got {spec!r}")
        if method.lower() not in by_lower:
            raise ValueError(f"--set {spec!r}: unknown method {method!r}; choose among "
                             f"{list(METHODS)}")
        method = by_lower[method.lower()]
        cls = METHODS[method].settings
        hints = typing.get_type_hints(cls)
        if name not in hints:
            raise ValueError(f"--set {spec!r}: {method} has no setting {name!r}; its settings "
                             f"are {list(hints) or 'none'}")
        out.setdefault(method, {})[name] = _from_text(text, hints[name], f"--set {spec!r}")
    return out


# ---------------------------------------------------------------------- the corpus studies
def study_given(settings: Mapping[str, Mapping[str, Any]] | None,
                methods: Sequence[str]) -> dict[str, dict[str, Any]]:
    """A corpus study's further settings per method (its ``--set``), as a fresh dict: refused when
    not a mapping, or when they name a method the study does not run (one of ``methods``)."""
    if not isinstance(settings, (Mapping, type(None))):
        raise TypeError(f"settings must map a method's name to its settings, got "
                        f"{type(settings).__name__}")
    given = {m: dict(v) for m, v in (settings or {}).items()}
    idle = [m for m in given if m not in methods]
    if idle:
        raise ValueError(f"settings for {idle}, which the study does not run (its methods: "
                         f"{', '.join(dict.fromkeys(methods))})")
    return given


def study_settings(methods: Sequence[str], test_index: int,
                   given: Mapping[str, Mapping[str, Any]] | None = None
                   ) -> dict[str, dict[str, Any]]:
    """The settings a corpus study gives its methods on test review ``test_index``: ``given``
    (per method) and each random method's seed from its ``study_seed`` rule."""
    out = {m: dict(v) for m, v in (given or {}).items() if m in methods}
    for m in methods:
        rule = METHODS[m].study_seed
        if rule is not None:
            if "seed" in out.get(m, {}):
                raise ValueError(f"{m}'s seed is the study's (one per review: "
                                 f"{rule.__name__}(test_index)): do not set it")
            out.setdefault(m, {})["seed"] = rule(int(test_index))
    return out


def study_records(methods: Sequence[str]) -> dict[str, str]:
    """What a results folder records about its methods (their ``recorded`` lines, each key once,
    in the table's order)."""
    return dict(METHODS[m].recorded for m in METHODS if m in methods and METHODS[m].recorded)
