// The book's own script (every page; _config.yml html_js_files).
// Wide content: every element of the article wider than the column must scroll inside a
// container that shows a hint. The check runs on a settled page: web fonts loaded (they move
// line breaks), MathJax's typesetting done (it changes widths) and the layout unchanged across
// two animation frames; it repeats until it changes nothing, then marks the page
// (data-attnxai-settled). Any later change of the article's size (a resize, a dropdown opened)
// clears the mark and settles the page again.
(function () {
  "use strict";
  var HINT = "wide content: scroll sideways \u2192";

  function article() { return document.querySelector("article.bd-article") || document.querySelector("main"); }

  function scrolls(el) {
    var o = getComputedStyle(el).overflowX;
    return o === "auto" || o === "scroll";
  }

  function mark(box) {
    if (box.classList.contains("attnxai-scrolls")) return;
    box.classList.add("attnxai-scrolls");
    if (!box.hasAttribute("tabindex")) box.setAttribute("tabindex", "0");  // keyboard scrolling
    var hint = document.createElement("div");
    hint.className = "attnxai-scroll-hint";
    hint.setAttribute("aria-hidden", "true");
    hint.textContent = HINT;
    box.parentNode.insertBefore(hint, box);
  }

  function unmark(box) {
    box.classList.remove("attnxai-scrolls");
    var prev = box.previousElementSibling;
    if (prev && prev.classList.contains("attnxai-scroll-hint")) prev.remove();
  }

  // The width an image may take: the content box of its nearest block container (not the
  // article's clientWidth, which includes its padding).
  function room(img) {
    var box = img.parentElement;
    while (box && box.clientWidth === 0) box = box.parentElement;
    if (!box) return 0;
    var cs = getComputedStyle(box);
    return box.clientWidth - (parseFloat(cs.paddingLeft) || 0) - (parseFloat(cs.paddingRight) || 0);
  }

  // On a narrow screen a figure keeps at least 3/4 of its drawn size (labels stay readable)
  // and scrolls sideways instead of shrinking to the column.
  function sizeFigures(art) {
    art.querySelectorAll(".cell_output img").forEach(function (img) {
      var col = room(img);
      if (!col) return;
      // the drawn size: the width the notebook gave (retina: half the pixels), else the pixels
      if (!img.dataset.attnxaiWidth) {
        var w0 = parseFloat(img.style.width) || parseFloat(img.getAttribute("width")) || img.naturalWidth;
        if (!w0) return;
        img.dataset.attnxaiWidth = w0;
        img.dataset.attnxaiStyle = img.getAttribute("style") || "";
      }
      var w = parseFloat(img.dataset.attnxaiWidth);
      if (0.75 * w > col) {
        img.style.maxWidth = "none";
        img.style.height = "auto";
        img.style.width = Math.ceil(Math.max(col, 0.75 * w)) + "px";
      } else {
        img.setAttribute("style", img.dataset.attnxaiStyle);
      }
    });
  }

  // Whether an element inside box reaches past the column's right edge (the criterion for a
  // hint, the same as tests/test_browser.py's).
  function pastColumn(box, right) {
    var inner = box.querySelectorAll("*");
    for (var i = 0; i < inner.length; i++) {
      var r = inner[i].getBoundingClientRect();
      if (r.width > 0 && r.right > right) return true;
    }
    return false;
  }

  // One pass over the article; returns how many containers it marked, unmarked or wrapped.
  function fix(art) {
    var changes = 0;
    sizeFigures(art);
    var right = art.getBoundingClientRect().right + 1;
    // containers with nothing past the column any more lose their hint (e.g. after a resize)
    art.querySelectorAll(".attnxai-scrolls").forEach(function (box) {
      if (!pastColumn(box, right)) { unmark(box); changes++; }
    });
    var all = art.querySelectorAll("*");
    for (var i = 0; i < all.length; i++) {
      var el = all[i];
      if (el.closest(".attnxai-scroll-hint")) continue;
      var r = el.getBoundingClientRect();
      if (r.width === 0 || r.right <= right) continue;
      // the nearest ancestor that scrolls and itself fits in the column
      var box = el.parentElement, found = null;
      while (box && box !== art) {
        if (scrolls(box) && box.getBoundingClientRect().right <= right) { found = box; break; }
        box = box.parentElement;
      }
      if (!found) {
        // the highest ancestor that still fits: make it scroll
        var child = el;
        while (child.parentElement && child.parentElement !== art &&
               child.parentElement.getBoundingClientRect().right > right) child = child.parentElement;
        found = child.parentElement && child.parentElement !== art ? child.parentElement : child;
        if (found === el || found.getBoundingClientRect().right > right) {
          var wrap = document.createElement("div");
          wrap.className = "attnxai-scroll";
          el.parentNode.insertBefore(wrap, el);
          wrap.appendChild(el);
          found = wrap;
        } else {
          found.classList.add("attnxai-scroll");
        }
        changes++;
      }
      if (!found.classList.contains("attnxai-scrolls")) { mark(found); changes++; }
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
    return mj && mj.startup && mj.startup.promise ? mj.startup.promise : Promise.resolve();
  }

  function fontsDone() {
    return document.fonts && document.fonts.ready ? document.fonts.ready : Promise.resolve();
  }

  var generation = 0, observed = null;

  function settle() {
    var art = article();
    if (!art) return Promise.resolve();
    var mine = ++generation;
    document.documentElement.removeAttribute("data-attnxai-settled");
    return fontsDone().then(mathDone).then(fontsDone).then(function () { return stable(art); })
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
