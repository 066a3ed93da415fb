"""One way to explain a text: :func:`explain` runs any methods of :data:`attnxai.registry.METHODS`
on it and returns one :class:`Explanation`, which renders as a table, plain text, JSON and HTML.

    ex = attnxai.explain(pre, "a dull film, with a great score", ["LIME", "GxI"],
                         settings={"LIME": {"num_samples": 1000}})
    ex.token_scores["GxI"]        # (n,) one score per token ([CLS] excluded)
    ex.word_scores["LIME"]        # (d,) one per distinct word, in order of first occurrence
    ex.table(); ex.to_text(); ex.to_json(); ex.to_html()

**The text.** It is read as the authors read it before LIME (:func:`attnxai.normalize_for_lime`:
lower case, letters and digits, single spaces), so that lime's words are the model's tokens, and
cut to the model's length (``max_len - 1`` tokens after ``[CLS]``): a longer text gets one
:class:`~attnxai.text.TruncationWarning` and ``cut`` says how many tokens were left out. An empty
text, one with no letter or digit, and one none of whose words the model knows (every token read
as UNK) are refused with ``ValueError``; unknown words are listed in ``unknown``.

**Levels.** Every method's scores are given at both levels, converted by the one rule of
:mod:`attnxai.words` (a token-level score's word score is the sum over the word's occurrences; a
word-level score is the word's whole score at each occurrence). The faithfulness metrics take
``ex.ids`` and ``ex.token_scores`` (:func:`attnxai.perturbation.evaluate`).

**Settings.** ``target`` (the explained logit, or ``"predicted"``) and ``seed`` are set once for
every method; ``settings`` gives a method's own (its fields in :mod:`attnxai.registry`), and a
setting a method does not have, or two different values of a shared one, is refused
(:mod:`attnxai.registry` says which are shared, and resolves them:
:func:`attnxai.registry.resolve_settings`). ``ex.settings`` records what every method ran with.
A corpus study resolves its settings once, before its first review
(:func:`attnxai.registry.study_settings`), and explains each review with :func:`explain_with`,
which checks nothing again.
"""

from __future__ import annotations

import dataclasses
import time
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from . import validate
from .progress import bar as progress_bar
from .shading import explanations_html, figure1_page
from .registry import DEFAULT_SEED, METHODS, PAPER_METHODS, Document, resolve_settings
from .text import (DroppedCharactersWarning, TruncationWarning, dropped_characters,
                   normalize_for_lime, tokenize)
from .model.textmodel import Pretrained
from .words import Words

__all__ = ["Explanation", "explain", "explain_with", "read_document", "resolve_settings"]


