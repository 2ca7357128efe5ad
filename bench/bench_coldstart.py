"""The first call after a server start against a warm call, with and without warming.

Usage: python bench/bench_coldstart.py [--home DIR] [--port 7721] [--rounds 2] [--tesla]

A launcher in DIR holds LPA (and with --tesla Tesla too, 10k versions) in tenant ``demo``
and 20 LangGraph items in tenant ``lg`` (loaded on the first run), after LPA in tenant
``other`` (where the warmer's one stored key is). Each round, for each
mode, the server is restarted, then:

* ``cold``: a fresh process (its connection opened first) makes each call once (the
  first call: the plans are made then), then five times more (warm);
* ``warmed``: ``python -m graphmem.warm URI`` (what ``server start`` runs detached once
  Bolt answers) runs to its end first, and is timed; then the same fresh process.

The calls: as_of, screen, search, and the LangGraph store's get and search. Prints, per
call and mode, the median over rounds of the first call and of the warm calls' median,
and their ratio, with the load average.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures"
CUTOFF = dt.datetime(2025, 1, 1, tzinfo=dt.UTC)


def _calls(mem, store):
    from graphmem import Scope

    scope = Scope(tenant="demo")
    return {
        "as_of": lambda: mem.as_of(scope, entity="cik:1997711", attribute="us-gaap:Assets", cutoff=CUTOFF),
        "screen": lambda: mem.screen(scope, attribute="us-gaap:Assets", frame="CY2023Q4I", cutoff=CUTOFF),
        "search": lambda: mem.search(scope, text="Logistic Properties 2023", cutoff=CUTOFF),
        "store get": lambda: store.get(("users", "alice"), "k3"),
        "store search": lambda: store.search(("users",), query="tea"),
    }


def child(uri: str) -> None:
    """One fresh process: each call's first and warm seconds, as JSON on stdout."""
    from graphmem import Memory
    from graphmem.integrations.langgraph import GraphmemStore

    out = {}
    with Memory.connect(uri) as mem:
        mem.db.driver.verify_connectivity()  # the connection a client opens once: not a call's
        for name, call in _calls(mem, GraphmemStore(mem, tenant="lg")).items():
            clock = time.perf_counter()
            call()
            first = time.perf_counter() - clock
            warm = []
            for _ in range(5):
                clock = time.perf_counter()
                call()
                warm.append(time.perf_counter() - clock)
            out[name] = {"first": first, "warm": statistics.median(warm)}
    print(json.dumps(out))


def populate(uri: str, tesla: bool) -> None:
    from graphmem.loaders import sec

    from graphmem import Memory, Scope
    from graphmem.integrations.langgraph import GraphmemStore

    with Memory.connect(uri) as mem:
        mem.migrate()
        if mem.entity(Scope(tenant="demo"), "cik:1997711"):
            return
        # first into a tenant the calls do not ask: the warmer's stored key (admin.sample,
        # the first the label scan finds) is then none of theirs
        sec.load(mem, Scope(tenant="other"), FIXTURES / "companyfacts-CIK0001997711-lpa.json", None)
        sec.load(mem, Scope(tenant="demo"), FIXTURES / "companyfacts-CIK0001997711-lpa.json", None)
        if tesla:
            sec.load(mem, Scope(tenant="demo"), FIXTURES / "companyfacts-CIK0001318605-tesla.json",
                     FIXTURES / "submissions-CIK0001318605-tesla.json")
        store = GraphmemStore(mem, tenant="lg")
        for n in range(20):
            store.put(("users", "alice"), f"k{n}", {"text": f"likes tea, cup {n}"})


def main() -> None:
    from graphmem import server as srv

    parser = argparse.ArgumentParser()
    parser.add_argument("--home", type=Path, default=Path("/tmp/graphmem-bench-coldstart"))
    parser.add_argument("--port", type=int, default=7721)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--tesla", action="store_true")
    parser.add_argument("--child", metavar="URI")
    args = parser.parse_args()
    if args.child:
        return child(args.child)
    cfg = srv.ServerConfig(home=args.home, port=args.port, heap="1g", pagecache="512m")
    if not srv.status(cfg).running:
        srv.start(cfg)
    populate(cfg.uri, args.tesla)
    results: dict[str, list] = {"cold": [], "warmed": []}
    warming, loads = [], [os.getloadavg()[0]]
    for _ in range(args.rounds):
        for mode in results:
            srv.stop(cfg)
            srv.start(cfg)
            if mode == "warmed":
                clock = time.perf_counter()
                subprocess.run([sys.executable, "-m", "graphmem.warm", cfg.uri], check=True, capture_output=True)
                warming.append(time.perf_counter() - clock)
            run = subprocess.run([sys.executable, __file__, "--child", cfg.uri], check=True, capture_output=True,
                                 text=True)
            results[mode].append(json.loads(run.stdout))
            loads.append(os.getloadavg()[0])
    srv.stop(cfg)
    print(f"{args.rounds} rounds; load average {min(loads):.1f}-{max(loads):.1f}; "
          f"warming (python -m graphmem.warm) {statistics.median(warming):.1f} s median")
    print(f"{'call':14} {'mode':7} {'first ms':>9} {'warm ms':>8} {'first/warm':>10}")
    for name in results["cold"][0]:
        for mode, rounds in results.items():
            first = statistics.median(r[name]["first"] for r in rounds) * 1000
            warm = statistics.median(r[name]["warm"] for r in rounds) * 1000
            print(f"{name:14} {mode:7} {first:9.0f} {warm:8.0f} {first / warm:10.1f}")


if __name__ == "__main__":
    main()
