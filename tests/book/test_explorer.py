"""The explorer page (book/explore.md, book/static/explorer): a reader's text explained in the
browser must give the package's numbers (attnxai.explorer.explain_page, i.e. attnxai.explain) on
the model the page exports (attnxai.explorer.projected_model), in real Chromium.

* the reading of a text (core.js readText) against attnxai's on all 25,000 IMDb test reviews,
  token for token, with the vocabulary's ids, the truncation and the dropped characters;
* every explainer on random tiny models (rank-deficient and not, float64), whose tables core.js
  reads as the page does: no build needed;
* the built page (tests/booksite.py's site, the quick model): reviews typed into it against the
  package on 200 test reviews and the edge cases (empty text, one word, only unknown words, 10,000
  characters, emoji, HTML in the text), offline once loaded, keyboard only, labelled controls,
  scores announced (aria-live), the phone's width, copy as JSON, the model's fingerprint, the
  page's weight;
* the student edition and the PDF's LaTeX leave the explorer out and say where it is.

The tolerance (:data:`TOL`) is relative to each text's largest score of each explainer: the page
computes in float64 from float32 tables, the package's attention and gradients run in float32.
"""

from __future__ import annotations

import concurrent.futures
import datetime
import json
import os
import re
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from attnxai import explorer, normalize_for_lime, tokenize
from attnxai.text import dropped_characters
from attnxai.threads import single_threaded
from booksite import OUT, ROOT, book_env, execution_cache
from conftest import make_tiny, tiny_text
from test_browser import DESKTOP, PHONE, _serve, browser, server, site  # noqa: F401 (fixtures)

# A unit of `make test`'s (pytest-xdist, --dist loadgroup) that reads the test site: sent to
# whichever process asks for work first once the book's group has built it (tests/conftest.py,
# next_unit), it finds the site built once for the run (tests/booksite.py, once_per_run).
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("site-explorer")]

#: Largest |page - package| allowed, relative to the text's largest |score| of the explainer.
TOL = explorer.TOLERANCE
STATIC = ROOT / "book" / "static" / "explorer"
#: Test reviews compared on the built page: every 125th of the 25,000 (200 reviews).
PAGE_REVIEWS = range(0, 25_000, 125)
#: The reviews are fetched from the module server once (texts.json), not sent with each call.
JS_READ = """async ([base, start, stop]) => {
  const core = await import(new URL("../core.js", base).href);
  const model = window.__model || (window.__model = await core.loadModel(base));
  const all = window.__texts || (window.__texts = await (await fetch(new URL("../texts.json", base))).json());
  return JSON.stringify(all.slice(start, stop).map(t => { const d = core.readText(model, t);
    return d.error ? {error: d.error}
      : {tokens: d.tokens, rows: d.rows, n: d.nTokens, cut: d.cut, unknown: d.unknown, dropped: d.dropped}; }));
}"""
JS_EXPLAIN = """async ([base, texts]) => {
  const core = await import(new URL("../core.js", base).href);
  const model = await core.loadModel(base);
  return JSON.stringify(texts.map(t => { const d = core.readText(model, t);
    return d.error ? {error: d.error} : core.toJSON(model, d, core.explain(model, d)); }));
}"""
#: Each text typed into the built page's explorer as a reader's input does (its value set, an
#: input event), then, once the page has shown its result (data-seq past the one before, state
#: ready or refused: what Explore.wait waits for), what Copy as JSON gives. Started by one call
#: (window.__typed, a promise of the JSON), collected by another (JS_TYPED), so that several
#: pages type at once.
JS_TYPED = "() => window.__typed"
JS_TYPE_EACH = """([texts, limit]) => { window.__typed = (async () => {
  const x = document.querySelector(".attnxai-explorer"), box = x.querySelector("textarea");
  const out = [];
  for (const [i, t] of texts.entries()) {
    const before = +(x.dataset.seq || 0);
    const shown = () => +x.dataset.seq > before && ["ready", "refused"].includes(x.dataset.state);
    await new Promise((resolve, reject) => {
      const timer = setTimeout(() => { seen.disconnect();
        reject(new Error(`text ${i}: no result within ${limit} ms`)); }, limit);
      const seen = new MutationObserver(() => {
        if (shown()) { seen.disconnect(); clearTimeout(timer); resolve(); } });
      seen.observe(x, {attributes: true, attributeFilter: ["data-seq", "data-state"]});
      box.focus();
      box.value = t;
      box.dispatchEvent(new InputEvent("input", {bubbles: true, inputType: "insertText", data: t}));
    });
    out.push(x.explorer.json());
  }
  return JSON.stringify(out);
})(); }"""
#: Pages of the Explore page that reviews are typed into at once (each waits for its own
#: debounce while the other computes).
TYPING_PAGES = 2


