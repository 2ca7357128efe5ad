"""Property test: a screen is, per entity, the model's as-of read under the frame rule.

Hypothesis draws sources (a company's own filings or a newswire, primary or inference)
and writes to the keys of three companies - durations and instants around CY2024Q3, some
of the frame, some not (a neighbouring quarter, 60 days, nine months, an instant past
the halfway line) - with invalidations and retractions, against Neo4j and against the
pure-Python model (tests/model.py). Then at random (cutoff, known_at) it screens
CY2024Q3 and CY2024Q3I, over every entity that had reported and over a given list, and
checks each entity's row against the model: the universe (an entity with a version
recorded by known_at and public by the cutoff), its candidate keys (the frame's keys the
model reads as active or conflicted), the best-fitting one, and that key's status and
values. Within each frame the drawn periods fit at different distances, so the choice
never falls to the tie-breaks (tested by example in test_screen.py).
"""

from __future__ import annotations

import datetime as dt
import uuid
from decimal import Decimal

import pytest
from hypothesis import HealthCheck, event, given, note, settings
from hypothesis import strategies as st
from model import Model
from world import TX0, TxClock

from graphmem import Authority, Entity, FactIn, Period, Scope, Source
from graphmem.screen import Selection

UTC = dt.UTC
BASE = dt.datetime(2024, 10, 1, tzinfo=UTC)  # day 0 of the sources' publication times
ENTITIES = ("cik:1", "cik:2", "cik:3")
ATTRIBUTE = "us-gaap:Revenues"


def P(start: str | None, end: str) -> Period:
    return Period(start=dt.date.fromisoformat(start) if start else None, end=dt.date.fromisoformat(end))


PERIODS = (
    P("2024-07-01", "2024-09-30"),  # CY2024Q3, distance 0
    P("2024-06-30", "2024-09-28"),  # a 13-week quarter, 3
    P("2024-08-01", "2024-09-30"),  # 61 days, 31
    P("2024-08-04", "2024-11-02"),  # a quarter a month off, 67
    P("2024-04-01", "2024-06-30"),  # CY2024Q2
    P("2024-08-02", "2024-09-30"),  # 60 days: no frame
    P("2024-01-01", "2024-09-30"),  # nine months: no frame
    P(None, "2024-09-30"),  # CY2024Q3I, 0
    P(None, "2024-09-28"),  # 2
    P(None, "2024-08-16"),  # 45
    P(None, "2024-11-15"),  # 46, halfway: still Q3
    P(None, "2024-11-16"),  # CY2024Q4I
    P(None, "2024-08-15"),  # CY2024Q2I (halfway goes to the earlier)
)
FRAMES = ("CY2024Q3", "CY2024Q3I")


@pytest.fixture(scope="module")
def clocked(migrated):
    clock = TxClock()
    with migrated.connect(clock=clock) as mem:
        yield mem, clock


sources = st.tuples(st.just("source"), st.integers(0, 2), st.sampled_from(["own", "wire", "wire"]),
                    st.sampled_from(["primary", "primary", "inference"]), st.integers(0, 40))
# the frames' own periods twice as often as the others; two values, so that they collide
assertion = st.tuples(st.just("assert"), st.integers(0, 2),
                      st.sampled_from([0, 0, 1, 1, 2, 2, 3, 3, 4, 5, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 12]),
                      st.integers(1, 2), st.integers(0, 9), st.sampled_from([0, 0, 5]))
# a newswire's different figure for a key: a conflict when the company's filing is live too
dispute = st.tuples(st.just("dispute"), st.integers(0, 2), st.sampled_from([0, 1, 2, 3, 7, 8, 9, 10]))
operation = st.one_of(assertion, assertion, assertion, dispute, sources,
                      st.tuples(st.just("invalidate"), st.integers(0, 30)),
                      st.tuples(st.just("retract"), st.integers(0, 9)))
# (cutoff day, known_at: how many operations before the last, the entities listed or not)
checks = st.lists(st.tuples(st.integers(-5, 60), st.sampled_from([0, 0, 1, 3, 8, 60]), st.booleans()),
                  min_size=3, max_size=6)


