"""Scenario tests for a key with a long history (DESIGN.md, "Reading a key with a long
history"), on the real Neo4j.

fact.read reads a key through its index of evidence by (publisher, top authority,
availability): per publisher it stops at the latest evidence that can still win. These
scenarios are the cases where that could differ from reading every version: the latest
evidence of a publisher invalidated or retracted, a later-recorded but earlier-available
version, equal availabilities, a version whose strongest evidence is gone, weaker
evidence on a kept version, resolutions on a long key, a re-sent old assertion, explain
counted without visiting every version, and keys written before the index existed.
(bench/bench_hotkey.py's smoke run is in test_bench.py.)
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from world import FAR, US, World, t

from graphmem import Memory, Require, Scope, Source
from graphmem.facts import KeySpec

DAY0 = t("2020-01-01T18:00")


@pytest.fixture
def w(mem: Memory, scope: Scope) -> World:
    return World(mem, scope, ("acme",))


def day(n: float) -> dt.datetime:
    return DAY0 + dt.timedelta(days=n)


def daily(w: World, publisher: str, first: int, values: list[int], authority: str = "primary") -> list[str]:
    """``publisher`` reports ``values[i]`` on day ``first + i``, each with its own source, in
    one write transaction; the version ids the assertions landed on."""
    sources = [Source(id=f"{publisher}-{first + i}", kind="report", authority=authority,
                      publisher=publisher, available_by=day(first + i)) for i in range(len(values))]
    report = w.mem.record(w.scope, sources=sources, items=[
        w.fact_in(Decimal(v), s.id) for v, s in zip(values, sources, strict=True)])
    return list(report.version_ids)


def values(answer) -> set:
    return {answer.value} if answer.status == "active" else {c.value for c in answer.candidates}


def test_a_daily_correction_reads_the_latest_and_explain_counts_every_version(w):
    ids = daily(w, "user:ann", 0, list(range(100, 160)))  # 60 versions
    now = w.read(FAR)
    assert (now.status, now.value, now.version.version_id) == ("active", Decimal("159"), ids[-1])
    assert now.explain.model_dump() == {"versions": 60, "known_at": 0, "erased": 0, "cutoff": 0,
                                        "invalidated": 0, "retracted": 0, "evidence": 0,
                                        "outranked": 0, "superseded": 59}
    mid = w.read(day(30.5))
    assert mid.value == Decimal("130")
    assert (mid.explain.cutoff, mid.explain.superseded) == (29, 30)
    assert w.read(day(-1)).status == "not_found"


def test_the_latest_evidence_of_a_publisher_invalidated_brings_the_previous_back(w):
    ids = daily(w, "user:ann", 0, list(range(100, 150)))
    for vid in ids[-3:]:  # the last three days were a loader bug
        w.mem.invalidate(w.scope, vid, "loader bug")
    now = w.read(FAR)
    assert (now.value, now.version.version_id) == (Decimal("146"), ids[-4])
    assert (now.explain.invalidated, now.explain.superseded) == (3, 46)
    # one of them earlier in the history changes nothing at the end
    w.mem.invalidate(w.scope, ids[10], "loader bug")
    assert w.read(FAR).value == Decimal("146")
    assert w.read(day(10.5)).value == Decimal("109")


def test_a_retracted_source_in_the_middle_and_at_the_end(w):
    ids = daily(w, "user:ann", 0, list(range(100, 140)))
    w.mem.retract_source(w.scope, "user:ann-39", reason="withdrawn")
    w.mem.retract_source(w.scope, "user:ann-20", reason="withdrawn")
    now = w.read(FAR)
    assert (now.value, now.version.version_id) == (Decimal("138"), ids[-2])
    assert (now.explain.retracted, now.explain.superseded) == (2, 37)
    assert w.read(day(20.5)).value == Decimal("119")


def test_a_later_recorded_but_earlier_available_version(w):
    daily(w, "user:ann", 0, list(range(100, 130)))
    w.source("late-filed", day(14.5), publisher="user:ann")
    back = w.fact(Decimal("999"), "late-filed")  # recorded last, available in the middle
    assert w.read(day(14.75)).value == Decimal("999")
    assert w.read(day(15.5)).value == Decimal("115")  # superseded by day 15
    assert w.read(FAR).value == Decimal("129")
    # known before it was recorded: day 14 still stood
    assert w.read(day(14.75), back.recorded_at - US).value == Decimal("114")


def test_equal_availability_from_one_publisher_gives_a_conflict(w):
    daily(w, "user:ann", 0, list(range(100, 120)))
    w.source("twin-a", day(25), publisher="user:ann")
    w.source("twin-b", day(25), publisher="user:ann")
    w.fact(Decimal("1"), "twin-a")
    w.fact(Decimal("2"), "twin-b")
    now = w.read(FAR)
    assert (now.status, values(now)) == ("conflicted", {Decimal("1"), Decimal("2")})
    assert now.explain.superseded == 20


def test_publishers_moving_apart_conflict_and_a_resolution_settles_it(w):
    daily(w, "pub-a", 0, list(range(100, 140)))
    daily(w, "pub-b", 100, [7])  # one report, never repeated: it stands
    before = w.read(FAR)
    assert (before.status, values(before)) == ("conflicted", {Decimal("139"), Decimal("7")})
    chosen = w.mem.resolve(w.scope, versions=[c.version_id for c in before.candidates],
                           value=Decimal("139"), reason="pub-a is right", by="analyst")
    after = w.read(FAR)
    assert (after.status, after.version.version_id) == ("active", chosen.version_id)
    # the resolution outranks every later primary report, which is stored but shown nowhere
    daily(w, "pub-a", 200, [1, 2, 3])
    latest = w.read(FAR)
    assert latest.version.version_id == chosen.version_id
    assert latest.explain.outranked == 44 - 1  # every other live version (the chosen one is kept)


def test_a_correction_retracted_leaves_the_figure_it_confirmed_at_its_own_rank(w):
    [v] = daily(w, "pub-a", 0, [100])
    w.source("analyst-note", day(1), authority="user_correction", publisher="user:bob")
    assert w.fact(Decimal("100"), "analyst-note").version_id == v  # more evidence, stronger
    daily(w, "pub-x", 2, [50, 60, 70], authority="inference")  # outranked extractions
    assert w.read(FAR).version.authority.value == "user_correction"
    w.mem.retract_source(w.scope, "analyst-note", reason="wrong note")
    now = w.read(FAR)
    assert (now.status, now.value, now.version.authority.value) == ("active", Decimal("100"), "primary")
    assert (now.explain.outranked, now.explain.retracted) == (3, 0)
    # and a restatement by its publisher supersedes it again
    daily(w, "pub-a", 10, [110])
    assert w.read(FAR).value == Decimal("110")


def test_weaker_evidence_on_a_kept_version_keeps_it_against_its_publisher(w):
    daily(w, "pub-a", 0, [100])
    daily(w, "pub-x", 1, [100], authority="inference")  # an extraction agrees: more evidence
    daily(w, "pub-a", 2, list(range(101, 130)))
    # pub-a moved on; pub-x never did, and its evidence is on a kept (primary) version
    now = w.read(FAR)
    assert (now.status, values(now)) == ("conflicted", {Decimal("100"), Decimal("129")})
    assert now.explain.superseded == 28
    # with the evidence required to be primary, pub-x stands behind nothing
    strict = w.read(FAR, require=Require(min_authority="primary"))
    assert (strict.status, strict.value) == ("active", Decimal("129"))


def test_a_resent_old_assertion_of_a_long_key_changes_nothing(w):
    ids = daily(w, "user:ann", 0, list(range(100, 150)))
    again = w.mem.assert_fact(w.scope, w.fact_in(Decimal("110"), "user:ann-10"))
    assert again.version_id == ids[10] and len(again.sources) == 1
    assert len(w.history()) == 50
    assert w.read(FAR).value == Decimal("149")


def test_known_at_before_the_last_writes_reads_and_counts_as_then(w):
    daily(w, "user:ann", 0, list(range(100, 120)))
    mark = w.mem.server_now()
    ids = daily(w, "user:ann", 20, list(range(200, 220)))
    w.mem.invalidate(w.scope, ids[-1], "bug")
    then = w.read(FAR, mark)
    assert then.value == Decimal("119")
    assert (then.explain.versions, then.explain.known_at, then.explain.superseded) == (40, 20, 19)
    now = w.read(FAR)
    assert (now.value, now.explain.invalidated, now.explain.superseded) == (Decimal("218"), 1, 38)


def test_a_requirement_on_kinds_reads_and_counts_every_version(w):
    daily(w, "user:ann", 0, list(range(100, 130)))
    w.source("memo", day(5.5), kind="memo", publisher="user:ann")
    w.fact(Decimal("55"), "memo")
    memo = w.read(FAR, require=Require(kinds=("memo",)))
    assert (memo.status, memo.value) == ("active", Decimal("55"))
    assert (memo.explain.evidence, memo.explain.superseded) == (30, 0)


def _strip_index_fields(mem: Memory, tenant: str) -> None:
    """Make the tenant's keys look as if written before schema.024/025."""
    with mem.db.driver.session(database=mem.db.database) as session:
        session.run("MATCH (k:FactKey {tenant: $tenant}) REMOVE k.tiers, k.feeds, k.flagged, k.written_at",
                    tenant=tenant).consume()
        session.run("MATCH (:FactKey {tenant: $tenant})<-[:VERSION_OF]-(:Fact)-[e:EVIDENCED_BY]->(s) "
                    "REMOVE e.key_uid, e.publisher, e.top, s.retracted_at", tenant=tenant).consume()


