"""The model and its checkpoints.

Layers (each module imports only from those below it; ``pyproject.toml``'s contract)::

    trained                      a profile's model: from the cache, downloaded, else trained
    train | hub                  the training loop, resumable | the book's published models
    checkpoint                   the checkpoint folder: format, save, load, verification
    cache                        where trained models are kept: the one lookup rule
    textmodel | profiles | symbolic | network
                                 Pretrained (model + vocabulary) | training configurations |
                                 the model in SymPy | its float64 projections
    single_layer | multilayer    the Section 2 classifier | the 6 x 6 reconstruction
    interface | devices          the model interface (ClassifierBase) | the device parser
"""
