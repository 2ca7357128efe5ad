#!/usr/bin/env python3
"""Benchmark of point-in-time screens (``Memory.screen``): a benchmark, not a test.

Data: a synthetic universe of companies (default 200) in the real key shape, written
through the API (per company: its filings with ``Memory.record``, then what they report
with ``Memory.assert_facts``): ``cik:N`` entities; per fiscal quarter one filing
(``10-Q``, or ``10-K`` for the fourth; a primary source published by the company, public
25-75 days after the quarter) reporting 14 duration concepts (``us-gaap:Revenues``,
``NetIncomeLoss`` ...: the quarter, the year to date - the fiscal year in a 10-K - and the
same quarter of the prior year again) and 12 instants (``Assets``, ``Liabilities`` ...:
the quarter end and the prior fiscal year end), in ``USD``: about 70 values a filing.
The prior-year figures a filing repeats are mostly the same value (more evidence) and
about 8% of the time a restatement (a new version). Three fiscal calendars: calendar quarters (60%), 52/53-week
quarters ending on the last Saturday of the quarter's last month (25%), and quarters a
month off the calendar (February-April ..., 15%). One company in 40 also has a
newswire's figure (another publisher, also primary) that disagrees with its filing for
one quarter: conflicted keys.

Measured, interleaved in one loop through one driver: ``Memory.screen`` for a frame at a
random cutoff (a quarter ``CY2023Q3`` on Revenues, an instant ``CY2023Q4I`` on Assets, a
year ``CY2023`` on NetIncomeLoss), beside the baseline: one plain Cypher statement, the
"latest value per company" for the same attribute and period - the same frame window and
cutoff, the latest available version of each key, no known_at, no supersession rule, no
conflicts, no universe - and beside that lookup returning also the latest version's
filings public by the cutoff (a screen's rows carry their provenance). Prints p50/p95 of
each, the ratios, the load average, and a PROFILE of ``screen.read`` (db hits, index
seeks).

Usage (against a dedicated server; the universe is written once per tenant name)::

    GRAPHMEM_NEO4J_URI=bolt://127.0.0.1:7705 .venv/bin/python bench/bench_screen.py \
        --companies 200 --reads 100 [--tenant NAME] [--drop] [--json PATH]

or, for a universe too large to write through the API (2,000 companies: 2.2M rows), built
offline by ``graphmem bootstrap``'s route into a launcher home of its own (its database
is replaced; then reuse it through GRAPHMEM_NEO4J_URI)::

    .venv/bin/python bench/bench_screen.py --companies 2000 --bootstrap /tmp/screen-home --port 7705

Targets it reports against (it does not assert them): screen p50 at most 2x the plain
lookup, and under 1 s.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import random
import sys
import time
import zlib
from decimal import Decimal
from pathlib import Path
from typing import Any

import neo4j

sys.path.insert(0, str(Path(__file__).parent))
from common import drop_tenant, log, pct, plan_operators  # noqa: E402 - sibling module of the bench scripts

from graphmem import Authority, Entity, FactIn, Memory, Period, Scope, Source  # noqa: E402
from graphmem.queries import QUERIES  # noqa: E402
from graphmem.screen import Selection  # noqa: E402

# A filing reports about 70 values (a real 10-Q reports hundreds: Tesla's average 354), so
# that its source node is dense as real ones are (Neo4j groups the relationships of a
# node with more than 50 by type; the read rule looks for retractions of each source).
DURATIONS = tuple("us-gaap:" + c for c in (
    "Revenues", "CostOfRevenue", "OperatingIncomeLoss", "NetIncomeLoss", "GrossProfit",
    "ResearchAndDevelopmentExpense", "SellingGeneralAndAdministrativeExpense", "OperatingExpenses",
    "InterestExpense", "IncomeTaxExpenseBenefit", "DepreciationDepletionAndAmortization",
    "ShareBasedCompensation", "NetCashProvidedByUsedInOperatingActivities",
    "PaymentsToAcquirePropertyPlantAndEquipment"))
INSTANTS = tuple("us-gaap:" + c for c in (
    "Assets", "Liabilities", "AssetsCurrent", "LiabilitiesCurrent", "CashAndCashEquivalentsAtCarryingValue",
    "StockholdersEquity", "InventoryNet", "AccountsReceivableNetCurrent", "PropertyPlantAndEquipmentNet",
    "LongTermDebtNoncurrent", "AccountsPayableCurrent", "RetainedEarningsAccumulatedDeficit"))
FIRST_YEAR = 2021
RESTATED = 0.08
VARIANTS = (("quarter", "us-gaap:Revenues", "CY2023Q3", dt.date(2023, 10, 10), dt.date(2024, 12, 31)),
            ("instant", "us-gaap:Assets", "CY2023Q4I", dt.date(2024, 1, 20), dt.date(2025, 3, 31)),
            ("year", "us-gaap:NetIncomeLoss", "CY2023", dt.date(2024, 1, 20), dt.date(2025, 3, 31)))

# "latest value per company": the frame's keys (the same window as screen.read), each
# key's latest version available by the cutoff, one value per company
BASELINE = """
MATCH (k:FactKey {tenant: $tenant, attribute: $attribute})
WHERE k.scope = $scope AND k.period_end >= $end_from AND k.period_end <= $end_to
  AND CASE $kind
        WHEN 'instant' THEN k.period_start IS NULL
        ELSE k.period_start IS NOT NULL
             AND $min_days <= duration.inDays(k.period_start, k.period_end).days + 1 <= $max_days
             AND $mid_from <= k.period_start
                 + duration({days: duration.inDays(k.period_start, k.period_end).days / 2}) <= $mid_to
      END
