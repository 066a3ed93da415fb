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
* **Execution.** ``ATTNXAI_EXECUTE=off`` builds without running any chapter (a build that checks
  only links, buttons and launch cells); ``book/_ext/attnxai_execute.py`` runs the chapters to be
  executed in parallel before Sphinx reads them.
* **Execution caches.** One per profile and seed (:func:`execution_cache_name`): the quick
  profile's executed chapters go to ``.jupyter_cache-quick``, those of a model of another seed
  (``ATTNXAI_SEED=43``) to ``.jupyter_cache-seed43`` or ``.jupyter_cache-quick-seed43``, never
  into the paper profile's ``.jupyter_cache`` (jupyter-cache keys a notebook on its code alone,
  and knows neither the profile nor the weights).
* **Editions.** ``ATTNXAI_EDITION=student`` builds the site (or the PDF) without solutions
  (sphinx-exercise's ``hide_solutions``) and strips them from the downloadable ``_sources`` too;
  it reuses the execution cache of the instructor build of the same profile, so nothing runs
  twice. The instructor's PDF gathers the solutions at the end of each chapter, linked both ways
  with their exercises (``_LatexSolutions``). Its
  launch buttons open the branch ``student`` (chapters without solutions, pushed by the deploy
  workflow), every page has a banner that names the edition, and the edition is a Sphinx tag
  (``{only} student`` / ``{only} instructor``); a build that names a repository has the tag
  ``repository`` (``{only} repository``: text about its launch buttons).
* **Footer** (``html.extra_footer`` of _config.yml): ``{licence}`` and ``{repository}`` become the
  licence page (relative to each page) and the repository URL.
* **Bibliography style** ``attnxai``: author-year labels, sorted by author and year, with DOI,
  arXiv and URL links (pybtex's ``unsrt`` formatting).
* **LaTeX/PDF**: the MathJax macros of _config.yml become ``\\newcommand``s in the preamble, so
  the PDF typesets the same maths as the site; the launch cell is left out of print and a
  ``hide-input`` cell prints only its output (``_LatexCells``); chapters, theorems, exercises and figures are
  numbered as on the site (front and back matter unnumbered); a box never leaves its title at
  a page foot, a proof box is titled; cell outputs' LaTeX tables go in as tables and Markdown
  tables get column widths that fit (LATEX_PREAMBLE, _latex_transforms); the proof index names
  its entries ("Theorem 3.1 (title)").
* **Weight**: the theme's JavaScript source maps (``*.map``) are not shipped.
* **Explorer** (``book/explore.md``, compact versions in chapters): a page whose HTML holds an
  explorer (``<div class="attnxai-explorer">``) gets its script and styles
  (``book/static/explorer``), and once the site is built the tables it computes from are exported
  from the cached model of the book's profile into ``_static/explorer`` (``attnxai.explorer.export``;
  no page with an explorer, as in the student edition: nothing exported). The substitution
  ``{{ explorer_site }}`` says where the explorer is, for the pages that leave it out (the PDF,
  the student edition).
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
ENV_EXECUTE = "ATTNXAI_EXECUTE"
#: The branch that holds the student edition's chapters (no solutions): the deploy workflow
#: pushes it (`python -m attnxai notebooks --student --in-place`), the student site's Binder
#: and Colab buttons open it.
STUDENT_BRANCH = "student"
STUDENT_BANNER = ("Student edition: the exercises come without their solutions, and the Binder "
                  "and Colab buttons open notebooks without them.")
ENV_REPOSITORY = ("ATTNXAI_REPOSITORY", "GITHUB_REPOSITORY")
_OWNER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9-]*/[A-Za-z0-9._-]+$")


