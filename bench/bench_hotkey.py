#!/usr/bin/env python3
"""Benchmark: one fact key with a long history (a benchmark, not a test: it reports, never asserts).

Agent memory has keys that are corrected for years (a preference, a status, a counter):
this measures ``as_of``, ``history`` and concurrent writes on such a key, by its number
of versions, beside a plain "latest version of this key" Cypher lookup measured in the
same loop (the baseline).

Two histories per size, written through graphmem (``Memory.record``: each chunk of
assertions with its sources in one transaction; inside a chunk each assertion sees the
earlier ones), one assertion a day, each with its own source:

- ``daily``: one publisher (primary) corrects the value every day; every 97th day's
  version is invalidated; the source of the middle day is retracted.
- ``mixed``: the same publisher, with two other primary publishers speaking weekly and
  every eleventh day (half of pub-b's reports repeat the current value: more evidence
  on one version), an extraction (inference) that echoes the current value or says
  another one, the same invalidations and retraction, and a user_correction resolution
  of the conflict of the moment at 60% of the days.

Per size and history it prints, interleaved read by read across sizes (this machine is
noisy), median and p95 of:

(a) ``as_of`` at the latest cutoff (the target: p50 at 10,000 versions within 3x of
    10 versions), at a random past cutoff, and at a past known_at (the middle of the
    writes: explain then classifies every version, see fact.read);
(b) the baseline lookup;
(c) ``history`` (every version with its evidence and lifecycle), and its time per
    version (linear: flat);
(d) the db hits of one PROFILEd ``fact.read`` at the latest cutoff.

Then (e) 8 threads writing to the ``daily`` key of the largest size, interleaved round
by round with 8 threads writing to fresh keys of the same tenant (each write a new
key): writes/s and per-write median and p95 (the target: the hot key at least half the
rate of fresh keys). Load average at start and end.

Usage (against a dedicated server, never a shared one)::

    GRAPHMEM_NEO4J_URI=bolt://127.0.0.1:7701 .venv/bin/python bench/bench_hotkey.py \\
        --sizes 10,100,1000,10000 [--reads 100] [--writes 200] [--json PATH]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import random
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import neo4j
from common import log, pct, plan_operators, raw_tx  # noqa: E402 - sibling module of the bench scripts

from graphmem import Authority, Entity, FactIn, Memory, Period, Scope, Source
from graphmem.facts import KeySpec
from graphmem.queries import QUERIES

BASE = dt.datetime(1990, 1, 1, 18, tzinfo=dt.UTC)  # day 0; 10,000 days end in 2017
FAR = dt.datetime(2100, 1, 1, tzinfo=dt.UTC)
PERIOD = Period(end=dt.date(2024, 12, 31))
ENTITY = "agent"
CHUNK = 250
LATEST_CYPHER = (
    "MATCH (k:FactKey {uid:$uid})<-[:VERSION_OF]-(f:Fact) "
    "RETURN f ORDER BY f.available_by DESC LIMIT 1"
)


@dataclass
class Key:
    """One benchmarked key: its size, history shape, and what the build left behind."""

    size: int
    shape: str
    attribute: str
    mid_known_at: dt.datetime | None = None
    times: dict[str, list[float]] = field(default_factory=dict)

    def fact(self, day: int, publisher: str, value: int) -> tuple[Source, FactIn]:
        authority = Authority.INFERENCE if publisher == "pub-x" else Authority.PRIMARY
        source = Source(id=f"{self.attribute}:{day}:{publisher}", kind="report",
                        authority=authority, publisher=publisher,
                        available_by=BASE + dt.timedelta(days=day))
        return source, FactIn(entity=ENTITY, attribute=self.attribute, value=Decimal(value),
                              period=PERIOD, sources=(source.id,))


def history(key: Key) -> Iterator[tuple[str, Any]]:
    """The key's operations, day by day: ('fact', (source, fact)), ('invalidate', day),
    ('retract', source id) or ('resolve', day)."""
    current = 1000
    for day in range(key.size):
        pub, value = "pub-a", 1000 + day
        if key.shape == "mixed":
            if day % 7 == 3:
                pub, value = "pub-b", current if day % 14 == 3 else 5000 + day
            elif day % 11 == 5:
                pub, value = "pub-c", 9000 + day
            elif day % 30 == 10:
                pub, value = "pub-x", current
            elif day % 30 == 20:
                pub, value = "pub-x", 7000 + day
        if pub == "pub-a":
            current = value
        yield "fact", key.fact(day, pub, value)
        if day % 97 == 50:
            yield "invalidate", day
        if day == key.size // 2:
            yield "retract", key.fact(day, pub, value)[0].id
        if key.shape == "mixed" and day == key.size * 6 // 10:
            yield "resolve", current


def build(mem: Memory, scope: Scope, key: Key) -> None:
    """Write the key's history through graphmem."""
    sources: list[Source] = []
    facts: list[FactIn] = []
    last: dict[int, str] = {}  # day -> the version its assertion landed on

    def flush() -> None:
        if facts:
            report = mem.record(scope, sources=sources, items=facts)
            for f, vid in zip(facts, report.version_ids, strict=True):
                last[int(f.sources[0].split(":")[1])] = vid
            sources.clear()
            facts.clear()

    ops = list(history(key))
    for n, (op, arg) in enumerate(ops):
        if op == "fact":
            sources.append(arg[0])
            facts.append(arg[1])
            if len(facts) >= CHUNK:
                flush()
            continue
        flush()
        if op == "invalidate":
            mem.invalidate(scope, last[arg], "a wrong figure")
        elif op == "retract":
            mem.retract_source(scope, arg, reason="withdrawn")
        else:
            answer = mem.as_of(scope, entity=ENTITY, attribute=key.attribute, period=PERIOD, cutoff=FAR)
            shown = [answer.version] if answer.version else list(answer.candidates)
            mem.resolve(scope, versions=[v.version_id for v in shown], value=Decimal(arg),
                        reason="the analyst's figure", by="analyst")
        if key.mid_known_at is None and n >= len(ops) // 2:
            key.mid_known_at = mem.server_now()
    flush()