MATCH (f:Fact)-[:VERSION_OF]->(k)
WHERE f.available_by <= $cutoff
WITH k.entity AS entity, f ORDER BY f.available_by DESC
RETURN entity, head(collect(f.value)) AS value
"""
# the same, with the latest version's filings public by the cutoff (id and availability):
# a second baseline that also returns provenance, as every row of a screen does
SOURCED = BASELINE.replace("RETURN entity, head(collect(f.value)) AS value", """WITH entity, head(collect(f)) AS f
RETURN entity, f.value AS value,
       COLLECT { MATCH (f)-[e:EVIDENCED_BY]->(s:Source) WHERE e.available_by <= $cutoff
                 RETURN [s.id, e.available_by.epochMillis] } AS sources""")


def _h(*parts: Any) -> int:
    return zlib.crc32(":".join(map(str, parts)).encode())


# ------------------------------------------------------------------ the universe


def calendar(n: int) -> str:
    return "calendar" if n % 20 < 12 else ("52-53" if n % 20 < 17 else "offset")


def quarter_end(kind: str, year: int, q: int) -> dt.date:
    """The last day of fiscal quarter q of fiscal year ``year``."""
    if kind == "offset":  # quarters end in April, July, October, January
        month = 3 * q + 1
        y, m = (year + 1, 1) if month == 13 else (year, month)
        return dt.date(y + (m == 12), m % 12 + 1, 1) - dt.timedelta(days=1)
    last = dt.date(year + (q == 4), (3 * q) % 12 + 1, 1) - dt.timedelta(days=1)
    if kind == "52-53":  # the last Saturday on or before the calendar quarter end
        last -= dt.timedelta(days=(last.weekday() - 5) % 7)
    return last


class Universe:
    """Deterministic synthetic filings: everything is a function of (seed, company, ...)."""

    def __init__(self, companies: int, years: int, seed: int):
        self.companies, self.years, self.seed = companies, years, seed

    @staticmethod
    def cik(n: int) -> str:
        return f"cik:{100000 + n}"

    def quarters(self, n: int) -> list[tuple[int, int, Period]]:
        """(fiscal year, quarter, period) of company n, in order, one year of history first."""
        kind, out = calendar(n), []
        previous = quarter_end(kind, FIRST_YEAR - 1, 4)
        for year in range(FIRST_YEAR, FIRST_YEAR + self.years):
            for q in range(1, 5):
                end = quarter_end(kind, year, q)
                out.append((year, q, Period(start=previous + dt.timedelta(days=1), end=end)))
                previous = end
        return out

    def value(self, n: int, concept: str, period: Period, restated: bool = False) -> Decimal:
        base = 1_000_000 + _h(self.seed, n, concept, period.text) % 900_000_000
        return Decimal(base + (_h(self.seed, "r", n, concept, period.text) % 5_000_000 if restated else 0))

    def filings(self, n: int) -> list[tuple[Source, list[FactIn]]]:
        cik, quarters = self.cik(n), self.quarters(n)
        out = []
        for i, (year, q, period) in enumerate(quarters):
            lag = (50 + _h(self.seed, "lag", n, i) % 26) if q == 4 else (25 + _h(self.seed, "lag", n, i) % 31)
            accepted = dt.datetime.combine(period.end + dt.timedelta(days=lag), dt.time(21, 5), dt.UTC)
            source = Source(id=f"{100000 + n:010d}-{year % 100:02d}-{q:06d}", kind="10-K" if q == 4 else "10-Q",
                            authority=Authority.PRIMARY, publisher=cik, available_by=accepted)
            year_start = quarters[i - q + 1][2].start
            items: list[FactIn] = []

            def fact(concept: str, p: Period, value: Decimal, src: Source = source,
                     into: list[FactIn] = items) -> None:
                into.append(FactIn(entity=cik, attribute=concept, unit="USD", period=p, value=value,
                                   sources=(src.id,)))

            for concept in DURATIONS:
                fact(concept, period, self.value(n, concept, period))
                if q > 1:
                    ytd = Period(start=year_start, end=period.end)
                    fact(concept, ytd, self.value(n, concept, ytd))
                if i >= 4:  # the same quarter a year ago, again: corroborated or restated
                    prior = quarters[i - 4][2]
                    restate = _h(self.seed, "restate", n, concept, i) % 1000 < RESTATED * 1000
                    fact(concept, prior, self.value(n, concept, prior, restated=restate))
            for concept in INSTANTS:
                fact(concept, Period(end=period.end), self.value(n, concept, Period(end=period.end)))
                if i >= q:  # the prior fiscal year end
                    fy_end = Period(end=quarters[i - q][2].end)
                    fact(concept, fy_end, self.value(n, concept, fy_end))
            out.append((source, items))
            if n % 40 == 7 and q == 3:  # a newswire that disagrees with the filing
                wire = Source(id=f"wire:{cik}:{year}Q{q}", kind="press", authority=Authority.PRIMARY,
                              publisher="wire:newsdesk", available_by=accepted + dt.timedelta(hours=1))
                out.append((wire, [FactIn(entity=cik, attribute="us-gaap:Revenues", unit="USD", period=period,
                                          value=self.value(n, "us-gaap:Revenues", period) + 1,
                                          sources=(wire.id,))]))
        return out

    def build(self, build: Any, scope: Scope) -> tuple[int, list[tuple[Source, list[FactIn]]]]:
        """The universe through an offline build (``graphmem.bulk.Build``), as the filings
        loaders write it: per company its entity, then each filing with what it reports,
        one transaction a filing. The newswire figures come from a second publisher, which
        a build refuses: they are returned, to be written online afterwards. Returns
        (rows built, newswire filings)."""
        rows, later = 0, []
        for n in range(self.companies):
            build.put_entity(scope, Entity(id=self.cik(n), name=f"Company {n}", kind="company"))
            for source, items in self.filings(n):
                if source.publisher_id != self.cik(n):
                    later.append((source, items))
                    continue
                rows += build.record(scope, sources=[source], items=items).rows
            build.flush()
            if n % 200 == 199:
                log(f"  built {n + 1} companies, {rows} rows")
        return rows, later

    def bootstrap(self, home: Path, port: int, scope: Scope) -> str:
        """The universe as a new database served by the launcher at ``home`` (``graphmem
        bootstrap``'s route: offline build, Neo4j's importer, swap; whatever that home's
        database held is replaced), the newswire figures written online after; returns
        the server's URI."""
        from graphmem import offline
        from graphmem import server as srv

        cfg = srv.ServerConfig(home=home, port=port, heap="2g", pagecache="1g")
        (rows, later), report = offline.bootstrap(cfg, lambda build: self.build(build, scope), replace=True)
        log(f"bootstrapped {rows} rows: " + ", ".join(f"{k} {v:.0f} s" for k, v in report.seconds.items()))
        with Memory(neo4j.GraphDatabase.driver(cfg.uri, notifications_min_severity="OFF")) as mem:
            for source, items in later:
                mem.record(scope, sources=[source], items=items)
        return cfg.uri

    def write(self, mem: Memory, scope: Scope) -> int:
        """Per company: its filings (sources) in one transaction, then what they report in
        filing order through ``assert_facts`` (transactions of 500)."""
        rows, t0 = 0, time.perf_counter()
        for n in range(self.companies):
            mem.put_entity(scope, Entity(id=self.cik(n), name=f"Company {n}", kind="company"))
            filings = self.filings(n)
            mem.record(scope, sources=[source for source, _ in filings])
            rows += mem.assert_facts(scope, (item for _, items in filings for item in items)).rows
            if n % 20 == 19:
                log(f"  {n + 1} companies, {rows} rows, {rows / (time.perf_counter() - t0):.0f} rows/s")
        return rows


