"""Warming plans (graphmem.warm) plans the usual first calls and does nothing else: every
statement goes as EXPLAIN, so nothing is read or written, and a Memory that warms in the
background answers its own calls meanwhile and stops warming when closed. How much a
warmed first call gains is a benchmark figure (bench/bench_coldstart.py), not a test."""

from __future__ import annotations

import datetime as dt
import time

from graphmem import Entity, Scope, warm


def test_warming_runs_every_call_as_explain_and_writes_nothing(migrated):
    with migrated.connect() as mem:
        chosen = {name: call for name, call in warm.CALLS.items() if name.startswith(("as_of (", "entity ("))}
        assert set(warm.warm(mem.db.driver, "neo4j", calls=chosen)) == set(chosen)  # a few: planning takes time
        assert all(text.startswith("EXPLAIN ") for text in warm.PLANNED.values())
        for tenant in ("warm", "graphmem-warm"):
            assert not any(mem.counts(Scope(tenant=tenant)).values())
        clocks = mem.db.read_all("admin.counts", tenant="warm", scope=Scope(tenant="warm").id)
        assert clocks == [dict.fromkeys(clocks[0], 0)]


def test_a_warming_memory_answers_meanwhile_and_stops_on_close(migrated, scope):
    with migrated.connect(warm=True) as mem:
        mem.put_entity(scope, Entity(id="e1", name="Acme"))
        assert mem.entity(scope, "e1").name == "Acme"
        assert mem.as_of(scope, entity="e1", attribute="a", cutoff=dt.datetime.now(dt.UTC)).status == "not_found"
        thread = mem._warmer._thread
    deadline = time.monotonic() + 10
    while thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not thread.is_alive()
