"""Closed forms from the paper (and beyond it), each checked against the package's explainers.

Submodules: :mod:`~attnxai.theory.gradient` (Section 4) and the LIME limits (Section 5).
"""