def universe_options(ap: argparse.ArgumentParser) -> None:
    """The options of where the universe is (bench_screen.py's and bench_panel.py's)."""
    ap.add_argument("--bootstrap", type=Path, metavar="HOME",
                    help="build the universe offline and serve it from the launcher at HOME (whatever its "
                         "database held is replaced), instead of writing it through the API into the server "
                         "of GRAPHMEM_NEO4J_URI")
    ap.add_argument("--port", type=int, default=7705, help="the port of the bootstrapped launcher")


def universe_server(args: argparse.Namespace, universe: Universe, scope: Scope) -> str:
    """The URI of a server whose ``scope`` holds the universe: bootstrapped (``--bootstrap``),
    or GRAPHMEM_NEO4J_URI's, written there through the API unless the tenant holds it."""
    if args.bootstrap:
        log(f"bootstrapping {universe.companies} companies x {universe.years} years into {args.bootstrap}")
        return universe.bootstrap(args.bootstrap, args.port, scope)
    uri = os.environ.get("GRAPHMEM_NEO4J_URI")
    if not uri:
        sys.exit("set GRAPHMEM_NEO4J_URI to a dedicated server, or pass --bootstrap HOME")
    with Memory.from_env() as mem:
        mem.migrate()
        if not mem.counts(scope).get("entities"):
            log(f"writing {universe.companies} companies x {universe.years} years into {scope.tenant}")
            t0 = time.perf_counter()
            rows = universe.write(mem, scope)
            log(f"wrote {rows} rows in {time.perf_counter() - t0:.0f} s")
    return uri


