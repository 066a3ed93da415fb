# `make book`: everything from a fresh clone to the site in _build/html.
# `make test`: the package's tests plus a build of the whole book on the quick model.
# `make student`: the chapters as notebooks without solutions, and the site without solutions.
# `make pdf`: the whole book as one PDF, the instructor's edition: each chapter's solutions at
#   its end (needs TeX: see README.md). `make pdf-student`: the student's, without solutions.
# `make notebooks`: rewrite the .ipynb beside the chapters (for Colab) from the .md.
# The IMDb archive: $ATTNXAI_IMDB_ARCHIVE if set (a local copy), else downloaded and md5-checked.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
export ATTNXAI_CACHE ?= $(CURDIR)/.cache
export PYTHONHASHSEED := 0

.PHONY: book test setup data model model-paper model-live train-paper bench clean notebooks student pdf pdf-student

# The set-up: .venv with the versions of constraints.txt. uv (from PyPI, pinned there, installed
# into .venv) installs them faster than pip (68 s against 244 s, warm caches: README.md,
# benchmarks/bench_setup.py); pip does
# it where uv cannot be installed, or with `make setup INSTALLER=pip`. PyTorch goes first, from
# where pip is configured to take it (PIP_EXTRA_INDEX_URL for the CPU build on Linux, README.md;
# a wheel on disk named in pip.conf): uv reads no pip configuration, so UV_WITH_PIP_SOURCES hands
# it pip's (`pip config list`: index-url, extra-index-url, find-links), and pip installs torch
# itself if uv fails. uv then keeps the torch it finds installed. uv installs torch from its cache
# in 2 s where pip unpacks the wheel again (52 s). Python writes a module's bytecode when it first
# imports it, except with PYTHONDONTWRITEBYTECODE set: then every process would compile every
# module it imports again, so the set-up imports once what the book's processes import
# (PRECOMPILE_*: the chapters' kernels, the training, Sphinx), with bytecode writing on, and each of
# those modules keeps its .pyc in .venv: about a quarter of site-packages (3,400 of 13,400
# modules), 19 s in two processes on 2 idle cores. uv's --compile-bytecode compiled all of it
# (33 s) but torch, which that call had not installed (uv 0.13).
INSTALLER ?= uv
INSTALL_SPEC := -c constraints.txt -e ".[book,test,dask]"
#: Imported by the set-up to write their bytecode (see above), in two processes at once: the
#: numerical libraries (the training, the chapters' computations) and the notebooks' and Sphinx's.
#: A module a process imports that is not among these or their imports is compiled in that
#: process, as it always was.
PRECOMPILE_NUMERICS := torch safetensors.torch numba numba.np.arrayobj numba.np.linalg \
  numba.np.npyimpl scipy.integrate scipy.optimize scipy.stats scipy.special sklearn.linear_model \
  lime.lime_text pyarrow.parquet tqdm.auto filelock
PRECOMPILE_NOTEBOOKS := sympy sympy.codegen sympy.combinatorics pandas pandas.io.formats.style \
  matplotlib.pyplot matplotlib.backends.backend_agg matplotlib_inline.backend_inline seaborn \
  IPython IPython.core.debugger prompt_toolkit.shortcuts ipykernel.kernelapp ipykernel.ipkernel \
  ipykernel.debugger nbclient jupyter_cache.cache.main jupyter_book.cli.main sphinx.application \
  sphinx.builders.html sphinx.cmd.build myst_nb myst_nb.sphinx_ext sphinx_design \
  sphinx_exercise sphinx_proof sphinxcontrib.bibtex sphinx_book_theme
define PRECOMPILE_IMPORTS
import importlib, os, subprocess, sys
sys.dont_write_bytecode = False             # this process only: it writes what it imports
first, *others = sys.argv[1:]               # a group of modules per process, all at once
children = [subprocess.Popen([sys.executable, "-c", os.environ["PRECOMPILE_IMPORTS"], group])
            for group in others]
for name in first.split():
    importlib.import_module(name)
sys.exit(max([child.wait() for child in children], default=0))
endef
export PRECOMPILE_IMPORTS
define UV_WITH_PIP_SOURCES
import os, subprocess, sys
flags = {"index-url": "--index-url", "extra-index-url": "--extra-index-url",
         "find-links": "--find-links"}
listed = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True,
                        text=True).stdout
pairs = {}                                  # each source once, in pip's order
for line in listed.splitlines():
    key, _, value = line.partition("=")
    flag = flags.get(key.rpartition(".")[2])
    for v in value.strip().strip("'\"").split() if flag else ():
        pairs[(flag, v)] = None
