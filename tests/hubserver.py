"""Shared by the download tests (tests/model/test_hub.py, tests/test_hostile.py): a static file server
on 127.0.0.1 and a tiny checkpoint published with the package's own command. A helper module, so
that no test file imports another."""

from __future__ import annotations

import collections
import http.server
import threading
from pathlib import Path

from checkpoints import LABELLED_SHA

from attnxai.model.store import hub
from attnxai.model.store.cache import cache_key
from attnxai.model.store.checkpoint import save
from attnxai.data import IMDb, Review
from attnxai.model.profiles import get_config


# ---------------------------------------------------------------- a local server
class Server:
    """A static file server on 127.0.0.1 (a thread) that counts the requests per path, can hold
    the requests of one path until ``gate`` is set (``arrived`` is set when one comes), and can
    break the connection off half-way through the files of ``break_off``."""

    def __init__(self, root: Path):
        self.root, self.counts = root, collections.Counter()
        self.gated, self.gate, self.arrived = None, threading.Event(), threading.Event()
        self.gate.set()
        self.break_off: set[str] = set()
        server = self

        class Handler(http.server.SimpleHTTPRequestHandler):
            def __init__(self, *a, **k):
                super().__init__(*a, directory=str(root), **k)

            def log_message(self, *a):
                pass

            def do_GET(self):
                server.counts[self.path] += 1
                if server.gated and self.path.endswith(server.gated):
                    server.arrived.set()
                    server.gate.wait(120)
                if self.path in server.break_off:
                    data = (root / self.path.lstrip("/")).read_bytes()
                    self.send_response(200)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data[:len(data) // 2])
                    self.close_connection = True
                    return
                super().do_GET()

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/models/"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def files_requested(self) -> int:
        return sum(n for p, n in self.counts.items() if not p.endswith(hub.INDEX))

    def close(self):
        self.gate.set()
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join()


def publish_tiny(folder_root: Path, pre, name: str | None = None) -> Path:
    """Save ``pre`` where the cache rule puts it (a source cache) and publish it into
    ``folder_root/models`` with the package's command; returns the published model folder."""
    src = folder_root / "src-cache" / "models"
    profile = pre.config["train"]["profile"]
    folder = save(pre, src / f"{profile}-{cache_key(get_config(profile), LABELLED_SHA)}")
    hub.publish([folder], folder_root / "www" / "models")
    return folder_root / "www" / "models" / (name or folder.name)


TINY = get_config("quick", n_train=40, n_valid=10, n_test=10, epochs=1, batch_size=8, min_freq=1,
                  d_embed=8, d_attn=4, d_value=4, n_heads=2, max_len=16)


def _synthetic() -> IMDb:
    words = "good bad film movie plot acting great awful boring moving story".split()
    reviews = [Review(" ".join(words[(i * 7 + j) % len(words)] for j in range(6)), i % 2, 1, i,
                      "train") for i in range(60)]
    return IMDb(reviews[:40], reviews[40:50], reviews[50:], checksum="synthetic")
