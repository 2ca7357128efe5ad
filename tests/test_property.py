"""Property test: graphmem's as-of reads agree with the pure-Python model in model.py.

Hypothesis draws a few sources and a random sequence of writes over two keys of one
entity (assertions with colliding values, identical re-sends, invalidations, source
retractions through ``Memory.retract_source``, source erasures, resolutions), runs it
against Neo4j and against the model, and checks each write landed where the model says
(same version, more evidence, or a new version). Then it compares ``as_of`` (status,
values, the candidate versions of a conflict, and ``explain``: what each filter
removed) at random (cutoff, known_at) pairs, with or without an evidence requirement,
and the filter a search names for each matched version it removed.
An erased source is not cited by later assertions (whether it may be is a write-gate
question, not the read rule's).

A second test draws long histories of one key (``test_long_histories_match_the_model``):
runs of daily assertions by a few publishers of every authority, each run one write
transaction, that overlap in time and come out of order (later recorded, earlier
available), with equal availabilities, corroborations of another authority, and
invalidations, retractions, resolutions and re-sends between them; then the same reads
at cutoffs and known_at marks across and between the runs. fact.read reads such a key
through its index of evidence by publisher and availability: this is where the rule
it applies and the rule of the model could part.

The transaction clock is injected (``Memory(clock=...)``) and deterministic: every
example runs in a fresh tenant, whose clock starts empty, and its writes are stamped
TX0, TX0 + 1 s, TX0 + 2 s, ... so the model knows every ``recorded_at``. After each
operation the test keeps a ``known_at`` mark half a second after the latest stamp.
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections import Counter
from decimal import Decimal
from types import SimpleNamespace

import pytest
from hypothesis import HealthCheck, event, given, note, settings
from hypothesis import strategies as st
from model import Model
from world import TX0, TxClock

from graphmem import Authority, Entity, FactIn, InputError, Period, Require, Scope, Source

UTC = dt.UTC
BASE = dt.datetime(2020, 1, 1, tzinfo=UTC)  # day 0 of the sources' publication times
FAR = dt.datetime(2100, 1, 1, tzinfo=UTC)  # a cutoff after everything, resolutions included
ENTITY = "acme"
ATTRIBUTES = ("revenue", "margin")  # two fact keys of one entity
PERIOD = Period(end=dt.date(2024, 12, 31))
AUTHORITIES = ("primary", "primary", "inference", "user_correction")  # equal ones meet
PUBLISHERS = ("pub-a", "pub-b", "pub-c", None)  # None: the source is its own publisher
KINDS = ("doc", "doc", "note")
# an evidence requirement of a read: none, a minimum authority, or a kind of source
REQUIREMENTS = {None: None, "primary": Require(min_authority=Authority.PRIMARY),
                "note": Require(kinds=("note",))}


@pytest.fixture(scope="module")
def clocked(migrated):
    clock = TxClock()
    with migrated.connect(clock=clock) as mem:
        yield mem, clock


# ------------------------------------------------------------------ strategies

sources = st.tuples(
    st.just("source"),
    st.sampled_from(PUBLISHERS),
    st.sampled_from(AUTHORITIES),
    st.integers(0, 5),  # available_by: BASE + days
    st.sampled_from(KINDS),
)
assertion = st.tuples(
    st.just("assert"),
    st.sampled_from([0, 0, 1]),  # key: mostly the first, so that it grows versions
    st.integers(1, 3),  # value: few, so that they collide
    st.integers(0, 9),  # which source (modulo the usable ones)
    st.sampled_from([0, 0, 1, 2]),  # days after the source's available_by
)
OPERATIONS = {
    "assert": assertion,
    "source": sources,
    "resend": st.tuples(st.just("resend"), st.integers(0, 19)),
    "invalidate": st.tuples(st.just("invalidate"), st.integers(0, 19)),
    "retract": st.tuples(st.just("retract"), st.integers(0, 9)),
    "erase": st.tuples(st.just("erase"), st.integers(0, 9)),
    "resolve": st.tuples(
        st.just("resolve"),
        st.integers(0, 1),
        st.lists(st.integers(0, 19), min_size=1, max_size=2),
        st.integers(1, 3),
        st.sampled_from(["alice", "bob"]),
    ),
}
# Mostly assertions, so that keys grow several versions before they are destroyed.
operation = st.sampled_from(["assert"] * 6 + sorted(OPERATIONS)).flatmap(OPERATIONS.__getitem__)
cutoffs = st.one_of(
    st.tuples(st.just("day"), st.integers(-1, 8), st.sampled_from([0, 12])),  # BASE+d days+h
    st.just(("far",)),
    st.tuples(st.just("mark"), st.integers(0, 30)),  # a transaction-time mark
)
requirements = st.sampled_from([None, None, "primary", "note"])
queries = st.lists(st.tuples(cutoffs, st.integers(0, 30), requirements), min_size=4, max_size=8)


# ------------------------------------------------------------------ the run


class Run:
    """One example: the same operations applied to graphmem and to the model."""

    def __init__(self, mem, clock: TxClock):
        self.mem, self.clock = mem, clock
        self.scope = Scope(tenant=f"prop-{uuid.uuid4().hex[:12]}")
        self.model = Model()
        self.my_sources: list[str] = []  # ids of the sources the example recorded
        self.sent: list[tuple[int, str, int, dt.datetime]] = []  # assertions, for re-sends
        self.marks: list[dt.datetime] = []  # known_at marks, one after each operation
        self.log: list[str] = []
        clock.reset()
        mem.put_entity(self.scope, Entity(id=ENTITY))
        self.mark()

    def mark(self) -> None:
        self.marks.append(self.clock.last + dt.timedelta(milliseconds=500))

    @staticmethod
    def when(t: dt.datetime) -> str:
        """A transaction time as 'txN' (TX0 + N seconds); marks are 'txN+'."""
        n = (t - TX0) / dt.timedelta(seconds=1)
        return f"tx{int(n)}" + ("+" if n != int(n) else "")

    def apply(self, op: tuple) -> None:
        getattr(self, "op_" + op[0])(*op[1:])
        self.mark()

    def op_source(self, publisher: str | None, authority: str, day: int, kind: str = "doc") -> None:
        sid = f"s{len(self.my_sources)}"
        src = Source(id=sid, kind=kind, authority=Authority(authority),
                     available_by=BASE + dt.timedelta(days=day), publisher=publisher)
        assert self.mem.record_source(self.scope, src)
        self.model.record_source(sid, src.publisher_id, src.authority.rank, src.available_by, kind)
        self.my_sources.append(sid)
        self.log.append(f"{self.when(self.clock.last)} source {sid} publisher={src.publisher_id} "
                        f"{src.authority.value} {kind} available day {day}")

    def _write(self, key: int, sid: str, value: int, available_by: dt.datetime) -> None:
        fact = FactIn(entity=ENTITY, attribute=ATTRIBUTES[key], value=value, period=PERIOD,
                      sources=(sid,), available_by=available_by)
        written = self.mem.assert_fact(self.scope, fact)
        got = written.version_id
        self._reconcile(written, lambda choose: self.model.assert_fact(
            key, sid, value, available_by, self.clock.last, choose))
        self.sent.append((key, sid, value, available_by))
        self.log.append(f"{self.when(self.clock.last)} assert key{key}={value} by {sid} "
                        f"available day {(available_by - BASE).days} -> {self.name(got)}")

    def _reconcile(self, written, step) -> None:
        """Run the model's write; where it may pick among same-valued versions, it
        follows graphmem; a new model version takes graphmem's id."""
        got = written.version_id
        known = [v.vid for v in self.model.versions]
        i = step(lambda options: next(
            (o for o in options if self.model.versions[o].vid == got), options[0]))
        version = self.model.versions[i]
        event("write: new version" if version.vid is None else "write: same version")
        if version.vid is None:
            assert got not in known, (
                f"model creates a new version, graphmem reused {self.name(got)}")
            assert written.recorded_at == self.clock.last, "the injected clock was not used"
            version.vid = got
        else:
            assert got == version.vid, (
                f"model lands on {self.name(version.vid)}, graphmem on {self.name(got)}")

    def name(self, vid: str) -> str:
        ids = [v.vid for v in self.model.versions]
        return f"v{ids.index(vid)}" if vid in ids else "a new version"

    def usable_sources(self) -> list[str]:
        return [s for s in self.my_sources if not self.model.sources[s].erased]

    def op_assert(self, key: int, value: int, pick: int, delay: int) -> None:
        usable = self.usable_sources()
        if usable:
            sid = usable[pick % len(usable)]
            available_by = self.model.sources[sid].available_by + dt.timedelta(days=delay)
            if self.model.sources[sid].retracted_at is not None and (key, sid, value, available_by) not in self.sent:
                # a withdrawn source evidences nothing new (a re-send of what landed is unchanged)
                with pytest.raises(InputError, match="was withdrawn"):
                    self.mem.assert_fact(self.scope, FactIn(entity=ENTITY, attribute=ATTRIBUTES[key], value=value,
                                                            period=PERIOD, sources=(sid,), available_by=available_by))
                event("write: refused, a withdrawn source")
                self.log.append(f"assert key{key}={value} by withdrawn {sid}: refused")
                return
            self._write(key, sid, value, available_by)

    def op_run(self, key: int, publisher: str | None, authority: str, kind: str, day: int,
               length: int, hours: int, values: str, salt: int) -> None:
        """``length`` assertions by one publisher, one source each, ``hours`` apart from
        ``day`` on, written in one transaction (each sees the ones before it): values
        rising, drawn from the few every run shares, or one value repeated."""
        first = len(self.my_sources)
        sources, items = [], []
        for j in range(length):
            src = Source(id=f"s{first + j}", kind=kind, authority=Authority(authority),
                         publisher=publisher,
                         available_by=BASE + dt.timedelta(days=day, hours=j * hours))
            value = {"rising": 100 + salt + j, "few": (salt + j) % 3 + 1, "one": salt % 3 + 1}[values]
            sources.append(src)
            items.append(FactIn(entity=ENTITY, attribute=ATTRIBUTES[key], value=value,
                                period=PERIOD, sources=(src.id,)))
        report = self.mem.record(self.scope, sources=sources, items=items)
        for src, item, got in zip(sources, items, report.version_ids, strict=True):
            self.model.record_source(src.id, src.publisher_id, src.authority.rank, src.available_by, kind)
            self.my_sources.append(src.id)
            self._reconcile(SimpleNamespace(version_id=got, recorded_at=self.clock.last),
                            lambda choose, src=src, item=item: self.model.assert_fact(
                                key, src.id, item.value, src.available_by, self.clock.last, choose))
            self.sent.append((key, src.id, item.value, src.available_by))
        self.log.append(f"{self.when(self.clock.last)} run key{key} {publisher} {authority} {kind} "
                        f"day {day} x{length} every {hours}h {values}({salt}) -> "
                        f"{[self.name(v) for v in report.version_ids]}")

    def op_resend(self, pick: int) -> None:
        # An erased source evidences nothing new (refused; tested in test_core), so only
        # assertions whose source still stands are re-sent.
        sendable = [sent for sent in self.sent if not self.model.sources[sent[1]].erased]
        if sendable:
            self._write(*sendable[pick % len(sendable)])

    def op_invalidate(self, pick: int) -> None:
        if self.model.versions:
            i = pick % len(self.model.versions)
            self.mem.invalidate(self.scope, self.model.versions[i].vid, "wrong value")
            self.model.invalidate(i, self.clock.last)
            self.log.append(f"{self.when(self.clock.last)} invalidate v{i}")

    def op_retract(self, pick: int) -> None:
        if not self.my_sources:
            return
        sid = self.my_sources[pick % len(self.my_sources)]
        self.mem.retract_source(self.scope, sid, reason="withdrawn")
        self.model.retract(sid, self.clock.last)
        self.log.append(f"{self.when(self.clock.last)} retract {sid}")

    def op_erase(self, pick: int) -> None:
        usable = self.usable_sources()
        if usable:
            sid = usable[pick % len(usable)]
            erased = self.mem.erase(self.scope, source_id=sid, reason="forget me")
            self.model.erase_source(sid)
            alone = sum(1 for v in self.model.versions if {e.source for e in v.edges} == {sid})
            self.log.append(f"{self.when(self.clock.last)} erase {sid}")
            assert erased == alone, f"erase {sid}: graphmem erased {erased}, model {alone}"

    def op_resolve(self, key: int, picks: list[int], value: int, by: str) -> None:
        mine = [i for i, v in enumerate(self.model.versions) if v.key == key]
        if not mine:
            return
        settles = sorted({mine[p % len(mine)] for p in picks})
        written = self.mem.resolve(
            self.scope, versions=[self.model.versions[i].vid for i in settles],
            value=Decimal(value), reason="analyst pick", by=by)
        got = written.version_id
        self._reconcile(written, lambda choose: self.model.resolve(
            key, settles, value, by, self.clock.last, choose))
        self.log.append(f"{self.when(self.clock.last)} resolve key{key} "
                        f"{[f'v{i}' for i in settles]} -> {value} by {by} -> {self.name(got)}")

    # -------------------------------------------------------------- reads

    def cutoff(self, choice: tuple) -> tuple[dt.datetime, str]:
        if choice[0] == "day":
            day, hours = choice[1:]
            return BASE + dt.timedelta(days=day, hours=hours), f"day {day} + {hours}h"
        if choice[0] == "far":
            return FAR, "far future"
        mark = self.marks[choice[1] % len(self.marks)]
        return mark, self.when(mark)

    def check(self, key: int, cutoff: dt.datetime, known_at: dt.datetime, label: str,
              require: str | None = None) -> None:
        req = REQUIREMENTS[require]
        rule = {"min_rank": req.min_authority.rank if req and req.min_authority else 0,
                "kinds": req.kinds if req else None}
        answer = self.mem.as_of(self.scope, entity=ENTITY, attribute=ATTRIBUTES[key],
                                period=PERIOD, cutoff=cutoff, known_at=known_at, require=req)
        final = {self.model.versions[i].vid for i in self.model.final(key, cutoff, known_at, **rule)}
        want = self.model.read(key, cutoff, known_at, **rule)
        label += f", require {require}" if require else ""
        if answer.status == "active":
            got, ids = (answer.status, {answer.value}), {answer.version.version_id}
        else:
            got, ids = (answer.status, {c.value for c in answer.candidates}), {
                c.version_id for c in answer.candidates}
        where = f"key{key} at {label}: expected {want} over {sorted(map(self.name, final))}, " \
                f"graphmem {got} over {sorted(map(self.name, ids))}"
        event(f"read: {want[0]}")
        assert got == want, where
        assert ids <= final and (answer.status != "conflicted" or ids == final), where
        for shown in answer.shown:  # public since its earliest evidence that counts, as read
            index = next(i for i, v in enumerate(self.model.versions) if v.vid == shown.version_id)
            assert shown.available_by == self.model.public_from(index, cutoff, known_at, **rule), where
        explain = self.model.explain(key, cutoff, known_at, **rule)
        assert answer.explain.model_dump() == explain, f"explain of {where}: expected {explain}"

    def check_search(self, cutoff: dt.datetime, known_at: dt.datetime, label: str) -> None:
        """A search matching every version of both keys names, for each matched version it
        removed, the filter the model names (an erased version is not searchable)."""
        found = self.mem.search(self.scope, text=ENTITY, types=["fact"], cutoff=cutoff,
                                known_at=known_at, limit=1000)
        want = Counter(by for key in (0, 1)
                       for i, by in self.model.statuses(key, cutoff, known_at).items()
                       if by and not self.model.versions[i].erased)
        assert found.explain.unevaluated == 0
        assert found.explain.removed == dict(want), f"search at {label}: expected {dict(want)}"

    def play(self, ops: list[tuple], day: int, reads: list[tuple[tuple, int, str | None]]) -> None:
        """Apply the operations, then read: at the far future and at ``day`` as known
        after the last operation, then at each drawn read. The log is the failure's note."""
        try:
            for op in ops:
                self.apply(op)
            event(f"versions of key0: {sum(v.key == 0 for v in self.model.versions) // 50 * 50}+")
            last = len(self.marks) - 1
            self.read_all([(("far",), last, None), (("day", day, 0), last, None)] + reads)
        finally:
            note("\n".join(self.log))

    def read_all(self, checks: list[tuple[tuple, int, str | None]]) -> None:
        """Each (cutoff choice, known_at mark, requirement): as_of on both keys, and without
        a requirement facts_as_of and a search too."""
        for choice, mark, require in checks:
            cutoff, label = self.cutoff(choice)
            known_at = self.marks[mark % len(self.marks)]
            label = f"cutoff {label}, known_at {self.when(known_at)}"
            for key in (0, 1):
                self.check(key, cutoff, known_at, label, require)
            if require is None:
                self.check_open(cutoff, known_at, label)
                self.check_search(cutoff, known_at, label)

    def check_open(self, cutoff: dt.datetime, known_at: dt.datetime, label: str) -> None:
        """facts_as_of with the attribute, then also the entity, left open: one answer per
        key that the model finds, each with the model's status and values."""
        want = {ATTRIBUTES[key]: self.model.read(key, cutoff, known_at) for key in (0, 1)}
        want = {attribute: w for attribute, w in want.items() if w[0] != "not_found"}
        for selector in ({"entity": ENTITY}, {}):
            answers = self.mem.facts_as_of(self.scope, cutoff=cutoff, known_at=known_at, **selector)
            got = {a.attribute: (a.status, {a.value} if a.status == "active" else {c.value for c in a.candidates})
                   for a in answers}
            assert got == want, f"facts_as_of({selector}) at {label}: expected {want}, graphmem {got}"


