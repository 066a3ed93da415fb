"""Token level and word level: the one converter between them, and the one rule for a word that
occurs several times.

A document's ``n`` tokens (``[CLS]`` excluded) hold ``d`` distinct words, in order of first
occurrence (lime's feature order with ``bow=True``). Attention and gradients score tokens; LIME
with ``bow=True`` and its closed-form limit score words.

**The rule: a word stands for all its occurrences at once.** So

* a token-level score becomes a word's score by **summing** its occurrences' scores: for a small
  change of every occurrence's embedding the first-order change of the logit is the sum over the
  occurrences (the chain rule), and lime's ``bow=True`` removes every occurrence together;
* a word-level score is, at token level, the word's **whole** score at every occurrence (not a
  share of it): removing that token means removing the word, whose effect the score is. The
  occurrences then tie, and enter a rationale together (chapter 7).

:class:`Words` holds the layout of one document and converts both ways (:meth:`Words.to_words`,
:meth:`Words.to_tokens`); every part of the package that changes level goes through it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["Words"]


@dataclass(frozen=True)
class Words:
    """The words of one document: ``tokens`` (n,), ``words`` (d,) distinct in order of first
    occurrence, ``owner[t]`` the index in ``words`` of token ``t`` (n,) and ``counts[j]`` the
    occurrences of word ``j`` (d,). Build it with :meth:`of`."""

    tokens: tuple[str, ...]
    words: tuple[str, ...]
    owner: np.ndarray
    counts: np.ndarray

    @classmethod
    def of(cls, tokens: Sequence[str]) -> Words:
        """The layout of the document whose tokens are ``tokens`` (``[CLS]`` excluded)."""
        if isinstance(tokens, str) or not all(isinstance(t, str) for t in tokens):
            raise TypeError("tokens must be a list of str (the document's tokens, [CLS] "
                            "excluded)")
        index: dict[str, int] = {}
        owner = np.array([index.setdefault(t, len(index)) for t in tokens], dtype=np.int64)
        return cls(tuple(tokens), tuple(index), owner,
                   np.bincount(owner, minlength=len(index)).astype(np.int64))

    @property
    def n(self) -> int:
        """Tokens."""
        return len(self.tokens)

    @property
    def d(self) -> int:
        """Distinct words."""
        return len(self.words)

    def _scores(self, scores, size: int, level: str) -> np.ndarray:
        s = np.asarray(scores.detach().cpu().double() if hasattr(scores, "detach") else scores,
                       dtype=np.float64)
        if s.shape != (size,):
            raise ValueError(f"{level}-level scores must have shape ({size},), one per {level} of "
                             f"the document, got {s.shape}")
        return s

    def to_words(self, token_scores) -> np.ndarray:
        """(d,) word scores from (n,) token scores: the sum over each word's occurrences, added
        in reading order (the rule, module docstring). NaN stays NaN."""
        s = self._scores(token_scores, self.n, "token")
        return np.bincount(self.owner, weights=s, minlength=self.d)

    def to_tokens(self, word_scores) -> np.ndarray:
        """(n,) token scores from (d,) word scores: every occurrence carries its word's whole
        score (the rule, module docstring)."""
        return self._scores(word_scores, self.d, "word")[self.owner]

    def align(self, names: Sequence[str], scores) -> np.ndarray:
        """(d,) scores in this document's word order from scores given for the words ``names``
        (e.g. LIME's features); raises when the two sets of words differ (a text not in
        :func:`attnxai.normalize_for_lime` form, whose LIME words are not the model's tokens)."""
        s = np.asarray(scores, dtype=np.float64)
        if len(names) != s.size:
            raise ValueError(f"{len(names)} words but {s.size} scores")
        by_word = dict(zip(names, s))
        missing = [w for w in self.words if w not in by_word]
        if missing or len(by_word) != self.d:
            raise ValueError(f"the scores' words differ from the document's (no score for "
                             f"{missing[:5]}): LIME's words and the model's tokens differ (pass "
                             "the text through normalize_for_lime)")
        return np.array([by_word[w] for w in self.words])
