"""What the explorer's export changes against the book's model, on the test reviews, written to
``book/data/explorer_fidelity.csv`` (read by book/explore.md).

    python book/data/make_explorer_fidelity.py [--profile paper] [--explained 500] [--path FOLDER]

The exported model (:func:`attnxai.explorer.projected_model`: each word vector projected on the
directions the outputs read, in float32) against the cached model of ``--profile``
(:func:`attnxai.explorer.fidelity`): both models' accuracy on every test review of the profile
(25,000 for ``paper``), the number of predictions that differ and the largest change of a logit;
and on the first ``--explained`` test reviews, for each explainer of the page, the largest over
the reviews of ``max |exported - model| / max |model|`` on the review. The file starts with ``#``
lines: the command, the code, the model and its weights' digest (so that the page can tell
whether they are its model's), the wall time.
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE / "explorer_fidelity.csv"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--profile", default="paper")
    ap.add_argument("--explained", type=int, default=500)
    ap.add_argument("--path", default=None, help="a checkpoint folder instead of the profile's cached model")
    ap.add_argument("--out", default=str(OUT))
    args = ap.parse_args()
    import numpy as np
    import pandas as pd

    import attnxai
    from attnxai import explorer
    from attnxai.experiment.bookdata import WEIGHTS_LABEL, write_summary
    from attnxai.model.store.checkpoint import weights_sha256
    from attnxai.store.provenance import code_label, loadavg

    t0, before = time.time(), loadavg()
    pre = attnxai.load(args.path) if args.path else \
        attnxai.pretrained(args.profile, train_if_missing=False, download=False, progress=False)
    n_test = pre.config["train"]["n_test"]
    test = attnxai.load_imdb().test[:n_test]
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        fid = explorer.fidelity(pre, [r.text for r in test], [r.label for r in test],
                                [r.text for r in test[:args.explained]])
    rows = [("accuracy_full", "", fid["accuracy_full"], ""),
            ("accuracy_exported", "", fid["accuracy_exported"], ""),
            ("predictions_differ", "", fid["predictions_differ"], ""),
            ("max_logit_change", "", fid["max_logit_change"], ""),
            ("reviews", "", fid["reviews"], ""), ("explained", "", fid["explained"], ""),
            ("refused", "", fid["refused"], "")]
    rows += [("max_relative_change", m, v["max_relative_change"], v["review"])
             for m, v in fid["methods"].items()]
    frame = pd.DataFrame(rows, columns=["measure", "method", "value", "review"])
    from attnxai.data import cache_dir

    cache = str(cache_dir(create=False))            # no folder of this machine in the file
    argv = [a.replace(cache, "$ATTNXAI_CACHE") for a in sys.argv[1:]]
    command = " ".join(["python", "book/data/make_explorer_fidelity.py",
                        *(a if a.startswith("$ATTNXAI_CACHE") else shlex.quote(a) for a in argv)])
    header = [f"# {command}",
              f"# code: {code_label()}",
              f"#   model: {pre.path.name}; {WEIGHTS_LABEL} {weights_sha256(pre.path)}",
              f"# reviews: the first {fid['reviews']} test reviews (accuracy), the first "
              f"{fid['explained']} of them (explanations)",
              f"# wall seconds: {time.time() - t0:.0f}; load average before {before}, after {loadavg()}"]
    write_summary(args.out, header, frame, float_format="%.6g")
    print("\n".join(header))
    print(frame.to_string(index=False))


if __name__ == "__main__":
    main()
