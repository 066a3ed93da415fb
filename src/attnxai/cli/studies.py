"""The corpus studies' commands: ``lime-experiment``, ``faithfulness``, ``shapley-experiment``,
``multilayer-lime``, ``multilayer-screens``, ``skip-ablation``. LIME's flags are generated from
:class:`attnxai.limit_settings.LimeSettings` (:func:`~attnxai.cli.flags.add_settings_flags`) and
the settings object built from them, checked once, goes whole to the study."""

from __future__ import annotations

import argparse

from ..chapters import paper
from ..limit_settings import LimeSettings
from .flags import (_progress_flag, _set_flag, add_settings_flags, settings_from_args,
                    training_profile)

#: LIME's flags of the studies (the fields of LimeSettings they set).
LIME_FLAGS = ("num_samples", "kernel_width")

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
    add_settings_flags(p, LimeSettings, (*LIME_FLAGS, "mask_string"))
    p.add_argument("--approximations", default=None,
                   help="comma-separated names to compare (default: all; 'none')")
    _study_args(p, chunk=20, device_help="where the workers put the model: cpu (default), cuda, "
                                         "cuda:N or mps (used by lime's generic, batched path)")


def _lime_run(args: argparse.Namespace) -> int:
    import pandas as pd

    from ..experiment import lime_summary, load_results, run_lime_corpus

    names = None
    if args.approximations is not None:
        names = [] if args.approximations.strip().lower() == "none" else \
            [a.strip() for a in args.approximations.split(",") if a.strip()]
    lime = settings_from_args(args, LimeSettings, (*LIME_FLAGS, "mask_string"))
    report = run_lime_corpus(args.out, profile=training_profile(args), reviews=args.reviews,
                             repeats=args.repeats, bow=args.bow, lime=lime, jobs=args.jobs, scheduler=args.scheduler, chunk=args.chunk,
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
    add_settings_flags(p, LimeSettings, LIME_FLAGS)
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

    from ..experiment.faithfulness import MetricSettings, faithfulness_summary, run_faithfulness
    from ..store.results import load_results
    from ..registry import parse_settings

    lime = settings_from_args(args, LimeSettings, LIME_FLAGS)
    report = run_faithfulness(args.out, profile=training_profile(args), reviews=args.reviews,
                              methods=args.methods, lime=lime,
                              metrics=MetricSettings(args.perturbations, args.selections,
                                                     args.backend),
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
    add_settings_flags(p, LimeSettings, LIME_FLAGS)
    p.add_argument("--modes", default="delete,replace",
                   help="delete (bow=True), replace (bow=False), or both (default)")
    _set_flag(p)
    _study_args(p, chunk=20, unit="rows (a review in one mode)")


def _shapley_run(args: argparse.Namespace) -> int:
    import pandas as pd

    from ..experiment.shapley_corpus import agreement_table, run_shapley_corpus
    from ..store.results import load_results
    from ..registry import parse_settings

    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    lime = settings_from_args(args, LimeSettings, LIME_FLAGS)
    report = run_shapley_corpus(args.out, profile=training_profile(args), reviews=args.reviews,
                                lime=lime, jobs=args.jobs, scheduler=args.scheduler, chunk=args.chunk,
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


# ---------------------------------------------------------------- beyond one layer
def _layer_lime_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--profile", default="multilayer",
                   help="trained model (default multilayer; paper for the single-layer "
                        "reference, multilayer-quick for a quick run)")
    p.add_argument("--reviews", type=int, default=200,
                   help="first N reviews of the seeded test-set order (default 200)")
    add_settings_flags(p, LimeSettings, LIME_FLAGS)
    p.add_argument("--precision", default="bf16", choices=["bf16", "fp32"],
                   help="weights that evaluate LIME's perturbed texts (default bf16; attention "
                        "and gradients always use the float32 model)")
    _study_args(p, chunk=5, scheduler=False)


def _layer_lime_run(args: argparse.Namespace) -> int:
    import pandas as pd

    from ..experiment.beyond_one_layer import layer_summary, run_layer_lime
    from ..store.results import load_results

    lime = settings_from_args(args, LimeSettings, LIME_FLAGS)
    report = run_layer_lime(args.out, profile=training_profile(args), reviews=args.reviews,
                            lime=lime, precision=args.precision, jobs=args.jobs, chunk=args.chunk,
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
    from ..experiment.beyond_one_layer import SCREENS

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

    from ..experiment import run
    from ..experiment.beyond_one_layer import TrainingRuns
    from ..store.results import load_results

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
    from ..experiment.beyond_one_layer import screen_runs

    names = None if args.screens is None else [s.strip() for s in args.screens.split(",")
                                               if s.strip()]
    return _training_runs(args, screen_runs(names, base=training_profile(args, "multilayer")),
                          "multilayer-screens")


def _skip_run(args: argparse.Namespace) -> int:
    from ..experiment.beyond_one_layer import skip_runs

    seeds = []
    for s in args.seeds.split(","):
        if s.strip():
            try:
                seeds.append(int(s))
            except ValueError:
                raise ValueError(f"--seeds takes comma-separated integers, got {s.strip()!r} in "
                                 f"{args.seeds!r}") from None
    return _training_runs(args, skip_runs(seeds), "skip-ablation")


