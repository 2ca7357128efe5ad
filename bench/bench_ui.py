#!/usr/bin/env python3
"""Benchmark: `graphmem ui`'s key page over a long history (a benchmark, not a test: it
reports, never asserts).

One fact key with ``--versions`` versions (one a day, each from its own filing, written
with ``Memory.record``). Interleaved read by read (this machine is noisy), median and
p95 of:

(a) ``Memory.history`` of the key, bare (the baseline: every version with its evidence
    and lifecycle);
(b) ``Memory.history_index`` (the ids and keys the page pages through) and
    ``Memory.as_of`` at the latest cutoff;
(c) the key page rendered server-side: GET /key through Starlette's TestClient, in
    process (history_index + as_of + ``Memory.versions`` of one page of 20 + the SVG
    plot + the template).

Then the size of the default view: bytes of HTML, and its element count as Debian's
headless Chromium builds it (``document.getElementsByTagName('*')``, when
/usr/bin/chromium and Playwright are installed; else as Python's HTML parser counts
start tags). Load average at start and end.

Usage::

    GRAPHMEM_NEO4J_URI=bolt://127.0.0.1:7701 .venv/bin/python bench/bench_ui.py \\
        --versions 1000 [--reads 50] [--tenant NAME] [--drop] [--no-browser] [--json PATH]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
import threading
import time
from decimal import Decimal
from html.parser import HTMLParser
from pathlib import Path

from common import drop_tenant, log, pct  # noqa: E402 - sibling module of the bench scripts
from starlette.testclient import TestClient

from graphmem import NOW, Authority, Entity, FactIn, Memory, Period, Scope, Source
from graphmem.ui import build_app

CHROMIUM = "/usr/bin/chromium"
ENTITY, ATTRIBUTE, PERIOD = "bench-ui-co", "balance", Period(end=dt.date(2020, 12, 31))
START = dt.datetime(2021, 1, 1, 21, tzinfo=dt.UTC)


def write(mem: Memory, scope: Scope, versions: int) -> None:
    """``versions`` daily restatements of one key, each from a filing of its own."""
    mem.put_entity(scope, Entity(id=ENTITY, name="Bench UI Co"))
    for first in range(0, versions, 100):
        days = range(first, min(versions, first + 100))
        sources = [Source(id=f"filing-{d:06}", kind="10-Q", authority=Authority.PRIMARY,
                          available_by=START + dt.timedelta(days=d), publisher="bench") for d in days]
        items = [FactIn(entity=ENTITY, attribute=ATTRIBUTE, unit="USD", period=PERIOD,
                        value=Decimal(1_000_000 + d), sources=(f"filing-{d:06}",)) for d in days]
        mem.record(scope, sources=sources, items=items)


def timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return (time.perf_counter() - t0) * 1000


class _Tags(HTMLParser):
    count = 0

    def handle_starttag(self, tag, attrs) -> None:
        self.count += 1


def browser_elements(app, path: str) -> int | None:
    """The element count of ``path`` as headless Chromium builds it (None without one)."""
    if not os.path.exists(CHROMIUM):
        return None
    try:
        import uvicorn
        from playwright.sync_api import sync_playwright
    except ImportError:
        return None
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.05)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=[
                "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--no-first-run"])
            page = browser.new_page()
            page.goto(f"http://127.0.0.1:{port}{path}")
            count = page.evaluate("document.getElementsByTagName('*').length")
            browser.close()
            return count
    finally:
        server.should_exit = True
        thread.join(10)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--versions", type=int, default=1000)
    ap.add_argument("--reads", type=int, default=50, help="reads of each kind, interleaved")
    ap.add_argument("--tenant", help="tenant to write the key into, or reuse if it holds it")
    ap.add_argument("--drop", action="store_true", help="delete the tenant afterwards")
    ap.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    ap.add_argument("--no-browser", action="store_true", help="count start tags only (no Chromium)")
    args = ap.parse_args()
    if not os.environ.get("GRAPHMEM_NEO4J_URI"):
        sys.exit("set GRAPHMEM_NEO4J_URI to a dedicated server")
    database = os.environ.get("GRAPHMEM_NEO4J_DATABASE") or "neo4j"
    scope = Scope(tenant=args.tenant or f"bench-ui-{args.versions}")
    path = f"/key?entity={ENTITY}&attribute={ATTRIBUTE}&period={PERIOD.text}"
    with Memory.from_env() as mem:
        mem.migrate()
        if not mem.counts(scope).get("versions"):
            log(f"writing {args.versions} versions of one key into {scope.tenant}")
            write(mem, scope, args.versions)
        history = len(mem.history(scope, entity=ENTITY, attribute=ATTRIBUTE, period=PERIOD))
        app = build_app(mem, scope=scope)
        client = TestClient(app, base_url="http://127.0.0.1")
        reads = {
            "history": lambda: mem.history(scope, entity=ENTITY, attribute=ATTRIBUTE, period=PERIOD),
            "index": lambda: mem.history_index(scope, entity=ENTITY, attribute=ATTRIBUTE, period=PERIOD),
            "as_of": lambda: mem.as_of(scope, entity=ENTITY, attribute=ATTRIBUTE, period=PERIOD, cutoff=NOW),
            "page": lambda: client.get(path).raise_for_status(),
        }
        for fn in reads.values():  # warm up: plans, the template cache
            fn()
        load_before = os.getloadavg()
        log(f"measuring {args.reads} reads of each kind over {history} versions")
        ms: dict[str, list[float]] = {name: [] for name in reads}
        for _ in range(args.reads):
            for name, fn in reads.items():
                ms[name].append(timed(fn))
        load_after = os.getloadavg()
        html = client.get(path).text
        tags = _Tags()
        tags.feed(html)
        elements = None if args.no_browser else browser_elements(app, path)
        if args.drop:
            drop_tenant(mem.db.driver, database, scope.tenant)

    results = {name: {"p50_ms": pct(v, 50), "p95_ms": pct(v, 95)} for name, v in ms.items()}
    summary = {"versions": history, "reads": args.reads, "results": results, "html_bytes": len(html),
               "start_tags": tags.count, "browser_elements": elements,
               "load_average": [load_before[0], load_after[0]]}
    print(f"\nkey page over {history} versions, {args.reads} reads each, interleaved; "
          f"load average {load_before[0]:.1f} before, {load_after[0]:.1f} after")
    print(f"{'read':28} {'p50 ms':>8} {'p95 ms':>8}")
    for name, label in (("history", "Memory.history (baseline)"), ("index", "Memory.history_index"),
                        ("as_of", "Memory.as_of (latest)"),
                        ("page", "GET /key (server-side)")):
        print(f"{label:28} {results[name]['p50_ms']:8.1f} {results[name]['p95_ms']:8.1f}")
    print(f"default view: {len(html):,} bytes of HTML, {tags.count} start tags, "
          f"{elements if elements is not None else 'n/a (no chromium)'} elements in Chromium")
    if args.json:
        Path(args.json).write_text(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
