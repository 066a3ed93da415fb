"""What the package writes, downloads and records: four independent modules.

    files                        atomic writes, the writers' lock, the one way stored files open
    download                     downloading with every wait bounded and every byte counted
    provenance                   commit, version, host, load average: where a number came from
    repository                   where the book's repository is (``_config.yml``)
"""
