#!/usr/bin/env python3
"""Benchmark of ``graphmem load edgar`` on a synthetic universe (reports, never asserts).

A universe of ``--companies`` x ``--filings`` x ``--concepts`` (two rows per concept and
filing; see graphmem.loaders.synthetic) is written as ``companyfacts.zip`` and
``submissions.zip``, then, against one dedicated server, each case in a child process of
its own (so its peak RSS is its own) and a fresh tenant:

``load``
    ``edgar.load`` of the whole universe from the two archives: rows/s end to end
    (discovery, reading, checking, quarantine, writing), the child's peak RSS against
    its RSS before the load.
``rerun``
    the same load again into the same tenant, everything recorded: seconds, and the
    ratio to the first load (target: under a tenth).
``raw``
    the baseline, in the same run: a raw ``UNWIND $rows AS row CREATE (:BenchRawFact
    {...})`` of the same rows with the properties a Fact gets, one transaction per
    filing, for every ``--raw-every``-th company (read with ``json.load``); rows/s.

With ``--sizes 50,200`` the load runs for a universe of the first 50 companies and of
all 200 (the same companies), to show whether peak memory grows with the universe.

Usage (against a dedicated server)::

    GRAPHMEM_NEO4J_URI=bolt://127.0.0.1:7704 .venv/bin/python bench/bench_edgar.py \\
        --companies 200 --filings 40 --concepts 250 --sizes 50,200 [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from common import drop_tenant, log, peak_rss_mb, raw_tx  # noqa: E402 - sibling module

ROOT = Path(__file__).resolve().parents[1]
RAW_CREATE = (
    "UNWIND $rows AS row CREATE (:BenchRawFact {bench: $bench, entity: row.entity, attribute: row.attribute, "
    "unit: row.unit, definition: '', period: row.period, period_start: row.start, period_end: row.end, "
    "value: row.value, value_type: 'decimal', value_num: row.num, source: row.source, "
    "available_by: row.available_by})"
)
RAW_DELETE = "MATCH (n:BenchRawFact {bench: $bench}) CALL (n) { DETACH DELETE n } IN TRANSACTIONS OF 20000 ROWS"


def current_rss_mb() -> float:
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


# ------------------------------------------------------------------ child cases


def child_load(spec: dict[str, Any]) -> dict[str, Any]:
    """``edgar.load`` of the first ``spec['size']`` companies (twice with ``rerun``)."""
    from graphmem.loaders import edgar, universe

    from graphmem import Memory, Scope

    scope = Scope(tenant=spec["tenant"])
    out: dict[str, Any] = {}
    with Memory.from_env() as mem, universe.discover(spec["paths"]) as found:
        chosen = universe.select(found)[: spec["size"]]
        runs = ["load", "rerun"] if spec.get("rerun") else ["load"]
        for run in runs:
            rss_before = current_rss_mb()
            t = time.perf_counter()
            report = edgar.load(mem, scope, _logged(chosen, run, spec["rows_per_company"], t),
                                total=len(chosen), show_progress=False)
            wall = time.perf_counter() - t
            totals = report.totals()
            out[run] = {"seconds": wall, "rows": totals["rows"], "rows_per_s": totals["rows"] / wall,
                        "rss_before_mb": rss_before, "peak_rss_mb": peak_rss_mb(), "totals": totals}
    return out


def _logged(companies: list[Any], run: str, rows_per_company: int, started: float) -> Any:
    """The companies, with a progress line on stderr every 30 s (companies and rows done,
    the rate so far, the RSS): a long run shows its figures before it ends."""
    last = started
    for n, company in enumerate(companies):
        now = time.perf_counter()
        if now - last > 30 and n:
            last = now
            log(f"  {run}: {n}/{len(companies)} companies, ~{n * rows_per_company:,} rows in {now - started:.0f}s "
                f"(~{n * rows_per_company / (now - started):,.0f} rows/s), RSS {current_rss_mb():.0f} MB, "
                f"peak {peak_rss_mb():.0f} MB, load {load_average()}")
        yield company


def child_raw(spec: dict[str, Any]) -> dict[str, Any]:
    """The raw baseline on every ``raw_every``-th company."""
    import neo4j
    from graphmem.loaders import sec, universe
    from graphmem.loaders.spool import Spool

    driver = neo4j.GraphDatabase.driver(os.environ["GRAPHMEM_NEO4J_URI"])
    batches = []
    with universe.discover(spec["paths"]) as found:
        for company in universe.select(found)[:: spec["raw_every"]]:
            with Spool() as spool:  # the loader's own reading, so the rows are the same
                facts = sec.read(company.facts, company.submissions, spool=spool)
                for batch in facts.batches():
                    batches.append([{"entity": f.entity, "attribute": f.attribute, "unit": f.unit,
                                     "period": f.period.text, "start": f.period.start, "end": f.period.end,
                                     "value": str(f.value), "num": float(f.value), "source": batch.source.id,
                                     "available_by": batch.source.available_by} for f in batch.items])
    tag = uuid.uuid4().hex
    t = time.perf_counter()
    for rows in batches:
        raw_tx(driver, None, neo4j.WRITE_ACCESS,
               lambda tx, rows=rows: tx.run(RAW_CREATE, rows=rows, bench=tag).consume())
    wall = time.perf_counter() - t
    rows = sum(len(b) for b in batches)
    with driver.session() as session:
        session.run(RAW_DELETE, bench=tag).consume()
    driver.close()
    return {"seconds": wall, "rows": rows, "rows_per_s": rows / wall}


def run_child(case: str, spec: dict[str, Any]) -> dict[str, Any]:
    proc = subprocess.run([sys.executable, __file__, "--child", case, json.dumps(spec)], stdout=subprocess.PIPE,
                          text=True, check=False, cwd=str(ROOT / "bench"))  # its stderr: ours
    if proc.returncode != 0:
        sys.exit(f"{case} failed")
    return json.loads(proc.stdout.strip().splitlines()[-1])


# ------------------------------------------------------------------ main


def load_average() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--companies", type=int, default=200)
    parser.add_argument("--filings", type=int, default=40)
    parser.add_argument("--concepts", type=int, default=250)
    parser.add_argument("--sizes", default="", help="company counts to load, e.g. 50,200 (default: all)")
    parser.add_argument("--raw-every", type=int, default=10)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--dir", type=Path, help="write the universe here and keep it (reused when it is there)")
    parser.add_argument("--keep", action="store_true", help="keep the bench tenants")
    parser.add_argument("--rerun-tenant", help="only re-run the load of the first --sizes companies into this "
                                                "tenant, where an earlier run recorded them")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        case, spec = args.child
        result = child_load(json.loads(spec)) if case == "load" else child_raw(json.loads(spec))
        print(json.dumps(result))
        return
    if not os.environ.get("GRAPHMEM_NEO4J_URI"):
        sys.exit("set GRAPHMEM_NEO4J_URI to a dedicated server")
    from graphmem.loaders.synthetic import SyntheticUniverse

    import graphmem

    shape = SyntheticUniverse(companies=args.companies, filings=args.filings, concepts=args.concepts,
                              seed=args.seed, malformed=2, recent=min(args.filings, 20))
    sizes = [int(s) for s in args.sizes.split(",") if s] or [args.companies]
    results: dict[str, Any] = {"shape": {"companies": shape.companies, "filings": shape.filings,
                                         "concepts": shape.concepts, "rows": shape.rows},
                               "load_average": {"start": load_average()}, "cases": {}}
    with tempfile.TemporaryDirectory(prefix="bench-edgar-") as tmp:
        t = time.perf_counter()
        folder = args.dir / f"universe-{shape.companies}x{shape.filings}x{shape.concepts}-{shape.seed}" if args.dir \
            else Path(tmp)
        done = folder / "company_tickers.json"  # written last
        paths = ({"companyfacts": folder / "companyfacts.zip", "submissions": folder / "submissions.zip"}
                 if done.exists() else shape.write_zips(folder))
        log(f"universe: {shape.companies} companies, {shape.rows:,} rows, written in "
            f"{time.perf_counter() - t:.1f}s ({paths['companyfacts'].stat().st_size / 2**20:.0f} MiB zipped)")
        with graphmem.Memory.from_env() as mem:
            mem.migrate()
        spec = {"paths": [str(paths["companyfacts"]), str(paths["submissions"])], "raw_every": args.raw_every,
                "rows_per_company": shape.rows // shape.companies}
        if args.rerun_tenant:  # the all-recorded re-run alone, over companies an earlier run loaded
            out = run_child("load", {**spec, "tenant": args.rerun_tenant, "size": sizes[0]})
            log(f"re-run of {sizes[0]} recorded companies ({out['load']['rows']:,} rows): "
                f"{out['load']['seconds']:.2f}s, statuses {out['load']['totals']['companies']}")
            print(json.dumps(out, indent=2, default=str))
            return
        results["cases"]["raw"] = run_child("raw", spec)
        log(f"raw baseline: {results['cases']['raw']['rows_per_s']:,.0f} rows/s")
        tenants = []
        for size in sizes:
            tenant = f"bench-edgar-{uuid.uuid4().hex[:8]}"
            tenants.append(tenant)
            rerun = size == sizes[-1]
            out = run_child("load", {**spec, "tenant": tenant, "size": size, "rerun": rerun})
            results["cases"][f"load-{size}"] = out
            log(f"{size} companies: {out['load']['rows']:,} rows in {out['load']['seconds']:.1f}s "
                f"({out['load']['rows_per_s']:,.0f} rows/s), peak RSS {out['load']['peak_rss_mb']:.0f} MB "
                f"(before {out['load']['rss_before_mb']:.0f} MB)"
                + (f"; re-run {out['rerun']['seconds']:.1f}s = {out['rerun']['seconds'] / out['load']['seconds']:.3f}"
                   " of the first load" if rerun else ""))
        results["cases"]["raw-after"] = run_child("raw", spec)
        log(f"raw baseline again: {results['cases']['raw-after']['rows_per_s']:,.0f} rows/s")
        results["load_average"]["end"] = load_average()
        text = json.dumps(results, indent=2, default=str)
        if args.json:  # before the clean-up, which a large tenant can make fail
            args.json.write_text(text)
        print(text)
        if not args.keep:
            _drop(tenants)


def _drop(tenants: list[str]) -> None:
    """Delete the bench tenants; a failure (the server's transaction memory, on a tenant of
    millions of rows) is reported, not raised: the figures are out already."""
    import neo4j

    driver = neo4j.GraphDatabase.driver(os.environ["GRAPHMEM_NEO4J_URI"])
    try:
        for tenant in tenants:
            drop_tenant(driver, None, tenant)
    except neo4j.exceptions.Neo4jError as exc:
        log(f"could not delete the bench tenants {tenants}: {exc.code}")
    finally:
        driver.close()


if __name__ == "__main__":
    main()
