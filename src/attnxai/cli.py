"""Command line: ``python -m attnxai <command>`` (or the ``attnxai`` console script).

Every command is listed in :data:`COMMANDS` (name -> (add_arguments, run, help)); each ``run``
takes the parsed namespace and returns an exit code. The flags mean the same in every command
(``--profile``, ``--methods``, ``--num-samples``, ``--kernel-width``, ``--target``, ``--set``,
``--no-progress``), and every command that could use a flag takes it (``--no-progress``: a
training, a study, an explanation; ``--set METHOD.FIELD=VALUE``: any method's settings, for
``explain`` and ``faithfulness``); an old spelling still works and says which to use.

Errors a user can fix (a wrong value, a file or folder the system refuses, a damaged checkpoint, a
package to install, a request over the memory budget: ``ValueError``, ``OSError``,
:class:`attnxai.errors.UserError`) print one line and exit with status 2; anything else is a bug
and keeps its traceback. ``--debug`` shows the traceback of every error. SIGTERM stops a command as Ctrl-C does (exit status 130): a run's
worker processes are killed and a cluster client closed on the way out.
"""

from __future__ import annotations

import argparse
import json
import re
import signal
import sys
from collections.abc import Callable

from .chapters import paper


class _Deprecated(argparse.Action):
    """An old spelling of a flag: stores into the new one's destination and says so."""

    def __init__(self, option_strings, dest, new: str, **kwargs):
        self.new = new
        super().__init__(option_strings, dest, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        print(f"{parser.prog}: note: {option_string} is deprecated, use {self.new}",
              file=sys.stderr)
        setattr(namespace, self.dest, values)


def _deprecated(p: argparse.ArgumentParser, old: str, new: str) -> None:
    """Accept ``old`` as a deprecated spelling of the flag ``new`` (hidden from --help)."""
    p.add_argument(old, dest=new.lstrip("-").replace("-", "_"), action=_Deprecated, new=new,
                   help=argparse.SUPPRESS)


# ---------------------------------------------------------------- the shared flags
def _progress_flag(p: argparse.ArgumentParser) -> None:
    """``--no-progress``, taken by every command that shows progress (a training, a study, an
    explanation). In a log (output that is not a terminal) a bar writes a line every few
    seconds at most (:mod:`attnxai.progress`)."""
    p.add_argument("--no-progress", action="store_true", help="no progress bar")


def _set_flag(p: argparse.ArgumentParser) -> None:
    """``--set METHOD.FIELD=VALUE``: any setting of any method
    (:func:`attnxai.registry.parse_settings`)."""
    p.add_argument("--set", action="append", default=[], metavar="METHOD.FIELD=VALUE",
                   help="a setting of one method, e.g. SmoothGrad.n_samples=20 or "
                        "LIME.bow=false (repeatable; the fields of attnxai.registry's settings "
                        "classes)")


# ---------------------------------------------------------------- train / info
def _train_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--profile", default="paper",
                   help="paper (the authors' settings), quick, multilayer (our 6 x 6 "
                        "reconstruction; resumes at its last finished epoch if killed), "
                        "multilayer-quick or paper-skip")
    p.add_argument("--archive", default=None,
                   help="IMDb .tar.gz on disk (else $ATTNXAI_IMDB_ARCHIVE, else download)")
    p.add_argument("--device", default="cpu",
                   help="where to train: cpu (default), cuda, cuda:N or mps (results equal the "
                        "CPU's to float rounding)")
    p.add_argument("--no-download", action="store_true",
                   help="train here even when the book's published model of the same cache key "
                        "could be downloaded")
    _authors_flag(p)
    _progress_flag(p)


def _authors_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument("--authors-optimizer", action="store_true",
                   help="the profile trained the authors' way, with dense AdamW instead of lazy "
                        "AdamW (paper, quick, paper-skip; another cache key)")


def _profile_config(args: argparse.Namespace):
    """The profile name, or its configuration with the authors' optimiser."""
    from .model.profiles import authors_recipe

    return authors_recipe(args.profile) if args.authors_optimizer else args.profile


