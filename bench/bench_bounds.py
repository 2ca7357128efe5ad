#!/usr/bin/env python3
"""Benchmark of the input checks: what building a fact costs with its bounds checked
(a benchmark, not a test: it reports, never asserts). No server is needed.

The rows are Tesla's company facts (``tests/fixtures/companyfacts-CIK0001318605-tesla.json``,
17,718 rows), built as the companyfacts loader builds them: one ``FactIn`` per row, its
Period shared by the rows of a filing. Variants, interleaved round by round:

``validated``
    ``FactIn(...)``: pydantic validation with every bound (identifiers in UTF-8 bytes,
    the decimal's digits and exponent, the list of sources).
``constructed``
    ``FactIn.model_construct(...)``: the same object with no validation at all - the
    floor any checked construction stands beside.

With ``--code PATH`` the same rounds also run in a child process that imports graphmem
from another checkout (``PATH/graphmem``; e.g. ``git archive`` of the previous commit),
one child per round, interleaved with one of the current code: the cost of the bounds
against the code without them, in the same run.

Usage::

    .venv/bin/python bench/bench_bounds.py [--rounds 15] [--rows 17718] [--code PATH]

Prints per variant the median and p95 of the time to build all rows (ms) and per fact
(microseconds), the ratio to ``constructed``, and the load average.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import subprocess
import sys
import time
from decimal import Decimal
from pathlib import Path

TESLA = Path(__file__).resolve().parent.parent / "tests/fixtures/companyfacts-CIK0001318605-tesla.json"


def rows(limit: int) -> list[tuple[str, str, str | None, str, Decimal, str]]:
    """(concept, unit, start, end, value, accession) per row, in file order."""
    data = json.loads(TESLA.read_text(), parse_float=Decimal)
    out = []
    for taxonomy, concepts in data["facts"].items():
        for concept, body in concepts.items():
            for unit, items in body["units"].items():
                for r in items:
                    out.append((f"{taxonomy}:{concept}", unit, r.get("start"), r["end"],
                                Decimal(r["val"]), r["accn"]))
    return out[:limit]


def measure(limit: int, repeat: int) -> dict[str, list[float]]:
    """Seconds to build every row's FactIn, per variant, ``repeat`` times interleaved."""
    from graphmem import FactIn, Period

    data = rows(limit)
    periods: dict[tuple[str | None, str], Period] = {}
    for _, _, start, end, _, _ in data:
        if (start, end) not in periods:
            periods[start, end] = Period(
                start=dt.date.fromisoformat(start) if start else None,
                end=dt.date.fromisoformat(end))
    entity = "cik:1318605"
    times: dict[str, list[float]] = {"validated": [], "constructed": []}
    for attribute, unit, start, end, value, accession in data[:100]:  # warm up, untimed
        FactIn(entity=entity, attribute=attribute, unit=unit, period=periods[start, end],
               value=value, sources=(accession,))
    for _ in range(repeat):
        for variant, make in (("validated", FactIn), ("constructed", FactIn.model_construct)):
            t0 = time.perf_counter()
            for attribute, unit, start, end, value, accession in data:
                make(entity=entity, attribute=attribute, unit=unit, period=periods[start, end],
                     value=value, sources=(accession,))
            times[variant].append(time.perf_counter() - t0)
    return times


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def child(code: str | None, limit: int, repeat: int) -> dict[str, list[float]]:
    """One round in a fresh process importing graphmem from ``code`` (or this checkout)."""
    env = dict(os.environ)
    if code:
        env["PYTHONPATH"] = code
    out = subprocess.run([sys.executable, __file__, "--child", "--rows", str(limit),
                          "--repeat", str(repeat)],
                         env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--rows", type=int, default=17_718)
    ap.add_argument("--repeat", type=int, default=3, help="measurements per round and variant")
    ap.add_argument("--code", help="another checkout to compare against (its graphmem/)")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(measure(args.rows, args.repeat)))
        return
    load_before = os.getloadavg()[0]
    results: dict[str, list[float]] = {}
    for _ in range(args.rounds):
        for label, code in (("current", None), *((("other", args.code),) if args.code else ())):
            for variant, seconds in child(code, args.rows, args.repeat).items():
                results.setdefault(f"{label} {variant}", []).extend(seconds)
    n = args.rows
    floor = pct(results["current constructed"], 50)
    print(f"building {n:,} FactIns (Tesla's rows), {args.rounds} rounds x {args.repeat}:")
    for name, seconds in results.items():
        print(f"  {name:<22} p50 {pct(seconds, 50) * 1000:8.1f} ms  p95 "
              f"{pct(seconds, 95) * 1000:8.1f} ms  ({pct(seconds, 50) / n * 1e6:5.2f} us/fact, "
              f"{pct(seconds, 50) / floor:4.2f} x current constructed)")
    print(f"(machine: {os.cpu_count()} CPUs, 1-minute load average {load_before:.1f} before / "
          f"{os.getloadavg()[0]:.1f} after)")


if __name__ == "__main__":
    main()
