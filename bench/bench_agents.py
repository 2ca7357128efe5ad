#!/usr/bin/env python3
"""Benchmark of the agent integrations (it reports, never asserts).

1. **MCP overhead**: ``as_of``, ``search`` and ``build_context`` called through an MCP
   client session beside the same call on ``Memory`` directly, interleaved in one loop
   (call i alternates which goes first) with the same random arguments; and ``as_of``
   without a cutoff (the tool's default, now) beside ``Memory.as_of(cutoff=NOW)``. Two
   transports: the SDK's in-memory transport (``Client(server, mode="legacy")``: JSON-RPC
   over memory streams, the tool on the SDK's worker thread) and, with ``--stdio``, the
   real ``graphmem mcp`` subprocess over stdio. Target: MCP p50 within max(direct p50 +
   2 ms, 1.5 x direct p50). In-memory, the same loop also times where the overhead goes,
   at the same moments: an empty sync tool through the same session (the SDK's own cost
   per call) and the direct call run on a worker thread as the SDK runs a tool
   (``anyio.to_thread``: the hop's cost with a database call in it).
2. **LangGraph store**: ``GraphmemStore.get`` / ``search`` (a namespace listing, and a
   query) beside LangGraph's ``InMemoryStore`` holding the same items (a dict lookup: the
   floor, not a peer) and beside graphmem's own calls for the same thing (``as_of``,
   ``facts_as_of``, ``search``).

Data (deterministic, ``--seed``): ``--entities`` companies x 10 attributes x 8 quarters of
filings-like facts (each quarter's filing a source; 10% of keys restated), one experience
per entity; ``--namespaces`` x ``--items`` store items.

Usage (your own server)::

    GRAPHMEM_NEO4J_URI=bolt://127.0.0.1:7706 .venv/bin/python bench/bench_agents.py \
        [--calls 300] [--stdio] [--json PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import os
import random
import sys
import time
import uuid
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import anyio
from common import log, pct  # noqa: E402 - sibling module of the bench scripts
from langgraph.store.base import PutOp
from langgraph.store.memory import InMemoryStore
from mcp import Client, StdioServerParameters

from graphmem import NOW, Entity, ExperienceIn, FactIn, Memory, Period, Scope, Source
from graphmem.integrations.langgraph import DEFINITION, FAR, PERIOD, GraphmemStore
from graphmem.integrations.mcp import FixedAccess, Grants, build_server

UTC = dt.UTC
ATTRIBUTES = ["revenue", "net_income", "operating_income", "gross_profit", "total_assets",
              "cash", "debt", "equity", "capex", "inventory"]
QUARTERS = [(2023 + q // 4, q % 4) for q in range(8)]


def quarter(year: int, q: int) -> tuple[Period, dt.datetime]:
    start = dt.date(year, 3 * q + 1, 1)
    end = (dt.date(year + (q == 3), (3 * q + 3) % 12 + 1, 1) - dt.timedelta(days=1))
    return Period(start=start, end=end), dt.datetime.combine(end, dt.time(21), UTC) + dt.timedelta(days=40)


def load(mem: Memory, scope: Scope, entities: int, rng: random.Random) -> list[str]:
    tickers = [f"T{n:03d}" for n in range(entities)]
    for tick in tickers:
        mem.put_entity(scope, Entity(id=tick, name=f"Company {tick}", kind="company"))
        sources, items = [], []
        for year, q in QUARTERS:
            period, public = quarter(year, q)
            sid = f"{tick}-{year}Q{q + 1}"
            sources.append(Source(id=sid, kind="10-Q", authority="primary", publisher=f"cik:{tick}",
                                  available_by=public, uri=f"https://example.test/{sid}"))
            items += [FactIn(entity=tick, attribute=a, unit="USD", period=period,
                             value=Decimal(rng.randrange(10**6, 10**9)), sources=(sid,))
                      for a in ATTRIBUTES]
        mem.record(scope, sources=sources, items=items)
        restated = [i.model_copy(update={"value": i.value + 1, "sources": (f"{tick}-restated",)})
                    for i in items if rng.random() < 0.1]
        mem.record(scope, sources=[Source(id=f"{tick}-restated", kind="10-K", authority="primary",
                                          publisher=f"cik:{tick}", available_by=dt.datetime(2025, 3, 1, tzinfo=UTC))],
                   items=restated)
        mem.remember_experience(scope, ExperienceIn(
            trigger=f"{tick} revenue parse failed with E-{rng.randrange(1000, 9999)}",
            procedure=("re-fetch", "parse again"), outcome="parse succeeded", evidence=(sources[0].id,)))
    return tickers


def random_call(rng: random.Random, tickers: list[str]) -> dict[str, Any]:
    year, q = rng.choice(QUARTERS)
    period, public = quarter(year, q)
    cutoff = public + dt.timedelta(days=rng.randrange(0, 600))
    return {"entity": rng.choice(tickers), "attribute": rng.choice(ATTRIBUTES), "period": period,
            "cutoff": cutoff}


def direct_and_tool(mem: Memory, scope: Scope, kind: str, a: dict[str, Any]
                    ) -> tuple[Callable[[], Any], str, dict[str, Any]]:
    """The direct Memory call, and the MCP tool and arguments that do the same."""
    cutoff = a["cutoff"].isoformat()
    text = f"{a['entity']} {a['attribute']}"
    if kind in ("as_of", "as_of_now"):  # as_of_now: no cutoff to the tool, NOW to Memory
        given = kind == "as_of"
        return (lambda: mem.as_of(scope, entity=a["entity"], attribute=a["attribute"], period=a["period"],
                                  cutoff=a["cutoff"] if given else NOW),
                "as_of", {"entity": a["entity"], "attribute": a["attribute"],
                          "period_end": a["period"].end.isoformat(),
                          "period_start": a["period"].start.isoformat(), **({"cutoff": cutoff} if given else {})})
    if kind == "search":
        return (lambda: mem.search(scope, text=text, cutoff=a["cutoff"], limit=10), "search",
                {"text": text, "cutoff": cutoff, "limit": 10})
    return (lambda: mem.build_context(scope, task_id="bench", token_budget=2000,
                                      memories=mem.search(scope, text=text, cutoff=a["cutoff"], limit=20)),
            "build_context", {"task_id": "bench", "token_budget": 2000, "text": text, "cutoff": cutoff,
                              "limit": 20})


async def overhead(mem: Memory, scope: Scope, tickers: list[str], client: Client, calls: int,
                   seed: int, floor: bool) -> dict[str, Any]:
    """Direct call, tool call (and, with ``floor``, the empty ``bench_echo`` tool and the
    direct call on a worker thread) on the same random arguments, interleaved; the first
    10 calls of each kind warm up."""
    rng = random.Random(seed)
    out: dict[str, Any] = {}

    async def tool_call(tool: str, args: dict[str, Any]) -> None:
        result = await client.call_tool(tool, args)
        if result.is_error:
            raise RuntimeError(result.content[0].text)

    for kind in ("as_of", "as_of_now", "search", "build_context"):
        times: dict[str, list[float]] = {"direct": [], "mcp": [], "floor": [], "thread": []}
        for i in range(calls + 10):
            fn, tool, args = direct_and_tool(mem, scope, kind, random_call(rng, tickers))
            runs: list[tuple[str, Callable[[], Any]]] = [
                ("direct", fn), ("mcp", lambda tool=tool, args=args: tool_call(tool, args))]
            if floor:
                runs += [("floor", lambda: tool_call("bench_echo", {"x": 1})),
                         ("thread", lambda fn=fn: anyio.to_thread.run_sync(fn))]
            for label, run in (runs if i % 2 == 0 else runs[::-1]):
                t0 = time.perf_counter()
                result = run()
                if asyncio.iscoroutine(result):
                    await result
                if i >= 10:
                    times[label].append((time.perf_counter() - t0) * 1e3)
        d50, m50 = pct(times["direct"], 50), pct(times["mcp"], 50)
        out[kind] = {"direct_p50": d50, "direct_p95": pct(times["direct"], 95), "mcp_p50": m50,
                     "mcp_p95": pct(times["mcp"], 95), "overhead_p50_ms": m50 - d50, "ratio_p50": m50 / d50,
                     "floor_p50": pct(times["floor"], 50) if floor else None,
                     "thread_p50": pct(times["thread"], 50) if floor else None,
                     "target_met": m50 <= max(d50 + 2.0, 1.5 * d50)}
        log(f"  {kind}: direct p50 {d50:.2f} ms, mcp p50 {m50:.2f} ms")
    return out


async def in_memory(mem: Memory, scope: Scope, tickers: list[str], calls: int, seed: int) -> dict[str, Any]:
    server = build_server(mem, FixedAccess(scope), Grants())

    def bench_echo(x: int) -> int:
        """The SDK's own cost per call: a sync tool (run on the SDK's worker thread, like
        graphmem's) that does nothing, through the same session."""
        return x

    server.add_tool(bench_echo)
    async with Client(server, mode="legacy") as client:
        return await overhead(mem, scope, tickers, client, calls, seed, floor=True)