def _gaps(page: dict, ex, labels=None) -> dict[str, float]:
    """Per explainer (``labels``, default every one of the page), max |page - package| /
    max |package| on one text."""
    out = {}
    for m in explorer.METHODS:
        if labels is not None and m.label not in labels:
            continue
        want = np.asarray(ex.token_scores[m.method])
        got = np.asarray(page["token_scores"][m.label])
        assert got.shape == want.shape, (m.label, got.shape, want.shape)
        top = np.abs(want).max()
        out[m.label] = float(np.abs(got - want).max() / top) if top > 0 else float(np.abs(got).max())
    want = np.asarray(ex.logits)            # (both logits can be near 0: at least a scale of 1)
    out["logits"] = float(np.abs(np.asarray(page["logits"]) - want).max()
                          / max(np.abs(want).max(), 1.0))
    return out


def _explain_quietly(pre, text):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return explorer.explain_page(pre, text)


@pytest.fixture(scope="module")
def module_folder(tmp_path_factory):
    """A folder served over HTTP with the page's modules and a blank page (no build)."""
    folder = tmp_path_factory.mktemp("explorer-modules")
    for f in STATIC.glob("*.js"):
        shutil.copy(f, folder / f.name)
    (folder / "index.html").write_text("<!doctype html><title>explorer modules</title>")
    return folder


@pytest.fixture(scope="module")
def module_server(module_folder):
    yield from _serve(module_folder)


# ---------------------------------------------------------------- reading a text
def test_reading_matches_the_package_on_every_test_review(imdb, book_model, module_folder,
                                                          module_server, browser):  # noqa: F811
    """core.js reads each of the 25,000 test reviews as attnxai does: the tokens of
    normalize_for_lime cut to the model's 255, the vocabulary's ids (UNK for unknown words, and
    for 'unk'), the count of tokens cut, the unknown words and the characters dropped."""
    meta = explorer.export(book_model, module_folder / "quick")
    vocab, limit = book_model.vocab, book_model.model.max_len - 1
    row_word = ["[CLS]", "UNK"] + meta["words"]
    texts = [r.text for r in imdb.test]
    assert len(texts) == 25_000
    (module_folder / "texts.json").write_text(json.dumps(texts))
    chunks = range(0, len(texts), 2500)

    def package(start):                 # the package's reading, here while the page reads
        return [(tokenize(normalize_for_lime(text, 10**9)), dropped_characters(text))
                for text in texts[start:start + 2500]]

    page = browser.new_page()
    page.goto(module_server + "index.html")
    bad = []
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        wanted = [pool.submit(package, start) for start in chunks]
        for k, start in enumerate(chunks):
            got = json.loads(page.evaluate(JS_READ, [module_server + "quick/", start, start + 2500]))
            assert len(got) == min(2500, len(texts) - start)
            want, wanted[k] = wanted[k].result(), None          # (its memory, once read)
            for i, (text, g, (full, dropped)) in enumerate(zip(texts[start:], got, want)):
                kept = full[:limit]
                want_rows = [w if vocab.stoi.get(w, vocab.unk_id) != vocab.unk_id else "UNK"
                             for w in kept]
                if ("error" in g or g["tokens"] != kept
                        or [row_word[r] for r in g["rows"]] != want_rows
                        or g["n"] != len(full) or g["cut"] != len(full) - len(kept)
                        or g["unknown"] != [w for w in dict.fromkeys(kept) if w not in vocab.stoi]
                        or g["dropped"] != dropped):
                    bad.append(start + i)
    page.close()
    assert not bad, f"{len(bad)} of 25,000 reviews read differently, e.g. test reviews {bad[:10]}"


