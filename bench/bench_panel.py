#!/usr/bin/env python3
"""Benchmark of point-in-time panels (``Memory.panel``): a benchmark, not a test.

Data: bench_screen.py's synthetic universe (companies in the real key shape, written
through the API: a filing a fiscal quarter, 14 duration and 12 instant concepts, prior-
year comparatives restated 8% of the time, three fiscal calendars, a newswire conflict
for one company in 40).

Measured, interleaved in one loop through one driver, each beside its baseline in the
same run:

- a screen of Revenues for CY2023Q3 at a random cutoff, beside one plain Cypher
  statement returning each company's latest value of the frame's keys at that cutoff
  with its filings (no read rule: bench_screen.py's "with filings" lookup);
- a panel of Revenues, each company's latest quarter at ``--cutoffs`` month ends
  (default 40), beside one plain Cypher statement returning, per cutoff and company, the
  latest quarter's latest version public by then with its filings (no rule, no known_at,
  no universe, no conflicts);
- ``Panel.to_pandas()`` of that panel, beside the panel's own time.

Prints p50/p95 of each, the ratios and the load average.

Usage (the universe is written once per tenant name)::

    GRAPHMEM_NEO4J_URI=bolt://127.0.0.1:7705 .venv/bin/python bench/bench_panel.py \
        --companies 200 --reads 10 [--cutoffs 40] [--tenant NAME] [--drop] [--json PATH]

or built offline into a launcher home of its own (bench_screen.py's ``--bootstrap``)::

    .venv/bin/python bench/bench_panel.py --companies 2000 --bootstrap /tmp/screen-home --port 7705

Targets it reports against (it does not assert them): screen p50 at most 2x its
baseline; panel p50 at most 3x its baseline; to_pandas under a tenth of the panel.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import random
import sys
import time
from pathlib import Path
from typing import Any

import neo4j

sys.path.insert(0, str(Path(__file__).parent))
from bench_screen import (  # noqa: E402
    DURATIONS,
    FIRST_YEAR,
    SOURCED,
    Universe,
    baseline_params,
    universe_options,
    universe_server,
)
from common import drop_tenant, log, pct  # noqa: E402

from graphmem import Memory, Scope  # noqa: E402

# per cutoff and company: the latest quarter-long key with a version public by then, its
# latest such version, and that version's filings public by then
PANEL_BASELINE = """
UNWIND $cutoffs AS c
MATCH (k:FactKey {tenant: $tenant, attribute: $attribute})
WHERE k.scope = $scope AND k.period_start IS NOT NULL
  AND 61 <= duration.inDays(k.period_start, k.period_end).days + 1 <= 121
MATCH (f:Fact)-[:VERSION_OF]->(k)
WHERE f.available_by <= c
WITH c, k.entity AS entity, f ORDER BY k.period_end DESC, f.available_by DESC
WITH c, entity, head(collect(f)) AS f
RETURN c, entity, f.value AS value,
       COLLECT { MATCH (f)-[e:EVIDENCED_BY]->(s:Source) WHERE e.available_by <= c RETURN s.id } AS filings
