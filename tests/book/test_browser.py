"""The built site, read in a real browser (headless Chromium from the Debian packages, driven by
Playwright; no browser is downloaded).

Every page of the quick-profile site that tests/book/test_book.py builds (tests/booksite.py) is opened
from a local HTTP server, on a desktop and on a phone-sized screen, and checked for what a reader
would see: console errors, requests leaving the machine, raw TeX, images that do not load,
content wider than its column without a scroll hint, theorem and exercise boxes, figures at 2x
resolution with captions and alt text, launch and download links, broken internal links. Then the
search page and a solution dropdown are used as a person would. A page is measured once it has
settled (fonts loaded, MathJax done, the book's script finished, the layout unchanged across
animation frames: ``_settle``), never after a delay or by retrying.

The chapter conventions (README.md: the launch cell first, figures with captions and alt text at
2x, exercises numbered per chapter, an .ipynb for Colab, a row in the syllabus) are checked on
EVERY chapter the table of contents lists (``attnxai.course.toc_chapters``: the numbered parts and
``notebooks/``), so a chapter added to _toc.yml without them fails here. The table of contents is
the one the site was built from (tests/booksite.py: ``ATTNXAI_TEST_TOC``, default _toc.yml).

``ATTNXAI_CHROMIUM`` overrides the browser (default /usr/bin/chromium; `.ci/run` installs the
Debian package `chromium` when it is missing).
"""

from __future__ import annotations

import collections
import concurrent.futures
import functools
import http.server
import json
import math
import os
import re
import shutil
import threading
from pathlib import Path
from urllib.parse import unquote, urljoin, urlparse

import pytest
import yaml

from attnxai import course
from booksite import (REPOSITORY_PAGES, ROOT, TEST_REPOSITORY, TOC, BuildFailed,
                      build_repository_site, build_site)
# what a reader of a chapter should never meet (book/reproducibility.md holds the provenance of
# every number): a git hash or another hex digest, a load average, "uncommitted"
from check_pdf import PROVENANCE

# A unit of `make test`'s (pytest-xdist, --dist loadgroup) that reads the test site: sent to
# whichever process asks for work first once the book's group has built it (tests/conftest.py,
# next_unit), it finds the site built once for the run (tests/booksite.py, once_per_run).
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("site-browser")]

CHROMIUM = os.environ.get("ATTNXAI_CHROMIUM", "/usr/bin/chromium")
# No request leaves the machine: every host but the test server's 127.0.0.1 fails to resolve (IP
# addresses included), so the pages keep Chromium's HTTP cache (routing every request through
# Playwright would turn it off and cost a round trip to Python per file); what a page asks of
# another host is still recorded (its "request" event) and reported.
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"]
DESKTOP = {"width": 1280, "height": 900}
PHONE = {"width": 390, "height": 844}
#: A figure is scaled to the column (never scrolled sideways); shown under this share of its
#: drawn size (CSS px = its pixels / 2), labels drawn at 10 pt are hard to read, so a tap must
#: open it at full size (book/static/attnxai.js).
MIN_FIGURE_SCALE = 0.74
#: WCAG AA contrast between a shaded token's text and its shade.
MIN_TOKEN_CONTRAST = 4.5
#: On a desktop a figure fits its column whole (no scrolling) and is shown at least this share
#: of its drawn size: plots.MAX_WIDTH (7.2 in, 720 px) in the 672 px figure column is 93 %.
MIN_DESKTOP_FIGURE_SCALE = 0.9
PRF_KINDS = ("definition", "lemma", "theorem", "proposition", "corollary", "proof", "example",
             "remark", "conjecture", "axiom", "criterion", "algorithm", "observation", "property")

TEX = [
    re.compile(r"\\[A-Za-z]{2,}"),                           # \alpha, \frac, \CLS ...
    re.compile(r"(?<![\w$])\$(?=[^\s$])[^$\n]{1,300}?(?<=[^\s$])\$(?![\w$])"),   # $...$
    re.compile(r"\$\$"),
    re.compile(r"[_^]\{[^}\n]{1,40}\}"),                      # x_{t}, e^{-8}
]

#: Relation signs (and a binary plus) that may not start a line of a sentence's inline maths:
#: TeX breaks inline maths after them (book/static/attnxai-mathjax.js).
LINE_START_SIGNS = "=<>≤≥≠≈≡∼≃≅∈∉⊂⊆⊃⊇→←↦⇒⇔∝≪≫+±×⋅"
#: Pages loading at once in :func:`visits` (the desktop and the phone view of one page): Chromium
#: renders them side by side while the test measures the one that has settled.
IN_FLIGHT = 2
#: The longest a page may take to settle (fonts, MathJax, the book's script): a bound for a
#: page that never settles, not a delay; a loaded machine takes a few seconds at most.
SETTLE_TIMEOUT_MS = 120_000

# ---------------------------------------------------------------- JavaScript run in each page
# Fonts loaded, MathJax done, and the article's layout the same on 5 consecutive frames, with the
# book's settled mark still there (true) or not (false).
JS_SETTLED = """async () => {
  if (document.fonts) await document.fonts.ready;
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) await MathJax.startup.promise;
  const art = document.querySelector("article.bd-article") || document.body;
  const layout = () => { const r = art.getBoundingClientRect();
    return [r.left, r.width, r.height, art.scrollWidth, document.documentElement.scrollWidth].join(" "); };
  const frame = () => new Promise(r => requestAnimationFrame(r));
  const first = layout();
  for (let i = 0; i < 5; i++) { await frame(); if (layout() !== first) return false; }
  return document.documentElement.hasAttribute("data-attnxai-settled");
}"""

JS_TEXT = """() => {
  const skip = "script,style,pre,code,kbd,samp,textarea,mjx-container,.MathJax,.cell_input,.highlight,.attnxai-scroll-hint";
  const art = document.querySelector("article.bd-article") || document.body;
  const walker = document.createTreeWalker(art, NodeFilter.SHOW_TEXT);
  const out = [];
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    if (n.parentElement && n.parentElement.closest(skip)) continue;
    out.push(n.textContent);
  }
  return out.join(" ");
}"""