# ---------------------------------------------------------------- random models
TINY_CASES = [dict(seed=s, n_heads=h, d_embed=d, scale=sc)
              for s, (h, d, sc) in enumerate([(3, 8, 1.0), (1, 8, 0.5), (2, 32, 1.5), (4, 16, 2.0),
                                              (3, 4, 1.0), (6, 64, 0.3)])]


@pytest.mark.parametrize("case", TINY_CASES, ids=lambda c: "-".join(f"{k}{v}" for k, v in c.items()))
def test_every_explainer_equals_the_package_on_random_models(case, module_folder, module_server,
                                                             browser):  # noqa: F811
    """On random float64 models (d_embed from 4, fewer dimensions than the 3K directions the
    export keeps, to 64) and texts of 1 to 38 words with repeats and unknown words, every number
    of core.js equals explain_page on the exported model, to TOL."""
    pre = make_tiny(**case)
    name = "tiny-" + "-".join(str(v) for v in case.values())
    explorer.export(pre, module_folder / name)
    exported = explorer.projected_model(pre)
    texts = [tiny_text(n, seed=case["seed"] * 100 + n) for n in (1, 2, 3, 7, 15, 38)]
    page = browser.new_page()
    page.goto(module_server + "index.html")
    got = json.loads(page.evaluate(JS_EXPLAIN, [module_server + name + "/", texts]))
    page.close()
    worst = {}
    for text, g in zip(texts, got):
        try:
            ex = _explain_quietly(exported, text)
        except ValueError as exc:                         # LIME's limit on one token
            ex = None
            assert len(text.split()) == 1 or "vocabulary" in str(exc), exc
        if ex is None:
            continue
        assert "error" not in g, (text, g)
        assert g["tokens"] == ex.tokens
        for k, v in _gaps(g, ex).items():
            worst[k] = max(worst.get(k, 0.0), v)
    assert worst and max(worst.values()) <= TOL, worst


# ---------------------------------------------------------------- the built page
@pytest.fixture(scope="module")
def explore_url(site, server) -> str:
    page = site / "book" / "explore.html"
    assert page.is_file(), "the site has no book/explore.html: is it in the table of contents?"
    return server + "book/explore.html"


@pytest.fixture(scope="module")
def exported(book_model):
    return explorer.projected_model(book_model)


class Explore:
    """The built Explore page in one browser context, with every request it makes recorded."""

    def __init__(self, browser, url: str, viewport=DESKTOP):  # noqa: F811
        self.context = browser.new_context(viewport=viewport)
        self.context.grant_permissions(["clipboard-read", "clipboard-write"])
        self.requests, self.errors = [], []
        self.context.on("request", lambda r: self.requests.append(r.url))
        self.page = self.context.new_page()
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.goto(url, wait_until="load")
        self.page.wait_for_function("document.documentElement.hasAttribute('data-attnxai-settled')",
                                    timeout=120_000)
        self.root = self.page.locator(".attnxai-explorer").first
        self.box = self.page.get_by_role("textbox", name="Your review (English)")

    def seq(self) -> int:
        return int(self.root.get_attribute("data-seq") or 0)

    def wait(self, after: int) -> None:
        self.page.wait_for_function(
            "n => { const x = document.querySelector('.attnxai-explorer');"
            " return +x.dataset.seq > n && ['ready', 'refused'].includes(x.dataset.state); }",
            arg=after, timeout=60_000)

    def wait_for_text(self, text: str) -> None:
        """Until the result shown is that of ``text`` (typed key by key, the page may have shown
        a part of it first)."""
        self.page.wait_for_function(
            "t => { const x = document.querySelector('.attnxai-explorer');"
            " const r = x.explorer.result; return x.dataset.state === 'ready' && r && r.doc.text === t; }",
            arg=" ".join(tokenize(normalize_for_lime(text))), timeout=60_000)

    def explain(self, text: str) -> dict:
        before = self.seq()
        self.box.fill(text)
        self.wait(before)
        return self.page.evaluate("document.querySelector('.attnxai-explorer').explorer.json()")

    def close(self):
        self.context.close()


