"""attnxai: companion package to *Attention Meets Post-hoc Interpretability* (ICML 2024).

Layers (each module imports only from the layers below it; ``tests/test_architecture.py`` runs
import-linter's contract from ``pyproject.toml``)::

    cli                          the command line
    course                       the chapters' launch cell, notebooks for Colab, student editions
    experiment                   the corpus experiments (one resumable runner)
    explanation                  one text explained by any methods: explain(), Explanation
    registry                     the methods explain() can run, their settings, the document
    theory | faithfulness        closed forms | perturbation metrics (AOPC, tau-LOO, curves)
    corpus                       corpus statistics of the explainers
    explainers | fastlime        attention, gradients, G x I | LIME, exactly as lime, fast
    trained                      a profile's model: from the cache, trained if missing
    train                        the training loop, resumable
    checkpoint                   the checkpoint folder: format, save, load, verification
    cache                        where trained models are kept: the one lookup rule
    textmodel | profiles | symbolic | network
                                 Pretrained (model + vocabulary) | training configurations |
                                 the model in SymPy | its float64 projections
    model | multilayer           the Section 2 classifier | the 6 x 6 reconstruction
    interface                    the model interface (ClassifierBase), ids, positions, predict
    words | data | text          token <-> word scores | IMDb | tokenizer, vocabulary
    validate | paper | runconfig | threads | plots
                                 one validator per input | the paper's numbers | book profile |
                                 thread limits | figures
    files | provenance | devices | native | budget | repository | printforms | prose
                                 atomic writes | commit, version, load | the device parser |
                                 the numba decorator | time budgets | the book's repository |
                                 print forms of outputs | numbers for the chapters' prose
    errors                       the errors a user can fix

**One text** (:func:`explain`): ``attnxai.explain(pre, text, methods, settings=...)`` returns an
:class:`~attnxai.explanation.Explanation` with every method's token- and word-level scores.

**The model interface** (:mod:`attnxai.model.interface`). Every explainer works on a
:class:`~attnxai.model.interface.ClassifierBase`, which provides ``check_ids`` / ``collate`` /
``embed`` and asks a model class for two methods, with ``B`` documents, ``T`` tokens ([CLS] at
position 0), ``L`` layers, ``K`` heads, ``C`` classes, ``D = d_embed``::

    forward_embeddings(e (B, T, D), mask (B, T) bool, per_head=False) -> logits (B, C)
                                                                   (per_head: (B, K, C))
    cls_attention(e (B, T, D), mask (B, T) bool) -> [CLS] attention (B, L, K, T)

Attention (any layer), gradients with respect to ``e``, G x I and LIME (generic path) then work
on it unchanged; the single-layer model also has float64 projections
(:class:`attnxai.model.network.Projections`) that the fast LIME and the closed forms evaluate.
"""

from .model.checkpoint import load, save
from .data import load_imdb
from .explanation import Explanation, explain
from .model.interface import ClassifierBase
from .model.single_layer import AttentionClassifier, Internals
from .text import Vocab, normalize_for_lime, tokenize
from .model.textmodel import Pretrained
from .model.trained import pretrained

__version__ = "0.2.0"
__all__ = ["AttentionClassifier", "ClassifierBase", "Explanation", "Internals", "Pretrained",
           "Vocab", "explain", "load", "load_imdb", "normalize_for_lime", "pretrained", "save",
           "tokenize", "__version__"]
