"""Scenario tests for the bitemporal core (DESIGN.md sections 1-5), on the real Neo4j.

Every scenario reads at cutoffs (publication time) and known_at (transaction time)
on both sides of each event, and asserts what a user would see: the value, the
status, the candidates of a conflict, the evidence, history and explain counts.

Publication times (``available_by``) are chosen by the test; transaction times
(``recorded_at``) are the server's, so reads "known before an event" use the
recorded_at the event itself reports, minus one microsecond.
"""

from __future__ import annotations

import datetime as dt
import threading
from decimal import Decimal

import pytest
from world import FAR, Q1, Q2, Q3, Q4, US, UTC, World, lose_first_acknowledgement, t  # noqa: F401 - shared test world

from graphmem import (
    NOW,
    Authority,
    ConcurrentWriteError,
    Entity,
    FactIn,
    InputError,
    Memory,
    NotFoundError,
    Require,
    RetryPolicy,
    Scope,
    ScopeError,
    Source,
)


@pytest.fixture
def w(mem: Memory, scope: Scope) -> World:
    return World(mem, scope, ("acme", "globex"))


def values(answer) -> set:
    return {c.value for c in answer.candidates}


def source_ids(version) -> list[str]:
    return [e.source_id for e in version.sources]


# ------------------------------------------------------------------ 1. supersede


def test_supersede_later_cutoffs_see_the_restatement_earlier_ones_the_original(w):
    w.source("10q", t("2024-05-01"), publisher="cik:1")
    w.source("10k", t("2025-02-01"), publisher="cik:1")
    v1 = w.fact(Decimal("100"), "10q")
    v2 = w.fact(Decimal("110"), "10k")
    assert v1.version_id != v2.version_id

    # cutoff before anything was public
    before = w.read(t("2024-04-30"))
    assert before.status == "not_found"
    assert before.explain.cutoff == 2

    # cutoff between the 10-Q and the 10-K: the 10-Q was the best public information
    mid = w.read(t("2024-06-01"))
    assert (mid.status, mid.value) == ("active", Decimal("100"))
    assert mid.version.version_id == v1.version_id
    assert mid.explain.cutoff == 1 and mid.explain.superseded == 0

    assert w.read(t("2025-02-01") - US).value == Decimal("100")

    # cutoff after the restatement
    late = w.read(t("2025-03-01"))
    assert (late.status, late.value) == ("active", Decimal("110"))
    assert late.version.version_id == v2.version_id
    assert late.explain.superseded == 1
    assert source_ids(late.version) == ["10k"]

    # known_at before the restatement was recorded: the old value, even at a late cutoff
    assert w.read(t("2025-03-01"), v2.recorded_at - US).value == Decimal("100")
    assert w.read(t("2025-03-01"), v2.recorded_at + US).value == Decimal("110")
    # known_at before anything was recorded
    nothing = w.read(t("2025-03-01"), v1.recorded_at - US)
    assert nothing.status == "not_found"
    assert nothing.explain.known_at == 2

    hist = w.history()
    assert [h.version_id for h in hist] == [v1.version_id, v2.version_id]
    assert [h.value for h in hist] == [Decimal("100"), Decimal("110")]
    assert [h.available_by for h in hist] == [t("2024-05-01"), t("2025-02-01")]
    assert hist[0].recorded_at < hist[1].recorded_at
    assert all(not h.erased and h.lifecycle == () for h in hist)


def test_supersede_needs_the_same_publisher(w):
    """A later source from another publisher is not a restatement: it is a conflict."""
    w.source("10q", t("2024-05-01"), publisher="cik:1")
    w.source("blog", t("2024-07-01"), publisher="someone-else")
    w.fact(Decimal("100"), "10q")
    w.fact(Decimal("90"), "blog")
    assert w.read(t("2024-06-01")).value == Decimal("100")
    later = w.read(t("2024-08-01"))
    assert later.status == "conflicted"
    assert values(later) == {Decimal("100"), Decimal("90")}


def test_a_cutoff_equal_to_available_by_sees_the_fact(w):
    """``available_by <= cutoff``: information public at exactly the cutoff is in."""
    w.source("10q", t("2024-05-01T16:05"), publisher="cik:1")
    w.source("10k", t("2025-02-01"), publisher="cik:1")
    w.fact(Decimal("100"), "10q")
    w.fact(Decimal("110"), "10k")
    assert w.read(t("2024-05-01T16:05") - US).status == "not_found"
    assert w.read(t("2024-05-01T16:05")).value == Decimal("100")
    assert w.read(t("2025-02-01")).value == Decimal("110")


def test_a_cutoff_equal_to_an_explicit_available_by_sees_the_fact(w):
    """Same boundary, with the assertion's own available_by given by the caller."""
    w.source("10q", t("2024-05-01"), publisher="cik:1")
    w.fact(Decimal("100"), "10q", available_by=t("2024-05-03"))
    assert w.read(t("2024-05-03") - US).status == "not_found"
    assert w.read(t("2024-05-03")).value == Decimal("100")


def test_same_value_with_explicit_available_by_is_evidence_not_a_new_version(w):
    """The write path must find the existing version whether available_by was given or not."""
    w.source("a", t("2024-05-01"))
    w.source("b", t("2024-05-01"), publisher="other")
    v1 = w.fact(Decimal("100"), "a")                                  # available_by from source
    v2 = w.fact(Decimal("100"), "b", available_by=t("2024-05-01"))    # the same instant, given
    assert v2.version_id == v1.version_id
    assert len(w.history()) == 1


def test_known_at_equal_to_recorded_at_sees_the_write(w):
    """``recorded_at <= known_at``: a read at a version's own recorded_at includes it."""
    w.source("10q", t("2024-05-01"), publisher="cik:1")
    v = w.fact(Decimal("100"), "10q")
    assert w.read(FAR, v.recorded_at - US).status == "not_found"
    assert w.read(FAR, v.recorded_at).value == Decimal("100")
    inv_at = w.mem.invalidate(w.scope, v.version_id, "wrong").lifecycle[0].recorded_at
    assert w.read(FAR, inv_at - US).value == Decimal("100")
    assert w.read(FAR, inv_at).status == "not_found"