def test_page_equals_the_package_on_200_test_reviews(imdb, exported, explore_url,
                                                     browser):  # noqa: F811
    """200 test reviews (every 125th) typed into the page: its tokens, truncation, unknown words,
    logits and every explainer equal explain_page's on the exported model, to TOL; the worst gap
    per explainer is printed."""
    texts = [imdb.test[i].text for i in PAGE_REVIEWS]

    def package():      # one thread (Chromium computes on the other core meanwhile)
        with single_threaded():
            return [_explain_quietly(exported, t) for t in texts]

    with concurrent.futures.ThreadPoolExecutor(1) as pool:         # the package meanwhile
        expected = pool.submit(package)
        pages = [Explore(browser, explore_url) for _ in range(TYPING_PAGES)]
        shares = [texts[k::TYPING_PAGES] for k in range(TYPING_PAGES)]
        for page, share in zip(pages, shares):
            page.page.evaluate(JS_TYPE_EACH, [share, 60_000])
        typed = [json.loads(page.page.evaluate(JS_TYPED)) for page in pages]
        for page in pages:
            page.close()
        got = [None] * len(texts)
        for k, share in enumerate(typed):
            got[k::TYPING_PAGES] = share
        expected = expected.result()
    assert len(got) == len(texts)
    worst, where, bad = {}, {}, []
    for i, (g, ex) in enumerate(zip(got, expected)):
        assert g["tokens"] == ex.tokens, f"review {PAGE_REVIEWS[i]}: tokens differ"
        assert (g["n_tokens"], g["cut"], g["unknown"]) == (ex.n_tokens, ex.cut, ex.unknown)
        for k, v in _gaps(g, ex).items():
            if v > worst.get(k, -1):
                worst[k], where[k] = v, PAGE_REVIEWS[i]
            if v > TOL:
                bad.append((PAGE_REVIEWS[i], k, v))
    print("worst |page - package| / max |package| over 200 test reviews:",
          {k: f"{v:.2e} (review {where[k]})" for k, v in worst.items()})
    assert not [e for page in pages for e in page.errors], [page.errors for page in pages]
    assert not bad, bad[:10]
    assert sum(ex.cut > 0 for ex in expected) > 0, "no review long enough to be cut"


EDGE = {
    "empty": "",
    "blank": "   \n\t ",
    "one word": "good",
    "only unknown words": "zzxq qqzv wvvk",
    "emoji": "A great film \U0001F600\U0001F3AC, truly moving \u2764\ufe0f",
    "html": '<img src="x" onerror="window.__attnxai_xss = 1"><script>window.__attnxai_xss = 2'
            '</script><b>bold</b> a great film &amp; a <i>dull</i> plot',
    "non-latin only": "\u4e00\u90e8\u5f88\u597d\u7684\u7535\u5f71",
}


