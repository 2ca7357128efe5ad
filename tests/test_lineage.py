"""Lineage against the real Neo4j: derive, impact, retraction cascade, recompute order."""

from __future__ import annotations

import datetime as dt
import gc

import networkx as nx
import pytest

from graphmem import Entity, FactIn, InputError, NotFoundError, Period, Source, render

UTC = dt.UTC
T0 = dt.datetime(2025, 1, 10, tzinfo=UTC)
Q = Period(start=dt.date(2024, 10, 1), end=dt.date(2024, 12, 31))


def day(n: int) -> dt.datetime:
    return T0 + dt.timedelta(days=n)


def record_abc(mem, scope) -> None:
    """Entity E; sources A (day 0), B (day 1), C (day 2), all E's own."""
    mem.put_entity(scope, Entity(id="E"))
    for i, sid in enumerate("ABC"):
        mem.record_source(scope, Source(id=sid, kind="report", authority="primary",
                                        publisher="E", available_by=day(i)))


@pytest.fixture
def base(mem, scope):
    """record_abc, then facts x (A), y (B), z (A and C)."""
    record_abc(mem, scope)

    def fact(attr, value, *sources):
        return mem.assert_fact(scope, FactIn(entity="E", attribute=attr, value=value, period=Q,
                                             unit="USD", sources=sources))

    return {"x": fact("x", 10, "A"), "y": fact("y", 20, "B"), "z": fact("z", 5, "A", "C")}


def derive(mem, scope, attr, value, **inputs):
    return mem.derive(scope, method=f"calc-{attr}", method_version="1", params={"k": 1},
                      inputs={role: v.version_id for role, v in inputs.items()},
                      output=FactIn(entity="E", attribute=attr, value=value, period=Q, unit="USD"))


def test_chain_and_diamond_are_reported_once_with_depth_and_order(mem, scope, base):
    s = derive(mem, scope, "s", 30, a=base["x"], b=base["y"])   # x + y
    t = derive(mem, scope, "t", 60, a=s)                          # 2s
    u = derive(mem, scope, "u", 90, a=s, b=t)                     # diamond: s reaches u twice
    assert s.authority.value == "derived"
    assert s.available_by == day(1), "a derived fact is public when its last input was"
    report = mem.impact(scope, source_id="A")
    by_id = {i.id: i for i in report.items}
    assert by_id[base["x"].version_id].reason == "invalid"
    assert by_id[base["z"].version_id].reason == "survives", "z has C as well"
    for v in (s, t, u):
        assert by_id[v.version_id].reason == "invalid"
    assert [i.id for i in report.items].count(u.version_id) == 1
    assert by_id[u.version_id].depth == 5  # A -> x -> d(s) -> s -> d(u) -> u
    order = list(report.recompute_order)
    assert len(order) == 3 and order.index(_drv(mem, scope, s)) < order.index(_drv(mem, scope, t))
    assert order.index(_drv(mem, scope, t)) < order.index(_drv(mem, scope, u))
    assert report.counts["facts_invalid"] == 4 and report.counts["facts_survives"] == 1
    assert "recompute order" in report.table()
    assert '"origin": "s:A"' in report.to_json()


def _drv(mem, scope, version):
    graph = mem.lineage(scope, version.version_id, "upstream", max_depth=2)
    return next(n[2:] for n in graph if n.startswith("d:"))


def test_a_derived_fact_carries_its_derivation_wherever_it_is_read(mem, scope, base):
    """DESIGN.md section 4: every answer carries, for a derived fact, the derivation
    (method, version, inputs). ``FactVersion.derivation`` was None everywhere: what a
    number was computed from took a lineage call. Reported facts carry none."""
    s = derive(mem, scope, "s", 30, a=base["x"], b=base["y"])
    shown = {"method": "calc-s", "method_version": "1", "params": {"k": 1},
             "inputs": [{"role": "a", "version_id": base["x"].version_id},
                        {"role": "b", "version_id": base["y"].version_id}]}
    assert s.derivation == {"id": s.sources[0].source_id.removeprefix("derivation:"), **shown}
    answer = mem.as_of(scope, entity="E", attribute="s", period=Q, cutoff=day(5))
    (history,) = mem.history(scope, entity="E", attribute="s")
    (listed,) = mem.facts_as_of(scope, entity="E", attribute="s", cutoff=day(5))
    for version in (answer.version, history, listed.version, mem.versions(scope, [s.version_id])[0]):
        assert version.derivation == s.derivation
    assert mem.as_of(scope, entity="E", attribute="x", period=Q, cutoff=day(5)).version.derivation is None
    shown_by_asof = render.answer(answer).splitlines()  # `graphmem asof` says it too
    assert f"    derived by calc-s 1 from a={base['x'].version_id}, b={base['y'].version_id}" in shown_by_asof