JS_IMAGES = """() => Array.from(document.images).map(img => {
  const r = img.getBoundingClientRect();
  const holder = img.closest("figure") || img.parentElement, cs = getComputedStyle(holder);
  return {src: img.getAttribute("src"), alt: img.getAttribute("alt"), ok: img.complete && img.naturalWidth > 0,
          natural: img.naturalWidth, shown: r.width, content: !!img.closest("article.bd-article"),
          output: !!img.closest(".cell_output"), zoom: img.dataset.attnxaiZoom === "1",
          room: holder.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight),
          caption: (img.closest("figure") && img.closest("figure").querySelector("figcaption"))
                   ? img.closest("figure").querySelector("figcaption").textContent.trim() : ""};
})"""

# Every token shading (attnxai.shading.TokenShading): its key, and each token's weight and colour;
# and shaded spans in outputs that are not one (a shading without the book's key).
JS_SHADING = """() => ({
  shadings: Array.from(document.querySelectorAll("article .attnxai-shading")).map(s => ({
    key: (s.querySelector(".attnxai-key") || {textContent: ""}).textContent.trim(),
    tokens: Array.from(s.querySelectorAll(".attnxai-tok")).map(t => ({
      w: t.dataset.weight, bg: getComputedStyle(t).backgroundColor, fg: getComputedStyle(t).color}))})),
  stray: Array.from(document.querySelectorAll("article .cell_output span[style*='background']"))
    .filter(x => !x.closest(".attnxai-shading, .attnxai-key")).length})"""

JS_CHAPTER = """() => {
  const art = document.querySelector("article.bd-article");
  if (!art) return null;
  const num = art.querySelector("h1 .section-number");
  const cell = art.querySelector(".cell");
  const input = cell && cell.querySelector(".cell_input");
  const source = input && input.querySelector("pre");
  const output = cell && cell.querySelector(".cell_output");
  return {number: num ? num.textContent.trim().replace(/\\.$/, "") : null,
          first_cell_source: source ? source.textContent : "",
          first_cell_input_shown: !!input && !input.closest("details:not([open])")
                                  && input.checkVisibility(),
          first_cell_output: output ? output.textContent : ""};
}"""

# Content wider than the column, and its cue. Every element past the column's right edge must sit
# in a box that scrolls and fits in the column, marked .attnxai-scrolls (its shadows); a block box
# also has the hint on its own line right above it; inside running text there is no hint (the
# element scrolls within its line). A hint never sits in running text, never overlaps the box or
# what precedes it. MathJax's screen-reader MathML (mjx-assistive-mml) is clipped to nothing and
# is no content. Also returned: every display equation, and those whose content is wider than
# their box (they scroll), with the theorem-like box they are in.
JS_WIDE = """() => {
  const art = document.querySelector("article.bd-article");
  if (!art) return {bad: [], equations: [], scrolling: []};
  const TEXT = "p, li, dt, dd, td, th, figcaption, caption, h1, h2, h3, h4, h5, h6, .admonition-title";
  const right = art.getBoundingClientRect().right + 1;
  const scrolls = el => ["auto", "scroll"].includes(getComputedStyle(el).overflowX);
  const unseen = el => !!el.closest("mjx-assistive-mml, .attnxai-scroll-hint, details:not([open]) > :not(summary)");
  const name = el => el.tagName.toLowerCase() + (el.className && typeof el.className === "string" ? "." + el.className.trim().split(" ").filter(Boolean).join(".") : "");
  const math = el => { const m = el.querySelector("mjx-assistive-mml"); return (m || el).textContent.trim().slice(0, 70); };
  const bad = [];
  for (const el of art.querySelectorAll("*")) {
    if (unseen(el)) continue;
    const r = el.getBoundingClientRect();
    if (r.width === 0 || r.right <= right) continue;
    let box = el.parentElement, found = null;
    while (box && box !== art) {
      if (scrolls(box) && box.getBoundingClientRect().right <= right) { found = box; break; }
      box = box.parentElement;
    }
    if (!found) { bad.push(`${name(el)} (${Math.round(r.width)} px) overflows the ${Math.round(art.clientWidth)} px column, no scrolling`); continue; }
    const inText = found.parentElement && found.parentElement.closest(TEXT) && getComputedStyle(found).display.startsWith("inline");
    const hint = found.previousElementSibling;
    const hinted = hint && hint.classList.contains("attnxai-scroll-hint") && hint.getBoundingClientRect().height > 0;
    if (!found.classList.contains("attnxai-scrolls"))
      bad.push(`${name(el)} scrolls inside ${name(found)} without the scroll cue (.attnxai-scrolls)`);
    else if (!inText && !hinted)
      bad.push(`${name(el)} scrolls inside ${name(found)} without a visible hint`);
  }
  // an output that scrolls its own text (a long line, a long output): its cue
  for (const el of art.querySelectorAll(".cell_output, .cell_output *")) {
    if (unseen(el) || el.classList.contains("attnxai-scrolls")) continue;
    const cs = getComputedStyle(el);
    const x = scrolls(el) && el.scrollWidth > el.clientWidth + 1;
    const y = ["auto", "scroll"].includes(cs.overflowY) && el.scrollHeight > el.clientHeight + 24;
    if ((x || y) && !(el.parentElement && el.parentElement.closest(TEXT)))
      bad.push(`${name(el)} scrolls its own content (${x ? "sideways" : "down"}) without the scroll cue`);
  }
  for (const hint of art.querySelectorAll(".attnxai-scroll-hint")) {
    const h = hint.getBoundingClientRect(), box = hint.nextElementSibling, prev = hint.previousElementSibling;
    const where = box ? name(box) : "nothing";
    if (hint.parentElement.closest(TEXT)) bad.push(`a hint inside running text (${name(hint.parentElement.closest(TEXT))}), before ${where}`);
    if (!box || box.getBoundingClientRect().top < h.bottom - 0.5) bad.push(`a hint overlaps or sits beside the box it announces (${where})`);
    if (prev && prev.getBoundingClientRect().bottom > h.top + 0.5) bad.push(`a hint overlaps what precedes it (${name(prev)})`);
  }
  const equations = [], scrolling = [];
  for (const eq of art.querySelectorAll('mjx-container[display="true"]')) {
    const c = eq.getBoundingClientRect();
    let reach = c.right;
    for (const x of eq.querySelectorAll("*")) if (!unseen(x)) reach = Math.max(reach, x.getBoundingClientRect().right);
    const prf = eq.closest("div.proof");
    const title = prf ? (prf.querySelector(".admonition-title") || prf).textContent.trim().split("(")[0].trim() : null;
    const item = {math: math(eq), box: title, width: Math.round(reach - c.left), room: Math.round(c.width),
                  hidden_output: !!eq.closest(".tag_hide-output .cell_output")};
    equations.push(item);
    if (reach > c.right + 1) scrolling.push(item);
  }
  return {bad: bad.slice(0, 10), equations, scrolling};
}"""