uv, *args = sys.argv[1:]
os.execv(uv, [uv, "pip", "install", *[x for pair in pairs for x in pair], *args])
endef
export UV_WITH_PIP_SOURCES

$(STAMP): pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@if [ "$(INSTALLER)" = uv ] && $(BIN)/python -m pip install --quiet -c constraints.txt uv; then \
	  echo "set-up with uv: torch from pip's sources, then the rest"; \
	  { $(BIN)/python -c "$$UV_WITH_PIP_SOURCES" $(BIN)/uv --quiet --python $(BIN)/python \
	      --no-deps -c constraints.txt torch || \
	    $(BIN)/python -m pip install --quiet --no-deps --no-compile -c constraints.txt torch; } && \
	  $(BIN)/uv pip install --quiet --python $(BIN)/python $(INSTALL_SPEC) && \
	  { [ -z "$$PYTHONDONTWRITEBYTECODE" ] || PYDEVD_DISABLE_FILE_VALIDATION=1 $(BIN)/python -c \
	      "$$PRECOMPILE_IMPORTS" "$(PRECOMPILE_NUMERICS)" "$(PRECOMPILE_NOTEBOOKS)"; }; \
	else \
	  echo "set-up with pip$(if $(filter uv,$(INSTALLER)), (uv could not be installed))"; \
	  $(BIN)/python -m pip install --quiet --upgrade pip && \
	  $(BIN)/python -m pip install --quiet $(INSTALL_SPEC); \
	fi
	$(BIN)/python -m ipykernel install --sys-prefix --name python3 >/dev/null
	touch $(STAMP)

setup: $(STAMP)

data: setup
	$(BIN)/python -c "import attnxai; print(attnxai.load_imdb())"

# The models the chapters load: the paper's, and the multilayer-quick model of chapter 8's live
# run. Each is found offline in the cache (`info`), so targets that only need them (student, pdf:
# they reuse the executed chapters of `make book`) never need IMDb. Missing, they are trained at
# the same time, one process and one thread each: the paper's training leaves the second core to
# the small one, which chapter 8 would otherwise train in the chapters' phase (about a minute).
# The trainings load IMDb themselves (no process of its own for `data`).
model: setup
	@$(MAKE) --no-print-directory -j2 model-paper model-live

model-paper: setup
	@$(BIN)/python -m attnxai info --profile paper >/dev/null 2>&1 || $(MAKE) --no-print-directory train-paper

model-live: setup
	@$(BIN)/python -m attnxai info --profile multilayer-quick >/dev/null 2>&1 || \
	  OMP_NUM_THREADS=1 $(BIN)/python -m attnxai train --profile multilayer-quick --no-progress

train-paper: setup
	$(BIN)/python -m attnxai train --profile paper

book: model
	$(BIN)/jupyter-book build . -W --keep-going
	@echo "Open _build/html/index.html, or: $(BIN)/python -m http.server -d _build/html 8000"

notebooks: setup
	$(BIN)/python -m attnxai notebooks

student: model
	rm -rf _build/student
	$(BIN)/python -m attnxai notebooks --student --out _build/student/notebooks
	ATTNXAI_EDITION=student $(BIN)/jupyter-book build . -W --keep-going --path-output _build/student
	@echo "Student notebooks: _build/student/notebooks; site without solutions: _build/student/_build/html"

pdf: model
	$(BIN)/jupyter-book build . --builder pdflatex -W --keep-going
	@echo "PDF: _build/latex/attnxai-book.pdf"

pdf-student: model
	ATTNXAI_EDITION=student ATTNXAI_EXECUTION_CACHE=$(CURDIR)/_build/.jupyter_cache \
	  $(BIN)/jupyter-book build . --builder pdflatex -W --keep-going --path-output _build/student-pdf
	@echo "PDF: _build/student-pdf/_build/latex/attnxai-book.pdf"

# The tests in TEST_JOBS processes (pytest-xdist; the book's build, browser and PDF checks stay
# together in one of them, tests/book/test_book.py): the cores, at least 2, at most 4.
TEST_JOBS ?= $(shell $(PYTHON) -c "import os; print(min(4, max(2, os.cpu_count() or 1)))")

test: setup
	$(BIN)/python -m pytest -n $(TEST_JOBS) --dist loadgroup

bench: setup
	$(BIN)/python benchmarks/bench_train.py

clean:
	rm -rf _build
