"""One LIME problem: (model, text, settings) -> lime's features and a function from masks to the
explained logit, on the fast path (float64 projections) or lime's generic path (strings)."""

from __future__ import annotations

import numbers
import re
import threading
import warnings
import weakref
from collections.abc import Callable, Sequence
from itertools import compress
from typing import Any

import numpy as np

from .. import budget, validate
from ..errors import stacklevel
from ..limit_settings import LimeSettings
from ..model.textmodel import Pretrained
from ..model.single_layer import AttentionClassifier
from ..model.network import Projections
from ..text import tokenize
from ..threads import one_blas_thread
from .evaluate import MAX_SCORE_RANGE, DeleteEvaluator, ReplaceEvaluator
from .result import LimeResult
from .counts import normal_equations
from .ridge import solve_moments
from .sampling import BACKENDS, NarrowKernelWarning, draw, narrow_kernel_note, weights_by_count

__all__ = ["PATHS", "Problem", "check_mask_string", "check_memory", "fast_path_reason",
           "is_normalized", "lime_features", "perturbed_strings", "sample_bytes"]

PATHS = ("auto", "fast", "generic")
_NORMALIZED = re.compile(r"[0-9a-z]+(?: [0-9a-z]+)*")
_PROJECTIONS: "weakref.WeakKeyDictionary[AttentionClassifier, tuple[tuple, Projections]]" = \
    weakref.WeakKeyDictionary()


_SEEDED = threading.local()


def lime_random_state(value: Any) -> np.random.RandomState:
    """:func:`attnxai.validate.random_state` (lime's ``check_random_state``), except that an int
    seeds this thread's scratch ``RandomState`` with ``seed(value)``: the same state as
    ``RandomState(value)`` (numpy's legacy seeding of an int) in 2 us instead of 110 us (most of
    which builds a seed-sequence state that the legacy seeding overwrites). The stream an int
    seeds is lime's own, seen by nobody after the explanation; a ``RandomState`` or None is
    used and advanced in place, as lime does."""
    if isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_)) \
            and 0 <= int(value) < 2**32:
        rs = getattr(_SEEDED, "rs", None)
        if rs is None:
            rs = _SEEDED.rs = np.random.RandomState(0)
        rs.seed(int(value))
        return rs
    return validate.random_state(value)


def _weights_key(model: AttentionClassifier) -> tuple:
    """What the projections of ``model`` depend on: its configuration, and every parameter's and
    buffer's storage, dtype and version counter (torch bumps it on every in-place change: an
    optimiser step, ``load_state_dict``, ``copy_``)."""
    tensors = [*model.parameters(), *model.buffers()]
    return (model.config, getattr(model, "skip", False),
            tuple((t.data_ptr(), t.dtype, t.device, tuple(t.shape), t._version)
                  for t in tensors))


def projections(model: AttentionClassifier) -> Projections:
    """``Projections.of(model)``, kept while the model's weights stay the same (:func:`_weights_key`)
    -- a corpus explains thousands of documents with one model, and these products cost as much
    as a tenth of a fast explanation."""
    key = _weights_key(model)
    hit = _PROJECTIONS.get(model)
    if hit is not None and hit[0] == key:
        return hit[1]
    proj = Projections.of(model)
    _PROJECTIONS[model] = (key, proj)
    return proj


def lime_features(words: Sequence[str], bow: bool = True) -> tuple[list[str], list[np.ndarray]]:
    """lime's features for a document of ``words`` (the tokens after ``[CLS]``): their names and
    the token positions each one covers (1-based: position 0 is ``[CLS]``).

    ``bow=True``: one feature per distinct word, in order of first occurrence (lime's
    ``IndexedString`` order), holding all its positions. ``bow=False``: one feature per position.
    The one grouping of words into features in the package (fast LIME and the closed forms).
    """
    words = [str(w) for w in words]
    if not words:
        raise ValueError("the document has no word after [CLS]: nothing to explain")
    if not validate.bow(bow):
        return list(words), [np.array([t + 1]) for t in range(len(words))]
    order: dict[str, list[int]] = {}
    for t, w in enumerate(words):
        order.setdefault(w, []).append(t + 1)
    return list(order), [np.array(v) for v in order.values()]