# What a reader sees of maths and tables on either screen: fractions MathJax broke into lines (the
# numerator and denominator each broken: book/static/attnxai-mathjax.js keeps them whole; the row
# of a table inside one, a multi-line denominator that printforms wrote, may break), lines
# of a sentence that start with a relation sign (inline maths wrapped before it), and tables (not
# in a collapsed block) wider than the column.
JS_LAYOUT = """(signs) => {
  const art = document.querySelector("article.bd-article");
  if (!art) return {fractions: [], starts: [], tables: []};
  const cs = getComputedStyle(art);
  const room = art.getBoundingClientRect().width - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight);
  const latex = el => (el.closest("mjx-container").querySelector("mjx-assistive-mml") || el).textContent.trim().slice(0, 70);
  // (a line of a table inside the fraction, a multi-line denominator's row, may break)
  const fractions = Array.from(art.querySelectorAll("mjx-frac"))
    .filter(f => Array.from(f.querySelectorAll("mjx-linebox")).some(
                   lb => lb.closest("mjx-frac, mjx-mtable") === f)
                 && f.getBoundingClientRect().width > 0
                 && !f.closest("details:not([open]) > :not(summary)")).map(latex);
  const starts = [];
  for (const math of art.querySelectorAll('mjx-container:not([display="true"]) > mjx-math')) {
    let prev = null;
    for (const item of math.children) {
      const r = item.getBoundingClientRect();
      if (item.tagName === "MJX-BREAK" || r.width === 0) continue;
      if (prev && r.left < prev.left - 1 && item.tagName === "MJX-MO" && signs.includes(item.textContent.trim()))
        starts.push(latex(item));
      prev = r;
    }
  }
  const tables = [];
  for (const t of art.querySelectorAll("table")) {
    const r = t.getBoundingClientRect();
    // a collapsed block's table (a phone's full view of a table) is not on the screen
    if (t.closest("details:not([open]) > :not(summary)") || r.width === 0 || r.width <= room + 1) continue;
    const head = (t.querySelector("th, td") || t).textContent.trim().slice(0, 40);
    tables.push(`${Math.round(r.width)} px in a ${Math.round(room)} px column (${head || "no header"}...)`);
  }
  return {fractions, starts, tables};
}"""

# The text a reader can reach on the page, prose and outputs (collapsed ones too), without the
# code of the cells.
JS_SHOWN_TEXT = """() => {
  const art = (document.querySelector("article.bd-article") || document.body).cloneNode(true);
  art.querySelectorAll("script, style, .cell_input, mjx-assistive-mml, .attnxai-scroll-hint")
    .forEach(e => e.remove());
  return art.textContent;
}"""

JS_MATHS = """() => ({
  on_page: !!document.querySelector("article .math, article mjx-container"),
  loaded: !!document.querySelector('script[src*="mathjax/"]')})"""

JS_COUNTS = """() => ({
  proof: document.querySelectorAll("article .proof.admonition, article div.proof").length,
  exercise: document.querySelectorAll("article .exercise.admonition").length,
  solution: document.querySelectorAll("article .solution.admonition").length,
  titles: Array.from(document.querySelectorAll("article .exercise .admonition-title")).map(e => e.textContent.trim())})"""

JS_LINKS = """() => Array.from(document.querySelectorAll("a[href]")).map(a => ({
  href: a.getAttribute("href"), text: a.textContent.trim()}))"""

# Everything a visit measures on a settled page, read in one call (in this order; nothing here
# changes the page): on the desktop (``full``) its text, boxes, links and chapter too.
JS_VISIT = f"""([signs, full]) => {{
  const out = {{wide: ({JS_WIDE})(), layout: ({JS_LAYOUT})(signs), maths: ({JS_MATHS})(),
               images: ({JS_IMAGES})()}};
  if (full) Object.assign(out, {{text: ({JS_TEXT})(), shown_text: ({JS_SHOWN_TEXT})(),
                                 counts: ({JS_COUNTS})(), links: ({JS_LINKS})(),
                                 chapter: ({JS_CHAPTER})()}});
  out.shading = ({JS_SHADING})();
  return out;
}}"""


# ---------------------------------------------------------------- fixtures
@pytest.fixture(scope="module")
def site(book_model) -> Path:
    try:
        html, _, _ = build_site()
    except BuildFailed as exc:
        pytest.fail(str(exc))
    return html


def _serve(site: Path):
    handler = functools.partial(_QuietHandler, directory=str(site))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture(scope="module")
def server(site):
    yield from _serve(site)


_BUILDER = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="repository-site")


@functools.lru_cache(maxsize=1)
def _repository_build() -> concurrent.futures.Future:
    """build_repository_site() in a thread of its own (a jupyter-book process: the thread only
    waits), started once: :func:`visits` starts it when a test of the session needs that site, so
    that it builds while the main site is visited."""
    return _BUILDER.submit(build_repository_site)


