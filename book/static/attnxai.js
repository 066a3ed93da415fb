// The book's own script (every page; _config.yml html_js_files).
// Wide content: every element of the article wider than the column must scroll inside a
// container that shows a hint. After the maths is typeset (MathJax changes widths) and on resize,
// find the overflowing elements, make their nearest fitting ancestor scroll, and mark it.
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

  function fix() {
    var art = article();
    if (!art) return;
    sizeFigures(art);
    var right = art.getBoundingClientRect().right + 1;
    // containers that no longer overflow lose their hint (e.g. after a resize)
    art.querySelectorAll(".attnxai-scrolls").forEach(function (box) {
      if (box.scrollWidth <= box.clientWidth + 1) unmark(box);
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
      }
      if (found.scrollWidth > found.clientWidth + 1) mark(found);
    }
    document.documentElement.setAttribute("data-attnxai-scroll-checked", "1");
  }

  function later() {
    if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
      MathJax.startup.promise.then(fix);
    } else {
      fix();
    }
  }

  window.attnxaiFixWideContent = fix;
  window.addEventListener("load", later);
  // content revealed later (a solution dropdown, a hidden cell) is checked when it opens
  document.addEventListener("click", function () { setTimeout(fix, 350); });
  var timer = null;
  window.addEventListener("resize", function () { clearTimeout(timer); timer = setTimeout(fix, 150); });
})();
