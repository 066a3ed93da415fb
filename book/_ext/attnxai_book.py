"""The book's own Sphinx extension (loaded from _config.yml, ``sphinx.local_extensions``).

* **Repository.** _config.yml's ``repository.url`` is the one place the book's repository is set
  (empty until the book is published); ``$ATTNXAI_REPOSITORY`` or, in GitHub Actions,
  ``$GITHUB_REPOSITORY`` (``owner/name``) replaces it, so a fork's deploy workflow publishes a
  site whose buttons point to the fork. With a repository: the repository button, the footer
  link, Binder and Colab buttons on the chapters (the pages with an ``.ipynb`` beside their
  ``.md``, which Colab opens), and launch cells that install attnxai from it. With none, none
  of these: no button, no link and no launch cell points to a made-up address, and the pages'
  substitutions (``{{ repository }}``, ``{{ clone }}``, ``{{ launch_note }}``,
  ``{{ cite_repository }}``) say so in words.
* **Execution caches.** The quick profile's executed chapters go to ``.jupyter_cache-quick``,
  never into the paper profile's ``.jupyter_cache`` (jupyter-cache does not know the profile).
* **Editions.** ``ATTNXAI_EDITION=student`` builds the site without solutions (sphinx-exercise's
  ``hide_solutions``) and strips them from the downloadable ``_sources`` too; it reuses the
  execution cache of the instructor build of the same profile, so nothing runs twice.
* **Footer** (``html.extra_footer`` of _config.yml): ``{licence}`` and ``{repository}`` become the
  licence page (relative to each page) and the repository URL.
* **Bibliography style** ``attnxai``: author-year labels, sorted by author and year, with DOI,
  arXiv and URL links (pybtex's ``unsrt`` formatting).
* **LaTeX/PDF**: the MathJax macros of _config.yml become ``\\newcommand``s in the preamble, so
  the PDF typesets the same maths as the site.
* **Weight**: the theme's JavaScript source maps (``*.map``) are not shipped.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from pathlib import Path

from pybtex.plugin import register_plugin
from pybtex.style.formatting.unsrt import Style as UnsrtStyle
from pybtex.style.labels import BaseLabelStyle

ROOT = Path(__file__).resolve().parents[2]
ENV_EDITION = "ATTNXAI_EDITION"
ENV_REPOSITORY = ("ATTNXAI_REPOSITORY", "GITHUB_REPOSITORY")
_OWNER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9-]*/[A-Za-z0-9._-]+$")


def edition() -> str:
    ed = os.environ.get(ENV_EDITION, "instructor")
    if ed not in ("instructor", "student"):
        raise ValueError(f"{ENV_EDITION} must be 'instructor' or 'student', got {ed!r}")
    return ed


def repository_override() -> str | None:
    """``https://github.com/owner/name`` from the environment, or None."""
    for var in ENV_REPOSITORY:
        value = os.environ.get(var, "").strip()
        if value:
            if not _OWNER_NAME.match(value):
                raise ValueError(f"{var} must be owner/name, got {value!r}")
            return f"https://github.com/{value}"
    return None


# ---------------------------------------------------------------- bibliography
class AuthorYearLabels(BaseLabelStyle):
    """``Lopardo et al., 2024``: the labels the text's author-year citations use."""

    def format_labels(self, sorted_entries):
        for entry in sorted_entries:
            people = entry.persons.get("author") or entry.persons.get("editor") or []
            last = [" ".join(p.last_names) for p in people]
            last = [re.sub(r"[{}]", "", n) for n in last]
            if len(last) == 0:
                who = entry.key
            elif len(last) == 1:
                who = last[0]
            elif len(last) == 2:
                who = f"{last[0]} and {last[1]}"
            else:
                who = f"{last[0]} et al."
            yield f"{who}, {entry.fields.get('year', 'n.d.')}"


class AttnxaiStyle(UnsrtStyle):
    default_label_style = "attnxai_author_year"
    default_sorting_style = "author_year_title"


register_plugin("pybtex.style.labels", "attnxai_author_year", AuthorYearLabels)
register_plugin("pybtex.style.formatting", "attnxai", AttnxaiStyle)


