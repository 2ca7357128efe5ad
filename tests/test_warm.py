"""Warming (graphmem.warm) makes the usual first calls for real in tenants of its own and
writes nothing, whatever a call tries; a Memory that warms in the background answers its
own calls meanwhile and stops warming when closed. How much a warmed first call gains is
a benchmark figure (bench/bench_coldstart.py), not a test."""

from __future__ import annotations

import datetime as dt
import time

from graphmem import Entity, Scope, warm


def test_warming_makes_the_calls_and_writes_nothing(migrated):
    wrote = []

    def tries_to_write(mem):  # a call that writes: it runs, and is rolled back
        wrote.append(mem.put_entity(Scope(tenant="warm"), Entity(id="e1", name="written")))

    with migrated.connect() as mem:
        chosen = {name: call for name, call in warm.SERVER_CALLS.items()
                  if name.startswith(("as_of (", "entity (", "store namespace search (", "a stored key"))}
        chosen["a write"] = tries_to_write
        assert set(warm.warm(mem.db.driver, "neo4j", calls=chosen)) == set(chosen)  # a few: they take time
        assert len(wrote) == 1  # the write ran to its end ...
        for tenant in ("warm", "graphmem-warm", "gw"):  # ... and nothing of it, or of any call, is there
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
