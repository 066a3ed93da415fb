"""What the package writes, downloads and records, and the store of results.

    results/                     the studies' results folders (parquet parts, _meta.json,
                                 _runs.jsonl); trained models are kept in attnxai.model.store
    reviews                      the parsed copy of IMDb's reviews that loads read instead of
                                 the archive
    files                        atomic writes, the writers' lock, the one way stored files open
    download                     downloading with every wait bounded and every byte counted
    provenance                   commit, version, host, load average: where a number came from
    repository                   where the book's repository is (``_config.yml``)

The last four are independent of each other; results/ uses files and provenance, reviews uses
files.
"""
