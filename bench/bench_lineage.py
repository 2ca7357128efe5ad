#!/usr/bin/env python3
"""Benchmark of graphmem's lineage: impact analysis and the retraction cascade
(a benchmark, not a test: it reports, never asserts).

Data: per size, a fresh tenant holding ``size`` derived fact versions. The graph is made
of clusters (one entity each) of ``BASE`` base facts and ``sum(LAYERS)`` = 100 derived
facts in 6 layers (depth up to 6); each derivation uses 1-5 inputs, the first from the
previous layer and the rest from any earlier layer, with two "hub" base facts per
cluster used by up to ``FANOUT`` = 20 derivations. The base facts of each cluster come
from one source; sources cover groups of clusters, so that

- ``vendor-p10`` reaches ~10% of the derived versions,
- ``vendor-p1``  reaches ~1%,
- ``vendor-one`` reaches one cluster (~100 derived versions, on every size),
- ``filing-g*``  cover the remaining clusters, five clusters each,
- ``confirm``    is a second source of one base fact per cluster (those facts survive
  any single retraction, which is what makes the reach "about", not exactly, 10%).

Build: the first ``--derive-first`` (1000) derivations go through ``Memory.derive`` one
call at a time and are timed; the rest too if the extrapolated time is under
``--max-derive-seconds``, else they are written by a raw batched Cypher loader (in this
script) that creates exactly the nodes, labels, properties and edges ``Memory.derive``
creates, with ids computed by graphmem's own functions (``KeySpec``, ``source_uid``,
``derivation_id``, ``Assertion.version_id``). Every ``derive`` call's returned version
id is checked against the computed one. Before the sizes, a small graph is built twice,
once through ``derive`` and once raw, and the two are compared: node/edge shapes,
``mem.versions`` of every derived fact and ``mem.impact`` reports from every source
(ids mapped to logical names).

Per size it measures, interleaved in the same loop with a baseline:

- ``mem.impact(scope, source_id=X)`` for the 10%, 1% and one-cluster sources, p50/p95
  over ``--runs`` runs (fewer if ``--budget`` seconds are spent), beside
- the baseline: one plain Cypher query fetching the downstream subgraph's edges
  (``Source<-EVIDENCED_BY-Fact``, then a variable-length walk over USES/EVIDENCED_BY)
  and a networkx walk of it (``nx.descendants`` + ``nx.topological_sort``);
- where impact's time goes: graphmem's named statements (round trips and time, by
  wrapping ``graphmem.db.Tx.run`` in this process) and a PROFILE (db hits) of each
  statement one impact run issued, plus a cProfile of one run's Python side;
- ``mem.retract_source`` of the 10% source, once (it writes).

Usage (against a dedicated server, never a shared one)::

    GRAPHMEM_NEO4J_URI=bolt://127.0.0.1:7689 .venv/bin/python bench/bench_lineage.py \
        --sizes 10000,100000 [--json [PATH]]

Targets it reports against (it does not assert them): impact p50 no slower than the
networkx baseline, and under 1 s at 100k derived versions for the 10% source.
"""

from __future__ import annotations

import argparse
import cProfile
import datetime as dt
import io
import json
import os
import pstats
import random
import sys
import time
import uuid
from collections import Counter, defaultdict
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import neo4j
import networkx as nx
from common import StatementClock, log, pct, plan_operators, raw_tx  # noqa: E402 - sibling module of the bench scripts

import graphmem
import graphmem.db as gdb
from graphmem import Authority, Entity, FactIn, Memory, Period, Scope, Source, facts, indexing, lineage
from graphmem.facts import Assertion, KeySpec, Times, source_uid
from graphmem.queries import QUERIES
from graphmem.values import digest, encode

BASE = 20  # base facts per cluster
LAYERS = (30, 25, 18, 12, 9, 6)  # derived facts per layer and cluster: 100, depth 6
PER_CLUSTER = sum(LAYERS)
FANOUT = 20  # at most this many derivations use one fact
HUBS = 2  # base facts per cluster that many derivations use
CONFIRMED = 2  # index of the base fact that also has the `confirm` source
GROUP = 5  # clusters per filing-g* source
Q = Period(start=dt.date(2024, 10, 1), end=dt.date(2024, 12, 31))
T0 = dt.datetime(2025, 1, 10, tzinfo=dt.UTC)
RAW_BATCH = 1000

RAW_DERIVE = """
UNWIND $rows AS row
MATCH (e:Entity {uid: row.entity_uid})
CREATE (d:Source:Derivation {uid: row.d_uid, tenant: $tenant, scope: $scope, id: row.d_id,
        kind: 'derivation', authority: 'derived', authority_rank: 2, publisher: row.publisher,
        title: row.title, meta: '{}', available_by: row.available_by,
        recorded_at: $recorded_at, method: row.method, method_version: row.method_version,
        params: row.params})
CREATE (k:FactKey {uid: row.key_uid, tenant: $tenant, scope: $scope, entity: row.entity,
        attribute: row.attribute, unit: row.unit, definition: row.definition,
        period: row.period, period_start: row.period_start, period_end: row.period_end,
        revision: 1, tiers: [0, 1, 0, 0], feeds: ['2' + row.publisher], flagged: [],
        written_at: $recorded_at})
CREATE (k)-[:ABOUT]->(e)
CREATE (f:Fact {version_id: row.version_id, tenant: $tenant, scope: $scope,
        key_uid: row.key_uid, value: row.value, value_type: row.value_type,
        value_num: row.value_num, value_hash: row.value_hash, event_time: row.period_end,
        period_start: row.period_start, available_by: row.available_by,
        recorded_at: $recorded_at, revision: 1})
CREATE (f)-[:VERSION_OF]->(k)
CREATE (f)-[:EVIDENCED_BY {idem: row.idem, available_by: row.available_by,
        recorded_at: $recorded_at, key_uid: row.key_uid, publisher: row.publisher, top: 2}]->(d)
WITH d, row
UNWIND row.inputs AS input
MATCH (i:Fact {version_id: input.version_id})
WHERE i.tenant = $tenant AND i.scope = $scope
CREATE (d)-[:USES {role: input.role, position: input.position}]->(i)
RETURN count(*) AS uses
"""

