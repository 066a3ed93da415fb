"""Teaching with the book: the chapters' launch cell, notebooks for Colab, student editions.

* :func:`start` is what the first cell of every chapter calls (after installing attnxai when it
  is missing, e.g. on Colab): it picks the trained model the chapter will use, says which, and
  returns the session (:class:`attnxai.settings.Session`: profile and seed) that the chapter
  holds as ``session`` and passes on. A profile named by ``ATTNXAI_PROFILE`` wins; otherwise the
  paper's model if it is in the cache or the book's published one can be downloaded (seconds),
  else the quick model (trained in about a minute), announced as such, so that a chapter
  launched on a fresh machine runs in minutes instead of training for ten.
* :func:`chapter_notebook` turns a chapter (jupytext MyST Markdown) into a Jupyter notebook without
  outputs: the ``notebooks/*.ipynb`` that Colab and the download menu open
  (``tests/book/test_notebooks_sync.py`` checks they match the ``.md``); ``student=True`` removes the
  solutions (:func:`strip_solutions_md`). ``python -m attnxai notebooks`` writes them.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from . import settings
from .store.files import atomic_write

# ---------------------------------------------------------------- the launch cell
#: The first code cell of every chapter when the book names its repository (``{url}``, see
#: :func:`repository_url`): it installs attnxai from there when it is missing (Colab).
LAUNCH_CELL = '''\
# Launch cell: installs attnxai if it is missing (Colab, a fresh Binder or laptop), then picks
# the trained model (the paper's if it is cached, else the quick one) and returns the session
# (profile, seed) that the chapter passes on. See "Launch and run".
try:
    import attnxai.course
except ImportError:
    %pip install --quiet "attnxai @ git+{url}"
    import attnxai.course
session = attnxai.course.start()'''
#: The launch cell of a book that names no repository: nothing to install from, so it says how
#: to install attnxai instead of trying a made-up address.
LAUNCH_CELL_LOCAL = '''\
# Launch cell: picks the trained model (the paper's if it is cached, else the quick one) and
# returns the session (profile, seed) that the chapter passes on. See "Launch and run". This
# copy of the book names no repository to install attnxai from.
try:
    import attnxai.course
except ImportError as exc:
    raise ImportError("attnxai is not installed: run `pip install -e .` in the book's folder, "
                      "then restart the kernel") from exc
session = attnxai.course.start()'''
LAUNCH_MARKER = "# Launch cell:"


def start(*, verbose: bool = True) -> settings.Session:
    """The session a chapter runs on (:class:`attnxai.settings.Session`: its profile and seed),
    said and returned; the chapter keeps it as ``session`` and passes it on
    (``attnxai.pretrained(session)``, ``session.sized(...)``). The entry point of a chapter: the one
    place a chapter's settings are read from the environment.

    The profile: the one ``ATTNXAI_PROFILE`` names, if set. Else "paper" if the paper's model
    (at the session's seed) is in the cache (``attnxai.data.cache_dir()``) or the book's published
    one can be downloaded (verified, :mod:`attnxai.model.store.hub`; it says where it came from),
    else "quick" (the message says why the download was not possible and how to turn it on). The
    seed: the one ``ATTNXAI_SEED`` names, else None (each profile's own). Nothing is trained
    here; the chapter's own ``attnxai.pretrained(session)`` trains the quick model if needed
    (about a minute on two cores).
    """
    from . import __version__
    from .model.store.checkpoint import origin
    from .model.trained import ModelNotCached, pretrained
    from .data import cache_dir

    explicit, seed = settings.chosen_profile(), settings.chosen_seed()
    if explicit is not None:
        session = settings.Session(explicit, seed)
        why = f"{settings.ENV_PROFILE}={explicit} is set"
    else:
        try:
            session = settings.Session("paper", seed)
            pre = pretrained(session, train_if_missing=False, progress=verbose)
            came = origin(pre.path)
            why = ("the paper's model is trained and cached" if came is None else
                   f"the book's paper model {pre.path.name}, downloaded from {came.get('url')} "
                   f"on {str(came.get('downloaded', '?'))[:10]} and verified; `python -m attnxai "
                   "info` shows its key and the sha256 of its files")
        except ModelNotCached as exc:
            session = settings.Session("quick", seed)
            why = ("no trained paper model in this cache and the book's was not downloaded "
                   f"({exc.reason}), so this session FALLS BACK TO THE QUICK MODEL (trained in "
                   "about a minute, small samples): its numbers differ from the book's. For the "
                   "paper's model run `python -m attnxai train --profile paper` (about 10 minutes "
                   "on two cores), then restart the kernel")
    if verbose:
        seeded = "" if seed is None else f", seed {seed} ({settings.ENV_SEED})"
        print(f"attnxai {__version__}: profile {session.profile!r}{seeded} ({why}).\n"
              f"cache: {shown_path(cache_dir())}")
    return session


def shown_path(path: str | os.PathLike) -> str:
    """``path`` as a page may show it, without the machine's own folders: relative to the working
    directory when it is below it or below its parent (``../.cache`` from a chapter's folder), else
    to the home folder (``~/.cache/attnxai``), else its last part (``…/cache``). A chapter's output
    is read on other machines (the site, a downloaded notebook), where the folders of the one that
    ran it mean nothing."""
    path, cwd, home = Path(path).resolve(), Path.cwd().resolve(), Path.home().resolve()
    if cwd.parent != Path(cwd.anchor) and path.is_relative_to(cwd.parent):
        return os.path.relpath(path, cwd)
    if path.is_relative_to(home) and home != Path(home.anchor):
        return "~/" + path.relative_to(home).as_posix()
    return "…/" + path.name


# ---------------------------------------------------------------- solutions
_FENCE_OPEN = re.compile(r"^(?P<fence>`{3,}|:{3,})\s*\{(?:solution(?P<gated>-start)?\}"
                         r"|only\}\s+instructor\b)")
_GATED_END = re.compile(r"^(?P<fence>`{3,}|:{3,})\s*\{solution-end\}")


def strip_solutions_md(text: str) -> str:
    """``text`` without its ``{solution}`` blocks (backtick or colon fences, any length), nor
    its ``{only} instructor`` blocks (text for teachers: where the solutions are).

    sphinx-exercise's gated form (``{solution-start}`` ... ``{solution-end}``) is removed too.
    """
    out: list[str] = []
    lines = text.splitlines(keepends=True)
    i = 0
    while i < len(lines):
        m = _FENCE_OPEN.match(lines[i])
        if not m:
            out.append(lines[i])
            i += 1
            continue
        fence = m.group("fence")
        if m.group("gated"):                        # up to the closing fence of {solution-end}
            while i < len(lines) and not _GATED_END.match(lines[i]):
                i += 1
            fence = _GATED_END.match(lines[i]).group("fence") if i < len(lines) else fence
        i += 1
        while i < len(lines) and lines[i].rstrip() != fence:
            i += 1
        i += 1                                      # the closing fence
        while i < len(lines) and not lines[i].strip() and (not out or not out[-1].strip()):
            i += 1                                  # one blank line is enough
    return "".join(out)


def strip_solutions_notebook(nb: dict[str, Any]) -> dict[str, Any]:
    """A copy of notebook ``nb`` (nbformat JSON) without solutions; emptied cells are dropped."""
    cells = []
    for cell in nb.get("cells", []):
        if cell.get("cell_type") == "markdown":
            src = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
            src = strip_solutions_md(src)
            if not src.strip():
                continue
            cell = {**cell, "source": src.splitlines(keepends=True)}
        cells.append(cell)
    return {**nb, "cells": cells}


# ---------------------------------------------------------------- notebooks
def macros_markdown(root: str | os.PathLike = ".") -> str:
    """A Markdown cell defining the book's MathJax macros (_config.yml), so that Jupyter and
    Colab typeset ``$\\Wk$`` and the like as the site does."""
    import yaml

    config = yaml.safe_load(Path(root, "_config.yml").read_text())
    macros = config["sphinx"]["config"]["mathjax3_config"]["tex"]["macros"]
    lines = []
    for name, body in macros.items():
        if isinstance(body, list):
            lines.append(f"\\newcommand{{\\{name}}}[{body[1]}]{{{body[0]}}}")
        else:
            lines.append(f"\\newcommand{{\\{name}}}{{{body}}}")
    return ("*The book's notation for Jupyter and Colab (this cell only defines maths macros).*\n"
            "$$\n" + "\n".join(lines) + "\n$$")


def chapter_notebook(md: str | os.PathLike, *, student: bool = False,
                     macros: str | None = None) -> dict[str, Any]:
    """The chapter ``md`` (jupytext MyST) as nbformat-4 JSON without outputs, with stable cell
    ids and only the metadata a notebook needs (kernel, language, and each cell's tags).
    ``macros`` (see :func:`macros_markdown`) becomes a Markdown cell after the title cell."""
    import jupytext

    nb = jupytext.read(md, fmt="md:myst")
    cells = []
    for i, cell in enumerate(nb.cells):
        meta = {k: v for k, v in cell.metadata.items() if k in ("tags", "mystnb")}
        c: dict[str, Any] = {"cell_type": cell.cell_type, "id": f"cell-{i:03d}",
                             "metadata": meta, "source": cell.source.splitlines(keepends=True)}
        if cell.cell_type == "code":
            c.update(execution_count=None, outputs=[])
        cells.append(c)
    if macros is not None:
        cells.insert(1, {"cell_type": "markdown", "id": "book-macros", "metadata": {},
                         "source": macros.splitlines(keepends=True)})
    out = {"cells": cells,
           "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python",
                                       "name": "python3"},
                        "language_info": {"name": "python"}},
           "nbformat": 4, "nbformat_minor": 5}
    if student:
        out = strip_solutions_notebook(out)
        out["cells"].insert(0, {"cell_type": "markdown", "id": "student-edition", "metadata": {},
                                "source": ["*Student edition: the exercises' solutions are "
                                           "not in this notebook.*"]})
    return out


def dumps(nb: dict[str, Any]) -> str:
    """The notebook as its file's text (the format Jupyter writes: indent 1, trailing newline)."""
    return json.dumps(nb, indent=1, ensure_ascii=False) + "\n"


def chapters(root: str | os.PathLike = ".") -> list[Path]:
    """The chapters: ``notebooks/*.md`` of the repository at ``root``, in order."""
    files = sorted(Path(root, "notebooks").glob("*.md"))
    if not files:
        raise FileNotFoundError(f"no chapters in {Path(root, 'notebooks').resolve()}: run this "
                                "from the repository's root or give --root")
    return files


def toc_chapters(root: str | os.PathLike = ".", toc: str | os.PathLike | None = None) -> list[Path]:
    """The book's chapters in the order of its table of contents (``_toc.yml`` of ``root``, or
    ``toc``): every file of a numbered part (front and back matter are not numbered) and every
    file under ``notebooks/``, with their sections. These are the pages that must follow the
    chapter conventions (README.md); a file listed but missing is returned too, so that a test
    reports it."""
    import yaml

    root = Path(root)
    data = yaml.safe_load(Path(toc if toc is not None else root / "_toc.yml").read_text())
    out: list[Path] = []

    def walk(entries, numbered):
        for entry in entries or []:
            name = entry.get("file")
            if name and (numbered or name.startswith("notebooks/")):
                path = root / name
                path = path if path.suffix else path.with_suffix(".md")
                if path not in out:
                    out.append(path)
            walk(entry.get("sections"), numbered)

    for part in data.get("parts", []):
        walk(part.get("chapters"), bool(part.get("numbered")))
    walk(data.get("chapters"), bool(data.get("defaults", {}).get("numbered")))
    return out


def opening_problems(md: str | os.PathLike) -> list[str]:
    """What is wrong with how chapter ``md`` opens (empty: nothing): its title, the learning
    objectives and a few lines of introduction, then the launch cell as the first code cell, with
    its input hidden, and the ``.ipynb`` beside it."""
    md = Path(md)
    if not md.is_file():
        return [f"{md} does not exist"]
    text = md.read_text()
    problems = []
    if launch_cell_source(text) is None:
        problems.append("the first code cell is not the launch cell (run `python -m attnxai "
                        "notebooks --launch-cells`)")
    start = text.find("```{code-cell}")
    head = text if start < 0 else text[:start]
    body = head.split("\n---\n", 1)[1] if head.startswith("---\n") else head
    if len(re.findall(r"^# \S", body, re.MULTILINE)) != 1:
        problems.append("one title (# ...) must come before the launch cell")
    if re.search(r"^#{2,} ", body, re.MULTILINE):
        problems.append("a section starts before the launch cell")
    if not re.search(r"^:{3,}\{admonition\} Learning objectives", body, re.MULTILINE):
        problems.append("no learning objectives before the launch cell")
    if start >= 0 and not text[start:].startswith("```{code-cell} ipython3\n:tags: [hide-input]\n"):
        problems.append("the launch cell is not tagged hide-input")
    if not md.with_suffix(".ipynb").is_file():
        problems.append(f"no {md.stem}.ipynb beside it (run `python -m attnxai notebooks`)")
    return problems


def launched(root: str | os.PathLike = ".") -> list[Path]:
    """The chapters whose first code cell is the launch cell (they get an ``.ipynb``)."""
    return [md for md in chapters(root) if launch_cell_source(md.read_text()) is not None]


def write_notebooks(out: str | os.PathLike | None = None, *, root: str | os.PathLike = ".",
                    student: bool = False) -> list[Path]:
    """Write one ``.ipynb`` per chapter into ``out``; without ``out``, beside each chapter that
    has a launch cell (the notebooks Colab opens). ``student``: without solutions."""
    written, macros = [], macros_markdown(root)
    for md in (chapters(root) if out is not None else launched(root)):
        folder = Path(out) if out is not None else md.parent
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / (md.stem + ".ipynb")
        text = dumps(chapter_notebook(md, student=student, macros=macros))
        if not path.is_file() or path.read_text() != text:
            atomic_write(path, text)
        written.append(path)
    return written


def make_student_tree(root: str | os.PathLike = ".") -> list[Path]:
    """Turn the repository at ``root`` into the student edition, in place: every chapter's
    ``.md`` without its solutions and its ``.ipynb`` the student notebook. The deploy workflow
    runs it on its own checkout and pushes the result to the branch that the student site's
    Binder and Colab buttons open (book/_ext/attnxai_book.py, ``STUDENT_BRANCH``); never run it
    on a working copy you mean to keep."""
    changed = []
    for md in launched(root):
        md.write_text(strip_solutions_md(md.read_text()))
        changed.append(md)
    changed += write_notebooks(root=root, student=True)
    return changed


def stale_notebooks(root: str | os.PathLike = ".") -> list[str]:
    """Problems with the ``.ipynb`` beside the chapters: missing for a chapter with a launch cell
    or listed in the table of contents (:func:`toc_chapters`), or different from what its ``.md``
    gives."""
    stale, macros = [], macros_markdown(root)
    in_toc = {p.resolve() for p in toc_chapters(root)}
    for md in chapters(root):
        path = md.with_suffix(".ipynb")
        if not path.is_file():
            if launch_cell_source(md.read_text()) is not None or md.resolve() in in_toc:
                stale.append(f"{path}: missing")
        elif path.read_text() != dumps(chapter_notebook(md, macros=macros)):
            stale.append(f"{path}: differs from {md.name}")
    return stale


# ---------------------------------------------------------------- the launch cell in the chapters
_CODE_CELL = re.compile(r"^```\{code-cell\}[^\n]*\n(?:(?::[^\n]*\n)+\n?)?(?P<body>.*?)^```[ \t]*\n",
                        re.MULTILINE | re.DOTALL)


def repository_url(root: str | os.PathLike = ".") -> str:
    """_config.yml's ``repository.url`` (the one place the book's repository is set; read by
    :func:`attnxai.store.repository.configured_url`, which the model downloads use too); "" while the
    book names none (empty, or the old ``OWNER/REPOSITORY`` placeholder)."""
    from .store.repository import configured_url, names_repository

    url = configured_url(root)
    return url if names_repository(url) else ""


def launch_cell(url: str = "") -> str:
    """The launch cell's code: installing attnxai from the repository ``url``, or, without one,
    saying how to install it."""
    return LAUNCH_CELL.format(url=url) if url else LAUNCH_CELL_LOCAL


def launch_cell_md(url: str = "") -> str:
    """The launch cell as MyST Markdown (input hidden on the site, output shown)."""
    return f"```{{code-cell}} ipython3\n:tags: [hide-input]\n\n{launch_cell(url)}\n```\n"


def launch_cell_source(md_text: str) -> str | None:
    """The body of the chapter's first code cell if it is a launch cell, else None."""
    m = _CODE_CELL.search(md_text)
    if m is None or not m.group("body").startswith(LAUNCH_MARKER):
        return None
    return m.group("body").rstrip("\n")


def with_launch_cell(md_text: str, url: str = "", *, name: str = "the chapter") -> str:
    """``md_text`` (a chapter) whose first code cell is the launch cell for ``url`` (inserted, or
    the existing launch cell updated)."""
    m = _CODE_CELL.search(md_text)
    if m is None:
        raise ValueError(f"{name} has no code cell")
    cell = launch_cell_md(url)
    if m.group("body").startswith(LAUNCH_MARKER):
        return md_text[:m.start()] + cell + md_text[m.end():]
    return md_text[:m.start()] + cell + "\n" + md_text[m.start():]


def set_launch_cell(md: str | os.PathLike, url: str = "") -> bool:
    """Make the chapter's first code cell the launch cell for ``url`` (insert or update it);
    True if the file changed."""
    path = Path(md)
    text = path.read_text()
    new = with_launch_cell(text, url, name=str(path))
    if new != text:
        atomic_write(path, new)
    return new != text
