"""A trained classifier with its vocabulary: text in, ids and logits out (:class:`Pretrained`).

This is the type every explainer of text takes (the fast LIME, the closed forms,
:func:`attnxai.explain`). It holds the model, the vocabulary, the training configuration and metrics, and the checkpoint
folder it was loaded from (``path``); it knows nothing of training, files or caches: those are
:mod:`attnxai.model.train`, :mod:`attnxai.model.store.checkpoint` (the folder format, verified) and
:mod:`attnxai.model.store.cache` (the trained models kept per profile).
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ..errors import stacklevel
from .interface import ClassifierBase, predict
from ..text import TruncationWarning, Vocab, tokenize

__all__ = ["Pretrained"]


@dataclass
class Pretrained:
    """A trained model with its vocabulary, training config and metrics (module docstring).

    ``model``: the classifier; ``vocab``: its vocabulary; ``config``: what its checkpoint's
    ``config.json`` records (``arch``, ``train``, ``model``, ``data_sha256``, ``format``);
    ``metrics``: ``metrics.json``; ``path``: the checkpoint folder, or None (in memory)."""

    model: ClassifierBase
    vocab: Vocab
    config: dict[str, Any]
    metrics: dict[str, Any]
    path: Path | None = None

    def _encode_all(self, texts: Sequence[str], truncate: bool, *,
                    empty_is_cls: bool = False) -> list[list[int]]:
        """Id lists for ``texts``; one :class:`TruncationWarning` for all the texts cut."""
        if not isinstance(truncate, (bool, np.bool_)):
            raise TypeError(f"truncate must be True or False, got {type(truncate).__name__}")
        L = self.model.max_len
        seqs, cut = [], []
        for i, t in enumerate(texts):
            try:
                ids = self.vocab.encode(t, L, truncate=bool(truncate))
            except ValueError:
                if not empty_is_cls or not isinstance(t, str) or re.search(r"[^\W_]", t):
                    raise
                ids = [self.vocab.cls_id]
            if len(ids) == L:
                n = len(tokenize(t))
                if n > L - 1:
                    cut.append((i, n))
            seqs.append(ids)
        if cut:
            shown = ", ".join(f"text {i} has {n} ({n - (L - 1)} dropped)" for i, n in cut[:3])
            more = f" and {len(cut) - 3} more" if len(cut) > 3 else ""
            warnings.warn(f"{len(cut)} of {len(seqs)} text(s) longer than the model reads "
                          f"({L - 1} tokens after [CLS]) were cut: {shown}{more}. The model sees "
                          "only their first tokens; pass truncate=False to refuse such texts",
                          TruncationWarning, stacklevel=stacklevel())
        return seqs

    def encode(self, texts: str | Sequence[str], *, truncate: bool = True) -> torch.Tensor:
        """(B, T) ids for one text or a list of texts, padded as the model expects.

        A text longer than the model reads (``max_len - 1`` tokens after ``[CLS]``) is cut to its
        first tokens with a :class:`~attnxai.text.TruncationWarning` saying how many were dropped
        (``truncate=False``: ``ValueError`` instead). A text with no letter or digit raises
        ``ValueError``.
        """
        if isinstance(texts, str):
            texts = [texts]
        if isinstance(texts, bytes) or not isinstance(texts, Sequence):
            raise TypeError(f"texts must be a str or a list of str, got {type(texts).__name__}")
        if len(texts) == 0:
            raise ValueError("no texts given")
        return self.model.collate(self._encode_all(texts, truncate))

    def predict_logits(self, texts: Sequence[str], batch_size: int = 256,
                       head: int | None = None, *, truncate: bool = True) -> np.ndarray:
        """Logits (n, n_classes) as float64 numpy: the ``classifier_fn`` to give lime.

        ``texts`` is a list of str (a single str is refused: it would be read as a list of
        characters). Texts with no word left (lime can delete every word: empty, blank or
        punctuation only) are the document ``[CLS]`` alone. A text longer than the model reads is
        cut, with a :class:`~attnxai.text.TruncationWarning` (``truncate=False``: ``ValueError``).
        ``head=i`` returns head ``i``'s own output ``W_l^(i) v~^(i)`` (explaining one head; the
        last layer's heads for a multi-layer model).
        """
        if isinstance(texts, (str, bytes)):
            raise TypeError("predict_logits takes a list of texts, got a single str: wrap it, "
                            "predict_logits([text])")
        if not isinstance(texts, (Sequence, np.ndarray)):
            raise TypeError(f"texts must be a list of str, got {type(texts).__name__}")
        seqs = self._encode_all(list(texts), truncate, empty_is_cls=True)
        return predict(self.model, seqs, batch_size=batch_size, head=head)

    def tokens(self, text: str) -> list[str]:
        """The tokens the model sees for ``text`` (with ``[CLS]``, after truncation, which is
        warned about)."""
        return self.vocab.decode(self._encode_all([text], True)[0])