# ------------------------------------------------------------------ measuring


def baseline_params(frame: str) -> dict[str, Any]:
    s = Selection.frame(frame)
    return {"kind": s.kind, "end_from": s.end_from, "end_to": s.end_to, "min_days": s.days[0],
            "max_days": s.days[1], "mid_from": s.start, "mid_to": s.end}


def profile_screen(driver: neo4j.Driver, database: str, mem: Memory, scope: Scope, attribute: str, frame: str,
                   cutoff: dt.datetime) -> dict[str, Any]:
    """PROFILE screen.read once: total db hits, rows, and the index seeks it used."""
    import graphmem.screen as screening

    q = screening.make_query(attribute=attribute, selection=Selection.frame(frame), cutoff=cutoff, known_at=None,
                             entities=None, unit=None, definition="", require=None, sort="entity")
    params = {"q": q.params(), "min_rank": 0, "kinds": None, "tenant": scope.tenant, "scope": scope.id}
    with driver.session(database=database) as session:
        summary = session.run("PROFILE " + QUERIES["screen.read"], **params).consume()
    plan = summary.profile
    ops = list(plan_operators(plan))
    seeks = sorted({op["operatorType"].split("@")[0] + " " + str(op.get("args", {}).get("Details", ""))[:90]
                    for _, op in ops if "Seek" in op["operatorType"] or "Scan" in op["operatorType"]})
    return {"db_hits": sum(op.get("dbHits", 0) for _, op in ops), "rows": plan.get("rows"), "seeks_and_scans": seeks}


def screened(mem: Memory, scope: Scope, attribute: str, frame: str, cutoff: dt.datetime) -> tuple[int, int]:
    """One screen; (entities with a value, entities without one)."""
    counts = mem.screen(scope, attribute=attribute, frame=frame, cutoff=cutoff).counts()
    return counts["active"], counts["conflicted"] + counts["not_found"]


def plain_lookup(driver: neo4j.Driver, database: str, query: str, params: dict[str, Any]) -> None:
    """A baseline: one auto-commit statement, every row fetched."""
    with driver.session(database=database) as session:
        session.run(query, **params).data()