def test_retract_applies_the_cascade_and_old_known_at_still_sees_it(mem, scope, base):
    s = derive(mem, scope, "s", 30, a=base["x"], b=base["y"])
    t = derive(mem, scope, "t", 60, a=s)
    before = t.recorded_at  # the tenant's last write: transaction time is the server's, not ours
    report = mem.retract_source(scope, "A", reason="filing withdrawn")
    assert {i.id for i in report.items if i.reason == "invalid"} >= {s.version_id, t.version_id}
    late = day(30)
    for attr in ("x", "s", "t"):
        assert mem.as_of(scope, entity="E", attribute=attr, cutoff=late).status == "not_found"
        old = mem.as_of(scope, entity="E", attribute=attr, cutoff=late, known_at=before)
        assert old.status == "active"
    assert mem.as_of(scope, entity="E", attribute="z", cutoff=late).value == 5
    again = mem.retract_source(scope, "A", reason="filing withdrawn")
    assert again.counts == report.counts
    history = mem.history(scope, entity="E", attribute="x")
    assert sum(1 for x in history[0].lifecycle if x.kind == "retracted") == 1


def restate_x(mem, scope, value=11, authority="primary"):
    """The publisher of x says otherwise later (day 5): x's version is superseded (unless
    the restatement is of a lower authority). Returns the new version."""
    mem.record_source(scope, Source(id="D", kind="report", authority=authority, publisher="E",
                                    available_by=day(5)))
    return mem.assert_fact(scope, FactIn(entity="E", attribute="x", value=value, period=Q,
                                         unit="USD", sources=("D",)))


def test_superseded_input_makes_consumers_stale_not_invalid(mem, scope, base):
    s = derive(mem, scope, "s", 30, a=base["x"], b=base["y"])
    restate_x(mem, scope)
    report = mem.impact(scope, version_id=base["x"].version_id)
    by_id = {i.id: i for i in report.items}
    assert by_id[s.version_id].reason == "stale"
    assert mem.as_of(scope, entity="E", attribute="s", cutoff=day(30)).value == 30


def test_a_newer_version_that_is_dead_or_weaker_supersedes_nothing(mem, scope, base):
    s = derive(mem, scope, "s", 30, a=base["x"], b=base["y"])
    known = restate_x(mem, scope).recorded_at
    mem.retract_source(scope, "D", reason="restatement withdrawn")
    assert mem.as_of(scope, entity="E", attribute="x", cutoff=day(30)).value == 10
    reasons = {i.id: i.reason for i in mem.impact(scope, version_id=base["x"].version_id).items}
    assert reasons[s.version_id] == "invalid", "x stands again: nothing newer to recompute from"
    then = mem.impact(scope, version_id=base["x"].version_id, known_at=known)
    assert {i.id: i.reason for i in then.items}[s.version_id] == "stale", "known before the retraction"


def test_a_restatement_of_lower_authority_supersedes_nothing(mem, scope, base):
    s = derive(mem, scope, "s", 30, a=base["x"])
    restate_x(mem, scope, authority="inference")
    assert mem.as_of(scope, entity="E", attribute="x", cutoff=day(30)).value == 10
    reasons = {i.id: i.reason for i in mem.impact(scope, version_id=base["x"].version_id).items}
    assert reasons[s.version_id] == "invalid"


def test_invalidating_an_input_invalidates_derived_facts(mem, scope, base):
    s = derive(mem, scope, "s", 30, a=base["x"], b=base["y"])
    mem.invalidate(scope, base["y"].version_id, "wrong figure")
    assert mem.as_of(scope, entity="E", attribute="s", cutoff=day(30)).status == "not_found"
    assert mem.versions(scope, [s.version_id])[0].value == 30