@pytest.fixture(scope="module")
def repository_site(book_model) -> Path:
    """A few pages built for TEST_REPOSITORY (tests/booksite.py), as the deploy workflow builds
    for $GITHUB_REPOSITORY."""
    try:
        html, _, _ = _repository_build().result()
    except BuildFailed as exc:
        pytest.fail(str(exc))
    return html


@pytest.fixture(scope="module")
def repository_visits(repository_site, browser) -> dict[tuple[str, str], dict]:
    for url in _serve(repository_site):
        return _visit_all(browser, url, repository_site, (("desktop", DESKTOP),))


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def browser():
    if not Path(CHROMIUM).exists() and not shutil.which(CHROMIUM):
        pytest.fail(f"no Chromium at {CHROMIUM}: apt-get install chromium (see .ci/run), or set "
                    "ATTNXAI_CHROMIUM")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail("playwright is not installed: pip install -e '.[test]'")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        yield b
        b.close()


def _pages(site: Path) -> list[str]:
    """Every page of the site (redirects, e.g. index.html, apart)."""
    return sorted(str(p.relative_to(site)) for p in site.rglob("*.html")
                  if not p.relative_to(site).parts[0].startswith(("_", "reports"))
                  and 'http-equiv="Refresh"' not in p.read_text()[:1000]
                  and 'http-equiv="refresh"' not in p.read_text()[:1000])


def _repository() -> tuple[str, str]:
    """(repository URL or "", branch) of _config.yml, which the main test site is built for
    (tests/booksite.py ignores the environment's override)."""
    config = yaml.safe_load((ROOT / "_config.yml").read_text()).get("repository") or {}
    return course.repository_url(ROOT), config.get("branch", "main")


def _source(page: str) -> Path | None:
    md = ROOT / Path(page).with_suffix(".md")
    return md if md.is_file() else None


def _chapters() -> list[str]:
    """The pages of the chapters the table of contents lists, in its order: every one must
    follow the conventions."""
    return [p.relative_to(ROOT).with_suffix(".html").as_posix()
            for p in course.toc_chapters(ROOT, TOC)]


CHAPTERS = _chapters()


@pytest.fixture(scope="module")
def visits(request, site, server, browser) -> dict[tuple[str, str], dict]:
    """Every page, on a desktop and on a phone: what the checks below need."""
    if any("repository_site" in getattr(item, "fixturenames", ()) for item in request.session.items):
        _repository_build()                   # builds meanwhile (a process of its own)
    return _visit_all(browser, server, site, (("desktop", DESKTOP), ("phone", PHONE)))


def _visit_all(browser, server: str, site: Path, screens) -> dict[tuple[str, str], dict]:
    """:func:`_visit` of every page of ``site`` on each of ``screens`` ((name, viewport); the
    first one's visit is ``full``), :data:`IN_FLIGHT` pages loading at once; in the order screen
    by screen, page by page."""
    contexts = {screen: browser.new_context(viewport=viewport) for screen, viewport in screens}
    order = [(screen, name) for screen, _ in screens for name in _pages(site)]
    full = screens[0][0]
    results, loading = {}, collections.deque()
    for name in _pages(site):
        # (the page's HTML, as test_solution_dropdown_opens_on_click selects its pages)
        dropdown = 'class="solution dropdown' in (site / name).read_text()
        for screen, _ in screens:
            if len(loading) >= IN_FLIGHT:
                key, visit = loading.popleft()
                results[key] = visit()
            loading.append(((screen, name), _visit(contexts[screen], server, name,
                                                   full=(screen == full),
                                                   dropdown=dropdown and screen == full)))
    while loading:
        key, visit = loading.popleft()
        results[key] = visit()
    for context in contexts.values():
        context.close()
    return {key: results[key] for key in order}


def _visit(context, server: str, page_name: str, *, full: bool, dropdown: bool = False):
    """Open ``page_name`` in a new page of ``context``; returns a function that, once called,
    waits for the page to settle, measures it (and, with ``dropdown``, clicks its first solution
    dropdown, last), closes it and returns what was measured."""
    page = context.new_page()
    errors, external, failed = [], [], []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(f"page error: {e}"))
    page.on("requestfailed", lambda r: failed.append(f"{r.url} ({r.failure})")
            if r.url.startswith(server) else None)
    page.on("response", lambda r: failed.append(f"{r.url} (HTTP {r.status})")
            if r.url.startswith(server) and r.status >= 400 else None)
    # any other host fails to resolve (ARGS): the request is made, never sent
    page.on("request", lambda r: external.append(r.url)
            if not r.url.startswith((server, "data:")) else None)
    page.goto(server + page_name, wait_until="commit")

    def measure() -> dict:
        page.wait_for_load_state("load")
        unsettled = _settle(page)
        got = page.evaluate(JS_VISIT, [LINE_START_SIGNS, full])
        wide = got.pop("wide")
        out = {"errors": errors, "external": external, "failed": failed,
               "overflow": ([unsettled] if unsettled else []) + wide["bad"],
               "equations": wide["equations"], "scrolling": wide["scrolling"], **got}
        if dropdown:
            out["dropdown"] = _open_solution(page)
        page.close()
        return out

    return measure


def _open_solution(page) -> str | None:
    """Click the page's first solution dropdown: None once it opens, else what went wrong."""
    sol = page.locator(".solution.dropdown").first
    body = sol.locator("section").first
    if body.is_visible():
        return "the solution is open before any click"
    sol.locator("button.toggle-button, .admonition-title").first.click()
    try:
        body.wait_for(state="visible", timeout=3000)
    except Exception:                                  # noqa: BLE001 - reported
        return "the solution did not open on click"
    return None


