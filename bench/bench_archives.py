#!/usr/bin/env python3
"""Benchmark of finding a universe in bulk archives: the memory and time of indexing a
``submissions.zip`` of many members beside a ``companyfacts.zip`` (a benchmark, not a
test: it reports, never asserts). No server is needed.

The archives are synthetic and small per member (the index's cost is per member, not
per byte): ``--members`` submissions files (one per filer, and a paged file for one
filer in twenty, like the SEC's), and ``--companies`` companyfacts files for the first
filers. Each round runs, in a fresh process per variant, interleaved:

``discover``
    ``universe.discover([companyfacts.zip, submissions.zip])``: the archives indexed.
``select``
    ``universe.select(found)``: every company with company facts, with its submissions
    files found (their names read).

With ``--baseline REV`` the same runs also use the loaders of that git revision (its
``graphmem/`` and ``loaders/``, exported with ``git archive``): the baseline, in the same
run, interleaved. ``--baseline a9e1f92`` is the last revision that read archives with
Python's :mod:`zipfile`.

Usage::

    .venv/bin/python bench/bench_archives.py [--members 300000] [--companies 2000]
        [--rounds 3] [--baseline REV] [--dir DIR]

Prints per variant the peak RSS above the interpreter with its imports (MB), that figure
per member (bytes), the RSS still held after ``select``, and the median and p95 seconds
of ``discover`` and ``select``, with the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import log, pct  # noqa: E402

_CHILD = r"""
import json, sys, time
code, facts, subs = sys.argv[1:4]
if code:
    import importlib.util
    sys.path.insert(0, code)
    import graphmem
    spec = importlib.util.spec_from_file_location("graphmem.loaders", f"{code}/loaders/__init__.py",
                                                  submodule_search_locations=[f"{code}/loaders"])
    loaders = importlib.util.module_from_spec(spec)
    sys.modules["graphmem.loaders"] = graphmem.loaders = loaders
    spec.loader.exec_module(loaders)
from graphmem.loaders import universe

def status_mb(key):  # VmHWM, not ru_maxrss: a child's ru_maxrss starts at its parent's peak
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith(key)) / 1024

base = status_mb("VmRSS:")
started = time.perf_counter()
found = universe.discover([facts, subs])
discovered = time.perf_counter()
companies = universe.select(found)
names = sum(len(c.submissions) for c in companies)
selected = time.perf_counter()
held = status_mb("VmRSS:")
found.close()
print(json.dumps({"base_mb": base, "peak_mb": status_mb("VmHWM:"),
                  "held_mb": held, "discover_s": discovered - started, "select_s": selected - discovered,
                  "companies": len(companies), "submissions": names, "source": universe.__file__}))
"""


def write_archives(folder: Path, members: int, companies: int) -> tuple[Path, Path]:
    """companyfacts.zip and submissions.zip (reused when already there at that size)."""
    folder.mkdir(parents=True, exist_ok=True)
    facts, subs = folder / f"companyfacts-{companies}.zip", folder / f"submissions-{members}.zip"
    if not facts.exists():
        with zipfile.ZipFile(facts, "w", zipfile.ZIP_DEFLATED) as archive:
            for cik in range(1, companies + 1):
                archive.writestr(f"CIK{cik:010d}.json", json.dumps({"cik": cik, "entityName": f"Company {cik}",
                                                                    "facts": {}}))
    if not subs.exists():
        log(f"writing {members:,} submissions members")
        empty = {"accessionNumber": [], "acceptanceDateTime": []}
        with zipfile.ZipFile(subs, "w", zipfile.ZIP_DEFLATED) as archive:
            cik = written = 0
            while written < members:
                cik += 1
                archive.writestr(f"CIK{cik:010d}.json", json.dumps({"cik": cik, "name": f"Filer {cik}",
                                                                    "filings": {"recent": empty, "files": []}}))
                written += 1
                if cik % 20 == 0 and written < members:
                    archive.writestr(f"CIK{cik:010d}-submissions-001.json", json.dumps(empty))
                    written += 1
    return facts, subs


def export(revision: str, into: Path) -> str:
    """The ``graphmem/`` and ``loaders/`` of a git revision, written under ``into``."""
    repo = Path(__file__).resolve().parents[1]
    tar = subprocess.run(["git", "archive", revision, "graphmem", "loaders"], cwd=repo, capture_output=True,
                         check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=tar, check=True)
    return str(into)


def child(code: str | None, facts: Path, subs: Path) -> dict[str, float]:
    run = subprocess.run([sys.executable, "-c", _CHILD, code or "", str(facts), str(subs)], capture_output=True,
                         text=True, check=True, timeout=3600)
    return json.loads(run.stdout)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--members", type=int, default=300_000)
    ap.add_argument("--companies", type=int, default=2_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--baseline", metavar="REV", help="a git revision to compare against, in the same run")
    ap.add_argument("--dir", type=Path, default=Path("/tmp/graphmem-bench-archives"))
    args = ap.parse_args()
    started = time.perf_counter()
    facts, subs = write_archives(args.dir, args.members, args.companies)
    log(f"archives ready in {time.perf_counter() - started:.0f} s: {subs.stat().st_size / 1e6:.0f} MB")
    exported = tempfile.TemporaryDirectory(prefix="graphmem-bench-archives-")
    variants = [("current", None), *((("baseline", export(args.baseline, Path(exported.name))),)
                                     if args.baseline else ())]
    load_before = os.getloadavg()
    runs: dict[str, list[dict[str, float]]] = {}
    for n in range(args.rounds):
        for label, code in (variants if n % 2 == 0 else variants[::-1]):
            runs.setdefault(label, []).append(child(code, facts, subs))
        log(f"round {n + 1}/{args.rounds}")
    load_after = os.getloadavg()
    with zipfile.ZipFile(subs) as archive:
        members = len(archive.infolist())
    print(f"{members:,} submissions members, {args.companies:,} companies with facts; {args.rounds} rounds")
    print(f"{'variant':<9} {'peak above base MB':>18} {'B/member':>9} {'held MB':>8} {'discover p50/p95 s':>19} "
          f"{'select p50/p95 s':>17}  found; code")
    for label, results in runs.items():
        above = [r["peak_mb"] - r["base_mb"] for r in results]
        held = [r["held_mb"] - r["base_mb"] for r in results]
        discover, select = [r["discover_s"] for r in results], [r["select_s"] for r in results]
        print(f"{label:<9} {pct(above, 50):>18.1f} {pct(above, 50) * 1048576 / members:>9.0f} {pct(held, 50):>8.1f} "
              f"{pct(discover, 50):>9.2f}/{pct(discover, 95):<9.2f} {pct(select, 50):>8.2f}/{pct(select, 95):<8.2f}"
              f"  {results[0]['companies']:,} companies, {results[0]['submissions']:,} submissions files found; "
              f"{results[0]['source']}")
    exported.cleanup()
    print(f"load average (1, 5, 15 min): before {load_before[0]:.2f} {load_before[1]:.2f} {load_before[2]:.2f}, "
          f"after {load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f}")


if __name__ == "__main__":
    main()