@dataclass
class Explanation:
    """The explanations of one text by several methods (:func:`explain`).

    ``text``: what the model read (normalised and cut); ``tokens`` (n,) its tokens and ``words``
    (d,) its distinct words; ``ids`` (n + 1,) int64 with ``[CLS]`` first; ``token_scores[m]``
    (n,) and ``word_scores[m]`` (d,) float64 for every method ``m``, in the order asked;
    ``logits`` (C,) the model's output; ``target``: the explained class; ``settings``: per method
    the settings it ran with, plus ``"explanation"`` (target, seed, preprocessing);
    ``n_tokens``: tokens of the whole text, ``cut``: those beyond the model's length;
    ``unknown``: distinct words read as UNK; ``model``: the checkpoint folder's name;
    ``seconds``: wall time per group of methods; ``results``: what a method returned besides its
    scores (``"LIME"``: the :class:`~attnxai.fastlime.LimeResult`)."""

    text: str
    tokens: list[str]
    words: list[str]
    ids: np.ndarray = field(repr=False)
    token_scores: dict[str, np.ndarray] = field(repr=False)
    word_scores: dict[str, np.ndarray] = field(repr=False)
    logits: np.ndarray
    target: int
    settings: dict[str, dict[str, Any]]
    n_tokens: int
    cut: int
    unknown: list[str]
    model: str
    seconds: dict[str, float] = field(default_factory=dict)
    results: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def methods(self) -> list[str]:
        return list(self.token_scores)

    @property
    def probability(self) -> np.ndarray:
        """The model's class probabilities (softmax of ``logits``): (C,)."""
        e = np.exp(self.logits - self.logits.max())
        return e / e.sum()

    @property
    def predicted(self) -> int:
        return int(np.argmax(self.logits))

    # ------------------------------------------------------------------ renderings
    def table(self, level: str = "token"):
        """A :class:`pandas.DataFrame`: one row per token (column ``token``) or, with
        ``level="word"``, per distinct word (``word``, ``count``), then one column per method."""
        import pandas as pd

        validate.choice(level, "level", ("token", "word"))
        if level == "token":
            return pd.DataFrame({"token": self.tokens, **self.token_scores})
        counts = Words.of(self.tokens).counts
        return pd.DataFrame({"word": self.words, "count": counts, **self.word_scores})

    def summary(self) -> str:
        """Two lines or more: the model, its logits and prediction, what was cut or unknown."""
        p = self.probability
        lines = [f"model {self.model}: logits {np.array2string(self.logits, precision=3)}, "
                 f"P(class {self.target}) = {p[self.target]:.3f}, predicted class "
                 f"{self.predicted}" + (" (positive)" if self.predicted == 1 else " (negative)")]
        if self.cut:
            lines.append(f"note: the text has {self.n_tokens} tokens and the model reads "
                         f"{len(self.tokens)}: the last {self.cut} were cut")
        if self.unknown:
            shown = ", ".join(self.unknown[:8]) + (" ..." if len(self.unknown) > 8 else "")
            lines.append(f"note: {len(self.unknown)} word(s) unknown to the model, read as UNK: "
                         f"{shown}")
        return "\n".join(lines)

    def to_text(self, *, level: str = "token", color: bool = False, digits: int = 3) -> str:
        """The explanations side by side, one row per token (or word), one column per method
        (a terminal table). ``color``: ANSI green/red by sign."""
        validate.choice(level, "level", ("token", "word"))
        rows, scores = (self.tokens, self.token_scores) if level == "token" else \
            (self.words, self.word_scores)
        names = list(scores)
        # round, then + 0: a weight that rounds to zero prints +0.000, never -0.000
        cells = [[f"{round(v, digits) + 0:+.{digits}f}" for v in scores[m]] for m in names]
        tw = max([5] + [len(t) for t in rows])
        widths = [max(len(m), max((len(c) for c in col), default=0)) for m, col in
                  zip(names, cells)]
        head = "#".rjust(4) + "  " + level.ljust(tw) + "  " + "  ".join(
            m.rjust(w) for m, w in zip(names, widths))
        lines = [head, "-" * len(head)]
        for i, tok in enumerate(rows):
            parts = []
            for j, (col, w) in enumerate(zip(cells, widths)):
                s = col[i].rjust(w)
                if color:
                    s = f"\x1b[{32 if scores[names[j]][i] >= 0 else 31}m{s}\x1b[0m"
                parts.append(s)
            lines.append(f"{i + 1:4d}  {tok.ljust(tw)}  " + "  ".join(parts))
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        """Everything, as JSON-able data (floats, lists, str)."""
        return {"text": self.text, "tokens": self.tokens, "words": self.words,
                "token_scores": {m: [float(x) for x in v] for m, v in self.token_scores.items()},
                "word_scores": {m: [float(x) for x in v] for m, v in self.word_scores.items()},
                "logits": [float(x) for x in self.logits],
                "probability": [float(x) for x in self.probability],
                "predicted": self.predicted, "target": self.target, "n_tokens": self.n_tokens,
                "cut": self.cut, "unknown": self.unknown, "model": self.model,
                "settings": self.settings, "seconds": self.seconds}

    def to_html(self, *, page: bool = True) -> str:
        """The paper's Figure 1 for this text, one shaded row per method
        (:func:`attnxai.shading.figure1_page`: a complete offline HTML page; ``page=False``: the
        rows alone, :func:`attnxai.shading.explanations_html`, for a notebook)."""
        if not page:
            return str(self._shading())
        p = self.probability
        sub = (f"model {self.model}; P(class {self.target}) = {p[self.target]:.3f}; every row "
               f"explains logit {self.target}")
        lime = self.settings.get("LIME")
        if lime is not None:
            sub += (f"; LIME: {lime['num_samples']} samples, kernel width {lime['kernel_width']}, "
                    f"bow={lime['bow']}, seed {lime['seed']}")
        notes = []
        if self.cut:
            notes.append(f"The text has {self.n_tokens} tokens; the model reads the first "
                         f"{len(self.tokens)}: the last {self.cut} were cut.")
        if self.unknown:
            notes.append(f"Unknown to the model (read as UNK): {', '.join(self.unknown)}.")
        return figure1_page(self.tokens, self.token_scores, title="Explanations of one text",
                            subtitle=sub, notes=notes)

    def _shading(self):
        """The rows with the book's colour key (attnxai.shading.explanations_html)."""
        towards = '"positive"' if self.target == 1 else f"class {self.target}"
        return explanations_html(self.tokens, self.token_scores, towards=towards,
                                 score=f"each explainer's weight of the token for logit {self.target}")

    def _repr_html_(self) -> str:
        return self.to_html(page=False)

    def _repr_latex_(self) -> str:
        """The same rows for the PDF (colour boxes)."""
        return self._shading()._repr_latex_()

    def write_html(self, path: str | Path) -> Path:
        """Write :meth:`to_html` to ``path`` (UTF-8, atomically); returns the path."""
        from .store.files import atomic_write

        return atomic_write(Path(path), self.to_html())


