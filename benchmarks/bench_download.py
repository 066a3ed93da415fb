"""How long a reader waits for the book's model when it is downloaded (attnxai.model.store.hub), against
loading the same checkpoint from the cache, measured in the same run.

The cached model of ``--profile`` (default paper: 46 MB of weights) is published with
``attnxai.model.store.hub.publish`` into a temporary folder, served from 127.0.0.1 (a thread of this
process: no network, so this is the floor a real download adds its transfer time to), then
downloaded ``--repeats`` times into fresh caches: each time ``attnxai.pretrained`` (index,
every file, sizes and sha256 against the index, the checkpoint's own manifest, the atomic move
into the cache, the load) and then a plain ``attnxai.load`` of the cached folder (verification
and load only), one thread each.

    ATTNXAI_CACHE=/path/to/cache .venv/bin/python benchmarks/bench_download.py --repeats 5 \
        --out book/data/download_benchmark.csv

The README and the launch page quote the medians of ``book/data/download_benchmark.csv``
(tests/model/test_hub.py checks that they do).
"""

from __future__ import annotations

import argparse
import http.server
import os
import statistics
import tempfile
import threading
import time
from pathlib import Path

import torch


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--profile", default="paper")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--out", default=None, help="also write the runs to this CSV")
    args = ap.parse_args()
    torch.set_num_threads(1)
    from attnxai.model.store import hub
    from attnxai import load, pretrained
    from attnxai.store.provenance import loadavg

    before = loadavg()

    source = pretrained(args.profile, train_if_missing=False, download=False, progress=False)
    size = sum(p.stat().st_size for p in source.path.iterdir() if p.is_file())
    with tempfile.TemporaryDirectory() as tmp:
        www = Path(tmp) / "www"
        hub.publish([source.path], www / "models")
        handler = lambda *a, **k: Quiet(*a, directory=str(www), **k)
        httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        os.environ.update(ATTNXAI_MODELS_URL=f"http://127.0.0.1:{httpd.server_address[1]}/models/",
                          ATTNXAI_OFFLINE="0")
        fetched, loaded = [], []
        for i in range(args.repeats):
            os.environ["ATTNXAI_CACHE"] = str(Path(tmp) / f"cache{i}")
            t = time.perf_counter()
            pre = pretrained(args.profile, train_if_missing=False, progress=False)
            fetched.append(time.perf_counter() - t)
            t = time.perf_counter()
            load(pre.path)
            loaded.append(time.perf_counter() - t)
        httpd.shutdown()
        httpd.server_close()
    print(f"{args.profile} model {source.path.name}: {size / 1e6:.1f} MB in {len(os.listdir(source.path))} files")
    print(f"download + verify + cache + load: median {statistics.median(fetched):.2f} s "
          f"(min {min(fetched):.2f}, max {max(fetched):.2f}, {args.repeats} runs)")
    print(f"load + verify from the cache:     median {statistics.median(loaded):.2f} s "
          f"(ratio {statistics.median(fetched) / statistics.median(loaded):.1f})")
    print(f"load average: {[round(x, 2) for x in os.getloadavg()]}")
    if args.out:
        write_csv(args, source.path.name, size, fetched, loaded, before)


def write_csv(args, name, size, fetched, loaded, before) -> None:
    from attnxai.store.files import atomic_write
    from attnxai.store.provenance import code_label, loadavg

    head = [f"# bench_download.py: --profile {args.profile} --repeats {args.repeats}",
            f"# model {name}, {size} bytes; served from 127.0.0.1 (no transfer time); one thread",
            f"# code: {code_label()}; {os.cpu_count()} cores; load average before {before}, "
            f"after {loadavg()}",
            "run,download_verify_load_seconds,cache_load_seconds,bytes"]
    rows = [f"{i + 1},{f:.4f},{c:.4f},{size}" for i, (f, c) in enumerate(zip(fetched, loaded))]
    atomic_write(args.out, "\n".join(head + rows) + "\n")
    print(f"wrote {args.out}")


class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *a):
        pass


if __name__ == "__main__":
    main()