class Run:
    def __init__(self, mem, clock: TxClock):
        self.mem, self.clock, self.model = mem, clock, Model()
        self.scope = Scope(tenant=f"screenprop-{uuid.uuid4().hex[:12]}")
        self.sources: list[tuple[str, int]] = []  # (source id, entity index)
        self.marks: list[dt.datetime] = []
        self.log: list[str] = []
        clock.reset()
        for entity in ENTITIES:
            mem.put_entity(self.scope, Entity(id=entity))
        self.marks.append(clock.last + dt.timedelta(milliseconds=500))

    def apply(self, op: tuple) -> None:
        getattr(self, "op_" + op[0])(*op[1:])
        self.marks.append(self.clock.last + dt.timedelta(milliseconds=500))

    def op_source(self, company: int, who: str, authority: str, day: int) -> None:
        sid = f"s{len(self.sources)}"
        publisher = ENTITIES[company] if who == "own" else "wire:newsdesk"
        src = Source(id=sid, kind="10-Q" if who == "own" else "press", authority=Authority(authority),
                     publisher=publisher, available_by=BASE + dt.timedelta(days=day))
        self.mem.record_source(self.scope, src)
        self.model.record_source(sid, publisher, src.authority.rank, src.available_by)
        self.sources.append((sid, company))
        self.log.append(f"source {sid} {publisher} {authority} day {day}")

    def op_assert(self, company: int, period: int, value: int, pick: int, delay: int) -> None:
        # its own filings, or any newswire's story; not a withdrawn one (it evidences nothing new)
        mine = [sid for sid, c in self.sources
                if (c == company or self.model.sources[sid].publisher == "wire:newsdesk")
                and self.model.sources[sid].retracted_at is None]
        if not mine:
            return
        sid = mine[pick % len(mine)]
        available_by = self.model.sources[sid].available_by + dt.timedelta(days=delay)
        fact = FactIn(entity=ENTITIES[company], attribute=ATTRIBUTE, unit="USD", period=PERIODS[period],
                      value=value, sources=(sid,), available_by=available_by)
        written = self.mem.assert_fact(self.scope, fact)
        i = self.model.assert_fact((company, period), sid, value, available_by, self.clock.last,
                                   lambda options: next((o for o in options
                                                         if self.model.versions[o].vid == written.version_id),
                                                        options[0]))
        version = self.model.versions[i]
        assert version.vid in (None, written.version_id)
        version.vid = written.version_id
        self.log.append(f"{ENTITIES[company]} {PERIODS[period].text} = {value} by {sid} -> v{i}")

    def op_dispute(self, company: int, period: int) -> None:
        wires = [n for n, (sid, _) in enumerate(self.sources)
                 if self.model.sources[sid].publisher == "wire:newsdesk"]
        if wires:
            mine = [n for n, (sid, c) in enumerate(self.sources) if c == company or n in wires]
            self.op_assert(company, period, 3, mine.index(wires[-1]), 0)

    def op_invalidate(self, pick: int) -> None:
        if self.model.versions:
            i = pick % len(self.model.versions)
            self.mem.invalidate(self.scope, self.model.versions[i].vid, "wrong")
            self.model.invalidate(i, self.clock.last)
            self.log.append(f"invalidate v{i}")

    def op_retract(self, pick: int) -> None:
        if self.sources:
            sid = self.sources[pick % len(self.sources)][0]
            self.mem.retract_source(self.scope, sid, reason="withdrawn")
            self.model.retract(sid, self.clock.last)
            self.log.append(f"retract {sid}")

    # -------------------------------------------------------------- the model's screen

    def reported(self, company: int, cutoff: dt.datetime, known_at: dt.datetime) -> bool:
        """In the universe: some version recorded by known_at, first public by the cutoff."""
        return any(v.key[0] == company and v.recorded_at <= known_at and v.edges[0].available_by <= cutoff
                   for v in self.model.versions)

    def expected(self, frame: str, company: int, cutoff: dt.datetime, known_at: dt.datetime):
        """(status, values, period text) the model gives the entity's row in ``frame``
        (any frame: test_panel_property asks of others too)."""
        selection = Selection.frame(frame)
        candidates = []
        for p, period in enumerate(PERIODS):
            if selection.matches(period):
                status, values = self.model.read((company, p), cutoff, known_at)
                if status != "not_found":
                    candidates.append((selection.distance(period), status, values, period.text))
        if not candidates:
            return "not_found", set(), None
        _, status, values, text = min(candidates)
        return status, values, text

    def check(self, frame: str, cutoff: dt.datetime, known_at: dt.datetime, listed: bool) -> None:
        entities = [*ENTITIES, "cik:404"] if listed else None
        screen = self.mem.screen(self.scope, attribute=ATTRIBUTE, frame=frame, cutoff=cutoff, known_at=known_at,
                                 entities=entities)
        universe = entities or [e for c, e in enumerate(ENTITIES) if self.reported(c, cutoff, known_at)]
        where = f"{frame} at cutoff {cutoff:%m-%d %H:%M}, known_at tx{(known_at - TX0).total_seconds():.1f}"
        assert sorted(a.entity for a in screen.answers) == sorted(universe), where
        for answer in screen.answers:
            if answer.entity == "cik:404":
                assert answer.status == "not_found"
                continue
            status, values, text = self.expected(frame, ENTITIES.index(answer.entity), cutoff, known_at)
            shown = [answer.version] if answer.version else list(answer.candidates)
            got = (answer.status, {v.value for v in shown}, shown[0].period.text if shown else None)
            event(f"{frame} row: {status}")
            assert got == (status, {Decimal(v) for v in values}, text), f"{answer.entity} {where}: {got}"


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(setup=st.tuples(*(st.tuples(st.just("source"), st.just(c), st.just("own"), st.just("primary"),
                                    st.integers(0, 40)) for c in range(3)), sources),
       ops=st.lists(operation, min_size=8, max_size=24),
       reads=checks)
def test_screen_matches_the_model(clocked, setup, ops, reads):
    mem, clock = clocked
    run = Run(mem, clock)
    try:
        for op in [*setup, *ops]:
            run.apply(op)
        last = len(run.marks) - 1
        for day, back, listed in [(60, 0, False), *reads]:
            cutoff = BASE + dt.timedelta(days=day, hours=12)
            known_at = run.marks[max(0, last - back)]
            for frame in FRAMES:
                run.check(frame, cutoff, known_at, listed)
    finally:
        note("\n".join(run.log))