def test_cutoff_now_is_the_reads_own_time_and_a_cutoff_is_never_left_out(w):
    """cutoff=NOW reads what is public as the read runs, as recorded by then (a filing
    dated in the future stays hidden, unlike at a far cutoff); the answer names the times
    it used - the cutoff its own, the known_at the tenant's last committed write - and a
    read at those times agrees. No cutoff at all is refused."""
    w.source("10q", t("2024-05-01"), publisher="cik:1")
    w.source("scheduled", t("2099-01-01"), publisher="cik:1")
    w.fact(Decimal("100"), "10q")
    last = w.fact(Decimal("110"), "scheduled")
    now = w.mem.as_of(w.scope, entity="acme", attribute="revenue", period=Q1, cutoff=NOW)
    assert now.value == Decimal("100") and now.explain.cutoff == 1
    assert now.known_at == last.recorded_at <= now.cutoff
    again = w.read(now.cutoff, now.known_at)
    assert (again.value, again.explain) == (now.value, now.explain)
    assert w.read(FAR).value == Decimal("110")

    listed = w.mem.facts_as_of(w.scope, entity="acme", cutoff=NOW)
    assert [(a.value, a.known_at == now.known_at, a.cutoff >= now.cutoff) for a in listed] == [
        (Decimal("100"), True, True)]
    missing = w.mem.as_of(w.scope, entity="acme", attribute="no-such-thing", cutoff=NOW)
    assert missing.status == "not_found" and missing.known_at == now.known_at <= missing.cutoff
    with pytest.raises(InputError, match="cutoff"):
        w.mem.as_of(w.scope, entity="acme", attribute="revenue", cutoff=None)


# ------------------------------------------------------------------ 2. invalidate


def test_invalidate_removes_the_version_for_every_cutoff_from_its_recorded_at(w):
    w.source("10q", t("2024-05-01"), publisher="cik:1")
    v = w.fact(Decimal("100"), "10q")
    assert w.read(t("2024-06-01")).value == Decimal("100")

    inv = w.mem.invalidate(w.scope, v.version_id, "loader bug: wrong column", by="ops")
    assert inv.version_id == v.version_id
    [record] = inv.lifecycle
    assert (record.kind, record.by) == ("invalidated", "ops")
    assert record.reason == "loader bug: wrong column"
    inv_at = record.recorded_at
    assert inv_at > v.recorded_at

    for cutoff in (t("2024-05-01T12:00"), t("2024-06-01"), t("2030-01-01"), FAR):
        now = w.read(cutoff)
        assert now.status == "not_found", cutoff
        assert now.explain.invalidated == 1
        at_inv = w.read(cutoff, inv_at + US)
        assert at_inv.status == "not_found", cutoff
        # audit: as the system knew it just before the invalidation
        audit = w.read(cutoff, inv_at - US)
        assert (audit.status, audit.value) == ("active", Decimal("100")), cutoff
        assert audit.explain.invalidated == 0
    # cutoff before publication: not found either way, counted under cutoff, not invalidated
    early = w.read(t("2024-04-01"))
    assert early.status == "not_found" and early.explain.cutoff == 1

    # history keeps it, with the invalidation record
    [h] = w.history()
    assert h.value == Decimal("100") and not h.erased
    assert [x.kind for x in h.lifecycle] == ["invalidated"]


def test_invalidating_a_restatement_brings_back_the_original(w):
    w.source("10q", t("2024-05-01"), publisher="cik:1")
    w.source("10k", t("2025-02-01"), publisher="cik:1")
    w.fact(Decimal("100"), "10q")
    v2 = w.fact(Decimal("110"), "10k")
    inv_at = w.mem.invalidate(w.scope, v2.version_id, "mis-keyed").lifecycle[0].recorded_at

    late = w.read(t("2025-03-01"))
    assert (late.status, late.value) == ("active", Decimal("100"))
    assert late.explain.invalidated == 1 and late.explain.superseded == 0
    assert w.read(t("2025-03-01"), inv_at - US).value == Decimal("110")
    assert w.read(t("2024-06-01")).value == Decimal("100")


def test_invalidating_an_unknown_version_raises(w):
    with pytest.raises(NotFoundError):
        w.mem.invalidate(w.scope, "fv_does_not_exist", "typo")


# ------------------------------------------------------------------ 3. conflict and resolve