def execution_cache_name(environ=None) -> str:
    """The folder name of the execution cache for the profile and seed ``environ`` names
    (``ATTNXAI_PROFILE``, ``ATTNXAI_SEED``; default ``os.environ``): ``.jupyter_cache`` for the
    paper profile on its own seed, ``-quick`` and ``-seed<N>`` appended otherwise. The same code
    run on other weights prints other numbers, so it must not find the outputs of another model;
    a seed that is not a whole number is refused (``ValueError`` naming ``ATTNXAI_SEED``)."""
    from attnxai.settings import parse_seed

    environ = os.environ if environ is None else environ
    name = ".jupyter_cache"
    if environ.get("ATTNXAI_PROFILE", "paper") == "quick":
        name += "-quick"
    seed = parse_seed(environ.get("ATTNXAI_SEED"))
    return name if seed is None else f"{name}-seed{seed}"


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
    sys.path.insert(0, str(ROOT / "src"))
    from attnxai.store.repository import pages_url

    site = pages_url(url) if url else None
    subs.setdefault("explorer_site", f"<{site}book/explore.html>" if site else
                    "the *Explore* page of the book's site (`book/explore.html`, which `make book` "
                    "builds)")
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
    # jupyter-cache keys a notebook on its code cells only, so two profiles or seeds (same code,
    # different outputs) must never share a cache: execution_cache_name's beside the default one.
    # A build that only checks pages' links, buttons and launch cells (tests/booksite.py's
    # repository builds) runs no chapter: ATTNXAI_EXECUTE=off.
    if os.environ.get(ENV_EXECUTE, "").strip().lower() == "off":
        config.nb_execution_mode = "off"
    quick = os.environ.get("ATTNXAI_PROFILE", "paper") == "quick"
    cache = execution_cache_name()
    if edition() == "student":
        config.hide_solutions = True
        # Reuse the executed notebooks of the instructor build of the same profile (`make book`
        # for paper, the test build for quick).
        # (or those of $ATTNXAI_EXECUTION_CACHE: tests/check_pdf.sh's instructor PDF)
        build = ROOT / "_build" / "test" / "_build" if quick else ROOT / "_build"
        config.nb_execution_cache_path = os.environ.get("ATTNXAI_EXECUTION_CACHE") or str(build / cache)
    elif cache != ".jupyter_cache" and not config.nb_execution_cache_path:
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


_MATH_CLASS = re.compile(r'class="[^"]*\bmath\b')
#: The book's additions to MathJax's line breaking (book/static), loaded only with MathJax.
MATHJAX_SETUP = "attnxai-mathjax.js"


def _mathjax_only_with_maths(app, pagename, context) -> None:
    """MathJax (about 1 MB) only on pages that show maths: Sphinx also loads it on a page whose
    table of contents includes pages with maths (the home page), and on a page whose outputs carry
    a LaTeX form that the site does not show (a table's, attnxai.chapters.printforms). So the rendered body
    decides: Sphinx marks every formula it shows with the class ``math``."""
    if app.builder.format != "html" or _MATH_CLASS.search(context.get("body") or ""):
        return
    mathjax = app.config.mathjax_path
    scripts = context.get("script_files")
    if scripts is None:
        return
    scripts[:] = [js for js in scripts
                  if not (str(getattr(js, "filename", "") or "").endswith((mathjax, MATHJAX_SETUP))
                          or str(getattr(js, "attributes", {}).get("body", "")).startswith("window.MathJax"))]


def _page_context(app, pagename, templatename, context, doctree):
    """Before the theme's buttons (priority 500 < its 501): the footer, the notebook download when
    there are no launch buttons, MathJax only where there is maths."""
    _footer(app, context)
    if not app.config.html_theme_options.get("repository_url"):
        _notebook_download(app, pagename, context)
    _mathjax_only_with_maths(app, pagename, context)


EXPLORER = re.compile(r'<div class="attnxai-explorer"')


def _explorer_assets(app, pagename, templatename, context, doctree) -> None:
    """The explorer's script and styles, on the pages that hold one (and only there)."""
    if app.builder.format == "html" and EXPLORER.search(context.get("body") or ""):
        app.add_js_file("explorer/ui.js", type="module")
        app.add_css_file("explorer/explorer.css")


def _export_explorer(outdir: Path) -> None:
    """The explorer's tables from the cached model of the book's profile (the model the chapters
    ran), when a page of the site holds an explorer."""
    if not any(EXPLORER.search(p.read_text(encoding="utf-8", errors="replace"))
               for p in outdir.rglob("*.html") if "_static" not in p.parts):
        return
    sys.path.insert(0, str(ROOT / "src"))
    from attnxai import explorer, pretrained
    from attnxai.settings import from_environment

    # the build is an entry point: its session is the one the environment names (profile, seed)
    meta = explorer.export(pretrained(from_environment(), progress=False),
                           outdir / "_static" / "explorer")
    print(f"attnxai: the explorer's tables for {meta['model']['model']} "
          f"({meta['binary']['bytes'] / 1e6:.2f} MB) in _static/explorer")


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
    _export_explorer(outdir)
    if edition() == "student":
        _strip_student_sources(outdir)


