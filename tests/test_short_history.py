"""The short rule against the full one (DESIGN.md, "Reading a key with a short history"),
on the real Neo4j.

fact.read reads a key with at most 16 writes, one publisher and no lifecycle record,
read after its last write with no kinds required, in one pass over its evidence; any
other read takes the full rule. Requiring every kind of source the key has changes no
answer but sends the read through the full rule, so each scenario here reads the same
key both ways at every cutoff, with and without a minimum authority, and expects the
same answer, explain and (for a search) the same removed versions. The property tests
(test_property.py) hold both rules to the model; this one names the cases.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from world import FAR, World, t

from graphmem import Memory, Require, Scope
from graphmem.facts import KeySpec

DAY0 = t("2021-01-01T18:00")
KINDS = ("filing", "estimate", "resolution")  # every kind of source these keys have


def day(n: float) -> dt.datetime:
    return DAY0 + dt.timedelta(days=n)


@pytest.fixture
def w(mem: Memory, scope: Scope) -> World:
    return World(mem, scope, ("acme",))


def report(w: World, sid: str, when: float, value: int, authority: str = "primary",
           kind: str = "filing", publisher: str = "acme-ir") -> str:
    """``publisher``'s ``sid`` says ``value`` on day ``when``; the version it landed on."""
    w.source(sid, day(when), authority=authority, publisher=publisher, kind=kind)
    return w.fact(Decimal(value), sid).version_id


def short_history(w: World) -> bool:
    """Whether the key qualifies for the short rule (the condition in fact.read), so that
    a read without kinds takes it: a renamed key field would otherwise send every read
    through the full rule and leave this file comparing the full rule with itself."""
    uid = KeySpec.of(w.scope, w.fact_in(1, "any")).uid
    with w.mem.db.driver.session(database=w.mem.db.database) as session:
        k = session.run("MATCH (k:FactKey {uid: $uid}) RETURN k.revision AS revision, k.flagged AS flagged, "
                        "k.feeds AS feeds, k.written_at AS written_at", uid=uid).single()
    return (k["revision"] <= 16 and k["flagged"] == [] and len({f[1:] for f in k["feeds"]}) == 1
            and k["written_at"].to_native() <= w.mem.server_now())


def both_ways(w: World, cutoffs: list[float], minimum: str | None = None) -> None:
    """Each cutoff read by the short rule and by the full one: the same answer."""
    assert short_history(w)
    short = Require(min_authority=minimum) if minimum else None
    full = Require(min_authority=minimum, kinds=KINDS)
    for c in cutoffs:
        a, b = w.read(day(c), require=short), w.read(day(c), require=full)
        where = f"day {c}, minimum {minimum}"
        assert a.status == b.status, where
        assert (a.version and a.version.version_id) == (b.version and b.version.version_id), where
        assert [v.version_id for v in a.candidates] == [v.version_id for v in b.candidates], where
        assert a.explain == b.explain, where
        if a.version:
            assert a.version.sources == b.version.sources, where
            assert a.version.authority == b.version.authority, where


CUTOFFS = [x / 2 for x in range(-2, 100)]


def test_repeats_restatements_and_a_weaker_version(w):
    report(w, "10-Q", 0, 100)
    report(w, "10-K", 10, 100)  # the same value again: more evidence
    report(w, "10-Q/A", 20, 105)  # restated
    report(w, "estimate", 30, 107, authority="inference", kind="estimate")  # outranked
    report(w, "10-K 2", 45, 108)
    assert w.read(day(50)).value == Decimal("108")
    for minimum in (None, "primary", "user_correction"):
        both_ways(w, CUTOFFS, minimum)


def test_a_version_whose_primary_evidence_comes_later(w):
    """An estimate, then a filing of the same value: one version whose top is lifted, its
    rank at a cutoff between the two below its top."""
    first = report(w, "estimate", 0, 400, authority="inference", kind="estimate")
    assert report(w, "10-Q", 10, 400) == first
    report(w, "estimate 2", 20, 401, authority="inference", kind="estimate")
    assert (w.read(day(5)).value, w.read(day(21)).value) == (Decimal("400"), Decimal("400"))
    assert w.read(day(5), require=Require(min_authority="primary")).status == "not_found"
    for minimum in (None, "primary"):
        both_ways(w, CUTOFFS, minimum)


def test_the_latest_evidence_that_meets_the_requirement_decides(w):
    """A filing, an estimate repeating it, then (recorded later) a restatement public in
    between: without a requirement the estimate keeps the first value the latest, with a
    primary one only the filings count and the restatement is the latest."""
    first = report(w, "10-Q", 0, 500)
    assert report(w, "estimate", 5, 500, authority="inference", kind="estimate") == first
    second = report(w, "10-Q/A", 3, 501)
    assert w.read(day(10)).version.version_id == first
    assert w.read(day(10), require=Require(min_authority="primary")).version.version_id == second
    for minimum in (None, "primary"):
        both_ways(w, CUTOFFS, minimum)


def test_two_values_on_one_day_conflict_until_a_later_filing(w):
    report(w, "8-K a", 5, 200)
    report(w, "8-K b", 5, 201)  # the same day, another value: conflicted
    assert w.read(day(6)).status == "conflicted"
    report(w, "10-Q", 12, 202)
    assert w.read(day(13)).value == Decimal("202")
    for minimum in (None, "primary"):
        both_ways(w, CUTOFFS, minimum)


def test_a_conflict_its_publisher_resolves(w):
    """A user's two values on one day, settled by the same user: one publisher, so the
    resolution is read by the short rule too."""
    a = report(w, "note a", 5, 600, publisher="user:ann")
    b = report(w, "note b", 5, 601, publisher="user:ann")
    w.mem.resolve(w.scope, versions=[a, b], value=Decimal("601"), reason="b is right", by="ann")
    assert w.read(day(6)).status == "conflicted"
    assert w.read(FAR).value == Decimal("601")
    both_ways(w, CUTOFFS + [(FAR - DAY0) / dt.timedelta(days=1)])


def test_a_search_names_the_same_filter_either_way(w):
    """search explain reads the versions it matched through fact.read's `removed`."""
    report(w, "10-Q", 0, 300)
    report(w, "10-Q/A", 20, 305)
    report(w, "estimate", 30, 307, authority="inference", kind="estimate")
    assert short_history(w)
    for c in (-1, 1, 21, 31):
        short = w.mem.search(w.scope, text="revenue", cutoff=day(c))
        full = w.mem.search(w.scope, text="revenue", cutoff=day(c),
                            require=Require(kinds=KINDS))
        assert short.explain.removed == full.explain.removed, f"day {c}"
        assert [h.memory_id for h in short.hits] == [h.memory_id for h in full.hits], f"day {c}"