def _train_run(args: argparse.Namespace) -> int:
    from .model.trained import pretrained

    pre = pretrained(_profile_config(args), archive=args.archive, device=args.device,
                     download=not args.no_download, progress=not args.no_progress)
    m = pre.metrics
    ref = paper.reported("multilayer_accuracy" if pre.model.n_layers > 1 else
                         "single_layer_accuracy")
    print(f"checkpoint: {pre.path}")
    print(f"test accuracy {m['test_accuracy']:.4f} on {m['n_test']} reviews "
          f"(paper: {ref}); validation "
          f"{m['valid_accuracy']:.4f}; trained in {m['train_seconds']:.0f} s "
          f"({m['train_reviews_per_second']:.0f} reviews/s)")
    return 0


def _info_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--profile", default="paper", help="paper or quick (default paper)")
    p.add_argument("--archive", default=None,
                   help="IMDb .tar.gz the model was trained on (default: $ATTNXAI_IMDB_ARCHIVE, "
                        "else any known IMDb archive; nothing is downloaded)")
    p.add_argument("--path", default=None,
                   help="a checkpoint folder to verify and describe instead of a cached profile")
    p.add_argument("--published", action="store_true",
                   help="also compare it, file by file (sha256), with the model the book "
                        "publishes under the same key (reads the published index)")
    _authors_flag(p)


def _info_run(args: argparse.Namespace) -> int:
    """Offline: finds the cached model (or loads --path), verifies it, prints its key, the
    sha256 of its files, where it came from and its metrics; ``--published`` compares it with the
    book's published model (online)."""
    from .model.store.checkpoint import describe, load
    from .model.trained import pretrained

    if args.path is not None:
        pre = load(args.path)
    else:
        pre = pretrained(_profile_config(args), archive=args.archive, train_if_missing=False,
                         download=False, progress=False)
    out = describe(pre)
    same = True
    if args.published:
        from .model.store.hub import compare_published

        same, out["published"] = compare_published(pre.path)
    print(json.dumps(out, indent=2))
    return 0 if same else 1


def _publish_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", required=True,
                   help="the folder to write (e.g. _build/html/models, served beside the site): "
                        "one folder per model and index.json")
    p.add_argument("--profiles", default="paper,multilayer",
                   help="comma-separated profiles whose cached models to publish (default "
                        "paper,multilayer); one not in the cache is skipped, saying so")
    p.add_argument("--require", default="paper",
                   help="comma-separated profiles that must be in the cache (default paper; "
                        "'' for none)")
    p.add_argument("--archive", default=None,
                   help="IMDb .tar.gz the models were trained on (default: any known archive)")


def _publish_run(args: argparse.Namespace) -> int:
    """Copies the cached models (verified) and writes the index the package downloads from."""
    from .model.store.cache import candidates
    from .model.store.hub import publish
    from .model.profiles import get_config

    names = [s.strip() for s in args.profiles.split(",") if s.strip()]
    required = {s.strip() for s in args.require.split(",") if s.strip()}
    missing = required - set(names)
    if missing:
        raise ValueError(f"--require names {sorted(missing)}, which --profiles does not list")
    folders = []
    for name in names:
        found = [f for f, _ in candidates(get_config(name), args.archive) if f.is_dir()]
        if not found and name in required:
            raise FileNotFoundError(f"no cached {name!r} model to publish: run `python -m "
                                    f"attnxai train --profile {name}` first")
        if not found:
            print(f"attnxai publish-models: {name}: not in the cache, skipped", file=sys.stderr)
        folders += found
    if not folders:
        raise FileNotFoundError(f"none of {names} is in the cache: nothing to publish")
    index = publish(folders, args.out)
    for folder in folders:
        print(f"{args.out}/{folder.name}")
    print(index)
    return 0


def _adopt_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("path", help="a checkpoint folder without manifest.json, or a results folder "
                                "whose parts carry no checksum")


def _adopt_run(args: argparse.Namespace) -> int:
    """Record, for files that have no record, their checksums as they are now: the one command
    that makes unverifiable files verifiable, by trusting them (it says what it trusted)."""
    from pathlib import Path

    from .model.store import checkpoint
    from .store import results as store

    path = Path(args.path).expanduser()
    if (path / store.META).is_file():
        adopted = store.adopt(path)
        print(f"{path}: {len(adopted)} part(s) given the checksum of their rows as they are now "
              f"and the settings of {store.META} (trusted: that nobody changed them since they "
              "were written and that those settings made them; every other part was verified); "
              "from now on a change to any part or to its settings is detected")
        return 0
    manifest = checkpoint.adopt(path)
    print(f"{manifest}: written. Checked first: the file set, that every file reads, the "
          "vocabulary size against the embedding and config.json, the weights against the model, "
          "finite weights. Trusted: that the files are as they were saved (a change made before "
          "now cannot be detected); from now on every load verifies them against this manifest")
    return 0


