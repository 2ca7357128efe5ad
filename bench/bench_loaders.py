#!/usr/bin/env python3
"""Benchmark of the SEC companyfacts loader (a benchmark, not a test: it reports, never asserts).

Cases, each in its own child process (so peak RSS is per case) against one dedicated
server, each loaded into a fresh tenant:

``tesla``
    ``tests/fixtures/companyfacts-CIK0001318605-tesla.json`` with its submissions file
    (17,718 rows, 50 filings) through ``graphmem.loaders.sec.load``: rows/s; a second
    load of the same file into the same tenant (everything unchanged: the cost of
    idempotency); and, beside them, a raw ``UNWIND $rows AS row CREATE (:BenchRawFact
    {...})`` of the same rows with the same properties, one batch (one transaction) per
    filing in the loader's order, run after each load and deleted afterwards: the
    engine's own limit for the same writes.
``synthetic-N``
    A synthetic one-company companyfacts file of N rows in the real schema (facts ->
    taxonomy -> concept -> units -> unit -> rows with start/end/val/accn/fy/fp/form/
    filed/frame), written to a temp file by a streaming writer (see :class:`Synthetic`):
    5,000 rows per quarterly filing (500 concepts x 5 periods ending at the quarter end
    + the same 5 periods one year earlier as comparatives), ~3% of comparatives restated,
    so N sets the number of filings (100k -> 20, 1M -> 200). No submissions file: every
    filing gets the ``filed-end-of-day`` availability. Rows/s beside the raw baseline.

Memory, per case: ``ru_maxrss`` after the timed load against the RSS just before it
(the load's own high-water mark in a process that did nothing else big), tracemalloc
peak of a separate load call alone into another fresh tenant (slower: tracemalloc
traces every allocation; only for files up to ``--trace-max-rows``), and tracemalloc
of ``read_json`` alone (what ``json.load`` of the whole file keeps alive).

Where the time goes: graphmem's named statements (``fact.read``,
``fact.create_versions`` ...) timed by wrapping ``graphmem.db.Tx.run`` in the child
process, the per-filing ``Memory.record`` transactions, and the rest of ``load``
(reading, validating, building FactIns). Instrumentation only: graphmem is not changed.

Usage (against a dedicated server, never a shared one)::

    GRAPHMEM_NEO4J_URI=bolt://127.0.0.1:7691 .venv/bin/python bench/bench_loaders.py \
        --sizes 100000,1000000 [--json PATH]

If the extrapolated load time of a synthetic size (linear, from the rate of the largest
size measured so far) exceeds ``--max-minutes``, ``--fallback-size`` runs instead and
the output says so.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import tracemalloc
import uuid
import zlib
from collections import defaultdict
from collections.abc import Callable, Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import neo4j
from common import StatementClock, drop_tenant, log, pct, peak_rss_mb, plan_operators, raw_tx  # noqa: E402 - sibling module of the bench scripts
from graphmem.loaders import availability as av
from graphmem.loaders import sec
from neo4j.exceptions import DriverError, Neo4jError

import graphmem
from graphmem import Memory, Scope
from graphmem.queries import QUERIES
from graphmem.values import encode

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"
TESLA = FIXTURES / "companyfacts-CIK0001318605-tesla.json"
TESLA_SUBMISSIONS = FIXTURES / "submissions-CIK0001318605-tesla.json"
WARMUP = FIXTURES / "companyfacts-CIK0001997711-lpa.json"  # small: plans the statements

CODE_DIRS = ("graphmem", "loaders", "cypher")

RAW_LABEL = "BenchRawFact"
RAW_CREATE = (
    f"UNWIND $rows AS row CREATE (:{RAW_LABEL} {{bench: $bench, entity: row.entity, "
    "attribute: row.attribute, unit: row.unit, definition: row.definition, "
    "period: row.period, period_start: row.period_start, period_end: row.period_end, "
    "value: row.value, value_type: row.value_type, value_num: row.value_num, "
    "source: row.source, available_by: row.available_by})"
)
RAW_DELETE = (
    f"MATCH (n:{RAW_LABEL} {{bench: $bench}}) "
    "CALL (n) { DETACH DELETE n } IN TRANSACTIONS OF 20000 ROWS"
)


# ------------------------------------------------------------------ small helpers






def current_rss_mb() -> float:
    """The process's RSS now, from /proc/self/statm."""
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20




def _h(*parts: Any) -> int:
    return zlib.crc32(":".join(map(str, parts)).encode())