# Long histories: runs of assertions by one publisher, and lifecycle events between them.
LONG_OPERATIONS = {
    "run": st.tuples(
        st.just("run"),
        st.sampled_from([0, 0, 0, 1]),  # key
        st.sampled_from(PUBLISHERS),
        st.sampled_from(AUTHORITIES),
        st.sampled_from(KINDS),
        st.integers(0, 40),  # first day: runs overlap, and come out of order
        st.integers(2, 40),  # assertions
        st.sampled_from([0, 12, 24, 24, 48]),  # hours between them (0: equal availability)
        st.sampled_from(["rising", "rising", "few", "one"]),
        st.integers(0, 1000),
    ),
    "assert": assertion,
    "resend": st.tuples(st.just("resend"), st.integers(0, 10**6)),
    "invalidate": st.tuples(st.just("invalidate"), st.integers(0, 10**6)),
    "retract": st.tuples(st.just("retract"), st.integers(0, 10**6)),
    "erase": st.tuples(st.just("erase"), st.integers(0, 10**6)),
    "resolve": st.tuples(
        st.just("resolve"),
        st.integers(0, 1),
        st.lists(st.integers(0, 10**6), min_size=1, max_size=3),
        st.integers(1, 3),
        st.sampled_from(["alice", "bob"]),
    ),
}
long_operation = st.sampled_from(["run"] * 5 + sorted(LONG_OPERATIONS)).flatmap(
    LONG_OPERATIONS.__getitem__)
long_cutoffs = st.one_of(
    st.tuples(st.just("day"), st.integers(-1, 48), st.sampled_from([0, 6, 12])),
    st.just(("far",)),
    st.tuples(st.just("mark"), st.integers(0, 30)),
)
long_queries = st.lists(st.tuples(long_cutoffs, st.integers(0, 30), requirements), min_size=6,
                        max_size=10)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(setup=st.lists(sources, min_size=2, max_size=4),
       ops=st.lists(operation, min_size=4, max_size=20), reads=queries)
def test_as_of_matches_the_model(clocked, setup, ops, reads):
    Run(*clocked).play(setup + ops, 8, reads)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(setup=st.lists(sources, min_size=1, max_size=3),
       ops=st.lists(long_operation, min_size=6, max_size=16), reads=long_queries)
def test_long_histories_match_the_model(clocked, setup, ops, reads):
    Run(*clocked).play(setup + ops, 20, reads)