# ---------------------------------------------------------------- corpus studies
_OUT_HELP = "results folder (parquet parts; rerun the same command to resume)"
_SCHEDULER_HELP = ("run on a Dask cluster: its scheduler's address, e.g. tcp://host:8786, or "
                   "scheduler file (pip install 'attnxai[dask]'; the book's page 'Run it on a "
                   "cluster')")


def _study_args(p: argparse.ArgumentParser, *, chunk: int, unit: str = "reviews",
                scheduler: bool = True, device_help: str = "where the workers run the model "
                                                           "(default cpu; e.g. cuda)") -> None:
    """The options every resumable corpus study shares (its runner's): where the rows go, how
    many processes or which cluster compute them, the model's device, the data, the progress
    bar."""
    p.add_argument("--out", required=True, help=_OUT_HELP)
    p.add_argument("--jobs", type=int, default=1, help="processes (default 1; -1 = all cores)")
    if scheduler:
        p.add_argument("--scheduler", default=None, help=_SCHEDULER_HELP)
    p.add_argument("--chunk", type=int, default=chunk, help=f"{unit} per task (default {chunk})")
    p.add_argument("--device", default="cpu", help=device_help)
    p.add_argument("--archive", default=None, help="IMDb archive (else $ATTNXAI_IMDB_ARCHIVE)")
    _progress_flag(p)


# ---------------------------------------------------------------- lime-experiment
def _lime_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--profile", default="paper", help="trained model to explain (paper or quick)")
    p.add_argument("--reviews", type=int, default=1000,
                   help="first N reviews of the seeded test-set order (default 1000)")
    p.add_argument("--repeats", type=int, default=5, help="LIME runs per review (default 5)")
    p.add_argument("--bow", default="both", choices=["true", "false", "both"],
                   help="lime's bow setting: true (delete words), false (replace), both")
    p.add_argument("--num-samples", type=int, default=5000)
    p.add_argument("--kernel-width", type=float, default=25.0)
    p.add_argument("--mask-string", default="UNK", help="bow=false replacement (default UNK)")
    p.add_argument("--approximations", default=None,
                   help="comma-separated names to compare (default: all; 'none')")
    _study_args(p, chunk=20, device_help="where the workers put the model: cpu (default), cuda, "
                                         "cuda:N or mps (used by lime's generic, batched path)")


def _lime_run(args: argparse.Namespace) -> int:
    import pandas as pd

    from .experiment import lime_summary, load_results, run_lime_corpus

    names = None
    if args.approximations is not None:
        names = [] if args.approximations.strip().lower() == "none" else \
            [a.strip() for a in args.approximations.split(",") if a.strip()]
    report = run_lime_corpus(args.out, profile=args.profile, reviews=args.reviews,
                             repeats=args.repeats, bow=args.bow, num_samples=args.num_samples,
                             kernel_width=args.kernel_width, mask_string=args.mask_string,
                             jobs=args.jobs, scheduler=args.scheduler, chunk=args.chunk,
                             archive=args.archive, progress=not args.no_progress,
                             approximations=names, device=args.device, command=args.argv)
    print(f"{report.out}: {report.computed} rows computed, {report.skipped} already there"
          + (f" ({report.finished} given new approximations)" if report.finished else "") + ", "
          f"{report.seconds:.0f} s ({report.rows_per_second:.2f} rows/s) on {report.workers}")
    df = load_results(report.out)
    with pd.option_context("display.width", 120, "display.max_columns", 20):
        print(lime_summary(df).round(4).to_string())
    return 0


