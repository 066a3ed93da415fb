"""Measure what decides whether two machines train the same weights from the same seed, and
write ``book/data/weights_fingerprints.csv`` (read by book/reproducibility.md).

    python book/data/make_fingerprints.py [--profile quick] [--repeats 2]

Trains the profile's model (default ``quick``: about 20 s on two idle cores) several times, each in
a fresh process and a temporary cache, under every combination of

* the CPU kernels torch may choose on this processor (``ATEN_CPU_CAPABILITY``: ``default``, the
  portable ones, and each of ``avx2`` and ``avx512`` the processor has): a machine whose processor
  lacks AVX-512 runs the AVX2 kernels, one without AVX2 the portable ones; so this reproduces, on
  one machine, what training on those machines computes with the same torch build;
* the number of torch threads (1 and 2);

``--repeats`` times each (the later repeats run while the others' load is on the machine), and
records each run's weights digest (:func:`attnxai.store.provenance.weights_sha256`), its test accuracy
and the machine's fingerprint. The file starts with ``#`` lines: the command, the code, the
versions, the processor, the wall time.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
OUT = HERE / "weights_fingerprints.csv"

_TRAIN = """
import json, sys, torch
torch.set_num_threads(int(sys.argv[2]))
import attnxai
from attnxai.store.provenance import weights_sha256
pre = attnxai.pretrained(sys.argv[1], progress=False, download=False)
print(json.dumps({"weights_sha256": weights_sha256(pre.model.state_dict()),
                  "test_accuracy": pre.metrics["test_accuracy"],
                  "capability": torch.backends.cpu.get_cpu_capability(),
                  "threads": torch.get_num_threads(),
                  "train_seconds": pre.metrics["train_seconds"]}))
"""


def capabilities() -> list[str]:
    """The ATEN_CPU_CAPABILITY values this processor can run: the portable kernels, then each
    vector width torch has kernels for and the processor supports."""
    from attnxai.store.provenance import cpu

    flags = set(cpu()["flags"])
    return ["default"] + [c for c, need in (("avx2", "avx2"), ("avx512", "avx512f"))
                          if need in flags]


def train_once(profile: str, capability: str, threads: int) -> dict:
    """One training in a fresh process and a temporary cache: its digest and accuracy."""
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "ATTNXAI_CACHE": cache, "ATTNXAI_OFFLINE": "1",
               "ATEN_CPU_CAPABILITY": capability, "OMP_NUM_THREADS": str(threads)}
        env.pop("ATTNXAI_SEED", None)
        run = subprocess.run([sys.executable, "-c", _TRAIN, profile, str(threads)], env=env,
                             capture_output=True, text=True, check=True, cwd=ROOT)
    return json.loads(run.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    import pandas as pd
    import torch

    from attnxai.experiment import write_summary
    from attnxai.store.provenance import code_label, cpu, loadavg

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--profile", default="quick")
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args(argv)
    started, t0, load = time.strftime("%Y-%m-%dT%H:%M:%S%z"), time.perf_counter(), loadavg()
    code = code_label()                          # the code as it starts, not as it ends
    rows = []
    for repeat in range(args.repeats):
        for capability in capabilities():
            for threads in (1, 2):
                row = train_once(args.profile, capability, threads)
                rows.append({"repeat": repeat + 1, "asked_capability": capability,
                             "load1_before": (loadavg() or [None])[0], **row})
                print(rows[-1], flush=True)
    frame = pd.DataFrame(rows)
    machine = cpu()
    header = [f"# command: python book/data/{Path(__file__).name} --profile {args.profile} "
              f"--repeats {args.repeats}",
              f"#   code: {code}; started {started}; wall time "
              f"{time.perf_counter() - t0:.0f} s; load average before "
              f"{(load or [0])[0]:.2f}, after {(loadavg() or [0])[0]:.2f}",
              f"# torch {torch.__version__}; processor: {machine['model']} ({machine['machine']}); "
              f"instruction sets: {' '.join(machine['flags'])}"]
    write_summary(OUT, header, frame, "%.6g")
    print(OUT)
    return 0


if __name__ == "__main__":
    sys.exit(main())