# ---------------------------------------------------------------------- reading the text
def read_document(pre: Pretrained, text: str, target: int | str = 1
                  ) -> tuple[Document, int, list[str]]:
    """The :class:`~attnxai.registry.Document` the methods read, the number of tokens cut and
    the unknown words (module docstring: the one reading of a text to explain)."""
    if not isinstance(pre, Pretrained):
        raise TypeError(f"the model must be an attnxai Pretrained (model and vocabulary), got "
                        f"{type(pre).__name__}")
    validate.text(text)
    target = validate.explained_class(target, pre.model.n_classes)
    full = tokenize(normalize_for_lime(text, 10**9))       # raises for a text without a word
    dropped = dropped_characters(text)
    if dropped:
        shown = " ".join(repr(c) for c in dropped[:8]) + (" ..." if len(dropped) > 8 else "")
        warnings.warn(f"the text holds {len(dropped)} distinct character(s) outside A-Z and 0-9 "
                      f"({shown}): the model's preprocessing keeps only ASCII letters and digits, "
                      "so they were dropped and no explanation scores them",
                      DroppedCharactersWarning, stacklevel=3)
    limit = pre.model.max_len - 1
    kept = full[:limit]
    pre.vocab.check_known(kept, text)
    cut = len(full) - len(kept)
    if cut > 0:
        warnings.warn(f"the text has {len(full)} tokens and the model reads {limit}: the last "
                      f"{cut} were cut from every explanation", TruncationWarning,
                      stacklevel=3)
    norm = " ".join(kept)
    ids = np.asarray(pre.vocab.encode(norm, pre.model.max_len), dtype=np.int64)
    with torch.no_grad():
        logits = pre.model(torch.as_tensor(ids)[None]).double().numpy()[0]
    if target == "predicted":
        target = int(np.argmax(logits))
    unknown = [w for w in dict.fromkeys(kept) if w not in pre.vocab.stoi]
    doc = Document(pre=pre, text=norm, tokens=kept, ids=ids, words=Words.of(kept), target=target,
                   logits=logits)
    return doc, cut, unknown