@pytest.mark.parametrize("cause", ["retract", "invalidate"])
def test_a_fact_dies_with_its_last_live_derivation(mem, scope, base, cause):
    """s is derived twice (from x, then from y); once y's derivation is retracted, losing
    x leaves s with no live evidence: s and what is derived from it go too."""
    first = mem.derive(scope, method="from-x", method_version="1", params={},
                       inputs={"a": base["x"].version_id},
                       output=FactIn(entity="E", attribute="s", value=30, period=Q, unit="USD"))
    known = first.recorded_at  # before the second derivation was recorded
    second = mem.derive(scope, method="from-y", method_version="1", params={},
                        inputs={"a": base["y"].version_id},
                        output=FactIn(entity="E", attribute="s", value=30, period=Q, unit="USD"))
    assert second.version_id == first.version_id
    t = derive(mem, scope, "t", 60, a=first)
    then = {i.id: i.reason for i in mem.impact(scope, source_id="A", known_at=known).items}
    assert then[first.version_id] == "invalid", "as known then, x's derivation was s's only one"
    mem.retract_source(scope, "B", reason="withdrawn")
    assert mem.as_of(scope, entity="E", attribute="s", cutoff=day(30)).value == 30
    preview = {i.id: i.reason for i in mem.impact(scope, source_id="A").items}
    assert preview[first.version_id] == "invalid" and preview[t.version_id] == "invalid"
    if cause == "retract":
        mem.retract_source(scope, "A", reason="withdrawn")
    else:
        mem.invalidate(scope, base["x"].version_id, "wrong figure")
    for attr in ("s", "t"):
        assert mem.as_of(scope, entity="E", attribute=attr, cutoff=day(30)).status == "not_found"


@pytest.mark.parametrize("other_role", [False, True])
def test_a_role_without_inputs_is_refused_before_anything_is_written(mem, scope, base, other_role):
    inputs = {"b": [], **({"a": base["x"].version_id} if other_role else {})}
    before = mem.counts(scope)
    with pytest.raises(InputError, match=r"inputs\['b'\]: a role needs at least one version id"):
        mem.derive(scope, method="m", method_version="1", params={}, inputs=inputs,
                   output=FactIn(entity="E", attribute="w", value=1, period=Q, unit="USD"))
    assert mem.counts(scope) == before


def test_look_ahead_input_is_refused(mem, scope, base):
    with pytest.raises(InputError, match="look-ahead"):
        mem.derive(scope, method="m", method_version="1", params={},
                   inputs={"a": base["y"].version_id},
                   output=FactIn(entity="E", attribute="w", value=1, period=Q, unit="USD"),
                   cutoff=day(0))


def test_cycle_is_refused(mem, scope, base):
    s = derive(mem, scope, "s", 30, a=base["x"])
    with pytest.raises(InputError, match="cycle"):
        mem.derive(scope, method="back", method_version="1", params={}, inputs={"a": s.version_id},
                   output=FactIn(entity="E", attribute="x", value=10, period=Q, unit="USD"))


def test_depth_limit_is_honoured_and_said(mem, scope, base):
    s = derive(mem, scope, "s", 30, a=base["x"])
    derive(mem, scope, "t", 60, a=s)
    report = mem.impact(scope, source_id="A", max_depth=3)
    assert report.truncated
    assert max(i.depth for i in report.items) <= 3


def test_lineage_exports_a_networkx_graph(mem, scope, base, tmp_path):
    s = derive(mem, scope, "s", 30, a=base["x"], b=base["y"])
    up = mem.lineage(scope, s.version_id, "upstream")
    assert nx.is_directed_acyclic_graph(up)
    assert {"s:A", "s:B"} <= set(up.nodes)
    assert nx.has_path(up, "s:A", f"f:{s.version_id}")
    nx.write_graphml(up, tmp_path / "l.graphml")
    down = mem.lineage(scope, base["x"].version_id, "downstream")
    assert f"f:{s.version_id}" in down
    [drv] = [n for n in down if n.startswith("d:")]
    assert down.nodes[drv]["kind"] == "derivation" and down.nodes[drv]["label"] == "calc-s"
    assert down.edges[f"f:{base['x'].version_id}", drv]["role"] == "a"


def test_invalidating_a_superseded_input_still_invalidates_what_was_derived(mem, scope, base):
    s = derive(mem, scope, "s", 30, a=base["x"], b=base["y"])
    restate_x(mem, scope)
    mem.invalidate(scope, base["x"].version_id, "loader bug")
    assert mem.as_of(scope, entity="E", attribute="s", cutoff=day(3)).status == "not_found"
    assert mem.versions(scope, [s.version_id])[0].value == 30


