#!/usr/bin/env python3
"""Benchmark of graphmem's agent-memory search and context builder (it reports, never asserts).

Data (deterministic, ``--seed``): one measured tenant of ``--memories`` memories -
filings-like facts (entities x 20 attributes x 20 quarters; one filing per entity and
quarter with an accession number; ~10% of keys restated by a later filing), 5%
experiences (each with an error code ``E-nnnn``, validated by a filing, about an
entity) and 2% task states (5 revisions per task) - plus a second tenant holding
another 20% as many facts about entities with the *same tickers*, so an unscoped
query sees documents a scoped one must skip.

Per query class it prints ``Memory.search`` p50/p95 (hard filters: scope, random
cutoff and known_at, status, evidence - then ranking and limit 10) beside the same
full-text query run without the temporal and scope filters (``CALL
db.index.fulltext.queryNodes(...) ... LIMIT 10`` over the text clauses only), the two
interleaved in the same loop through the same driver:

- ``accession``: one filing's accession number (its ~20 facts),
- ``ticker+attr``: ``TICK revenue`` (one entity's revenue facts over 20 quarters),
- ``error code``: ``E-1234`` (one or a few experiences),
- ``ticker``: ``TICK`` alone (everything about one entity: ~400 facts and its memories).

Then ``build_context`` for 200 candidate memories (a search with limit 200), with a
budget that cuts most of them and one that includes all, and for the 10 hits of a
limit-10 search; and where the search time goes per named statement.

Usage (against a dedicated server, never a shared one)::

    .venv/bin/graphmem server start --home /tmp/bench-search --port 7690 --heap 2g --pagecache 1g
    GRAPHMEM_NEO4J_URI=bolt://127.0.0.1:7690 .venv/bin/python bench/bench_search.py \
        [--memories 100000] [--queries 200] [--json PATH]
    .venv/bin/graphmem server stop --home /tmp/bench-search --port 7690

Targets it reports against: filtered p95 under 50 ms, and within 2x of the unfiltered query.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import random
import string
import sys
import time
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterator
from decimal import Decimal
from typing import Any

from common import log, pct  # noqa: E402 - sibling module of the bench scripts

import graphmem.db as gdb
from graphmem import (
    Entity,
    ExperienceIn,
    FactIn,
    Memory,
    Period,
    Scope,
    Source,
    TaskStateIn,
    facts,
    governance,
)
from graphmem.search import lucene

UTC = dt.UTC
ATTRIBUTES = ["revenue", "net_income", "operating_income", "gross_profit", "total_assets",
              "total_liabilities", "cash", "debt", "equity", "capex", "free_cash_flow",
              "eps_basic", "eps_diluted", "shares_outstanding", "dividends", "rnd_expense",
              "sga_expense", "tax_expense", "inventory", "receivables"]
QUARTERS = 20
FIRST_YEAR = 2019
EXPERIENCE_SHARE, TASK_SHARE, NOISE_SHARE = 0.05, 0.02, 0.20
REVISIONS = 5
CHUNK = 500






def quarter(q: int) -> tuple[Period, dt.datetime]:
    """Quarter ``q``'s period and its filing's acceptance time (45 days after the end)."""
    year, n = FIRST_YEAR + q // 4, q % 4
    start = dt.date(year, 3 * n + 1, 1)
    end = (dt.date(year + (n == 3), (3 * n + 3) % 12 + 1, 1) - dt.timedelta(days=1))
    return Period(start=start, end=end), dt.datetime.combine(
        end + dt.timedelta(days=45), dt.time(21, 0), UTC)


def tickers(n: int, rng: random.Random) -> list[str]:
    seen: set[str] = set()
    while len(seen) < n:
        seen.add("".join(rng.choices(string.ascii_uppercase, k=4)))
    return sorted(seen)


class Data:
    """The synthetic memories of one tenant."""

    def __init__(self, memories: int, seed: int, noise: bool = False):
        self.rng = random.Random(seed + noise)
        share = 1.0 if noise else 1 - EXPERIENCE_SHARE - TASK_SHARE
        facts = int(memories * share / 1.1)  # versions = keys x 1.1 (restatements)
        self.entities = max(1, round(facts / (len(ATTRIBUTES) * QUARTERS)))
        self.tickers = tickers(self.entities, random.Random(seed))  # same tickers in both
        self.experiences = 0 if noise else int(memories * EXPERIENCE_SHARE)
        self.tasks = 0 if noise else max(1, int(memories * TASK_SHARE / REVISIONS))
        self.tag = "n" if noise else "m"

    def accession(self, e: int, q: int) -> str:
        return f"{1000000 + e:010d}-{FIRST_YEAR % 100 + q // 4:02d}-{q:03d}{e % 997:03d}"

    def filings(self) -> Iterator[tuple[Source, list[FactIn]]]:
        """Quarter by quarter: each entity's filing, with its facts and its restatements."""
        for q in range(QUARTERS):
            period, accepted = quarter(q)
            for e in range(self.entities):
                src = Source(id=self.accession(e, q), kind="10-Q", authority="primary",
                             publisher=f"cik:{e}", available_by=accepted,
                             title=f"{self.tickers[e]} quarterly report {period.text}")
                rows = [FactIn(entity=f"cik:{e}", attribute=a, unit="USD", period=period,
                               value=Decimal(self.rng.randint(1, 10**9)), sources=(src.id,))
                        for a in ATTRIBUTES]
                if q > 0:  # restate ~10% of the previous quarter's keys
                    prev, _ = quarter(q - 1)
                    rows += [FactIn(entity=f"cik:{e}", attribute=a, unit="USD", period=prev,
                                    value=Decimal(self.rng.randint(1, 10**9)), sources=(src.id,))
                             for a in ATTRIBUTES if self.rng.random() < 0.105]
                yield src, rows

    def experience(self, i: int) -> ExperienceIn:
        e = self.rng.randrange(self.entities)
        code = f"E-{1000 + i % 9000}"
        return ExperienceIn(
            trigger=f"{self.tickers[e]} filing parse failed with {code}",
            preconditions=("point-in-time cutoff is explicit",),
            procedure=("re-fetch the filing index", "parse the XBRL instance again"),
            outcome=f"parse succeeded on retry {i}", entities=(f"cik:{e}",),
            evidence=(self.accession(e, self.rng.randrange(QUARTERS)),))

    def task_state(self, task: int, revision: int) -> TaskStateIn:
        e = self.rng.randrange(self.entities)
        return TaskStateIn(task_id=f"task-{task}", goal=f"compare {self.tickers[e]} margins",
                           checkpoint=f"step {revision}",
                           open_items=(f"verify quarter {revision}",),
                           entities=(f"cik:{e}",))


