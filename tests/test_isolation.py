"""Nothing crosses a tenant, nothing outlives its erasure (issue 13, section 3).

Every public call that takes something a previous call returned - a search result or
its hits, an answer's or a history's version ids, a snapshot id, a candidate id, a
memory id, a source id - is handed the object of tenant A while working in tenant B.
Each must refuse it (or, for a read by id, find nothing), and afterwards nothing of A
is visible or written in B, and A is exactly as it was: the whole stored state of both
tenants (every node's labels, properties and degree) is compared before and after.

A context renders only what its own scope holds at its search's cutoff and known_at:
the memories are re-read there, never taken from the objects passed in, so an
altered hit renders the stored value and a memory erased since the search is left out.
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pytest
from world import Q1, World, t

from graphmem import (
    FactIn,
    InputError,
    Memory,
    NotFoundError,
    Scope,
    TaskStateIn,
)
from graphmem.models import ExperienceIn


def _cypher(mem: Memory, query: str, **params: Any) -> list[dict[str, Any]]:
    """A raw read for the test's own bookkeeping (not a graphmem statement)."""
    with mem.db.driver.session(database=mem.db.database) as session:
        return session.run(query, params).data()


def _state(mem: Memory, *tenants: str) -> list[tuple[Any, ...]]:
    """Every node of these tenants as (tenant, labels, properties, degree), sorted."""
    rows = _cypher(mem, "MATCH (n) WHERE n.tenant IN $tenants RETURN n.tenant AS t, "
                        "labels(n) AS l, properties(n) AS p, COUNT { (n)--() } AS d",
                   tenants=list(tenants))
    return sorted((r["t"], sorted(r["l"]), sorted((k, str(v)) for k, v in r["p"].items()),
                   r["d"]) for r in rows)


def _crossing(mem: Memory, tenant: str) -> int:
    """Relationships between a node of ``tenant`` and a node of another tenant."""
    [row] = _cypher(mem, "MATCH (n)-[r]-(m) WHERE n.tenant = $t AND m.tenant <> $t "
                         "RETURN count(r) AS n", t=tenant)
    return row["n"]


class Two:
    """Tenant A with a fact (a conflict and a derived fact on it), an experience, a task
    state, a candidate and a context snapshot; tenant B with a fact and a snapshot of
    its own."""

    def __init__(self, mem: Memory, scope: Scope):
        self.mem = mem
        self.a = World(mem, scope)
        self.b = World(mem, Scope(tenant=scope.tenant + "-b"))
        a = self.a
        a.source("10q", t("2024-05-01"), publisher="cik:1")
        a.source("blog", t("2024-05-01"), publisher="cik:2")
        self.fact = a.fact(Decimal("918273"), "10q")
        self.rival = a.fact(Decimal("918000"), "blog")  # a conflict: two publishers
        self.derived = mem.derive(a.scope, method="double", method_version="1", params={},
                                  inputs={"x": self.fact.version_id},
                                  output=a.fact_in(Decimal("1836546"), attribute="doubled"))
        self.experience = a.experience("10q", outcome="ledger 918273 reconciled",
                                       entities=("acme",))
        self.task = mem.save_task_state(a.scope, TaskStateIn(task_id="T-A", goal="audit acme",
                                                             entities=("acme",)))
        self.candidate = mem.remember_fact(a.scope, FactIn(
            entity="acme", attribute="secret", value=Decimal("918273"), period=Q1))
        self.result = a.search("acme", match="any")
        assert {h.type for h in self.result.hits} == {"fact", "experience", "task_state"}
        self.context = mem.build_context(a.scope, task_id="T-A", memories=self.result,
                                         token_budget=4000)
        assert "918273" in self.context.rendered
        b = self.b
        b.source("own", t("2024-05-01"))
        b.fact(Decimal("5"), "own")
        self.b_context = mem.build_context(b.scope, task_id="T-B", memories=b.search("acme"),
                                           token_budget=4000)

    def state(self) -> list[tuple[Any, ...]]:
        return _state(self.mem, self.a.scope.tenant, self.b.scope.tenant)


@pytest.fixture
def two(mem: Memory, scope: Scope) -> Two:
    return Two(mem, scope)