"""


def month_ends(first: dt.date, n: int) -> list[dt.datetime]:
    out, y, m = [], first.year, first.month
    while len(out) < n:
        after = dt.date(y + m // 12, m % 12 + 1, 1)
        out.append(dt.datetime.combine(after - dt.timedelta(days=1), dt.time.max, dt.UTC))
        y, m = after.year, after.month
    return out


def run(driver: neo4j.Driver, database: str, query: str, params: dict[str, Any]) -> int:
    with driver.session(database=database) as session:
        return len(session.run(query, **params).data())


def measure(mem: Memory, driver: neo4j.Driver, database: str, scope: Scope, reads: int, cutoffs: int,
            seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    times: dict[str, list[float]] = {k: [] for k in ("screen", "screen_base", "panel", "panel_base", "pandas")}
    cells = rows = 0
    first = dt.date(FIRST_YEAR, 6, 1)
    panel_cutoffs = month_ends(first, cutoffs)
    base = {"tenant": scope.tenant, "scope": scope.id, "attribute": "us-gaap:Revenues"}
    for _ in range(reads):
        cutoff = dt.datetime.combine(dt.date(2023, 10, 10) + dt.timedelta(days=rng.randrange(400)),
                                     dt.time(23, 59), dt.UTC)
        work = {
            "screen": lambda c=cutoff: mem.screen(scope, attribute="us-gaap:Revenues", frame="CY2023Q3", cutoff=c),
            "screen_base": lambda c=cutoff: run(driver, database, SOURCED,
                                                {**base, "cutoff": c, **baseline_params("CY2023Q3")}),
            "panel": lambda: mem.panel(scope, attribute="us-gaap:Revenues", latest="quarter", cutoffs=panel_cutoffs),
            "panel_base": lambda: run(driver, database, PANEL_BASELINE, {**base, "cutoffs": panel_cutoffs}),
        }
        for label in rng.sample(sorted(work), len(work)):
            t0 = time.perf_counter()
            out = work[label]()
            times[label].append(time.perf_counter() - t0)
            if label == "panel":
                cells = len(out.cells)
                t0 = time.perf_counter()
                out.to_pandas()
                times["pandas"].append(time.perf_counter() - t0)
            elif label == "panel_base":
                rows = out
    summary = {k: {"p50_ms": pct(v, 50) * 1e3, "p95_ms": pct(v, 95) * 1e3} for k, v in times.items()}
    return {"times": summary, "cells": cells, "baseline_rows": rows, "cutoffs": cutoffs,
            "screen_ratio_p50": pct(times["screen"], 50) / pct(times["screen_base"], 50),
            "panel_ratio_p50": pct(times["panel"], 50) / pct(times["panel_base"], 50),
            "pandas_share_p50": pct(times["pandas"], 50) / pct(times["panel"], 50)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--companies", type=int, default=200)
    ap.add_argument("--years", type=int, default=4, help="fiscal years of filings from 2021")
    ap.add_argument("--reads", type=int, default=10, help="rounds (a screen, a panel and their baselines each)")
    ap.add_argument("--cutoffs", type=int, default=40, help="month-end cutoffs of the panel")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--tenant", help="tenant to write the universe into, or reuse if it holds it")
    ap.add_argument("--drop", action="store_true", help="delete the tenant afterwards")
    ap.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    universe_options(ap)
    args = ap.parse_args()

    database = os.environ.get("GRAPHMEM_NEO4J_DATABASE") or "neo4j"
    scope = Scope(tenant=args.tenant or f"bench-screen-{args.companies}-{args.years}-{args.seed}-{len(DURATIONS)}")
    universe = Universe(args.companies, args.years, args.seed)
    uri = os.environ["GRAPHMEM_NEO4J_URI"] = universe_server(args, universe, scope)
    with Memory.from_env() as mem:
        counts = mem.counts(scope)
        log(f"universe: {counts}")
        driver = neo4j.GraphDatabase.driver(uri, notifications_min_severity="OFF")
        log("warming up")
        measure(mem, driver, database, scope, 1, args.cutoffs, args.seed + 1)
        load_before = os.getloadavg()
        log(f"measuring {args.reads} rounds")
        result = measure(mem, driver, database, scope, args.reads, args.cutoffs, args.seed)
        load_after = os.getloadavg()
        driver.close()
        if args.drop:
            drop_tenant(mem.db.driver, database, scope.tenant)

    t = result["times"]
    print(f"\npanel bench over {args.companies} companies ({counts.get('versions')} versions, {counts.get('keys')} "
          f"keys); load average {load_before[0]:.1f} before, {load_after[0]:.1f} after")
    print(f"screen CY2023Q3 Revenues p50/p95 ms: {t['screen']['p50_ms']:.1f} / {t['screen']['p95_ms']:.1f}; "
          f"plain lookup with filings {t['screen_base']['p50_ms']:.1f} / {t['screen_base']['p95_ms']:.1f}; "
          f"ratio p50 {result['screen_ratio_p50']:.2f}")
    print(f"panel latest quarter x {args.cutoffs} cutoffs ({result['cells']} cells) p50/p95 ms: "
          f"{t['panel']['p50_ms']:.1f} / {t['panel']['p95_ms']:.1f}; plain lookup per cutoff with filings "
          f"({result['baseline_rows']} rows) {t['panel_base']['p50_ms']:.1f} / {t['panel_base']['p95_ms']:.1f}; "
          f"ratio p50 {result['panel_ratio_p50']:.2f}")
    print(f"to_pandas p50/p95 ms: {t['pandas']['p50_ms']:.1f} / {t['pandas']['p95_ms']:.1f} "
          f"({result['pandas_share_p50']:.3f} of the panel's p50)")
    if args.json:
        Path(args.json).write_text(json.dumps({**result, "counts": counts, "load": [load_before, load_after]},
                                              indent=2, default=str))


if __name__ == "__main__":
    main()
