#!/usr/bin/env python3
"""Benchmark of ``graphmem bootstrap`` against the online universe loader (reports, never asserts).

One synthetic universe (graphmem.loaders.synthetic: ``--filings`` x ``--concepts`` x 2
rows a company, restatements, re-roundings, custom units, paged submissions, malformed
rows) is written as ``companyfacts.zip`` and ``submissions.zip``; its first companies
make universes of each ``--sizes`` rows. Each case runs in a child process of its own
(its peak RSS is its own), on servers of its own (launcher homes under ``--dir``):

``bootstrap``
    ``offline.bootstrap`` of the universe of that size into a fresh home, end to end:
    reading, deciding, the importer's CSV (companies built in ``--workers`` processes: each
    size once per number given, 1 being the one-process baseline), the importer, the finishing server (schema
    migrations, index population) until the server answers on the new database. Rows/s,
    seconds per step, peak RSS of the Python process and of the two JVMs (the
    importer's, and the server's while it populates the indexes). The importer's memory
    is ``offline.Sizes.of_machine()``, chosen once in the parent.
``online``
    ``edgar.load`` (``graphmem load edgar``) of the first ``--online-companies``
    companies into a fresh launcher of the same size (1 GiB heap, 512 MiB page cache):
    the online loader on a sample of the same files, run before and after the
    bootstraps (this machine is shared; the two runs bracket the bootstraps' load).
    ``--online-uri`` puts them on a running server instead (a smoke run's shortcut).

The projection for the SEC's whole companyfacts archive scales each step's measured
rate at the largest size linearly to ``--archive-rows`` (an assumption, printed beside
it: see docs/PERFORMANCE.md).

Usage::

    .venv/bin/python bench/bench_bootstrap.py --sizes 1000000,4000000,10000000 \\
        --online-companies 5 --dir /tmp/bench-bootstrap [--workers 1,2] [--json out.json] \\
        [--ports 7717,7718,7719] [--probe-uri bolt://127.0.0.1:7707]
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import itertools
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from common import log, peak_rss_mb  # noqa: E402 - sibling module

ROOT = Path(__file__).resolve().parents[1]


def load_average() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# ------------------------------------------------------------------ child cases


def child_bootstrap(spec: dict[str, Any]) -> dict[str, Any]:
    """``offline.bootstrap`` of the first ``spec['companies']`` companies into a fresh home."""
    from graphmem.loaders import bootstrap as loader
    from graphmem.loaders import universe

    from graphmem import Memory, Scope, offline
    from graphmem import server as srv

    home = Path(spec["home"])
    cfg = srv.ServerConfig(home=home, port=spec["port"] or free_port(), heap="1g", pagecache="512m")
    sizes = offline.Sizes(**spec["sizes"])
    scope = Scope(tenant="bench")
    load_before = load_average()
    with contextlib.ExitStack() as stack, universe.discover(spec["paths"]) as found:
        probe = stack.enter_context(Memory.connect(spec["probe_uri"])).db if spec["probe_uri"] else None
        chosen = universe.select(found)[: spec["companies"]]
        t = time.perf_counter()
        loaded, report = offline.bootstrap(cfg, lambda build: loader.load(build, scope, chosen,
                                                                          workers=spec["workers"]),
                                           probe=probe, sizes=sizes)
        wall = time.perf_counter() - t
    srv.stop(cfg)
    rows = loaded.totals()["rows"]
    return {"seconds": wall, "rows": rows, "rows_per_s": rows / wall, "python_peak_rss_mb": peak_rss_mb(),
            "report": dataclasses.asdict(report), "load_average": [load_before, load_average()]}


def child_online(spec: dict[str, Any]) -> dict[str, Any]:
    """``edgar.load`` of the first ``spec['companies']`` companies into a fresh launcher,
    or with ``spec['online_uri']`` into a tenant of its own on that server."""
    from graphmem import server as srv

    if spec["online_uri"]:
        return _online_load(spec, spec["online_uri"], f"bench-{uuid.uuid4().hex[:8]}")
    cfg = srv.ServerConfig(home=Path(spec["home"]), port=spec["port"] or free_port(), heap="1g", pagecache="512m")
    srv.start(cfg)
    try:
        return _online_load(spec, cfg.uri, "bench")
    finally:
        srv.stop(cfg)


def _online_load(spec: dict[str, Any], uri: str, tenant: str) -> dict[str, Any]:
    from graphmem.loaders import edgar, universe

    from graphmem import Memory, Scope

    load_before = load_average()
    with Memory.connect(uri) as mem, universe.discover(spec["paths"]) as found:
        mem.migrate()
        chosen = universe.select(found)[: spec["companies"]]
        t = time.perf_counter()
        report = edgar.load(mem, Scope(tenant=tenant), chosen, show_progress=False)
        wall = time.perf_counter() - t
    rows = report.totals()["rows"]
    return {"seconds": wall, "rows": rows, "rows_per_s": rows / wall, "python_peak_rss_mb": peak_rss_mb(),
            "load_average": [load_before, load_average()]}


def run_child(case: str, spec: dict[str, Any]) -> dict[str, Any]:
    proc = subprocess.run([sys.executable, __file__, "--child", case, json.dumps(spec)], stdout=subprocess.PIPE,
                          text=True, check=False, cwd=str(ROOT / "bench"))  # its stderr: ours
    shutil.rmtree(spec["home"], ignore_errors=True)
    if proc.returncode != 0:
        sys.exit(f"{case} failed")
    return json.loads(proc.stdout.strip().splitlines()[-1])


# ------------------------------------------------------------------ the projection


def projection(case: dict[str, Any], archive_rows: int) -> dict[str, Any]:
    """Each step of the largest bootstrap scaled linearly to ``archive_rows`` (the server
    starts are fixed costs, counted once)."""
    seconds = case["report"]["seconds"]
    fixed = sum(v for k, v in seconds.items() if k.endswith(": start") or k.endswith(": stop"))
    scaled = {k: v * archive_rows / case["rows"] for k, v in seconds.items()
              if k != "total" and not (k.endswith(": start") or k.endswith(": stop"))}
    total = fixed + sum(scaled.values())
    return {"archive_rows": archive_rows, "from_rows": case["rows"], "steps_seconds": scaled,
            "fixed_seconds": fixed, "total_hours": total / 3600}


# ------------------------------------------------------------------ main


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000000,4000000,10000000", help="rows of each bootstrapped universe")
    parser.add_argument("--filings", type=int, default=40)
    parser.add_argument("--concepts", type=int, default=250)
    parser.add_argument("--online-companies", type=int, default=5, help="companies of the online sample")
    parser.add_argument("--archive-rows", type=int, default=100_000_000, help="rows assumed for the projection")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--workers", default=f"1,{os.cpu_count() or 1}",
                        help="processes building the companies, each size bootstrapped with each (comma-separated: "
                             "1 is the one-process baseline)")
    parser.add_argument("--dir", type=Path, help="the universe (kept, reused) and server homes (required)")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--ports", default="", help="ports for the servers the cases start, in turn "
                        "(comma-separated; default: free ports)")
    parser.add_argument("--probe-uri", help="a running Neo4j for the bootstrap's search-text probe (nothing is "
                        "written to it); default: a launcher on the staging folder, on a free port")
    parser.add_argument("--online-uri", help="a running Neo4j for the online sample (a tenant of its own each "
                        "run, left there); default: a fresh launcher each run. Its plans may be warm: a smoke run's "
                        "choice, not a comparison's")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        case, spec = args.child
        print(json.dumps((child_bootstrap if case == "bootstrap" else child_online)(json.loads(spec))))
        return
    if args.dir is None:
        parser.error("--dir is required")
    from graphmem.loaders.synthetic import SyntheticUniverse

    sizes = [int(s) for s in args.sizes.split(",") if s]
    per_company = args.filings * args.concepts * 2
    companies = [max(1, round(size / per_company)) for size in sizes]
    shape = SyntheticUniverse(companies=max(companies + [args.online_companies]), filings=args.filings,
                              concepts=args.concepts, seed=args.seed, malformed=2, recent=min(args.filings, 20))
    folder = args.dir / f"universe-{shape.companies}x{shape.filings}x{shape.concepts}-{shape.seed}"
    t = time.perf_counter()
    paths = ({"companyfacts": folder / "companyfacts.zip", "submissions": folder / "submissions.zip"}
             if (folder / "company_tickers.json").exists() else shape.write_zips(folder))
    log(f"universe: {shape.companies} companies, {shape.rows:,} rows ({time.perf_counter() - t:.0f}s to have it), "
        f"load {load_average()}")
    ports = itertools.cycle([int(p) for p in args.ports.split(",") if p] or [0])
    from graphmem.offline import Sizes

    memory = dataclasses.asdict(Sizes.of_machine())
    spec = {"paths": [str(paths["companyfacts"]), str(paths["submissions"])], "probe_uri": args.probe_uri,
            "online_uri": args.online_uri,
            "sizes": memory}
    log(f"importer memory: {memory}")
    results: dict[str, Any] = {"sizes": memory, "shape": {"companies": shape.companies, "filings": shape.filings,
                                         "concepts": shape.concepts, "rows_per_company": per_company},
                               "cases": {}}

    def home() -> str:
        return str(args.dir / f"home-{uuid.uuid4().hex[:8]}")

    def online(label: str) -> None:
        out = run_child("online", {**spec, "companies": args.online_companies, "home": home(), "port": next(ports)})
        results["cases"][label] = out
        log(f"{label}: {out['rows']:,} rows in {out['seconds']:.1f}s ({out['rows_per_s']:,.0f} rows/s), "
            f"load {out['load_average']}")

    online("online-before")
    workers = [int(w) for w in args.workers.split(",") if w]
    cases = [(size, count, w) for size, count in zip(sizes, companies, strict=True) for w in workers]
    for size, count, w in cases:
        out = run_child("bootstrap", {**spec, "companies": count, "home": home(), "port": next(ports), "workers": w})
        results["cases"][f"bootstrap-{size}-w{w}"] = out
        steps = ", ".join(f"{k} {v:.0f}s" for k, v in out["report"]["seconds"].items())
        log(f"bootstrap of {count} companies, {w} workers: {out['rows']:,} rows in {out['seconds']:.0f}s "
            f"({out['rows_per_s']:,.0f} rows/s; {steps}); peak RSS Python {out['python_peak_rss_mb']:.0f} MB, "
            f"JVMs {out['report']['peak_rss_mb']}; load {out['load_average']}")
    online("online-after")
    largest = results["cases"][f"bootstrap-{sizes[-1]}-w{workers[-1]}"]
    results["projection"] = projection(largest, args.archive_rows)
    online_rate = (results["cases"]["online-before"]["rows_per_s"] + results["cases"]["online-after"]["rows_per_s"]) / 2
    results["ratios"] = {f"bootstrap-{s}-w{w}": results["cases"][f"bootstrap-{s}-w{w}"]["rows_per_s"] / online_rate
                         for s, _, w in cases}
    log(f"ratio to the online loader's mean rate: {results['ratios']}; projection "
        f"{results['projection']['total_hours']:.1f} h for {args.archive_rows:,} rows")
    text = json.dumps(results, indent=2, default=str)
    if args.json:
        args.json.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