# ---------------------------------------------------------------- faithfulness
def _faith_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--profile", default="paper", help="trained model to explain (paper or quick)")
    p.add_argument("--reviews", type=int, default=1000,
                   help="first N reviews of the seeded test-set order (default 1000)")
    p.add_argument("--methods", default=None,
                   help="comma-separated explainers, or 'all' (default: every method of "
                        "attnxai.registry.METHODS, 'attnxai explain --help' lists them)")
    p.add_argument("--perturbations", default=None, help="replace,delete (default both)")
    p.add_argument("--selections", default=None, help="abs,positive (default both; also signed)")
    p.add_argument("--num-samples", type=int, default=5000, help="LIME samples (default 5000)")
    p.add_argument("--kernel-width", type=float, default=25.0)
    p.add_argument("--target", default="1",
                   help="explained class: 1 (the paper's logit 1, default), 0, or 'predicted' "
                        "(each review's predicted class, ferret's default)")
    p.add_argument("--backend", default="auto", choices=["auto", "fast", "model"],
                   help="how perturbed documents are evaluated (default auto: the float64 "
                        "projections of the single-layer model)")
    _set_flag(p)
    _study_args(p, chunk=10)


def _faith_run(args: argparse.Namespace) -> int:
    import pandas as pd

    from .experiment.faithfulness import faithfulness_summary, run_faithfulness
    from .store.results import load_results
    from .registry import parse_settings

    report = run_faithfulness(args.out, profile=args.profile, reviews=args.reviews,
                              methods=args.methods, perturbations=args.perturbations,
                              selections=args.selections, num_samples=args.num_samples,
                              kernel_width=args.kernel_width, backend=args.backend,
                              jobs=args.jobs, scheduler=args.scheduler, chunk=args.chunk,
                              archive=args.archive, progress=not args.no_progress,
                              target=args.target, device=args.device, command=args.argv,
                              settings=parse_settings(args.set) or None)
    print(f"{report.out}: {report.computed} reviews computed, {report.skipped} already there, "
          f"{report.seconds:.0f} s ({report.rows_per_second:.2f} reviews/s)")
    df = load_results(report.out, keys=("test_index",), sort=("rank",))
    table = faithfulness_summary(df, n_boot=200)
    table = table[(table["group"] == "all") & table["selection"].isin(["positive", "-"])
                  & table["ties"].isin(["position", "-"])]             # (ferret's order: in df)
    wide = table.pivot_table(index="method", columns=["perturbation", "metric"], values="mean",
                             sort=False)
    with pd.option_context("display.width", 160, "display.max_columns", 30):
        print("means over", len(df), "reviews (positive-only rule; tau-LOO any rule):")
        print(wide.round(3).to_string())
    return 0


# ---------------------------------------------------------------- shapley-experiment
def _shapley_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--profile", default="paper", help="trained model to explain (paper or quick)")
    p.add_argument("--reviews", type=int, default=1000,
                   help="first N reviews of the seeded test-set order (default 1000; 25000: all)")
    p.add_argument("--num-samples", type=int, default=5000, help="LIME samples (default 5000)")
    p.add_argument("--kernel-width", type=float, default=25.0)
    p.add_argument("--modes", default="delete,replace",
                   help="delete (bow=True), replace (bow=False), or both (default)")
    _set_flag(p)
    _study_args(p, chunk=20, unit="rows (a review in one mode)")


def _shapley_run(args: argparse.Namespace) -> int:
    import pandas as pd

    from .experiment.shapley_corpus import agreement_table, run_shapley_corpus
    from .store.results import load_results
    from .registry import parse_settings

    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    report = run_shapley_corpus(args.out, profile=args.profile, reviews=args.reviews,
                                num_samples=args.num_samples, kernel_width=args.kernel_width,
                                jobs=args.jobs, scheduler=args.scheduler, chunk=args.chunk,
                                archive=args.archive, progress=not args.no_progress,
                                device=args.device, command=args.argv, modes=modes,
                                settings=parse_settings(args.set) or None)
    print(f"{report.out}: {report.computed} rows computed, {report.skipped} already there, "
          f"{report.seconds:.0f} s ({report.rows_per_second:.2f} rows/s)")
    df = load_results(report.out, keys=("test_index", "mode"), sort=("rank", "mode"))
    table = agreement_table(df, n_boot=200)
    table = table[table.metric.isin(["spearman", "pearson_abs"])
                  & table.pair.str.contains("alpha-avg|Shapley")]
    with pd.option_context("display.width", 160, "display.max_rows", 200):
        print(table.round(3).to_string(index=False))
    return 0


