"""The explanation methods, one module per family, each with its algorithms' entry points (or a
thin call of the kernel that computes them), its settings dataclasses and its
:class:`~attnxai.methods.base.Method` entries (``METHODS``):

    attention   alpha-avg, alpha-max, alpha x s
    lime        LIME, LIME limit
    games       Shapley and Banzhaf values (delete, replace), Integrated Gradients
    gradients   G-avg, G-l1, G-l2, GxI, SmoothGrad
    baselines   random

:mod:`attnxai.registry` assembles them (explicitly, in that order) into
:data:`attnxai.registry.METHODS`, which everything else reads: :func:`attnxai.explain`, the
commands' ``--methods`` and ``--set``, the studies. **Adding a method** is one entry in the
``METHODS`` of its family's module (with its settings class and its ``compute``), and a test.
"""

from . import attention, baselines, games, gradients, lime

__all__ = ["attention", "baselines", "games", "gradients", "lime"]