def test_edge_cases_on_the_page(imdb, exported, explore_url, browser):  # noqa: F811
    """Each edge case as the package treats it: refused with its message (empty, blank, only
    unknown words, letters but none in A-Z), LIME's limit alone refused on one word, 10,000
    characters cut to 255 tokens and said so, emoji dropped and said so, HTML shown as text and
    never run."""
    long_text = " ".join(r.text for r in imdb.test[:40])[:10_000]
    assert len(long_text) == 10_000
    page = Explore(browser, explore_url)
    cases = {**EDGE, "10,000 characters": long_text}
    for name, text in cases.items():
        got = page.explain(text)
        try:
            ex = _explain_quietly(exported, text)
        except ValueError as exc:
            ex, message = None, str(exc)
        status = page.root.locator(".ax-status").inner_text()
        if ex is None and name != "one word":
            assert got.get("error") == message, (name, got, message)
            assert page.root.get_attribute("data-state") == "refused"
            assert message in status, (name, status)
            continue
        if name == "one word":                       # the package refuses LIME's limit there
            assert "one token" in got["not_computed"]["LIME limit (replace)"]
            methods = [m.method for m in explorer.METHODS if m.method != "LIME limit"]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                from attnxai import explain
                ex = explain(exported, text, methods)
            for m in explorer.METHODS:
                if m.method != "LIME limit":
                    want = np.asarray(ex.token_scores[m.method])
                    assert np.abs(np.asarray(got["token_scores"][m.label]) - want).max() \
                        <= TOL * max(np.abs(want).max(), 1e-300), m.label
            continue
        assert got["tokens"] == ex.tokens and got["cut"] == ex.cut, name
        assert max(_gaps(got, ex).values()) <= TOL, (name, _gaps(got, ex))
        notes = page.root.locator(".ax-notes").inner_text()
        if ex.cut:
            assert f"the last {ex.cut} were cut" in notes, notes
        if dropped_characters(text):
            assert "were dropped" in notes, notes
            assert all(ch in notes for ch in dropped_characters(text)[:8]), notes
    # the HTML was text: no element from it in the page, its script never ran
    page.explain(EDGE["html"])
    assert page.page.evaluate("window.__attnxai_xss === undefined")
    assert page.root.locator("img, script, b, i").count() == 0
    assert "img" in page.root.locator(".attnxai-row").inner_text()
    assert not page.errors, page.errors
    page.close()


def test_typing_is_debounced_and_works_offline(imdb, exported, explore_url, site,
                                               browser):  # noqa: F811
    """Typed key by key, the page computes nothing until the reader pauses (the page's clock is
    Playwright's: no timing in the test), then once, and shows the package's numbers for the
    whole text; offline once loaded, it still explains; it requested nothing outside the site,
    and the explorer's files weigh at most 15 MB."""
    page = Explore(browser, explore_url)
    p = page.page
    p.clock.install()                              # the page's timers run when the test says
    p.clock.pause_at(datetime.datetime.now() + datetime.timedelta(hours=1))
    before = page.seq()
    text = "an uneven film, with a great score and a weak script"
    page.box.fill("")
    page.box.press_sequentially(text)
    p.clock.run_for(100)                           # a pause shorter than the debounce
    assert page.seq() == before and page.box.input_value() == text
    p.clock.run_for(200)
    page.wait(before)
    assert page.seq() == before + 1, "more than one update for one pause"
    got = p.evaluate("document.querySelector('.attnxai-explorer').explorer.json()")
    assert got["text"] == " ".join(tokenize(normalize_for_lime(text)))
    assert max(_gaps(got, _explain_quietly(exported, text)).values()) <= TOL
    p.clock.resume()
    page.context.set_offline(True)
    offline = imdb.test[7].text
    got = page.explain(offline)
    assert max(_gaps(got, _explain_quietly(exported, offline)).values()) <= TOL
    page.context.set_offline(False)
    base = explore_url.split("book/explore.html")[0]
    outside = [u for u in page.requests if not u.startswith(base) and not u.startswith("data:")]
    assert not outside, outside
    assert not page.errors, page.errors
    page.close()
    weight = sum(f.stat().st_size for f in (site / "_static" / "explorer").iterdir())
    assert weight <= 15e6, f"the explorer's files weigh {weight / 1e6:.1f} MB"