# ---------------------------------------------------------------- explain
def _explain_args(p: argparse.ArgumentParser) -> None:
    from .registry import ALL_METHODS, DEFAULT_SEED

    p.add_argument("text", help="the text to explain ('-' reads it from standard input, @FILE "
                                "from the file FILE; anything else is the text itself)")
    p.add_argument("--profile", default="paper",
                   help="trained model to explain: paper (default) or quick (the cached model, "
                        "trained first if missing)")
    p.add_argument("--methods", default=None,
                   help="comma-separated, among " + ", ".join(ALL_METHODS)
                        + " (default: the seven of Figure 1); or 'all'")
    p.add_argument("--archive", default=None,
                   help="IMDb .tar.gz the model was trained on (else $ATTNXAI_IMDB_ARCHIVE)")
    p.add_argument("--html", default=None, metavar="FILE",
                   help="also write Figure 1 for this text to FILE (an offline HTML page)")
    p.add_argument("--json", action="store_true", help="print JSON instead of the table")
    p.add_argument("--level", default="token", choices=["token", "word"],
                   help="the table's rows: tokens (default) or distinct words")
    p.add_argument("--target", default="1",
                   help="explained class: 1 (the paper's logit 1, default), 0, or 'predicted'")
    p.add_argument("--seed", type=int, default=DEFAULT_SEED,
                   help=f"seed of every random method: LIME's random_state, the random baseline "
                        f"(default {DEFAULT_SEED})")
    p.add_argument("--num-samples", type=int, default=5000, help="LIME samples (default 5000)")
    p.add_argument("--kernel-width", type=float, default=25.0,
                   help="LIME's kernel width (default 25), also its limit's")
    _set_flag(p)
    _progress_flag(p)
    p.add_argument("--no-color", action="store_true", help="no ANSI colours in the table")
    _deprecated(p, "--model", "--profile")
    _deprecated(p, "--explainers", "--methods")


def _method_names(spec: str | None) -> list[str] | None:
    """``--methods``: comma-separated names of :data:`attnxai.registry.METHODS`, any case, or
    'all'; None for the default."""
    from . import validate
    from .registry import ALL_METHODS

    return None if spec is None else validate.names(spec, ALL_METHODS, kind="method", text=True)


#: The most bytes ``attnxai explain @FILE`` reads (the model reads at most 255 tokens anyway).
_TEXT_BYTES = 1 << 20


def _explained_text(arg: str) -> str:
    """The text of ``attnxai explain``: '-' standard input, '@FILE' a file's content (UTF-8),
    else the argument itself, with a note when it looks like a path (it is explained as words)."""
    import os

    from .store.files import read_small_file

    if arg == "-":
        text = sys.stdin.read(_TEXT_BYTES + 1)
        if len(text) > _TEXT_BYTES:
            raise ValueError(f"standard input holds more than {_TEXT_BYTES} characters, more than "
                             "any review (the model reads its first 255 tokens): give a shorter "
                             "text (nothing was cut silently, nothing computed)")
        return text
    if arg.startswith("@") and len(arg) > 1:
        path = os.path.expanduser(arg[1:])
        try:
            data = read_small_file(path, _TEXT_BYTES)
        except FileNotFoundError:
            raise FileNotFoundError(f"no file {path} (from {arg}): give @FILE for a file's "
                                    "content, or the text itself") from None
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ValueError(f"{path} is not UTF-8 text ({exc.reason} at byte {exc.start})") \
                from None
    if re.fullmatch(r"\S*[/\\]\S*|\S+\.(txt|md|text|html?)", arg.strip()) or os.path.isfile(arg):
        print(f"attnxai explain: note: {arg!r} is explained as text (its words); to explain a "
              f"file's content, pass @{arg}", file=sys.stderr)
    return arg


def _check_output_file(path: str, flag: str) -> None:
    """Refuse an output file that cannot be written (a folder, a missing or read-only parent)
    before the work that fills it."""
    import os

    from .store.files import probe_writable

    if os.path.isdir(path):
        raise IsADirectoryError(f"{flag} {path} is a folder: give a file name, e.g. "
                                f"{os.path.join(path, 'explanation.html')}")
    parent = os.path.dirname(os.path.abspath(os.path.expanduser(path)))
    if not os.path.isdir(parent):
        raise FileNotFoundError(f"{flag} {path}: the folder {parent} does not exist: create it "
                                "first, or give a file in an existing folder")
    try:
        probe_writable(path)
    except OSError as exc:
        raise type(exc)(f"{flag} {path} cannot be written ({exc.strerror or exc}): give a file "
                        "in a folder you can write to (nothing was computed)") from None


