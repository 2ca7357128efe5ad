"""Property test: a search that stops reading early returns the exhaustive page.

``Memory.search`` evaluates the hits the full-text index ranks first and stops once
``limit`` of them rank strictly above anything left (graphmem/search.py, *Early
termination*). Hypothesis draws small worlds in which that bound is easy to get wrong:
sources of every authority published on few days (ties of availability), text scores
that differ by how often a source's title repeats the query word, fact keys restated or
contradicted by sources that score lower but were published later (a key ranks by its
best matched version kept, not always its latest), experiences, candidates, task states
and a retracted source, about two entities. Then it asks for a small page at a random
cutoff (with random types, entity and evidence requirement) and compares it, hit by hit
and rank by rank, with the first hits of an exhaustive search (a limit above the number
of matches, which evaluates everything).
"""

from __future__ import annotations

import datetime as dt
import uuid
from decimal import Decimal

from hypothesis import HealthCheck, event, given, note, settings
from hypothesis import strategies as st
from world import Q1, Q2, Q3, World

from graphmem import Authority, ExperienceIn, Require, Scope, TaskStateIn

DAY0 = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
AUTHORITIES = ("primary", "primary", "primary", "inference", "user_correction")
ATTRIBUTES = ("revenue", "margin")
PERIODS = (Q1, Q2, Q3)
ENTITIES = ("acme", "globex")
# what a search may ask besides its text: the types, an entity, an evidence requirement
options = st.fixed_dictionaries({
    "types": st.none() | st.lists(st.sampled_from(("fact", "experience", "task_state")),
                                  min_size=1, unique=True),
    "entity": st.none() | st.sampled_from(ENTITIES),
    "require": st.none() | st.just(Require(min_authority=Authority.PRIMARY)),
})

sources = st.lists(
    st.tuples(st.sampled_from(AUTHORITIES), st.integers(0, 3), st.integers(1, 3)),
    min_size=1, max_size=4)  # (authority, day published, times the title says "widget")
facts = st.lists(
    st.tuples(st.sampled_from(ENTITIES), st.sampled_from(ATTRIBUTES), st.sampled_from(PERIODS),
              st.integers(1, 2), st.integers(0, 3)),  # (entity, attribute, period, value, source)
    min_size=0, max_size=14)
experiences = st.lists(  # (times it says "widget", source, observed (else a candidate), about)
    st.tuples(st.integers(1, 4), st.integers(0, 3), st.booleans(), st.sampled_from(ENTITIES)),
    max_size=5)
task_states = st.lists(st.tuples(st.integers(0, 1), st.integers(1, 4)), max_size=3)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(srcs=sources, rows=facts, exps=experiences, tasks=task_states,
       retract=st.none() | st.integers(0, 3), limit=st.integers(1, 3),
       cutoff_day=st.integers(0, 4), opts=options)
def test_an_early_stop_gives_the_exhaustive_page(mem, srcs, rows, exps, tasks, retract, limit,
                                                 cutoff_day, opts):
    w = World(mem, Scope(tenant=f"search-prop-{uuid.uuid4().hex[:12]}"))
    for i, (authority, day, words) in enumerate(srcs):
        w.source(f"s{i}", DAY0 + dt.timedelta(days=day), authority=authority,
                 title=" ".join(["widget"] * words))
    if rows:
        mem.assert_facts(w.scope, [
            w.fact_in(Decimal(value), f"s{src % len(srcs)}", entity=entity, attribute=attribute,
                      period=period)
            for entity, attribute, period, value, src in rows])
    for words, src, observed, about in exps:
        mem.remember_experience(w.scope, ExperienceIn(
            trigger=" ".join(["widget"] * words) + " jam", outcome="cleared" if observed else None,
            evidence=(f"s{src % len(srcs)}",), entities=(about,)))
    for task, words in tasks:
        mem.save_task_state(w.scope, TaskStateIn(task_id=f"task-{task}",
                                                 goal=" ".join(["widget"] * words)))
    if retract is not None:
        mem.retract_source(w.scope, f"s{retract % len(srcs)}", reason="withdrawn")
    cutoff = DAY0 + dt.timedelta(days=cutoff_day, hours=12)
    bounded = w.search("widget", limit=limit, cutoff=cutoff, **opts)
    everything = w.search("widget", limit=1000, cutoff=cutoff, **opts)
    note(f"bounded: {[(h.memory_id, h.rank.why) for h in bounded.hits]}")
    note(f"exhaustive: {[(h.memory_id, h.rank.why) for h in everything.hits]}")
    event(f"stopped early: {bounded.explain.unevaluated > 0}")
    assert everything.explain.unevaluated == 0
    assert [(h.memory_id, h.memory_ids, h.status, h.rank) for h in bounded.hits] == [
        (h.memory_id, h.memory_ids, h.status, h.rank) for h in everything.hits[:limit]]
    assert bounded.explain.matched == everything.explain.matched