def test_keyboard_labels_announcements_and_copy(book_model, explore_url, browser):  # noqa: F811
    """Keyboard only: Tab reaches the text box, typing explains, the arrow keys choose the shaded
    method, Tab and Enter switch to the table and copy the JSON; every control has a label; the
    status region (aria-live) announces the prediction and the strongest tokens as text; the
    model named is the cached one, with its weights' digest."""
    from attnxai.model.store.checkpoint import describe

    page = Explore(browser, explore_url)
    p = page.page
    for _ in range(80):                                    # from the top of the page
        if p.evaluate("document.activeElement && document.activeElement.classList.contains('ax-text')"):
            break
        p.keyboard.press("Tab")
    else:
        pytest.fail("Tab never reached the explorer's text box")
    p.keyboard.press("Control+A")
    p.keyboard.type("a dull film with a wonderful cast")
    page.wait_for_text("a dull film with a wonderful cast")
    # every control is labelled
    unlabeled = p.evaluate("""() => Array.from(document.querySelectorAll(
        '.attnxai-explorer input, .attnxai-explorer textarea, .attnxai-explorer button'))
        .filter(e => !(e.labels && e.labels.length) && !e.getAttribute('aria-label') && !e.textContent.trim())
        .map(e => e.outerHTML)""")
    assert not unlabeled, unlabeled
    status = page.root.locator(".ax-status")
    assert status.get_attribute("aria-live") == "polite"
    said = status.inner_text()
    assert re.search(r"Predicted (positive|negative), P\(positive\) = 0\.\d\d", said), said
    assert re.search(r'strongest push towards positive: "\w+" \([+\u2212][\d.e+-]+\)', said), said
    # arrow keys move the method radios, Tab to the view radios, then to the table
    radio = page.root.get_by_role("radio", name="Shapley (replace)")
    radio.focus()
    p.keyboard.press("ArrowLeft")
    assert page.root.get_by_role("radio", name="LIME limit (replace)").is_checked()
    page.root.get_by_role("radio", name="shaded tokens").focus()
    p.keyboard.press("ArrowRight")
    assert page.root.get_by_role("radio", name="a table of every score").is_checked()
    table = page.root.locator("table.ax-table")
    assert table.count() == 1 and table.locator("tbody tr").count() == 7
    headers = table.locator("thead th").all_inner_texts()
    assert headers[2:] == [m.label for m in explorer.METHODS], headers
    page.root.get_by_role("button", name="Copy as JSON").focus()
    p.keyboard.press("Enter")
    p.wait_for_function("document.querySelector('.ax-copied').textContent.startsWith('Copied')")
    copied = json.loads(p.evaluate("navigator.clipboard.readText()"))
    assert copied["tokens"] == "a dull film with a wonderful cast".split()
    assert set(copied["token_scores"]) == {m.label for m in explorer.METHODS}
    info = describe(book_model)
    assert copied["model"] == info["model"] == book_model.path.name
    assert copied["weights_sha256"] == info["fingerprint"]["weights_sha256"]
    details = page.root.locator("details.ax-model")
    details.locator("summary").focus()
    p.keyboard.press("Enter")
    assert info["fingerprint"]["weights_sha256"] in details.inner_text()
    assert info["model"] in details.inner_text()
    assert not page.errors, page.errors
    page.close()


def test_readable_on_a_phone(imdb, explore_url, browser):  # noqa: F811
    """At 390 px nothing of the explorer reaches past the column, and the table scrolls inside
    its own box (a full review, every explainer)."""
    page = Explore(browser, explore_url, viewport=PHONE)
    page.explain(imdb.test[3].text)
    page.root.get_by_role("radio", name="a table of every score").check()
    p = page.page
    p.wait_for_function("document.documentElement.hasAttribute('data-attnxai-settled')")
    right = p.evaluate("document.querySelector('article.bd-article').getBoundingClientRect().right")
    past = p.evaluate("""r => Array.from(document.querySelectorAll('.attnxai-explorer *'))
        .filter(e => { const b = e.getBoundingClientRect(); return b.width > 0 && b.right > r + 1
                       && !e.closest('.ax-table-box'); }).map(e => e.tagName + '.' + e.className)""",
                      right)
    assert not past, past[:5]
    box = page.root.locator(".ax-table-box")
    assert box.evaluate("b => b.scrollWidth > b.clientWidth && b.getBoundingClientRect().right <= "
                        + str(right + 1)), "the table does not scroll inside its box"
    assert box.evaluate("b => b.classList.contains('attnxai-scrolls')"), "no scroll cue"
    assert p.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    page.close()