# Each case: a call in tenant B given something of tenant A, and what it must do:
# raise (InputError / NotFoundError) or return a value that shows nothing of A.
CASES: dict[str, tuple[Callable[[Two], Any], Any]] = {
    "build_context(search result)": (lambda w: w.mem.build_context(
        w.b.scope, task_id="T", memories=w.result, token_budget=4000), InputError),
    "build_context(fact hits)": (lambda w: w.mem.build_context(
        w.b.scope, task_id="T", token_budget=4000,
        memories=[h for h in w.result.hits if h.type == "fact"]), InputError),
    "build_context(experience hit)": (lambda w: w.mem.build_context(
        w.b.scope, task_id="T", token_budget=4000,
        memories=[h for h in w.result.hits if h.type == "experience"]), InputError),
    "build_context(task state hit)": (lambda w: w.mem.build_context(
        w.b.scope, task_id="T", token_budget=4000,
        memories=[h for h in w.result.hits if h.type == "task_state"]), InputError),
    "context_snapshot(snapshot id)": (lambda w: w.mem.context_snapshot(
        w.b.scope, w.context.snapshot_id), NotFoundError),
    "trace(snapshot id)": (lambda w: w.mem.trace(
        w.b.scope, w.context.snapshot_id, w.fact.version_id), NotFoundError),
    "trace(memory id)": (lambda w: w.mem.trace(
        w.b.scope, w.b_context.snapshot_id, w.fact.version_id).outcome, "not_stored"),
    "trace(memory id in a snapshot listing it)": (lambda w: w.mem.trace(
        w.b.scope, w.b_context.snapshot_id, w.b_context.included[0].memory_id).outcome,
        "included"),  # the control: B's own memory is traced
    "versions(version ids)": (lambda w: w.mem.versions(
        w.b.scope, [w.fact.version_id, w.derived.version_id]), []),
    "memories(memory ids)": (lambda w: w.mem.memories(
        w.b.scope, [w.experience.id, w.task.id]), []),
    "invalidate(version id)": (lambda w: w.mem.invalidate(
        w.b.scope, w.fact.version_id, reason="wrong"), NotFoundError),
    "resolve(answer's candidates)": (lambda w: w.mem.resolve(
        w.b.scope, versions=[v.version_id for v in w.a.read(t("2025-01-01")).candidates],
        value=Decimal("1"), reason="pick", by="analyst"), NotFoundError),
    "derive(input version id)": (lambda w: w.mem.derive(
        w.b.scope, method="copy", method_version="1", params={},
        inputs={"x": w.fact.version_id},
        output=w.b.fact_in(Decimal("918273"), attribute="copied")), NotFoundError),
    "impact(version id)": (lambda w: w.mem.impact(
        w.b.scope, version_id=w.fact.version_id), NotFoundError),
    "impact(source id)": (lambda w: w.mem.impact(w.b.scope, source_id="10q"), NotFoundError),
    "retract_source(source id)": (lambda w: w.mem.retract_source(
        w.b.scope, "10q", reason="withdrawn"), NotFoundError),
    "lineage(version id)": (lambda w: w.mem.lineage(
        w.b.scope, w.derived.version_id, "upstream"), NotFoundError),
    "lineage(downstream)": (lambda w: w.mem.lineage(
        w.b.scope, w.fact.version_id, "downstream"), NotFoundError),
    "approve(candidate id)": (lambda w: w.mem.approve(
        w.b.scope, w.candidate.id, by="analyst"), NotFoundError),
    "reject(candidate id)": (lambda w: w.mem.reject(
        w.b.scope, w.candidate.id, reason="no"), NotFoundError),
    "assert_fact(source ids)": (lambda w: w.mem.assert_fact(
        w.b.scope, w.b.fact_in(Decimal("918273"), "10q", attribute="copied")), InputError),
    "source(source id)": (lambda w: w.mem.source(w.b.scope, "10q"), None),
}


@pytest.mark.parametrize("case", list(CASES))
def test_an_object_of_one_tenant_is_refused_or_finds_nothing_in_another(two, case):
    call, expected = CASES[case]
    before = two.state()
    if isinstance(expected, type) and issubclass(expected, Exception):
        with pytest.raises(expected) as info:
            call(two)
        assert "918273" not in str(info.value)  # the error shows nothing of A either
    else:
        assert call(two) == expected
    assert two.state() == before  # nothing written in B, nothing changed in A
    assert _crossing(two.mem, two.b.scope.tenant) == 0