@pytest.mark.parametrize("chosen", [Decimal("105"), Decimal("103")], ids=["pick-one", "new-value"])
def test_conflict_then_resolve(w, chosen):
    w.source("wire-a", t("2024-05-01"))  # each its own publisher: independent
    w.source("wire-b", t("2024-05-10"))
    a = w.fact(Decimal("100"), "wire-a")
    b = w.fact(Decimal("105"), "wire-b")
    assert a.version_id != b.version_id

    # before B was public: A alone
    only_a = w.read(t("2024-05-05"))
    assert (only_a.status, only_a.value) == ("active", Decimal("100"))

    conflict = w.read(t("2024-06-01"))
    assert conflict.status == "conflicted"
    assert conflict.version is None and conflict.value is None
    assert values(conflict) == {Decimal("100"), Decimal("105")}
    assert {c.version_id for c in conflict.candidates} == {a.version_id, b.version_id}
    assert all(c.authority == Authority.PRIMARY for c in conflict.candidates)
    assert conflict.explain.superseded == 0
    # known_at before B was recorded: no conflict yet
    assert w.read(t("2024-06-01"), b.recorded_at - US).value == Decimal("100")

    r = w.mem.resolve(w.scope, versions=[a.version_id, b.version_id], value=chosen,
                      reason="checked the filing", by="analyst-1")
    assert r.value == chosen
    assert r.authority == Authority.USER_CORRECTION
    [res_ev] = [e for e in r.sources if e.kind == "resolution"]
    assert res_ev.authority == Authority.USER_CORRECTION
    res_at = res_ev.recorded_at

    # from the resolution's own times on: active, the chosen value
    for cutoff in (res_at + US, res_at + dt.timedelta(days=1), FAR):
        after = w.read(cutoff)
        assert (after.status, after.value) == ("active", chosen), cutoff
        assert after.version.version_id == r.version_id
        assert after.version.authority == Authority.USER_CORRECTION
        assert w.read(cutoff, res_at + US).value == chosen

    # earlier cutoff: the conflict that existed then
    old_cutoff = w.read(t("2024-06-01"))
    assert old_cutoff.status == "conflicted"
    assert values(old_cutoff) == {Decimal("100"), Decimal("105")}
    assert w.read(res_at - US).status == "conflicted"
    # earlier known_at: still conflicted, even at a late cutoff
    old_known = w.read(FAR, res_at - US)
    assert old_known.status == "conflicted"
    assert values(old_known) == {Decimal("100"), Decimal("105")}
    # and before B was public, A alone as ever
    assert w.read(t("2024-05-05")).value == Decimal("100")

    # the settled versions say so in history
    settled = {h.version_id: h for h in w.history()}
    loser_ids = {a.version_id, b.version_id} - {r.version_id}
    for vid in loser_ids:
        assert "resolved" in [x.kind for x in settled[vid].lifecycle], vid


def test_a_resolve_whose_commit_acknowledgement_is_lost_is_recorded_once(w, monkeypatch):
    w.source("wire-a", t("2024-05-01"))
    w.source("wire-b", t("2024-05-10"))
    a, b = w.fact(Decimal("100"), "wire-a"), w.fact(Decimal("105"), "wire-b")
    lost = lose_first_acknowledgement(monkeypatch)
    r = w.mem.resolve(w.scope, versions=[a.version_id, b.version_id], value=Decimal("103"),
                      reason="checked the filing", by="analyst-1")
    assert lost  # the first try committed; the retry found its resolution
    assert [e.kind for e in r.sources] == ["resolution"]
    [version] = [v for v in w.history() if v.value == Decimal("103")]
    assert version.version_id == r.version_id and len(version.sources) == 1
    settled = {v.version_id: [x.kind for x in v.lifecycle] for v in w.history()}
    assert settled[a.version_id].count("resolved") == settled[b.version_id].count("resolved") == 1
    assert w.read(FAR).value == Decimal("103")


def test_resolve_refuses_versions_of_different_keys(w):
    w.source("s", t("2024-05-01"))
    a = w.fact(Decimal("1"), "s", period=Q1)
    b = w.fact(Decimal("2"), "s", period=Q2)
    with pytest.raises(ValueError, match="one fact key"):
        w.mem.resolve(w.scope, versions=[a.version_id, b.version_id], value=Decimal("1"),
                      reason="x", by="me")
    assert w.read(FAR, period=Q1).value == Decimal("1")
    assert len(w.history(period=None)) == 2


def test_a_value_resolve_cannot_store_is_refused_by_name_before_any_query(scope):
    """Checked before the write (it would fail inside it, naming a model's field): so even
    a memory whose server is gone says what is wrong with the value."""
    from graphmem import Memory
    with Memory.connect("bolt://127.0.0.1:9") as gone:
        for value in ([1], None, 1.5):
            with pytest.raises(InputError, match="^value: ") as info:
                gone.resolve(scope, versions=["fv_000000000000000000000000"], value=value, reason="x", by="me")
            assert "FactIn" not in str(info.value)


def test_a_malformed_derivation_is_named_by_its_place():
    from graphmem import Memory
    with Memory.connect("bolt://127.0.0.1:9") as gone:
        good = {"method": "m", "method_version": "1", "params": {}, "inputs": {"x": "fv_1"},
                "output": FactIn(entity="e", attribute="a", value=1, period=Q1)}
        for bad, said in ((good | {"ouptut": 1}, "derivations[1]: unknown ouptut"),
                          ({k: v for k, v in good.items() if k != "output"}, "derivations[1]: missing output"),
                          ("derive", "derivations[1]: a dict of derive's arguments is required, got str")):
            with pytest.raises(InputError) as info:
                gone.derive_many(Scope(tenant="t"), [good, bad])
            assert str(info.value) == said


# ------------------------------------------------------------------ 4. authority


def test_later_inference_does_not_displace_primary_until_primary_is_invalidated(w):
    w.source("10q", t("2024-05-01"), publisher="cik:1")
    w.source("llm", t("2024-06-01"), authority="inference", kind="extraction")
    p = w.fact(Decimal("100"), "10q")
    i = w.fact(Decimal("98"), "llm")
    assert i.version_id != p.version_id
    assert i.authority == Authority.INFERENCE

    for cutoff in (t("2024-05-15"), t("2024-07-01"), FAR):
        ans = w.read(cutoff)
        assert (ans.status, ans.value) == ("active", Decimal("100")), cutoff
        assert ans.version.authority == Authority.PRIMARY
    assert w.read(t("2024-07-01")).explain.outranked == 1
    # inference alone before the primary was public? It came later, so nothing then
    assert w.read(t("2024-04-01")).status == "not_found"

    inv_at = w.mem.invalidate(w.scope, p.version_id, "wrong filing").lifecycle[0].recorded_at

    remains = w.read(t("2024-07-01"))
    assert (remains.status, remains.value) == ("active", Decimal("98"))
    assert remains.version.version_id == i.version_id
    assert remains.version.authority == Authority.INFERENCE
    assert remains.explain.invalidated == 1 and remains.explain.outranked == 0
    # before the inference was public, nothing remains
    assert w.read(t("2024-05-15")).status == "not_found"
    # as known before the invalidation, the primary
    assert w.read(t("2024-07-01"), inv_at - US).value == Decimal("100")


