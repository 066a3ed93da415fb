"""Where the book's repository is: the one reader of _config.yml's ``repository.url``.

The chapters' launch cells install attnxai from :func:`configured_url` (through
:func:`attnxai.course.repository_url`); the trained models the site publishes are looked for at
the GitHub Pages site of :func:`book_repository` (:mod:`attnxai.model.store.hub`), which is, in order:

1. ``$ATTNXAI_REPOSITORY`` (``owner/name``, as the book's Sphinx extension reads it);
2. _config.yml's ``repository.url`` when attnxai runs from a source checkout (``make book``,
   Binder, a clone) and it names a repository (empty or the ``OWNER/REPOSITORY`` placeholder:
   none);
3. the git URL pip installed attnxai from (its ``direct_url.json``, PEP 610: what the launch
   cell's ``%pip install "attnxai @ git+URL"`` records on Colab).

Nothing here guesses a URL: with none of the three, there is no repository.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

__all__ = ["ENV_REPOSITORY", "PLACEHOLDER", "book_repository", "configured_url", "github_name",
           "installed_from", "names_repository", "pages_url"]

ENV_REPOSITORY = "ATTNXAI_REPOSITORY"
#: What _config.yml held before the book was published (it names no repository).
PLACEHOLDER = "OWNER/REPOSITORY"
_OWNER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]*/[A-Za-z0-9._-]+")
_GITHUB = re.compile(r"(?:git\+)?(?:https?://|ssh://git@|git@)(?:www\.)?github\.com[/:]"
                     r"(?P<name>[A-Za-z0-9][A-Za-z0-9-]*/[A-Za-z0-9._-]+?)(?:\.git)?/?")


def configured_url(root: str | os.PathLike = ".") -> str:
    """_config.yml's ``repository.url`` of the book at ``root``, without a trailing slash (""
    when it is missing or empty; the placeholder is returned as it is: :func:`names_repository`
    tells it apart)."""
    import yaml

    config = yaml.safe_load(Path(root, "_config.yml").read_text(encoding="utf-8")) or {}
    url = str((config.get("repository") or {}).get("url") or "").strip().rstrip("/")
    return url


def names_repository(url: str) -> bool:
    """Whether ``url`` (from :func:`configured_url`) names a repository: not empty and not the
    placeholder."""
    return bool(url) and PLACEHOLDER not in url


def github_name(url: str) -> str | None:
    """``owner/name`` of a GitHub repository URL (https, ssh or pip's ``git+``), else None."""
    m = _GITHUB.fullmatch(url.strip())
    return m.group("name") if m else None


def installed_from() -> str | None:
    """The VCS URL pip installed attnxai from (``direct_url.json`` of its distribution, PEP 610),
    or None (a wheel, an editable install of a folder, or not installed)."""
    from importlib.metadata import PackageNotFoundError, distribution

    try:
        text = distribution("attnxai").read_text("direct_url.json")
    except PackageNotFoundError:
        return None
    try:
        info = json.loads(text) if text else {}
    except ValueError:
        return None
    return str(info["url"]) if isinstance(info, dict) and "vcs_info" in info and "url" in info \
        else None


def book_repository(root: str | os.PathLike | None) -> tuple[str | None, str]:
    """The book's repository URL and where it was found (module docstring), or None and why
    there is none. ``root``: the source checkout attnxai runs from (None for an installed
    package). ``$ATTNXAI_REPOSITORY`` that is not ``owner/name`` raises ``ValueError``."""
    env = os.environ.get(ENV_REPOSITORY, "").strip()
    if env:
        if not _OWNER_NAME.fullmatch(env):
            raise ValueError(f"{ENV_REPOSITORY} must be owner/name (a GitHub repository), got "
                             f"{env!r}")
        return f"https://github.com/{env}", f"${ENV_REPOSITORY}"
    if root is not None and Path(root, "_config.yml").is_file():
        url = configured_url(root)
        if names_repository(url):
            return url, "_config.yml's repository.url"
        return None, ("this copy of the book names no repository (_config.yml's repository.url "
                      "is empty or the placeholder)")
    url = installed_from()
    if url:
        return url, "the URL attnxai was installed from"
    return None, "attnxai was not installed from a repository, and no repository is set"


def pages_url(repository: str) -> str | None:
    """The GitHub Pages site of a GitHub repository (``https://owner.github.io/name/``, or
    ``https://owner.github.io/`` for the repository ``owner.github.io``), else None."""
    name = github_name(repository)
    if name is None:
        return None
    owner, repo = name.split("/")
    host = f"{owner.lower()}.github.io"
    return f"https://{host}/" if repo.lower() == host else f"https://{host}/{repo}/"
