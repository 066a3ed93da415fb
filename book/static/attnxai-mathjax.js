// MathJax's line breaking as the book wants it, on top of _config.yml's mathjax3_config (this file
// is loaded after that configuration and before MathJax itself, which Sphinx defers; pages
// without maths load neither: book/_ext/attnxai_book.py). Two of MathJax 4's own extension
// points, nothing drawn by hand:
// - a fraction is never broken: MathJax breaks the numerator and the denominator of a fraction
//   wider than the column into lines of their own, which reads as a different formula (the
//   denominator under half of the numerator). The line-breaking visitor (the documented option
//   output.linebreaks.LinebreakVisitor) measures a fraction as one unbreakable box instead;
//   MathJax still breaks the formula around it, and a fraction wider than a phone's column is
//   the author's to rewrite (tests/book/test_browser.py finds any display formula wider than its
//   column);
// - inline maths breaks after a relation or a binary operator, as TeX does, never before it: a
//   line of a sentence never starts with "=" or "+" (MathML's default break style for an
//   operator is "before"; the TeX input's post-filter sets "after" on the operators of inline
//   formulas, leaving display formulas, where a continued line starts with its operator).
(function () {
  "use strict";
  var config = window.MathJax;
  if (!config) return;                       // no maths on this page
  config.startup = config.startup || {};
  config.startup.ready = function () {
    var Visitor = MathJax._.output.common.LinebreakVisitor.LinebreakVisitor;
    class WholeFractions extends Visitor {
      visitMfracNode(wrapper, i) { this.visitDefault(wrapper, i); }
    }
    // (in place: the output jax reads this very object)
    var output = MathJax.config.output = MathJax.config.output || {};
    output.linebreaks = output.linebreaks || {};
    output.linebreaks.LinebreakVisitor = WholeFractions;
    MathJax.startup.defaultReady();
    MathJax.startup.input[0].postFilters.add(function (args) {
      if (args.math.display) return;
      args.data.root.walkTree(function (node) {
        if (node.isKind("mo") && !node.attributes.isSet("linebreakstyle")) {
          node.attributes.set("linebreakstyle", "after");
        }
      });
    });
  };
})();
