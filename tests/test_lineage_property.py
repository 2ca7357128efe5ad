"""Property: impact on random derivation DAGs equals what networkx finds on the same
graph held in Python, and the recompute order is a topological order of it."""

from __future__ import annotations

import datetime as dt
import uuid

import networkx as nx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from graphmem import Entity, FactIn, Period, Scope, Source

UTC = dt.UTC
Q = Period(end=dt.date(2024, 12, 31))
SOURCES = ["S0", "S1", "S2"]


@st.composite
def dags(draw):
    """Base facts evidenced by 1-2 sources; derived facts using 1-3 earlier facts."""
    base = draw(st.lists(st.sets(st.sampled_from(SOURCES), min_size=1, max_size=2),
                         min_size=1, max_size=5))
    derived = []
    for i in range(draw(st.integers(0, 7))):
        n_before = len(base) + i
        derived.append(draw(st.sets(st.integers(0, n_before - 1), min_size=1, max_size=3)))
    origin = draw(st.sampled_from(SOURCES))
    return base, derived, origin


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(dags())
def test_impact_matches_networkx(mem, case):
    base, derived, origin = case
    scope = Scope(tenant=f"prop-{uuid.uuid4().hex[:12]}")
    mem.put_entity(scope, Entity(id="E"))
    for i, sid in enumerate(SOURCES):
        mem.record_source(scope, Source(id=sid, kind="doc", authority="primary",
                                        available_by=dt.datetime(2025, 1, 1 + i, tzinfo=UTC)))
    ids: list[str] = []
    model = nx.DiGraph()  # the same graph, held in Python: source -> fact -> derived fact
    for i, sources in enumerate(base):
        v = mem.assert_fact(scope, FactIn(entity="E", attribute=f"b{i}", value=i, period=Q,
                                          sources=tuple(sorted(sources))))
        ids.append(v.version_id)
        for s in sources:
            model.add_edge(f"s:{s}", v.version_id)
    for j, inputs in enumerate(derived):
        v = mem.derive(scope, method=f"m{j}", method_version="1", params={},
                       inputs={f"in{k}": ids[k] for k in sorted(inputs)},
                       output=FactIn(entity="E", attribute=f"d{j}", value=j, period=Q))
        ids.append(v.version_id)
        for k in inputs:
            model.add_edge(ids[k], v.version_id)

    # Expected fates, by the rule: a fact dies when all its evidence is dead; a derived
    # fact's one piece of evidence is its derivation, dead when any input is dead.
    dead = {f"s:{origin}"}
    for node in nx.topological_sort(model):
        if node.startswith("s:"):
            continue
        parents = set(model.predecessors(node))
        is_derived = all(not p.startswith("s:") for p in parents)
        if (is_derived and parents & dead) or (not is_derived and parents <= dead):
            dead.add(node)
    descendants = nx.descendants(model, f"s:{origin}") if f"s:{origin}" in model else set()

    report = mem.impact(scope, source_id=origin)
    facts = {i.id: i.reason for i in report.items if i.kind == "fact"}
    assert set(facts) <= descendants
    assert {v for v, r in facts.items() if r == "invalid"} == dead - {f"s:{origin}"}
    assert all(r in ("invalid", "survives") for r in facts.values())

    # The recompute order is topological in the Python graph.
    out_of = {}
    for item in report.items:
        if item.kind == "fact" and len(item.path) >= 2 and item.path[-2].startswith("drv_"):
            out_of[item.path[-2]] = item.id
    position = {out_of.get(d): n for n, d in enumerate(report.recompute_order)}
    for a, b in model.edges:
        if a in position and b in position and a is not None:
            assert position[a] < position[b]
    assert len(report.recompute_order) == sum(1 for i in report.items
                                             if i.kind == "derivation" and i.reason == "invalid")
