"""Where trained models are kept: the store of models (the studies' results are kept in
:mod:`attnxai.store.results`).

    hub                  the book's published models: publish, download, verify
    checkpoint           a checkpoint folder's API: save, load, adopt, in memory, describe
    folder | verify      writing and reading the folder | checking its files, building the model
    manifest             the format: files, manifest, model classes, CheckpointError
    cache                where trained models are kept: the one lookup rule
"""