# ---------------------------------------------------------------- proof index
def _proof_domain():
    """sphinx-proof's domain with an index a reader can use: entries named "Theorem 3.1
    (title)", grouped by chapter, in the order of the book (sphinx-proof lists raw labels
    with file paths). Registered in place of sphinx-proof's (``add_domain(override=True)``)."""
    from collections import defaultdict

    from docutils import nodes
    from sphinx.domains import IndexEntry
    from sphinx_proof.domain import ProofDomain, ProofIndex

    class ReadableProofIndex(ProofIndex):
        def generate(self, docnames=None):
            env = self.domain.env
            proofs = getattr(env, "proof_list", {})
            titles, order = {}, {}
            for docname in sorted({info["docname"] for info in proofs.values()}):
                for node in env.get_doctree(docname).findall(nodes.Element):
                    if "realtype" in node.attributes and node.get("label") in proofs:
                        head = node.children[0] if node.children else None
                        # sphinx-proof's title already reads " (title)"
                        titles[node["label"]] = head.astext().strip() if isinstance(
                            head, nodes.title) else ""
                        order[node["label"]] = len(order)
            groups = defaultdict(list)
            for label, info in proofs.items():
                doc = info["docname"]
                if docnames and doc not in docnames:
                    continue
                number = () if info["nonumber"] else \
                    env.toc_fignumbers.get(doc, {}).get(info["countertype"], {}).get(label, ())
                name = " ".join(filter(None, (info["realtype"].title(), ".".join(map(str, number)),
                                              titles.get(label))))
                chapter = env.toc_secnumbers.get(doc, {}).get("", ())
                title = env.titles[doc].astext()
                group = (chapter or (10**6,), f"{chapter[0]} {title}" if chapter else title)
                groups[group].append((order.get(label, 10**6), name,       # as in the book
                                      IndexEntry(name, 0, doc, label, "", "", "")))
            content = [(heading, [entry for *_, entry in sorted(entries)])
                       for (_, heading), entries in sorted(groups.items())]
            return content, True

    class ReadableProofDomain(ProofDomain):
        indices = [ReadableProofIndex]

    return ReadableProofDomain


# ---------------------------------------------------------------- editions
def _edition_config(app, config):
    """The edition as a Sphinx tag (``{only} student`` in a page), and for the student
    edition: launch buttons on the student branch and a banner on every page."""
    app.tags.add(edition())
    if repository(config):
        # pages may say what only a build with launch buttons has: {only} repository
        app.tags.add("repository")
    if edition() == "student":
        options = dict(config.html_theme_options or {})
        options["repository_branch"] = STUDENT_BRANCH
        options["announcement"] = STUDENT_BANNER
        config.html_theme_options = options


