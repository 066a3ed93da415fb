"""How fast the Explore page answers (book/explore.md): its weight, the first result after the
page has loaded, and each update for a 250-word review, in this machine's Chromium (Debian's,
headless, as tests/book/test_browser.py runs it), on a built site served from 127.0.0.1.

    .venv/bin/python benchmarks/bench_explorer.py --site _build/html --out book/data/explorer_benchmark.csv

``--tables-from CHECKPOINT`` measures a copy of the site whose explorer computes from that
checkpoint's tables (``attnxai.explorer.export``), e.g. the paper's model on a site built on the
quick one: the update's cost depends on the weights (how wide the attention logits spread).

* **weight**: the bytes of the explorer's files as the browser received them (model.json,
  model.bin, core.js, ui.js, worker.js, explorer.css; no compression: the local server sends them
  as they are) and the site's files of the page itself;
* **first result**: ``--loads`` fresh browser contexts (empty caches) open the page; for each, the
  time from the page's load event (``loadEventEnd``) to the explorer's first result shown, and
  from the navigation's start;
* **updates**: the first 250 words of a long test review (``--review``) set in the box, then
  ``--updates`` edits (a word appended, then removed: each an update of a ~250-word text), each
  timed by the page from the end of the debounce to the result shown (``explorer.timings``),
  with the workers (one per core, up to six) and with the computations in the page's own thread
  (``navigator.hardwareConcurrency`` set to 1), whose CPU time (Chrome's thread ticks) is the time
  an update takes on a free core, whatever the machine's load.

Reported as medians and the worst, with the machine's load average: a benchmark, not a test
(tests/book/test_explorer.py checks the numbers, not the speed).
"""

from __future__ import annotations

import argparse
import functools
import json
import http.server
import os
import statistics
import threading
from pathlib import Path

CHROMIUM = os.environ.get("ATTNXAI_CHROMIUM", "/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
FILES = ("model.json", "model.bin", "core.js", "ui.js", "worker.js", "explorer.css")
JS_STATE = "() => { const x = document.querySelector('.attnxai-explorer'); " \
           "return {seq: +x.dataset.seq || 0, state: x.dataset.state, timings: x.explorer.timings}; }"


class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *a):
        pass


def serve(site: Path) -> tuple[http.server.ThreadingHTTPServer, str]:
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(site)))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd, f"http://127.0.0.1:{httpd.server_address[1]}/"


def wait_seq(page, after: int) -> dict:
    page.wait_for_function("n => +document.querySelector('.attnxai-explorer').dataset.seq > n && "
                           "document.querySelector('.attnxai-explorer').dataset.state === 'ready'",
                           arg=after, timeout=120_000)
    return page.evaluate(JS_STATE)


def first_results(browser, url: str, loads: int) -> tuple[list[dict], dict[str, int]]:
    """Per fresh context: ms from the load event, and from the navigation's start, to the first
    result; and the bytes the explorer's files weighed on the wire (the last load)."""
    out, sizes = [], {}
    for _ in range(loads):
        ctx = browser.new_context(viewport={"width": 1280, "height": 900})
        page = ctx.new_page()
        got: dict[str, int] = {}

        def record(response, got=got):
            name = response.url.split("?")[0].rsplit("/", 1)[-1]
            if "/_static/explorer/" in response.url and name in FILES:
                try:
                    got[name] = len(response.body())
                except Exception:                         # noqa: BLE001 - a worker's request
                    got[name] = -1
        page.on("response", record)
        page.goto(url, wait_until="load")
        st = wait_seq(page, 0)
        out.append({"after_load_ms": st["timings"]["first_after_load"],
                    "after_navigation_ms": st["timings"]["first"]})
        sizes = got
        ctx.close()
    return out, sizes