def test_earlier_inference_is_shown_until_the_primary_is_public(w):
    w.source("llm", t("2024-04-15"), authority="inference", kind="extraction")
    w.source("10q", t("2024-05-01"), publisher="cik:1")
    w.fact(Decimal("98"), "llm")
    w.fact(Decimal("100"), "10q")
    assert w.read(t("2024-04-20")).value == Decimal("98")
    assert w.read(t("2024-05-02")).value == Decimal("100")


# ------------------------------------------------------------------ 5. evidence and versions


def test_same_value_from_another_source_is_more_evidence(w):
    w.source("10q", t("2024-05-01"), publisher="cik:1")
    w.source("wire", t("2024-05-10"), publisher="reuters")
    v1 = w.fact(Decimal("100"), "10q")
    v2 = w.fact(Decimal("100.00"), "wire")
    assert v2.version_id == v1.version_id
    assert source_ids(v2) == ["10q", "wire"]
    assert v2.available_by == t("2024-05-01")  # its earliest available_by stands
    [wire_ev] = [e for e in v2.sources if e.source_id == "wire"]

    [h] = w.history()
    assert source_ids(h) == ["10q", "wire"]

    # what stood behind the value depends on cutoff and known_at
    assert source_ids(w.read(t("2024-05-05")).version) == ["10q"]
    late = w.read(t("2024-06-01"))
    assert (late.status, late.value) == ("active", Decimal("100"))
    assert source_ids(late.version) == ["10q", "wire"]
    assert source_ids(w.read(t("2024-06-01"), wire_ev.recorded_at - US).version) == ["10q"]
    assert late.explain.versions == 1


def test_a_value_that_returns_to_an_older_one_is_a_new_version(w):
    w.source("q1", t("2024-05-01"), publisher="cik:1")
    w.source("q2", t("2024-08-01"), publisher="cik:1")
    w.source("k", t("2025-02-01"), publisher="cik:1")
    v1 = w.fact(Decimal("100"), "q1")
    v2 = w.fact(Decimal("120"), "q2")
    v3 = w.fact(Decimal("100"), "k")
    assert len({v1.version_id, v2.version_id, v3.version_id}) == 3
    assert v3.available_by == t("2025-02-01")

    assert w.read(t("2024-06-01")).version.version_id == v1.version_id
    assert w.read(t("2024-09-01")).value == Decimal("120")
    back = w.read(t("2025-03-01"))
    assert (back.value, back.version.version_id) == (Decimal("100"), v3.version_id)
    assert back.explain.superseded == 2
    assert w.read(t("2025-03-01"), v3.recorded_at - US).value == Decimal("120")
    assert [h.value for h in w.history()] == [Decimal("100"), Decimal("120"), Decimal("100")]


def test_versions_recorded_in_one_transaction_list_in_order_of_availability(w):
    # a backfill records a key's whole past at once: its history reads in publication
    # order, as history_index pages it, not in the order of the versions' ids
    for n, day in enumerate(("2024-05-01", "2024-08-01", "2024-11-01", "2025-02-01")):
        w.source(f"f{n}", t(day), publisher="cik:1")
    w.mem.assert_facts(w.scope, [w.fact_in(Decimal(v), f"f{n}") for n, v in enumerate(("100", "120", "90", "130"))])
    hist = w.history()
    assert [h.value for h in hist] == [Decimal("100"), Decimal("120"), Decimal("90"), Decimal("130")]
    assert len({h.recorded_at for h in hist}) == 1
    index = w.mem.history_index(w.scope, entity="acme", attribute="revenue")
    assert [r["version_ids"] for r in index] == [[h.version_id for h in hist]]


def test_resending_the_same_assertion_changes_nothing(w):
    w.source("q1", t("2024-05-01"), publisher="cik:1")
    w.source("q2", t("2024-08-01"), publisher="cik:1")
    v1 = w.fact(Decimal("100"), "q1")
    again = w.fact(Decimal("100"), "q1")
    assert again.version_id == v1.version_id
    assert source_ids(again) == ["q1"]
    assert again.sources == v1.sources  # no new evidence edge, same stamps

    report = w.mem.assert_facts(w.scope, [w.fact_in(Decimal("100.0"), "q1")])
    assert (report.rows, report.created, report.evidence_added, report.unchanged) == (1, 0, 0, 1)
    assert report.version_ids == (v1.version_id,)
    # the same row twice in one batch: still nothing new
    twice = w.mem.assert_facts(w.scope, [w.fact_in(100, "q1"), w.fact_in(100, "q1")])
    assert (twice.created, twice.evidence_added) == (0, 0)
    assert twice.version_ids == (v1.version_id, v1.version_id)

    # the key's revision did not move: an optimistic write at v1's revision still passes
    v2 = w.fact(Decimal("120"), "q2", expected_revision=v1.revision)
    # re-sending the old assertion after the key moved on is still a no-op
    stale = w.fact(Decimal("100"), "q1")
    assert stale.version_id == v1.version_id
    hist = w.history()
    assert [h.version_id for h in hist] == [v1.version_id, v2.version_id]
    assert [len(h.sources) for h in hist] == [1, 1]
    assert w.read(FAR).value == Decimal("120")


# ------------------------------------------------------------------ 6. erase


