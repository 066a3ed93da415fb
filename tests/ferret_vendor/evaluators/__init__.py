"""Evaluators API (ferret 22935f8's ``ferret/evaluators/__init__.py``, less its model hub:
``BaseEvaluator`` takes a ready helper; see ``tests/ferret_vendor/__init__.py``)."""

from abc import ABC, abstractmethod
from enum import Enum


class EvaluationMetricFamily(Enum):
    """Enum to represent the family of an EvaluationMetric"""

    FAITHFULNESS = "faithfulness"
    PLAUSIBILITY = "plausibility"


class BaseEvaluator(ABC):
    @property
    def tokenizer(self):
        return self.helper.tokenizer

    def __init__(self, helper):
        self.helper = helper

    def __call__(self, explanation):
        return self.compute_evaluation(explanation)

    @abstractmethod
    def compute_evaluation(self, explanation):
        pass
