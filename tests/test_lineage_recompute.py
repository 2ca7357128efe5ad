"""Lineage against the real Neo4j: following an impact's recompute order, and the cutoff
and depth of impact and lineage (a base without test_lineage's fact of two filings)."""

from __future__ import annotations

import pytest
from test_lineage import Q, day, record_abc

from graphmem import FactIn, NotFoundError


@pytest.fixture
def base(mem, scope):
    """test_lineage's record_abc, then facts x (A), y (B)."""
    record_abc(mem, scope)
    return {"x": fact(mem, scope, "x", 10, "A"), "y": fact(mem, scope, "y", 20, "B")}


def fact(mem, scope, attr, value, *sources):
    return mem.assert_fact(scope, FactIn(entity="E", attribute=attr, value=value, period=Q,
                                         unit="USD", sources=sources))


def status(mem, scope, attr, cutoff, known_at=None):
    return mem.as_of(scope, entity="E", attribute=attr, period=Q, unit="USD", cutoff=cutoff,
                     known_at=known_at).status


# ---------------------------------------------------------------- recompute


def test_recomputing_what_the_recompute_order_names_restores_it(mem, scope, base):
    """w is filed by A (day 0) and C (day 2); s = derive(w) is public from day 0. Withdraw
    A: s looked ahead and is invalid, its derivation first in the recompute order. Running
    that very derivation again - what the report asks for - must record s again, public
    from day 2 (w's time now), and leave the past as known before untouched. It raised an
    InputError about an immutable source named after the derivation instead."""
    w = fact(mem, scope, "w", 7, "A")
    assert fact(mem, scope, "w", 7, "C").version_id == w.version_id
    args = dict(method="m", method_version="1", params={}, inputs={"a": w.version_id},
                output=FactIn(entity="E", attribute="s", value=15, period=Q, unit="USD"))
    s = mem.derive(scope, **args)
    known = s.recorded_at
    report = mem.retract_source(scope, "A", reason="withdrawn")
    assert {i.id: i.reason for i in report.items}[s.version_id] == "invalid"
    assert len(report.recompute_order) == 1
    again = mem.derive(scope, **args)
    assert again.value == 15 and again.available_by == day(2)
    assert (status(mem, scope, "s", day(1)), status(mem, scope, "s", day(3))) == ("not_found", "active")
    assert status(mem, scope, "s", day(1), known) == "active", "as known before, it stood from day 0"
    before = mem.counts(scope)
    assert mem.derive(scope, **args).version_id == again.version_id, "re-sent: the same"
    assert mem.counts(scope) == before


def test_rederiving_a_withdrawn_derivation_never_returns_a_dead_version_silently(mem, scope, base):
    """A derivation withdrawn by retracting its own source, derived again with the same
    arguments: the call returned the output version as if recorded, while every read
    said not_found. Derived again, it is recorded again (a recompute), as of now."""
    args = dict(method="m", method_version="1", params={}, inputs={"a": base["x"].version_id},
                output=FactIn(entity="E", attribute="s", value=15, period=Q, unit="USD"))
    s = mem.derive(scope, **args)
    [drv] = [n for n in mem.lineage(scope, s.version_id, "upstream") if n.startswith("d:")]
    mem.retract_source(scope, f"derivation:{drv[2:]}", reason="wrong formula run")
    assert status(mem, scope, "s", day(3)) == "not_found"
    mem.derive(scope, **args)
    assert status(mem, scope, "s", day(3)) == "active"


def derive(mem, scope, attr, value, **inputs):
    return mem.derive(scope, method=f"calc-{attr}", method_version="1", params={},
                      inputs={role: v.version_id for role, v in inputs.items()},
                      output=FactIn(entity="E", attribute=attr, value=value, period=Q, unit="USD"))


# ---------------------------------------------------------------- impact and lineage


def test_impact_with_a_cutoff_lists_no_derivation_that_was_not_public_by_then(mem, scope, base):
    """s = x + y is public from day 1. As of day 0 the report left s out but still listed
    the derivation making it (counts: derivations_invalid=1) and put it in the recompute
    order: a derivation nobody could have run by then."""
    derive(mem, scope, "s", 30, a=base["x"], b=base["y"])
    report = mem.impact(scope, source_id="A", cutoff=day(0))
    assert [(i.kind, i.id) for i in report.items] == [("fact", base["x"].version_id)]
    assert report.recompute_order == () and report.counts == {"facts_invalid": 1}
    later = mem.impact(scope, source_id="A", cutoff=day(1))
    assert len(later.recompute_order) == 1 and later.counts["derivations_invalid"] == 1


def test_impact_never_lists_a_node_deeper_than_max_depth(mem, scope, base):
    """max_depth=0 listed the origin's facts at depth 1."""
    derive(mem, scope, "s", 30, a=base["x"])
    report = mem.impact(scope, source_id="A", max_depth=0)
    assert report.items == () and report.truncated


def test_lineage_depth_counts_the_same_way_up_and_down(mem, scope, base):
    """x -> d(s) -> s. Upstream of s with max_depth=2 shows its derivation and x; downstream
    of x with max_depth=2 showed x alone (the walk counted x itself as depth 1)."""
    s = derive(mem, scope, "s", 30, a=base["x"])
    up = {n for n in mem.lineage(scope, s.version_id, "upstream", max_depth=2) if not n.startswith("s:")}
    down = set(mem.lineage(scope, base["x"].version_id, "downstream", max_depth=2))
    assert up == down == {f"f:{base['x'].version_id}", f"f:{s.version_id}",
                          next(n for n in up if n.startswith("d:"))}
    assert set(mem.lineage(scope, base["x"].version_id, "downstream", max_depth=0)) == {
        f"f:{base['x'].version_id}"}



def test_lineage_as_recorded_by_a_past_known_at_shows_what_a_number_was_built_on_then(mem, scope, base):
    """s = derive(x). Later, x is corroborated by C's filing and s derived a second way
    (from y). Upstream lineage as recorded before those writes shows x's filing A and one
    derivation only; downstream of y as recorded then holds y alone; a version recorded
    after known_at is not found. Upstream lineage took no known_at and drew today's graph."""
    s = derive(mem, scope, "s", 30, a=base["x"])
    then = s.recorded_at
    assert fact(mem, scope, "x", 10, "C").version_id == base["x"].version_id  # corroborated later
    mem.derive(scope, method="other", method_version="1", params={}, inputs={"b": base["y"].version_id},
               output=FactIn(entity="E", attribute="s", value=30, period=Q, unit="USD"))
    late = fact(mem, scope, "w", 1, "C")
    now = mem.lineage(scope, s.version_id, "upstream")
    past = mem.lineage(scope, s.version_id, "upstream", known_at=then)
    assert {"s:A", "s:C", f"f:{base['y'].version_id}"} <= set(now)
    assert {n for n in past if n[:2] in ("s:", "d:")} == {"s:A", next(n for n in past if n.startswith("d:"))}
    assert f"f:{base['y'].version_id}" not in past
    assert set(mem.lineage(scope, base["y"].version_id, "downstream", known_at=then)) == {
        f"f:{base['y'].version_id}"}  # y alone: the second derivation was recorded later
    assert f"f:{s.version_id}" in set(mem.lineage(scope, base["y"].version_id, "downstream"))
    with pytest.raises(NotFoundError, match="as recorded by"):
        mem.lineage(scope, late.version_id, "upstream", known_at=then)
