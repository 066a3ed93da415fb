"""Tokenizer (torchtext's ``basic_english``, rewritten), the authors' LIME normalisation, vocabulary.

torchtext no longer builds against current PyTorch, so :func:`tokenize` re-implements
``torchtext.data.utils.get_tokenizer("basic_english")`` rule for rule, in the same order:

1. lowercase the whole text;
2. ``'``  -> `` '  `` (an apostrophe becomes its own token: ``don't`` -> ``don ' t``);
3. ``"``  -> removed;
4. ``.``  -> `` . `` (so ``...`` gives three ``.`` tokens; ``3.5`` gives ``3 . 5``);
5. ``<br />`` -> space (IMDb's line breaks);
6. ``,`` ``(`` ``)`` ``!`` ``?`` -> the character surrounded by spaces (own token);
7. ``;`` ``:`` -> space;
8. split on runs of whitespace.

Everything else (``-``, ``*``, ``/``, digits, non-ASCII letters, ``<`` of other tags) stays inside
words. The tokens are therefore lowercase; the vocabulary's specials ``[PAD]``, ``[CLS]``,
``UNK`` are uppercase and can never collide with a word.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path

# The rules as literal replacements, in the same order: each of basic_english's patterns but the
# last is a literal string, and ``re.sub`` of a literal is ``str.replace`` (leftmost, not
# overlapping), 3.6x faster; the last rule (whitespace runs -> one space) changes nothing before
# ``str.split()`` (``\s`` and ``str.split()`` agree on every code point). tests/test_text.py holds
# the rules as regular expressions and compares.
_RULES = (("'", " '  "), ('"', ""), (".", " . "), ("<br />", " "), (",", " , "), ("(", " ( "),
          (")", " ) "), ("!", " ! "), ("?", " ? "), (";", " "), (":", " "))
_NON_ALNUM = re.compile(r"[^0-9A-Za-z]+")
# A letter or a digit of any script (``\w`` without ``_``): a Chinese or Arabic text has words, and
# the model reads them (as UNK), so it must not be mistaken for an empty text.
_WORD_CHAR = re.compile(r"[^\W_]")
_LETTER = re.compile(r"[^\W\d_]")

PAD, CLS, UNK = "[PAD]", "[CLS]", "UNK"
SPECIALS = (PAD, CLS, UNK)


class TruncationWarning(UserWarning):
    """A text was longer than the model reads: only its first ``max_len - 1`` tokens were used."""


class DroppedCharactersWarning(UserWarning):
    """A text held letters, digits or symbols outside A-Z and 0-9 (Hebrew, accents, emoji): the
    preprocessing drops them, so no explanation says anything about them."""


def dropped_characters(text: str) -> list[str]:
    """The distinct characters of ``text`` that carry meaning (letters, digits, symbols such as
    emoji) but that :func:`normalize_for_lime` drops (it keeps ASCII letters and digits), in
    order of appearance."""
    import unicodedata

    seen: dict[str, None] = {}
    for ch in text:
        if not ch.isascii() and unicodedata.category(ch)[0] in "LNS":
            seen.setdefault(ch)
    return list(seen)


def tokenize(text: str) -> list[str]:
    """Split ``text`` into tokens exactly as torchtext's ``basic_english`` does (module docstring)."""
    if not isinstance(text, str):
        raise TypeError(f"tokenize expects a str, got {type(text).__name__}")
    line = text.lower()
    for old, new in _RULES:
        line = line.replace(old, new)
    return line.split()


def normalize_for_lime(text: str, max_tokens: int = 255) -> str:
    """The authors' preprocessing before LIME: every non-alphanumeric run becomes a space, the
    text is tokenised, truncated to ``max_tokens`` tokens (the model's length minus ``[CLS]``) and
    re-joined with single spaces.

    On the result, lime's words (it splits on ``\\W+``) and the model's tokens coincide, which is
    what makes the fast LIME paths of :mod:`attnxai.fastlime` possible. Non-ASCII letters count as
    non-alphanumeric here (``café`` -> ``caf``), as in an ASCII regular expression.
    """
    tokens = tokenize(_NON_ALNUM.sub(" ", text))
    if not tokens:
        if _LETTER.search(text):
            raise ValueError(
                f"text has letters but none in A-Z ({text[:40]!r}): normalize_for_lime keeps only "
                "ASCII letters and digits (the authors' preprocessing), so nothing is left to "
                "explain; the model's vocabulary holds only the words of English IMDb reviews")
        raise ValueError("text has no alphanumeric character: nothing is left to explain")
    return " ".join(tokens[:max_tokens])