def test_rederiving_is_idempotent_and_a_changed_formula_needs_a_new_version(mem, scope, base):
    args = dict(method="sum", method_version="1", inputs={"a": base["x"].version_id})
    out = FactIn(entity="E", attribute="w", value=10, period=Q, unit="USD")
    first = mem.derive(scope, params={"k": 1, "j": 2}, output=out, **args)
    before = mem.counts(scope)
    again = mem.derive(scope, params={"j": 2, "k": 1}, output=out, **args)
    assert again.version_id == first.version_id and mem.counts(scope) == before
    with pytest.raises(InputError, match="new method_version"):
        changed = FactIn(entity="E", attribute="w", value=11, period=Q, unit="USD")
        mem.derive(scope, params={"k": 1, "j": 2}, output=changed, **args)
    assert mem.counts(scope) == before


def test_impact_with_a_cutoff_lists_only_what_was_public_by_then(mem, scope, base):
    s = derive(mem, scope, "s", 30, a=base["x"], b=base["y"])  # public from day 1
    ids = {i.id for i in mem.impact(scope, source_id="A", cutoff=day(0)).items}
    assert base["x"].version_id in ids and s.version_id not in ids
    assert s.version_id in {i.id for i in mem.impact(scope, source_id="A", cutoff=day(1)).items}


def test_lineage_of_an_unknown_version_is_not_found(mem, scope, base):
    with pytest.raises(NotFoundError):
        mem.lineage(scope, "fv_nope", "upstream")


def test_other_evidence_counts_only_while_it_stands(mem, scope, base):
    s = derive(mem, scope, "s", 15, a=base["z"])                   # z has A and C
    before = mem.impact(scope, source_id="A")
    assert {i.id: i.reason for i in before.items}[base["z"].version_id] == "survives"
    assert s.version_id not in {i.id for i in before.items}, "nothing below a survivor is hit"
    known = s.recorded_at  # the tenant's last write before C's retraction
    mem.retract_source(scope, "C", reason="withdrawn")
    after = {i.id: i.reason for i in mem.impact(scope, source_id="A").items}
    assert after[base["z"].version_id] == "invalid" and after[s.version_id] == "invalid"
    then = {i.id: i.reason for i in mem.impact(scope, source_id="A", known_at=known).items}
    assert then[base["z"].version_id] == "survives", "known_at before C's retraction"


def test_a_retraction_that_leaves_an_input_public_only_later_takes_what_was_derived_from_it_before(
        mem, scope, base):
    """w is filed by A (day 0) and again by C (day 2): one version, public from day 0; s =
    derive(w) is public from day 0. Withdraw A: w stands, public from day 2 only, so s -
    made from a w not public before day 2 - must not be public at day 1. It is invalid as
    known after the retraction (a recompute restores it); as known before, it stands from
    day 0 as it did. A fact filed once by A and C together (z: public from day 2) loses
    nothing of its time, and what was derived from it is not touched."""
    first = mem.assert_fact(scope, FactIn(entity="E", attribute="w", value=7, period=Q, unit="USD",
                                          sources=("A",)))
    again = mem.assert_fact(scope, FactIn(entity="E", attribute="w", value=7, period=Q, unit="USD",
                                          sources=("C",)))
    assert again.version_id == first.version_id and first.available_by == day(0)
    s = derive(mem, scope, "s", 15, a=first)
    kept = derive(mem, scope, "k", 10, a=base["z"])
    known = kept.recorded_at
    report = {i.id: i.reason for i in mem.retract_source(scope, "A", reason="withdrawn").items}
    assert report[first.version_id] == "survives" and report[s.version_id] == "invalid"
    assert report[base["z"].version_id] == "survives" and kept.version_id not in report

    def status(attr, cutoff, known_at=None):
        return mem.as_of(scope, entity="E", attribute=attr, period=Q, unit="USD", cutoff=cutoff,
                         known_at=known_at).status

    assert (status("w", day(1)), status("w", day(3))) == ("not_found", "active")
    assert (status("s", day(1)), status("s", day(3))) == ("not_found", "not_found")
    assert (status("s", day(1), known), status("w", day(1), known)) == ("active", "active")
    assert status("k", day(3)) == "active"


