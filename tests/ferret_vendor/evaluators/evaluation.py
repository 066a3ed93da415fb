"""ferret 22935f8's ``EvaluationMetricOutput`` (``ferret/evaluators/evaluation.py``)."""

from dataclasses import dataclass

from . import BaseEvaluator


@dataclass
class EvaluationMetricOutput:
    """Output to store any metric result."""

    metric: BaseEvaluator
    value: float