# ---------------------------------------------------------------------- explaining
def explain(model: Pretrained | str, text: str, methods: Iterable[str] | None = None, *,
            target: int | str = 1, seed: int = DEFAULT_SEED,
            settings: Mapping[str, Any] | None = None, progress: bool = False) -> Explanation:
    """The explanations of ``text`` by ``methods`` (default the paper's seven,
    :data:`~attnxai.registry.PAPER_METHODS`; any names of :data:`~attnxai.registry.METHODS`).

    ``model``: a :class:`~attnxai.model.textmodel.Pretrained`, or a profile name (``"paper"``,
    ``"quick"``: the cached model, trained first if missing, :func:`attnxai.pretrained`).
    ``target``: the class every method explains (default 1, the paper's logit 1; ``"predicted"``:
    the model's predicted class on this text). ``seed``: of every random method whose settings
    give none. ``settings``: per method name, a dict of its settings or its settings object
    (module docstring). ``progress``: a progress bar over the groups of methods.

    Raises ``ValueError`` for an empty text, one with no letter or digit, one none of whose words
    the model knows, an unknown method, a setting a method does not have, a target in a method's
    settings, and two different values of a shared setting; ``TypeError`` for arguments of the
    wrong type.
    """
    if isinstance(model, str):
        from .model.trained import pretrained

        model = pretrained(model, progress=progress)
    names = validate.names(methods, tuple(METHODS), kind="method", default=PAPER_METHODS)
    seed = validate.integer(seed, "seed")
    return _explained(model, text, resolve_settings(names, settings, seed=seed), target,
                      progress, {"seed": seed})


def explain_with(pre: Pretrained, text: str, resolved: Mapping[str, Any], *,
                 target: int | str = 1, seeds: Mapping[str, int] | None = None) -> Explanation:
    """:func:`explain` with the settings already resolved: ``resolved`` maps each method to run to
    its settings object, as :func:`attnxai.registry.resolve_settings` (or
    :func:`~attnxai.registry.study_settings`) built and checked them; nothing is checked again.
    ``seeds``: per method, the seed that replaces its settings' (a corpus study's seed of this
    review). What a study calls once per review, its settings checked once, before the first."""
    if seeds:
        resolved = {m: _seeded(s, seeds[m]) if m in seeds else s for m, s in resolved.items()}
    return _explained(pre, text, resolved, target, False, {})


def _seeded(settings: Any, seed: int) -> Any:
    """The settings object with its ``seed`` replaced: checked alone where the class can
    (``cls.of``, :class:`~attnxai.limit_settings.LimeSettings`), else by the class."""
    cls = type(settings)
    return cls.of(settings, seed=seed) if hasattr(cls, "of") else \
        dataclasses.replace(settings, seed=seed)


def _explained(pre: Pretrained, text: str, resolved: Mapping[str, Any], target: int | str,
               progress: bool, recorded_too: dict[str, Any]) -> Explanation:
    """The explanations of ``text`` by the methods of ``resolved`` (their settings objects);
    ``recorded_too``: more of what the explanation records about itself (explain's seed)."""
    names = list(resolved)
    doc, cut, unknown = read_document(pre, text, target)
    values: dict[str, np.ndarray] = {}
    seconds: dict[str, float] = {}
    groups = list(dict.fromkeys(METHODS[m].group for m in names))
    bar = progress_bar(total=len(groups), desc="explain", unit="step", leave=False) \
        if progress else None
    for group in groups:
        t0 = time.perf_counter()
        for m in names:
            if METHODS[m].group == group:
                values[m] = METHODS[m].compute(doc, resolved[m])
        seconds[group] = time.perf_counter() - t0
        if bar is not None:
            bar.set_postfix_str(group)
            bar.update(1)
    if bar is not None:
        bar.close()
    token_scores, word_scores = {}, {}
    for m in names:
        if METHODS[m].level_for(resolved[m]) == "token":
            token_scores[m] = values[m]
            word_scores[m] = doc.words.to_words(values[m])
        else:
            word_scores[m] = values[m]
            token_scores[m] = doc.words.to_tokens(values[m])
    recorded = {m: dataclasses.asdict(resolved[m]) for m in names}
    recorded["explanation"] = {"target": doc.target, **recorded_too,
                               "preprocessing": "normalize_for_lime"}
    return Explanation(text=doc.text, tokens=doc.tokens, words=list(doc.words.words), ids=doc.ids,
                       token_scores=token_scores, word_scores=word_scores, logits=doc.logits,
                       target=doc.target, settings=recorded, n_tokens=len(doc.tokens) + cut,
                       cut=cut, unknown=unknown,
                       model=pre.path.name if pre.path is not None else "in memory",
                       seconds=seconds, results=doc.results)