def load(mem: Memory, scope: Scope, data: Data) -> dict[str, Any]:
    t0 = time.perf_counter()
    for e in range(data.entities):
        mem.put_entity(scope, Entity(id=f"cik:{e}", name=f"Company {e}", kind="company",
                                     aliases=(data.tickers[e],)))
    versions, batch = 0, []

    def flush() -> None:
        nonlocal batch, versions
        def work(tx: Any, at: Any, b=batch) -> int:
            n = 0
            for src, rows in b:
                facts.record_source(tx, scope, src, at)
                n += len(facts.write_facts(tx, scope, rows, at).version_ids)
            return n
        versions += mem.write(scope, "bench load", work)
        batch = []

    for src, rows in data.filings():
        batch.append((src, rows))
        if sum(len(r) for _, r in batch) >= CHUNK:
            flush()
    if batch:
        flush()
    t1 = time.perf_counter()
    log(f"{scope.tenant}: {versions} fact versions in {t1 - t0:.0f}s")
    for start in range(0, data.experiences, 250):
        items = [data.experience(i) for i in range(start, min(start + 250, data.experiences))]
        mem.write(scope, "bench experiences", lambda tx, at, b=items: [
            governance.remember_experience(tx, scope, x, at) for x in b])
    for revision in range(1, REVISIONS + 1):
        for start in range(0, data.tasks, 250):
            items = [data.task_state(k, revision)
                     for k in range(start, min(start + 250, data.tasks))]
            mem.write(scope, "bench tasks", lambda tx, at, b=items, r=revision: [
                governance.save_task_state(tx, scope, x, at, f"bench revision {r}") for x in b])
    t2 = time.perf_counter()
    log(f"{scope.tenant}: {data.experiences} experiences, {data.tasks * REVISIONS} task "
        f"states in {t2 - t1:.0f}s")
    return {"fact_versions": versions, "experiences": data.experiences,
            "task_states": data.tasks * REVISIONS, "load_s": t2 - t0}


def counts(mem: Memory, scope: Scope) -> dict[str, Any]:
    """What a previous run loaded into ``scope`` (for --reuse)."""
    with mem.db.driver.session(database=mem.db.database) as session:
        row = session.run(
            "MATCH (n) WHERE n.tenant = $t AND (n:Fact OR n:Experience OR n:TaskState) "
            "RETURN sum(CASE WHEN n:Fact THEN 1 ELSE 0 END) AS f, "
            "sum(CASE WHEN n:Experience THEN 1 ELSE 0 END) AS e, "
            "sum(CASE WHEN n:TaskState THEN 1 ELSE 0 END) AS s", t=scope.tenant).single()
    return {"fact_versions": row["f"], "experiences": row["e"], "task_states": row["s"],
            "load_s": None}