# ---------------------------------------------------------------- LaTeX / PDF
#: Preamble of the PDF (``make pdf``), beside the MathJax macros:
#: * the text block, typed into the log, where tests/check_pdf.py reads the margins;
#: * no box title alone at a page foot: a box starts on a new page unless nine lines fit (with
#:   six, the title bar of a solution fitted at a page foot and its text went to the next page);
#: * images at most 0.8 of the text height, so that a figure's caption fits on its page;
#: * \setminus drawn with a glyph the maths font has;
#: * front and back matter, and the parts, unnumbered: ``\attnxaiChapter{N}`` (before each
#:   numbered chapter) sets LaTeX's counter to the site's number, ``\attnxaiUnnumbered`` (before
#:   the others) switches numbering off (fancyhdr's running heads follow secnumdepth).
LATEX_PREAMBLE = r"""
\makeatletter
\AtBeginDocument{\typeout{attnxai-textblock:
  left=\the\dimexpr 1in+\hoffset+\oddsidemargin\relax,
  width=\the\textwidth,
  top=\the\dimexpr 1in+\voffset+\topmargin\relax,
  bodytop=\the\dimexpr 1in+\voffset+\topmargin+\headheight+\headsep\relax,
  bodybottom=\the\dimexpr 1in+\voffset+\topmargin+\headheight+\headsep+\textheight\relax,
  bottom=\the\dimexpr 1in+\voffset+\topmargin+\headheight+\headsep+\textheight+\footskip\relax,
  paperwidth=\the\paperwidth, paperheight=\the\paperheight}}
\AtBeginDocument{\spx@image@maxheight=0.8\textheight}% a tall figure leaves room for its caption
\renewcommand{\sphinxstyleindexentry}[1]{#1}% the proof index names theorems, not code
% Latin Modern Math has no U+29F5, unicode-math's \setminus: U+2216, as MathJax draws it
\AtBeginDocument{\renewcommand{\setminus}{\smallsetminus}}
\let\attnxai@admonition\sphinxadmonition
\def\sphinxadmonition{\needspace{9\baselineskip}\attnxai@admonition}
\newcommand{\attnxaiChapter}[1]{\setcounter{secnumdepth}{2}%
  \setcounter{chapter}{\numexpr #1-1\relax}}
\newcommand{\attnxaiUnnumbered}[1][-1]{\setcounter{secnumdepth}{#1}}
\makeatother
"""


def _latex_config(app, config):
    latex = dict(config.latex_elements or {})
    latex["preamble"] = latex.get("preamble", "") + LATEX_PREAMBLE
    # a figure stays where the text puts it (float's H): floated, figures landed after the next
    # heading or inside the sentence that cites them
    latex.setdefault("figure_align", "H")
    # one-sided, and a chapter opens on the next page whatever its side: the two-sided book left
    # a blank page before most chapters and after every part title (17 pages with nothing)
    latex.setdefault("extraclassoptions", "openany,oneside")
    config.latex_elements = latex


def _latex_numbering(app):
    """sphinx-jupyterbook-latex numbers figures by section for LaTeX (numfig_secnum_depth 2,
    which LaTeX's part level needs); sphinx-proof and sphinx-exercise print those numbers, so
    "Exercise 3.2" of the site became "Exercise 3.6.2". Number as the site does while the
    environment assigns numbers (_restore_latex_numbering puts 2 back for the LaTeX writer,
    whose per-chapter figure counters need it)."""
    from sphinx.builders.latex import LaTeXBuilder

    if isinstance(app.builder, LaTeXBuilder) and app.config.numfig_secnum_depth != 1:
        # on the application, not the environment: the environment is pickled and shared
        # with the HTML build of the same folder (make book after make pdf)
        app.attnxai_writer_secnum_depth = app.config.numfig_secnum_depth
        app.config.numfig_secnum_depth = 1


def _restore_latex_numbering(app):
    """Give the LaTeX writer back its numfig_secnum_depth: called from the post-transform of
    the assembled book, after Sphinx has numbered the figures (at every build, whether or not
    a page changed) and before the writer reads the setting."""
    depth = getattr(app, "attnxai_writer_secnum_depth", None)
    if depth is not None:
        app.config.numfig_secnum_depth = depth


def _latex_only(transform) -> bool:
    from sphinx.builders.latex import LaTeXBuilder

    return isinstance(transform.app.builder, LaTeXBuilder)


class _LatexNumbering:
    """The PDF's chapters numbered as on the site (assembled book, after
    sphinx-jupyterbook-latex has made the toctree captions parts): before each chapter, raw
    LaTeX that sets the chapter counter to the site's number, or switches numbering off for the
    front and back matter and the parts (see LATEX_PREAMBLE)."""

    @staticmethod
    def apply(doctree, env):
        from docutils import nodes
        from sphinx import addnodes

        for sof in list(doctree.findall(addnodes.start_of_file)):
            section = next((c for c in sof.children if isinstance(c, nodes.section)), None)
            if section is None:
                continue
            docname = sof.get("docname")
            if docname not in env.all_docs:             # a part made from a toctree caption
                command = r"\attnxaiUnnumbered[-2]"
            else:
                number = env.toc_secnumbers.get(docname, {}).get("")
                command = (rf"\attnxaiChapter{{{number[0]}}}" if number
                           else r"\attnxaiUnnumbered")
            sof.insert(sof.index(section), nodes.raw("", command + "\n", format="latex"))