# The baseline: the same downstream subgraph's edges in one plain query.
BASELINE = """
MATCH (s:Source {uid: $uid})<-[:EVIDENCED_BY]-(root:Fact)
RETURN s.id AS a, root.version_id AS b
UNION ALL
MATCH (s:Source {uid: $uid})<-[:EVIDENCED_BY]-(root:Fact)
WITH DISTINCT root
MATCH (root)<-[:USES|EVIDENCED_BY*0..]-(n)
WITH DISTINCT n
MATCH (n)<-[:USES|EVIDENCED_BY]-(m)
RETURN coalesce(n.version_id, n.id) AS a, coalesce(m.version_id, m.id) AS b
"""





# ------------------------------------------------------------------ the plan


@dataclass(frozen=True)
class Drv:
    """One planned derivation: its output's logical name and its inputs' logical names."""

    cluster: int
    layer: int
    j: int
    inputs: tuple[str, ...]

    @property
    def name(self) -> str:
        return f"c{self.cluster}.d{self.layer}.{self.j}"

    @property
    def method(self) -> str:
        return f"calc-l{self.layer}"

    @property
    def params(self) -> dict[str, Any]:
        return {"layer": self.layer, "j": self.j}

    def value(self) -> Decimal:
        return Decimal(1000 + (self.cluster * 7919 + self.layer * 104729 + self.j * 31) % 100000)

    def output(self) -> FactIn:
        return FactIn(entity=entity_of(self.cluster), attribute=f"d{self.layer}_{self.j:02d}",
                      value=self.value(), period=Q, unit="USD")

    def role_inputs(self, vid: dict[str, str]) -> dict[str, str | list[str]]:
        out: dict[str, str | list[str]] = {"a": vid[self.inputs[0]]}
        if len(self.inputs) > 1:
            out["b"] = [vid[x] for x in self.inputs[1:]]
        return out


def entity_of(c: int) -> str:
    return f"E{c:05d}"


