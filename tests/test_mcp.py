"""``graphmem mcp`` on the real Neo4j, through MCP client sessions: in-memory sessions (the
SDK's in-memory transport, JSON-RPC included) for every tool, its annotations, the grants,
the fixed scope, conflicts, as-of answers, the echo guard and the error shape; and the
real CLI once over streamable HTTP on a loopback port (tokens per scope) and once over
stdio."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import os
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Awaitable, Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import neo4j
import pytest
from world import FAR, Q1, Q2, UTC, World, t

pytest.importorskip("mcp")

import httpx2  # noqa: E402
from click.testing import CliRunner  # noqa: E402
from mcp import Client, StdioServerParameters  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402

import graphmem.db as gdb  # noqa: E402
from graphmem import FactIn, Memory, Scope  # noqa: E402
from graphmem.cli import main  # noqa: E402
from graphmem.integrations.mcp import FixedAccess, Grants, TokenAccess, build_server  # noqa: E402

READS = {"as_of", "facts", "screen", "history", "search", "lineage", "impact", "trace", "candidates"}
WRITES = {"build_context", "record_entity", "record_source", "remember_fact", "remember_experience",
          "save_task_state"}
REVIEW, ADMIN = {"approve", "reject"}, {"invalidate", "retract_source", "erase"}
ALL = Grants(allow_review=True, allow_admin=True)


def session(server: Any, steps: Callable[[Client], Awaitable[Any]]) -> Any:
    """Run ``steps`` in one MCP client session over the SDK's in-memory transport."""
    async def go() -> Any:
        async with Client(server, mode="legacy") as client:
            return await steps(client)
    return asyncio.run(go())


def call(server: Any, tool: str, **args: Any) -> Any:
    return session(server, lambda c: c.call_tool(tool, args))