def uid(scope: Scope, key: Key) -> str:
    return KeySpec(scope, ENTITY, key.attribute, "", "", PERIOD).uid


def measure_reads(mem: Memory, scope: Scope, keys: list[Key], reads: int, seed: int) -> None:
    """(a), (b): every kind of read on every key, interleaved, in a shuffled order per round."""
    driver, database = mem.db.driver, mem.db.database
    rng = random.Random(seed)

    def latest(key: Key) -> None:
        raw_tx(driver, database, neo4j.READ_ACCESS,
               lambda tx: tx.run(LATEST_CYPHER, uid=uid(scope, key)).single())

    def as_of(key: Key, cutoff: dt.datetime, known_at: dt.datetime | None = None) -> None:
        mem.as_of(scope, entity=ENTITY, attribute=key.attribute, period=PERIOD, cutoff=cutoff,
                  known_at=known_at)

    kinds = {
        "as_of latest": lambda k: as_of(k, FAR),
        "as_of past cutoff": lambda k: as_of(k, BASE + dt.timedelta(days=rng.randrange(k.size))),
        "as_of past known_at": lambda k: as_of(k, FAR, k.mid_known_at),
        "baseline lookup": latest,
    }
    for key in keys:  # warm-up: plans, caches, connections (not measured)
        for run in kinds.values():
            for _ in range(3):
                run(key)
    for n in range(reads):
        work = [(key, name) for key in keys for name in kinds]
        rng.shuffle(work)
        for key, name in work:
            t = time.perf_counter()
            kinds[name](key)
            key.times.setdefault(name, []).append(time.perf_counter() - t)
        if n % 20 == 19:
            log(f"  reads: round {n + 1}/{reads}")


def measure_history(mem: Memory, scope: Scope, keys: list[Key], reps: int) -> None:
    """(c): history of each key, interleaved."""
    for key in keys:
        mem.history(scope, entity=ENTITY, attribute=key.attribute, period=PERIOD)  # warm-up
    for _ in range(reps):
        for key in keys:
            t = time.perf_counter()
            versions = mem.history(scope, entity=ENTITY, attribute=key.attribute, period=PERIOD)
            key.times.setdefault("history", []).append(time.perf_counter() - t)
            key.times["versions"] = [len(versions)]


def profile_read(mem: Memory, scope: Scope, key: Key) -> int:
    """(d): db hits of fact.read at the latest cutoff."""
    params = {"reads": [{"i": 0, "uid": uid(scope, key), "cutoff": 0, "known_at": None, "idem": None}],
              "times": [FAR], "brief": False, "min_rank": 0, "kinds": None,
              "tenant": scope.tenant, "scope": scope.id}
    with mem.db.driver.session(database=mem.db.database) as session:
        plan = session.run("PROFILE " + QUERIES["fact.read"], params).consume().profile
    return sum(op.get("dbHits", 0) for _, op in plan_operators(plan))


