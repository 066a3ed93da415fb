"""attnxai: companion package to *Attention Meets Post-hoc Interpretability* (ICML 2024).

Modules: :mod:`~attnxai.data` (IMDb), :mod:`~attnxai.text` (tokenizer, vocabulary),
:mod:`~attnxai.model` (the Section 2 classifier), :mod:`~attnxai.train`,
:mod:`~attnxai.checkpoint` (cached trained models), :mod:`~attnxai.symbolic` (SymPy model).
"""

from .checkpoint import Pretrained, load, pretrained, save
from .data import load_imdb
from .model import AttentionClassifier, Internals
from .text import Vocab, normalize_for_lime, tokenize
from . import lime  # noqa: F401  attnxai.lime.explain: lime's exact answer, fast (issue 4)

__version__ = "0.1.0"
__all__ = ["AttentionClassifier", "Internals", "Pretrained", "Vocab", "load", "load_imdb",
           "normalize_for_lime", "pretrained", "save", "tokenize", "__version__"]