def _drop_empty_chapters(doctree):
    """sphinx-jupyterbook-latex moves every bibliography to the end of the book, which leaves
    the Bibliography chapter a title over two blank pages: drop a chapter with nothing but its
    title (the bibliography keeps its own heading)."""
    from docutils import nodes
    from sphinx import addnodes

    for sof in list(doctree.findall(addnodes.start_of_file)):
        sections = [c for c in sof.children if isinstance(c, nodes.section)]
        if len(sections) != 1:
            continue
        content = [c for c in sections[0].children if not isinstance(c, nodes.title)]
        # what is left there: an empty container, the placeholders of moved nodes
        if all(not c.astext().strip() and not any(c.findall(nodes.image)) for c in content):
            sof.parent.remove(sof)


class _LatexProofTitles:
    """A proof box gets the title "Proof" (sphinx-proof gives it none, so LaTeX took its first
    paragraph for the title and drew an empty title bar), and its text loses the "Proof. "
    that sphinx-proof puts in front for the site."""

    @staticmethod
    def apply(doctree):
        from docutils import nodes

        for box in list(doctree.findall(nodes.admonition)):
            if "proof" not in box["classes"] or (box.children and isinstance(box[0], nodes.title)):
                continue
            text = next(box.findall(nodes.Text), None)
            if text is not None and str(text).startswith("Proof. "):
                text.parent.replace(text, nodes.Text(str(text)[len("Proof. "):]))
            box.insert(0, nodes.title("", "Proof"))


class _LatexTables:
    """What the PDF needs of cell outputs and tables:

    * an output's LaTeX table (attnxai.chapters.printforms: a ``text/latex`` that myst-nb hands over as
      maths) goes in as LaTeX, not as an equation;
    * a Markdown table that would not fit at natural width gets column widths from its content,
      never narrower than its widest unbreakable piece (code, a formula), ragged right: tabulary
      squeezed such columns until they overlapped (``sqrt(d_att)``, ``law="discrete"``).
    """

    LINE_PT = 468.0

    @classmethod
    def apply(cls, doctree, macros: dict):
        from docutils import nodes
        from sphinx import addnodes

        sys.path.insert(0, str(ROOT / "src"))
        from attnxai.chapters.printforms import TABLE_MARK

        for block in list(doctree.findall(nodes.math_block)):
            if "text_latex" in block["classes"] and block.astext().lstrip().startswith(TABLE_MARK):
                block.replace_self(nodes.raw("", block.astext(), format="latex"))
        for table in list(doctree.findall(nodes.table)):
            at = table.parent.index(table)
            if (at and isinstance(table.parent[at - 1], addnodes.tabular_col_spec)) \
                    or "colwidths-given" in table["classes"]:
                continue                                  # the page chose its widths
            spec = cls.colspec(table, macros)
            if spec:
                table.parent.insert(at, addnodes.tabular_col_spec(spec=spec))

    @classmethod
    def colspec(cls, table, macros: dict) -> str | None:
        """``\\X`` columns for ``table`` if it does not fit at natural width, else None."""
        from docutils import nodes

        from attnxai.chapters.printforms import fit_columns

        group = next(table.findall(nodes.tgroup))
        ncols = int(group["cols"])
        natural, minimum = [0.0] * ncols, [0.0] * ncols
        for row in group.findall(nodes.row):
            for j, entry in enumerate(row.children[:ncols]):
                width, piece = cls.measure(entry, macros)
                natural[j], minimum[j] = max(natural[j], width), max(minimum[j], piece)
        room = cls.LINE_PT - 12.0 * ncols
        if sum(natural) <= room:
            return None                                   # tabulary sets it at natural width
        # Sphinx's \X{a}{b} is a/b of the line, less the column's padding: give it the padding
        widths = [w + 12.0 for w in fit_columns(natural, minimum, room)]
        total = sum(widths)
        return "".join(rf">{{\raggedright\arraybackslash}}\X{{{int(1000 * w / total)}}}{{1000}}"
                       for w in widths)

    @classmethod
    def measure(cls, entry, macros: dict) -> tuple[float, float]:
        """(width on one line, widest unbreakable piece) of a table cell, in points at 10 pt."""
        from docutils import nodes

        from attnxai.chapters.printforms import CHAR_PT, math_width

        width, piece = 0.0, 0.0
        for node in entry.findall(lambda n: isinstance(n, (nodes.Text, nodes.math, nodes.literal))):
            if isinstance(node, nodes.math):
                # text-style maths: kept whole when short, else TeX may break it after a relation
                tex = cls.expand(node.astext(), macros)
                parts = [tex]
                if math_width(tex, display=False) * 1.05 > 0.3 * cls.LINE_PT:
                    parts = re.split(r"=|\\in\b|\\le\b|\\ge\b|<|>", tex)
                width += math_width(tex, display=False) * 1.05
                piece = max([piece] + [math_width(p, display=False) * 1.05 for p in parts])
            elif isinstance(node, nodes.literal):
                width += 6.0 * len(node.astext())                 # 10 pt monospace
                piece = max([piece] + [6.0 * len(w) for w in node.astext().split()])
            elif not isinstance(node.parent, (nodes.math, nodes.literal)):
                text = str(node)                # a short cell ("1.5 h", "31 s") stays whole
                width += CHAR_PT * len(text)
                piece = max([piece] + [CHAR_PT * len(w) for w in
                                       ([text] if len(text) <= 12 else text.split())])
        return width, piece

    @staticmethod
    def expand(tex: str, macros: dict) -> str:
        """``tex`` with the book's MathJax macros (no arguments) written out, for measuring."""
        return re.sub(r"\\([A-Za-z]+)(?![A-Za-z])",
                      lambda m: macros.get(m.group(1), m.group(0)) if isinstance(
                          macros.get(m.group(1)), str) else m.group(0), tex)