@pytest.mark.parametrize("cause", ["retract", "invalidate"])
def test_an_input_left_with_a_later_derivation_alone_takes_what_was_derived_from_it_before(
        mem, scope, base, cause):
    """s is derived from x (A, day 0) and again from y (B, day 1): one version, public from
    day 0, and t = derive(s) is public from day 0. Withdraw A (or invalidate x): s stands
    by y's derivation alone, public from day 1, so t - made from an s not public before
    day 1 - must not be public at day 0: it is invalid, as when a later filing is what is
    left."""
    def from_(method, version):
        return mem.derive(scope, method=method, method_version="1", params={},
                          inputs={"a": version.version_id},
                          output=FactIn(entity="E", attribute="s", value=30, period=Q, unit="USD"))

    s = from_("from-x", base["x"])
    assert from_("from-y", base["y"]).version_id == s.version_id and s.available_by == day(0)
    t = derive(mem, scope, "t", 60, a=s)
    report = {i.id: i.reason for i in (mem.retract_source(scope, "A", reason="withdrawn") if cause == "retract"
                                       else mem.impact(scope, version_id=base["x"].version_id)).items}
    assert report[s.version_id] == "survives" and report[t.version_id] == "invalid"
    if cause == "invalidate":
        mem.invalidate(scope, base["x"].version_id, "wrong figure")

    def status(attr, cutoff):
        return mem.as_of(scope, entity="E", attribute=attr, period=Q, unit="USD", cutoff=cutoff).status

    assert (status("s", day(0)), status("s", day(3))) == ("not_found", "active")
    assert (status("t", day(0)), status("t", day(3))) == ("not_found", "not_found")


def test_a_filed_input_left_with_its_later_derivation_alone_takes_what_was_derived_from_it_before(
        mem, scope, base):
    """s is filed by A (day 0) and derived again from y (day 1): one version; t = derive(s)
    is public from day 0. Withdraw A: s stands by its derivation, public from day 1 only,
    so t is invalid."""
    s = mem.assert_fact(scope, FactIn(entity="E", attribute="s", value=20, period=Q, unit="USD", sources=("A",)))
    assert derive(mem, scope, "s", 20, a=base["y"]).version_id == s.version_id
    t = derive(mem, scope, "t", 40, a=s)
    assert t.available_by == day(0)
    report = {i.id: i.reason for i in mem.retract_source(scope, "A", reason="withdrawn").items}
    assert report[s.version_id] == "survives" and report[t.version_id] == "invalid"
    assert mem.as_of(scope, entity="E", attribute="t", period=Q, unit="USD", cutoff=day(0)).status == "not_found"


def test_a_later_filing_of_a_derived_value_takes_nothing_from_what_stands(mem, scope, base):
    """Only an input that lost its earlier evidence delays what was derived from it: w
    (filed by A, day 0, and C, day 2) and g (day 5) make s1, public from day 5, which a
    filing E (day 6) also reports; s2 = derive(s1). Withdrawing A delays w to day 2, after
    which s1 was made: nothing of s1 or s2 is touched, though s1 is backed by E's later
    filing too."""
    for sid, n in (("D", 5), ("E", 6)):
        mem.record_source(scope, Source(id=sid, kind="report", authority="primary", publisher="E",
                                        available_by=day(n)))

    def fact(attr, value, *sources):
        return mem.assert_fact(scope, FactIn(entity="E", attribute=attr, value=value, period=Q, unit="USD",
                                             sources=sources))

    w, _ = fact("w", 7, "A"), fact("w", 7, "C")
    s1 = derive(mem, scope, "s1", 9, a=w, b=fact("g", 2, "D"))
    assert fact("s1", 9, "E").version_id == s1.version_id and s1.available_by == day(5)
    s2 = derive(mem, scope, "s2", 18, a=s1)
    report = {i.id: i.reason for i in mem.retract_source(scope, "A", reason="withdrawn").items}
    assert report[w.version_id] == "survives"
    assert report.get(s1.version_id) in (None, "survives") and report.get(s2.version_id) in (None, "survives")
    assert mem.as_of(scope, entity="E", attribute="s2", period=Q, unit="USD", cutoff=day(7)).status == "active"


def test_impact_leaves_the_garbage_collector_as_it_found_it(mem, scope, base):
    derive(mem, scope, "s", 30, a=base["x"])
    assert gc.isenabled()
    mem.impact(scope, source_id="A")
    assert gc.isenabled()
    gc.disable()
    try:
        mem.impact(scope, source_id="A")
        assert not gc.isenabled()
    finally:
        gc.enable()
