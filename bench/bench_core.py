#!/usr/bin/env python3
"""Benchmark of graphmem's bitemporal core (a benchmark, not a test: it reports, never asserts).

Data: filings-like synthetic facts. ``entities x attributes x quarterly periods`` fact
keys; one source per entity per quarter (a filing, publisher = the entity); about 10%
of the keys are later restated by a later filing of the same publisher (a different
value with a later ``available_by``), so versions ~= 1.1 x keys. Each size is loaded
into a fresh tenant (``graphmem.Scope(tenant=...)``) and, by default, measured in its
own child process so that peak RSS is per size.

Per size it prints:

(a) ``Memory.as_of`` point reads (explicit period and unit, random cutoffs) p50/p95,
    interleaved with a plain "latest version of this key" Cypher lookup run in the
    same loop through the same driver (the baseline);
(b) ``Memory.assert_facts`` throughput (versions/s), chunk by chunk interleaved with a
    raw ``UNWIND $rows AS row CREATE (:BenchRaw {...})`` of the same rows (a scratch
    label, deleted afterwards in batches) - the target's baseline - and with a raw
    ``UNWIND ... CREATE`` of the same rows in graphmem's own graph shape (key node
    linked to its entity, version node, evidence edge to its source; no rules, no
    index updates beyond the engine's own), which tells the engine's cost of the shape
    from the cost of graphmem's rules;
(c) the peak RSS of the Python process (``resource.getrusage``);
(d) a PROFILE of the as-of statement (``fact.read``) for one read: total db hits and
    the operators, and whether the FactKey lookup is a NodeIndexSeek;
plus where the time goes: graphmem's named statements, timed by wrapping
``graphmem.db.Tx.run`` in this process (instrumentation only; graphmem is not changed).

Usage (against a dedicated server, never a shared one)::

    GRAPHMEM_NEO4J_URI=bolt://127.0.0.1:7688 .venv/bin/python bench/bench_core.py \
        --sizes 10000,100000 [--json [PATH]]

Targets it reports against (it does not assert them): as-of p50 within 2x of the plain
lookup and growing no more than 1.5x from the smallest to the largest size;
assert_facts at least half the raw UNWIND rate.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import random
import subprocess
import sys
import time
import uuid
import zlib
from collections import defaultdict
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import neo4j
from common import StatementClock, drop_tenant, log, pct, peak_rss_mb, plan_operators, raw_tx  # noqa: E402 - sibling module of the bench scripts

import graphmem
from graphmem import Authority, Entity, FactIn, Memory, Period, Scope, Source
from graphmem.facts import KeySpec, entity_uid, source_uid
from graphmem.queries import QUERIES
from graphmem.values import digest, encode

ATTRIBUTES = 20
QUARTERS = 20  # five years of quarterly filings
RESTATED_SHARE = 0.10  # of all keys
MAX_RESTATE_LAG = 4  # a restatement comes with one of the next four filings
FIRST_QUARTER = (2015, 1)
CHUNK = 500  # Memory's default chunk_size; also the raw baseline's batch

LATEST_CYPHER = (
    "MATCH (k:FactKey {uid:$uid})<-[:VERSION_OF]-(f:Fact) "
    "RETURN f ORDER BY f.available_by DESC LIMIT 1"
)
RAW_CREATE = (
    "UNWIND $rows AS row CREATE (:BenchRaw {bench: $bench, entity: row.entity, "
    "attribute: row.attribute, unit: row.unit, definition: row.definition, "
    "period: row.period, period_start: row.period_start, period_end: row.period_end, "
    "value: row.value, value_type: row.value_type, source: row.source, "
    "available_by: row.available_by})"
)
# The engine's cost of graphmem's own graph shape, without its rules: per row a key node
# linked to its entity, a version node linked to the key and by an evidence edge to its
# source (entity and source found by their uid indexes, as graphmem does), with the same
# properties; no MERGE, no read rule, no search text, no lock. Both labels carry BenchRaw,
# so RAW_DELETE removes them (and their edges) too.
RAW_SHAPE_CREATE = (
    "UNWIND $rows AS row "
    "MATCH (e:Entity {uid: row.entity_uid}) MATCH (s:Source {uid: row.source_uid}) "
    "CREATE (k:BenchRaw:BenchRawKey {bench: $bench, uid: row.key_uid, entity: row.entity, "
    "attribute: row.attribute, unit: row.unit, definition: row.definition, period: row.period, "
    "period_start: row.period_start, period_end: row.period_end, revision: 1})-[:BENCH_ABOUT]->(e) "
    "CREATE (f:BenchRaw:BenchRawFact {bench: $bench, version_id: row.version_id, value: row.value, "
    "value_type: row.value_type, value_hash: row.value_hash, event_time: row.period_end, "
    "period_start: row.period_start, available_by: row.available_by, recorded_at: datetime(), "
    "revision: 1})-[:BENCH_VERSION_OF]->(k) "
    "CREATE (f)-[:BENCH_EVIDENCED_BY {idem: row.version_id, available_by: row.available_by, "
    "recorded_at: datetime()}]->(s)"
)
RAW_DELETE = (
    "MATCH (n:BenchRaw {bench: $bench}) WITH n LIMIT $batch DETACH DELETE n RETURN count(*) AS n"
)


def code_version() -> dict[str, Any]:
    """Which graphmem ran: HEAD, uncommitted files under graphmem/ and cypher/, a content hash.

    The repository may change between sizes (each size runs in its own process), so every
    size records what it imported.
    """
    import hashlib

    root = Path(graphmem.__file__).resolve().parents[1]

    def git(*args: str) -> str:
        proc = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True,
                              check=False)
        return proc.stdout

    sha = hashlib.sha256()
    for path in sorted([*root.glob("graphmem/*.py"), *root.glob("cypher/*.cypher")]):
        sha.update(path.name.encode() + b"\0" + path.read_bytes())
    dirty = [line[3:] for line in git("status", "--porcelain", "--", "graphmem", "cypher")
             .splitlines()]
    import importlib.util

    return {"head": git("rev-parse", "--short", "HEAD").strip(), "dirty": dirty,
            "sources_sha": sha.hexdigest()[:12], "neo4j": neo4j.__version__,
            "neo4j_rust_ext": importlib.util.find_spec("neo4j._rust") is not None}








# ------------------------------------------------------------------ synthetic filings


def _h(*parts: Any) -> int:
    return zlib.crc32(":".join(map(str, parts)).encode())


class Filings:
    """Deterministic synthetic data: everything is a function of (seed, e, a, q)."""

    def __init__(self, versions: int, seed: int):
        self.seed = seed
        keys = versions / (1 + RESTATED_SHARE)
        self.entities = max(1, round(keys / (ATTRIBUTES * QUARTERS)))
        # Only keys with a later filing can be restated; scale so ~10% of all keys are.
        self.restate_p = RESTATED_SHARE * QUARTERS / (QUARTERS - 1)

    # identity
    @staticmethod
    def entity(e: int) -> str:
        return f"ENT{e:05d}"

    @staticmethod
    def attribute(a: int) -> str:
        return f"attr_{a:02d}"

    @staticmethod
    def unit(a: int) -> str:
        return "shares" if a >= ATTRIBUTES - 2 else ("USD/share" if a >= ATTRIBUTES - 4 else "USD")

    @staticmethod
    def period(q: int) -> Period:
        n = FIRST_QUARTER[1] - 1 + q
        y, first = FIRST_QUARTER[0] + n // 4, n % 4
        start = dt.date(y, 3 * first + 1, 1)
        end_month = 3 * first + 3
        end = (dt.date(y + (end_month == 12), end_month % 12 + 1, 1)) - dt.timedelta(days=1)
        return Period(start=start, end=end)

    def source_id(self, e: int, q: int) -> str:
        return f"filing:{self.entity(e)}:{q}"

    def available_by(self, e: int, q: int) -> dt.datetime:
        """A filing is public 25-55 days after its quarter end, at some hour."""
        end = self.period(q).end
        days = 25 + _h(self.seed, "lag", e, q) % 31
        hour = _h(self.seed, "hour", e, q) % 24
        day = dt.datetime(end.year, end.month, end.day, hour, tzinfo=dt.UTC)
        return day + dt.timedelta(days=days)

    # values and restatements
    def original(self, e: int, a: int, q: int) -> Decimal:
        return Decimal(1_000_000 + _h(self.seed, "v", e, a, q) % 999_000_000)

    def restated_in(self, e: int, a: int, q: int) -> int | None:
        """The later quarter whose filing restates this key, or None."""
        if q >= QUARTERS - 1:
            return None
        if (_h(self.seed, "r", e, a, q) % 1_000_000) / 1_000_000 >= self.restate_p:
            return None
        lag = 1 + _h(self.seed, "lag2", e, a, q) % MAX_RESTATE_LAG
        return min(q + lag, QUARTERS - 1)

    def restated(self, e: int, a: int, q: int) -> Decimal:
        delta = 1 + _h(self.seed, "d", e, a, q) % 50_000
        return self.original(e, a, q) + delta

    # streams
    def entities_in(self) -> Iterator[Entity]:
        for e in range(self.entities):
            yield Entity(id=self.entity(e), name=f"Company {e}", kind="company")

    def sources(self) -> Iterator[Source]:
        for q in range(QUARTERS):
            for e in range(self.entities):
                yield Source(
                    id=self.source_id(e, q),
                    kind="10-K" if q % 4 == 3 else "10-Q",
                    authority=Authority.PRIMARY,
                    publisher=self.entity(e),
                    available_by=self.available_by(e, q),
                    title=f"{self.entity(e)} filing for quarter {q}",
                )

    def facts(self) -> Iterator[FactIn]:
        """Filing by filing, in (roughly) publication order: the quarter's own facts,
        then the earlier keys this filing restates."""
        for q in range(QUARTERS):
            for e in range(self.entities):
                sid = self.source_id(e, q)
                for a in range(ATTRIBUTES):
                    yield FactIn(entity=self.entity(e), attribute=self.attribute(a),
                                 unit=self.unit(a), period=self.period(q),
                                 value=self.original(e, a, q), sources=(sid,))
                for back in range(max(0, q - MAX_RESTATE_LAG), q):
                    for a in range(ATTRIBUTES):
                        if self.restated_in(e, a, back) == q:
                            yield FactIn(entity=self.entity(e), attribute=self.attribute(a),
                                         unit=self.unit(a), period=self.period(back),
                                         value=self.restated(e, a, back), sources=(sid,))

    def expected(self, e: int, a: int, q: int, cutoff: dt.datetime) -> Decimal | None:
        later = self.restated_in(e, a, q)
        if later is not None and self.available_by(e, later) <= cutoff:
            return self.restated(e, a, q)
        if self.available_by(e, q) <= cutoff:
            return self.original(e, a, q)
        return None


def raw_row(f: FactIn) -> dict[str, Any]:
    value_type, value, _ = encode(f.value)
    return {
        "entity": f.entity, "attribute": f.attribute, "unit": f.unit,
        "definition": f.definition, "period": f.period.text,
        "period_start": f.period.start, "period_end": f.period.end,
        "value": value, "value_type": value_type, "source": f.sources[0],
        "available_by": None,  # filled from the source, as graphmem does
    }


def raw_shape_row(scope: Scope, f: FactIn, row: dict[str, Any]) -> dict[str, Any]:
    """``raw_row`` plus the ids RAW_SHAPE_CREATE links by (hashed in the bench, untimed)."""
    key_uid = KeySpec.of(scope, f).uid
    return {**row, "key_uid": key_uid, "entity_uid": entity_uid(scope, f.entity),
            "source_uid": source_uid(scope, f.sources[0]),
            "version_id": "raw_" + digest(key_uid, row["value"], row["source"]),
            "value_hash": digest(row["value_type"], row["value"])}


def chunks(it: Iterator[Any], size: int) -> Iterator[list[Any]]:
    batch: list[Any] = []
    for item in it:
        batch.append(item)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


# ------------------------------------------------------------------ one size


Pick = tuple[int, int, int, dt.datetime]


def make_picks(data: Filings, reads: int, seed: int, versions: int) -> list[Pick]:
    """Random keys (entity, attribute, quarter) and cutoffs; half of them restated keys,
    cutoffs spread from before the first filing to after the restatement."""
    rng = random.Random(seed * 7919 + versions)
    picks: list[tuple[int, int, int, dt.datetime]] = []
    while len(picks) < reads:
        e = rng.randrange(data.entities)
        a, q = rng.randrange(ATTRIBUTES), rng.randrange(QUARTERS)
        later = data.restated_in(e, a, q)
        want_restated = len(picks) % 2 == 0  # half the reads hit restated keys
        if want_restated and later is None:
            continue
        lo = data.available_by(e, q) - dt.timedelta(days=30)
        hi = (data.available_by(e, later) + dt.timedelta(days=180) if later is not None
              else data.available_by(e, q) + dt.timedelta(days=730))
        cutoff = lo + dt.timedelta(seconds=rng.uniform(0, (hi - lo).total_seconds()))
        picks.append((e, a, q, cutoff))
    return picks


def run_size(versions: int, reads: int, seed: int, clock: StatementClock,
             drop: bool) -> dict[str, Any]:
    mem = Memory.from_env()
    driver, database = mem.db.driver, mem.db.database
    try:
        mem.migrate()
        data = Filings(versions, seed)
        tenant = f"bench-{versions}-{uuid.uuid4().hex[:8]}"
        scope = Scope(tenant=tenant)
        bench_tag = tenant
        out: dict[str, Any] = {
            "target_versions": versions, "tenant": tenant, "entities": data.entities,
            "attributes": ATTRIBUTES, "quarters": QUARTERS, "sources": data.entities * QUARTERS,
            "code": code_version(),
        }
        log(f"size {versions}: tenant {tenant}, {data.entities} entities x {ATTRIBUTES} "
            f"attributes x {QUARTERS} quarters")

        # setup: entities and sources (one transaction each: graphmem has no batch API)
        t0 = time.perf_counter()
        for ent in data.entities_in():
            mem.put_entity(scope, ent)
        t1 = time.perf_counter()
        available: dict[str, dt.datetime] = {}
        for n, src in enumerate(data.sources(), 1):
            mem.record_source(scope, src)
            available[src.id] = src.available_by
            if n % 5000 == 0:
                log(f"  sources {n}/{out['sources']}")
        t2 = time.perf_counter()
        out["setup"] = {"put_entity_s": t1 - t0, "record_source_s": t2 - t1,
                        "record_source_per_s": out["sources"] / (t2 - t1)}
        log(f"  setup: {data.entities} entities {t1 - t0:.1f}s, {out['sources']} sources "
            f"{t2 - t1:.1f}s ({out['sources'] / (t2 - t1):.0f}/s)")

        # warm-up (not measured): plan graphmem's write statements and the raw CREATE once,
        # in a throw-away tenant, so the first measured chunk does not pay cold planning.
        warm_scope, warm = Scope(tenant=tenant + "-warmup"), Filings(1, seed + 1)
        mem.put_entity(warm_scope, next(warm.entities_in()))
        warm_avail = {}
        for src in list(warm.sources())[:2]:
            mem.record_source(warm_scope, src)
            warm_avail[src.id] = src.available_by
        warm_facts = [f for f in warm.facts() if f.sources[0] in warm_avail]
        mem.assert_facts(warm_scope, warm_facts)
        warm_rows = [raw_row(f) | {"available_by": warm_avail[f.sources[0]]} for f in warm_facts]
        raw_tx(driver, database, neo4j.WRITE_ACCESS,
               lambda tx: tx.run(RAW_CREATE, rows=warm_rows, bench=bench_tag).consume())

        # (b) load: assert_facts chunk vs raw UNWIND CREATE of the same rows, interleaved
        clock.reset()
        gm_s = raw_s = shape_s = gm_cpu = 0.0
        rows = created = evidence = unchanged = 0
        load_start = time.perf_counter()
        last_log = load_start
        for n, chunk in enumerate(chunks(data.facts(), CHUNK)):
            raws = [raw_row(f) for f in chunk]
            for r in raws:
                r["available_by"] = available[r["source"]]
            shapes = [raw_shape_row(scope, f, r) for f, r in zip(chunk, raws, strict=True)]

            def gm(chunk: list[FactIn] = chunk) -> float:
                nonlocal created, evidence, unchanged, gm_cpu
                c = time.process_time()
                t = time.perf_counter()
                rep = mem.assert_facts(scope, chunk)
                dt_ = time.perf_counter() - t
                gm_cpu += time.process_time() - c
                created += rep.created
                evidence += rep.evidence_added
                unchanged += rep.unchanged
                return dt_

            def raw(raws: list[dict[str, Any]] = raws) -> float:
                t = time.perf_counter()
                raw_tx(driver, database, neo4j.WRITE_ACCESS,
                       lambda tx: tx.run(RAW_CREATE, rows=raws, bench=bench_tag).consume())
                return time.perf_counter() - t

            def shape(shapes: list[dict[str, Any]] = shapes) -> float:
                t = time.perf_counter()
                raw_tx(driver, database, neo4j.WRITE_ACCESS,
                       lambda tx: tx.run(RAW_SHAPE_CREATE, rows=shapes, bench=bench_tag).consume())
                return time.perf_counter() - t

            for which in ("gm", "raw", "shape")[n % 3:] + ("gm", "raw", "shape")[:n % 3]:
                if which == "gm":
                    gm_s += gm()
                elif which == "raw":
                    raw_s += raw()
                else:
                    shape_s += shape()
            rows += len(chunk)
            now = time.perf_counter()
            if now - last_log > 30:
                last_log = now
                log(f"  load {rows} rows, graphmem {created / gm_s:.0f} versions/s, "
                    f"raw {rows / raw_s:.0f} rows/s, elapsed {now - load_start:.0f}s")
        load_wall = time.perf_counter() - load_start
        load_stmts = clock.snapshot()
        out["load"] = {
            "rows": rows, "versions_created": created, "evidence_added": evidence,
            "unchanged": unchanged, "chunks": (rows + CHUNK - 1) // CHUNK,
            "assert_facts_s": gm_s, "assert_facts_client_cpu_s": gm_cpu,
            "raw_unwind_s": raw_s, "wall_s": load_wall,
            "assert_facts_versions_per_s": created / gm_s,
            "assert_facts_rows_per_s": rows / gm_s,
            "raw_unwind_rows_per_s": rows / raw_s,
            "ratio_vs_raw": (rows / gm_s) / (rows / raw_s),
            "raw_shape_s": shape_s, "raw_shape_rows_per_s": rows / shape_s,
            "ratio_vs_raw_shape": shape_s / gm_s,
            "statements": load_stmts,
        }
        log(f"  load done: {rows} rows -> {created} versions in {gm_s:.1f}s "
            f"({created / gm_s:.0f}/s); raw {raw_s:.1f}s ({rows / raw_s:.0f}/s); "
            f"raw in graphmem's shape {shape_s:.1f}s ({rows / shape_s:.0f}/s)")

        # scratch label away, in batches
        t = time.perf_counter()
        deleted = 0
        while True:
            n_del = raw_tx(driver, database, neo4j.WRITE_ACCESS, lambda tx: tx.run(
                RAW_DELETE, bench=bench_tag, batch=20_000).single()["n"])
            deleted += n_del
            if n_del == 0:
                break
        out["load"]["raw_cleanup_s"] = time.perf_counter() - t
        log(f"  deleted {deleted} BenchRaw nodes in {time.perf_counter() - t:.1f}s")

        # (a) reads: as_of vs plain latest-version lookup, interleaved
        picks = make_picks(data, reads, seed, versions)

        def as_of(p: tuple[int, int, int, dt.datetime]) -> graphmem.Answer:
            e, a, q, cutoff = p
            return mem.as_of(scope, entity=data.entity(e), attribute=data.attribute(a),
                             period=data.period(q), unit=data.unit(a), cutoff=cutoff)

        def uid_of(p: tuple[int, int, int, dt.datetime]) -> str:
            e, a, q, _ = p
            return KeySpec(scope, data.entity(e), data.attribute(a), data.unit(a), "",
                           data.period(q)).uid

        def latest(uid: str) -> Any:
            return raw_tx(driver, database, neo4j.READ_ACCESS,
                          lambda tx: tx.run(LATEST_CYPHER, uid=uid).single())

        for p in picks[:40]:  # warm up plans, caches and connections (not measured)
            as_of(p)
            latest(uid_of(p))
        clock.reset()
        t_asof: list[float] = []
        t_latest: list[float] = []
        statuses: dict[str, int] = defaultdict(int)
        correct = 0
        asof_cpu = 0.0
        for n, p in enumerate(picks):
            uid = uid_of(p)
            order = (0, 1) if n % 2 == 0 else (1, 0)
            for which in order:
                if which == 0:
                    c = time.process_time()
                    t = time.perf_counter()
                    ans = as_of(p)
                    t_asof.append(time.perf_counter() - t)
                    asof_cpu += time.process_time() - c
                else:
                    t = time.perf_counter()
                    rec = latest(uid)
                    t_latest.append(time.perf_counter() - t)
                    assert rec is not None, f"key {uid} has no version"
            statuses[ans.status] += 1
            correct += ans.value == data.expected(p[0], p[1], p[2], p[3])
        read_stmts = clock.snapshot()
        fact_read_s = read_stmts.get("fact.read", {}).get("seconds", 0.0)
        out["reads"] = {
            "n": len(picks),
            "as_of_p50_ms": pct(t_asof, 50) * 1e3, "as_of_p95_ms": pct(t_asof, 95) * 1e3,
            "as_of_mean_ms": sum(t_asof) / len(t_asof) * 1e3,
            "latest_p50_ms": pct(t_latest, 50) * 1e3, "latest_p95_ms": pct(t_latest, 95) * 1e3,
            "latest_mean_ms": sum(t_latest) / len(t_latest) * 1e3,
            "p50_ratio": pct(t_asof, 50) / pct(t_latest, 50),
            "statuses": dict(statuses), "matched_expected": correct,
            "fact_read_share_of_as_of": fact_read_s / sum(t_asof),
            "fact_read_server_share_of_as_of":
                read_stmts.get("fact.read", {}).get("server_seconds", 0.0) / sum(t_asof),
            "as_of_client_cpu_share": asof_cpu / sum(t_asof),
            "statements": read_stmts,
        }
        rd = out["reads"]
        log(f"  reads: as_of p50 {rd['as_of_p50_ms']:.2f}ms p95 {rd['as_of_p95_ms']:.2f}ms; "
            f"latest p50 {rd['latest_p50_ms']:.2f}ms p95 {rd['latest_p95_ms']:.2f}ms; "
            f"{correct}/{len(picks)} as expected")

        # (d) PROFILE of fact.read for one read (a restated key, cutoff after the restatement)
        e, a, q, _ = next(p for p in picks if data.restated_in(p[0], p[1], p[2]) is not None)
        later = data.restated_in(e, a, q)
        cutoff = data.available_by(e, later) + dt.timedelta(days=1)
        params = {
            "reads": [{"i": 0, "entity": data.entity(e), "attribute": data.attribute(a),
                       "unit": data.unit(a), "definition": None, "period": data.period(q).text,
                       "valid_from": None, "valid_to": None, "cutoff": 0, "known_at": None,
                       "idem": None}],
            "times": [cutoff], "brief": False, "min_rank": 0, "kinds": None, "tenant": scope.tenant, "scope": scope.id,
        }
        # as the write path reads: each key by its uid, at its own cutoff
        batch = [{"i": n, "uid": uid_of(p), "cutoff": n, "known_at": None, "idem": "bench"}
                 for n, p in enumerate(picks[:CHUNK])]
        batch_times = [p[3] for p in picks[:CHUNK]]
        out["profile"] = {
            "fact.read": profile(driver, database, QUERIES["fact.read"], params),
            "latest_lookup": profile(driver, database, LATEST_CYPHER,
                                     {"uid": uid_of((e, a, q, cutoff))}),
            f"fact.read x{len(batch)} (a write-path batch)": profile(
                driver, database, QUERIES["fact.read"],
                {**params, "reads": batch, "times": batch_times, "brief": True}),
        }
        if drop:
            out["drop_s"] = drop_tenant(driver, database, tenant)
        out["peak_rss_mb"] = peak_rss_mb()
        return out
    finally:
        mem.close()


def reread(specs: list[tuple[str, int]], reads: int, seed: int) -> list[dict[str, Any]]:
    """Reads only, against tenants an earlier run loaded (``tenant:size``): all sizes in one
    process with the same code, interleaved read by read, so machine load and code changes
    between the loading runs do not bias the comparison across sizes."""
    mem = Memory.from_env()
    driver, database = mem.db.driver, mem.db.database
    try:
        cases = []
        for tenant, versions in specs:
            data, scope = Filings(versions, seed), Scope(tenant=tenant)
            cases.append({"tenant": tenant, "versions": versions, "data": data, "scope": scope,
                          "picks": make_picks(data, reads, seed, versions),
                          "asof": [], "latest": [], "correct": 0})

        def as_of(c: dict[str, Any], p: Pick) -> graphmem.Answer:
            d = c["data"]
            return mem.as_of(c["scope"], entity=d.entity(p[0]), attribute=d.attribute(p[1]),
                             period=d.period(p[2]), unit=d.unit(p[1]), cutoff=p[3])

        def latest(c: dict[str, Any], p: Pick) -> Any:
            d = c["data"]
            uid = KeySpec(c["scope"], d.entity(p[0]), d.attribute(p[1]), d.unit(p[1]), "",
                          d.period(p[2])).uid
            return raw_tx(driver, database, neo4j.READ_ACCESS,
                          lambda tx: tx.run(LATEST_CYPHER, uid=uid).single())

        for c in cases:  # warm-up, not measured
            for p in c["picks"][:40]:
                as_of(c, p)
                latest(c, p)
        for n in range(reads):
            for k in range(len(cases)):
                c = cases[(n + k) % len(cases)]  # rotate which size goes first
                p = c["picks"][n]
                for which in ((0, 1) if (n + k) % 2 == 0 else (1, 0)):
                    t = time.perf_counter()
                    if which == 0:
                        ans = as_of(c, p)
                        c["asof"].append(time.perf_counter() - t)
                    else:
                        if latest(c, p) is None:
                            raise SystemExit(f"tenant {c['tenant']}: no version for a key")
                        c["latest"].append(time.perf_counter() - t)
                c["correct"] += ans.value == c["data"].expected(*p)
        out = []
        for c in cases:
            d, (e, a, q, _) = c["data"], c["picks"][0]
            later = d.restated_in(e, a, q)
            cutoff = d.available_by(e, later if later is not None else q) + dt.timedelta(days=1)
            read = {"i": 0, "entity": d.entity(e), "attribute": d.attribute(a), "unit": d.unit(a),
                    "definition": None, "period": d.period(q).text, "valid_from": None,
                    "valid_to": None, "cutoff": 0, "known_at": None, "idem": None}
            prof = profile(driver, database, QUERIES["fact.read"],
                           {"reads": [read], "times": [cutoff], "brief": False, "min_rank": 0, "kinds": None,
                            "tenant": c["scope"].tenant, "scope": c["scope"].id})
            out.append({
                "tenant": c["tenant"], "versions": c["versions"], "n": reads,
                "as_of_p50_ms": pct(c["asof"], 50) * 1e3, "as_of_p95_ms": pct(c["asof"], 95) * 1e3,
                "latest_p50_ms": pct(c["latest"], 50) * 1e3,
                "latest_p95_ms": pct(c["latest"], 95) * 1e3,
                "p50_ratio": pct(c["asof"], 50) / pct(c["latest"], 50),
                "matched_expected": c["correct"], "fact_read_db_hits": prof["db_hits"],
                "factkey_index_seek": prof["factkey_index_seek"],
            })
        return out
    finally:
        mem.close()


def fmt_reread(rows: list[dict[str, Any]], code: dict[str, Any]) -> str:
    lines = [f"Reads only, all sizes in one process, interleaved (code: HEAD {code['head']}, "
             f"sha {code['sources_sha']}, {len(code['dirty'])} uncommitted file(s), "
             f"rust-ext {code['neo4j_rust_ext']})",
             f"{'tenant':<26} {'versions':>9} | {'as_of p50':>9} {'p95':>7} | {'latest p50':>10} "
             f"{'p95':>7} | {'p50 x':>5} | {'dbHits':>6} | expected"]
    for r in rows:
        lines.append(f"{r['tenant']:<26} {r['versions']:>9} | {r['as_of_p50_ms']:>9.2f} "
                     f"{r['as_of_p95_ms']:>7.2f} | {r['latest_p50_ms']:>10.2f} "
                     f"{r['latest_p95_ms']:>7.2f} | {r['p50_ratio']:>5.2f} | "
                     f"{r['fact_read_db_hits']:>6} | {r['matched_expected']}/{r['n']}")
    if len(rows) > 1:
        g = rows[-1]["as_of_p50_ms"] / rows[0]["as_of_p50_ms"]
        lines.append(f"as_of p50 growth {rows[0]['versions']} -> {rows[-1]['versions']}: {g:.2f}x "
                     f"[{'ok' if g <= 1.5 else 'MISS'} <= 1.5x]")
    return "\n".join(lines)


def profile(driver: neo4j.Driver, database: str | None, query: str,
            params: dict[str, Any]) -> dict[str, Any]:
    with driver.session(database=database, default_access_mode=neo4j.READ_ACCESS) as s:
        s.run(query, params).consume()  # plan cache warm
        summary = s.run("PROFILE " + query, params).consume()
    plan = summary.profile or {}
    ops = []
    for depth, node in plan_operators(plan):
        args = node.get("args", {})
        ops.append({
            "depth": depth,
            "operator": node.get("operatorType", "?").split("@")[0],
            "db_hits": node.get("dbHits", 0),
            "rows": node.get("rows", 0),
            "details": str(args.get("Details", ""))[:160],
        })
    factkey_seek = [o for o in ops if o["operator"] in ("NodeIndexSeek", "NodeUniqueIndexSeek",
                                                          "NodeIndexSeekByRange")
                    and "FactKey" in o["details"]]
    return {
        "runtime": plan.get("args", {}).get("runtime"),
        "db_hits": sum(o["db_hits"] for o in ops),
        "operators": ops,
        "factkey_index_seek": [f"{o['operator']}: {o['details']}" for o in factkey_seek],
        "factkey_label_scan": any(o["operator"] in ("NodeByLabelScan", "AllNodesScan")
                                  for o in ops),
    }


# ------------------------------------------------------------------ report


def fmt_table(results: list[dict[str, Any]]) -> str:
    lines = []
    header = (f"{'versions':>9} {'keys':>8} | {'as_of p50':>9} {'p95':>7} | {'latest p50':>10} "
              f"{'p95':>7} | {'p50 x':>5} | {'assert v/s':>10} {'raw rows/s':>10} {'ratio':>5} | "
              f"{'load s':>7} {'setup s':>7} | {'RSS MB':>7} | {'dbHits':>6}")
    lines.append("(a) reads in ms, (b) throughput, (c) peak RSS of the Python process, "
                 "(d) PROFILE db hits of one fact.read")
    lines.append(header)
    lines.append("-" * len(header))
    for r in results:
        rd, ld = r["reads"], r["load"]
        keys = r["entities"] * ATTRIBUTES * QUARTERS
        setup = r["setup"]["put_entity_s"] + r["setup"]["record_source_s"]
        lines.append(
            f"{ld['versions_created']:>9} {keys:>8} | {rd['as_of_p50_ms']:>9.2f} "
            f"{rd['as_of_p95_ms']:>7.2f} | "
            f"{rd['latest_p50_ms']:>10.2f} {rd['latest_p95_ms']:>7.2f} | "
            f"{rd['p50_ratio']:>5.2f} | {ld['assert_facts_versions_per_s']:>10.0f} "
            f"{ld['raw_unwind_rows_per_s']:>10.0f} {ld['ratio_vs_raw']:>5.2f} | "
            f"{ld['assert_facts_s']:>7.1f} {setup:>7.1f} | {r['peak_rss_mb']:>7.0f} | "
            f"{r['profile']['fact.read']['db_hits']:>6}")
    lines.append("")
    lines.append("Targets (reported, not asserted):")
    for r in results:
        rd, ld = r["reads"], r["load"]
        lines.append(
            f"  {ld['versions_created']:>9} versions: "
            f"as_of p50 / latest p50 = {rd['p50_ratio']:.2f}x "
            f"[{'ok' if rd['p50_ratio'] <= 2 else 'MISS'} <= 2x]; assert_facts / raw = "
            f"{ld['ratio_vs_raw']:.2f} [{'ok' if ld['ratio_vs_raw'] >= 0.5 else 'MISS'} >= 0.5] "
            f"(raw in graphmem's shape {ld['raw_shape_rows_per_s']:.0f} rows/s: "
            f"assert_facts = {ld['ratio_vs_raw_shape']:.2f} of it); "
            f"as_of matched expected {rd['matched_expected']}/{rd['n']}, statuses {rd['statuses']}")
    if len(results) > 1:
        g = results[-1]["reads"]["as_of_p50_ms"] / results[0]["reads"]["as_of_p50_ms"]
        lines.append(
            f"  as_of p50 growth {results[0]['load']['versions_created']} -> "
            f"{results[-1]['load']['versions_created']} versions: {g:.2f}x "
            f"[{'ok' if g <= 1.5 else 'MISS'} <= 1.5x"
            + ("]" if results[-1]["target_versions"] >= 1_000_000
               else ", the target is stated for 10k -> 1M]"))
    lines.append("")
    lines.append("  tenants (for --reuse): " + ",".join(
        f"{r['tenant']}:{r['target_versions']}" for r in results))
    for r in results:
        c = r.get("code", {})
        lines.append(f"  code for {r['load']['versions_created']} versions: HEAD {c.get('head')}, "
                     f"graphmem+cypher sha {c.get('sources_sha')}, neo4j {c.get('neo4j')} "
                     f"rust-ext {c.get('neo4j_rust_ext')}, "
                     f"{len(c.get('dirty', []))} uncommitted file(s) {c.get('dirty', [])}")
    for r in results:
        ld, rd = r["load"], r["reads"]
        lines.append("")
        lines.append(f"Where the time goes, {ld['versions_created']} versions "
                     f"(wall time of graphmem named statements, in this process):")
        total = ld["assert_facts_s"]
        lines.append(f"  assert_facts {total:.1f}s over {ld['chunks']} chunks "
                     f"({total / ld['chunks'] * 1e3:.0f} ms/chunk of {CHUNK}):")
        stm = ld["statements"]
        lines.append(f"    {'statement':<22} {'calls':>7} {'wall s':>8} {'share':>6} "
                     f"{'ms/call':>8} {'server s':>8} {'max 1st-row s':>13}")
        for name, s in sorted(stm.items(), key=lambda kv: -kv[1]["seconds"]):
            lines.append(f"    {name:<22} {s['calls']:>7} {s['seconds']:>8.1f} "
                         f"{s['seconds'] / total * 100:>5.1f}% "
                         f"{s['seconds'] / s['calls'] * 1e3:>8.1f} "
                         f"{s['server_seconds']:>8.1f} {s['max_first_row_s']:>13.2f}")
        other = total - sum(s["seconds"] for s in stm.values())
        lines.append(f"    {'(outside statements)':<22} {'':>7} {other:>8.1f} "
                     f"{other / total * 100:>5.1f}%   (session, begin, Python between statements)")
        lines.append(f"    client CPU (graphmem + driver Python) during assert_facts: "
                     f"{ld['assert_facts_client_cpu_s']:.1f}s = "
                     f"{ld['assert_facts_client_cpu_s'] / total * 100:.0f}% of its wall time")
        lines.append(f"  as_of: fact.read is {rd['fact_read_share_of_as_of'] * 100:.0f}% of as_of "
                     f"wall time (server-side {rd['fact_read_server_share_of_as_of'] * 100:.0f}%); "
                     f"client CPU {rd['as_of_client_cpu_share'] * 100:.0f}%")
        lines.append(f"  setup: put_entity {r['setup']['put_entity_s']:.1f}s, record_source "
                     f"{r['setup']['record_source_s']:.1f}s "
                     f"({r['setup']['record_source_per_s']:.0f} sources/s, one transaction each)")
    for r in results[-1:]:
        for name, prof in r["profile"].items():
            lines.append("")
            lines.append(f"PROFILE {name} ({r['load']['versions_created']} versions): "
                         f"{prof['db_hits']} db hits, runtime {prof['runtime']}; "
                         f"FactKey index seek: {prof['factkey_index_seek'] or 'NONE'}"
                         + ("; LABEL/ALL-NODES SCAN present" if prof["factkey_label_scan"] else ""))
            if "batch" in name:  # the operators are those above; show where the hits are
                top = sorted(prof["operators"], key=lambda o: -o["db_hits"])[:6]
                for o in top:
                    lines.append(f"  {o['operator']:<16} hits {o['db_hits']:>7} "
                                 f"rows {o['rows']:>6}  {o['details'][:80]}")
                continue
            for o in prof["operators"]:
                lines.append(f"  {'  ' * o['depth']}{o['operator']:<28} hits {o['db_hits']:>5} "
                             f"rows {o['rows']:>4}  {o['details'][:90]}")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="10000,100000",
                    help="comma-separated target version counts (e.g. 10000,100000,1000000)")
    ap.add_argument("--reads", type=int, default=500, help="as_of reads per size")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--json", nargs="?", const="-", default=None, metavar="PATH",
                    help="write results as JSON to PATH (or to stdout instead of the table)")
    ap.add_argument("--in-process", action="store_true",
                    help="run every size in this process (peak RSS is then cumulative)")
    ap.add_argument("--drop", action="store_true", help="delete each bench tenant afterwards")
    ap.add_argument("--reuse", metavar="TENANT:SIZE,...",
                    help="reads only, against tenants loaded by an earlier run (see its output)")
    ap.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if not os.environ.get("GRAPHMEM_NEO4J_URI"):
        sys.exit("set GRAPHMEM_NEO4J_URI to a dedicated server, e.g. bolt://127.0.0.1:7688")

    if args.child is not None:
        print(json.dumps(run_size(args.child, args.reads, args.seed, StatementClock(), args.drop),
                         default=str))
        return

    if args.reuse:
        specs = [(t, int(n)) for t, n in (x.rsplit(":", 1) for x in args.reuse.split(","))]
        rows, code = reread(specs, args.reads, args.seed), code_version()
        if args.json == "-":
            print(json.dumps({"reuse": rows, "code": code}, indent=2, default=str))
        else:
            print(fmt_reread(rows, code))
            if args.json:
                Path(args.json).write_text(json.dumps({"reuse": rows, "code": code}, indent=2,
                                                      default=str))
        return

    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    results = []
    for size in sizes:
        if args.in_process:
            results.append(run_size(size, args.reads, args.seed, StatementClock(), args.drop))
            continue
        cmd = [sys.executable, str(Path(__file__).resolve()), "--child", str(size),
               "--reads", str(args.reads), "--seed", str(args.seed)]
        cmd += ["--drop"] if args.drop else []
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, check=False)
        if proc.returncode != 0:
            sys.exit(f"size {size} failed (exit {proc.returncode})")
        results.append(json.loads(proc.stdout.strip().splitlines()[-1]))

    doc = {"graphmem": graphmem.__file__, "neo4j_uri": os.environ["GRAPHMEM_NEO4J_URI"],
           "cpus": os.cpu_count(), "chunk": CHUNK, "results": results}
    if args.json == "-":
        print(json.dumps(doc, indent=2, default=str))
        return
    print(fmt_table(results))
    if args.json:
        Path(args.json).write_text(json.dumps(doc, indent=2, default=str))
        print(f"\nJSON written to {args.json}")


if __name__ == "__main__":
    main()