def _settle(page) -> str | None:
    """Wait for a settled page before measuring it; None once it is, else why not. Settled: the
    book's script has finished (it marks the page ``data-attnxai-settled`` once the fonts are
    loaded, MathJax has typeset and its own pass changed nothing) and, measured here too, the
    fonts are loaded, MathJax is done and the layout is the same across several animation
    frames. This waits for events and never retries a check; the timeout only bounds a page that
    never settles, which is reported."""
    try:
        page.wait_for_function("document.documentElement.hasAttribute('data-attnxai-settled')",
                               timeout=SETTLE_TIMEOUT_MS)
    except Exception:                                  # noqa: BLE001 - reported
        return ("the book's script never marked the page settled (data-attnxai-settled) "
                f"within {SETTLE_TIMEOUT_MS / 1000:.0f} s")
    if not page.evaluate(JS_SETTLED):
        return "the layout changed after the book's script marked the page settled"
    return None


def _report(problems: dict[str, list[str]]) -> str:
    return "\n".join(f"{page}:\n    " + "\n    ".join(str(p) for p in items[:8])
                     for page, items in problems.items() if items)


# ---------------------------------------------------------------- the checks
def test_no_console_errors_nor_failed_or_external_requests(visits):
    problems = {f"{s}:{p}": v["errors"] + [f"failed: {f}" for f in v["failed"]]
                + [f"external request: {u}" for u in v["external"]]
                for (s, p), v in visits.items()}
    assert not any(problems.values()), _report(problems)


def test_no_raw_tex_in_the_text(visits):
    problems = {}
    for (screen, page), v in visits.items():
        if screen != "desktop":
            continue
        found = []
        for pattern in TEX:
            for m in pattern.finditer(v["text"]):
                a, b = max(0, m.start() - 40), m.end() + 40
                found.append(repr(v["text"][a:b]))
        problems[page] = found
    assert not any(problems.values()), "raw TeX on the page:\n" + _report(problems)


#: A number as pandas prints it unformatted, or a negative zero: "50000.000000", "-0.000".
UNFORMATTED = [re.compile(r"(?<![\w.])\d+\.0{6}(?![\de])"), re.compile(r"(?<![\w.])[-−]0\.0+(?![\d])")]


def test_numbers_read_as_numbers(visits):
    """Tables and generated prose format their numbers: no pandas default of six decimals for a
    whole number, no negative zero."""
    problems = {}
    for (screen, page), v in visits.items():
        if screen == "desktop":
            problems[page] = [repr(v["text"][max(0, m.start() - 50):m.end() + 20])
                              for pattern in UNFORMATTED for m in pattern.finditer(v["text"])]
    assert not any(problems.values()), _report(problems)


def test_mathjax_only_on_pages_with_maths(visits):
    """MathJax (about 1 MB) is loaded by the pages that show maths, and only by them."""
    problems = {p: [f"maths on the page: {v['maths']['on_page']}, MathJax loaded: "
                    f"{v['maths']['loaded']}"]
                for (s, p), v in visits.items()
                if s == "desktop" and v["maths"]["on_page"] != v["maths"]["loaded"]}
    assert not problems, _report(problems)


def test_every_image_loads(visits):
    problems = {f"{s}:{p}": [f"{im['src']} did not load" for im in v["images"] if not im["ok"]]
                for (s, p), v in visits.items()}
    assert not any(problems.values()), _report(problems)


def test_wide_content_scrolls_with_a_hint(visits):
    problems = {f"{s}:{p}": v["overflow"] for (s, p), v in visits.items()}
    assert not any(problems.values()), _report(problems)


def test_display_equations_fit_the_column(visits):
    """Every display equation is readable in full on a desktop and on a phone, without scrolling
    sideways: long formulas are written as aligned lines, and MathJax breaks what is still too
    wide at its operators. The SymPy expressions that a chapter shows in a hidden output (README:
    an expression wider than a page goes in a cell tagged hide-output) are shown on request and
    not measured here."""
    listing = {}
    for (screen, page), v in sorted(visits.items()):
        shown = [e for e in v["scrolling"] if not e["hidden_output"]]
        listing[f"{screen}:{page}"] = [f"{e['box'] or ''} {e['width']} px in {e['room']} px: "
                                       f"{e['math']}" for e in shown]
    assert not any(listing.values()), "display equations wider than their column:\n" + \
        _report(listing)
    total = sum(len(v["equations"]) for (s, _), v in visits.items() if s == "desktop")
    assert total > 0, "no display equation found: is MathJax running?"


def test_fractions_whole_and_no_line_starts_with_a_relation(visits):
    """On both screens: no fraction is broken into lines (MathJax would break its numerator and
    denominator apart: book/static/attnxai-mathjax.js keeps it whole), and no line of a sentence
    starts with a relation sign (inline maths breaks after it, as TeX does)."""
    problems = {f"{s}:{p}": [f"fraction broken into lines: {m}" for m in v["layout"]["fractions"]]
                + [f"a line starts with {m!r}" for m in v["layout"]["starts"]]
                for (s, p), v in visits.items()}
    assert not any(problems.values()), _report(problems)


def test_tables_fit_the_column(visits):
    """No table is wider than its column, on a desktop or on a phone: a table that does not fit a
    phone shows a narrow view there, the whole table collapsed under it
    (attnxai.chapters.tables, ``phone=``), which a collapsed block keeps out of this count."""
    problems = {f"{s}:{p}": v["layout"]["tables"] for (s, p), v in visits.items()}
    assert not any(problems.values()), _report(problems)


def test_no_provenance_in_the_chapters(visits):
    """No chapter shows, in its prose or its outputs (collapsed ones included), a git hash or
    another hex digest, a load average or a note of uncommitted changes: where and how the
    committed numbers were made is on one page, book/reproducibility.md."""
    problems = {}
    for (screen, page), v in visits.items():
        if screen != "desktop" or page not in CHAPTERS:
            continue
        text = " ".join(v["shown_text"].split())
        problems[page] = [repr(text[max(0, m.start() - 50):m.end() + 30])
                          for m in PROVENANCE.finditer(text)]
    assert CHAPTERS and all(("desktop", p) in visits for p in CHAPTERS)
    assert not any(problems.values()), _report(problems)


