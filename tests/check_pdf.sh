#!/usr/bin/env bash
# The whole book as one PDF (`make pdf`'s build), on the quick model, checked once: too slow for
# the test command (it runs every chapter and XeLaTeX several times). Needs Debian's TeX packages
# (README.md, "Teaching from it") and poppler-utils (pdfinfo, pdftotext).
#   bash tests/check_pdf.sh            # from the repository root; prints the time it took
set -euo pipefail
cd "$(dirname "$0")/.."
BIN="${BIN:-.venv/bin}"
out=_build/pdfcheck
start=$(date +%s)
mkdir -p "$out/_build"
# reuse the quick-profile test build's executed chapters when they are there
if [ -d _build/test/_build/.jupyter_cache-quick ] && [ ! -d "$out/_build/.jupyter_cache-quick" ]; then
  cp -a _build/test/_build/.jupyter_cache-quick "$out/_build/"
fi
ATTNXAI_PROFILE=quick "$BIN/jupyter-book" build . --builder pdflatex -W --keep-going \
  --path-output "$out" > "$out/build.log" 2>&1 || { tail -60 "$out/build.log"; exit 1; }
pdf="$out/_build/latex/attnxai-book.pdf"
test -s "$pdf" || { echo "no PDF at $pdf"; exit 1; }
pages=$(pdfinfo "$pdf" | awk '/^Pages:/ {print $2}')
pdftotext -layout "$pdf" "$out/book.txt"
fail=0
for title in "The attention classifier" "Attention weights as explanations" \
             "The gradient in closed form" "Gradient explanations against attention" \
             "Syllabus" "Bibliography"; do
  grep -q "$title" "$out/book.txt" || { echo "missing from the PDF: $title"; fail=1; }
done
# unresolved references and undefined macros show as ?? or as raw TeX in the text
if grep -nE '(^|[^?])[?][?]([^?]|$)' "$out/book.txt" | head -5 | grep -q .; then echo "unresolved references (??)"; fail=1; fi
if grep -n 'Undefined control sequence' "$out/_build/latex/"*.log | head -3 | grep -q .; then
  echo "undefined TeX macros"; fail=1
fi
echo "PDF: $pdf, $pages pages, $(du -h "$pdf" | cut -f1), built in $(( $(date +%s) - start )) s"
exit $fail