def _explain_run(args: argparse.Namespace) -> int:
    import os
    import warnings

    from . import validate
    from .explanation import explain
    from .registry import PAPER_METHODS, parse_settings
    from .model.trained import pretrained

    text = _explained_text(args.text)
    methods = _method_names(args.methods)
    target = validate.explained_class(args.target, text=True)       # before the model loads
    if args.html:
        _check_output_file(args.html, "--html")             # before anything is computed
    progress = not args.no_progress and sys.stderr.isatty()
    # one LIME run: its numpy loops start faster than numba's compiled ones, same numbers
    lime = {"num_samples": args.num_samples, "kernel_width": args.kernel_width,
            "backend": "numpy"}
    names = methods or list(PAPER_METHODS)
    settings = {"LIME": lime} if "LIME" in names else \
        {"LIME limit": {"kernel_width": args.kernel_width}} if "LIME limit" in names else {}
    for method, fields in parse_settings(args.set).items():        # --set: any method's
        settings[method] = {**settings.get(method, {}), **fields}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pre = pretrained(args.profile, archive=args.archive, progress=progress)
        ex = explain(pre, text, methods, target=target, seed=args.seed,
                     settings=settings, progress=progress)
    for w in caught:
        if issubclass(w.category, UserWarning):
            print(f"attnxai explain: note: {w.message}", file=sys.stderr)
    if args.html:
        path = ex.write_html(args.html)
        print(f"attnxai explain: wrote {path} (Figure 1 for this text; open it in a browser)",
              file=sys.stderr)
    if args.json:
        print(json.dumps(ex.to_json(), indent=2))
        return 0
    color = not args.no_color and sys.stdout.isatty() and "NO_COLOR" not in os.environ
    print(ex.summary())
    print(ex.to_text(level=args.level, color=color))
    return 0


# ---------------------------------------------------------------- beyond one layer
def _layer_lime_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--profile", default="multilayer",
                   help="trained model (default multilayer; paper for the single-layer "
                        "reference, multilayer-quick for a quick run)")
    p.add_argument("--reviews", type=int, default=200,
                   help="first N reviews of the seeded test-set order (default 200)")
    p.add_argument("--num-samples", type=int, default=5000)
    p.add_argument("--kernel-width", type=float, default=25.0)
    p.add_argument("--precision", default="bf16", choices=["bf16", "fp32"],
                   help="weights that evaluate LIME's perturbed texts (default bf16; attention "
                        "and gradients always use the float32 model)")
    _study_args(p, chunk=5, scheduler=False)


def _layer_lime_run(args: argparse.Namespace) -> int:
    import pandas as pd

    from .experiment.beyond_one_layer import layer_summary, run_layer_lime
    from .store.results import load_results

    report = run_layer_lime(args.out, profile=args.profile, reviews=args.reviews,
                            num_samples=args.num_samples, kernel_width=args.kernel_width,
                            precision=args.precision, jobs=args.jobs, chunk=args.chunk,
                            archive=args.archive, progress=not args.no_progress,
                            device=args.device, command=args.argv)
    print(f"{report.out}: {report.computed} reviews computed, {report.skipped} already there, "
          f"{report.seconds:.0f} s")
    df = load_results(report.out, keys=("test_index",), sort=("rank",))
    with pd.option_context("display.width", 120):
        print(f"Pearson correlation with |LIME| over {len(df)} reviews (paper, first layer: "
              f"{paper.reported('first_layer_alpha_lime_corr')}):")
        print(layer_summary(df).round(3).to_string(index=False))
    return 0


def _training_runs_args(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument("--out", required=True,
                   help="results folder (one row per run; rerun the same command to resume: "
                        "finished models come from the cache, a killed training resumes at "
                        "its last finished epoch)")
    p.add_argument("--jobs", type=int, default=1,
                   help=f"{what} trained at once, one process each (default 1)")
    p.add_argument("--archive", default=None, help="IMDb archive (else $ATTNXAI_IMDB_ARCHIVE)")
    _progress_flag(p)


def _screens_args(p: argparse.ArgumentParser) -> None:
    from .experiment.beyond_one_layer import SCREENS

    p.add_argument("--screens", default=None,
                   help="comma-separated among " + ", ".join(SCREENS) + " (default: all)")
    _training_runs_args(p, "screens")


def _skip_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--seeds", default="42,43,44",
                   help="comma-separated training seeds (default 42,43,44; seed 42 without the "
                        "skip connection is the paper profile's model)")
    _training_runs_args(p, "models")