def code_version() -> dict[str, Any]:
    """HEAD, the uncommitted files under graphmem/ loaders/ cypher/, and a content hash."""
    import hashlib

    def git(*args: str) -> str:
        proc = subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True,
                              check=False)
        return proc.stdout

    sha = hashlib.sha256()
    for path in sorted(p for d in CODE_DIRS for p in (ROOT / d).glob("*") if p.is_file()):
        sha.update(f"{path.parent.name}/{path.name}".encode() + b"\0" + path.read_bytes())
    dirty = [line[3:] for line in git("status", "--porcelain", "--", *CODE_DIRS).splitlines()]
    return {"head": git("rev-parse", "--short", "HEAD").strip(), "dirty": dirty,
            "sha": sha.hexdigest()[:12]}


def snapshot_code(dest: Path) -> dict[str, Any]:
    """Copy graphmem/, loaders/ and cypher/ to ``dest`` in the installed layout
    (``graphmem``, ``graphmem.loaders``, ``graphmem.cypher``), so every case imports the
    same code even while the working tree changes; return what was copied."""
    code = code_version()
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    pkg = dest / "graphmem"
    shutil.copytree(ROOT / "graphmem", pkg, ignore=ignore)
    shutil.copytree(ROOT / "loaders", pkg / "loaders", ignore=ignore)
    shutil.copytree(ROOT / "cypher", pkg / "cypher", ignore=ignore)
    if code_version()["sha"] != code["sha"]:
        sys.exit("the code changed while it was being copied; run again")
    return {**code, "snapshot": str(dest)}


# ------------------------------------------------------------------ instrumentation


class CallClock:
    """Wall and CPU time of one bound method of one object (an instance-level wrapper).

    Used on ``Memory.record`` (one call per filing: the loader's write transactions)
    and ``Memory.put_entity``; logs progress every 30 s when ``progress`` is given.
    """

    def __init__(self, obj: Any, method: str, progress: Callable[[int], None] | None = None):
        self.calls: list[float] = []
        self.cpu = 0.0
        inner = getattr(obj, method)
        last = [time.perf_counter()]

        def timed(*args: Any, **kwargs: Any) -> Any:
            c, t = time.process_time(), time.perf_counter()
            try:
                return inner(*args, **kwargs)
            finally:
                now = time.perf_counter()
                self.calls.append(now - t)
                self.cpu += time.process_time() - c
                if progress and now - last[0] > 30:
                    last[0] = now
                    progress(len(self.calls))

        setattr(obj, method, timed)

    def reset(self) -> None:
        self.calls.clear()
        self.cpu = 0.0

    @property
    def seconds(self) -> float:
        return sum(self.calls)


# ------------------------------------------------------------------ synthetic data

PERIOD_MONTHS = (None, 3, 6, 9, 12)  # instant, then durations ending at the quarter end
COMPARATIVE_LAG = 4  # comparatives: the same periods one year (four filings) earlier
FIRST_YEAR = 1975