class _LatexCells:
    """Code cells in print: the launch cell (whose output names this machine's cache) is left
    out, and a cell tagged ``hide-input`` (collapsed on the site: boilerplate imports, helpers)
    prints only its output."""

    @staticmethod
    def apply(doctree):
        from docutils import nodes

        for cell in list(doctree.findall(nodes.container)):
            if cell.get("nb_element") != "cell_code" or cell.parent is None:
                continue
            tags = (cell.get("cell_metadata") or {}).get("tags", [])
            source = next((c for c in cell.children if c.get("nb_element") == "cell_code_source"),
                          None)
            if LAUNCH_CLASS in cell["classes"]:
                cell.parent.remove(cell)
            elif source is not None and ("hide-input" in tags or "hide-cell" in tags):
                cell.remove(source)


def _needspace_before_boxes(doctree):
    """A box's page break before its label, not after: the label (which the proof index and the
    references print the page of) is written before ``\\begin{sphinxadmonition}``, whose own
    ``\\needspace`` (LATEX_PREAMBLE) could move the box to the next page and leave the label on
    this one (4 of 26 proof-index entries pointed a page early)."""
    from docutils import nodes

    for box in list(doctree.findall(nodes.Admonition)):
        if isinstance(box, nodes.Element) and box.parent is not None:
            box.parent.insert(box.parent.index(box),
                              nodes.raw("", "\\needspace{9\\baselineskip}\n", format="latex"))


LAUNCH_CLASS = "attnxai-launch"


def _mark_launch_cells(app, doctree):
    """The launch cell gets the class ``attnxai-launch`` while its source is still there (the
    LaTeX build drops hidden inputs before the book's transforms see them)."""
    from docutils import nodes

    sys.path.insert(0, str(ROOT / "src"))
    from attnxai.course import LAUNCH_MARKER

    for cell in doctree.findall(nodes.container):
        if cell.get("nb_element") == "cell_code" and any(
                c.get("nb_element") == "cell_code_source" and LAUNCH_MARKER in c.astext()
                for c in cell.children):
            cell["classes"].append(LAUNCH_CLASS)


