#!/usr/bin/env python3
"""Benchmark of reading companyfacts files, without a database: what the long-number
rewrite (loaders/longnumbers.py) costs a normal file (a benchmark, not a test: it
reports, never asserts).

Each round reads every file with ``sec.read`` (stream, check, spool) twice, interleaved:

``rewrite``
    as the loaders read: every stream through ``longnumbers.ShortNumbers``.
``plain``
    the same code with the streams passed to the parser as they are (the baseline).

Usage::

    .venv/bin/python bench/bench_reading.py [--rounds 15] [FILE ...]

Without files: the real ones in tests/fixtures (Tesla, Marvell, TSMC, LPA). Prints per
file, variant and clock (this process's CPU time, the steadier on a shared machine, and
wall time) the median and p95 (ms) and MB/s, the rewrite's cost over ``plain``, the CPU
time of the rewrite alone (the stream read through it without parsing), and the load
average before and after.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import log, pct  # noqa: E402

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures"


def read_once(path: Path) -> tuple[float, float]:
    """Seconds to read one file into a spool: wall clock, and this process's CPU time (on
    a shared machine the steadier of the two)."""
    from graphmem.loaders import sec
    from graphmem.loaders.spool import Spool

    with Spool() as spool:
        wall, cpu = time.perf_counter(), time.process_time()
        sec.read(path, spool=spool)
        return time.perf_counter() - wall, time.process_time() - cpu


def measure(files: list[Path], rounds: int) -> dict[tuple[str, str, str], list[float]]:
    """Seconds per (file, variant, clock), the variants interleaved in each round."""
    from graphmem.loaders import universe

    rewrite = universe.ShortNumbers
    out: dict[tuple[str, str, str], list[float]] = {}
    for n in range(rounds):
        order = ("rewrite", "plain") if n % 2 == 0 else ("plain", "rewrite")
        for path in files:
            for variant in order:
                universe.ShortNumbers = rewrite if variant == "rewrite" else (lambda raw: raw)
                wall, cpu = read_once(path)
                out.setdefault((path.name, variant, "wall"), []).append(wall)
                out.setdefault((path.name, variant, "cpu"), []).append(cpu)
        log(f"round {n + 1}/{rounds}")
    universe.ShortNumbers = rewrite
    return out


def rewrite_alone(path: Path, rounds: int) -> list[float]:
    """CPU seconds to pass the file through the rewrite alone (no parse), from memory."""
    import io

    from graphmem.loaders.longnumbers import ShortNumbers

    data = path.read_bytes()
    out = []
    for _ in range(rounds):
        started = time.process_time()
        with ShortNumbers(io.BytesIO(data)) as stream:
            while stream.read(1 << 16):
                pass
        out.append(time.process_time() - started)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="*", type=Path)
    ap.add_argument("--rounds", type=int, default=15)
    args = ap.parse_args()
    files = args.files or sorted(FIXTURES.glob("companyfacts-*.json"))
    load_before = os.getloadavg()
    times = measure(files, args.rounds)
    load_after = os.getloadavg()
    print(f"{'file':<40} {'variant':<8} {'clock':<5} {'p50 ms':>8} {'p95 ms':>8} {'MB/s':>6} {'p50 vs plain':>13}")
    for path in files:
        size = path.stat().st_size / 1e6
        for clock in ("cpu", "wall"):
            plain = pct(times[path.name, "plain", clock], 50)
            for variant in ("rewrite", "plain"):
                p50, p95 = pct(times[path.name, variant, clock], 50), pct(times[path.name, variant, clock], 95)
                print(f"{path.name:<40} {variant:<8} {clock:<5} {p50 * 1000:>8.1f} {p95 * 1000:>8.1f} "
                      f"{size / p50:>6.1f} {(p50 / plain - 1) * 100:>+12.1f}%")
    for path in files:
        alone = rewrite_alone(path, args.rounds)
        print(f"{path.name:<40} the rewrite alone, CPU p50 {pct(alone, 50) * 1000:.1f} ms "
              f"= {path.stat().st_size / 1e6 / pct(alone, 50):,.0f} MB/s")
    print(f"load average (1, 5, 15 min): before {load_before[0]:.2f} {load_before[1]:.2f} {load_before[2]:.2f}, "
          f"after {load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f}; {args.rounds} rounds")


if __name__ == "__main__":
    main()