# ---------------------------------------------------------------- configuration
def repository(config) -> str:
    """The repository this build names: the environment's, else _config.yml's; "" for none."""
    return repository_override() or str(config.html_theme_options.get("repository_url") or "").strip()


def _repository_options(config) -> None:
    """Buttons, launch buttons and substitutions for the build's repository, or for none."""
    url = repository(config).rstrip("/")
    opts = config.html_theme_options
    opts["repository_url"] = url
    opts["use_repository_button"] = bool(url)
    if not url:
        # no launch service can open a repository that is not named (attnxai_book takes over
        # the theme's copy of the executed notebook for the download menu: see _page_context)
        opts["launch_buttons"] = {k: v for k, v in (opts.get("launch_buttons") or {}).items()
                                  if k not in ("binderhub_url", "colab_url", "jupyterhub_url",
                                               "deepnote_url", "jupyterlite_url")}
    name = url.removeprefix("https://github.com/")
    subs = dict(config.myst_substitutions or {})
    subs.setdefault("repository_url", url)
    subs.setdefault("repository", f"[{name}]({url})" if url else "the book's source")
    subs.setdefault("clone", f"clone [{name}]({url})" if url else "take a copy of the book's source")
    subs.setdefault("clone_capital", subs["clone"][0].upper() + subs["clone"][1:])
    subs.setdefault("cite_repository", f"the repository's URL ({url})" if url
                    else "where you found the book")
    subs.setdefault("launch_note", "" if url else (
        "*This build of the book names no repository (`repository.url` in `_config.yml` is empty), "
        "so its pages have no launch buttons and its launch cells install nothing: install "
        "`attnxai` from the book's folder (`pip install -e .`), as below.*"))
    config.myst_substitutions = subs


def _config_inited(app, config):
    _repository_options(config)
    # One search field, the sidebar's: pydata-sphinx-theme >= 0.16 adds another in a top bar that
    # holds nothing else (sphinx-book-theme has its own header with a search button).
    config.html_theme_options.setdefault("navbar_persistent", [])
    # jupyter-cache keys a notebook on its code cells only, so the paper and quick profiles
    # (same code, different outputs) must never share a cache: the quick profile's is
    # .jupyter_cache-quick beside the default one.
    quick = os.environ.get("ATTNXAI_PROFILE", "paper") == "quick"
    cache = ".jupyter_cache-quick" if quick else ".jupyter_cache"
    if edition() == "student":
        config.hide_solutions = True
        # Reuse the executed notebooks of the instructor build of the same profile (`make book`
        # for paper, the test build for quick).
        build = ROOT / "_build" / "test" / "_build" if quick else ROOT / "_build"
        config.nb_execution_cache_path = str(build / cache)
    elif quick and not config.nb_execution_cache_path:
        config.nb_execution_cache_path = str(Path(app.outdir).parent / cache)
    # The MathJax macros, for LaTeX.
    macros = (config.mathjax3_config or {}).get("tex", {}).get("macros", {})
    lines = []
    for name, body in macros.items():
        if isinstance(body, list):
            body, nargs = body[0], body[1]
            lines.append(f"\\providecommand{{\\{name}}}[{nargs}]{{{body}}}")
        else:
            lines.append(f"\\providecommand{{\\{name}}}{{{body}}}")
    # \E and \R may exist already: \renewcommand after \providecommand makes ours win.
    lines += [line.replace("\\providecommand", "\\renewcommand") for line in lines]
    latex = dict(config.latex_elements or {})
    latex["preamble"] = latex.get("preamble", "") + "\n" + "\n".join(lines) + "\n"
    config.latex_elements = latex


def _footer(app, context) -> None:
    footer = context.get("theme_extra_footer")
    if footer and "{" in footer:
        url = app.config.html_theme_options.get("repository_url", "")
        link = f'; <a href="{url}">repository</a>' if url else ""
        context["theme_extra_footer"] = footer.replace("{licence}", context["pathto"]("book/licence")) \
            .replace("{repository_link}", link)


def _is_chapter_notebook(app, pagename) -> bool:
    """A page Binder and Colab can open: its source has an ``.ipynb`` beside it."""
    return Path(app.env.doc2path(pagename)).with_suffix(".ipynb").is_file()


