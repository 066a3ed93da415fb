"""attnxai: companion package to *Attention Meets Post-hoc Interpretability* (ICML 2024).

Layers (each module imports only from the layers below it; ``tests/test_architecture.py`` runs
import-linter's contracts from ``pyproject.toml``, one for the top level and one for each room)::

    cli/                         the command line, one module per command group:
        explain | models | notebooks | studies
                                 explain | train, info, publish-models, adopt | notebooks |
                                 the corpus studies
        flags                    the shared flags, and those generated from a settings class
    course                       the chapters' launch cell, notebooks for Colab, student editions
    experiment/                  the corpus studies, run by one resumable runner:
        shapley_corpus | beyond_one_layer
                                 the agreement study (chapter 9) | layer by layer, training runs
        faithfulness             the faithfulness study (chapter 7)
        lime_corpus | bookdata | faithfulness_tables
                                 the LIME corpus study | the committed summaries | the
                                 faithfulness study's tables and bootstrap intervals
        runner                   the one resumable runner (Study, run)
        cluster | workers | transport
                                 a Dask cluster | this process, local processes | the model
                                 shipped to workers
    explorer                     (beside experiment) the book's explorer page: the tables it
                                 computes from, the model they hold, what the export changes
    explanation                  one text explained by any methods: explain(), Explanation
    registry                     the methods explain() can run, assembled from methods/;
                                 --set; what the studies read about each method
    methods/                     one module per method family, each with its settings classes,
                                 compute functions and Method entries:
        attention | baselines | games | gradients | lime
                                 alpha-avg, alpha-max, alpha x s | random, occlusion | Shapley,
                                 Banzhaf, IG | G-avg, G-l1, G-l2, GxI, SmoothGrad | LIME, limit
        base                     the Document a method reads, the Method entry
    theory/ | perturbation/      closed forms (theory/__init__ lists its modules; their compiled
                                 loops in theory/lime_kernels/: binomial, chain | bernoulli,
                                 arena; LIME for text's limit in theory/lime_text/: reference,
                                 limits, sigma, law) | perturbation metrics (AOPC, tau-LOO,
                                 curves)
        perturbation/: symbolic, measures, perturber, rankings
                                 the measures in SymPy, the measures, the perturbed documents'
                                 probabilities, the rankings and inputs
    corpus                       corpus statistics of the explainers
    explainers | fastlime/       attention, gradients, G x I | LIME, exactly as lime, fast
    model/                       the model and its checkpoints:
        trained                  a profile's model: from the cache, downloaded, else trained
        train | store/           the training loop, resumable | the store of trained models
        model/store/: hub, checkpoint, folder | verify, manifest, cache
                                 the book's published models, the checkpoint's API (save, load,
                                 adopt), writing and reading its folder | checking its files,
                                 its format and manifest, where trained models are kept (the
                                 one lookup rule)
        train_state              what a training carries between epochs, saved and resumed
        textmodel | profiles | symbolic | network
                                 Pretrained (model + vocabulary) | training configurations |
                                 the model in SymPy | its float64 projections
        single_layer | multilayer
                                 the Section 2 classifier | the 6 x 6 reconstruction
        interface | devices | optim
                                 the model interface (ClassifierBase), ids, positions, predict |
                                 the one device parser | lazy AdamW (the training's optimiser)
        config                   each model's architecture, one frozen dataclass (its checks)
    words | data | text | limit_settings
                                 token <-> word scores | IMDb | tokenizer, vocabulary |
                                 LIME's settings and its limit's (one type each, from the
                                 command line to fastlime and the closed forms)
    validate | chapters/ | threads
                                 one validator per input | the chapters' helpers | thread limits
        chapters/: agreement | faithfulness | limitstudy | toymodels, plots | tables,
                   printforms | paper | prose, latex_tables | latex_maths, page
                                 the committed studies of chapters 9, 7 and 6 | chapter 5's toy
                                 classifiers, figures | tables for readers, print forms of
                                 outputs | the paper's numbers | numbers for the chapters' prose,
                                 a table's LaTeX | SymPy's broken over lines, the widths they fit
    store/ | native | budget | shading
                                 what is written, downloaded, recorded | the numba decorator |
                                 memory budgets | tokens shaded by weight (Figure 1, HTML, LaTeX)
        store/: results/ | reviews, files | download | provenance | repository
                                 the store of results (the studies' results folders) | IMDb
                                 parsed once, above atomic writes | bounded downloads | commit,
                                 version, host | the book's repository
        store/results/: folder, parts, runlog, layout
                                 the results folder (held, adopted, loaded), its parquet parts
                                 (verified), its run log, the names of its files
    progress                     the one progress bar
    errors | settings            the errors a user can fix | the session (profile, seed, sample
                                 sizes), a value the entry points resolve and pass on (the one
                                 reader of ATTNXAI_PROFILE and ATTNXAI_SEED)

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

from .data import load_imdb
from .explanation import Explanation, explain
from .model.store.checkpoint import load, save
from .model.interface import ClassifierBase
from .model.config import AttentionConfig
from .model.single_layer import AttentionClassifier, Internals
from .model.textmodel import Pretrained
from .model.trained import pretrained
from .settings import Session
from .text import Vocab, normalize_for_lime, tokenize

__version__ = "0.2.0"
__all__ = ["AttentionClassifier", "AttentionConfig", "ClassifierBase", "Explanation", "Internals",
           "Pretrained", "Session", "Vocab", "explain", "load", "load_imdb", "normalize_for_lime",
           "pretrained", "save",
           "tokenize", "__version__"]