def _training_runs(args: argparse.Namespace, runs, name: str) -> int:
    import pandas as pd

    from .experiment import run
    from .experiment.beyond_one_layer import TrainingRuns
    from .store.results import load_results

    report = run(TrainingRuns(runs, name=name, archive=args.archive), args.out, jobs=args.jobs,
                 progress=not args.no_progress, command=args.argv)
    df = load_results(report.out, keys=("run",), sort=("rank",))
    cols = [c for c in ("run", "valid_accuracy", "test_accuracy", "best_epoch", "train_seconds")
            if c in df]
    with pd.option_context("display.width", 120):
        print(df[cols].round(4).to_string(index=False))
    print(f"{report.out}: {report.computed} runs now, {report.skipped} already there, "
          f"{report.seconds:.0f} s")
    return 0


def _screens_run(args: argparse.Namespace) -> int:
    from .experiment.beyond_one_layer import screen_runs

    names = None if args.screens is None else [s.strip() for s in args.screens.split(",")
                                               if s.strip()]
    return _training_runs(args, screen_runs(names), "multilayer-screens")


def _skip_run(args: argparse.Namespace) -> int:
    from .experiment.beyond_one_layer import skip_runs

    seeds = []
    for s in args.seeds.split(","):
        if s.strip():
            try:
                seeds.append(int(s))
            except ValueError:
                raise ValueError(f"--seeds takes comma-separated integers, got {s.strip()!r} in "
                                 f"{args.seeds!r}") from None
    return _training_runs(args, skip_runs(seeds), "skip-ablation")


# ---------------------------------------------------------------- notebooks
def _notebooks_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--root", default=".", help="the repository (default: the current folder)")
    p.add_argument("--out", default=None,
                   help="folder for the notebooks (default: beside each chapter that has a "
                        "launch cell, i.e. the .ipynb that Colab opens)")
    p.add_argument("--student", action="store_true",
                   help="student edition: no solutions (use with --out, or --in-place)")
    p.add_argument("--in-place", action="store_true",
                   help="with --student: strip the solutions from the chapters themselves "
                        "(.md and .ipynb), as the deploy workflow does on its own checkout for "
                        "the student branch; not for a working copy you keep")
    p.add_argument("--check", action="store_true",
                   help="write nothing; exit 1 if a .ipynb beside a chapter is missing or stale")
    p.add_argument("--launch-cells", action="store_true",
                   help="first make every chapter's first code cell the launch cell for "
                        "_config.yml's repository (inserted or updated)")


def _notebooks_run(args: argparse.Namespace) -> int:
    from . import course

    if args.in_place:
        if not args.student or args.out is not None:
            raise ValueError("--in-place goes with --student and without --out")
        for path in course.make_student_tree(args.root):
            print(path)
        return 0
    if args.student and args.out is None:
        raise ValueError("--student needs --out or --in-place (the .ipynb beside the chapters "
                         "keep the solutions)")
    if args.check:
        stale = course.stale_notebooks(args.root)
        for line in stale:
            print(line)
        if stale:
            print("run `python -m attnxai notebooks` (or `make notebooks`) to update them")
        return 1 if stale else 0
    if args.launch_cells:
        url = course.repository_url(args.root)
        for md in course.chapters(args.root):
            if course.set_launch_cell(md, url):
                print(f"{md}: launch cell for {url}")
    for path in course.write_notebooks(args.out, root=args.root, student=args.student):
        print(path)
    return 0