def test_figures_captioned_with_alt_text_at_2x_and_readable(visits):
    """In every chapter of the table of contents: every figure has a caption and alt text (not a
    file name), is drawn at twice its CSS size, fits its column whole on a desktop (legend
    included: nothing to scroll) at nearly its drawn size, and on a phone fits the column too (no
    sideways scrolling, the legend on screen), a tap opening it at full size where it is shown
    much smaller than drawn."""
    problems = {}
    for (screen, page), v in visits.items():
        if page not in CHAPTERS:
            continue
        found = []
        for im in v["images"]:
            if not im["output"]:
                continue
            name = im["src"].rsplit("/", 1)[-1]
            if screen == "desktop":
                alt = (im["alt"] or "").strip()
                # a file name or path (one word, no spaces) is not a description
                if not alt or re.search(r"\.(png|svg|jpe?g)$", alt) or re.fullmatch(r"[\w./-]+", alt):
                    found.append(f"{name}: alt text {alt!r}")
                if not im["caption"]:
                    found.append(f"{name}: no caption")
                if im["natural"] < 1.9 * im["shown"]:
                    found.append(f"{name}: {im['natural']} px shown at {im['shown']:.0f} px "
                                 "(not 2x)")
            scale = im["shown"] / (im["natural"] / 2)
            if screen == "desktop" and (scale < MIN_DESKTOP_FIGURE_SCALE
                                        or im["shown"] > im["room"] + 1):
                found.append(f"{name}: drawn {im['natural'] / 2:.0f} px wide for a "
                             f"{im['room']:.0f} px column, shown at {scale:.0%}"
                             f"{' and scrolling' if im['shown'] > im['room'] + 1 else ''}: draw "
                             "it at most plots.MAX_WIDTH wide, panels stacked, legend inside")
            if screen == "phone" and im["shown"] > im["room"] + 1:
                found.append(f"{name}: {im['shown']:.0f} px wide in a {im['room']:.0f} px column "
                             "on a phone: it scrolls sideways (its legend may be off-screen)")
            if screen == "phone" and scale < MIN_FIGURE_SCALE and not im["zoom"]:
                found.append(f"{name}: shown at {scale:.0%} of its drawn size on a phone, and no "
                             "tap opens it at full size")
        problems[f"{screen}:{page}"] = found
    assert not any(problems.values()), _report(problems)


def _rgb(css: str) -> tuple[float, float, float, float] | None:
    m = re.match(r"rgba?\(([\d.]+), ([\d.]+), ([\d.]+)(?:, ([\d.]+))?\)", css)
    if not m:
        return None
    return (*(float(x) for x in m.group(1, 2, 3)), float(m.group(4)) if m.group(4) else 1.0)


def _hue(css: str) -> tuple[str | None, float]:
    """('green' | 'red' | None, strength) of a computed background colour: a translucent one's
    opacity, or for an opaque one how far it is from white towards its hue (white: 0)."""
    rgb = _rgb(css)
    if rgb is None:
        return None, 0.0
    r, g, b, alpha = rgb
    if alpha < 1.0:
        return ("green" if g > r + 20 else "red" if r > g + 20 else None), alpha
    # opaque: the colour of the convention (shading.TOWARDS or AWAY) mixed with white that it is,
    # by least squares on 255 - channel = strength * (255 - reference)
    best = (None, 0.0, math.inf)
    for hue, ref in (("green", (46, 125, 50)), ("red", (198, 40, 40))):
        d = [255.0 - x for x in (r, g, b)]
        e = [255.0 - x for x in ref]
        strength = sum(x * y for x, y in zip(d, e)) / sum(y * y for y in e)
        residual = sum((x - strength * y) ** 2 for x, y in zip(d, e))
        if residual < best[2]:
            best = (hue, strength, residual)
    hue, strength, residual = best
    return (hue if residual < 50 else None), max(strength, 0.0)


def _luminance(r: float, g: float, b: float) -> float:
    c = [x / 255 for x in (r, g, b)]
    c = [x / 12.92 if x <= 0.04045 else ((x + 0.055) / 1.055) ** 2.4 for x in c]
    return 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2]


def test_shaded_tokens_are_readable(visits):
    """On both screens, every shaded token's text contrasts with its shade at least
    MIN_TOKEN_CONTRAST : 1 (WCAG AA), whatever the weight."""
    problems, seen = {}, 0
    for (screen, page), v in visits.items():
        found = []
        for k, sh in enumerate(v.get("shading", {}).get("shadings", [])):
            for t in sh["tokens"]:
                bg, fg = _rgb(t["bg"]), _rgb(t["fg"])
                if bg is None or fg is None or bg[3] == 0:
                    continue
                seen += 1
                hi, lo = sorted((_luminance(*bg[:3]), _luminance(*fg[:3])), reverse=True)
                ratio = (hi + 0.05) / (lo + 0.05)
                if bg[3] < 1 or ratio < MIN_TOKEN_CONTRAST:
                    found.append(f"shading {k + 1}: weight {float(t['w']):+.3g}, text {t['fg']} on "
                                 f"{t['bg']}: {ratio:.2f}:1" + (" (translucent)" if bg[3] < 1 else ""))
        problems[f"{screen}:{page}"] = found
    assert seen, "no shaded token found"
    assert not any(problems.values()), _report(problems)