def updates(browser, url: str, text: str, n: int, *, workers: bool) -> list[dict]:
    """The page's own timing of ``n`` updates of a ~250-word text."""
    ctx = browser.new_context(viewport={"width": 1280, "height": 900})
    if not workers:
        ctx.add_init_script("Object.defineProperty(navigator, 'hardwareConcurrency', {get: () => 1})")
    page = ctx.new_page()
    page.goto(url, wait_until="load")
    st = wait_seq(page, 0)
    box = page.locator(".attnxai-explorer textarea")
    box.fill(text)
    st = wait_seq(page, st["seq"])
    # the page's main thread's CPU time (Chrome's thread ticks: the time it ran, whatever the
    # machine's load), which does everything in one thread when there are no workers
    cdp = ctx.new_cdp_session(page)
    cdp.send("Performance.enable", {"timeDomain": "threadTicks"})
    script = lambda: next(m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]  # noqa: E731
                          if m["name"] == "ScriptDuration")
    rows = []
    for i in range(n):
        before = script()
        box.fill(text + (" again" if i % 2 == 0 else ""))
        st = wait_seq(page, st["seq"])
        rows.append({**st["timings"]["last"], "main_cpu_ms": 1000 * (script() - before)})
    pool = page.evaluate("document.querySelector('.attnxai-explorer').explorer.res.pool ? "
                         "document.querySelector('.attnxai-explorer').explorer.res.pool.size : 0")
    ctx.close()
    for r in rows:
        r["workers"] = pool
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--site", default="_build/html", help="a built site (make book)")
    ap.add_argument("--loads", type=int, default=5)
    ap.add_argument("--updates", type=int, default=20)
    ap.add_argument("--review", type=int, default=None,
                    help="the test review to cut to 250 words (default: the first with 300 words or more)")
    ap.add_argument("--out", default=None, help="also write the measurements to this CSV")
    ap.add_argument("--tables-from", default=None,
                    help="a checkpoint folder whose tables the page computes from (a copy of the site)")
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    import attnxai
    from attnxai.store.provenance import loadavg

    site = Path(args.site)
    if not (site / "book" / "explore.html").is_file():
        raise SystemExit(f"{site} has no book/explore.html: build the book first (make book)")
    tmp = None
    if args.tables_from:
        import shutil
        import tempfile

        from attnxai import explorer, load

        tmp = tempfile.TemporaryDirectory()
        copy = Path(tmp.name) / "site"
        shutil.copytree(site, copy)
        explorer.export(load(args.tables_from), copy / "_static" / "explorer")
        site = copy
    meta = json.loads((site / "_static" / "explorer" / "model.json").read_text())
    reviews = attnxai.load_imdb().test
    index = args.review if args.review is not None else next(
        i for i, r in enumerate(reviews) if len(r.text.split()) >= 300)
    text = " ".join(reviews[index].text.split()[:250])
    before = loadavg()
    httpd, base = serve(site)
    url = base + "book/explore.html"
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        firsts, sizes = first_results(browser, url, args.loads)
        pooled = updates(browser, url, text, args.updates, workers=True)
        single = updates(browser, url, text, args.updates, workers=False)
        version = browser.version
        browser.close()
    httpd.shutdown()
    after = loadavg()
    disk = {f: (site / "_static" / "explorer" / f).stat().st_size for f in FILES}
    print(f"the page's tables: {meta['model']['model']}")
    print(f"Chromium {version}; {os.cpu_count()} cores; load average before {before}, after {after}")
    print("explorer files:", {f: f"{b / 1e6:.3f} MB" for f, b in disk.items()},
          f"total {sum(disk.values()) / 1e6:.2f} MB (received: {sizes})")
    af = [f["after_load_ms"] for f in firsts]
    print(f"first result after the load event: median {statistics.median(af):.0f} ms, worst "
          f"{max(af):.0f} ms ({args.loads} fresh loads); after the navigation's start: median "
          f"{statistics.median(f['after_navigation_ms'] for f in firsts):.0f} ms")
    for name, rows in (("workers", pooled), ("one thread", single)):
        ms = [r["ms"] for r in rows]
        print(f"update of a {rows[0]['tokens']}-token review, {name} ({rows[0]['workers']} workers): "
              f"median {statistics.median(ms):.0f} ms, worst {max(ms):.0f} ms ({len(ms)} updates); "
              f"prediction, attention, gradients alone: median "
              f"{statistics.median(r['fast_ms'] for r in rows):.1f} ms; the page's main thread's CPU "
              f"time per update: median {statistics.median(r['main_cpu_ms'] for r in rows):.0f} ms")
    if args.out:
        from attnxai.store.files import atomic_write
        from attnxai.store.provenance import code_label

        head = [f"# bench_explorer.py --loads {args.loads} --updates {args.updates}"
                + (" --tables-from CHECKPOINT" if args.tables_from else ""),
                f"# the page's tables: model {meta['model']['model']}, weights sha256 "
                f"{(meta['model'].get('fingerprint') or {}).get('weights_sha256')}",
                f"# Chromium {version} headless; {os.cpu_count()} cores; code: {code_label()}; "
                f"load average before {before}, after {after}",
                f"# test review {index} cut to 250 words; files on disk (bytes): "
                + ", ".join(f"{f} {b}" for f, b in disk.items()),
                "kind,run,workers,tokens,ms,fast_ms,main_cpu_ms"]
        rows = [f"first_after_load,{i + 1},,,{f['after_load_ms']:.1f},," for i, f in enumerate(firsts)]
        rows += [f"first_after_navigation,{i + 1},,,{f['after_navigation_ms']:.1f},,"
                 for i, f in enumerate(firsts)]
        for kind, data in (("update_workers", pooled), ("update_one_thread", single)):
            rows += [f"{kind},{i + 1},{r['workers']},{r['tokens']},{r['ms']:.1f},{r['fast_ms']:.2f},"
                     f"{r['main_cpu_ms']:.1f}" for i, r in enumerate(data)]
        atomic_write(args.out, "\n".join(head + rows) + "\n")
        print(f"wrote {args.out}")
    if tmp is not None:
        tmp.cleanup()


if __name__ == "__main__":
    main()