def test_a_write_in_another_tenant_naming_its_sources_links_nothing_across(two):
    """Ids passed to gated writes are names looked up in the caller's scope: B's
    candidates name A's source ids as text, nothing more, and A is unchanged."""
    mem, b = two.mem, two.b
    a_before = _state(mem, two.a.scope.tenant)
    fact = mem.remember_fact(b.scope, b.fact_in(Decimal("7"), "10q", attribute="copied"))
    experience = mem.remember_experience(b.scope, ExperienceIn(
        trigger="reconcile", outcome="done", evidence=("10q",)))
    task = mem.save_task_state(b.scope, TaskStateIn(task_id="T", goal="g",
                                                    artifact_refs=("10q",)))
    assert (fact.status, experience.status, task.status) == ("candidate", "candidate", "live")
    assert "not recorded in this scope" in fact.reasons[0]
    assert _state(mem, two.a.scope.tenant) == a_before
    assert _crossing(mem, b.scope.tenant) == 0
    assert mem.erase(b.scope, source_id="10q", reason="forget") == 0  # names B's, not A's
    assert _state(mem, two.a.scope.tenant) == a_before


def test_a_context_of_another_scope_of_the_same_tenant_is_refused_too(two):
    """A scope, not only a tenant, is the boundary (a project beside the tenant)."""
    other = World(two.mem, Scope(tenant=two.a.scope.tenant, project="p"))
    with pytest.raises(InputError, match="scope"):
        two.mem.build_context(other.scope, task_id="T", memories=two.result,
                              token_budget=4000)
    with pytest.raises(InputError, match=r"memories\[0\]"):
        two.mem.build_context(other.scope, task_id="T", memories=list(two.result.hits),
                              token_budget=4000)


def test_a_context_renders_what_its_scope_holds_not_what_the_hits_say(two):
    a, mem = two.a, two.mem
    [hit] = [h for h in a.search("doubled").hits]
    forged_version = hit.answer.version.model_copy(update={"value": Decimal("777777")})
    forged = hit.model_copy(update={"answer": hit.answer.model_copy(
        update={"version": forged_version})})
    ctx = mem.build_context(a.scope, task_id="T", memories=[forged], token_budget=4000)
    assert "= 1836546 |" in ctx.rendered and "777777" not in ctx.rendered
    assert ctx.cutoff == hit.answer.cutoff and ctx.known_at == hit.answer.known_at


def test_a_memory_erased_after_the_search_is_left_out_of_the_context(two):
    a, mem = two.a, two.mem
    result = a.search("acme", match="any")  # before the erasure
    assert mem.erase(a.scope, source_id="10q", reason="GDPR request") == 2  # fact + derived
    ctx = mem.build_context(a.scope, task_id="T", memories=result, token_budget=4000)
    for text in ("918273", "1836546", "reconciled"):
        assert text not in ctx.rendered, text
    assert two.fact.version_id not in ctx.considered
    assert "918000" in ctx.rendered  # the rival, now the only live version: active
    [rival] = [i for i in ctx.included if i.memory_id == two.rival.version_id]
    assert rival.status == "active"
    traced = mem.trace(a.scope, ctx.snapshot_id, two.fact.version_id)
    assert (traced.outcome, traced.filter) == ("filtered", "status:erased")


def test_hits_of_two_searches_at_different_times_are_refused(two):
    a, mem = two.a, two.mem
    early = [h for h in a.search("acme", cutoff=t("2024-06-01")).hits if h.type == "fact"]
    late = [h for h in a.search("acme", cutoff=t("2025-06-01")).hits if h.type == "fact"]
    with pytest.raises(InputError, match=r"memories\[1\].*one search"):
        mem.build_context(a.scope, task_id="T", memories=[early[0], late[0]],
                          token_budget=4000)


def test_erasing_a_source_scrubs_its_uri_from_lines_of_facts_that_keep_other_evidence(two):
    """A fact evidenced by two sources survives the erasure of one, but a rendered line
    that listed the erased source's uri (its payload) does not keep it."""
    mem, a = two.mem, two.a
    a.source("leak", t("2024-05-01"), publisher="cik:1")
    a.fact(Decimal("918273"), "leak")  # the same value: evidence for the same version
    ctx = mem.build_context(a.scope, task_id="T", memories=a.search("revenue", match="any"),
                            token_budget=4000)
    assert "https://example.test/leak" in ctx.rendered
    mem.erase(a.scope, source_id="leak", reason="GDPR request")
    [v] = mem.versions(a.scope, [two.fact.version_id])
    assert not v.erased and v.value == Decimal("918273")  # other live evidence: it stays
    assert "https://example.test/leak" not in mem.context_snapshot(a.scope, ctx.snapshot_id).rendered