def measure(mem: Memory, driver: neo4j.Driver, database: str, scope: Scope, reads: int, seed: int) -> list[dict]:
    rng = random.Random(seed)
    plan = [(v, rng.random()) for v in VARIANTS for _ in range(reads)]
    rng.shuffle(plan)
    times: dict[str, dict[str, list[float]]] = {v[0]: {"screen": [], "baseline": [], "sourced": []}
                                                for v in VARIANTS}
    shape: dict[str, list[tuple[int, int]]] = {v[0]: [] for v in VARIANTS}
    for (name, attribute, frame, first, last), u in plan:
        day = first + dt.timedelta(days=int(u * (last - first).days))
        cutoff = dt.datetime.combine(day, dt.time(23, 59), dt.UTC)
        params = {"tenant": scope.tenant, "scope": scope.id, "attribute": attribute, "cutoff": cutoff,
                  **baseline_params(frame)}

        work = {"screen": lambda a=attribute, f=frame, c=cutoff, n=name: shape[n].append(
                    screened(mem, scope, a, f, c)),
                "baseline": lambda p=params: plain_lookup(driver, database, BASELINE, p),
                "sourced": lambda p=params: plain_lookup(driver, database, SOURCED, p)}
        for label in rng.sample(sorted(work), len(work)):
            t0 = time.perf_counter()
            work[label]()
            times[name][label].append(time.perf_counter() - t0)
    out = []
    for name, attribute, frame, _, _ in VARIANTS:
        s, b, w = times[name]["screen"], times[name]["baseline"], times[name]["sourced"]
        active = [a for a, _ in shape[name]]
        out.append({"variant": name, "attribute": attribute, "frame": frame, "reads": len(s),
                    "screen_p50_ms": pct(s, 50) * 1e3, "screen_p95_ms": pct(s, 95) * 1e3,
                    "baseline_p50_ms": pct(b, 50) * 1e3, "baseline_p95_ms": pct(b, 95) * 1e3,
                    "ratio_p50": pct(s, 50) / pct(b, 50), "ratio_p95": pct(s, 95) / pct(b, 95),
                    "sourced_p50_ms": pct(w, 50) * 1e3, "sourced_p95_ms": pct(w, 95) * 1e3,
                    "sourced_ratio_p50": pct(s, 50) / pct(w, 50),
                    "active_median": sorted(active)[len(active) // 2]})
    return out


def time_ltm(mem: Memory, scope: Scope) -> list[tuple[float, dict[str, int]]]:
    """metrics.screen_ltm over the universe, twice at one cutoff: seconds and counts."""
    from graphmem.loaders import metrics

    out = []
    for _ in range(2):
        t0 = time.perf_counter()
        s = metrics.screen_ltm(mem, scope, concept="us-gaap:Revenues", frame="CY2023Q3",
                               cutoff=dt.datetime(2024, 3, 1, tzinfo=dt.UTC))
        out.append((time.perf_counter() - t0, s.counts()))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--companies", type=int, default=200)
    ap.add_argument("--years", type=int, default=4, help="fiscal years of filings from 2021")
    ap.add_argument("--reads", type=int, default=100, help="screens per variant (and as many baselines)")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--tenant", help="tenant to write the universe into, or reuse if it holds it")
    ap.add_argument("--drop", action="store_true", help="delete the tenant afterwards")
    ap.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    ap.add_argument("--ltm", action="store_true",
                    help="also time metrics.screen_ltm (Revenues, CY2023Q3) twice: recording, then again")
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
        measure(mem, driver, database, scope, 3, args.seed + 1)
        load_before = os.getloadavg()
        log(f"measuring {args.reads} screens per variant")
        results = measure(mem, driver, database, scope, args.reads, args.seed)
        load_after = os.getloadavg()
        prof = profile_screen(driver, database, mem, scope, "us-gaap:Revenues", "CY2023Q3",
                              dt.datetime(2024, 6, 30, tzinfo=dt.UTC))
        ltm = time_ltm(mem, scope) if args.ltm else []
        driver.close()
        if args.drop:
            drop_tenant(mem.db.driver, database, scope.tenant)

    print(f"\nscreen over {args.companies} companies ({counts.get('versions')} versions, {counts.get('keys')} keys); "
          f"load average {load_before[0]:.1f} before, {load_after[0]:.1f} after")
    print(f"{'variant':8} {'frame':10} {'screen p50/p95 ms':>20} {'plain lookup p50/p95 ms':>26} "
          f"{'ratio p50/p95':>14} {'with filings p50/p95 ms':>25} {'ratio p50':>9} {'active':>7}")
    for r in results:
        print(f"{r['variant']:8} {r['frame']:10} {r['screen_p50_ms']:9.1f} / {r['screen_p95_ms']:7.1f} "
              f"{r['baseline_p50_ms']:12.1f} / {r['baseline_p95_ms']:8.1f} {r['ratio_p50']:6.2f} / "
              f"{r['ratio_p95']:5.2f} {r['sourced_p50_ms']:12.1f} / {r['sourced_p95_ms']:8.1f} "
              f"{r['sourced_ratio_p50']:9.2f} {r['active_median']:7}")
    print(f"PROFILE screen.read (Revenues CY2023Q3): {prof['db_hits']} db hits; "
          + "; ".join(prof["seeks_and_scans"]))
    for n, (seconds, counted) in enumerate(ltm):
        print(f"metrics.screen_ltm Revenues CY2023Q3, {'first (records derivations)' if n == 0 else 'again'}: "
              f"{seconds:.2f} s, {counted}")
    if args.json:
        Path(args.json).write_text(json.dumps({"results": results, "profile": prof, "counts": counts, "ltm": ltm,
                                               "load": [load_before, load_after]}, indent=2, default=str))


if __name__ == "__main__":
    main()
