"""The model and its checkpoints: the classifiers and their interface, the training
configurations, the training loop, the checkpoint folder, the cache and the published models, and
:func:`~attnxai.model.trained.pretrained`, which finds a profile's model among them.

Its modules and their order are in the layer diagram of :mod:`attnxai` (``attnxai/__init__.py``)
and in the contract ``attnxai.model layers`` of ``pyproject.toml``.
"""