def calls(server: Any, steps: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    """Several tool calls in one session, in order."""
    async def each(c: Client) -> list[Any]:
        return [await c.call_tool(tool, args) for tool, args in steps]
    return session(server, each)


def ok(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content[0].text
    return result.structured_content


def text(result: Any) -> str:
    return result.content[0].text


@pytest.fixture
def w(mem: Memory, scope: Scope) -> World:
    """acme's Q1 revenue: 100 in a 10-Q, restated to 110 by the 10-K; globex's Q1 revenue
    reported as 5 and 6 by two independent publishers (a conflict)."""
    world = World(mem, scope)
    world.source("10q", t("2024-05-01"), publisher="cik:1")
    world.source("10k", t("2025-02-01"), publisher="cik:1")
    world.fact(Decimal("100"), "10q")
    world.fact(Decimal("110"), "10k")
    world.source("wire-a", t("2024-05-02"), publisher="wire:a")
    world.source("wire-b", t("2024-05-03"), publisher="wire:b")
    world.fact(5, "wire-a", entity="globex")
    world.fact(6, "wire-b", entity="globex")
    return world


def server_for(w: World, grants: Grants | None = None, actor: str = "analyst"):
    return build_server(w.mem, FixedAccess(w.scope, actor), grants)


# ------------------------------------------------------------------ tools and annotations


def test_the_tool_set_follows_the_grants_with_truthful_annotations(w):
    def listed(grants: Grants | None) -> dict[str, Any]:
        return {t.name: t for t in session(server_for(w, grants), lambda c: c.list_tools()).tools}

    assert set(listed(None)) == READS | WRITES
    assert set(listed(Grants(read_only=True))) == READS
    assert set(listed(Grants(allow_review=True))) == READS | WRITES | REVIEW
    tools = listed(ALL)
    assert set(tools) == READS | WRITES | REVIEW | ADMIN
    for name, tool in tools.items():
        a = tool.annotations
        assert tool.description and tool.output_schema and a.title, name
        assert a.read_only_hint is (name in READS), name
        assert a.destructive_hint is (name in ADMIN), name
        assert a.idempotent_hint is (name not in {"build_context", "erase"}), name
        assert a.open_world_hint is False
        # the scope is the server's: no tool takes one
        assert not {"tenant", "scope"} & set(tool.input_schema["properties"]), name
    with pytest.raises(ValueError, match="read-only"):
        Grants(read_only=True, allow_admin=True)
    # and `graphmem mcp --help` lists exactly these tools
    help_text = CliRunner().invoke(main, ["mcp", "--help"]).output
    listed_in_help = {word.strip(",") for line in help_text.split("Tools:")[1].split("Options:")[0].splitlines()
                      for word in line.split() if word.strip(",").replace("_", "").isalpha()
                      and word.strip(",").islower()}
    assert set(tools) <= listed_in_help <= set(tools) | {"reads", "always", "writes", "off", "with"}


def test_a_tool_the_grants_leave_out_cannot_be_called(w):
    result = call(server_for(w, Grants(read_only=True)), "remember_fact", entity="acme",
                  attribute="x", value=1, period_end="2024-03-31", sources=["10k"])
    assert result.is_error and "remember_fact" in text(result)
    result = call(server_for(w), "erase", entity="acme", reason="x")
    assert result.is_error
    assert w.mem.entity(w.scope, "acme") is not None


# ------------------------------------------------------------------ reads


def test_screen_lists_every_company_with_conflicts_as_conflicts_and_no_look_ahead(w):
    server = server_for(w)
    today = ok(call(server, "screen", attribute="revenue", frame="CY2024Q1", unit="USD"))
    rows = {a["entity"]: a for a in today["answers"]}
    assert today["counts"] == {"active": 1, "conflicted": 1, "not_found": 0}
    assert rows["acme"]["value"] == "110" and rows["acme"]["sources"][0]["source_id"] == "10k"
    assert rows["globex"]["value"] is None
    assert sorted(c["value"] for c in rows["globex"]["candidates"]) == ["5", "6"]
    # before the 10-K was public the screen holds the 10-Q's figure; before any filing of
    # globex, globex is not in the universe at all (listing it would be look-ahead)
    then = ok(call(server, "screen", attribute="revenue", frame="CY2024Q1", cutoff="2024-05-01T23:00:00"))
    assert [(a["entity"], a["value"]) for a in then["answers"]] == [("acme", "100")]
    named = call(server, "screen", attribute="revenue", frame="CY2024Q1", cutoff="2024-05-01T23:00:00",
                 entities=["acme", "globex", "initech"])
    assert [a["status"] for a in ok(named)["answers"]] == ["active", "not_found", "not_found"]
    assert ok(named)["unknown"] == ["initech"] and "globex: NOT FOUND" in text(named)
    assert "CONFLICTED between 2 values" in text(call(server, "screen", attribute="revenue", frame="CY2024Q1"))
    assert "CY2025" in text(call(server, "screen", attribute="revenue", frame="CY2025"))  # nothing: no error
    bad = call(server, "screen", attribute="revenue", frame="FY24")
    assert bad.is_error and "frame" in text(bad)


def test_as_of_carries_value_times_sources_and_explain_and_differs_in_the_past(w):
    server = server_for(w)
    today = ok(call(server, "as_of", entity="acme", attribute="revenue", period_end="2024-03-31",
                    period_start="2024-01-01"))
    past = call(server, "as_of", entity="acme", attribute="revenue", cutoff="2024-06-01")
    then = ok(past)
    assert (today["status"], today["value"], today["value_type"], today["unit"]) == (
        "active", "110", "decimal", "USD")
    assert then["value"] == "100" and then["cutoff"].startswith("2024-06-01T23:59:59")
    assert today["period"] == {"start": "2024-01-01", "end": "2024-03-31"}
    assert today["event_time"] == "2024-03-31" and today["available_by"].startswith("2025-02-01")
    assert today["recorded_at"] and today["version_id"].startswith("fv_")
    [source] = today["sources"]
    assert (source["source_id"], source["authority"], source["uri"]) == (
        "10k", "primary", "https://example.test/10k")
    assert today["explain"]["superseded"] == 1 and then["explain"]["cutoff"] == 1
    assert "ACTIVE 100 USD for 2024-01-01..2024-03-31" in text(past)
    assert "https://example.test/10q" in text(past) and "removed cutoff=1" in text(past)


def test_a_conflict_comes_back_as_a_conflict(w):
    result = call(server_for(w), "as_of", entity="globex", attribute="revenue")
    out = ok(result)
    assert out["status"] == "conflicted" and out["value"] is None and out["version_id"] is None
    assert sorted(c["value"] for c in out["candidates"]) == ["5", "6"]
    assert {c["sources"][0]["publisher"] for c in out["candidates"]} == {"wire:a", "wire:b"}
    assert "CONFLICTED between 2 values" in text(result) and "none is picked" in text(result)
    found = ok(call(server_for(w), "search", text="GBX revenue"))
    assert found["hits"][0]["status"] == "conflicted"
    assert len(found["hits"][0]["memory_ids"]) == 2


def test_facts_history_and_search(w):
    server = server_for(w)
    w.fact(Decimal("120"), "10k", period=Q2)
    listed = ok(call(server, "facts", entity="acme", valid_from="2024-01-01"))
    assert [(a["period"]["end"], a["value"]) for a in listed["answers"]] == [
        ("2024-03-31", "110"), ("2024-06-30", "120")]
    assert not listed["truncated"]
    assert ok(call(server, "facts", entity="acme", limit=1))["truncated"]
    assert call(server, "facts").is_error  # neither entity nor attribute

    history = ok(call(server, "history", entity="acme", attribute="revenue", period_end="2024-03-31",
                      period_start="2024-01-01"))
    assert [v["value"] for v in history["versions"]] == ["100", "110"]
    assert [v["available_by"][:10] for v in history["versions"]] == ["2024-05-01", "2025-02-01"]

    found = call(server, "search", text="ACME revenue", cutoff="2024-06-01", types=["fact"])
    hits = ok(found)["hits"]
    assert [h["fact"]["value"] for h in hits] == ["100"]
    assert ok(found)["explain"]["matched"] >= 1 and "#1 fact" in text(found)
    assert ok(call(server, "search", text="nothing-like-this"))["status"] == "not_found"


def test_lineage_and_impact(w):
    [v] = [x for x in w.history() if x.value == Decimal("110")]
    derived = w.mem.derive(w.scope, method="double", method_version="1", params={},
                           inputs={"x": v.version_id},
                           output=FactIn(entity="acme", attribute="double revenue", value=220,
                                         period=Q1, unit="USD"))
    server = server_for(w)
    up = ok(call(server, "lineage", version_id=derived.version_id))
    assert {"s:10k", f"f:{v.version_id}"} <= {n["id"] for n in up["nodes"]}
    assert up["edges"] and not up["truncated"]
    before = ok_error(call(server, "lineage", version_id=derived.version_id,
                           known_at=(derived.recorded_at - dt.timedelta(microseconds=1)).isoformat()))
    assert before["type"] == "NotFoundError" and "as recorded by" in before["message"]
    report = ok(call(server, "impact", source_id="10k"))
    assert {i["id"]: i["reason"] for i in report["items"]}[derived.version_id] == "invalid"
    assert report["recompute_order"] and report["counts"]["facts_invalid"] >= 1
    # impact changed nothing
    assert ok(call(server, "as_of", entity="acme", attribute="double revenue"))["value"] == "220"


# ------------------------------------------------------------------ writes through the gates


def test_writes_go_through_the_gates_and_review_needs_its_grant(w):
    server = server_for(w)
    entity = ok(call(server, "record_entity", id="initech", name="Initech"))
    assert entity["recorded"] and not ok(call(server, "record_entity", id="initech", name="Other"))["recorded"]
    assert w.mem.entity(w.scope, "initech").name == "Initech"  # left unchanged
    src = ok(call(server, "record_source", id="call-1", kind="call", authority="primary",
                  available_by="2024-07-01T10:00:00Z", uri="https://example.test/call-1"))
    assert src["recorded"] and src["source"]["uri"] == "https://example.test/call-1"

    live = ok(call(server, "remember_fact", entity="initech", attribute="headcount", value=140,
                   period_end="2024-06-30", sources=["call-1"]))
    assert (live["status"], live["fact"]["value"], live["fact"]["value_type"]) == ("live", "140", "decimal")
    again = ok(call(server, "remember_fact", entity="initech", attribute="headcount", value=140,
                    period_end="2024-06-30", sources=["call-1"]))
    assert again["id"] == live["id"]  # idempotent
    exact = ok(call(server, "remember_fact", entity="initech", attribute="margin",
                    value="0.1234567890123456789", value_type="decimal", period_end="2024-06-30",
                    sources=["call-1"]))
    assert exact["fact"]["value"] == "0.1234567890123456789"

    unsourced = call(server, "remember_fact", entity="initech", attribute="rumour", value="big deal",
                     period_end="2024-06-30")
    cand = ok(unsourced)
    assert cand["status"] == "candidate" and "no source" in cand["reasons"][0]
    assert "CANDIDATE" in text(unsourced)
    exp = ok(call(server, "remember_experience", trigger="export timed out with E-77",
                  procedure=["split the export"], outcome="export finished", evidence=["call-1"]))
    assert exp["status"] == "live" and exp["experience"]["outcome"] == "export finished"
    unobserved = ok(call(server, "remember_experience", trigger="maybe retry E-78"))
    assert unobserved["status"] == "candidate"
    task = ok(call(server, "save_task_state", task_id="T1", goal="compare", open_items=["a"]))
    assert task["task_state"]["revision"] == 1
    stale = call(server, "save_task_state", task_id="T1", goal="compare", checkpoint="b",
                 expected_revision=0)
    assert stale.is_error and ok_error(stale)["type"] == "ConcurrentWriteError"

    pending = ok(call(server, "candidates"))["candidates"]
    assert {c["id"] for c in pending} == {cand["id"], unobserved["id"]}
    assert call(server, "approve", candidate_id=cand["id"]).is_error  # not granted
    reviewer = server_for(w, Grants(allow_review=True), actor="reviewer-1")
    approved = ok(call(reviewer, "approve", candidate_id=cand["id"]))
    assert approved["status"] == "live"
    assert approved["fact"]["sources"][0]["publisher"] == "user:reviewer-1"  # the server's actor
    rejected = ok(call(reviewer, "reject", candidate_id=unobserved["id"], reason="not observed"))
    assert rejected["candidates"][0]["decided_by"] == "reviewer-1"
    assert ok(call(server, "candidates"))["candidates"] == []


def test_admin_tools_need_allow_admin_and_do_what_they_say(w):
    admin = server_for(w, Grants(allow_admin=True))
    current = ok(call(admin, "as_of", entity="acme", attribute="revenue"))
    before = w.mem.server_now()
    gone = ok(call(admin, "invalidate", version_id=current["version_id"], reason="loader bug"))
    assert gone["lifecycle"][0]["kind"] == "invalidated" and gone["lifecycle"][0]["by"] == "analyst"
    # the invalidated 110 is gone; the 10-Q's 100 is what remains, and the past is auditable
    assert ok(call(admin, "as_of", entity="acme", attribute="revenue"))["value"] == "100"
    assert ok(call(admin, "as_of", entity="acme", attribute="revenue",
                   known_at=before.isoformat()))["value"] == "110"
    report = ok(call(admin, "retract_source", source_id="10q", reason="withdrawn"))
    assert report["origin"] == "s:10q"
    assert ok(call(admin, "as_of", entity="acme", attribute="revenue"))["status"] == "not_found"
    erased = ok(call(admin, "erase", entity="globex", reason="asked to be forgotten"))
    assert erased == {"target": "entity:globex", "erased_versions": 2}
    assert ok(call(admin, "as_of", entity="globex", attribute="revenue"))["status"] == "not_found"


# ------------------------------------------------------------------ scope


def test_the_scope_is_the_servers_and_no_tool_can_widen_it(mem, scope):
    a, b = World(mem, scope), World(mem, Scope(tenant=scope.tenant + "-b"))
    a.source("10k", t("2025-02-01"), publisher="cik:1")
    a.fact(Decimal("110"), "10k")
    server_a, server_b = server_for(a), server_for(b)
    assert ok(call(server_a, "as_of", entity="acme", attribute="revenue"))["value"] == "110"
    assert ok(call(server_b, "as_of", entity="acme", attribute="revenue"))["status"] == "not_found"
    assert ok(call(server_b, "search", text="ACME revenue"))["status"] == "not_found"
    # an argument naming another scope is refused by the schema, not obeyed
    sneaky = call(server_b, "as_of", entity="acme", attribute="revenue", tenant=scope.tenant)
    assert sneaky.is_error or ok(sneaky)["status"] == "not_found"


# ------------------------------------------------------------------ context and echo guard


def test_build_context_records_a_snapshot_and_the_echo_guard_refuses_its_text(w):
    server = server_for(w)
    built = call(server, "build_context", task_id="T1", text="ACME revenue", token_budget=800)
    out = ok(built)
    assert out["snapshot_id"].startswith("ctx_") and out["rendered"] in text(built)
    [line] = [ln for ln in out["rendered"].splitlines() if ln.startswith("- [fact")]
    assert "110" in line and "10k" in line

    echo = call(server, "record_source", id="notes", kind="note", authority="inference",
                available_by="2025-03-01", title=line)
    err = ok_error(echo)
    assert err["type"] == "EchoError" and out["snapshot_id"] in err["message"]
    assert w.mem.source(w.scope, "notes") is None
    outcome = call(server, "remember_experience", trigger="asked for revenue", outcome=line,
                   evidence=["10k"])
    assert ok_error(outcome)["type"] == "EchoError"
    fine = ok(call(server, "record_source", id="notes", kind="note", authority="inference",
                   available_by="2025-03-01", title="my own observation of the filing"))
    assert fine["recorded"]

    traced = ok(call(server, "trace", snapshot_id=out["snapshot_id"], entity="acme", attribute="revenue"))
    assert traced["outcome"] == "included"
    assert {s["outcome"] for s in traced["steps"]} == {"included", "filtered"}


def test_build_context_by_ids_renders_what_is_live_then(w):
    server = server_for(w)
    versions = w.history()
    old, new = versions[0].version_id, versions[1].version_id
    out = ok(call(server, "build_context", task_id="T2", ids=[old, "exp_" + "0" * 24],
                  cutoff="2024-06-01"))
    assert out["included"] == [old] and "exp_" + "0" * 24 in out["notes"]
    later = ok(call(server, "build_context", task_id="T2", ids=[old], cutoff="2025-06-01"))
    assert later["included"] == [new] and "replaced by" in later["notes"][old]
    conflict = ok(call(server, "build_context", task_id="T2",
                       ids=[v.version_id for v in w.history(entity="globex")]))
    assert len(conflict["included"]) == 2 and "CONFLICTED" in conflict["rendered"]
    assert call(server, "build_context", task_id="T2").is_error  # neither ids nor a search


def test_build_context_by_ids_judges_experiences_and_task_states_as_a_search_does(w):
    """An experience or task state named by id is rendered only if a search at that
    cutoff and known_at would keep it: an older revision of a task is superseded, an
    experience whose only evidence was retracted is not live - each with its reason."""
    server = server_for(w, Grants(allow_admin=True))
    first = ok(call(server, "save_task_state", task_id="T9", goal="compare", checkpoint="step 1"))
    second = ok(call(server, "save_task_state", task_id="T9", goal="compare", checkpoint="step 2"))
    ok(call(server, "record_source", id="run-9", kind="tool_run", authority="primary",
            available_by="2024-01-01T00:00:00Z"))
    exp = ok(call(server, "remember_experience", trigger="deploy fails with OOM",
                  outcome="raising the heap fixed it", evidence=["run-9"]))
    out = ok(call(server, "build_context", task_id="T9", ids=[first["id"], second["id"], exp["id"]]))
    assert sorted(out["included"]) == sorted([second["id"], exp["id"]])
    assert "superseded" in out["notes"][first["id"]]
    then = w.mem.server_now().isoformat()
    ok(call(server, "retract_source", source_id="run-9", reason="the run was misread"))
    after = ok(call(server, "build_context", task_id="T9", ids=[exp["id"]]))
    assert after["included"] == [] and "retracted" in after["notes"][exp["id"]]
    before = ok(call(server, "build_context", task_id="T9", ids=[exp["id"]], known_at=then))
    assert before["included"] == [exp["id"]]  # as known before the retraction


def test_candidates_says_how_many_there_are_when_it_shows_fewer(w, monkeypatch):
    import graphmem.integrations.mcp.tools as tools
    monkeypatch.setattr(tools, "MAX_IDS", 2)
    server = server_for(w)
    for n in range(3):
        ok(call(server, "remember_experience", trigger=f"maybe retry E-{n}"))
    out = call(server, "candidates")
    assert len(ok(out)["candidates"]) == 2 and ok(out)["total"] == 3 and ok(out)["truncated"]
    assert "(showing 2 of 3)" in text(out)


# ------------------------------------------------------------------ errors and faults


def ok_error(result: Any) -> dict[str, Any]:
    assert result.is_error
    err = result.structured_content
    assert text(result) == f"{err['type']}: {err['message']}"
    return err


def test_errors_are_tool_errors_with_the_apis_messages(w):
    server = server_for(w, ALL)
    bad = ok_error(call(server, "as_of", entity="acme", attribute="revenue", cutoff="yesterday"))
    assert (bad["type"], bad["where"]) == ("InputError", "cutoff") and "yesterday" in bad["message"]
    missing = ok_error(call(server, "invalidate", version_id="fv_nope", reason="x"))
    assert missing["type"] == "NotFoundError" and "fv_nope" in missing["message"]
    period = ok_error(call(server, "as_of", entity="acme", attribute="revenue",
                           period_end="2024-01-01", period_start="2024-03-31"))
    assert period["where"] == "period_start"
    # the SDK checks every bound before the tool runs
    schema = call(server, "search", text="x", limit=0)
    assert schema.is_error and "limit" in text(schema)
    assert call(server, "search", text="x" * 1001).is_error


def test_a_cutoff_date_with_a_zone_is_the_end_of_that_day_and_a_far_time_is_refused_by_name(w):
    """A filing accepted at noon on 2025-03-03 is public by the cutoff "2025-03-03Z" (the end
    of that day, as for "2025-03-03"); a time whose UTC is outside the years 1 to 9999 is
    an InputError naming the cutoff, not an error without a message."""
    server = server_for(w)
    w.source("8k", t("2025-03-03T12:00"), publisher="cik:1")
    w.fact(Decimal("111"), "8k")
    for cutoff in ("2025-03-03", "2025-03-03Z"):
        assert ok(call(server, "as_of", entity="acme", attribute="revenue", cutoff=cutoff))["value"] == "111"
    far = ok_error(call(server, "as_of", entity="acme", attribute="revenue", cutoff="0001-01-01T00:00:00+01:00"))
    assert (far["type"], far["where"]) == ("InputError", "cutoff") and "outside the years" in far["message"]


def test_arguments_that_do_not_fit_are_refused_by_name_as_input_errors(w):
    """An argument a tool does not take (a tenant or scope the client believes it can
    choose) is refused, not answered silently from the server's scope; a wrong type or an
    out-of-bounds value is graphmem's InputError naming the argument, with structured
    content, not the SDK's validation text."""
    async def steps(c: Client) -> list[Any]:
        return [await c.call_tool(tool, args) for tool, args in [
            ("as_of", {"entity": "acme", "attribute": "revenue", "tenant": "B"}),
            ("as_of", {"entity": "acme", "attribute": "revenue", "scope": {"project": "x"}, "tenant": "B"}),
            ("as_of", {"entity": 123, "attribute": "revenue"}),
            ("search", {"text": "acme", "limit": -1}),
            ("as_of", {"entity": "acme", "attribute": "revenue", "cutoff": 12345}),
            ("as_of", {"entity": 123, "attribute": 5}),
            ("as_of", {"entity": "acme", "attribute": "revenue"}),
        ]]

    *refused, fine = session(server_for(w), steps)
    errors = [ok_error(r) for r in refused]
    assert [(e["type"], e["where"]) for e in errors] == [
        ("InputError", "tenant"), ("InputError", "scope, tenant"), ("InputError", "entity"),
        ("InputError", "limit"), ("InputError", "cutoff"), ("InputError", "entity")]
    assert errors[0]["reason"] == ("not an argument of as_of (it takes entity, attribute, period_end, period_start, "
                                   "cutoff, known_at, unit, definition, min_authority); the scope is the server's, "
                                   "never an argument")
    assert [e["reason"] for e in errors[2:]] == [
        "Input should be a valid string, got 123", "Input should be greater than or equal to 1, got -1",
        "Input should be a valid string, got 12345",
        "Input should be a valid string, got 123 (also refused: attribute)"]
    assert not any("validation error" in text(r) for r in refused)
    assert ok(fine)["value"] == "110"  # the same call without them is answered


def test_a_union_typed_argument_is_refused_by_its_name_once(w):
    """pydantic refuses a union-typed argument once per member (value.str, value.int ...):
    the error names the argument, once, and only the other arguments refused after it."""
    async def steps(c: Client) -> list[Any]:
        return [await c.call_tool("remember_fact", args) for args in [
            {"entity": "acme", "attribute": "revenue", "value": [1], "period_end": "2024-12-31"},
            {"entity": "acme", "attribute": "revenue", "value": {"a": 1}, "period_end": "soon"},
        ]]

    alone, both = [ok_error(r) for r in session(server_for(w), steps)]
    assert (alone["where"], alone["reason"]) == ("value", "Input should be a valid string, got [1]")
    assert (both["where"], both["reason"]) == ("value", "Input should be a valid string (also refused: period_end)")


def test_a_transient_fault_is_retried_by_the_policy(w, monkeypatch):
    real, failed = gdb.Tx.run, []

    def flaky(self, name, /, **params):
        if name == "fact.read" and not failed:
            failed.append(name)
            raise neo4j.exceptions.TransientError("injected: deadlock")
        return real(self, name, **params)

    monkeypatch.setattr(gdb.Tx, "run", flaky)
    out = ok(call(server_for(w), "as_of", entity="acme", attribute="revenue"))
    assert failed and out["value"] == "110"


def test_a_fault_that_outlasts_the_policy_is_reported(scope, migrated):
    with migrated.connect(retry=gdb.RetryPolicy(attempts=2, first_wait=0.01)) as quick:
        world = World(quick, scope)

        def always(self, name, /, **params):
            raise neo4j.exceptions.ServiceUnavailable("injected: no route")

        server = server_for(world)
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(gdb.Tx, "run", always)
            err = ok_error(call(server, "as_of", entity="acme", attribute="revenue", cutoff="2025-01-01"))
    assert err["type"] == "DatabaseUnavailable" and "no route" in err["message"]


# ------------------------------------------------------------------ the real CLI: HTTP and stdio


def _free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def _env(neo4j_server) -> dict[str, str]:
    env = {**os.environ, "GRAPHMEM_NEO4J_URI": neo4j_server.uri}
    if neo4j_server.auth:
        env["GRAPHMEM_NEO4J_USER"], env["GRAPHMEM_NEO4J_PASSWORD"] = neo4j_server.auth
    return env


def _graphmem() -> str:
    return str(Path(sys.executable).with_name("graphmem"))


@pytest.fixture
def http_server(migrated, tmp_path):
    """`graphmem mcp --transport http` on a free loopback port, two tokens, two tenants."""
    tenants = {"alpha": f"mcp-a-{uuid.uuid4().hex[:8]}", "beta": f"mcp-b-{uuid.uuid4().hex[:8]}"}
    tokens = {"alpha": uuid.uuid4().hex, "beta": uuid.uuid4().hex}
    from graphmem.integrations.mcp.access import digest

    (tmp_path / "tokens.toml").write_text(
        f'[[tokens]]\nname = "agent-a"\ntoken = "{tokens["alpha"]}"\ntenant = "{tenants["alpha"]}"\n\n'
        f'[[tokens]]\nname = "agent-b"\ntoken_sha256 = "{digest(tokens["beta"])}"\n'
        f'tenant = "{tenants["beta"]}"\nscope = {{ project = "p" }}\n')
    proc, port = _mcp_http(migrated, tmp_path / "tokens.toml")
    try:
        yield f"http://127.0.0.1:{port}/mcp", tokens, tenants
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def _mcp_http(migrated, tokens: Path, host: str = "127.0.0.1") -> tuple[subprocess.Popen, int]:
    """`graphmem mcp --transport http` on a free port of ``host``, once it listens."""
    port = _free_port(host)
    proc = subprocess.Popen([_graphmem(), "mcp", "--transport", "http", "--host", host, "--port", str(port),
                             "--tokens", str(tokens)],
                            env=_env(migrated), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            socket.create_connection((host, port), timeout=0.5).close()
            return proc, port
        except OSError:
            assert proc.poll() is None, proc.stderr.read().decode()
            time.sleep(0.2)
    proc.kill()
    raise AssertionError(f"graphmem mcp did not listen on {host}:{port}")


def _with_token(url: str, token: str | None, steps: Callable[[Client], Awaitable[Any]]) -> Any:
    async def go() -> Any:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        async with httpx2.AsyncClient(headers=headers, timeout=30) as http, \
                Client(streamable_http_client(url, http_client=http)) as client:
            return await steps(client)
    return asyncio.run(go())


def test_http_transport_end_to_end_with_a_scope_per_token(http_server, migrated):
    url, tokens, tenants = http_server
    for token in (None, "not-a-token-we-know"):
        refused = httpx2.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                              headers={"Authorization": f"Bearer {token}"} if token else {})
        assert refused.status_code == 401

    async def write_and_read(c: Client) -> dict[str, Any]:
        assert {t.name for t in (await c.list_tools()).tools} == READS | WRITES
        ok(await c.call_tool("record_entity", {"id": "acme"}))
        ok(await c.call_tool("record_source", {"id": "10k", "kind": "10-K", "authority": "primary",
                                               "available_by": "2025-02-01"}))
        ok(await c.call_tool("remember_fact", {"entity": "acme", "attribute": "revenue", "value": 110,
                                               "period_end": "2024-12-31", "sources": ["10k"]}))
        return ok(await c.call_tool("as_of", {"entity": "acme", "attribute": "revenue"}))

    assert _with_token(url, tokens["alpha"], write_and_read)["value"] == "110"

    async def look(c: Client) -> list[str]:
        answer = ok(await c.call_tool("as_of", {"entity": "acme", "attribute": "revenue"}))
        found = ok(await c.call_tool("search", {"text": "acme revenue"}))
        return [answer["status"], found["status"]]

    assert _with_token(url, tokens["beta"], look) == ["not_found", "not_found"]
    # a session belongs to the token that opened it: another token cannot use it
    accept = {"Accept": "application/json, text/event-stream"}
    opened = httpx2.post(url, headers={**accept, "Authorization": f"Bearer {tokens['alpha']}"}, json={
        "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"}}})
    session_id = opened.headers["mcp-session-id"]
    hijack = httpx2.post(url, headers={**accept, "Authorization": f"Bearer {tokens['beta']}",
                                       "mcp-session-id": session_id},
                         json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    assert opened.status_code == 200 and hijack.status_code == 404
    with migrated.connect() as mem:  # written in alpha's tenant, as alpha's actor's scope
        assert mem.as_of(Scope(tenant=tenants["alpha"]), entity="acme", attribute="revenue",
                         cutoff=FAR).value == Decimal("110")


def test_http_answers_a_bad_request_id_as_json_rpc_and_a_taken_port_is_one_error(http_server, migrated, tmp_path):
    """A request whose id is an object (or another type that is not a string or an
    integer) gets JSON-RPC's invalid-request error, after the token check; and a second
    server on the same port stops with graphmem's one-line error and exit 1."""
    url, tokens, _ = http_server
    accept = {"Accept": "application/json, text/event-stream"}
    authorized = {**accept, "Authorization": f"Bearer {tokens['alpha']}"}
    opened = httpx2.post(url, headers=authorized, json={"jsonrpc": "2.0", "id": "1", "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}})
    assert opened.status_code == 200  # a string id is one
    in_session = {**authorized, "mcp-session-id": opened.headers["mcp-session-id"],
                  "mcp-protocol-version": "2025-06-18"}
    notified = httpx2.post(url, headers=in_session, json={"jsonrpc": "2.0", "method": "notifications/initialized"})
    assert notified.status_code == 202  # a notification (no id) is still accepted
    for ident, kind, method in (({"a": 1}, "an object", "tools/list"), ([1], "a list", "tools/list"),
                                (True, "a boolean", "tools/list"), (None, "null", "tools/list"),
                                ({}, "an object", "notifications/cancelled")):
        bad = httpx2.post(url, headers=in_session, json={"jsonrpc": "2.0", "id": ident, "method": method,
                                                         "params": {"requestId": 7}})
        assert (bad.status_code, bad.json()) == (400, {"jsonrpc": "2.0", "id": None, "error": {
            "code": -32600, "message": f"Invalid Request: a request's id is a string or an integer, not {kind}"}})
    unauthorized = httpx2.post(url, headers={**in_session, "Authorization": "Bearer nope"},
                               json={"jsonrpc": "2.0", "id": {"a": 1}, "method": "tools/list"})
    assert unauthorized.status_code == 401
    listed = httpx2.post(url, headers=in_session, json={"jsonrpc": "2.0", "id": 7, "method": "tools/list"})
    assert listed.status_code == 200 and "as_of" in listed.text  # the session still answers
    port = url.split(":")[2].split("/")[0]
    taken = CliRunner().invoke(main, ["mcp", "--read-only", "--transport", "http", "--port", port,
                                      "--tokens", str(tmp_path / "tokens.toml")], env=_env(migrated))
    assert (taken.exit_code, taken.stderr.strip()) == (
        1, f"graphmem: error: port {port} on 127.0.0.1 is in use by another process; choose another --port")


def test_a_request_with_a_bad_id_never_reaches_the_sdk():
    """Whatever its method (here a cancellation, which the SDK would act on), a message
    whose id is an object reaches the app behind RequestIds as a notification no one
    handles, however its body was chunked, and its 202 becomes the 400; a good message
    reaches it byte for byte, with the app's own answer."""
    from graphmem.integrations.mcp.transport import REFUSED, RequestIds

    async def post(body: bytes, status: int = 202) -> tuple[bytes, list[dict]]:
        chunks = [body[:10], body[10:]]
        incoming = [{"type": "http.request", "body": c, "more_body": n == 0} for n, c in enumerate(chunks)]
        seen, sent = bytearray(), []

        async def app(scope: Any, receive: Any, send: Any) -> None:  # reads the body as the SDK does
            while (message := await receive())["more_body"]:
                seen.extend(message["body"])
            seen.extend(message["body"])
            await send({"type": "http.response.start", "status": status, "headers": [(b"mcp-session-id", b"s")]})
            await send({"type": "http.response.body", "body": b""})

        async def receive() -> dict:
            return incoming.pop(0)

        async def send(message: dict) -> None:
            sent.append(message)

        await RequestIds(app)({"type": "http", "method": "POST"}, receive, send)
        return bytes(seen), sent

    cancel = b'{"jsonrpc": "2.0", "id": {}, "method": "notifications/cancelled", "params": {"requestId": 1}}'
    seen, sent = asyncio.run(post(cancel))
    assert seen == REFUSED and sent[0]["status"] == 400 and (b"mcp-session-id", b"s") in sent[0]["headers"]
    assert b"-32600" in sent[1]["body"]
    good = b'{"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}'
    seen, sent = asyncio.run(post(good))
    assert seen == good and [m.get("status") for m in sent] == [202, None]
    seen, sent = asyncio.run(post(cancel, status=401))  # the SDK's own refusal stands
    assert seen == REFUSED and sent[0]["status"] == 401


def test_a_taken_port_is_one_error_for_mcp_ui_and_bootstrap_alike(migrated, tmp_path):
    """One check (graphmem.server.listening) for every command that serves on a port:
    the same line and exit 1, whoever holds the port (`graphmem ui` printed its address,
    then uvicorn's log line, and exited 3: "no server")."""
    tokens = tmp_path / "tokens.toml"
    tokens.write_text(f'[[tokens]]\ntoken = "{uuid.uuid4().hex}"\ntenant = "t"\n')
    lpa = Path(__file__).parent / "fixtures" / "companyfacts-CIK0001997711-lpa.json"
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        done = [CliRunner().invoke(main, command, env=_env(migrated)) for command in (
            ["mcp", "--read-only", "--transport", "http", "--port", port, "--tokens", str(tokens)],
            ["ui", "--port", port, "--tenant", "t"],
            ["bootstrap", "companyfacts", str(lpa), "--home", str(tmp_path / "home"), "--port", port])]
    expected = (1, f"graphmem: error: port {port} on 127.0.0.1 is in use by another process; choose another --port")
    assert [(d.exit_code, d.output.strip()) for d in done] == [expected] * 3


def test_stdio_transport_end_to_end(migrated, scope):
    with migrated.connect() as mem:
        world = World(mem, scope)
        world.source("10k", t("2025-02-01"), publisher="cik:1")
        world.fact(Decimal("110"), "10k")
    params = StdioServerParameters(command=_graphmem(), args=["mcp", "--read-only", "--tenant", scope.tenant],
                                   env=_env(migrated))

    async def go() -> Any:
        async with Client(params) as client:
            tools = {t.name for t in (await client.list_tools()).tools}
            return tools, ok(await client.call_tool("as_of", {"entity": "acme", "attribute": "revenue"}))

    tools, answer = asyncio.run(go())
    assert tools == READS and answer["value"] == "110"


def test_the_tokens_file_is_checked_before_the_server_starts(tmp_path):
    bad = tmp_path / "tokens.toml"
    for content, message in [
        ('[[tokens]]\ntoken = "short"\ntenant = "a"\n', "16 to 4096"),
        ('[[tokens]]\ntoken = "0123456789abcdef0"\n', "tenant"),
        ('[[tokens]]\ntoken_sha256 = "xyz"\ntenant = "a"\n', "64 hexadecimal"),
        ('[[tokens]]\ntoken = "0123456789abcdef0"\ntoken_sha256 = "' + "a" * 64 + '"\ntenant = "a"\n',
         "exactly one"),
        ('tokens = 3\n', "[[tokens]]"),
    ]:
        bad.write_text(content)
        with pytest.raises(ValueError, match=message.replace("[", r"\[")):
            TokenAccess.load(bad)
    result = CliRunner().invoke(main, ["mcp", "--transport", "http"])
    assert result.exit_code == 2 and "tokens file" in result.output  # a usage error
    # an editor's byte-order mark is no TOML error: the file loads
    bad.write_bytes(b"\xef\xbb\xbf" + b'[[tokens]]\ntoken = "0123456789abcdef0"\ntenant = "a"\n')
    assert TokenAccess.load(bad)


def test_a_token_the_file_takes_is_one_a_client_can_present(mem, tmp_path):
    """A bearer token travels in an HTTP header, which the server reads as Latin-1 and trims:
    a token with a character outside visible ASCII (sent as UTF-8) or with a space at an
    end would be refused on every request. The tokens file refuses it, naming it, and a
    token of visible ASCII (punctuation included) opens a session over HTTP."""
    listed = tmp_path / "tokens.toml"
    for token in ("pässwörd-0123456789", "0123456789abcdef ", "0123456789\tabcdef"):
        listed.write_text(f'[[tokens]]\ntoken = "{token}"\ntenant = "a"\n')
        with pytest.raises(ValueError, match="token 1: token: visible ASCII only"):
            TokenAccess.load(listed)
    token = "!#$%&'*+-./0189:;<=>?@AZ[]^_`az{|}~"
    listed.write_text(f'[[tokens]]\ntoken = "{token}"\ntenant = "a"\n')
    app = build_server(mem, TokenAccess.load(listed), Grants(read_only=True)).streamable_http_app()

    async def statuses(*presented: str) -> list[int]:
        async with app.router.lifespan_context(app), httpx2.AsyncClient(
                transport=httpx2.ASGITransport(app=app), base_url="http://127.0.0.1:8765") as http:
            return [(await http.post("/mcp", headers={
                "Authorization": b"Bearer " + p.encode(), "Accept": "application/json, text/event-stream"},
                json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
                     ).status_code for p in presented]

    assert asyncio.run(statuses(token, token[:-1])) == [200, 401]


def test_as_of_picks_a_key_beside_its_ltm_twin_by_definition(w):
    """A reported figure and an LTM value derived for the same window are two keys that
    differ by definition alone: the tool told an agent to pass `definition=`, an argument
    it did not take."""
    w.source("10k-sales", t("2024-05-01"), publisher="cik:1")
    for value, definition in ((100, ""), (120, "ltm")):
        w.mem.assert_fact(w.scope, w.fact_in(Decimal(value), "10k-sales", attribute="sales", definition=definition))
    server = server_for(w)
    q1 = {"entity": "acme", "attribute": "sales", "period_start": "2024-01-01", "period_end": "2024-03-31"}
    assert "definition" in ok_error(call(server, "as_of", **q1))["message"]
    for definition, value in (("ltm", "120"), ("", "100")):
        assert ok(call(server, "as_of", **q1, definition=definition))["value"] == value


def test_time_defaults_are_now(w, monkeypatch):
    """as_of without cutoff or known_at reads the present - public now, as recorded by the
    tenant's last committed write - in the read's own statement (no separate look at the
    server's clock); an explicit far cutoff agrees."""
    server = server_for(w)

    def apart() -> dt.datetime:
        raise AssertionError("as_of asked the server's clock in a statement of its own")

    monkeypatch.setattr(w.mem, "server_now", apart)
    now = ok(call(server, "as_of", entity="acme", attribute="revenue"))
    far = ok(call(server, "as_of", entity="acme", attribute="revenue", cutoff=FAR.isoformat()))
    assert now["value"] == far["value"] == "110"
    assert dt.datetime.fromisoformat(now["known_at"]) <= dt.datetime.fromisoformat(now["cutoff"])
    assert abs(dt.datetime.fromisoformat(now["cutoff"]) - dt.datetime.now(UTC)) < dt.timedelta(minutes=5)


def test_mcp_text_that_reads_as_json_is_kept_as_text(mem: Memory, scope: Scope):
    """A string given for an argument that takes a string is that string. The SDK reads
    such a string as JSON first when the argument's type is not exactly ``str`` (an
    optional text, the value's union), so a text fact whose value is JSON ('{"retries":
    3}', '["a", "b"]', 'null'), an observed outcome that is JSON, or a source title that
    is a JSON list were refused ("Input should be a valid string"), and an entity or a
    search text "null" was read as none given: the facts of every entity, a search with
    no text."""
    server = build_server(mem, FixedAccess(scope, "analyst"), Grants())
    fact = {"entity": "svc", "attribute": "config", "value_type": "text", "period_end": "2024-03-31",
            "sources": ["s1"]}
    results = calls(server, [
        ("record_source", {"id": "s1", "kind": "filing", "authority": "primary",
                           "available_by": "2024-05-01", "title": '["draft", "memo"]'}),
        ("record_entity", {"id": "svc"}),
        ("record_entity", {"id": "other"}),
        ("remember_fact", {**fact, "entity": "other", "value": "elsewhere"}),
        ("remember_fact", {**fact, "value": '{"retries": 3}'}),
        ("remember_fact", {**fact, "attribute": "tags", "value": '["a", "b"]'}),
        ("remember_fact", {**fact, "attribute": "nothing", "value": "null"}),
        ("remember_experience", {"trigger": "deploy", "outcome": '{"status": "ok"}', "evidence": ["s1"]}),
        ("facts", {"entity": "null", "attribute": "config"}),
        ("search", {"text": "null", "types": ["fact"]}),
    ])
    source, *_, config, tags, nothing, experience, facts, search = results
    assert ok(source)["source"]["title"] == '["draft", "memo"]'
    assert ok(config)["fact"]["value"] == '{"retries": 3}'
    assert ok(tags)["fact"]["value"] == '["a", "b"]'
    assert ok(nothing)["fact"]["value"] == "null"
    assert ok(experience)["experience"]["outcome"] == '{"status": "ok"}'
    assert ok(facts)["answers"] == []  # no entity is called "null"
    hits = ok(search)["hits"]  # the word "null": only the fact whose value it is
    assert [h["fact"]["attribute"] for h in hits] == ["nothing"]


def test_mcp_record_entity_says_an_erased_entity_is_not_brought_back(mem: Memory, scope: Scope):
    """After ``erase``, ``record_entity`` answered "entity acme already recorded
    (unchanged)" (it found the tombstone), while ``remember_fact`` keeps the fact as a
    candidate because the entity "is not recorded in this scope (put_entity first)": an
    agent following both messages goes round in circles. The API refuses to bring an
    erased entity back (put_entity: InputError); the tool must say so."""
    server = build_server(mem, FixedAccess(scope, "analyst"), Grants(allow_admin=True))
    _, erased, again, fact = calls(server, [
        ("record_entity", {"id": "acme", "name": "Acme"}),
        ("erase", {"entity": "acme", "reason": "gdpr"}),
        ("record_entity", {"id": "acme", "name": "Acme"}),
        ("save_task_state", {"task_id": "t1", "goal": "follow up", "entities": ["acme"]}),
    ])
    assert ok(erased)["target"] == "entity:acme"
    assert again.is_error, again.content[0].text
    err = again.structured_content
    assert err["type"] == "InputError" and "erased" in err["message"]
    # the gate says so too, rather than "put_entity first", which would be refused
    assert ok(fact)["reasons"] == ["entity 'acme' was erased: it takes no new memories"]


def test_mcp_http_on_any_loopback_address_refuses_a_foreign_host_header(migrated, tmp_path):
    """The server promises DNS-rebinding protection whenever it binds loopback (it warns
    only for other addresses), but the SDK turns it on only for the exact strings
    127.0.0.1, localhost and ::1: bound to 127.0.0.2 (or ::1 written out), a request whose
    Host names another site was served."""
    token = uuid.uuid4().hex
    tokens = tmp_path / "tokens.toml"
    tokens.write_text(f'[[tokens]]\nname = "agent"\ntoken = "{token}"\ntenant = "rv-{token[:8]}"\n')
    host = "127.0.0.2"
    proc, port = _mcp_http(migrated, tokens, host)
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}}
    headers = {"Authorization": f"Bearer {token}", "Accept": "application/json, text/event-stream"}
    try:
        own = httpx2.post(f"http://{host}:{port}/mcp", json=initialize, headers=headers, timeout=30)
        foreign = httpx2.post(f"http://{host}:{port}/mcp", json=initialize, timeout=30,
                              headers={**headers, "Host": f"evil.example:{port}"})
        origin = httpx2.post(f"http://{host}:{port}/mcp", json=initialize, timeout=30,
                             headers={**headers, "Origin": "http://evil.example"})
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    assert own.status_code == 200
    assert foreign.status_code == 421
    assert origin.status_code == 403


def test_mcp_record_entity_called_by_two_agents_at_once_records_one(mem: Memory, scope: Scope, monkeypatch):
    """``record_entity`` leaves an entity already recorded as it is and says so. It read
    the entity, then wrote it in a second transaction: two agents recording one id at
    once both read "none", both were told "recorded", and the second one's name
    silently replaced the first's. Each call here reads first, then waits for the other
    to have read too (or 2 s) before going on."""
    server = build_server(mem, FixedAccess(scope, "analyst"))
    both_read, real = threading.Barrier(2), Memory.entity

    def entity_then_wait(self, *args, **kwargs):
        found = real(self, *args, **kwargs)
        with contextlib.suppress(threading.BrokenBarrierError):
            both_read.wait(timeout=2)
        return found

    monkeypatch.setattr(Memory, "entity", entity_then_wait)

    async def two_agents() -> list[Any]:
        async def agent(name: str) -> Any:
            async with Client(server, mode="legacy") as client:
                return await client.call_tool("record_entity", {"id": "acme", "name": name})
        return list(await asyncio.gather(agent("Acme Corp"), agent("ACME Inc.")))

    outs = [ok(r) for r in asyncio.run(two_agents())]
    monkeypatch.undo()
    assert sorted(o["recorded"] for o in outs) == [False, True]
    [winner] = [o["entity"]["name"] for o in outs if o["recorded"]]
    assert mem.entity(scope, "acme").name == winner  # the one told "recorded" stands
    assert [o["entity"]["name"] for o in outs] == [winner, winner]  # and both are shown it


def test_a_value_too_long_for_python_text_is_an_input_error_naming_value_and_nothing_is_written(w):
    """A JSON integer of 5,000 digits went through ``str()``, past Python's 4,300 digits of
    text: a ValueError that the SDK reported as a crash of the tool (its message not
    naming the argument), and again while the error message was built for another type."""
    big = 10**5000
    errors = [ok_error(call(server_for(w), "remember_fact", entity="acme", attribute="big",
                            value=big, period_end="2024-03-31", sources=["10k"], **kind))
              for kind in ({}, {"value_type": "date"}, {"value_type": "boolean"}, {"value_type": "text"})]
    assert [e["type"] for e in errors] == ["InputError"] * 4
    assert [e["where"] for e in errors] == ["value"] * 4
    assert "magnitude 10^5,000" in errors[0]["reason"]
    assert w.mem.history(w.scope, entity="acme", attribute="big") == []


def test_a_definition_remember_fact_takes_is_one_as_of_can_ask_for(w):
    """remember_fact took a definition of up to 1,024 characters and as_of up to 256: a key
    written through the server with a longer definition could not be read through it
    (as_of refused the definition; without one it stayed ambiguous beside another key)."""
    definition = "restated, excluding discontinued operations; " * 6  # 276 characters
    server = server_for(w)
    ok(call(server, "remember_fact", entity="acme", attribute="revenue", value=120, period_end="2024-03-31",
            period_start="2024-01-01", unit="USD", definition=definition, sources=["10k"]))
    answer = ok(call(server, "as_of", entity="acme", attribute="revenue", period_end="2024-03-31",
                     period_start="2024-01-01", unit="USD", definition=definition))
    assert answer["value"] == "120"
    too_long = ok_error(call(server, "as_of", entity="acme", attribute="revenue", definition="d" * 1025))
    assert too_long["where"] == "definition"


def test_an_argument_the_model_refuses_is_named_as_the_tools_argument(w):
    """The tools' schemas count characters and graphmem's models bytes: 600 four-byte
    characters pass the schema's 1,024 and are 2,400 bytes, past an identifier's 2,048.
    The model's refusal named its own field (FactIn.entity, Entity.aliases[0]), which no
    tool takes; the argument is named as the client sent it."""
    server = server_for(w)
    long = "\U0001F600" * 600
    errors = [ok_error(call(server, tool, **args)) for tool, args in (
        ("remember_fact", {"entity": long, "attribute": "x", "value": 1, "period_end": "2024-03-31"}),
        ("remember_fact", {"entity": "acme", "attribute": "x", "value": "9" * 70, "value_type": "decimal",
                           "period_end": "2024-03-31"}),
        ("record_entity", {"id": "e", "aliases": ["a", long]}),
        ("record_source", {"id": "s9", "kind": "k", "authority": "primary", "available_by": "2024-01-01",
                           "publisher": long}),
        ("remember_experience", {"trigger": "t", "evidence": [long]}),
        ("save_task_state", {"task_id": "t", "goal": "g", "artifact_refs": [long]}))]
    assert [(e["type"], e["where"]) for e in errors] == [
        ("InputError", "entity"), ("InputError", "value"), ("InputError", "aliases[1]"),
        ("InputError", "publisher"), ("InputError", "evidence[0]"), ("InputError", "artifact_refs[0]")]
    assert "2,400 bytes in UTF-8; at most 2,048" in errors[0]["message"]


@pytest.mark.parametrize("port", ["70000", "-1"])
def test_a_port_that_is_no_port_is_a_usage_error_naming_port(tmp_path, port):
    """`graphmem mcp --port 70000` failed deep in the HTTP server's settings ("AuthSettings:
    issuer_url: Input should be a valid URL, invalid port number", exit 1), naming neither
    the option nor the bound; `server start` already took 1 to 65535 only."""
    tokens = tmp_path / "tokens.toml"
    tokens.write_text('[[tokens]]\nname = "a"\ntoken = "a-secret-of-16-or-more-characters"\ntenant = "t"\n')
    result = CliRunner().invoke(main, ["mcp", "--transport", "http", "--port", port, "--tokens", str(tokens)])
    assert result.exit_code == 2 and "Invalid value for '--port'" in result.output, result.output
    assert "AuthSettings" not in result.output