class Synthetic:
    """One company's companyfacts, deterministic in (rows, concepts, restated, seed).

    Filing ``q`` (quarterly; every fourth a 10-K) reports, for every concept, the five
    periods of ``PERIOD_MONTHS`` ending at its quarter end plus the same five periods
    one year earlier (the comparatives, which filing ``q - 4`` reported as new), so
    rows per filing = ``concepts x 10`` and each key is reported by about two filings
    (Tesla's file: 1.9 rows per key). A comparative is restated (a different value,
    so a new version) with probability ``restated``. Integer values carry random low
    digits, so the loader's re-rounding rule never fires; one concept in 20 is
    ``shares`` and one in 20 ``USD/shares`` (two-decimal values); two concepts are
    ``dei``, the rest ``us-gaap``.
    """

    ROWS_PER_CONCEPT_FILING = 2 * len(PERIOD_MONTHS)

    def __init__(self, rows: int, concepts: int = 500, restated: float = 0.03, seed: int = 42):
        self.concepts = concepts
        self.filings = max(1, round(rows / (concepts * self.ROWS_PER_CONCEPT_FILING)))
        self.restated = restated
        self.seed = seed
        self.cik = 9000000 + rows // 1000

    @property
    def rows(self) -> int:
        return self.filings * self.concepts * self.ROWS_PER_CONCEPT_FILING

    # -- identity of filings, concepts and periods
    @staticmethod
    def quarter_end(q: int) -> dt.date:
        year, quarter = FIRST_YEAR + q // 4, q % 4
        month = 3 * quarter + 3
        first_of_next = dt.date(year + (month == 12), month % 12 + 1, 1)
        return first_of_next - dt.timedelta(days=1)

    @staticmethod
    def form(q: int) -> str:
        return "10-K" if q % 4 == 3 else "10-Q"

    def filed(self, q: int) -> dt.date:
        return self.quarter_end(q) + dt.timedelta(days=60 if self.form(q) == "10-K" else 40)

    def accession(self, q: int) -> str:
        return f"0000950170-{self.filed(q).year % 100:02d}-{q + 1:06d}"

    @staticmethod
    def taxonomy(c: int) -> str:
        return "dei" if c < 2 else "us-gaap"

    @staticmethod
    def concept(c: int) -> str:
        return f"SyntheticConcept{c:04d}"

    @staticmethod
    def unit(c: int) -> str:
        return {0: "shares", 1: "USD/shares"}.get(c % 20, "USD")

    @staticmethod
    def start(end: dt.date, months: int | None) -> dt.date | None:
        if months is None:
            return None
        n = end.year * 12 + end.month - 1 - (months - 1)
        return dt.date(n // 12, n % 12 + 1, 1)

    # -- values
    def value(self, c: int, pq: int, months: int | None, restated: bool) -> str:
        """The JSON number text of concept ``c`` for period (``pq``, ``months``)."""
        h = _h(self.seed, "v", c, pq, months)
        if self.unit(c) == "USD/shares":
            cents = h % 2000 - 500 + (37 if restated else 0)
            return str(Decimal(cents) / 100)
        base = 10_000_000 + h % 9_000_000_000
        return str(base + (1 + _h(self.seed, "d", c, pq, months) % 99_999 if restated else 0))

    def is_restated(self, c: int, pq: int, months: int | None) -> bool:
        return _h(self.seed, "r", c, pq, months) % 1_000_000 < self.restated * 1_000_000

    # -- rows and the file
    def row_texts(self, c: int) -> Iterator[str]:
        """The JSON text of every row of concept ``c``, filing by filing."""
        for q in range(self.filings):
            end_q, form, filed, accn = self.quarter_end(q), self.form(q), self.filed(q), self.accession(q)
            fy, fp = end_q.year, "FY" if form == "10-K" else f"Q{q % 4 + 1}"
            for lag in (0, COMPARATIVE_LAG):
                pq = q - lag
                end = self.quarter_end(pq)
                for months in PERIOD_MONTHS:
                    start = self.start(end, months)
                    val = self.value(c, pq, months, lag > 0 and self.is_restated(c, pq, months))
                    head = f'{{"start":"{start}",' if start else "{"
                    frame = ""
                    if lag == 0 and months in (None, 3):
                        frame = f',"frame":"CY{end.year}Q{(end.month - 1) // 3 + 1}{"I" if months is None else ""}"'
                    yield (f'{head}"end":"{end}","val":{val},"accn":"{accn}","fy":{fy},'
                           f'"fp":"{fp}","form":"{form}","filed":"{filed}"{frame}}}')

    def write(self, path: Path) -> int:
        """Write the companyfacts JSON to ``path`` one concept at a time; return bytes written."""
        with path.open("w", encoding="utf-8", buffering=1 << 20) as out:
            out.write(f'{{"cik":{self.cik},"entityName":"Synthetic Corp {self.rows}","facts":{{')
            by_taxonomy: dict[str, list[int]] = defaultdict(list)
            for c in range(self.concepts):
                by_taxonomy[self.taxonomy(c)].append(c)
            for t, (taxonomy, concepts) in enumerate(by_taxonomy.items()):
                out.write(("," if t else "") + json.dumps(taxonomy) + ":{")
                for n, c in enumerate(concepts):
                    out.write(("," if n else "") + f'"{self.concept(c)}":{{"label":"Synthetic concept {c}",'
                              f'"description":"A synthetic concept for the loader benchmark.",'
                              f'"units":{{"{self.unit(c)}":[')
                    for i, text in enumerate(self.row_texts(c)):
                        out.write(("," if i else "") + text)
                    out.write("]}}")
                out.write("}")
            out.write("}}")
        return path.stat().st_size


# ------------------------------------------------------------------ raw baseline


def acceptances_of(submissions: Path | None) -> tuple[dict[str, str], bool]:
    """Acceptance times by accession from a submissions file, and its New York clock sign."""
    if submissions is None:
        return {}, False
    recent = json.loads(submissions.read_text())["filings"]["recent"]
    times = {a: t for a, t in zip(recent["accessionNumber"], recent["acceptanceDateTime"],
                                  strict=True) if t}
    return times, av.edgar_clock_is_new_york(times.values())


def raw_batches(companyfacts: Path, submissions: Path | None) -> list[list[dict[str, Any]]]:
    """The file's rows as the raw baseline writes them: one batch per filing, in the
    loader's order (available_by, then accession), with the properties a Fact gets."""
    data = sec.read_json(companyfacts)
    entity = sec.entity_id(data["cik"])
    acceptances, ny_clock = acceptances_of(submissions)
    by_filing: dict[str, list[dict[str, Any]]] = defaultdict(list)
    filed: dict[str, str] = {}
    for taxonomy, concepts in data["facts"].items():
        for concept, body in concepts.items():
            for unit, rows in body["units"].items():
                for row in rows:
                    start = dt.date.fromisoformat(row["start"]) if row.get("start") else None
                    end = dt.date.fromisoformat(row["end"])
                    value_type, value, value_num = encode(Decimal(row["val"]))
                    filed[row["accn"]] = row["filed"]
                    by_filing[row["accn"]].append({
                        "entity": entity, "attribute": f"{taxonomy}:{concept}", "unit": unit,
                        "definition": "", "period": f"{start}..{end}" if start else str(end),
                        "period_start": start, "period_end": end, "value": value,
                        "value_type": value_type, "value_num": value_num, "source": row["accn"],
                    })
    order = []
    for accn, rows in by_filing.items():
        at = av.filing_availability(accn, filed=filed[accn], acceptances=acceptances,
                                    ny_clock=ny_clock).at
        for r in rows:
            r["available_by"] = at
        order.append((at, accn))
    return [by_filing[accn] for _, accn in sorted(order)]


def raw_pass(driver: neo4j.Driver, database: str | None, batches: list[list[dict[str, Any]]],
             tag: str) -> float:
    """Write every batch, one transaction each; return the seconds spent."""
    t = time.perf_counter()
    for rows in batches:
        raw_tx(driver, database, neo4j.WRITE_ACCESS,
               lambda tx, rows=rows: tx.run(RAW_CREATE, rows=rows, bench=tag).consume())
    return time.perf_counter() - t


def raw_cleanup(driver: neo4j.Driver, database: str | None, tag: str) -> float:
    """Delete the scratch nodes (auto-commit, in transactions of 20k); return seconds."""
    t = time.perf_counter()
    with driver.session(database=database) as session:
        session.run(RAW_DELETE, bench=tag).consume()
    return time.perf_counter() - t


# ------------------------------------------------------------------ one case (child process)


def latency_trend(calls: list[float]) -> dict[str, float]:
    """p50 of the first and the last tenth of the record() calls: does a filing cost more
    as the tenant grows? (Synthetic filings are all the same size.)"""
    tenth = max(1, len(calls) // 10)
    return {"first_tenth_p50_ms": pct(calls[:tenth], 50) * 1e3,
            "last_tenth_p50_ms": pct(calls[-tenth:], 50) * 1e3}


def timed_load(mem: Memory, scope: Scope, spec: dict[str, Any], clock: StatementClock,
               record: CallClock, put: CallClock) -> dict[str, Any]:
    """One ``sec.load`` with its report, wall and CPU time, and where the time went."""
    clock.reset()
    record.reset()
    put.reset()
    c, t = time.process_time(), time.perf_counter()
    report = sec.load(mem, scope, spec["companyfacts"], spec.get("submissions"),
                      show_progress=False)
    wall, cpu = time.perf_counter() - t, time.process_time() - c
    stmts = clock.snapshot()
    in_stmts = sum(s["seconds"] for s in stmts.values())
    return {
        "seconds": wall, "client_cpu_s": cpu, "rows_per_s": report.rows / wall,
        "report": report.model_dump(),
        "record": {"calls": len(record.calls), "seconds": record.seconds, "client_cpu_s": record.cpu,
                   "p50_ms": pct(record.calls, 50) * 1e3, "p95_ms": pct(record.calls, 95) * 1e3,
                   "max_ms": max(record.calls, default=0) * 1e3, **latency_trend(record.calls)},
        "put_entity_s": put.seconds,
        "outside_record_s": wall - record.seconds - put.seconds,
        "statements": stmts,
        "in_statements_s": in_stmts,
    }


def profile_statement(driver: neo4j.Driver, database: str | None, name: str,
                      params: dict[str, Any]) -> dict[str, Any]:
    """PROFILE graphmem statement ``name`` with the params of a real call: db hits, and the
    FactKey index seek's output rows against the rows that went in (keys read per read)."""
    query = QUERIES[name]
    try:
        with driver.session(database=database, default_access_mode=neo4j.READ_ACCESS) as session:
            result = session.run("PROFILE " + query, params)
            for _ in result:  # the server profiles only what is streamed
                pass
            summary = result.consume()
    except (Neo4jError, DriverError) as exc:
        return {"error": str(exc)[:300]}
    ops = [{"operator": n.get("operatorType", "?").split("@")[0], "db_hits": n.get("dbHits", 0),
            "rows": n.get("rows", 0), "details": " ".join(str(n.get("args", {}).get("Details", "")).split())[:160]}
           for _, n in plan_operators(summary.profile or {})]
    seeks = [o for o in ops if "FactKey" in o["details"] and "Seek" in o["operator"]]
    inputs = len(next((v for v in params.values() if isinstance(v, list)), []))
    return {"statement": name, "input_rows": inputs, "db_hits": sum(o["db_hits"] for o in ops),
            "factkey_seek": [f"{o['operator']}: {o['details']}" for o in seeks],
            "factkey_seek_rows": sum(o["rows"] for o in seeks),
            "top": sorted(ops, key=lambda o: -o["db_hits"])[:5]}


def periods_per_attribute(path: Path) -> int:
    """The most keys one (entity, attribute) has in the file: what a FactKey lookup by
    (tenant, entity, attribute) has to filter through."""
    data = sec.read_json(path)
    return max(len({(unit, row.get("start"), row["end"]) for unit, rows in body["units"].items()
                    for row in rows})
               for concepts in data["facts"].values() for body in concepts.values())


def warm_up(mem: Memory, driver: neo4j.Driver, database: str | None, tag: str) -> None:
    """Plan graphmem's statements and the raw CREATE once, in a throw-away tenant."""
    sec.load(mem, Scope(tenant=f"{tag}-warmup"), WARMUP, show_progress=False)
    batches = raw_batches(WARMUP, None)
    raw_pass(driver, database, batches[:2], f"{tag}-warmup")
    raw_cleanup(driver, database, f"{tag}-warmup")


def parse_footprint(path: Path) -> dict[str, float]:
    """tracemalloc of ``sec.read_json`` alone: what the parsed document keeps, and the peak."""
    tracemalloc.start()
    t = time.perf_counter()
    data = sec.read_json(path)
    seconds = time.perf_counter() - t
    kept, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del data
    return {"kept_mb": kept / 2**20, "peak_mb": peak / 2**20, "traced_seconds": seconds}


def traced_load(mem: Memory, scope: Scope, spec: dict[str, Any]) -> dict[str, float]:
    """tracemalloc peak of one ``sec.load`` call alone (into a fresh tenant)."""
    tracemalloc.start()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    t = time.perf_counter()
    sec.load(mem, scope, spec["companyfacts"], spec.get("submissions"), show_progress=False)
    seconds = time.perf_counter() - t
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return {"peak_mb": (peak - base) / 2**20, "traced_seconds": seconds}


def run_case(spec: dict[str, Any]) -> dict[str, Any]:
    """Everything measured for one file, in this (child) process."""
    clock = StatementClock()
    mem = Memory.from_env()
    driver, database = mem.db.driver, mem.db.database
    tag = f"bl-{spec['name']}-{uuid.uuid4().hex[:8]}"
    out: dict[str, Any] = {"name": spec["name"], "file": spec["companyfacts"],
                           "file_mb": Path(spec["companyfacts"]).stat().st_size / 2**20,
                           "tenant": tag, "graphmem_imported_from": str(Path(graphmem.__file__).parent),
                           **spec.get("meta", {})}
    try:
        mem.migrate()
        warm_up(mem, driver, database, tag)
        scope = Scope(tenant=tag)
        progress = lambda n: log(f"  {spec['name']}: {n} record() calls so far")  # noqa: E731
        record = CallClock(mem, "record", progress)
        put = CallClock(mem, "put_entity")

        # 1. the timed load, and the process's memory high-water mark around it
        rss_before, maxrss_before = current_rss_mb(), peak_rss_mb()
        log(f"{spec['name']}: loading into tenant {tag} (RSS {rss_before:.0f} MB)")
        first = timed_load(mem, scope, spec, clock, record, put)
        out["load"] = first
        out["memory"] = {"rss_before_mb": rss_before, "maxrss_before_mb": maxrss_before,
                         "maxrss_after_load_mb": peak_rss_mb(),
                         "load_rss_delta_mb": peak_rss_mb() - rss_before}
        rows = first["report"]["rows"]
        last_read = clock.last_params.get("fact.read")
        if last_read:
            out["profile_fact_read"] = profile_statement(driver, database, "fact.read", last_read)
        del last_read
        clock.last_params.clear()
        log(f"  load: {rows} rows in {first['seconds']:.1f}s ({first['rows_per_s']:.0f} rows/s), "
            f"peak RSS {peak_rss_mb():.0f} MB (from {rss_before:.0f})")

        # 2. the raw baseline: same rows, one transaction per filing, after each load
        batches = raw_batches(Path(spec["companyfacts"]), spec.get("submissions")
                              and Path(spec["submissions"]))
        raw_s = [raw_pass(driver, database, batches, tag)]
        log(f"  raw: {rows / raw_s[0]:.0f} rows/s")

        # 3. the second load of the same file (everything unchanged), then raw again
        if spec.get("second_load"):
            second = timed_load(mem, scope, spec, clock, record, put)
            out["second_load"] = second
            log(f"  second load: {second['seconds']:.1f}s ({second['rows_per_s']:.0f} rows/s)")
            raw_s.append(raw_pass(driver, database, batches, tag))
            log(f"  raw again: {rows / raw_s[1]:.0f} rows/s")
        raw_rows = sum(len(b) for b in batches)
        del batches
        out["raw"] = {"rows": raw_rows, "batches": first["record"]["calls"], "passes": len(raw_s),
                      "seconds": raw_s, "rows_per_s": raw_rows * len(raw_s) / sum(raw_s),
                      "cleanup_s": raw_cleanup(driver, database, tag)}
        out["ratio_vs_raw"] = first["rows_per_s"] / out["raw"]["rows_per_s"]

        # 4. memory, measured apart from the timed load
        out["memory"]["parse"] = parse_footprint(Path(spec["companyfacts"]))
        out["max_keys_per_attribute"] = periods_per_attribute(Path(spec["companyfacts"]))
        if spec.get("trace_load"):
            log(f"  traced load (tracemalloc) into {tag}-traced")
            out["memory"]["traced_load"] = traced_load(mem, Scope(tenant=f"{tag}-traced"), spec)
        if spec.get("drop"):
            out["drop_s"] = sum(drop_tenant(driver, database, t)
                                for t in (tag, f"{tag}-traced", f"{tag}-warmup"))
        out["peak_rss_mb"] = peak_rss_mb()
        return out
    finally:
        mem.close()


# ------------------------------------------------------------------ report


def fmt_breakdown(name: str, load: dict[str, Any]) -> list[str]:
    """Where one load's wall time went."""
    total = load["seconds"]
    rec = load["record"]
    lines = [f"  {name}: {total:.1f}s wall, client CPU {load['client_cpu_s']:.1f}s "
             f"({load['client_cpu_s'] / total * 100:.0f}%, of which in record() "
             f"{rec['client_cpu_s']:.1f}s); {rec['calls']} record() transactions "
             f"p50 {rec['p50_ms']:.0f} ms, p95 {rec['p95_ms']:.0f} ms, max {rec['max_ms']:.0f} ms "
             f"(first tenth p50 {rec['first_tenth_p50_ms']:.0f} ms, last tenth "
             f"{rec['last_tenth_p50_ms']:.0f} ms)",
             f"    {'statement':<24} {'calls':>6} {'wall s':>8} {'share':>6} {'ms/call':>8} "
             f"{'server s':>8}"]
    for stmt, s in sorted(load["statements"].items(), key=lambda kv: -kv[1]["seconds"]):
        server = f"{s['server_seconds']:>8.2f}" if not stmt.startswith("(") else f"{'-':>8}"
        lines.append(f"    {stmt:<24} {s['calls']:>6} {s['seconds']:>8.2f} "
                     f"{s['seconds'] / total * 100:>5.1f}% {s['seconds'] / s['calls'] * 1e3:>8.1f} "
                     f"{server}")
    other = rec["seconds"] + load["put_entity_s"] - load["in_statements_s"]
    lines.append(f"    {'(writes, rest)':<24} {'':>6} {other:>8.2f} {other / total * 100:>5.1f}%   "
                 "Python of record()/write_facts between statements, sessions")
    lines.append(f"    {'(load, outside writes)':<24} {'':>6} {load['outside_record_s']:>8.2f} "
                 f"{load['outside_record_s'] / total * 100:>5.1f}%   read_json, validate, plan, "
                 "build FactIns")
    return lines


def fmt_table(doc: dict[str, Any]) -> str:
    cases = doc["cases"]
    header = (f"{'case':<18} {'rows':>8} {'filings':>7} {'MB':>6} | {'load s':>7} {'rows/s':>7} | "
              f"{'raw rows/s':>10} {'ratio':>5} | {'2nd load s':>10} | {'RSS before':>10} "
              f"{'peak':>6} {'delta':>6} | {'trace peak':>10} {'parsed':>7}")
    lines = ["Loader throughput and memory (rows/s end to end; raw = UNWIND CREATE of the same rows, "
             "one tx per filing; MB of memory)", header, "-" * len(header)]
    for c in cases:
        ld, m = c["load"], c["memory"]
        second = f"{c['second_load']['seconds']:>10.1f}" if "second_load" in c else f"{'-':>10}"
        trace = m.get("traced_load", {}).get("peak_mb")
        lines.append(
            f"{c['name']:<18} {ld['report']['rows']:>8} {ld['report']['sources']:>7} "
            f"{c['file_mb']:>6.1f} | {ld['seconds']:>7.1f} {ld['rows_per_s']:>7.0f} | "
            f"{c['raw']['rows_per_s']:>10.0f} {c['ratio_vs_raw']:>5.2f} | {second} | "
            f"{m['rss_before_mb']:>10.0f} {m['maxrss_after_load_mb']:>6.0f} "
            f"{m['load_rss_delta_mb']:>6.0f} | "
            f"{(f'{trace:.0f}' if trace is not None else '-'):>10} {m['parse']['kept_mb']:>7.0f}")
    lines.append("  RSS before/peak/delta: RSS just before the timed load, ru_maxrss after it, and "
                 "the difference; trace peak: tracemalloc peak of a separate load() call alone; "
                 "parsed: tracemalloc size of read_json's result (json.load, Decimal values)")
    for note in doc.get("notes", []):
        lines.append(f"  NOTE: {note}")

    lines.append("")
    lines.append("Load reports:")
    for c in cases:
        for key in ("load", "second_load"):
            if key in c:
                r = c[key]["report"]
                lines.append(f"  {c['name']} {key}: rows {r['rows']}, sources {r['sources']} "
                             f"(new {r['sources_recorded']}), versions_created {r['versions_created']}, "
                             f"evidence_added {r['evidence_added']}, unchanged {r['unchanged']}, "
                             f"rerounded {r['rerounded']}, duplicates {r['duplicates']}, rules {r['rules']}")
        lines.append(f"  {c['name']} raw passes: {', '.join(f'{s:.1f}s' for s in c['raw']['seconds'])} "
                     f"for {c['raw']['rows']} rows each; cleanup {c['raw']['cleanup_s']:.1f}s")

    synth = [c for c in cases if c["name"].startswith("synthetic")]
    if len(synth) > 1:
        a, b = synth[0], synth[-1]
        rows_x = b["load"]["report"]["rows"] / a["load"]["report"]["rows"]
        rss_x = b["memory"]["load_rss_delta_mb"] / max(a["memory"]["load_rss_delta_mb"], 1e-9)
        parse_x = b["memory"]["parse"]["kept_mb"] / a["memory"]["parse"]["kept_mb"]
        lines.append("")
        lines.append(f"Memory vs file size, {a['name']} -> {b['name']}: rows x{rows_x:.1f}, "
                     f"load RSS delta x{rss_x:.1f} ({a['memory']['load_rss_delta_mb']:.0f} -> "
                     f"{b['memory']['load_rss_delta_mb']:.0f} MB), parsed document x{parse_x:.1f} "
                     f"({a['memory']['parse']['kept_mb']:.0f} -> {b['memory']['parse']['kept_mb']:.0f} MB) "
                     f"[{'flat' if rss_x < 1.5 else 'NOT flat: grows with the file'}]")

    lines.append("")
    lines.append("Where the load time goes (wall time of graphmem named statements in the child process):")
    for c in cases:
        lines.extend(fmt_breakdown(f"{c['name']} load", c["load"]))
        if "second_load" in c:
            lines.extend(fmt_breakdown(f"{c['name']} second load", c["second_load"]))
    lines.append("")
    lines.append("PROFILE fact.read with the params of the load's last write-path call (the last "
                 "filing's reads of keys that already had versions):")
    for c in cases:
        prof = c.get("profile_fact_read")
        if not prof:
            continue
        if "error" in prof:
            lines.append(f"  {c['name']}: PROFILE failed: {prof['error']}")
            continue
        per = prof["factkey_seek_rows"] / max(prof["input_rows"], 1)
        lines.append(f"  {c['name']}: {prof['input_rows']} reads, {prof['db_hits']} db hits "
                     f"({prof['db_hits'] / max(prof['input_rows'], 1):.0f} per read); FactKey seek "
                     f"returned {prof['factkey_seek_rows']} keys = {per:.1f} per read (the file has "
                     f"up to {c['max_keys_per_attribute']} keys per entity+attribute); seek: "
                     f"{'; '.join(prof['factkey_seek']) or 'NONE'}")
        for o in prof["top"][:3]:
            lines.append(f"      {o['operator']:<26} hits {o['db_hits']:>9} rows {o['rows']:>7}  "
                         f"{o['details'][:70]}")
    lines.append("")
    for code in {json.dumps(c["code"], sort_keys=True) for c in cases}:
        code = json.loads(code)
        names = [c["name"] for c in cases if c["code"] == code]
        lines.append(f"code ({', '.join(names)}): HEAD {code.get('head')}, sha {code.get('sha')}, "
                     f"{len(code.get('dirty', []))} uncommitted file(s) under graphmem/ loaders/ "
                     f"cypher/ {code.get('dirty', [])}"
                     + (", imported from a copy taken at the start" if code.get("snapshot") else ""))
    return "\n".join(lines)


# ------------------------------------------------------------------ driver (parent process)


def run_child(spec: dict[str, Any], code: dict[str, Any]) -> dict[str, Any]:
    """Run one case in a child process (importing the code snapshot, if any); return its result."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", json.dumps(spec)]
    env = dict(os.environ)
    if code.get("snapshot"):
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [code["snapshot"], env.get("PYTHONPATH")]))
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, check=False, env=env)
    if proc.returncode != 0:
        sys.exit(f"case {spec['name']} failed (exit {proc.returncode})")
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    result["code"] = code if code.get("snapshot") else code_version()
    return result


def synthetic_case(size: int, workdir: Path, args: argparse.Namespace,
                   code: dict[str, Any]) -> dict[str, Any]:
    """Generate the synthetic file of ``size`` rows and load it in a child process."""
    gen = Synthetic(size, concepts=args.concepts, restated=args.restated, seed=args.seed)
    path = workdir / f"companyfacts-synthetic-{gen.rows}.json"
    t = time.perf_counter()
    size_bytes = gen.write(path)
    log(f"synthetic {gen.rows} rows ({gen.filings} filings x {gen.concepts} concepts x "
        f"{gen.ROWS_PER_CONCEPT_FILING}): {size_bytes / 2**20:.0f} MB written to {path} "
        f"in {time.perf_counter() - t:.1f}s")
    spec = {"name": f"synthetic-{gen.rows // 1000}k", "companyfacts": str(path),
            "trace_load": gen.rows <= args.trace_max_rows, "drop": args.drop,
            "meta": {"synthetic": {"rows": gen.rows, "filings": gen.filings,
                                   "concepts": gen.concepts, "restated": gen.restated,
                                   "seed": gen.seed, "write_s": time.perf_counter() - t}}}
    try:
        return run_child(spec, code)
    finally:
        if not args.keep_files:
            path.unlink(missing_ok=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="100000,1000000",
                    help="synthetic row counts, comma-separated, ascending ('' for none)")
    ap.add_argument("--no-tesla", action="store_true", help="skip the Tesla fixture case")
    ap.add_argument("--max-minutes", type=float, default=25.0,
                    help="if a synthetic size's extrapolated load time exceeds this, run "
                         "--fallback-size instead")
    ap.add_argument("--fallback-size", type=int, default=300_000)
    ap.add_argument("--concepts", type=int, default=500)
    ap.add_argument("--restated", type=float, default=0.03, help="share of comparatives restated")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--trace-max-rows", type=int, default=100_000,
                    help="tracemalloc a separate full load only for files up to this many rows")
    ap.add_argument("--workdir", help="where synthetic files go (default: a new temp folder)")
    ap.add_argument("--keep-files", action="store_true", help="keep the synthetic files")
    ap.add_argument("--drop", action="store_true", help="delete the bench tenants afterwards")
    ap.add_argument("--live-code", action="store_true",
                    help="children import the working tree (default: a copy taken at the start)")
    ap.add_argument("--json", metavar="PATH", help="also write the results as JSON to PATH")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if not os.environ.get("GRAPHMEM_NEO4J_URI"):
        sys.exit("set GRAPHMEM_NEO4J_URI to a dedicated server, e.g. bolt://127.0.0.1:7691")

    if args.child is not None:
        print(json.dumps(run_case(json.loads(args.child)), default=str))
        return

    started = time.perf_counter()
    cases: list[dict[str, Any]] = []
    notes: list[str] = []
    workdir = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="bench-loaders-"))
    workdir.mkdir(parents=True, exist_ok=True)
    code = {} if args.live_code else snapshot_code(Path(tempfile.mkdtemp(prefix="bench-loaders-code-")))
    try:
        if not args.no_tesla:
            cases.append(run_child({"name": "tesla", "companyfacts": str(TESLA),
                                    "submissions": str(TESLA_SUBMISSIONS), "second_load": True,
                                    "trace_load": True, "drop": args.drop}, code))
        for size in [int(s) for s in args.sizes.split(",") if s.strip()]:
            measured = [c for c in cases if c["name"].startswith("synthetic")]
            if measured:
                rate = measured[-1]["load"]["rows_per_s"]
                minutes = size / rate / 60
                if minutes > args.max_minutes and args.fallback_size < size:
                    notes.append(f"{size} rows would take ~{minutes:.0f} min to load at "
                                 f"{rate:.0f} rows/s (linear extrapolation from "
                                 f"{measured[-1]['name']}) > {args.max_minutes:.0f} min: "
                                 f"ran {args.fallback_size} rows instead")
                    log(notes[-1])
                    size = args.fallback_size
            cases.append(synthetic_case(size, workdir, args, code))
    finally:
        if not args.workdir and not args.keep_files:
            shutil.rmtree(workdir, ignore_errors=True)
        if code.get("snapshot"):
            shutil.rmtree(code["snapshot"], ignore_errors=True)

    doc = {"graphmem": graphmem.__file__, "neo4j_uri": os.environ["GRAPHMEM_NEO4J_URI"],
           "cpus": os.cpu_count(), "wall_s": time.perf_counter() - started, "notes": notes,
           "cases": cases}
    print(fmt_table(doc))
    if args.json:
        Path(args.json).write_text(json.dumps(doc, indent=2, default=str))
        print(f"\nJSON written to {args.json}")


if __name__ == "__main__":
    main()
