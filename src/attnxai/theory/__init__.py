"""Closed forms from the paper (and beyond it), each checked against the package's explainers.

Submodules: :mod:`~attnxai.theory.gradient_theorem` (Section 4; ``theory.gradient(model, ids)``) and the LIME limits (Section 5).
"""

from . import gradient_theorem  # noqa: E402,F401  Section 4: the gradient theorem
from .gradient_theorem import gradient, gradient_terms, gradient_x_input  # noqa: E402,F401
from . import lime_text  # noqa: E402,F401  Section 5: LIME's large-sample limit for text
from . import lime_attention  # noqa: E402,F401  Section 5: LIME on the attention classifier
from .lime_attention import lime_limit, lime_limit_heads, lime_paper  # noqa: E402,F401
