#!/usr/bin/env bash
# The whole book as one PDF (`make pdf`'s build), in the instructor's and the student's editions
# (`make pdf-student`), on the quick model, read page by page by tests/check_pdf.py: ink past the margins, outputs printed as Python reprs, numbering against
# the site and the syllabus, box titles, the proof index, TeX's overfull boxes. Needs Debian's
# TeX packages (README.md, "Teaching from it") and poppler-utils (pdfinfo, pdftotext, pdftoppm).
# tests/book/test_pdf.py runs it where TeX is installed (and skips, saying so, where it is not).
#   bash tests/check_pdf.sh            # from the repository root; prints the time it took
# Pages with a problem are written as PNGs to shots/ in the folder the PDF was built in
# (_build/test or _build/pdfcheck, and _build/student-test or _build/pdfcheck-student).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN="${BIN:-.venv/bin}"
start=$(date +%s)
# The PDF is built in the folder of the quick-profile test build of the site when there is one
# (tests/booksite.py; `make test` builds it first): the latex builder then reuses the site's
# read documents and executed chapters (Sphinx's environment: nothing is read or run again).
# Elsewhere it is built from scratch in _build/pdfcheck.
if [ -d _build/test/_build/.doctrees ]; then
  out=_build/test
else
  out=_build/pdfcheck
fi
mkdir -p "$out/_build"
# the student's PDF: the same chapters (their executed outputs reused), no solutions
# (likewise in the folder of the student site's test build, tests/book/test_book.py, when there is one)
if [ -d _build/student-test/_build/.doctrees ]; then
  student=_build/student-test
else
  student=_build/pdfcheck-student
fi
mkdir -p "$student"
export ATTNXAI_PROFILE=quick
# the execution cache of this profile and seed (ATTNXAI_SEED: tests/booksite.py sets the tests' one)
cache_name="$("$BIN/python" -c 'import sys; sys.path.insert(0, "book/_ext")
from attnxai_book import execution_cache_name; print(execution_cache_name())')"
student_edition() {
  ATTNXAI_EDITION=student ATTNXAI_EXECUTION_CACHE="$PWD/$out/_build/$cache_name" \
    "$BIN/jupyter-book" build . --builder pdflatex -W --keep-going --path-output "$student" \
    > "$student/build.log" 2>&1 || { tail -60 "$student/build.log"; return 1; }
  rm -rf "$student/shots"
  "$BIN/python" tests/check_pdf.py "$student/_build/latex" --edition student \
    --shots "$student/shots"
}
# Where the test build executed the chapters already, the student's edition is built and read at
# the same time as the instructor's (two processes: the builds share only that execution cache,
# which they read). Elsewhere the instructor's build executes them, and the student's follows.
student_pid=""
if [ "$out" = _build/test ]; then
  student_edition > "$student/check.log" 2>&1 &
  student_pid=$!
  trap '[ -z "$student_pid" ] || kill "$student_pid" 2>/dev/null || true' EXIT
fi
"$BIN/jupyter-book" build . --builder pdflatex -W --keep-going \
  --path-output "$out" > "$out/build.log" 2>&1 || { tail -60 "$out/build.log"; exit 1; }
latex="$out/_build/latex"
pdf="$latex/attnxai-book.pdf"
test -s "$pdf" || { echo "no PDF at $pdf"; exit 1; }
pdftotext -layout "$pdf" "$out/book.txt"
fail=0
for title in "The attention classifier" "Attention weights as explanations" \
             "The gradient in closed form" "Gradient explanations against attention" \
             "Syllabus" "Bibliography"; do
  grep -q "$title" "$out/book.txt" || { echo "missing from the PDF: $title"; fail=1; }
done
# unresolved references and undefined macros show as ?? or as raw TeX in the text
if grep -nE '(^|[^?])[?][?]([^?]|$)' "$out/book.txt" | head -5 | grep -q .; then echo "unresolved references (??)"; fail=1; fi
if grep -n 'Undefined control sequence' "$latex/"*.log | head -3 | grep -q .; then
  echo "undefined TeX macros"; fail=1
fi
rm -rf "$out/shots"
"$BIN/python" tests/check_pdf.py "$latex" --shots "$out/shots" || fail=1
if [ -n "$student_pid" ]; then
  wait "$student_pid" || fail=1
  student_pid=""
  cat "$student/check.log"
else
  student_edition || fail=1
fi
echo "PDFs: $pdf (instructor), $student/_build/latex/attnxai-book.pdf (student);" \
  "built and checked in $(( $(date +%s) - start )) s"
exit $fail