def measure_writes(mem: Memory, scope: Scope, hot: Key, threads: int, writes: int,
                   rounds: int) -> dict[str, dict[str, float]]:
    """(e): ``threads`` writers to the hot key, then as many to fresh keys, round by round."""
    per = max(1, writes // rounds)
    day0 = hot.size + 10
    plan: dict[str, list[list[tuple[Source, FactIn]]]] = {"hot key": [], "fresh keys": []}
    for r in range(rounds):
        for name in plan:
            batch = []
            for t in range(threads):
                for j in range(per):
                    n = (r * threads + t) * per + j
                    if name == "hot key":
                        batch.append(hot.fact(day0 + n, "pub-a", 100_000 + n))
                    else:
                        key = Key(1, "fresh", f"fresh-{r}-{t}-{j}-{uuid.uuid4().hex[:6]}")
                        batch.append(key.fact(day0 + n, "pub-a", 100_000 + n))
            plan[name].append(batch)
    for name in plan:  # the sources, recorded before (not measured)
        for batch in plan[name]:
            for start in range(0, len(batch), 500):
                mem.record(scope, sources=[s for s, _ in batch[start:start + 500]])
    out: dict[str, dict[str, Any]] = {name: {"lat": [], "wall": 0.0, "n": 0} for name in plan}
    for r in range(rounds):
        for name in (("hot key", "fresh keys") if r % 2 == 0 else ("fresh keys", "hot key")):
            batch = plan[name][r]
            lat: list[float] = []
            lock = threading.Lock()

            def worker(items: list[tuple[Source, FactIn]], lat: list[float] = lat,
                       lock: threading.Lock = lock) -> None:
                for _, fact in items:
                    t = time.perf_counter()
                    mem.assert_fact(scope, fact)
                    with lock:
                        lat.append(time.perf_counter() - t)

            parts = [batch[t * per:(t + 1) * per] for t in range(threads)]
            workers = [threading.Thread(target=worker, args=(p,)) for p in parts]
            t0 = time.perf_counter()
            for w in workers:
                w.start()
            for w in workers:
                w.join()
            out[name]["wall"] += time.perf_counter() - t0
            out[name]["lat"] += lat
            out[name]["n"] += len(batch)
        log(f"  writes: round {r + 1}/{rounds}")
    return {name: {"writes": o["n"], "per_s": o["n"] / o["wall"], "p50_ms": pct(o["lat"], 50) * 1e3,
                   "p95_ms": pct(o["lat"], 95) * 1e3} for name, o in out.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="10,100,1000,10000")
    ap.add_argument("--shapes", default="daily,mixed")
    ap.add_argument("--reads", type=int, default=100, help="rounds of reads (each: every kind, every key)")
    ap.add_argument("--history-reps", type=int, default=5)
    ap.add_argument("--writes", type=int, default=200, help="writes per thread to each side (0: none)")
    ap.add_argument("--threads", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--keep", action="store_true", help="keep the tenant (default: drop it)")
    ap.add_argument("--json", help="write the figures to this file too")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    load = [os.getloadavg()]
    scope = Scope(tenant=f"bench-hotkey-{uuid.uuid4().hex[:8]}")
    keys = [Key(size, shape, f"{shape}-{size}") for size in sizes for shape in args.shapes.split(",")]
    out: dict[str, Any] = {"tenant": scope.tenant, "sizes": sizes}
    with Memory.from_env() as mem:
        mem.migrate()
        mem.put_entity(scope, Entity(id=ENTITY, name="an agent's user"))
        for key in keys:
            t = time.perf_counter()
            build(mem, scope, key)
            log(f"built {key.attribute}: {time.perf_counter() - t:.1f}s")
        measure_reads(mem, scope, keys, args.reads, args.seed)
        measure_history(mem, scope, keys, args.history_reps)
        hits = {key.attribute: profile_read(mem, scope, key) for key in keys}
        load.append(os.getloadavg())
        hot = max((k for k in keys if k.shape == "daily"), key=lambda k: k.size, default=keys[-1])
        if args.writes:
            out["writes"] = measure_writes(mem, scope, hot, args.threads, args.writes, args.rounds)
        load.append(os.getloadavg())
        if not args.keep:
            from common import drop_tenant
            drop_tenant(mem.db.driver, mem.db.database, scope.tenant)
    small = {k.shape: k for k in keys if k.size == min(sizes)}
    print(f"load average (1, 5, 15 min): start {load[0]}, after reads {load[1]}, end {load[2]}")
    print(f"{'key':<14}{'versions':>9}  {'read':<22}{'p50 ms':>9}{'p95 ms':>9}{'x smallest':>11}")
    rows = []
    for key in keys:
        for name, times in key.times.items():
            if name == "versions":
                continue
            p50 = pct(times, 50) * 1e3
            base = pct(small[key.shape].times[name], 50) * 1e3
            rows.append({"key": key.attribute, "versions": key.times["versions"][0], "read": name,
                         "p50_ms": p50, "p95_ms": pct(times, 95) * 1e3, "ratio": p50 / base})
            extra = (f"  ({p50 / key.times['versions'][0] * 1e3:.1f} us/version)"
                     if name == "history" else "")
            print(f"{key.attribute:<14}{key.times['versions'][0]:>9}  {name:<22}{p50:>9.2f}"
                  f"{pct(times, 95) * 1e3:>9.2f}{p50 / base:>10.2f}x{extra}")
        print(f"{key.attribute:<14}{'':>9}  {'fact.read db hits':<22}{hits[key.attribute]:>9}")
    for name, w in out.get("writes", {}).items():
        print(f"{args.threads} threads, {name:<10} ({hot.attribute}): {w['writes']} writes, "
              f"{w['per_s']:.1f} writes/s, p50 {w['p50_ms']:.1f} ms, p95 {w['p95_ms']:.1f} ms")
    if "writes" in out:
        rate = out["writes"]["hot key"]["per_s"] / out["writes"]["fresh keys"]["per_s"]
        print(f"hot key / fresh keys rate: {rate:.2f}")
    out.update({"load": load, "reads": rows, "db_hits": hits})
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(out, fh, indent=1, default=str)


if __name__ == "__main__":
    main()