def test_keys_written_before_the_index_are_filled_in_by_the_migration(w):
    daily(w, "pub-a", 0, list(range(100, 120)))
    daily(w, "pub-x", 3, [103, 5], authority="inference")
    w.source("analyst-note", day(4), authority="user_correction", publisher="user:bob")
    w.fact(Decimal("104"), "analyst-note")
    w.mem.invalidate(w.scope, w.history()[-1].version_id, "bug")
    w.mem.retract_source(w.scope, "pub-a-7", reason="withdrawn")
    mark = w.mem.server_now()
    reads = [(FAR, mark), (day(3.5), mark), (day(10.5), mark), (day(7.5), mark),
             (FAR, w.history()[5].recorded_at)]
    before = [w.read(c, k) for c, k in reads]
    uid = KeySpec.of(w.scope, w.fact_in(1, "pub-a-0")).uid
    fields = "RETURN k.tiers AS tiers, k.feeds AS feeds, k.flagged AS flagged, k.written_at AS written"
    with w.mem.db.driver.session(database=w.mem.db.database) as session:
        kept = session.run(f"MATCH (k:FactKey {{uid: $uid}}) {fields}", uid=uid).single().data()
        _strip_index_fields(w.mem, w.scope.tenant)
        assert w.read(FAR).status == "not_found"  # the read rule needs them
        w.mem.migrate()
        filled = session.run(f"MATCH (k:FactKey {{uid: $uid}}) {fields}", uid=uid).single().data()
    assert {**filled, "feeds": sorted(filled["feeds"]), "flagged": sorted(filled["flagged"])} == {
        **kept, "feeds": sorted(kept["feeds"]), "flagged": sorted(kept["flagged"])}
    assert [w.read(c, k) for c, k in reads] == before