class _LatexSolutions:
    """The instructor's PDF: every solution at the end of its chapter, under "Solutions", with a
    link from the exercise to its solution and back (page numbers: the printed book is read on
    paper). The student's PDF has none (sphinx-exercise's ``hide_solutions``)."""

    @staticmethod
    def apply(doctree, env):
        from docutils import nodes
        from sphinx import addnodes
        from sphinx_exercise.nodes import exercise_enumerable_node, exercise_node, solution_node

        registry = getattr(env, "sphinx_exercise_registry", {})
        for sof in list(doctree.findall(addnodes.start_of_file)):
            chapter = next((c for c in sof.children if isinstance(c, nodes.section)), None)
            # this chapter's own, found from the top down without entering a nested chapter
            # (parent links cannot be trusted: some transforms set children lists directly)
            owned = list(_own_solutions(sof, solution_node, addnodes.start_of_file))
            solutions = [sol for sol, _ in owned]
            if chapter is None or not solutions:
                continue
            exercises = {e.get("label"): e for e in sof.findall(
                lambda n: isinstance(n, (exercise_enumerable_node, exercise_node)))}
            heading = nodes.raw("", "\\section*{Solutions}\\addcontentsline{toc}{section}"
                                "{Solutions}\n", format="latex")
            place = [heading]
            for sol, parent in owned:
                parent.remove(sol)
            for sol in solutions:
                docname = (registry.get(sol.get("label")) or {}).get("docname", sof.get("docname"))
                sol_ref = f"{docname}:{sol.get('label')}"
                ex_ref = f"exercise:{sol.get('target_label')}"
                exercise = exercises.get(sol.get("target_label"))
                if exercise is not None:
                    exercise.append(nodes.raw(
                        "", f"\\par\\smallskip{{\\small\\hyperref[{sol_ref}]{{Solution: page~"
                        f"\\pageref*{{{sol_ref}}}}}}}\n", format="latex"))
                    first = 1 if sol.children and isinstance(sol[0], nodes.title) else 0
                    sol.insert(first, nodes.raw(
                        "", f"{{\\small\\hyperref[{ex_ref}]{{The exercise: page~"
                        f"\\pageref*{{{ex_ref}}}}}}}\\par\\smallskip\n", format="latex"))
                place.append(sol)
            # the chapter's end: before the next chapter where the assembled book nests it in
            # this one (two chapters of one part)
            at = next((i for i, c in enumerate(chapter.children)
                       if isinstance(c, addnodes.start_of_file)
                       or any(True for _ in c.findall(addnodes.start_of_file))), len(chapter))
            chapter[at:at] = place


def _own_solutions(node, solution_type, chapter_type):
    """(solution, its parent) under ``node``, not under a nested ``chapter_type`` node."""
    for child in node.children:
        if isinstance(child, chapter_type):
            continue
        if isinstance(child, solution_type):
            yield child, node
        elif hasattr(child, "children"):
            yield from _own_solutions(child, solution_type, chapter_type)


#: A cell tag: the chapter teaches this cell's code, so print shows it (with its output). Print
#: is a teacher's hand-out of the prose, theorems, figures, tables and exercises: every other
#: code cell prints its output only, without the log it writes (``print``, warnings, progress).
PRINT_CODE = "print-code"
#: A cell tag: the site shows the cell, print shows only its output (every cell not tagged
#: PRINT_CODE prints so; the tag says it where a reader of the notebook should know).
PRINT_OUTPUT_ONLY = "remove-input-print"
#: A cell tag: the site shows the cell, print leaves it out (an expression wider than any page,
#: whose size the text states instead).
PRINT_NOTHING = "remove-cell-print"
#: Pages for the site only, left out of print: how to launch and run the chapters (buttons,
#: Binder, Colab, a local install) is no part of a printed course.
WEB_ONLY_PAGES = ("book/launch",)


def _print_cut(cell) -> None:
    """A code cell as a printed course shows it: its output (figures, tables, maths, generated
    prose, a value) without its code and without its log (what it printed, its warnings)."""
    from docutils import nodes

    for part in list(cell.children):
        if part.get("nb_element") == "cell_code_source":
            cell.remove(part)
        elif part.get("nb_element") == "cell_code_output":
            for block in list(part.findall(nodes.literal_block)):
                if {"stream", "stderr"} & set(block.get("classes", [])) and block.parent is not None:
                    block.parent.remove(block)