async def stdio(mem: Memory, scope: Scope, tickers: list[str], calls: int, seed: int) -> dict[str, Any]:
    exe = str(Path(sys.executable).with_name("graphmem"))
    params = StdioServerParameters(command=exe, args=["mcp", "--tenant", scope.tenant],
                                   env={**os.environ})
    async with Client(params) as client:
        return await overhead(mem, scope, tickers, client, calls, seed, floor=False)


def store_calls(mem: Memory, store: GraphmemStore, reference: InMemoryStore, ns: tuple[str, ...],
                key: str, word: str) -> list[tuple[str, Callable[[], Any]]]:
    """The same read on the store, on InMemoryStore, and as graphmem's own call."""
    scope, entity, now = store.scope_of(ns), "langgraph:" + ".".join(ns), FAR
    return [
        ("get: GraphmemStore", lambda: store.get(ns, key)),
        ("get: InMemoryStore", lambda: reference.get(ns, key)),
        ("get: Memory.as_of", lambda: mem.as_of(scope, entity=entity, attribute=key, period=PERIOD,
                                                unit="", definition=DEFINITION, cutoff=now)),
        ("list: GraphmemStore.search(ns)", lambda: store.search(ns, limit=10)),
        ("list: InMemoryStore.search(ns)", lambda: reference.search(ns, limit=10)),
        ("list: Memory.facts_as_of", lambda: mem.facts_as_of(scope, entity=entity, cutoff=now)),
        ("query: GraphmemStore.search(ns, query)", lambda: store.search(ns, query=word, limit=10)),
        ("query: InMemoryStore.search(ns, query)", lambda: reference.search(ns, query=word, limit=10)),
        ("query: Memory.search", lambda: mem.search(scope, text=word, types=("fact",), entity=entity,
                                                    limit=10, match="any")),
    ]