COMMANDS: dict[str, tuple[Callable[[argparse.ArgumentParser], None],
                          Callable[[argparse.Namespace], int], str]] = {
    "train": (_train_args, _train_run,
              "train a profile (or load it from the cache) and print its metrics"),
    "info": (_info_args, _info_run,
             "verify a cached model and print its key, files' sha256, origin and metrics "
             "(offline: no training, no download; --published compares with the book's)"),
    "publish-models": (_publish_args, _publish_run,
                       "copy the cached models (verified) and the index readers download them "
                       "from into a folder served beside the site"),
    "adopt": (_adopt_args, _adopt_run,
              "trust a checkpoint without manifest.json, or results parts without checksums, as "
              "they are now: record their checksums (says what it checked and what it trusts)"),
    "lime-experiment": (_lime_args, _lime_run,
                        "LIME (repeated) on many test reviews vs every closed-form "
                        "approximation; resumable, parallel"),
    "faithfulness": (_faith_args, _faith_run,
                     "faithfulness metrics (AOPC, tau-LOO, deletion/insertion) of every "
                     "explainer on many test reviews; resumable, parallel"),
    "shapley-experiment": (_shapley_args, _shapley_run,
                           "rank agreement of Shapley, Banzhaf, LIME, its limit, IG, GxI and "
                           "alpha-avg on test reviews, both removal modes (chapter 9); "
                           "resumable, parallel"),
    "explain": (_explain_args, _explain_run,
                "the seven explanations of Figure 1 for your own text (table, --html, --json)"),
    "multilayer-lime": (_layer_lime_args, _layer_lime_run,
                        "attention of every layer (and rollout) against LIME on test reviews "
                        "(chapter 8); resumable, parallel"),
    "multilayer-screens": (_screens_args, _screens_run,
                           "one-epoch screens of the multi-layer architecture (residual, "
                           "LayerNorm, feed-forward); resumable"),
    "skip-ablation": (_skip_args, _skip_run,
                      "the single-layer model with and without the skip connection, per seed "
                      "(chapter 8); resumable"),
    "notebooks": (_notebooks_args, _notebooks_run,
                  "write the chapters as Jupyter notebooks without outputs (for Colab, or a "
                  "student edition without solutions with --student --out DIR)"),
}


def _user_errors() -> tuple[type[BaseException], ...]:
    """What a user can fix: a wrong value, a file or folder the system refuses (missing, not
    writable, a folder where a file is expected, a full disk...), the package's own
    :class:`~attnxai.errors.UserError` (a damaged checkpoint, a request over the memory budget,
    a cluster that cannot be reached...), and running out of memory."""
    from .errors import UserError

    return (ValueError, OSError, UserError, MemoryError)


def _one_line(exc: BaseException) -> str:
    """The error as the one line a user sees."""
    if isinstance(exc, MemoryError) and not str(exc):
        return ("out of memory: the request needs more memory than this machine has free (lower "
                "--num-samples or --reviews, or set ATTNXAI_MEMORY_BUDGET to have such requests "
                "refused before they start)")
    if type(exc) in _BARE_OS_ERRORS and exc.strerror and exc.filename is not None:
        # the system's own words name no cure: say which path it refused and what to check
        return (f"{exc.strerror}: {exc.filename} (the system refused this file or folder: check "
                "that the path is right, that you may write there and that the disk has room)")
    text = str(exc) or type(exc).__name__
    return " ".join(text.split()) if "\n" in text else text


#: The OSError types the system raises as they are (the package's own carry their messages).
_BARE_OS_ERRORS = (OSError, PermissionError, FileNotFoundError, FileExistsError,
                   IsADirectoryError, NotADirectoryError)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="attnxai", description=__doc__.splitlines()[0])
    debug = argparse.ArgumentParser(add_help=False)
    debug.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                       help="show the traceback of any error (default: a user's mistake is one "
                            "line)")
    parser.add_argument("--debug", action="store_true", default=False,
                        help="show the traceback of any error")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, (add, _, help_) in COMMANDS.items():
        add(sub.add_parser(name, help=help_, parents=[debug]))
    args = parser.parse_args(argv)
    # the command line as given, for the results folders' run log (argv[0] is never replayed)
    args.argv = ["attnxai", *(sys.argv[1:] if argv is None else argv)]
    previous = _stop_on_sigterm()
    try:
        return COMMANDS[args.command][1](args)
    except _user_errors() as exc:
        if args.debug:
            raise
        print(f"attnxai {args.command}: error: {_one_line(exc)} (--debug shows the traceback)",
              file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"attnxai {args.command}: stopped (rerun the same command to resume)",
              file=sys.stderr)
        return 130
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _stop_on_sigterm():
    """SIGTERM raises KeyboardInterrupt (so that clean-up runs); returns the old handler (None
    outside the main thread, where signals cannot be handled)."""
    def stop(signum, frame):
        raise KeyboardInterrupt

    try:
        return signal.signal(signal.SIGTERM, stop)
    except ValueError:
        return None


if __name__ == "__main__":
    raise SystemExit(main())