def test_erase_by_source_removes_the_payload_from_reads_and_history(w):
    w.source("leak", t("2024-05-01"), publisher="cik:1")
    w.source("10q", t("2024-05-01"), publisher="cik:2")
    w.source("wire", t("2024-05-02"))
    only = w.fact(Decimal("918273.645"), "leak")
    shared = w.fact(Decimal("7"), "leak", attribute="employees", unit="")
    w.fact(Decimal("7"), "wire", attribute="employees", unit="")
    other = w.fact(Decimal("55"), "10q", attribute="margin", unit="pct")
    assert w.read(FAR, only.recorded_at + US).value == Decimal("918273.645")

    erased = w.mem.erase(w.scope, source_id="leak", reason="GDPR request", by="dpo")
    assert erased == 1

    for cutoff in (t("2024-05-01"), t("2024-06-01"), FAR):
        for known_at in (None, only.recorded_at, only.recorded_at - US, FAR):
            ans = w.read(cutoff, known_at)
            assert ans.status == "not_found", (cutoff, known_at)
            assert ans.value is None
            assert all(c.value is None for c in ans.candidates)
    assert w.read(FAR).explain.erased == 1

    [h] = w.history()
    assert h.version_id == only.version_id
    assert h.value is None and h.erased
    assert "erased" in [x.kind for x in h.lifecycle]
    assert "918273" not in h.model_dump_json()

    # a version with other live evidence keeps its value; other facts are untouched
    kept = w.read(FAR, attribute="employees")
    assert (kept.status, kept.value) == ("active", Decimal("7"))
    assert kept.version.version_id == shared.version_id
    assert w.read(FAR, attribute="margin").value == Decimal("55")
    assert w.history(attribute="margin")[0].version_id == other.version_id

    # an erased source evidences nothing new
    with pytest.raises(InputError, match="'leak' was erased"):
        w.fact(Decimal("1"), "leak", attribute="founded", unit="")


def test_erase_by_entity_removes_every_version_about_it(w):
    w.source("q1", t("2024-05-01"), publisher="cik:1")
    w.source("q2", t("2024-08-01"), publisher="cik:1")
    a1 = w.fact(Decimal("100"), "q1")
    w.fact(Decimal("120"), "q2")
    w.fact(Decimal("3"), "q1", attribute="employees", period=Q2)
    g = w.fact(Decimal("999"), "q1", entity="globex")

    n = w.mem.erase(w.scope, entity="acme", reason="forget acme")
    assert n == 3

    for attribute, period in (("revenue", Q1), ("employees", Q2), ("revenue", None)):
        for cutoff in (t("2024-06-01"), FAR):
            for known_at in (None, a1.recorded_at, FAR):
                ans = w.read(cutoff, known_at, attribute=attribute, period=period)
                assert ans.status == "not_found", (attribute, cutoff, known_at)
    hist = w.history(period=None) + w.history(period=None, attribute="employees")
    assert len(hist) == 3
    assert all(h.value is None and h.erased for h in hist)
    assert all("erased" in [x.kind for x in h.lifecycle] for h in hist)

    # another entity sharing the source is untouched
    keep = w.read(FAR, entity="globex")
    assert (keep.value, keep.version.version_id) == (Decimal("999"), g.version_id)


def test_an_erase_whose_commit_acknowledgement_is_lost_is_recorded_once(w, monkeypatch):
    w.source("q1", t("2024-05-01"))
    w.fact(Decimal("100"), "q1")
    w.fact(Decimal("3"), "q1", attribute="employees", period=Q2)
    lost = lose_first_acknowledgement(monkeypatch)
    assert w.mem.erase(w.scope, entity="acme", reason="forget acme") == 2  # the first try's
    assert lost
    for attribute in ("revenue", "employees"):
        [version] = w.history(period=None, attribute=attribute)
        assert [x.kind for x in version.lifecycle] == ["erased"]  # one erasure, not two


def test_erasing_what_is_erased_already_erases_nothing_more(w):
    """A second request to forget an entity or a source (a user asking twice, a queue
    delivering twice) finds nothing left to erase: it reported the first one's count
    again, recorded a second erasure on every version and moved their keys' revisions."""
    w.source("q1", t("2024-05-01"))
    w.fact(Decimal("100"), "q1")
    w.fact(Decimal("3"), "q1", attribute="employees", period=Q2)
    assert w.mem.erase(w.scope, entity="acme", reason="forget acme") == 2
    revision = w.read(FAR).revision
    assert w.mem.erase(w.scope, entity="acme", reason="forget acme, again") == 0
    assert w.mem.erase(w.scope, source_id="q1", reason="and its source") == 0  # its facts are gone already
    assert w.mem.erase(w.scope, source_id="q1", reason="twice") == 0
    assert w.read(FAR).revision == revision
    for attribute in ("revenue", "employees"):
        [version] = w.history(period=None, attribute=attribute)
        assert [x.kind for x in version.lifecycle] == ["erased"]  # one erasure, not two


def test_erase_needs_exactly_one_target(w):
    with pytest.raises(ValueError):
        w.mem.erase(w.scope, reason="x")
    with pytest.raises(ValueError):
        w.mem.erase(w.scope, entity="acme", source_id="s", reason="x")


# ------------------------------------------------------------------ 7. scope


def _twin(mem: Memory, scope: Scope, value: Decimal) -> World:
    world = World(mem, scope, ("acme",))
    world.source("10q", t("2024-05-01"), publisher="cik:1")
    world.fact(value, "10q")
    return world


def test_tenants_never_see_each_others_facts(mem, scope):
    other_scope = Scope(tenant=f"{scope.tenant}-other")
    a = _twin(mem, scope, Decimal("100"))
    b = _twin(mem, other_scope, Decimal("200"))

    for world, value in ((a, Decimal("100")), (b, Decimal("200"))):
        ans = world.read(FAR)
        assert (ans.status, ans.value) == ("active", value)
        assert ans.explain.versions == 1
        [h] = world.history()
        assert h.value == value
        assert [e.source_id for e in h.sources] == ["10q"]

    # ids from one tenant mean nothing in the other
    vid_b = b.history()[0].version_id
    with pytest.raises(NotFoundError):
        mem.invalidate(scope, vid_b, "cross-tenant")
    assert mem.versions(scope, [vid_b]) == []
    with pytest.raises(NotFoundError):
        mem.resolve(scope, versions=[vid_b], value=Decimal("1"), reason="x", by="me")

    # erasing in one tenant does not reach the other
    mem.erase(other_scope, entity="acme", reason="forget")
    assert b.read(FAR).status == "not_found"
    assert a.read(FAR).value == Decimal("100")


