"""Where the committed corpus summaries (``book/data/``) are found, however the book is started."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["book_data"]


def book_data(name: str, start: str | os.PathLike | None = None) -> Path:
    """``book/data/<name>``: a committed corpus summary a chapter reads, found from ``start``
    (default: the working directory, where a chapter executes) or its parents, else from the source
    checkout this package is installed from."""
    if not isinstance(name, str) or not name or "/" in name or "\\" in name or ".." in name:
        raise ValueError(f"name must be a file name in book/data, got {name!r}")
    here = Path(start) if start is not None else Path.cwd()
    roots = [here, *here.parents, Path(__file__).resolve().parents[3]]
    for root in roots:
        path = root / "book" / "data" / name
        if path.is_file():
            return path
    raise FileNotFoundError(f"book/data/{name} not found from {here} or the source checkout "
                            "(the scripts in book/data make the summaries)")