def _notebook_download(app, pagename, context) -> None:
    """The executed notebook in the download menu when the theme's launch buttons, which
    otherwise copy it there, are off (no repository): the theme's own copy step."""
    if context.get("ipynb_source") or "kernelspec" not in app.env.metadata.get(pagename, {}):
        return
    executed = Path(app.outdir).parent / "jupyter_execute" / f"{pagename}.ipynb"
    if executed.is_file():
        target = Path(app.outdir) / "_sources" / f"{pagename}.ipynb"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(executed, target)
        context["ipynb_source"] = f"{pagename}.ipynb"


def _mathjax_only_with_maths(app, pagename, context) -> None:
    """MathJax (about 1 MB) only on pages with maths of their own: Sphinx also loads it on a page
    whose table of contents includes pages with maths (the home page)."""
    if app.builder.format != "html" or app.env.get_domain("math").data["has_equations"].get(pagename):
        return
    mathjax = app.config.mathjax_path
    scripts = context.get("script_files")
    if scripts is None:
        return
    scripts[:] = [js for js in scripts
                  if not (str(getattr(js, "filename", "") or "").endswith(mathjax)
                          or str(getattr(js, "attributes", {}).get("body", "")).startswith("window.MathJax"))]


def _page_context(app, pagename, templatename, context, doctree):
    """Before the theme's buttons (priority 500 < its 501): the footer, the notebook download when
    there are no launch buttons, MathJax only where there is maths."""
    _footer(app, context)
    if not app.config.html_theme_options.get("repository_url"):
        _notebook_download(app, pagename, context)
    _mathjax_only_with_maths(app, pagename, context)


def _page_buttons(app, pagename, templatename, context, doctree):
    """After the theme's buttons: launch buttons only on the chapters (Colab cannot open the
    ``.md`` of a page without an ``.ipynb``)."""
    if not _is_chapter_notebook(app, pagename):
        context["header_buttons"] = [b for b in context.get("header_buttons", [])
                                     if b.get("label") != "launch-buttons"]


def _source_read(app, docname, source):
    """A chapter's launch cell for the build's repository (the committed one is for
    _config.yml's, ``python -m attnxai notebooks --launch-cells``): so that a build for a fork,
    or for no repository, shows a launch cell that installs from where the buttons point."""
    if not _is_chapter_notebook(app, docname):
        return
    sys.path.insert(0, str(ROOT / "src"))
    from attnxai.course import LAUNCH_MARKER, with_launch_cell

    if LAUNCH_MARKER in source[0]:
        source[0] = with_launch_cell(source[0], app.config.html_theme_options["repository_url"],
                                     name=docname)


# ---------------------------------------------------------------- after the build
_SOURCEMAP = re.compile(r"\n?//# sourceMappingURL=\S+\.map\s*$|/\*# sourceMappingURL=\S+\.map \*/",
                        re.MULTILINE)


def _drop_source_maps(outdir: Path) -> None:
    for path in list(outdir.rglob("*.map")):
        path.unlink()
    for path in list(outdir.rglob("*.js")) + list(outdir.rglob("*.css")):
        text = path.read_text(encoding="utf-8", errors="surrogateescape")
        if "sourceMappingURL" in text:
            path.write_text(_SOURCEMAP.sub("", text), encoding="utf-8", errors="surrogateescape")


def _strip_student_sources(outdir: Path) -> None:
    sys.path.insert(0, str(ROOT / "src"))
    from attnxai.course import strip_solutions_md, strip_solutions_notebook

    for path in (outdir / "_sources").rglob("*"):
        if path.suffix == ".md":
            path.write_text(strip_solutions_md(path.read_text()))
        elif path.suffix == ".ipynb":
            nb = json.loads(path.read_text())
            path.write_text(json.dumps(strip_solutions_notebook(nb), indent=1))


def _build_finished(app, exception):
    if exception is not None or app.builder.format != "html":
        return
    outdir = Path(app.outdir)
    _drop_source_maps(outdir)
    if edition() == "student":
        _strip_student_sources(outdir)


def setup(app):
    app.connect("config-inited", _config_inited, priority=900)
    app.connect("source-read", _source_read)
    app.connect("html-page-context", _page_context, priority=500)
    app.connect("html-page-context", _page_buttons, priority=600)
    app.connect("build-finished", _build_finished)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