def test_scope_keys_beside_the_tenant_isolate_too(mem, scope):
    p1 = Scope(tenant=scope.tenant, project="p1")
    p2 = Scope(tenant=scope.tenant, project="p2")
    a = _twin(mem, p1, Decimal("1"))
    b = _twin(mem, p2, Decimal("2"))
    assert a.read(FAR).value == Decimal("1")
    assert b.read(FAR).value == Decimal("2")
    # the bare tenant holds neither
    bare = mem.as_of(scope, entity="acme", attribute="revenue", period=Q1, cutoff=FAR)
    assert bare.status == "not_found" and bare.explain.versions == 0


@pytest.mark.parametrize("make_twin", [
    lambda tenant: (Scope(tenant=tenant, project="p1;user=alice"),
                    Scope(tenant=tenant, project="p1", user="alice")),
    lambda tenant: (Scope(tenant=f"{tenant};project=p1"),
                    Scope(tenant=tenant, project="p1")),
], ids=["separator-in-key-value", "separator-in-tenant"])
def test_scopes_that_merely_print_alike_are_still_isolated(mem, scope, make_twin):
    """Two different scopes must never share data, whatever characters their values hold
    (or a value that would make them print alike must be refused)."""
    try:
        first, second = make_twin(scope.tenant)
    except ValueError:
        return  # refusing such a scope is an acceptable answer
    assert first != second
    a = _twin(mem, first, Decimal("1"))
    try:
        b = _twin(mem, second, Decimal("2"))
    except ValueError:
        return  # refused at write: also acceptable, as long as nothing leaked
    assert a.read(FAR).value == Decimal("1")
    assert b.read(FAR).value == Decimal("2")
    assert [h.value for h in a.history()] == [Decimal("1")]
    assert [h.value for h in b.history()] == [Decimal("2")]


def test_missing_required_scope_key_is_refused_before_any_query():
    # A memory whose server does not exist: any query would fail with a connection error.
    dead = Memory.connect("bolt://127.0.0.1:9", required_scope=("project",),
                          retry=RetryPolicy(attempts=1, seconds=1))
    with dead:
        scope = Scope(tenant="t")
        with pytest.raises(ScopeError, match="project"):
            dead.as_of(scope, entity="acme", attribute="revenue", cutoff=FAR)
        with pytest.raises(ScopeError, match="project"):
            dead.history(scope, entity="acme", attribute="revenue")
        with pytest.raises(ScopeError, match="project"):
            dead.record_source(scope, Source(id="s", kind="filing", authority="primary",
                                             available_by=t("2024-05-01")))
        with pytest.raises(ScopeError, match="project"):
            dead.assert_fact(scope, FactIn(entity="acme", attribute="revenue", value=1,
                                           period=Q1, sources=("s",)))
        with pytest.raises(ScopeError, match="project"):
            dead.facts_as_of(scope, entity="acme", attribute="revenue", cutoff=FAR)
        with pytest.raises(ScopeError, match="project"):
            dead.erase(scope, entity="acme", reason="x")


def test_required_scope_key_present_works(migrated, scope):
    with migrated.connect(required_scope=("project",)) as mem:
        full = Scope(tenant=scope.tenant, project="p")
        world = _twin(mem, full, Decimal("5"))
        assert world.read(FAR).value == Decimal("5")
        with pytest.raises(ScopeError):
            mem.as_of(scope, entity="acme", attribute="revenue", cutoff=FAR)


@pytest.mark.parametrize("bad", [{"tenant": "t"}, "tenant=t", None])
def test_a_scope_that_is_not_a_scope_is_refused(mem, bad):
    with pytest.raises(ScopeError, match="Scope"):
        mem.as_of(bad, entity="acme", attribute="revenue", cutoff=FAR)
    with pytest.raises(ScopeError, match="Scope"):
        mem.put_entity(bad, Entity(id="acme"))


def test_an_empty_tenant_is_refused():
    with pytest.raises(ValueError, match="tenant"):
        Scope(tenant=" ")


# ------------------------------------------------------------------ 8. concurrency


@pytest.mark.parametrize("same_value", [False, True], ids=["different-values", "same-value"])
def test_concurrent_writers_to_one_key_lose_nothing(w, same_value):
    n = 8
    for i in range(n):
        # same-value: all public at once, so every write finds the same version;
        # different values: staggered, so each is its own version
        w.source(f"s{i}", t("2024-05-01") + dt.timedelta(hours=0 if same_value else i))
    barrier = threading.Barrier(n)
    results, errors = {}, []

    def worker(i: int) -> None:
        try:
            barrier.wait(timeout=30)
            value = Decimal(42) if same_value else Decimal(100 + i)
            results[i] = w.fact(value, f"s{i}")
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(n)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=120)
    assert not errors, errors
    assert len(results) == n

    hist = w.history()
    ans = w.read(FAR)
    # none lost: every source stands behind some version
    assert sorted(e.source_id for h in hist for e in h.sources) == sorted(f"s{i}" for i in range(n))
    if same_value:
        [h] = hist
        assert sorted(source_ids(h)) == sorted(f"s{i}" for i in range(n))
        assert h.available_by == t("2024-05-01")
        assert (ans.status, ans.value) == ("active", Decimal(42))
        assert len(ans.version.sources) == n
    else:
        assert len(hist) == n
        assert {h.value for h in hist} == {Decimal(100 + i) for i in range(n)}
        assert len({h.revision for h in hist}) == n
        assert ans.status == "conflicted"
        assert len(ans.candidates) == n
    recorded = [e.recorded_at for h in hist for e in h.sources]
    assert len(set(recorded)) == n, "each write got its own transaction time"


