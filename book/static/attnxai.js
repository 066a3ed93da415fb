// The book's own script (every page; _config.yml html_js_files).
// Wide content. MathJax breaks display equations wider than the column and wraps inline maths
// with the sentence (_config.yml); whatever is still wider than the column scrolls sideways in a
// box of its own, with a cue that never covers the content nor interrupts a sentence:
// - a block (a display equation, a table, a code cell, an output, a figure) scrolls with a hint
//   on a line of its own above it and shadows at the edge where more content is;
// - something inside a sentence (an inline formula MathJax cannot break, a long literal)
//   scrolls within its line, the shadows its only cue: no label inside a paragraph.
// A table with a narrow view shows it where the full table is wider than its column.
// The check runs on a settled page: web fonts loaded (they move line breaks), MathJax's
// typesetting done (it changes widths) and the layout unchanged across two animation frames; it
// repeats until it changes nothing, then marks the page (data-attnxai-settled). Any later change
// of the article's size (a resize, a dropdown opened) clears the mark and settles the page again.
(function () {
  "use strict";
  var HINT = "wide content: scroll sideways \u2192";
  var HINT_DOWN = "long output: scroll inside the box \u2193";
  // Running text: a hint inside one of these would break a sentence.
  var TEXT = "p, li, dt, dd, td, th, figcaption, caption, h1, h2, h3, h4, h5, h6, .admonition-title";

  function article() { return document.querySelector("article.bd-article") || document.querySelector("main"); }

  function scrolls(el) {
    var o = getComputedStyle(el).overflowX;
    return o === "auto" || o === "scroll";
  }

  // MathJax's copy of each formula as MathML for screen readers is clipped to nothing, whatever
  // its width: never content that a reader sees.
  // Nor is what a closed <details> holds (a table's full view on a phone, a hidden output):
  // Chromium lays it out all the same. Opened, it resizes the article, and the page settles again.
  function unseen(el) { return !!el.closest("mjx-assistive-mml, .attnxai-scroll-hint, details:not([open]) > :not(summary)"); }

  function inline(el) { return getComputedStyle(el).display.indexOf("inline") === 0; }

  function mark(box, down) {
    box.classList.add("attnxai-scrolls");
    if (down) box.classList.add("attnxai-scrolls-down");
    if (!box.hasAttribute("tabindex")) box.setAttribute("tabindex", "0");  // keyboard scrolling
    if (box.classList.contains("attnxai-scroll-inline")) return;           // no label in a sentence
    var hint = document.createElement("div");
    hint.className = "attnxai-scroll-hint";
    hint.setAttribute("aria-hidden", "true");
    hint.textContent = down ? HINT_DOWN : HINT;
    box.parentNode.insertBefore(hint, box);
  }

  function unmark(box) {
    box.classList.remove("attnxai-scrolls", "attnxai-scroll-inline", "attnxai-scrolls-down");
    var prev = box.previousElementSibling;
    if (prev && prev.classList.contains("attnxai-scroll-hint")) prev.remove();
  }

  // Inside running text, the outermost inline element that holds el (an inline formula, a
  // literal): it scrolls within its line. Null when el is not part of a sentence.
  function inlineAtom(el) {
    var text = el.closest(TEXT);
    if (!text) return null;
    var atom = null;
    for (var x = el; x && x !== text; x = x.parentElement) if (inline(x)) atom = x;
    return atom;
  }

  // Figures are scaled to the column (CSS: max-width 100 %), legend and all, never scrolled
  // sideways. Where that shows one at under 3/4 of its drawn size (a phone), a tap opens the
  // picture at full size.
  function sizeFigures(art) {
    art.querySelectorAll(".cell_output img").forEach(function (img) {
      var drawn = parseFloat(img.style.width) || parseFloat(img.getAttribute("width")) ||
                  img.naturalWidth / 2;
      var shown = img.getBoundingClientRect().width;
      var small = drawn > 0 && shown > 0 && shown < 0.75 * drawn;
      if (small && !img.dataset.attnxaiZoom) {
        img.dataset.attnxaiZoom = "1";
        img.style.cursor = "zoom-in";
        img.title = "Tap to open the figure at full size";
        img.addEventListener("click", function () { window.open(img.src, "_blank"); });
      }
    });
  }

  // Tables with a narrow view (attnxai.chapters.tables, phone=): the full table where it fits
  // its column; where it does not (a phone), the narrow view, the full table collapsed under it.
  // Measured on the full table itself, so the choice does not depend on what a pass changed.
  function tableViews(art) {
    var changes = 0;
    art.querySelectorAll(".attnxai-tables[data-attnxai-phone]").forEach(function (box) {
      var full = box.querySelector(".attnxai-table-full"), phone = box.querySelector(".attnxai-table-phone");
      var table = full && full.querySelector("table");
      if (!table || !phone) return;
      var before = full.hidden;
      full.hidden = false;
      var wide = table.getBoundingClientRect().width > full.clientWidth + 1;
      full.hidden = wide;
      phone.hidden = !wide;
      if (before !== wide) changes++;
    });
    return changes;
  }

  // A box that scrolls its own content (an output that is longer or wider than the room it is
  // given, a code block) with no element past the column: its text is what overflows.
  function scrollsItself(el) {
    var cs = getComputedStyle(el);
    var x = (cs.overflowX === "auto" || cs.overflowX === "scroll") && el.scrollWidth > el.clientWidth + 1;
    // (a box that scrolls sideways scrolls down too, by a pixel or two where glyphs reach past
    // its lines: only more than a line of text hidden below counts)
    var y = (cs.overflowY === "auto" || cs.overflowY === "scroll") && el.scrollHeight > el.clientHeight + 24;
    return x ? "x" : y ? "y" : "";
  }

  // Whether an element inside box reaches past the column's right edge (the criterion for a
  // cue, the same as tests/book/test_browser.py's).
  function pastColumn(box, right) {
    var inner = box.querySelectorAll("*");
    for (var i = 0; i < inner.length; i++) {
      if (unseen(inner[i])) continue;
      var r = inner[i].getBoundingClientRect();
      if (r.width > 0 && r.right > right) return true;
    }
    return false;
  }

  // Whether a marked box would still reach past the column without its cue (an inline box is
  // measured as it would be in the sentence, not as its own scrolling box).
  function stillWide(box, right) {
    if (!box.classList.contains("attnxai-scroll-inline")) return pastColumn(box, right);
    box.classList.remove("attnxai-scroll-inline");
    var wide = pastColumn(box, right);
    box.classList.add("attnxai-scroll-inline");
    return wide;
  }

  // The box in which el, wider than the column, scrolls: the nearest ancestor that scrolls and
  // fits in the column, else one made to scroll (el's inline atom, or the highest ancestor that
  // still fits, or a wrapper around el).
  function scrollBox(el, art, right) {
    for (var box = el.parentElement; box && box !== art; box = box.parentElement) {
      if (scrolls(box) && box.getBoundingClientRect().right <= right) return box;
    }
    var atom = inlineAtom(el);
    if (atom) {
      atom.classList.add("attnxai-scroll-inline");
      return atom;
    }
    var child = el;
    while (child.parentElement && child.parentElement !== art &&
           child.parentElement.getBoundingClientRect().right > right) child = child.parentElement;
    var found = child.parentElement && child.parentElement !== art ? child.parentElement : child;
    if (found === el || found.getBoundingClientRect().right > right) {
      var wrap = document.createElement("div");
      wrap.className = "attnxai-scroll";
      el.parentNode.insertBefore(wrap, el);
      wrap.appendChild(el);
      return wrap;
    }
    found.classList.add("attnxai-scroll");
    return found;
  }

  // One pass over the article; returns how many boxes it marked, unmarked or made to scroll.
  function fix(art) {
    var changes = tableViews(art);
    sizeFigures(art);
    var right = art.getBoundingClientRect().right + 1;
    // boxes with nothing past the column any more lose their cue (e.g. after a resize)
    art.querySelectorAll(".attnxai-scrolls").forEach(function (box) {
      if (!stillWide(box, right) && !scrollsItself(box)) { unmark(box); changes++; }
    });
    var all = art.querySelectorAll("*");
    for (var i = 0; i < all.length; i++) {
      var el = all[i];
      if (unseen(el)) continue;
      var r = el.getBoundingClientRect();
      if (r.width === 0 || r.right <= right) continue;
      var box = scrollBox(el, art, right);
      if (!box.classList.contains("attnxai-scrolls")) { mark(box); changes++; }
    }
    // outputs whose own text scrolls (a long line, a long output; code cells scroll as code
    // does everywhere, with no cue)
    for (var j = 0; j < all.length; j++) {
      var own = unseen(all[j]) || all[j].classList.contains("attnxai-scrolls") ||
                !all[j].closest(".cell_output") ? "" : scrollsItself(all[j]);
      if (own && !inlineAtom(all[j])) { mark(all[j], own === "y"); changes++; }
    }
    return changes;
  }

  // ---------------------------------------------------------------- a settled page
  function frame() { return new Promise(function (resolve) { requestAnimationFrame(resolve); }); }

  function layout(art) {
    var r = art.getBoundingClientRect();
    return [r.left, r.width, r.height, art.scrollWidth, document.documentElement.scrollWidth].join(" ");
  }

  // Resolves once the article's layout is the same on two consecutive frames (at most ~2 s of
  // frames: an animation that never stops must not hold the page unsettled).
  function stable(art) {
    var before = layout(art), left = 120;
    function next() {
      return frame().then(frame).then(function () {
        var now = layout(art);
        if (now === before || --left <= 0) return;
        before = now;
        return next();
      });
    }
    return next();
  }

  function mathDone() {
    var mj = window.MathJax;
    // a MathJax failure is reported by MathJax itself (console); the page still settles
    var done = mj && mj.startup && mj.startup.promise ? mj.startup.promise : Promise.resolve();
    return done.catch(function () {});
  }

  function fontsDone() {
    return document.fonts && document.fonts.ready ? document.fonts.ready : Promise.resolve();
  }

  // What other scripts of the page must finish before it is measured (window.attnxaiPending: the
  // explorer's first result, book/static/explorer/ui.js); a failure there is theirs to report.
  function othersDone() {
    return Promise.all((window.attnxaiPending || []).map(function (p) {
      return Promise.resolve(p).catch(function () {});
    }));
  }

  var generation = 0, observed = null;

  function settle() {
    var art = article();
    if (!art) return Promise.resolve();
    var mine = ++generation;
    document.documentElement.removeAttribute("data-attnxai-settled");
    return fontsDone().then(othersDone).then(mathDone).then(fontsDone).then(function () { return stable(art); })
      .then(function () {
        // a pass can move what follows (a hint, a wrapper): repeat until one changes nothing
        for (var pass = 0; pass < 10 && fix(art) > 0; pass++) { /* again */ }
        return stable(art);
      })
      .then(function () {
        if (mine !== generation) return;             // a newer settle is under way
        observed = layout(art);
        document.documentElement.setAttribute("data-attnxai-settled", "1");
      });
  }

  // Search results: Sphinx shows a snippet of each page's HTML text, where maths is raw TeX
  // (MathJax typesets the pages, not the snippets); a formula reads "(formula)" there instead.
  // The article's header (the download menu: "09_shapley_ig.ipynb", ".md"), the navigation and
  // the scroll cues are no text of the page: left out, so that a snippet quotes the page.
  function readableSearchSnippets() {
    var search;
    // searchtools.js declares `const Search` (a global binding, not a window property), after
    // this script: look it up by name once the page is parsed
    try { search = Search; } catch (e) { return; }
    if (!search || !search.htmlToText || search.htmlToText.attnxai) return;
    var original = search.htmlToText;
    search.htmlToText = function (html, anchor) {
      var doc = new DOMParser().parseFromString(html, "text/html");
      doc.querySelectorAll(".math, mjx-container").forEach(function (m) {
        m.replaceWith(doc.createTextNode("(formula)"));
      });
      doc.querySelectorAll(".bd-header-article, .header-article, .prev-next-area, .bd-sidebar-secondary, " +
                           ".attnxai-scroll-hint, .toggle-details__summary").forEach(function (m) {
        m.remove();
      });
      return original(doc.documentElement.outerHTML, anchor);
    };
    search.htmlToText.attnxai = true;
  }
  // before searchtools.js's own DOMContentLoaded handler runs the query (this one is added first)
  document.addEventListener("DOMContentLoaded", readableSearchSnippets);

  window.attnxaiSettle = settle;
  window.addEventListener("load", function () {
    settle().then(function () {
      // later changes of the article's size (a resize, a dropdown opened, a hidden cell shown)
      var art = article();
      if (!art || !window.ResizeObserver) return;
      new ResizeObserver(function () {
        if (layout(art) !== observed) settle();
      }).observe(art);
    });
  });
})();
