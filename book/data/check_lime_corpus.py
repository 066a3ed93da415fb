"""Check that this checkout reproduces a LIME corpus run: recompute its first reviews and compare
every column, bit for bit.

    python book/data/check_lime_corpus.py FOLDER [--reviews 20] [--jobs 2]

Reads the run's settings (``_meta.json``), refuses a run made with another model than the one
this checkout loads for its profile, reruns the first ``--reviews`` reviews of its order (both
``bow`` settings if the run has both, the approximations it has) into a temporary folder with
the same runner, and prints, per column that differs (``--all``: every column), how many rows
differ and by how much. Timings (``seconds``, ``cpu_seconds``) are not compared. Exit status 0
when every compared value is the same, 1 otherwise (2 when the run cannot be checked here).

The committed summaries in ``book/data`` come from the run their header names (the ``--out`` of
its command; the raw run is not committed, it is large); with that folder, this tells whether
the code you have would write the same rows.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

#: Columns that measure time, not results.
TIMINGS = ("seconds", "cpu_seconds")


def _leaves(x) -> list:
    """The scalars of a cell (arrays of arrays, as parquet gives nested coefficients, flattened)."""
    if isinstance(x, (np.ndarray, list, tuple)):
        return [v for item in x for v in _leaves(item)]
    return [x]


def _numeric(leaves: list) -> bool:
    return all(isinstance(v, (int, float, np.number)) and not isinstance(v, (bool, np.bool_))
               for v in leaves)


def compare(old: pd.DataFrame, new: pd.DataFrame, keys=("rank", "bow")) -> pd.DataFrame:
    """Per column of ``old`` (but the timings): the rows of ``new`` (same keys) whose value is not
    the same (NaN equals NaN; arrays elementwise) and the largest relative difference of the
    numeric ones."""
    old = old.sort_values(list(keys)).reset_index(drop=True)
    new = new.sort_values(list(keys)).reset_index(drop=True)
    if len(old) != len(new) or not (old[list(keys)].values == new[list(keys)].values).all():
        raise ValueError("the recomputed rows are not the run's rows (other keys)")
    out = []
    for col in old.columns:
        if col in TIMINGS:
            continue
        if col not in new:
            out.append({"column": col, "rows": len(old), "differ": len(old), "max_rel": np.nan})
            continue
        differ, rel = 0, 0.0
        for a, b in zip(old[col], new[col]):
            la, lb = _leaves(a), _leaves(b)
            if not (_numeric(la) and _numeric(lb)):      # text, words, flags, error messages
                differ += int([str(v) for v in la] != [str(v) for v in lb])
                continue
            va, vb = np.asarray(la, dtype=float), np.asarray(lb, dtype=float)
            if va.shape != vb.shape or not np.array_equal(va, vb, equal_nan=True):
                differ += 1
                if va.shape == vb.shape and np.isfinite(va).any():
                    scale = float(np.nanmax(np.abs(va))) or 1.0
                    rel = max(rel, float(np.nanmax(np.abs(va - vb))) / scale)
                else:
                    rel = np.inf
        out.append({"column": col, "rows": len(old), "differ": differ, "max_rel": rel})
    return pd.DataFrame(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results", help="the run's folder (the --out of its command)")
    ap.add_argument("--reviews", type=int, default=20, help="first N reviews of its order")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--all", action="store_true",
                    help="print every column, not only those that differ")
    args = ap.parse_args(argv)

    import attnxai
    from attnxai.experiment import approximation_names, load_results, run_lime_corpus

    folder = Path(args.results)
    meta = json.loads((folder / "_meta.json").read_text())
    old = load_results(folder)
    old = old[old["rank"] < args.reviews]
    if old.empty:
        print(f"{folder} has no rows among its first {args.reviews} reviews", file=sys.stderr)
        return 2
    pre = attnxai.pretrained(meta["profile"], progress=False)
    if pre.path.name != meta["model"]:
        print(f"the run used the model {meta['model']}; this checkout's {meta['profile']!r} "
              f"profile loads {pre.path.name}: nothing to compare", file=sys.stderr)
        return 2
    bows = sorted(set(old["bow"]))
    bow = "both" if len(bows) == 2 else str(bool(bows[0])).lower()
    with tempfile.TemporaryDirectory() as tmp:
        run_lime_corpus(Path(tmp) / "check", profile=meta["profile"], reviews=args.reviews,
                        repeats=meta["repeats"], bow=bow, num_samples=meta["num_samples"],
                        kernel_width=meta["kernel_width"], mask_string=meta["mask_string"],
                        jobs=args.jobs, approximations=approximation_names(old), progress=False)
        new = load_results(Path(tmp) / "check")
    table = compare(old, new)
    bad = table[table.differ > 0]
    if args.all or not bad.empty:
        with pd.option_context("display.width", 120, "display.max_rows", 200):
            print((table if args.all else bad).to_string(
                index=False, float_format=lambda x: f"{x:.1e}"))
    print(f"{len(old)} rows ({args.reviews} reviews, bow {bow}) recomputed, {len(table)} columns "
          "compared: " + ("every value is the same, bit for bit" if bad.empty else
                          f"{len(bad)} columns differ"))
    return 0 if bad.empty else 1


if __name__ == "__main__":
    sys.exit(main())