def test_expected_revision_mismatch_raises_and_writes_nothing(w):
    w.source("q1", t("2024-05-01"), publisher="cik:1")
    w.source("q2", t("2024-08-01"), publisher="cik:1")
    w.source("q3", t("2024-09-01"), publisher="cik:1")

    # a new key is at revision 0
    with pytest.raises(ConcurrentWriteError) as info:
        w.fact(Decimal("1"), "q1", expected_revision=3)
    assert (info.value.expected, info.value.actual) == (3, 0)
    assert w.history() == []
    assert w.read(FAR).status == "not_found"

    v1 = w.fact(Decimal("100"), "q1", expected_revision=0)
    with pytest.raises(ConcurrentWriteError, match=r"^fact key acme revenue \[USD\] .*: expected revision 0"):
        w.fact(Decimal("120"), "q2", expected_revision=0)  # named as written, not by its digest
    assert [h.version_id for h in w.history()] == [v1.version_id]
    assert source_ids(w.history()[0]) == ["q1"]
    assert w.read(FAR).value == Decimal("100")

    v2 = w.fact(Decimal("120"), "q2", expected_revision=v1.revision)
    assert w.read(FAR).value == Decimal("120")
    # a second writer still holding v1's revision is refused
    with pytest.raises(ConcurrentWriteError):
        w.fact(Decimal("130"), "q3", expected_revision=v1.revision)
    assert [h.version_id for h in w.history()] == [v1.version_id, v2.version_id]


def test_two_racing_optimistic_writers_one_wins(w):
    w.source("a", t("2024-05-01"))
    w.source("b", t("2024-05-02"))
    w.source("c", t("2024-05-03"))
    v0 = w.fact(Decimal("1"), "a")
    barrier = threading.Barrier(2)
    outcomes: dict[str, object] = {}

    def worker(sid: str, value: int) -> None:
        barrier.wait(timeout=30)
        try:
            outcomes[sid] = w.fact(Decimal(value), sid, expected_revision=v0.revision)
        except ConcurrentWriteError as exc:
            outcomes[sid] = exc

    threads = [threading.Thread(target=worker, args=a) for a in (("b", 2), ("c", 3))]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=60)
    kinds = sorted(type(o).__name__ for o in outcomes.values())
    assert kinds == ["ConcurrentWriteError", "FactVersion"]
    assert len(w.history()) == 2


# ------------------------------------------------------------------ 10. requirements and ranges


def test_require_primary_filters_inference_only_keys(w):
    w.source("llm", t("2024-05-01"), authority="inference", kind="extraction")
    w.source("10q", t("2024-05-01"), publisher="cik:1")
    w.fact(Decimal("98"), "llm")  # revenue: inference only
    w.fact(Decimal("12"), "10q", attribute="employees", unit="")
    w.fact(Decimal("12"), "llm", attribute="employees", unit="")  # both

    primary = Require(min_authority="primary")
    plain = w.read(FAR)
    assert (plain.status, plain.value) == ("active", Decimal("98"))
    filtered = w.read(FAR, require=primary)
    assert filtered.status == "not_found"
    assert filtered.explain.evidence == 1
    assert filtered.explain.versions == 1
    # before publication the cutoff removes it first, not the requirement
    early = w.read(t("2024-04-01"), require=primary)
    assert early.status == "not_found" and early.explain.cutoff == 1 and early.explain.evidence == 0

    both = w.read(FAR, attribute="employees", require=primary)
    assert (both.status, both.value) == ("active", Decimal("12"))
    assert source_ids(both.version) == ["10q"]
    assert both.version.authority == Authority.PRIMARY

    # kinds requirement works the same way
    by_kind = w.read(FAR, require=Require(kinds=("extraction",)))
    assert by_kind.value == Decimal("98")
    assert w.read(FAR, require=Require(kinds=("filing",))).status == "not_found"

    ranged = w.mem.facts_as_of(w.scope, entity="acme", attribute="revenue", cutoff=FAR,
                               require=primary)
    assert ranged == []


def test_facts_as_of_returns_one_answer_per_period(w):
    w.source("q1", t("2024-05-01"), publisher="cik:1")
    w.source("q2", t("2024-08-01"), publisher="cik:1")
    w.source("q3", t("2024-11-01"), publisher="cik:1")
    w.source("q4", t("2025-02-01"), publisher="cik:1")
    w.source("other", t("2024-08-05"))
    for value, sid, period in ((10, "q1", Q1), (20, "q2", Q2), (30, "q3", Q3), (40, "q4", Q4)):
        w.fact(Decimal(value), sid, period=period)
    w.fact(Decimal(21), "other", period=Q2)  # an independent publisher disagrees on Q2
    w.fact(Decimal(5), "q1", period=Q1, attribute="employees")  # other attribute: not selected

    answers = w.mem.facts_as_of(w.scope, entity="acme", attribute="revenue",
                                valid_from=dt.date(2024, 4, 1), valid_to=dt.date(2024, 12, 31),
                                cutoff=FAR)
    assert [a.status for a in answers] == ["conflicted", "active", "active"]
    assert values(answers[0]) == {Decimal(20), Decimal(21)}
    assert [a.value for a in answers[1:]] == [Decimal(30), Decimal(40)]
    assert [(a.version or a.candidates[0]).period for a in answers] == [Q2, Q3, Q4]

    # at a cutoff before the Q4 filing and the disagreement, Q4 is left out and Q2 is active
    early = w.mem.facts_as_of(w.scope, entity="acme", attribute="revenue",
                              valid_from=dt.date(2024, 1, 1), cutoff=t("2024-08-02"))
    assert [(a.version.period, a.value) for a in early] == [(Q1, Decimal(10)), (Q2, Decimal(20))]

    # as known before the Q3 version was recorded
    q3 = w.history(period=Q3)[0]
    known = w.mem.facts_as_of(w.scope, entity="acme", attribute="revenue", cutoff=FAR,
                              known_at=q3.recorded_at - US)
    assert [(a.version or a.candidates[0]).period for a in known] == [Q1, Q2]

    # without a period, as_of answers for the latest period that has an answer
    assert w.read(FAR, period=None).value == Decimal(40)
    assert w.read(t("2024-12-01"), period=None).value == Decimal(30)