class Plan:
    """The whole graph as logical names; deterministic in (derived, seed)."""

    def __init__(self, derived: int, seed: int):
        self.clusters = max(1, derived // PER_CLUSTER)
        c10 = max(1, self.clusters // 10)
        c1 = max(1, self.clusters // 100)
        self.source_of: list[str] = []
        groups = [("vendor-p10", c10), ("vendor-p1", c1), ("vendor-one", 1)]
        for sid, n in groups:
            self.source_of += [sid] * n
        rest = self.clusters - len(self.source_of)
        self.source_of += [f"filing-g{i // GROUP}" for i in range(max(0, rest))]
        self.source_of = self.source_of[: self.clusters]
        self.sources = list(dict.fromkeys(self.source_of)) + ["confirm"]
        self.available = {sid: T0 + dt.timedelta(hours=i + 1) for i, sid in enumerate(self.sources)}
        self.available["confirm"] = T0
        # base facts: logical name -> (cluster, j, sources)
        self.base: dict[str, tuple[int, int, tuple[str, ...]]] = {}
        for c in range(self.clusters):
            for j in range(BASE):
                srcs = (self.source_of[c],) + (("confirm",) if j == CONFIRMED else ())
                self.base[f"c{c}.b{j}"] = (c, j, srcs)
        # derivations, layer by layer across clusters (so every input exists before use)
        per_cluster = [self._cluster(c, random.Random(f"{seed}:{c}")) for c in range(self.clusters)]
        self.derivations: list[Drv] = [d for layer in range(1, len(LAYERS) + 1)
                                       for cl in per_cluster for d in cl if d.layer == layer]
        self.fanout = Counter(x for d in self.derivations for x in d.inputs)

    def _cluster(self, c: int, rng: random.Random) -> list[Drv]:
        layers: list[list[str]] = [[f"c{c}.b{j}" for j in range(BASE)]]
        hubs = layers[0][:HUBS]
        uses: Counter[str] = Counter()
        out: list[Drv] = []
        for layer, size in enumerate(LAYERS, 1):
            earlier = [x for lay in layers for x in lay]
            made = []
            for j in range(size):
                k = rng.choice((1, 1, 2, 2, 2, 3, 3, 4, 5))
                prev = [x for x in layers[-1] if uses[x] < FANOUT] or layers[-1]
                chosen = [rng.choice(prev)]
                tries = 0
                while len(chosen) < k and tries < 50:
                    tries += 1
                    cand = rng.choice(hubs) if rng.random() < 0.35 else rng.choice(earlier)
                    if cand not in chosen and uses[cand] < FANOUT:
                        chosen.append(cand)
                for x in chosen:
                    uses[x] += 1
                d = Drv(c, layer, j, tuple(chosen))
                out.append(d)
                made.append(d.name)
            layers.append(made)
        return out

    def base_fact(self, name: str) -> FactIn:
        c, j, srcs = self.base[name]
        return FactIn(entity=entity_of(c), attribute=f"b{j:02d}", period=Q, unit="USD",
                      value=Decimal(500 + (c * 31 + j * 7) % 9000), sources=srcs)

    def base_available(self, name: str) -> dt.datetime:
        return max(self.available[s] for s in self.base[name][2])

    def clusters_of(self, sid: str) -> list[int]:
        return [c for c, s in enumerate(self.source_of) if s == sid]


# ------------------------------------------------------------------ ids, as graphmem makes them


def derived_row(scope: Scope, d: Drv, vid: dict[str, str],
                avail: dict[str, dt.datetime]) -> dict[str, Any]:
    """Everything Memory.derive would write for ``d``, ids from graphmem's own functions."""
    out = d.output()
    rows = lineage.normalise_inputs(d.role_inputs(vid))
    key = KeySpec.of(scope, out)
    did = lineage.derivation_id(d.method, "1", lineage.params_json(d.params), rows, key.uid)
    d_id = f"derivation:{did}"
    d_uid = source_uid(scope, d_id)
    available_by = max(avail[x] for x in d.inputs)
    value_type, value, value_num = encode(out.value)
    a = Assertion(0, key, d_uid, value_type, value, value_num, available_by)
    kp = key.params(Times())  # its period's dates are taken from the key itself below
    return {
        "entity_uid": kp["entity_uid"], "d_uid": d_uid, "d_id": d_id,
        "publisher": f"method:{d.method}", "title": f"{d.method} 1",
        "available_by": available_by, "method": d.method, "method_version": "1",
        "params": lineage.params_json(d.params),
        "key_uid": key.uid, "entity": kp["entity"], "attribute": kp["attribute"],
        "unit": kp["unit"], "definition": kp["definition"], "period": kp["period"],
        "period_start": key.period.start, "period_end": key.period.end,
        "version_id": a.version_id, "idem": a.idem, "value": value, "value_type": value_type,
        "value_num": value_num, "value_hash": digest(value_type, value),
        "inputs": [{"role": r["role"], "position": r["position"], "version_id": r["version_id"]}
                   for r in rows],
    }


def raw_load(mem: Memory, scope: Scope, rows: list[dict[str, Any]]) -> None:
    """Write derivation rows in batches. Per transaction, as ``Memory.derive`` does: the
    tenant clock's recorded_at (``facts.tick``) first, and after the writes the search
    text of the new versions (``indexing.index_facts``, graphmem's own statement)."""
    driver, database = mem.db.driver, mem.db.database

    def work(tx: neo4j.Transaction, batch: list[dict[str, Any]]) -> None:
        gtx = gdb.Tx(tx)
        at = facts.tick(gtx, scope, None)
        tx.run(RAW_DERIVE, rows=batch, recorded_at=at, tenant=scope.tenant,
               scope=scope.id).consume()
        indexing.index_facts(gtx, scope, [r["version_id"] for r in batch])

    for i in range(0, len(rows), RAW_BATCH):
        batch = rows[i:i + RAW_BATCH]
        raw_tx(driver, database, neo4j.WRITE_ACCESS, lambda tx, b=batch: work(tx, b))


# ------------------------------------------------------------------ build


@dataclass
class Built:
    scope: Scope
    vid: dict[str, str]  # logical name -> version id
    names: dict[str, str]  # version id or derivation id (without 'derivation:') -> logical name
    derived_vids: set[str]
    build: dict[str, Any]


def build(mem: Memory, plan: Plan, scope: Scope, *, derive_first: int,
          max_derive_s: float, force: str | None = None) -> Built:
    """Base facts through graphmem; derivations through derive and/or the raw loader.

    ``force``: 'derive' (all through Memory.derive) or 'raw' (all raw), else adaptive.
    """
    info: dict[str, Any] = {"clusters": plan.clusters, "base_facts": len(plan.base),
                            "derivations": len(plan.derivations), "sources": len(plan.sources)}
    t = time.perf_counter()
    for c in range(plan.clusters):
        mem.put_entity(scope, Entity(id=entity_of(c), kind="cluster"))
    for sid in plan.sources:
        mem.record_source(scope, Source(id=sid, kind="feed", authority=Authority.PRIMARY,
                                        publisher=sid, available_by=plan.available[sid]))
    names = list(plan.base)
    report = mem.assert_facts(scope, (plan.base_fact(n) for n in names))
    vid = dict(zip(names, report.version_ids, strict=True))
    avail = {n: plan.base_available(n) for n in names}
    info["base_s"] = time.perf_counter() - t
    log(f"  base: {plan.clusters} entities, {len(plan.sources)} sources, {len(names)} base "
        f"facts in {info['base_s']:.1f}s")

    ds = plan.derivations
    n_derive = len(ds) if force == "derive" else 0 if force == "raw" else min(derive_first, len(ds))
    t = time.perf_counter()
    last = t
    for i, d in enumerate(ds[:n_derive]):
        row = derived_row(scope, d, vid, avail)
        v = mem.derive(scope, method=d.method, method_version="1", params=d.params,
                       inputs=d.role_inputs(vid), output=d.output())
        if v.version_id != row["version_id"] or v.available_by != row["available_by"]:
            raise SystemExit(f"id mismatch for {d.name}: derive gave {v.version_id} "
                             f"({v.available_by}), computed {row['version_id']} "
                             f"({row['available_by']})")
        vid[d.name], avail[d.name] = v.version_id, v.available_by
        if time.perf_counter() - last > 30:
            last = time.perf_counter()
            log(f"  derive {i + 1}/{n_derive} ({(i + 1) / (last - t):.1f}/s)")
    derive_s = time.perf_counter() - t
    info["derive_calls"] = n_derive
    info["derive_s"] = derive_s
    if n_derive:
        rate = n_derive / derive_s
        info["derive_per_s"] = rate
        info["derive_all_extrapolated_s"] = len(ds) / rate
        log(f"  derive: {n_derive} calls in {derive_s:.1f}s ({rate:.1f}/s, "
            f"{derive_s / n_derive * 1e3:.1f} ms/call); all {len(ds)} would take "
            f"~{len(ds) / rate:.0f}s")
    rest = ds[n_derive:]
    if rest and force is None and n_derive and len(ds) / (n_derive / derive_s) <= max_derive_s:
        t = time.perf_counter()
        for d in rest:
            v = mem.derive(scope, method=d.method, method_version="1", params=d.params,
                           inputs=d.role_inputs(vid), output=d.output())
            vid[d.name], avail[d.name] = v.version_id, v.available_by
        info["derive_calls"] += len(rest)
        info["derive_s"] += time.perf_counter() - t
        rest = []
    info["raw_rows"] = len(rest)
    if rest:
        t = time.perf_counter()
        by_layer: dict[int, list[Drv]] = defaultdict(list)
        for d in rest:
            by_layer[d.layer].append(d)
        for layer in sorted(by_layer):  # a layer's inputs are all written before it
            rows = []
            for d in by_layer[layer]:
                row = derived_row(scope, d, vid, avail)
                vid[d.name], avail[d.name] = row["version_id"], row["available_by"]
                rows.append(row)
            raw_load(mem, scope, rows)
        info["raw_s"] = time.perf_counter() - t
        info["raw_per_s"] = len(rest) / info["raw_s"]
        log(f"  raw loader: {len(rest)} derivations in {info['raw_s']:.1f}s "
            f"({info['raw_per_s']:.0f}/s)")
    names_of = {v: k for k, v in vid.items()}
    for d in ds:  # derivation ids too, as impact reports them
        row_id = lineage.derivation_id(d.method, "1", lineage.params_json(d.params),
                                       lineage.normalise_inputs(d.role_inputs(vid)),
                                       KeySpec.of(scope, d.output()).uid)
        names_of[row_id] = f"drv({d.name})"
    return Built(scope, vid, names_of, {vid[d.name] for d in ds}, info)


# ------------------------------------------------------------------ equivalence check


def normalise(report: lineage.ImpactReport, names: dict[str, str]) -> dict[str, Any]:
    """A report in logical names. Paths and the recompute order are left out: where two
    shortest paths or two topological orders tie, networkx picks by insertion order, which
    follows the (per-tenant) ids; ``check_report`` validates them against the plan instead."""
    def n(x: str) -> str:
        return names.get(x, x)

    return {
        "origin": report.origin, "counts": report.counts, "truncated": report.truncated,
        "items": sorted((i.kind, n(i.id), i.depth, i.reason, i.label) for i in report.items),
        "order_set": sorted(n(x) for x in report.recompute_order),
    }


def check_report(report: lineage.ImpactReport, names: dict[str, str], plan: Plan) -> list[str]:
    """Every path is an origin-to-item path of the plan's DAG of the item's depth, and the
    recompute order puts every derivation after the derivations of its inputs."""
    edges: set[tuple[str, str]] = set()
    for name, (_c, _j, srcs) in plan.base.items():
        edges |= {(f"s:{s}", name) for s in srcs}
    for d in plan.derivations:
        edges |= {(x, f"drv({d.name})") for x in d.inputs}
        edges.add((f"drv({d.name})", d.name))
    problems = []
    for i in report.items:
        path = [report.origin] + [names.get(p, p) for p in i.path[1:]]
        if path[-1] != names.get(i.id) or len(path) - 1 != i.depth:
            problems.append(f"path of {names.get(i.id)} ends elsewhere or has the wrong length")
        bad = [(a, b) for a, b in zip(path, path[1:], strict=False) if (a, b) not in edges]
        if bad:
            problems.append(f"path of {names.get(i.id)} uses non-edges {bad}")
    pos = {names.get(x, x): k for k, x in enumerate(report.recompute_order)}
    by_name = {d.name: d for d in plan.derivations}
    for drv, k in pos.items():
        for x in by_name[drv[4:-1]].inputs:
            if f"drv({x})" in pos and pos[f"drv({x})"] > k:
                problems.append(f"{drv} is ordered before its input's drv({x})")
    return problems


def shapes(driver: neo4j.Driver, database: str | None, tenant: str) -> dict[str, Any]:
    def work(tx: neo4j.Transaction) -> dict[str, Any]:
        nodes = tx.run("MATCH (n) WHERE n.tenant = $t "
                       "RETURN labels(n) AS l, keys(n) AS k, count(*) AS c", t=tenant).data()
        rels = tx.run("MATCH (a)-[r]->(b) WHERE a.tenant = $t "
                      "RETURN labels(a) AS a, type(r) AS t, labels(b) AS b, keys(r) AS k, "
                      "count(*) AS c", t=tenant).data()
        return {
            "nodes": sorted((tuple(sorted(r["l"])), tuple(sorted(r["k"])), r["c"]) for r in nodes),
            "rels": sorted((tuple(sorted(r["a"])), r["t"], tuple(sorted(r["b"])),
                            tuple(sorted(r["k"])), r["c"]) for r in rels),
        }

    return raw_tx(driver, database, neo4j.READ_ACCESS, work)


def verify(mem: Memory, seed: int, clusters: int = 3) -> dict[str, Any]:
    """The same small plan built through derive and raw: impact must agree exactly."""
    plan = Plan(clusters * PER_CLUSTER, seed)
    tag = uuid.uuid4().hex[:8]
    log(f"verify: {len(plan.derivations)} derivations built twice (derive / raw)")
    a = build(mem, plan, Scope(tenant=f"bench-lin-verify-derive-{tag}"), derive_first=0,
              max_derive_s=0, force="derive")
    b = build(mem, plan, Scope(tenant=f"bench-lin-verify-raw-{tag}"), derive_first=0,
              max_derive_s=0, force="raw")
    out: dict[str, Any] = {"derivations": len(plan.derivations), "sources": {}, "ok": True}
    sa = shapes(mem.db.driver, mem.db.database, a.scope.tenant)
    sb = shapes(mem.db.driver, mem.db.database, b.scope.tenant)
    out["shapes_equal"] = sa == sb
    if sa != sb:
        out["shapes_derive"], out["shapes_raw"] = sa, sb
    out["ok"] &= sa == sb

    def versions(built: Built) -> list[Any]:
        vs = mem.versions(built.scope, sorted(built.derived_vids))
        return sorted((built.names[v.version_id], v.entity, v.attribute, str(v.value),
                       v.available_by, v.revision, v.authority,
                       tuple((built.names.get(e.source_id.removeprefix("derivation:"), "?"),
                              e.kind, e.authority, e.publisher, e.title, e.available_by)
                             for e in v.sources))
                      for v in vs)

    out["versions_equal"] = versions(a) == versions(b)
    out["ok"] &= out["versions_equal"]
    for sid in plan.sources:
        rep_a, rep_b = mem.impact(a.scope, source_id=sid), mem.impact(b.scope, source_id=sid)
        ra, rb = normalise(rep_a, a.names), normalise(rep_b, b.names)
        problems = check_report(rep_a, a.names, plan) + check_report(rep_b, b.names, plan)
        same = ra == rb and not problems
        out["sources"][sid] = {"equal": same, "items": len(ra["items"]), "counts": ra["counts"],
                               "problems": problems[:5]}
        out["ok"] &= same
    # and the cascade writes the same retractions
    ra = normalise(mem.retract_source(a.scope, "vendor-p10", reason="bench verify"), a.names)
    rb = normalise(mem.retract_source(b.scope, "vendor-p10", reason="bench verify"), b.names)
    out["retract_equal"] = ra == rb
    out["ok"] &= ra == rb
    other = next(sid for sid in plan.sources if sid != "vendor-p10")  # vendor-p1, or confirm
    after_a = normalise(mem.impact(a.scope, source_id=other), a.names)
    after_b = normalise(mem.impact(b.scope, source_id=other), b.names)
    out["ok"] &= after_a == after_b
    log(f"verify: shapes {'equal' if out['shapes_equal'] else 'DIFFER'}, versions "
        f"{'equal' if out['versions_equal'] else 'DIFFER'}, impact from "
        f"{sum(s['equal'] for s in out['sources'].values())}/{len(plan.sources)} sources equal, "
        f"retract {'equal' if out['retract_equal'] else 'DIFFERS'}")
    return out


# ------------------------------------------------------------------ measurements


def baseline(mem: Memory, scope: Scope, sid: str) -> tuple[int, int]:
    """One plain query for the subgraph's edges, then networkx: (reachable, order length)."""
    uid = source_uid(scope, sid)
    rows = raw_tx(mem.db.driver, mem.db.database, neo4j.READ_ACCESS,
                  lambda tx: [(r["a"], r["b"]) for r in tx.run(BASELINE, uid=uid)])
    graph = nx.DiGraph(rows)
    reach = nx.descendants(graph, sid)
    order = list(nx.topological_sort(graph.subgraph(reach | {sid})))
    return len(reach), len(order)


def affected_derived(report: lineage.ImpactReport, built: Built) -> int:
    return sum(1 for i in report.items if i.kind == "fact" and i.id in built.derived_vids
               and i.reason != "survives")


def measure_impact(mem: Memory, built: Built, sid: str, runs: int, budget: float,
                   rec: StatementClock) -> dict[str, Any]:
    scope = built.scope
    total = len(built.derived_vids)
    report = mem.impact(scope, source_id=sid)  # warm: plans, caches, connections
    base_reach, _ = baseline(mem, scope, sid)
    rec.reset()
    t_imp: list[float] = []
    t_base: list[float] = []
    start = time.perf_counter()
    for n in range(runs):
        for which in ((0, 1) if n % 2 == 0 else (1, 0)):
            t = time.perf_counter()
            if which == 0:
                report = mem.impact(scope, source_id=sid)
                t_imp.append(time.perf_counter() - t)
            else:
                base_reach, _ = baseline(mem, scope, sid)
                t_base.append(time.perf_counter() - t)
        if n >= 2 and time.perf_counter() - start > budget:
            break
    stmts = rec.snapshot()
    runs_done = len(t_imp)
    affected = affected_derived(report, built)
    out = {
        "source": sid, "runs": runs_done,
        "affected_derived": affected, "affected_share": affected / total,
        "items": len(report.items), "counts": report.counts,
        "recompute_order": len(report.recompute_order),
        "baseline_reachable": base_reach,
        "impact_p50_ms": pct(t_imp, 50) * 1e3, "impact_p95_ms": pct(t_imp, 95) * 1e3,
        "baseline_p50_ms": pct(t_base, 50) * 1e3, "baseline_p95_ms": pct(t_base, 95) * 1e3,
        "ratio_p50": pct(t_imp, 50) / pct(t_base, 50),
        "statements": {k: {"calls_per_run": v["calls"] / runs_done,
                           "ms_per_run": v["seconds"] / runs_done * 1e3,
                           "rows_per_run": v["rows"] / runs_done} for k, v in stmts.items()},
    }
    db_ms = sum(v["ms_per_run"] for v in out["statements"].values())
    out["round_trips_per_run"] = sum(v["calls_per_run"] for k, v in out["statements"].items()
                                     if not k.startswith("("))  # (begin)/(commit) ride along
    out["statements_ms_per_run"] = db_ms
    out["python_ms_per_run"] = sum(t_imp) / runs_done * 1e3 - db_ms
    log(f"    impact {sid}: {affected} derived affected ({affected / total:.1%}), "
        f"p50 {out['impact_p50_ms']:.0f}ms p95 {out['impact_p95_ms']:.0f}ms; baseline p50 "
        f"{out['baseline_p50_ms']:.0f}ms p95 {out['baseline_p95_ms']:.0f}ms "
        f"({runs_done} runs, {out['round_trips_per_run']:.0f} round trips, "
        f"statements {db_ms:.0f}ms, python {out['python_ms_per_run']:.0f}ms)")
    return out


def profile_query(driver: neo4j.Driver, database: str | None, query: str,
                  params: dict[str, Any]) -> dict[str, Any]:
    with driver.session(database=database, default_access_mode=neo4j.READ_ACCESS) as s:
        t = time.perf_counter()
        result = s.run("PROFILE " + query, params)
        for _ in result:  # PROFILE needs the rows pulled, not discarded
            pass
        summary = result.consume()
        wall = time.perf_counter() - t
    plan = summary.profile or {}
    ops = [(d, n.get("operatorType", "?").split("@")[0], n.get("dbHits", 0), n.get("rows", 0),
            str(n.get("args", {}).get("Details", ""))[:100]) for d, n in plan_operators(plan)]
    return {"db_hits": sum(o[2] for o in ops), "wall_ms": wall * 1e3, "ops": ops}


def server_vs_client(mem: Memory, name: str, params: dict[str, Any]) -> dict[str, float]:
    """One statement as graphmem runs it (records to dicts, as ``Tx.run``) and with
    every column forced and aggregated on the server (one row back): the difference is Bolt
    transfer + decoding."""
    query = QUERIES[name]
    with mem.db.driver.session(database=mem.db.database,
                               default_access_mode=neo4j.READ_ACCESS) as s:
        t = time.perf_counter()
        res = s.run(query, params)
        keys = res.keys()
        rows = [dict(r) for r in res]
        full = time.perf_counter() - t
        forced = ("CALL { " + query + " } RETURN count(*) AS n, "
                  + ", ".join(f"count({k}) AS c{i}" for i, k in enumerate(keys)))
        t = time.perf_counter()
        s.run(forced, params).consume()
        server = time.perf_counter() - t
    return {"rows": len(rows), "full_s": full, "server_only_s": server}


def path_costs(mem: Memory, built: Built, sid: str) -> dict[str, Any]:
    """impact's per-item ``nx.shortest_path(graph, origin, node)`` against one BFS, on the
    same downstream DAG (fetched with the baseline query)."""
    uid = source_uid(built.scope, sid)
    rows = raw_tx(mem.db.driver, mem.db.database, neo4j.READ_ACCESS,
                  lambda tx: [(r["a"], r["b"]) for r in tx.run(BASELINE, uid=uid)])
    graph = nx.DiGraph(rows)
    nodes = [n for n in graph if n != sid]
    sample = nodes[:: max(1, len(nodes) // 1000)][:1000]
    t = time.perf_counter()
    for n in sample:
        nx.shortest_path(graph, sid, n)
    per_node = (time.perf_counter() - t) / len(sample)
    t = time.perf_counter()
    nx.single_source_shortest_path(graph, sid)
    one_bfs = time.perf_counter() - t
    return {"nodes": len(nodes), "origin_out_degree": graph.out_degree(sid),
            "per_node_shortest_path_ms": per_node * 1e3,
            "all_nodes_per_node_s": per_node * len(nodes),
            "single_source_shortest_path_s": one_bfs}


def profile_impact(mem: Memory, built: Built, sid: str, rec: StatementClock) -> dict[str, Any]:
    """PROFILE every statement one impact run issues; cProfile its Python side."""
    rec.calls = []
    prof = cProfile.Profile()
    t = time.perf_counter()
    prof.enable()
    mem.impact(built.scope, source_id=sid)
    prof.disable()
    wall = time.perf_counter() - t
    calls, rec.calls = rec.calls, None
    per: dict[str, dict[str, Any]] = {}
    worst: dict[str, Any] | None = None
    for name, params in calls:
        p = profile_query(mem.db.driver, mem.db.database, QUERIES[name], params)
        s = per.setdefault(name, {"calls": 0, "db_hits": 0, "profile_ms": 0.0,
                                  "max_param_list": 0})
        s["calls"] += 1
        s["db_hits"] += p["db_hits"]
        s["profile_ms"] += p["wall_ms"]
        s["max_param_list"] = max([s["max_param_list"]] + [len(v) for v in params.values()
                                                           if isinstance(v, list)])
        if worst is None or p["db_hits"] > worst["db_hits"]:
            worst = {"statement": name, **p}
    stream = io.StringIO()
    stats = pstats.Stats(prof, stream=stream)
    stats.sort_stats("tottime")
    top = []
    for func, (_cc, nc, tt, ct, _callers) in sorted(stats.stats.items(),  # type: ignore[attr-defined]
                                                     key=lambda kv: -kv[1][2])[:12]:
        top.append({"function": f"{Path(func[0]).name}:{func[1]}({func[2]})", "calls": nc,
                    "tottime_s": tt, "cumtime_s": ct})
    cum = []
    for func, (_cc, nc, _tt, ct, _callers) in stats.stats.items():  # type: ignore[attr-defined]
        fname = f"{Path(func[0]).name}:{func[1]}({func[2]})"
        if func[2] in ("shortest_path", "_decide", "_walk", "topological_sort", "run",
                       "impact", "bidirectional_shortest_path", "__init__") and (
                "lineage.py" in func[0] or "networkx" in func[0] or "db.py" in func[0]):
            cum.append({"function": fname, "calls": nc, "cumtime_s": ct})
    cum.sort(key=lambda x: -x["cumtime_s"])
    split: dict[str, dict[str, float]] = {}
    for name, params in calls:
        if name == "lineage.downstream":
            x = server_vs_client(mem, name, params)
            agg = split.setdefault(name, {"rows": 0, "full_s": 0.0, "server_only_s": 0.0})
            for k, v in x.items():
                agg[k] += v
    worst_ops = None
    if worst is not None:
        worst_ops = [f"{'  ' * d}{op} hits={h} rows={r} {det}" for d, op, h, r, det in worst["ops"]]
    return {"source": sid, "wall_s_under_cprofile": wall, "statements": per,
            "worst_statement": worst and worst["statement"], "worst_plan": worst_ops,
            "python_top_tottime": top, "python_cumulative": cum[:10],
            "server_vs_client": split, "paths": path_costs(mem, built, sid)}


# ------------------------------------------------------------------ one size


def run_size(mem: Memory, size: int, args: argparse.Namespace, rec: StatementClock) -> dict[str, Any]:
    plan = Plan(size, args.seed)
    scope = Scope(tenant=f"bench-lin-{size}-{uuid.uuid4().hex[:8]}")
    log(f"size {size}: tenant {scope.tenant}, {plan.clusters} clusters x {PER_CLUSTER} derived, "
        f"max fan-out {max(plan.fanout.values())}, max fan-in "
        f"{max(len(d.inputs) for d in plan.derivations)}")
    built = build(mem, plan, scope, derive_first=args.derive_first,
                  max_derive_s=args.max_derive_seconds)
    out: dict[str, Any] = {"size": size, "tenant": scope.tenant, "build": built.build,
                           "derived_versions": len(built.derived_vids),
                           "max_fanout": max(plan.fanout.values()),
                           "depth": len(LAYERS), "impact": {}}
    for sid in ("vendor-p10", "vendor-p1", "vendor-one"):
        out["impact"][sid] = measure_impact(mem, built, sid, args.runs, args.budget, rec)
    if args.survivors:
        out["impact"]["confirm"] = measure_impact(mem, built, "confirm", 3, args.budget, rec)
    log("  profiling one impact run of vendor-p10")
    out["profile"] = profile_impact(mem, built, "vendor-p10", rec)
    rec.reset()
    t = time.perf_counter()
    report = mem.retract_source(scope, "vendor-p10", reason="bench: retraction cascade")
    wall = time.perf_counter() - t
    stm = rec.snapshot()
    out["retract"] = {"source": "vendor-p10", "wall_s": wall,
                      "derivations_retracted": sum(1 for i in report.items
                                                   if i.kind == "derivation"
                                                   and i.reason == "invalid"),
                      "statements": stm}
    log(f"  retract_source vendor-p10: {wall:.2f}s, "
        f"{out['retract']['derivations_retracted']} derivations retracted")
    return out


# ------------------------------------------------------------------ report


def fmt(results: list[dict[str, Any]], verified: dict[str, Any] | None) -> str:
    lines = []
    if verified is not None:
        lines.append(f"Raw loader check ({verified['derivations']} derivations built through "
                     f"Memory.derive and through the raw loader): "
                     f"{'IDENTICAL' if verified['ok'] else 'DIFFERENT'} (shapes "
                     f"{verified['shapes_equal']}, versions {verified['versions_equal']}, "
                     f"impact from {len(verified['sources'])} sources "
                     f"{all(s['equal'] for s in verified['sources'].values())}, retract "
                     f"{verified['retract_equal']})")
        lines.append("")
    lines.append("Build")
    for r in results:
        b = r["build"]
        ex = (f"derive {b['derive_calls']} calls at {b['derive_per_s']:.1f}/s "
              f"({1e3 / b['derive_per_s']:.0f} ms/call) -> all {b['derivations']} through derive "
              f"~{b['derive_all_extrapolated_s'] / 60:.1f} min" if b.get("derive_per_s") else "")
        raw = (f"; raw loader {b['raw_rows']} at {b['raw_per_s']:.0f}/s ({b['raw_s']:.1f}s)"
               if b.get("raw_rows") else "")
        lines.append(f"  {r['derived_versions']:>7} derived ({b['clusters']} clusters, "
                     f"{b['base_facts']} base facts, {b['sources']} sources, depth {r['depth']}, "
                     f"max fan-out {r['max_fanout']}): {ex}{raw}")
    lines.append("")
    head = (f"{'derived':>7} {'source':<11} {'affected':>8} {'share':>6} {'reach':>6} | "
            f"{'impact p50':>10} {'p95':>7} | {'base p50':>8} {'p95':>7} | {'x base':>6} | "
            f"{'runs':>4} {'trips':>5} {'stmt ms':>7} {'py ms':>7}")
    lines.append("Impact from a source (ms; baseline = one plain Cypher edge fetch + networkx "
                 "descendants/topological_sort, interleaved)")
    lines.append("  affected = derived versions impact reports invalid; reach = nodes downstream "
                 "(facts + derivations, what the baseline fetches);")
    lines.append("  trips = round trips per impact; stmt ms / py ms = mean per impact in graphmem's "
                 "statements / in Python")
    lines.append(head)
    lines.append("-" * len(head))
    for r in results:
        for sid, m in r["impact"].items():
            lines.append(
                f"{r['derived_versions']:>7} {sid:<11} {m['affected_derived']:>8} "
                f"{m['affected_share']:>6.1%} {m['baseline_reachable']:>6} | "
                f"{m['impact_p50_ms']:>10.0f} "
                f"{m['impact_p95_ms']:>7.0f} | {m['baseline_p50_ms']:>8.0f} "
                f"{m['baseline_p95_ms']:>7.0f} | {m['ratio_p50']:>6.2f} | {m['runs']:>4} "
                f"{m['round_trips_per_run']:>5.0f} {m['statements_ms_per_run']:>7.0f} "
                f"{m['python_ms_per_run']:>7.0f}")
    lines.append("")
    lines.append("Retraction cascade (mem.retract_source of vendor-p10, once, one transaction)")
    for r in results:
        x = r["retract"]
        lines.append(f"  {r['derived_versions']:>7} derived: {x['wall_s']:.2f}s, "
                     f"{x['derivations_retracted']} derivations retracted")
    lines.append("")
    lines.append("Targets (reported, not asserted):")
    for r in results:
        m = r["impact"]["vendor-p10"]
        lines.append(f"  {r['derived_versions']:>7} derived, vendor-p10: impact p50 "
                     f"{m['impact_p50_ms']:.0f}ms vs baseline {m['baseline_p50_ms']:.0f}ms "
                     f"[{'ok' if m['ratio_p50'] <= 1 else 'MISS'} no slower]"
                     + (f"; [{'ok' if m['impact_p50_ms'] < 1000 else 'MISS'} < 1 s at 100k]"
                        if r["size"] >= 100_000 else ""))
    if len(results) > 1:
        small, big = results[0], results[-1]
        for sid in ("vendor-one", "vendor-p1"):
            a, b = small["impact"][sid], big["impact"][sid]
            lines.append(f"  {sid}: {small['derived_versions']} -> {big['derived_versions']} "
                         f"derived, affected {a['affected_derived']} -> {b['affected_derived']}: "
                         f"impact p50 {a['impact_p50_ms']:.0f} -> {b['impact_p50_ms']:.0f}ms "
                         f"({b['impact_p50_ms'] / a['impact_p50_ms']:.2f}x)")
        a, b = small["impact"]["vendor-p10"], big["impact"]["vendor-p1"]
        lines.append(f"  same affected set on a 10x graph: {small['derived_versions']}/vendor-p10 "
                     f"({a['affected_derived']}) {a['impact_p50_ms']:.0f}ms vs "
                     f"{big['derived_versions']}/vendor-p1 ({b['affected_derived']}) "
                     f"{b['impact_p50_ms']:.0f}ms ({b['impact_p50_ms'] / a['impact_p50_ms']:.2f}x)")
    for r in results:
        p = r["profile"]
        lines.append("")
        lines.append(f"Where impact's time goes, {r['derived_versions']} derived, "
                     f"{p['source']} (one run; PROFILE of each statement it issued):")
        m = r["impact"][p["source"]]
        for name, s in sorted(p["statements"].items(), key=lambda kv: -kv[1]["db_hits"]):
            ms = m["statements"].get(name, {}).get("ms_per_run", float("nan"))
            lines.append(f"  {name:<26} {s['calls']:>3} calls  {ms:>8.0f} ms/run  "
                         f"{s['db_hits']:>10} db hits  largest id list {s['max_param_list']}")
        for name, x in p["server_vs_client"].items():
            lines.append(f"  {name}: {x['rows']} rows; as graphmem fetches them {x['full_s']:.2f}s, "
                         f"same work aggregated server-side (1 row back) {x['server_only_s']:.2f}s "
                         f"-> {1 - x['server_only_s'] / x['full_s']:.0%} is Bolt transfer + decoding")
        pc = p["paths"]
        lines.append(f"  paths: nx.shortest_path per item {pc['per_node_shortest_path_ms']:.3f} ms x "
                     f"{pc['nodes']} nodes = {pc['all_nodes_per_node_s']:.2f}s (origin out-degree "
                     f"{pc['origin_out_degree']}); one nx.single_source_shortest_path "
                     f"{pc['single_source_shortest_path_s']:.2f}s")
        lines.append(f"  python side (cProfile run {p['wall_s_under_cprofile']:.1f}s wall), "
                     f"cumulative:")
        for f in p["python_cumulative"][:6]:
            lines.append(f"    {f['function']:<58} {f['calls']:>8} calls {f['cumtime_s']:>8.2f}s")
        lines.append("  python top by own time:")
        for f in p["python_top_tottime"][:6]:
            lines.append(f"    {f['function']:<58} {f['calls']:>8} calls {f['tottime_s']:>8.2f}s")
        if p["worst_plan"]:
            lines.append(f"  PROFILE of the heaviest call ({p['worst_statement']}):")
            lines += [f"    {ln}" for ln in p["worst_plan"]]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="10000,100000", help="derived versions per size")
    ap.add_argument("--runs", type=int, default=10, help="impact runs per source")
    ap.add_argument("--budget", type=float, default=240.0,
                    help="stop a source's runs (after 3) once this many seconds are spent")
    ap.add_argument("--derive-first", type=int, default=1000,
                    help="derivations built through Memory.derive and timed")
    ap.add_argument("--max-derive-seconds", type=float, default=600.0,
                    help="build all through derive when extrapolated under this, else raw")
    ap.add_argument("--survivors", action="store_true",
                    help="also time impact from `confirm` (every fact it reaches survives)")
    ap.add_argument("--no-verify", action="store_true", help="skip the derive/raw check")
    ap.add_argument("--verify-clusters", type=int, default=3,
                    help=f"clusters ({PER_CLUSTER} derivations each) the derive/raw check builds")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--json", nargs="?", const="-", default=None, metavar="PATH",
                    help="write results as JSON to PATH (or to stdout instead of the table)")
    args = ap.parse_args()
    if not os.environ.get("GRAPHMEM_NEO4J_URI"):
        sys.exit("set GRAPHMEM_NEO4J_URI to a dedicated server, e.g. bolt://127.0.0.1:7689")
    rec = StatementClock()
    results = []
    with Memory.from_env() as mem:
        mem.migrate()
        verified = None if args.no_verify else verify(mem, args.seed, args.verify_clusters)
        if verified is not None and not verified["ok"]:
            log("WARNING: the raw loader does not reproduce Memory.derive; figures of raw-built "
                "graphs are suspect")
        for size in [int(s) for s in args.sizes.split(",") if s.strip()]:
            results.append(run_size(mem, size, args, rec))
            if args.json and args.json != "-":  # keep partial results of long runs
                Path(args.json).write_text(json.dumps({"verify": verified, "results": results},
                                                      indent=2, default=str))
    doc = {"graphmem": graphmem.__file__, "neo4j_uri": os.environ["GRAPHMEM_NEO4J_URI"],
           "cpus": os.cpu_count(), "layers": LAYERS, "base_per_cluster": BASE,
           "fanout_cap": FANOUT, "verify": verified, "results": results}
    if args.json == "-":
        print(json.dumps(doc, indent=2, default=str))
        return
    print(fmt(results, verified))
    if args.json:
        Path(args.json).write_text(json.dumps(doc, indent=2, default=str))
        print(f"\nJSON written to {args.json}")


if __name__ == "__main__":
    main()
