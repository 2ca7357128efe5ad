"""`graphmem screen --format table` on a large screen: the table as laid out now
(``render.plain_table``) beside the same rows laid out by rich (``render.table``, what
the command did before: the baseline), and CSV of every row for reference, in the same
run. No database: a screen of N active answers is built in
memory, as ``Memory.screen`` returns it, and only the rendering is timed.

    .venv/bin/python bench/bench_screen_table.py [--rows 20000 100000] [--repeat 5] [--baseline-repeat 1]

(rich's layout of 100,000 rows takes minutes: ``--baseline-repeat 0`` leaves it out.)

Prints one line per (rows, way): median and p95 seconds over the repetitions.
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import io
import os
import time
from collections.abc import Callable
from decimal import Decimal

from common import log, pct

from graphmem import render
from graphmem.models import Answer, Authority, Evidence, FactVersion, Period, Screen

UTC = dt.UTC


def screen_of(rows: int) -> Screen:
    """A screen of ``rows`` entities, each active with one version and one source."""
    cutoff = dt.datetime(2024, 11, 15, tzinfo=UTC)
    public = dt.datetime(2024, 11, 1, tzinfo=UTC)
    answers = []
    for n in range(rows):
        entity = f"cik:{n + 1}"
        source = Evidence(source_id=f"0000{n:06d}-24-000001", kind="10-Q", authority=Authority.PRIMARY,
                          publisher=entity, available_by=public, recorded_at=cutoff)
        version = FactVersion(version_id=f"fv_{n:032x}", entity=entity, attribute="us-gaap:Revenues", unit="USD",
                              definition="", period=Period(start=dt.date(2024, 7, 1), end=dt.date(2024, 9, 30)),
                              value=Decimal(1000 + n), event_time=dt.date(2024, 9, 30), available_by=public,
                              recorded_at=cutoff, revision=1, authority=Authority.PRIMARY, sources=(source,))
        answers.append(Answer(status="active", entity=entity, attribute="us-gaap:Revenues", cutoff=cutoff,
                              known_at=cutoff, version=version))
    return Screen(attribute="us-gaap:Revenues", definition="", unit="USD", frame="CY2024Q3", period=None,
                  cutoff=cutoff, known_at=cutoff, universe="attribute", sort="entity", answers=tuple(answers))


def as_csv(s: Screen) -> str:
    """What `screen --format csv` prints."""
    rows = render.screen_rows(s)
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(rows[0]))
    writer.writeheader()
    writer.writerows(rows)
    return buffer.getvalue()


def timed(fn: Callable[[], str], repeat: int) -> tuple[list[float], int]:
    seconds, size = [], 0
    for _ in range(repeat):
        started = time.perf_counter()
        size = len(fn())
        seconds.append(time.perf_counter() - started)
    return seconds, size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[20_000, 100_000])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--baseline-repeat", type=int, default=1)
    args = parser.parse_args()
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"{'rows':>8} {'way':<34} {'median s':>9} {'p95 s':>8} {'chars out':>12}")
    for rows in args.rows:
        log(f"building a screen of {rows:,} rows")
        s = screen_of(rows)
        ways = [("table by rich (baseline)", lambda s=s: render.table(render.SCREEN_COLUMNS,
                                                                       render.screen_table_rows(s)),
                 args.baseline_repeat),
                ("table, plain (render.screen)", lambda s=s: render.screen(s), args.repeat),
                ("csv, every row", lambda s=s: as_csv(s), args.repeat)]
        for way, fn, repeat in ways:
            if not repeat:  # --baseline-repeat 0: the baseline is not run
                continue
            log(f"{rows:,} rows: {way} x {repeat}")
            seconds, size = timed(fn, repeat)
            print(f"{rows:>8,} {way:<34} {pct(seconds, 50):>9.2f} {pct(seconds, 95):>8.2f} {size:>12,}", flush=True)
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