def test_facts_as_of_with_the_entity_or_the_attribute_left_open(w, mem):
    w.source("acme-10q", t("2024-05-01"), publisher="cik:1")
    w.source("globex-10q", t("2024-05-02"), publisher="cik:2")
    w.source("late", t("2024-09-01"), publisher="cik:2")
    w.fact(Decimal(10), "acme-10q", period=Q1)
    w.fact(Decimal(3), "acme-10q", period=Q1, attribute="employees")
    w.fact(Decimal(7), "globex-10q", period=Q1, entity="globex")
    w.fact(Decimal(8), "late", period=Q2, entity="globex")
    # another tenant with the same entities and attributes is never seen
    other = World(mem, Scope(tenant=w.scope.tenant + "-other"))
    other.source("x", t("2024-05-01"))
    other.fact(Decimal(999), "x", period=Q1)

    def shown(answers):
        return [(a.entity, a.attribute, (a.version or a.candidates[0]).period, a.value) for a in answers]

    assert shown(w.mem.facts_as_of(w.scope, entity="acme", cutoff=FAR)) == [
        ("acme", "employees", Q1, Decimal(3)), ("acme", "revenue", Q1, Decimal(10))]
    assert shown(w.mem.facts_as_of(w.scope, attribute="revenue", cutoff=FAR)) == [
        ("acme", "revenue", Q1, Decimal(10)), ("globex", "revenue", Q1, Decimal(7)),
        ("globex", "revenue", Q2, Decimal(8))]
    # both open: the whole scope, within the valid-time range and at the cutoff
    assert shown(w.mem.facts_as_of(w.scope, valid_from=dt.date(2024, 4, 1), cutoff=FAR)) == [
        ("globex", "revenue", Q2, Decimal(8))]
    assert shown(w.mem.facts_as_of(w.scope, cutoff=t("2024-05-01T12:00"))) == [
        ("acme", "employees", Q1, Decimal(3)), ("acme", "revenue", Q1, Decimal(10))]
    assert len(w.mem.facts_as_of(w.scope, valid_to=dt.date(2024, 3, 31), cutoff=FAR)) == 3
    with pytest.raises(InputError, match="valid_from"):
        w.mem.facts_as_of(w.scope, valid_from=dt.date(2024, 5, 1), valid_to=dt.date(2024, 4, 1), cutoff=FAR)


def test_as_of_without_period_asks_which_key_when_several_end_the_same_day(w):
    w.source("10q", t("2024-05-01"), publisher="cik:1")
    w.fact(Decimal("100"), "10q", unit="USD")
    w.fact(Decimal("92"), "10q", unit="EUR")
    with pytest.raises(ValueError, match="unit="):
        w.read(FAR, period=None)
    assert w.read(FAR, period=None, unit="EUR").value == Decimal("92")
    assert w.read(FAR, period=Q1, unit="USD").value == Decimal("100")


# ------------------------------------------------------------------ values


def test_typed_values_round_trip(w):
    w.source("s", t("2024-05-01"))
    cases = {
        "revenue": Decimal("1234567890123456.123456789"),
        "tiny": Decimal("0.1000000000000000055511151231"),  # beyond float precision
        "negative": Decimal("-0.5"),
        "flag": True,
        "filed_on": dt.date(2024, 5, 1),
        "auditor": "Ernst & Young – 東京",
    }
    for attribute, value in cases.items():
        w.fact(value, "s", attribute=attribute, unit="")
    for attribute, value in cases.items():
        got = w.read(FAR, attribute=attribute).value
        assert got == value and type(got) is type(value), attribute
        if isinstance(value, Decimal):
            assert str(got) == str(value), attribute


def test_decimals_with_more_than_28_digits_round_trip_exactly(w):
    """No precision limit: the canonical text must keep every digit given."""
    w.source("a", t("2024-05-01"))
    w.source("b", t("2024-05-02"), publisher="other")
    long = Decimal("12345678901234567890.123456789012345")
    v = w.fact(long, "a")
    assert v.value == long
    assert str(w.read(FAR).value) == "12345678901234567890.123456789012345"
    # a number differing only in the 30th digit is a different value, not more evidence
    other = w.fact(Decimal("12345678901234567890.123456789012346"), "b")
    assert other.version_id != v.version_id
    assert w.read(FAR).status == "conflicted"


def test_decimals_compare_numerically_and_are_one_version(w):
    w.source("a", t("2024-05-01"))
    w.source("b", t("2024-05-02"))
    v1 = w.fact(Decimal("123.450"), "a")
    assert w.read(FAR).value == Decimal("123.45")
    assert str(w.read(FAR).value) == "123.45"
    v2 = w.fact(Decimal("123.45"), "b")
    assert v2.version_id == v1.version_id
    assert w.read(FAR).status == "active"
    assert len(w.history()) == 1
    # integers and exponent forms are the same number too
    w.source("c", t("2024-05-03"))
    w.source("d", t("2024-05-04"))
    k1 = w.fact(1000, "c", attribute="employees", unit="")
    k2 = w.fact(Decimal("1E+3"), "d", attribute="employees", unit="")
    assert k1.version_id == k2.version_id



def test_an_erased_entity_is_not_brought_back(w):
    w.source("q1", t("2024-05-01"))
    w.fact(Decimal("1"), "q1")
    w.mem.erase(w.scope, entity="acme", reason="forget me")
    with pytest.raises(InputError, match="erased"):
        w.mem.put_entity(w.scope, Entity(id="acme", name="Acme Corp"))
    with pytest.raises(InputError, match="erased"):
        w.fact(Decimal("2"), "q1")
    assert w.mem.entity(w.scope, "acme").name is None