def test_token_shadings_follow_the_colour_convention(visits):
    """Every shaded-token output of the book (book/notation.md, Colours) has a key that names the
    explainer and the score it shades and says what the colours mean, and every token is green
    when its weight pushes logit 1 up, red when it pushes it down, unshaded without a weight;
    no output shades tokens outside that convention."""
    problems, seen = {}, 0
    for (screen, page), v in visits.items():
        if screen != "desktop" or "shading" not in v:
            continue
        found = []
        if v["shading"]["stray"]:
            found.append(f"{v['shading']['stray']} shaded spans outside a token shading (no key)")
        for k, sh in enumerate(v["shading"]["shadings"]):
            seen += 1
            key = sh["key"]
            if not re.search(r"[Ss]haded[:,]", key) or "towards" not in key or "away" not in key:
                found.append(f"shading {k + 1}: its key does not say what is shaded and what the "
                             f"colours mean: {key[:120]!r}")
            for t in sh["tokens"]:
                w = float(t["w"])
                want = None if not math.isfinite(w) or w == 0 else ("green" if w > 0 else "red")
                got, alpha = _hue(t["bg"])
                got = got if alpha >= 0.02 else None       # too faint to have a colour
                if got != want and not (got is None and alpha < 0.02 and want):
                    found.append(f"shading {k + 1}: weight {w:+.3g} shown {got or 'unshaded'} "
                                 f"({t['bg']}), the convention says {want or 'unshaded'}")
                    break
        problems[page] = found
    assert seen, "no token shading found in the book (chapter 1 has some)"
    assert not any(problems.values()), _report(problems)


def test_theorem_exercise_and_solution_boxes(visits):
    problems, numbering = {}, {}
    for (screen, page), v in visits.items():
        md = _source(page)
        if screen != "desktop" or md is None:
            continue
        text = md.read_text()
        want = {"proof": len(re.findall(r"^(?:```|:::)\{prf:(?:%s)\}" % "|".join(PRF_KINDS),
                                        text, re.MULTILINE)),
                "exercise": len(re.findall(r"^(?:```|:::)\{exercise\}", text, re.MULTILINE)),
                "solution": len(re.findall(r"^(?:```|:::)\{solution\}", text, re.MULTILINE))}
        if os.environ.get("ATTNXAI_EDITION") == "student":
            want["solution"] = 0
        got = v["counts"]
        problems[page] = [f"{k}: {got[k]} boxes on the page, {n} in {md.name}"
                          for k, n in want.items() if got[k] != n]
        numbering[page] = got["titles"]
    assert not any(problems.values()), _report(problems)
    # exercises are numbered per chapter: "Exercise <chapter>.1", "<chapter>.2", ...
    for page, titles in numbering.items():
        if titles and (page in CHAPTERS or page.startswith("notebooks/")):
            nums = [re.search(r"Exercise\s+(\d+)\.(\d+)", t) for t in titles]
            assert all(nums), f"{page}: exercise titles {titles} are not numbered per chapter"
            assert [int(m.group(2)) for m in nums] == list(range(1, len(nums) + 1)), titles
            assert len({m.group(1) for m in nums}) == 1, titles


def test_every_chapter_of_the_toc_follows_the_conventions(visits):
    """Every chapter _toc.yml lists is in the site and follows the conventions: the launch cell
    first (input hidden, its output saying which model runs), a chapter number, exercises
    numbered with it ("Exercise 7.1", ...), and a row in the syllabus for the chapter and for each
    of its exercises. (Figures: the test above; Colab, Binder and the .ipynb download: the links
    test below; the .ipynb in sync: tests/book/test_notebooks_sync.py.)"""
    assert CHAPTERS, f"no chapter in {TOC}"
    problems = {}
    syllabus = visits.get(("desktop", "book/syllabus.html"))
    assert syllabus is not None, "the site has no syllabus page (book/syllabus.html)"
    listed = {urlparse(urljoin("http://x/book/syllabus.html", a["href"])).path.lstrip("/")
              for a in syllabus["links"]}
    numbers = []
    for page in CHAPTERS:
        v = visits.get(("desktop", page))
        if v is None:
            problems[page] = [f"listed in {TOC.name} but not in the site"]
            continue
        found, ch = [], v["chapter"] or {}
        if not ch.get("first_cell_source", "").lstrip().startswith(course.LAUNCH_MARKER):
            found.append("the first code cell is not the launch cell")
        elif ch["first_cell_input_shown"]:
            found.append("the launch cell's source is shown (tag it hide-input)")
        elif not re.search(r"attnxai \S+: profile '(paper|quick)'", ch["first_cell_output"]):
            found.append(f"the launch cell does not say which model runs: "
                         f"{ch['first_cell_output'][:120]!r}")
        number = ch.get("number")
        if not number or not number.isdigit():
            found.append(f"no chapter number in the title ({number!r}): is its part numbered?")
        numbers.append(number)
        titles = v["counts"]["titles"]
        if not titles:
            found.append("no exercise")
        for t in titles:
            m = re.search(r"Exercise\s+(\d+)\.(\d+)", t)
            if not m or m.group(1) != number:
                found.append(f"exercise {t!r} is not numbered in chapter {number}")
            elif not re.search(rf"(?<![\d.]){m.group(1)}\.{m.group(2)}(?![\d.])", syllabus["text"]):
                found.append(f"exercise {m.group(1)}.{m.group(2)} is not in the syllabus")
        if page not in listed:
            found.append("the syllabus does not link to it")
        problems[page] = found
    assert not any(problems.values()), _report(problems)
    assert len(set(numbers)) == len(numbers), f"chapter numbers repeat: {numbers}"


