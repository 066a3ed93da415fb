"""attnxai: companion package to *Attention Meets Post-hoc Interpretability* (ICML 2024).

Layers (each module imports only from the layers below it; ``tests/test_architecture.py`` runs
import-linter's contract from ``pyproject.toml``)::

    cli                                   the command line
    experiment                            the corpus experiments (one resumable runner)
    theory                                closed forms: gradient theorem, LIME limits, approximations
    corpus                                corpus statistics of the explainers
    explainers                            attention, gradients, G x I, explain_text
    fastlime                              LIME, exactly as ``lime`` computes it, fast
    checkpoint                            trained models in the cache (Pretrained)
    train                                 training profiles and loop
    symbolic | network                    the model in SymPy | its float64 projections
    model                                 the Section 2 classifier (AttentionClassifier)
    interface                             the model interface (ClassifierBase), ids, positions
    data | text                           IMDb | tokenizer, vocabulary
    validate | paper | runconfig | threads   validators | the paper's numbers | book profile | threads

**The model interface** (:mod:`attnxai.interface`). Every explainer works on a
:class:`~attnxai.interface.ClassifierBase`, which provides ``check_ids`` / ``collate`` /
``embed`` and asks a model class for two methods, with ``B`` documents, ``T`` tokens ([CLS] at
position 0), ``L`` layers, ``K`` heads, ``C`` classes, ``D = d_embed``::

    forward_embeddings(e (B, T, D), mask (B, T) bool, per_head=False) -> logits (B, C)
                                                                   (per_head: (B, K, C))
    cls_attention(e (B, T, D), mask (B, T) bool) -> [CLS] attention (B, L, K, T)

Attention (any layer), gradients with respect to ``e``, G x I and LIME (generic path) then work
on it unchanged; the single-layer model also has float64 projections
(:class:`attnxai.network.Projections`) that the fast LIME and the closed forms evaluate.
"""

from .checkpoint import load, save
from .data import load_imdb
from .interface import ClassifierBase
from .model import AttentionClassifier, Internals
from .text import Vocab, normalize_for_lime, tokenize
from .textmodel import Pretrained
from .trained import pretrained

__version__ = "0.2.0"
__all__ = ["AttentionClassifier", "ClassifierBase", "Internals", "Pretrained", "Vocab", "load",
           "load_imdb", "normalize_for_lime", "pretrained", "save", "tokenize", "__version__"]
