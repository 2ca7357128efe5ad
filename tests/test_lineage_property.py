"""Property: impact on random derivation DAGs equals what networkx finds on the same
graph held in Python, and the recompute order is a topological order of it."""

from __future__ import annotations

import datetime as dt
import uuid

import networkx as nx
from hypothesis import HealthCheck, example, given, settings
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


@st.composite
def rederived_dags(draw):
    """Base facts evidenced by 1-2 sources; derivations each writing a new derived fact
    or, again, an earlier derived fact (same key and value, from base facts only, so no
    cycle): a derived fact then has several derivations. Two sources retracted in turn."""
    base = draw(st.lists(st.sets(st.sampled_from(SOURCES), min_size=1, max_size=2),
                         min_size=1, max_size=4))
    steps = []  # (input fact indices, index of the derived fact it writes)
    outputs = 0
    for _ in range(draw(st.integers(1, 7))):
        again = outputs and draw(st.booleans())
        if again:
            inputs = draw(st.sets(st.integers(0, len(base) - 1), min_size=1, max_size=2))
            steps.append((inputs, draw(st.integers(0, outputs - 1))))
        else:
            inputs = draw(st.sets(st.integers(0, len(base) + outputs - 1), min_size=1, max_size=3))
            steps.append((inputs, outputs))
            outputs += 1
    retracted = draw(st.permutations(SOURCES))[:2]
    return base, steps, retracted


def dead_facts(base: list[set[str]], steps: list[tuple[set[int], int]], gone: set[str]) -> set[int]:
    """The facts (base i, then derived len(base) + j) with no live evidence once the
    sources ``gone`` are retracted: a base fact when all its sources are gone, a
    derivation when one of its inputs is dead, a derived fact when all its derivations
    are (steps come in an order where inputs precede their consumers)."""
    dead = {i for i, sources in enumerate(base) if sources <= gone}
    outputs = {out for _, out in steps}
    for out in sorted(outputs):  # a derived fact's derivations only use earlier facts
        derivations = [inputs for inputs, o in steps if o == out]
        if all(inputs & dead for inputs in derivations):
            dead.add(len(base) + out)
    return dead


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rederived_dags())
@example(case=([{"S0"}, {"S1"}], [({0}, 0), ({1}, 0)], ["S0", "S1"]))  # one derivation per source
def test_successive_retractions_leave_what_the_model_says(mem, case):
    """Retracting one source, then another, through the cascade: a fact that lost its
    last live evidence (a derived fact: its last live derivation) reads not_found, every
    other one stays active. The sources are public at one instant, so that a derived
    fact written again lands on its one version (a later-public derivation of the same
    value would be a version of its own)."""
    base, steps, retracted = case
    scope = Scope(tenant=f"prop-{uuid.uuid4().hex[:12]}")
    mem.put_entity(scope, Entity(id="E"))
    for sid in SOURCES:
        mem.record_source(scope, Source(id=sid, kind="doc", authority="primary",
                                        available_by=dt.datetime(2025, 1, 1, tzinfo=UTC)))
    ids = [mem.assert_fact(scope, FactIn(entity="E", attribute=f"b{i}", value=i, period=Q,
                                         sources=tuple(sorted(sources)))).version_id
           for i, sources in enumerate(base)]
    attributes = [f"b{i}" for i in range(len(base))]
    for j, (inputs, out) in enumerate(steps):
        v = mem.derive(scope, method=f"m{j}", method_version="1", params={},
                       inputs={f"in{k}": ids[k] for k in sorted(inputs)},
                       output=FactIn(entity="E", attribute=f"d{out}", value=out, period=Q))
        if len(base) + out == len(ids):
            ids.append(v.version_id)
            attributes.append(f"d{out}")
        assert v.version_id == ids[len(base) + out]
    reported: set[str] = set()
    for sid in retracted:
        report = mem.retract_source(scope, sid, reason="withdrawn")
        reported |= {i.id for i in report.items if i.kind == "fact" and i.reason == "invalid"}
    dead = dead_facts(base, steps, set(retracted))
    late = dt.datetime(2026, 1, 1, tzinfo=UTC)
    status = {n: mem.as_of(scope, entity="E", attribute=a, cutoff=late).status
              for n, a in enumerate(attributes)}
    assert {n for n, s in status.items() if s == "not_found"} == dead
    assert all(s == "active" for n, s in status.items() if n not in dead)
    assert reported == {ids[n] for n in dead}