class Vocab:
    """Word <-> id map. Ids 0, 1, 2 are ``[PAD]``, ``[CLS]``, ``UNK``; unknown words map to ``UNK``.

    The lowercase word ``unk`` also maps to ``UNK``: the tokenizer lowercases LIME's mask string
    ``"UNK"``, and a masked word must reach the model as the UNK token, not as a rare word.
    """

    def __init__(self, words: Sequence[str]):
        if isinstance(words, (str, bytes)):
            raise TypeError("a vocabulary is a list of str words, not one str")
        words = list(words)
        if not all(isinstance(w, str) for w in words):
            raise TypeError("a vocabulary is a list of str words (vocab.json holds a JSON list of "
                            "strings)")
        itos = list(SPECIALS) + [w for w in words if w not in SPECIALS and w != "unk"]
        if len(set(itos)) != len(itos):
            raise ValueError("vocabulary words must be distinct")
        self.itos: list[str] = itos
        self.stoi: dict[str, int] = {w: i for i, w in enumerate(itos)}
        self.stoi["unk"] = self.unk_id

    pad_id, cls_id, unk_id = 0, 1, 2

    @classmethod
    def build(cls, texts: Iterable[str], min_freq: int = 1) -> "Vocab":
        """Vocabulary of the tokens of ``texts`` seen at least ``min_freq`` times, most frequent
        first (ties in alphabetical order, so the result does not depend on input order)."""
        if min_freq < 1:
            raise ValueError(f"min_freq must be >= 1, got {min_freq}")
        counts: Counter[str] = Counter()
        for text in texts:
            counts.update(tokenize(text))
        words = sorted((w for w, c in counts.items() if c >= min_freq), key=lambda w: (-counts[w], w))
        return cls(words)

    def __len__(self) -> int:
        return len(self.itos)

    def __contains__(self, word: str) -> bool:
        return word in self.stoi

    def lookup(self, tokens: Iterable[str]) -> list[int]:
        return [self.stoi.get(t, self.unk_id) for t in tokens]

    def check_known(self, tokens: Sequence[str], text: str = "") -> None:
        """Refuse a document none of whose ``tokens`` the vocabulary knows (every one is read as
        UNK): the model cannot tell its words apart, so an explanation of them would be noise."""
        unk = self.unk_id
        if tokens and not any(self.stoi.get(t, unk) != unk for t in tokens):   # stops at one
            script = (" (its letters are not A-Z: the vocabulary holds the words of English IMDb "
                      "reviews)" if _LETTER.search(text) and not re.search(r"[A-Za-z]", text)
                      else "")
            raise ValueError(
                f"no word of {text[:40]!r} is in the model's vocabulary{script}: all "
                f"{len(tokens)} token(s) are read as the same UNK token, so the model cannot tell "
                "them apart and a word-level explanation would only measure rounding noise or the "
                "number of UNK tokens. Nothing to explain")

    def encode(self, text: str, max_len: int = 256, *, truncate: bool = True) -> list[int]:
        """``[CLS]`` followed by the ids of ``tokenize(text)``; at most ``max_len`` ids in all.

        Raises ``ValueError`` for a text with no letter or digit of any script (empty, blank,
        punctuation only), and for a text longer than ``max_len - 1`` tokens when
        ``truncate=False``. Truncation is silent here (the corpus code cuts reviews on purpose);
        :class:`attnxai.Pretrained`'s ``encode`` / ``predict_logits`` warn
        (:class:`TruncationWarning`).
        """
        if not isinstance(text, str):
            raise TypeError(f"encode expects a str, got {type(text).__name__}")
        if not _WORD_CHAR.search(text):
            kind = "empty" if not text.strip() else "without any letter or digit"
            raise ValueError(f"cannot encode a text {kind}: {text[:40]!r}")
        tokens = tokenize(text)
        if len(tokens) > max_len - 1 and not truncate:
            raise ValueError(f"text has {len(tokens)} tokens but the model accepts {max_len - 1} "
                             "(plus [CLS]); pass truncate=True to keep the first ones")
        return [self.cls_id] + self.lookup(tokens[: max_len - 1])

    def decode(self, ids: Iterable[int], *, skip_pad: bool = True) -> list[str]:
        return [self.itos[int(i)] for i in ids if not (skip_pad and int(i) == self.pad_id)]

    def save(self, path: str | Path) -> None:
        from .store.files import atomic_write

        atomic_write(Path(path), json.dumps(self.itos[len(SPECIALS):], ensure_ascii=False))

    @classmethod
    def load(cls, path: str | Path) -> "Vocab":
        from .store.files import read_small_file            # a FIFO or a folder there: refused

        return cls.from_json(read_small_file(path))

    @classmethod
    def from_json(cls, data: bytes | str) -> "Vocab":
        """The vocabulary of a ``vocab.json`` content (a JSON list of words)."""
        from .store.files import loads_json

        words = loads_json(data, "vocab.json")
        if not isinstance(words, list):
            raise TypeError("vocab.json must hold a JSON list of words, got "
                            f"{type(words).__name__}")
        return cls(words)