class StatementTimes:
    """Wall time per graphmem named statement (wraps Tx.run in this process only)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self.calls: dict[str, int] = defaultdict(int)
        real = gdb.Tx.run

        def timed(tx: gdb.Tx, name: str, /, **params: Any) -> list[dict[str, Any]]:
            t0 = time.perf_counter()
            try:
                return real(tx, name, **params)
            finally:
                self.seconds[name] += time.perf_counter() - t0
                self.calls[name] += 1

        gdb.Tx.run = timed  # type: ignore[method-assign]

    def reset(self) -> None:
        self.seconds.clear()
        self.calls.clear()


def measure(mem: Memory, scope: Scope, data: Data, queries: int, seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    stats = StatementTimes()
    unscoped = "CALL db.index.fulltext.queryNodes('graphmem_search_text', $q) YIELD node, score " \
               "RETURN node, score LIMIT 10"

    def baseline(text: str) -> Callable[[], int]:
        # the same text clauses, without the scope token, cutoff, known_at or status
        q = lucene(scope, text, "all", None).split(" ", 1)[1]

        def run() -> int:
            with mem.db.driver.session(database=mem.db.database) as session:
                return len(list(session.run(unscoped, q=q)))
        return run

    def text_of(kind: str) -> str:
        e = rng.randrange(data.entities)
        return {"accession": data.accession(e, rng.randrange(QUARTERS)),
                "ticker+attr": f"{data.tickers[e]} revenue",
                "error code": f"E-{1000 + rng.randrange(data.experiences) % 9000}",
                "ticker": data.tickers[e]}[kind]

    now = dt.datetime.now(UTC)
    out: dict[str, Any] = {}
    for kind in ("accession", "ticker+attr", "error code", "ticker"):
        filtered, plain, kept, matched, skipped = [], [], [], [], []
        stats.reset()
        for n in range(queries + 10):  # the first 10 warm the plan caches
            text = text_of(kind)
            cutoff = quarter(rng.randrange(QUARTERS))[1] + dt.timedelta(days=rng.randrange(90))
            known_at = now - dt.timedelta(seconds=rng.randrange(60))

            def search(text=text, cutoff=cutoff, known_at=known_at) -> Any:
                return mem.search(scope, text=text, cutoff=cutoff, known_at=known_at, limit=10)

            order = [("f", search), ("b", baseline(text))]
            if n % 2:
                order.reverse()
            for tag, call in order:
                t0 = time.perf_counter()
                result = call()
                ms = (time.perf_counter() - t0) * 1000
                if n < 10:
                    continue
                if tag == "f":
                    filtered.append(ms)
                    kept.append(result.explain.kept)
                    matched.append(result.explain.matched)
                    skipped.append(result.explain.unevaluated)
                else:
                    plain.append(ms)
        out[kind] = {
            "filtered_p50_ms": pct(filtered, 50), "filtered_p95_ms": pct(filtered, 95),
            "unfiltered_p50_ms": pct(plain, 50), "unfiltered_p95_ms": pct(plain, 95),
            "p50_ratio": pct(filtered, 50) / pct(plain, 50),
            "p95_ratio": pct(filtered, 95) / pct(plain, 95),
            "mean_matched": sum(matched) / len(matched), "mean_kept": sum(kept) / len(kept),
            "mean_unevaluated": sum(skipped) / len(skipped),
            "statements_ms_per_search": {k: v * 1000 / (queries + 10)
                                         for k, v in sorted(stats.seconds.items())},
        }
        log(f"{kind}: {out[kind]['filtered_p50_ms']:.1f}/{out[kind]['filtered_p95_ms']:.1f} ms "
            f"vs {out[kind]['unfiltered_p50_ms']:.1f}/{out[kind]['unfiltered_p95_ms']:.1f} ms")
    out["build_context"] = context_times(mem, scope, data, rng)
    return out


def context_times(mem: Memory, scope: Scope, data: Data, rng: random.Random) -> dict[str, Any]:
    """build_context over the hits of a ticker search: 200 candidates (limit 200) with a
    budget that cuts most of them and one that includes all, and the 10 of a usual
    search (limit 10)."""
    rows: dict[str, list[float]] = defaultdict(list)
    sizes = []
    for n in range(25):
        ticker = data.tickers[rng.randrange(data.entities)]
        for limit, budgets in ((200, (4000, 200_000)), (10, (4000,))):
            result = mem.search(scope, text=ticker, limit=limit)
            if limit == 200:
                sizes.append(len(result.hits))
            for budget in budgets:
                name = f"budget_{budget}" if limit == 200 else f"limit_{limit}"
                t0 = time.perf_counter()
                ctx = mem.build_context(scope, task_id=f"bench-{n}", memories=result,
                                        token_budget=budget)
                if n >= 5:
                    rows[name].append((time.perf_counter() - t0) * 1000)
                    rows[f"{name}_included"].append(len(ctx.included))
    return {
        "candidates_mean": sum(sizes) / len(sizes),
        **{f"{k}_p50_ms": pct(v, 50) for k, v in rows.items() if not k.endswith("included")},
        **{f"{k}_p95_ms": pct(v, 95) for k, v in rows.items() if not k.endswith("included")},
        **{f"{k}_mean": sum(v) / len(v) for k, v in rows.items() if k.endswith("included")},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--memories", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--json", default=None)
    parser.add_argument("--reuse", default=None, metavar="RUN",
                        help="measure the tenants a previous run loaded (same --memories/--seed)")
    args = parser.parse_args()
    if not os.environ.get("GRAPHMEM_NEO4J_URI"):
        sys.exit("set GRAPHMEM_NEO4J_URI to a dedicated server (see the docstring)")
    run = args.reuse or uuid.uuid4().hex[:8]
    with Memory.from_env() as mem:
        mem.migrate()
        scope, noise = Scope(tenant=f"bench-search-{run}"), Scope(tenant=f"bench-noise-{run}")
        data = Data(args.memories, args.seed)
        noise_data = Data(int(args.memories * NOISE_SHARE), args.seed, noise=True)
        if args.reuse:
            loaded = {"measured": counts(mem, scope), "noise": counts(mem, noise)}
        else:
            loaded = {"measured": load(mem, scope, data), "noise": load(mem, noise, noise_data)}
        log(f"run {run}: {loaded}")
        load_before = os.getloadavg()
        results = measure(mem, scope, data, args.queries, args.seed)
    report = {"memories": args.memories, "queries_per_class": args.queries, "loaded": loaded,
              "results": results, "cpus": os.cpu_count(),
              "loadavg_1m_before_after": [load_before[0], os.getloadavg()[0]]}
    print(json.dumps(report, indent=2, default=str))
    total = sum(loaded["measured"][k] for k in ("fact_versions", "experiences", "task_states"))
    lines = ["", f"search over {total} "
             f"memories (+{loaded['noise']['fact_versions']} in another tenant), limit 10:",
             f"{'query':<12} {'filtered p50/p95 ms':>20} {'unfiltered p50/p95 ms':>22} "
             f"{'ratio p50/p95':>14} {'matched':>8} {'kept':>6} {'unevaluated':>12}"]
    for kind, r in results.items():
        if kind == "build_context":
            continue
        lines.append(f"{kind:<12} {r['filtered_p50_ms']:>9.1f} / {r['filtered_p95_ms']:<8.1f} "
                     f"{r['unfiltered_p50_ms']:>10.1f} / {r['unfiltered_p95_ms']:<9.1f} "
                     f"{r['p50_ratio']:>6.2f} / {r['p95_ratio']:<5.2f} "
                     f"{r['mean_matched']:>8.0f} {r['mean_kept']:>6.0f} "
                     f"{r['mean_unevaluated']:>12.0f}")
    bc = results["build_context"]
    lines.append(f"build_context, {bc['candidates_mean']:.0f} candidates: budget 4000 tokens "
                 f"{bc['budget_4000_p50_ms']:.1f}/{bc['budget_4000_p95_ms']:.1f} ms p50/p95 "
                 f"({bc['budget_4000_included_mean']:.0f} included); budget 200000 "
                 f"{bc['budget_200000_p50_ms']:.1f}/{bc['budget_200000_p95_ms']:.1f} ms "
                 f"({bc['budget_200000_included_mean']:.0f} included); the 10 hits of a "
                 f"limit-10 search {bc['limit_10_p50_ms']:.1f}/{bc['limit_10_p95_ms']:.1f} ms")
    lines.append(f"(machine: {os.cpu_count()} CPUs, 1-minute load average "
                 f"{report['loadavg_1m_before_after'][0]:.1f} before / "
                 f"{report['loadavg_1m_before_after'][1]:.1f} after the measurements)")
    print("\n".join(lines), file=sys.stderr)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(report, fh, indent=2, default=str)


if __name__ == "__main__":
    main()