def _objectives_unboxed(doctree) -> None:
    """A chapter's "Learning objectives" box as a heading and its list in print: a box does not
    break across pages here (sphinx's framed box moved whole to the next page, leaving the
    chapters with the longest objectives a title page and nothing else), the list flows on
    under the chapter's title."""
    from docutils import nodes

    for box in list(doctree.findall(nodes.admonition)):
        title = box.children[0] if box.children and isinstance(box[0], nodes.title) else None
        if title is None or title.astext().strip() != "Learning objectives" or box.parent is None:
            continue
        box.replace_self([nodes.rubric("", "Learning objectives"), *box.children[1:]])


def _drop_web_only_pages(doctree) -> None:
    """The pages of WEB_ONLY_PAGES, left out of the assembled book."""
    from sphinx import addnodes

    for sof in list(doctree.findall(addnodes.start_of_file)):
        if sof.get("docname") in WEB_ONLY_PAGES and sof.parent is not None:
            sof.parent.remove(sof)


def _latex_transforms(app):
    from sphinx.transforms.post_transforms import SphinxPostTransform

    class LatexCellsFirst(SphinxPostTransform):
        """Before sphinx-jupyterbook-latex drops hidden cell parts (400): an output collapsed on
        the site (``hide-output``: a SymPy expression shown on request) is printed, since paper
        cannot be clicked (attnxai.chapters.printforms breaks it over lines); a cell tagged
        ``remove-cell-print`` is left out of print; every other cell loses its code and its log
        (stream output) in print, unless it is tagged ``print-code`` (the chapter teaches that
        code)."""
        default_priority = 390

        def apply(self, **kwargs):
            from docutils import nodes

            if not _latex_only(self):
                return
            for cell in list(self.document.findall(nodes.container)):
                if cell.get("nb_element") != "cell_code":
                    continue
                if "tag_hide-output" in cell["classes"]:
                    # printed smaller (7 pt): attnxai.chapters.printforms breaks it between terms, but
                    # a single fraction of a raw expansion may still be wider than 10 pt allows
                    cell["classes"].remove("tag_hide-output")
                    for part in list(cell.children):
                        if part.get("nb_element") == "cell_code_output":
                            at = cell.index(part)
                            cell.insert(at + 1, nodes.raw("", "\\endgroup\n", format="latex"))
                            cell.insert(at, nodes.raw("", "\\begingroup\\scriptsize\n",
                                                      format="latex"))
                tags = (cell.get("cell_metadata") or {}).get("tags", [])
                if PRINT_NOTHING in tags:
                    cell.parent.remove(cell)
                    continue
                if PRINT_CODE not in tags:
                    _print_cut(cell)

    app.add_post_transform(LatexCellsFirst)

    class LatexBook(SphinxPostTransform):
        # after sphinx-jupyterbook-latex's LatexRootDocPostTransforms (700), which makes parts
        default_priority = 800

        def apply(self, **kwargs):
            if not _latex_only(self):
                return
            _restore_latex_numbering(self.app)
            _drop_web_only_pages(self.document)
            _objectives_unboxed(self.document)
            _drop_empty_chapters(self.document)
            _LatexNumbering.apply(self.document, self.env)
            _LatexProofTitles.apply(self.document)
            _LatexCells.apply(self.document)
            _needspace_before_boxes(self.document)
            if edition() == "instructor":
                _LatexSolutions.apply(self.document, self.env)
            macros = (self.config.mathjax3_config or {}).get("tex", {}).get("macros", {})
            _LatexTables.apply(self.document, macros)

    app.add_post_transform(LatexBook)


def setup(app):
    app.connect("config-inited", _config_inited, priority=900)
    app.connect("config-inited", _edition_config, priority=905)
    app.connect("config-inited", _latex_config, priority=910)
    app.connect("builder-inited", _latex_numbering, priority=600)
    _latex_transforms(app)
    app.add_domain(_proof_domain(), override=True)
    app.connect("source-read", _source_read)
    app.connect("doctree-read", _mark_launch_cells)
    app.connect("html-page-context", _page_context, priority=500)
    app.connect("html-page-context", _page_buttons, priority=600)
    app.connect("html-page-context", _explorer_assets, priority=600)
    app.connect("build-finished", _build_finished)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