def is_normalized(text: str) -> bool:
    """True if ``text`` is in :func:`attnxai.normalize_for_lime`'s form (any length)."""
    return isinstance(text, str) and _NORMALIZED.fullmatch(text) is not None


def fast_path_reason(model: Any, text: str, *, normalized: bool | None = None) -> str:
    """Why ``text`` cannot take the fast path with ``model`` ('' if it can); ``normalized``:
    :func:`is_normalized` of ``text`` when the caller has it."""
    if not isinstance(model, Pretrained):
        return "model is a plain classifier_fn, not an attnxai.Pretrained"
    if not isinstance(model.model, AttentionClassifier):
        return (f"the fast path is derived for the single-layer AttentionClassifier, not "
                f"{type(model.model).__name__}")
    if getattr(model.model, "skip", False):
        return "the fast path is derived for the model without the skip connection (skip=True)"
    if not (is_normalized(text) if normalized is None else normalized):
        return "text is not in normalize_for_lime's form (lowercase [0-9a-z] tokens, single spaces)"
    return ""


def check_mask_string(pre: Pretrained, mask_string: str) -> None:
    """With bow=False the model must read ``mask_string`` as the UNK token (one token, unknown
    to the vocabulary), or masked words would be replaced by a real word or shift positions."""
    if not isinstance(mask_string, str):
        raise TypeError(f"mask_string must be a str, got {type(mask_string).__name__}")
    toks = tokenize(mask_string)
    if len(toks) != 1:
        raise ValueError(f"with bow=False, mask_string must be one token for the model; "
                         f"{mask_string!r} tokenizes to {toks}, which would shift the positions")
    idx = pre.vocab.lookup(toks)[0]
    if idx != pre.vocab.unk_id:
        raise ValueError(f"with bow=False, mask_string {mask_string!r} is the vocabulary word "
                         f"{toks[0]!r} (id {idx}), not UNK: masked words would be replaced by a "
                         "real word. Use 'UNK' (or any string the vocabulary does not know)")


def sample_bytes(num_samples: int, d: int, chars: int = 0) -> int:
    """Peak memory of one LIME run of ``num_samples`` on ``d`` features, estimated from measured
    peaks (tracemalloc) with a margin: about ``32 + 1.3 d`` bytes per sample on the fast path
    (masks, labels, weights, distances); on the generic path (``chars`` > 0: the text's length)
    3 to 4 bytes per character of the text per sample more (the perturbed strings)."""
    per = 48 + 2 * d + (200 + 4 * chars if chars else 0)
    return int(num_samples) * per


def check_memory(num_samples: int, d: int, chars: int = 0, *, path: str = "fast") -> None:
    """Refuse (:class:`attnxai.errors.OverBudget`) a LIME run whose memory would exceed the budget
    of :mod:`attnxai.budget`: what a corpus study checks for its longest review before it starts,
    and every run before it allocates."""
    budget.check(sample_bytes(num_samples, d, chars),
                 f"LIME with num_samples={num_samples} on {d} features ({path} path)",
                 "lower num_samples (lime's default is 5000; the coefficients' sampling error "
                 "falls as 1/sqrt(num_samples)), or raise the budget")