def _link_problems(visits, site: Path, url: str, branch: str, chapters: list[str]):
    """What is wrong with the links of a site built for the repository ``url`` ("" for none):
    with one, a link to it on every page and Binder and Colab buttons on the chapters, pointing
    there; with none, no repository link, no launch button, no made-up address anywhere; on both,
    launch buttons only on the chapters (the pages Colab can open: an .ipynb beside the .md),
    the executed notebook in the download menu of every notebook page, its launch cell installing
    from the repository or from nowhere, and every internal link resolving."""
    owner_repo = url.removeprefix("https://github.com/")
    problems = {}
    for (screen, page), v in visits.items():
        if screen != "desktop":
            continue
        found = []
        hrefs = [a["href"] for a in v["links"]]
        html = (site / page).read_text()
        if url and url not in hrefs:
            found.append(f"no link to the repository {url}")
        if not url and ("source-repository-button" in html or 'git+https://' in html):
            found.append("a repository button or an install address, with no repository named")
        for fake in ("OWNER/REPOSITORY", "OWNER", "REPOSITORY"):
            if re.search(rf"\b{fake}\b", v["text"]) or fake in "".join(hrefs):
                found.append(f"the placeholder {fake!r} is on the page")
                break
        stem = Path(page).with_suffix("").as_posix()
        binder = [h for h in hrefs if h.startswith("https://mybinder.org/")]
        colab = [h for h in hrefs if h.startswith("https://colab.research.google.com/")]
        if page in chapters and url:
            want_b = (rf"^https://mybinder\.org/v2/gh/{re.escape(owner_repo)}/{re.escape(branch)}"
                      rf"\?urlpath=lab/tree/{re.escape(stem)}\.ipynb$")
            if len(binder) != 1 or not re.match(want_b, binder[0]):
                found.append(f"Binder link {binder}")
            want_c = (rf"^https://colab\.research\.google\.com/github/{re.escape(owner_repo)}/"
                      rf"blob/{re.escape(branch)}/{re.escape(stem)}\.ipynb$")
            if len(colab) != 1 or not re.match(want_c, colab[0]):
                found.append(f"Colab link {colab}")
            elif not (ROOT / f"{stem}.ipynb").is_file():
                found.append(f"Colab opens {stem}.ipynb, which is not in the repository")
        elif binder or colab:
            found.append(f"launch buttons on a page that is not a chapter with a notebook, or with "
                         f"no repository named: {binder + colab}")
        md = _source(page)
        if md is not None and md.read_text().lstrip().startswith("---") \
                and "kernelspec" in md.read_text()[:400]:
            downloads = [h for h in hrefs if h.endswith(".ipynb") and "_sources" in h]
            if len(downloads) != 1:
                found.append(f"download .ipynb links: {downloads}")
            else:
                try:
                    nb = json.loads((site / Path(page).parent / downloads[0]).resolve().read_text())
                    assert nb["nbformat"] == 4 and nb["cells"]
                    first = "".join(next(c["source"] for c in nb["cells"] if c["cell_type"] == "code"))
                except Exception as exc:      # noqa: BLE001 - reported below
                    found.append(f"download {downloads[0]}: not a notebook ({exc})")
                else:
                    if first.startswith(course.LAUNCH_MARKER) and first != course.launch_cell(url):
                        found.append(f"the downloaded notebook's launch cell is not the one for "
                                     f"{url or 'no repository'}: {first[:300]!r}")
        # every internal link resolves to a file of the site
        for a in v["links"]:
            href = a["href"]
            if re.match(r"^[a-z]+:", href) or href.startswith(("#", "//")):
                continue
            target = urlparse(urljoin("http://x/" + page, href)).path
            path = site / unquote(target).lstrip("/")
            if path.is_dir():
                path = path / "index.html"
            if not path.exists():
                found.append(f"broken internal link {href}")
        problems[page] = found
    return problems


def test_launch_download_and_repository_links(visits, site):
    """The site for _config.yml's repository (none while the book is unpublished)."""
    url, branch = _repository()
    problems = _link_problems(visits, site, url, branch, CHAPTERS)
    assert not any(problems.values()), _report(problems)


def test_a_build_for_a_repository_points_there(repository_visits, repository_site):
    """The few pages built for TEST_REPOSITORY (as the deploy workflow builds for
    $GITHUB_REPOSITORY): every button, link and launch cell points there, launch buttons on the
    chapter only."""
    url = f"https://github.com/{TEST_REPOSITORY}"
    branch = _repository()[1]
    chapters = [f"{c}.html" for c in REPOSITORY_PAGES["chapters"]]
    assert set(chapters) <= {p for _, p in repository_visits}, "the chapter was not built"
    problems = _link_problems(repository_visits, repository_site, url, branch, chapters)
    problems = {p: [f for f in found if not f.startswith("broken internal link")]
                for p, found in problems.items()}   # this small book leaves pages out
    launch = repository_visits[("desktop", chapters[0])]["chapter"]["first_cell_source"]
    assert f'git+{url}"' in launch, f"the chapter's launch cell does not install from {url}"
    assert not any(problems.values()), _report(problems)


def test_solution_dropdown_opens_on_click(site, visits):
    """On the desktop, each page with a solution dropdown shows it closed and opens it on a click
    (clicked by :func:`visits`, once the page is measured)."""
    pages = [p for p in _pages(site) if 'class="solution dropdown' in (site / p).read_text()]
    if os.environ.get("ATTNXAI_EDITION") == "student":
        assert not pages, f"solutions in the student edition: {pages}"
        return
    assert pages, "no page has a solution dropdown"
    problems = [f"{name}: {visits[('desktop', name)]['dropdown']}" for name in pages
                if visits[("desktop", name)]["dropdown"] is not None]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("query", ["gradient", "LIME"])
def test_search_returns_results(server, browser, query):
    page = browser.new_page(viewport=DESKTOP)
    page.goto(f"{server}search.html?q={query}", wait_until="load")
    results = page.locator("#search-results ul.search li")
    results.first.wait_for(timeout=20000)
    n = results.count()
    links = [results.nth(i).locator("a").first.get_attribute("href") for i in range(min(n, 5))]
    # each result's snippet is fetched from its page: wait for the first, read those there
    page.locator("#search-results ul.search li p.context").first.wait_for(timeout=20000)
    snippets = page.locator("#search-results ul.search li p.context").all_text_contents()
    page.close()
    assert n >= 2, f"search for {query!r}: {n} results"
    assert all(h and ".html" in h for h in links), links
    raw = [s for s in snippets if any(p.search(s) for p in TEX)]
    assert not raw, f"search snippets with raw TeX: {raw[:3]}"
    # a snippet quotes the page's text, not its download menu ("09_shapley_ig.ipynb", ".md")
    menu = [s for s in snippets if re.search(r"\.(?:ipynb|md|pdf)\b", s)]
    assert not menu, f"search snippets quoting the download menu: {menu[:3]}"