COMPACT = ("notebooks/02_attention.html", "notebooks/03_gradient.html",
           "notebooks/05_lime_text.html", "notebooks/09_shapley_ig.html")


def test_compact_explorers_in_the_chapters(site, server, exported, browser):  # noqa: F811
    """Chapters 2, 3, 5 and 9 (those the site holds) have one compact explorer of their
    explainers: nothing is loaded before the reader starts, then Explain computes its text and
    its numbers equal the package's, on a phone's screen."""
    pages = [p for p in COMPACT if (site / p).is_file()]
    if not pages:
        pytest.skip("the site was built without chapters 2, 3, 5 and 9 (ATTNXAI_TEST_TOC)")
    opened = []
    for name in pages:                      # every page loads at once, each in its own context
        ctx = browser.new_context(viewport=PHONE)
        requests = []
        ctx.on("request", lambda r, requests=requests: requests.append(r.url))
        page = ctx.new_page()
        page.goto(server + name, wait_until="commit")
        opened.append((name, ctx, requests, page))
    for name, ctx, requests, page in opened:
        page.wait_for_load_state("load")
        page.wait_for_function("document.documentElement.hasAttribute('data-attnxai-settled')",
                               timeout=120_000)
        root = page.locator(".attnxai-explorer")
        assert root.count() == 1, name
        assert not [u for u in requests if "model.bin" in u], f"{name} loaded the model unasked"
        methods = root.get_attribute("data-methods").split(",")
        root.get_by_role("button", name="Explain this text").click()
        page.wait_for_function("+document.querySelector('.attnxai-explorer').dataset.seq > 0",
                               timeout=60_000)
        got = page.evaluate("document.querySelector('.attnxai-explorer').explorer.json()")
        assert sorted(got["token_scores"]) == sorted(methods), name
        ex = _explain_quietly(exported, root.locator("textarea").input_value())
        gaps = _gaps(got, ex, methods)
        assert set(gaps) == set(methods) | {"logits"} and max(gaps.values()) <= TOL, (name, gaps)
        assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"], name
        ctx.close()


def test_student_edition_and_latex_leave_the_explorer_out(book_model, site):
    """The student edition's Explore page has no explorer (and nothing exported) and says where it
    is; the LaTeX of the PDF says where it is too and holds no HTML of it."""
    toc = OUT.parent / "explore-toc.yml"
    toc.write_text("format: jb-book\nroot: book/intro\nparts:\n  - caption: Front matter\n"
                   "    chapters:\n      - file: book/explore\n")
    jb = Path(sys.executable).parent / "jupyter-book"
    env = book_env()                             # the site's executed pages, reused
    env["ATTNXAI_EXECUTION_CACHE"] = str(execution_cache(env, site.parents[1]))
    # (both in the student edition, which reuses the test build's executed page: the LaTeX
    # block is the same in both editions)
    for edition, builder in (("student", "html"), ("student", "latex")):
        out = OUT.parent / f"explore-{builder}"
        run = subprocess.run([str(jb), "build", str(ROOT), "--keep-going", "--builder", builder,
                              "--toc", str(toc), "--path-output", str(out)],
                             capture_output=True, text=True, cwd=ROOT,
                             env={**env, "ATTNXAI_EDITION": edition})
        assert run.returncode == 0, (run.stdout + run.stderr)[-4000:]
        if builder == "html":
            html = (out / "_build" / "html" / "book" / "explore.html").read_text()
            assert 'class="attnxai-explorer"' not in html and "explorer/ui.js" not in html
            assert "leaves the explorer out" in html and "book/explore.html" in html
            assert not (out / "_build" / "html" / "_static" / "explorer" / "model.bin").exists()
        else:
            tex = next((out / "_build" / "latex").glob("*.tex")).read_text()
            assert "attnxai-explorer" not in tex
            assert "The explorer runs in a web browser" in tex