class Problem:
    """One (model, text, settings): lime's features and a function from masks to labels."""

    def __init__(self, model: Pretrained | Callable[[list[str]], np.ndarray], text: str, *,
                 bow: bool, mask_string: str, target: int, path: str, chunk_size: int,
                 backend: str):
        validate.text(text)
        self.bow = validate.bow(bow)
        if not isinstance(mask_string, str):
            raise TypeError(f"mask_string must be a str (lime's own default is 'UNKWORDZ'), got "
                            f"{type(mask_string).__name__}")
        validate.choice(path, "path", PATHS)
        self.backend = validate.choice(backend, "backend", BACKENDS)
        self.mask_string, self.chunk_size = mask_string, validate.positive_int(chunk_size,
                                                                               "chunk_size")
        self.target = validate.integer(target, "target")
        if self.target < 0:
            raise ValueError(f"target must be a class index (an int >= 0), got {self.target}")
        pre = model if isinstance(model, Pretrained) else None
        normalized = is_normalized(text)
        # a normalised text's tokens are its words (no need for the regex tokenizer)
        tokens = text.split(" ") if normalized else None
        if pre is None and not callable(model):
            raise TypeError("model must be an attnxai.Pretrained or a classifier_fn(list[str]) -> "
                            f"(n, n_classes) array, got {type(model).__name__}")
        if pre is not None:
            self.target = validate.target(target, pre.model.n_classes)
            limit = pre.model.max_len - 1
            if tokens is None:
                tokens = tokenize(text)
            n_tok = len(tokens)
            if n_tok > limit:
                raise ValueError(
                    f"text has {n_tok} tokens but the model reads at most {limit} (plus [CLS]): "
                    "lime would silently explain the truncated model. Pass "
                    "normalize_for_lime(text) (the authors' preprocessing, which truncates), or "
                    "pass pre.predict_logits as a plain classifier_fn to get lime's behaviour")
            if n_tok == 0:
                raise ValueError(f"the model's tokenizer finds no token in {text[:40]!r}")
            # A text none of whose words the model knows (non-Latin script, invented words) is read
            # as UNK tokens only: refused, since LIME would explain noise (bow=False: replacing UNK
            # by UNK changes nothing, coefficients ~1e-16) or the count of UNK tokens (bow=True).
            pre.vocab.check_known(tokens, text)
            if not self.bow:
                check_mask_string(pre, mask_string)
        reason = fast_path_reason(model, text, normalized=normalized)
        if path == "fast" and reason:
            raise ValueError(f"path='fast' is not possible: {reason}")
        self.path = "generic" if (path == "generic" or reason) else "fast"
        self.reason = "path='generic' requested" if path == "generic" else reason
        if self.path == "fast":
            self._fast(pre, tokens, path)
        if self.path == "generic":
            from lime.lime_text import IndexedString

            self.classifier_fn = pre.predict_logits if pre is not None else model
            self.indexed = IndexedString(text, bow=self.bow, mask_string=mask_string)
            self.words = list(self.indexed.inverse_vocab)
            if not self.words:
                raise ValueError(f"lime finds no word in {text[:40]!r}: nothing to explain")

    def _fast(self, pre: Pretrained, tokens: list[str], path: str) -> None:
        # the text is normalised: lime's words are the model's tokens
        ids = np.asarray([pre.vocab.cls_id] + pre.vocab.lookup(tokens), dtype=np.int64)
        tab = projections(pre.model).document(ids, self.target)
        if self.bow:
            first: dict[str, int] = {}          # lime_features' order, without its arrays
            word_index = np.fromiter((first.setdefault(t, len(first)) for t in tokens),
                                     dtype=np.int64, count=len(tokens))
            self.words = list(first)
            self.evaluator: Any = DeleteEvaluator(tab, word_index, backend=self.backend)
        else:
            self.words = list(tokens)
            self.evaluator = ReplaceEvaluator(tab, backend=self.backend)
        if self.evaluator.ok:
            self.tables = tab
        elif path == "fast":
            raise ValueError("path='fast' is not possible: the model's attention scores on "
                             f"this text span more than {MAX_SCORE_RANGE:g} (exp underflow)")
        else:
            self.path = "generic"
            self.reason = ("the model's attention scores on this text span too wide a range "
                           "for the fast evaluation")

    def labels(self, masks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(target column of the model's output on every sample (n,), output on the document
        (C,))."""
        if self.path == "fast":
            y = np.concatenate([self.evaluator(masks[s:s + self.chunk_size])
                                for s in range(0, len(masks), self.chunk_size)])
            # lime's predict_proba is the row of its first sample, the document (lime's row 0
            # keeps every feature): then the target's logit is y[0], as in lime
            if len(masks) and masks[0].all():
                return y, self.tables.logits_given(y[0])
            return y, self.tables.logits
        strings = perturbed_strings(self.indexed, masks)
        out = np.asarray(self.classifier_fn(strings))
        if out.ndim != 2 or out.shape[0] != len(strings):
            raise ValueError(f"classifier_fn must return an (n, n_classes) array for n texts; got "
                             f"shape {out.shape} for {len(strings)} texts")
        self.target = validate.target(self.target, out.shape[1])
        return out[:, self.target].astype(np.float64), out[0].astype(np.float64)

    def check_budget(self, num_samples: int) -> None:
        """Refuse a run whose memory would exceed the budget (:func:`check_memory`), before
        anything is allocated."""
        chars = len(self.indexed.raw_string()) if self.path == "generic" else 0
        check_memory(num_samples, len(self.words), chars, path=self.path)

    def run(self, settings: LimeSettings, random_state: Any, keep_data: bool) -> LimeResult:
        """One run of lime's algorithm with ``settings`` (its samples and kernel width; checked
        when it was built, so not again here) from ``random_state``."""
        num_samples, kernel_width = settings.num_samples, settings.kernel_width
        self.check_budget(num_samples)
        d = len(self.words)
        masks, kept, backend = draw(d, num_samples, lime_random_state(random_state),
                                    self.backend)
        # The products and the solve are small: one BLAS thread, so that a busy second core
        # cannot make them wait (a 2-thread BLAS on a shared machine was 10x slower).
        with one_blas_thread():
            w = weights_by_count(kept, d, kernel_width)
            note = narrow_kernel_note(w, masks, kernel_width)
            if note:
                warnings.warn(note, NarrowKernelWarning, stacklevel=stacklevel())
            y, prediction = self.labels(masks)
            gram, xtw, xtwy, _ = normal_equations(masks, kept, y, w, backend=self.backend)
            coef, intercept, score, local_pred = solve_moments(gram, xtw, xtwy, y, w, masks[0])
        if self.path == "fast":
            backend = self.evaluator.backend if backend == "numba" else backend
        return LimeResult(words=list(self.words), coef=coef, intercept=intercept, score=score,
                          local_pred=local_pred, prediction=np.asarray(prediction),
                          target=int(self.target), bow=self.bow, num_samples=int(num_samples),
                          kernel_width=float(kernel_width), mask_string=self.mask_string,
                          path=self.path, backend=backend, reason=self.reason,
                          masks=masks if keep_data else None, labels=y if keep_data else None,
                          weights=w if keep_data else None)


def perturbed_strings(indexed: Any, masks: np.ndarray, chunk: int = 4096) -> list[str]:
    """The texts lime's generic path classifies: row 0 of ``masks`` (n, d) is the document
    (``indexed.raw_string()``), row ``i`` the string ``indexed.inverse_removing(np.flatnonzero(
    masks[i] == 0))`` of lime's ``IndexedString`` (string for string: tests/fastlime), built
    without its two arrays and per-sample index lists. Each piece of the split text (a word, or
    what lies between words) belongs to one feature or to none; a piece of a removed feature is
    dropped (``bow=True``) or replaced by ``mask_string`` (``bow=False``)."""
    pieces = list(indexed.as_list)
    feature = np.full(len(pieces), -1, dtype=np.int64)
    if indexed.bow:
        for j, at in enumerate(indexed.positions):
            feature[at] = j
    else:
        feature[np.asarray(indexed.positions, dtype=np.int64)] = np.arange(len(indexed.positions))
    words_at = np.flatnonzero(feature >= 0)
    out = [indexed.raw_string()]
    for start in range(1, len(masks), chunk):
        keep = np.ones((min(chunk, len(masks) - start), len(pieces)), dtype=bool)
        keep[:, words_at] = masks[start:start + chunk][:, feature[words_at]] != 0
        if indexed.bow:
            out.extend("".join(compress(pieces, row)) for row in keep.tolist())
        else:
            mask = indexed.mask_string
            out.extend("".join([p if k else mask for p, k in zip(pieces, row)])
                       for row in keep.tolist())
    return out