def store_bench(mem: Memory, namespaces: int, items: int, calls: int, seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    store, reference = GraphmemStore(mem, tenant=f"bench-lg-{uuid.uuid4().hex[:8]}"), InMemoryStore()
    words = ["pizza", "sushi", "chess", "hiking", "jazz", "python", "tea", "cats", "rain", "maps"]
    for n in range(namespaces):
        ns = ("memories", f"user{n}")
        ops = {f"m{k}": {"text": f"likes {rng.choice(words)} and {rng.choice(words)}", "n": k}
               for k in range(items)}
        for key, value in ops.items():
            reference.put(ns, key, value)
        store.batch([PutOp(ns, key, value) for key, value in ops.items()])
    timings: dict[str, list[float]] = {}

    def timed(label: str, fn: Callable[[], Any]) -> None:
        t0 = time.perf_counter()
        fn()
        timings.setdefault(label, []).append((time.perf_counter() - t0) * 1e3)

    for i in range(calls + 10):
        ns = ("memories", f"user{rng.randrange(namespaces)}")
        key, word = f"m{rng.randrange(items)}", rng.choice(words)
        pairs = store_calls(mem, store, reference, ns, key, word)
        if i % 2:
            pairs.reverse()
        for label, fn in pairs:
            if i >= 10:
                timed(label, fn)
            else:
                fn()
    return {label: {"p50": pct(v, 50), "p95": pct(v, 95), "n": len(v)} for label, v in sorted(timings.items())}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--entities", type=int, default=40)
    ap.add_argument("--namespaces", type=int, default=20)
    ap.add_argument("--items", type=int, default=50)
    ap.add_argument("--calls", type=int, default=300)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--stdio", action="store_true", help="also measure the stdio subprocess")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    load_before = os.getloadavg()[0]
    with Memory.from_env() as mem:
        mem.migrate()
        scope = Scope(tenant=f"bench-agents-{uuid.uuid4().hex[:8]}")
        log(f"loading {args.entities} entities into {scope.tenant}")
        tickers = load(mem, scope, args.entities, rng)
        report: dict[str, Any] = {"tenant": scope.tenant, "calls": args.calls}
        log("MCP, in-memory transport")
        report["mcp_in_memory"] = asyncio.run(in_memory(mem, scope, tickers, args.calls, args.seed))
        if args.stdio:
            log("MCP, stdio subprocess")
            report["mcp_stdio"] = asyncio.run(stdio(mem, scope, tickers, args.calls, args.seed))
        log("LangGraph store")
        report["store"] = store_bench(mem, args.namespaces, args.items, args.calls, args.seed)
    report["loadavg_1m_before_after"] = [load_before, os.getloadavg()[0]]
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))
    lines = []
    for transport in ("mcp_in_memory", "mcp_stdio"):
        for kind, r in report.get(transport, {}).items():
            lines.append(f"{transport:14} {kind:14} direct p50 {r['direct_p50']:7.2f} p95 {r['direct_p95']:7.2f} | "
                         f"mcp p50 {r['mcp_p50']:7.2f} p95 {r['mcp_p95']:7.2f} | overhead p50 "
                         f"{r['overhead_p50_ms']:+6.2f} ms ({r['ratio_p50']:.2f}x) "
                         f"{'target met' if r['target_met'] else 'TARGET MISSED'}"
                         + (f" | empty tool p50 {r['floor_p50']:.2f}, direct on a worker thread p50 "
                            f"{r['thread_p50']:.2f}" if r["floor_p50"] is not None else ""))
    for label, r in report["store"].items():
        lines.append(f"{label:42} p50 {r['p50']:8.3f} ms  p95 {r['p95']:8.3f} ms")
    lines.append(f"(machine: {os.cpu_count()} CPUs, 1-minute load average {report['loadavg_1m_before_after'][0]:.1f} "
                 f"before / {report['loadavg_1m_before_after'][1]:.1f} after; {args.calls} calls each)")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
