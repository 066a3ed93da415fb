"""ferret's faithfulness evaluators, vendored so that the tests run ferret's own code on the
book's model (tests/test_ferret_vendored.py); ferret itself cannot be installed beside the book
(ferret-xai pins numpy < 2, transformers, shap, captum, opencv, whisperx...).

Source: g8a9/ferret at commit 22935f8 (the commit attnxai.perturbation cites), MIT licence,
Copyright (c) 2022 Giuseppe Attanasio: see ``LICENSE`` in this folder (ferret's, unchanged).

Copied verbatim (byte for byte, ``git show 22935f8:ferret/...``):

* ``evaluators/faithfulness_measures.py`` (AOPC comprehensiveness and sufficiency, tau-LOO);
* ``evaluators/utils_from_soft_to_discrete.py`` (the rationales: ``argsort()[-k:][::-1]``);
* ``evaluators/perturbation.py`` (the leave-one-out documents);
* ``explainers/explanation.py`` (the Explanation dataclass).

Written here, because ferret's versions import its model hub (transformers, speech models):
``evaluators/__init__.py`` (``BaseEvaluator`` and ``EvaluationMetricFamily``: ferret's, less the
import of ``create_helper``; the evaluator is given a helper instead of a model and tokenizer),
``evaluators/evaluation.py`` (``EvaluationMetricOutput``, as ferret's) and ``helper.py`` (ferret's
``_tokenize`` / ``_forward`` / ``_postprocess_logits`` / tokenizer protocol around an attnxai
classifier: ``[CLS]`` words ``[SEP]``, ``[MASK]`` read as UNK).
"""
