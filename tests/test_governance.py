"""Agent memory governance on the real Neo4j: the essay's minimal counter-examples
(section 8) plus the write gates, the context builder, the echo guard, the erase
cascade and the trace.

Each counter-example asserts what an agent would get back - the hit, its value and
status, what explain says each filter removed - not how graphmem got there.
"""

from __future__ import annotations

import datetime as dt
import threading
import unicodedata
import uuid
from decimal import Decimal

import neo4j
import pytest
from world import FAR, Q1, Q2, Q3, Q4, US, UTC, World, lose_first_acknowledgement, t  # noqa: F401 - shared test world

import graphmem.db as gdb
from graphmem import (
    Authority,
    ConcurrentWriteError,
    EchoError,
    ExperienceIn,
    FactIn,
    InputError,
    Memory,
    Require,
    RetryPolicy,
    Scope,
    ScopeError,
    Source,
    TaskStateIn,
)
from graphmem.context import approx_tokens


@pytest.fixture
def w(mem: Memory, scope: Scope) -> World:
    return World(mem, scope)


def values(result) -> list:
    return [h.answer.value for h in result.hits if h.type == "fact"]


# ------------------------------------------------------------------ 1. two tenants


def test_two_tenants_stating_similar_facts_never_see_each_other(mem, scope):
    a = World(mem, scope)
    b = World(mem, Scope(tenant=scope.tenant + "-b"))
    c = World(mem, Scope(tenant=scope.tenant, project="other"))  # same tenant, other scope
    for world, value in ((a, "100"), (b, "120"), (c, "130")):
        world.source("10q", t("2024-05-01"), publisher="cik:1")
        world.fact(Decimal(value), "10q")
        world.experience("10q", outcome=f"retried, paid {value}")

    for world, value in ((a, "100"), (b, "120"), (c, "130")):
        found = world.search("ACME revenue")
        assert values(found) == [Decimal(value)]
        assert found.explain.matched == 1  # the other scopes' documents are never counted
        [exp] = world.search("E-4012").hits
        assert exp.experience.outcome == f"retried, paid {value}"


# ------------------------------------------------------------------ 2. corrected later


def test_a_fact_corrected_later_is_found_as_of_each_time(w):
    w.source("10q", t("2024-05-01"), publisher="cik:1")
    w.source("10k", t("2025-02-01"), publisher="cik:1")
    old = w.fact(Decimal("100"), "10q")
    new = w.fact(Decimal("110"), "10k")

    late = w.search("acme revenue", cutoff=t("2025-03-01"))
    assert values(late) == [Decimal("110")]
    assert late.hits[0].answer.version.version_id == new.version_id
    assert late.explain.removed == {"superseded": 1}

    mid = w.search("acme revenue", cutoff=t("2024-06-01"))
    assert values(mid) == [Decimal("100")]
    assert mid.explain.removed == {"cutoff": 1}

    # our record of the restatement was wrong: invalidated from now on, audit still sees it
    w.mem.invalidate(w.scope, new.version_id, "loader bug")
    assert values(w.search("acme revenue", cutoff=t("2025-03-01"))) == [Decimal("100")]
    before = w.search("acme revenue", cutoff=t("2025-03-01"), known_at=new.recorded_at)
    assert values(before) == [Decimal("110")]
    assert old.version_id != new.version_id


# ------------------------------------------------------------------ 3. never provided


def test_information_never_provided_comes_back_not_found_not_a_near_match(w):
    w.source("10q", t("2024-05-01"))
    w.fact(Decimal("100"), "10q")
    w.experience("10q")

    for text in ("acme headcount", "GBX revenue", "E-4013", "E4012", "0001564590-16-013196"):
        result = w.search(text)
        assert result.status == "not_found", text
        assert result.hits == ()
    # an unknown code is not a near match even when plain words may be optional
    assert w.search("E-4013 insufficient funds", match="any").status == "not_found"
    assert w.search(entity="globex").status == "not_found"
    assert w.search("revenue", entity="initech").status == "not_found"
    assert w.search("revenue", types=["experience"]).explain.removed == {"type": 1}


# ------------------------------------------------------------------ 4. historical point


def test_an_explicit_historical_point_in_time(w):
    w.source("10q", t("2024-05-01"))
    v = w.fact(Decimal("100"), "10q")
    x = w.experience("10q", entities=("acme",))

    before_public = w.search("acme revenue", cutoff=t("2024-04-30"))
    assert before_public.status == "not_found"
    assert before_public.explain.removed == {"cutoff": 1}
    before_recorded = w.search("ACME", known_at=v.recorded_at - US, cutoff=FAR)
    assert before_recorded.status == "not_found"
    assert before_recorded.explain.removed == {"known_at": 2}
    at_both = w.search("ACME", known_at=x.experience.recorded_at, cutoff=t("2024-05-01"))
    assert sorted(h.type for h in at_both.hits) == ["experience", "fact"]


# ------------------------------------------------------------------ 5. code and paraphrase


def test_an_exact_code_and_a_paraphrase_of_it(w):
    w.source("run-17", t("2024-05-01"), kind="tool_run", title="payments sandbox run 17")
    w.source("0001564590-16-013195", t("2016-02-24"), title="10-K 2015")
    x = w.experience("run-17", entities=("acme",))
    w.fact(Decimal("8092460000"), "0001564590-16-013195", attribute="assets")
    w.experience("run-17", trigger="timeout ERR_CONN_RESET calling the ledger API",
                 outcome="reconnect fixed it")

    [hit] = w.search("E-4012").hits
    assert hit.memory_id == x.id
    assert [h.answer.value for h in w.search("0001564590-16-013195").hits] == [
        Decimal("8092460000")]
    assert w.search("ERR_CONN_RESET").hits[0].experience.outcome == "reconnect fixed it"
    assert w.search("ACME E-4012").hits[0].memory_id == x.id  # ticker from the entity

    paraphrase = "what to do when a card payment is refused for insufficient funds"
    assert w.search(paraphrase).status == "not_found"  # 'refused' is not in the memory
    loose = w.search(paraphrase, match="any")
    assert loose.hits[0].memory_id == x.id
    assert w.search("payment declines", types=["experience"]).hits[0].memory_id == x.id  # stem


# ------------------------------------------------------------------ 6. retracted source


def test_a_retracted_source_takes_its_memories_out_of_search(w):
    w.source("10q", t("2024-05-01"))
    v = w.fact(Decimal("100"), "10q")
    x = w.experience("10q", entities=("acme",))
    assert {h.memory_id for h in w.search("acme").hits} == {v.version_id, x.id}

    w.mem.retract_source(w.scope, "10q", reason="withdrawn")
    gone = w.search("acme")
    assert gone.status == "not_found"
    assert gone.explain.removed == {"retracted": 2}
    assert w.search("acme", known_at=x.experience.recorded_at).status == "found"


def test_a_memory_backed_only_by_a_withdrawn_source_fails_its_gate(w):
    # live but filtered out of every read would be a memory silently dropped: a
    # candidate says why, and an approval makes it live on the reviewer's authority
    w.source("10q", t("2024-05-01"))
    w.source("8k", t("2024-05-02"))
    w.mem.retract_source(w.scope, "10q", reason="withdrawn")
    exp = w.experience("10q", entities=("acme",))
    fact = w.mem.remember_fact(w.scope, FactIn(entity="acme", attribute="revenue", value=Decimal("100"),
                                               period=Q1, sources=("10q",)))
    for held in (exp, fact):
        assert (held.status, held.reasons) == ("candidate", ("source '10q' was retracted: it validates nothing new",))
    assert w.experience("10q", "8k", entities=("acme",)).status == "candidate"  # one withdrawn is one reason
    made = w.mem.approve(w.scope, exp.id, by="ops")
    assert made.status == "live" and made.experience.authority == Authority.USER_CORRECTION
    assert w.search("acme").hits[0].memory_id == made.id


# ------------------------------------------------------------------ 7. echo


def test_injected_memory_echoed_back_is_not_written_again(w):
    w.source("10q", t("2024-05-01"), publisher="cik:1")
    v = w.fact(Decimal("100"), "10q")
    x = w.experience("10q", entities=("acme",))
    ctx = w.mem.build_context(w.scope, task_id="T1", memories=w.search("acme"),
                              token_budget=2000)
    fact_line = next(line for i in ctx.included for line in i.lines if v.version_id in line)
    claim = fact_line.split("] ", 1)[1].split(" | ")[0]
    echoes = {
        "the whole rendering": {"title": ctx.rendered},
        "one rendered line": {"title": "As I recall:\n" + fact_line},
        "the claim alone": {"meta": {"answer": claim + "."}},
        "a cited memory id": {"title": f"per {x.id} we retry with a smaller amount"},
    }
    for n, (what, fields) in enumerate(echoes.items()):
        src = Source(id=f"answer-{n}", kind="agent_answer", authority="inference",
                     available_by=t("2024-06-01"), **fields)
        with pytest.raises(EchoError, match=f"echo of context snapshot {ctx.snapshot_id}"):
            w.mem.record_source(w.scope, src)
        assert w.mem.remember_fact(w.scope, FactIn(
            entity="acme", attribute="revenue", value=Decimal("100"), period=Q1,
            sources=(src.id,))).status == "candidate", what  # never recorded
    with pytest.raises(EchoError, match="outcome"):
        w.experience("10q", outcome=x.experience.outcome and ctx.included[-1].lines[0])
    # new text is still evidence
    w.source("answer-new", t("2024-06-01"), authority="inference",
             title="acme revenue Q1 was 100 per the 10-Q on EDGAR")


# ------------------------------------------------------------------ 8. failures and repeats


def test_a_failed_write_retried_and_a_duplicated_event_make_one_memory(w, monkeypatch):
    w.source("run-1", t("2024-05-01"), kind="tool_run")
    real, failed = gdb.Tx.run, []

    def flaky(self, name, /, **params):
        if name == "experience.create" and not failed:
            real(self, name, **params)  # written, then the connection drops before commit
            failed.append(name)
            raise neo4j.exceptions.SessionExpired("injected fault")
        return real(self, name, **params)

    monkeypatch.setattr(gdb.Tx, "run", flaky)
    first = w.experience("run-1", event_id="evt-1")
    monkeypatch.setattr(gdb.Tx, "run", real)
    assert failed and first.status == "live"
    again = w.experience("run-1", event_id="evt-1")  # the same event delivered twice
    assert again.id == first.id
    assert len(w.search("E-4012").hits) == 1
    with pytest.raises(InputError, match="different content"):
        w.experience("run-1", event_id="evt-1", outcome="something else")

    sourceless = FactIn(entity="acme", attribute="revenue", value=Decimal("1"), period=Q1)
    assert w.mem.remember_fact(w.scope, sourceless).id == \
        w.mem.remember_fact(w.scope, sourceless).id
    assert len(w.mem.candidates(w.scope)) == 1

    state = TaskStateIn(task_id="T1", goal="compare", checkpoint="start")
    one = w.mem.save_task_state(w.scope, state)
    assert w.mem.save_task_state(w.scope, state).id == one.id  # a retry of the current state


def test_an_event_delivered_again_after_its_evidence_was_retracted_is_the_first_write(w):
    """Re-sending an experience returns what the first write stored. Once its evidence
    source was retracted, the same event (same event id) delivered again failed the gate
    and was kept as a new candidate for review, beside the live memory it repeats."""
    w.source("run-1", t("2024-05-01"), kind="tool_run")
    first = w.experience("run-1", event_id="evt-1")
    w.mem.retract_source(w.scope, "run-1", reason="withdrawn by the tool's owner")
    again = w.experience("run-1", event_id="evt-1")
    assert (again.status, again.id) == ("live", first.id)
    assert w.mem.candidates(w.scope, status=None) == []
    with pytest.raises(InputError, match="different content"):
        w.experience("run-1", event_id="evt-1", outcome="something else")


def test_a_fact_sent_again_after_its_source_was_retracted_is_the_first_write(w):
    """Re-sending the very same assertion changes nothing. Through the gate, once its
    source was retracted, the repeat of a fact already stored was kept as a candidate
    for review - which an approval would make live again with the approver's evidence."""
    w.source("wire", t("2024-05-01"), publisher="wire:a")
    fact = w.fact_in(Decimal("100"), "wire")
    first = w.mem.remember_fact(w.scope, fact)
    w.mem.retract_source(w.scope, "wire", reason="withdrawn by the wire")
    again = w.mem.remember_fact(w.scope, fact)
    assert (again.status, again.id) == ("live", first.id)
    assert w.mem.candidates(w.scope, status=None) == []
    assert w.read(FAR).status == "not_found"
    other = w.mem.remember_fact(w.scope, w.fact_in(Decimal("101"), "wire"))  # not a repeat: gated
    assert other.status == "candidate" and "retracted" in other.reasons[0]


def test_writes_delivered_again_after_their_entity_was_erased_bring_nothing_back(w):
    """An event delivered twice, the second time after its entity was erased: the gate
    refused the repeat (the entity takes no new memories) and kept it as a new candidate
    for review - the erased payload back in the store, beside the tombstone of the first
    write. A repeat is the first write: its tombstone."""
    w.source("run-1", t("2024-05-01"), kind="tool_run")
    fact = w.fact_in(Decimal("100"), "run-1")
    state = TaskStateIn(task_id="T1", goal="follow up on acme's merger", entities=("acme",), event_id="e1")
    experience = dict(trigger="acme merger question", outcome="the merger closed", entities=("acme",),
                      event_id="e2")
    first = [w.mem.remember_fact(w.scope, fact), w.mem.save_task_state(w.scope, state),
             w.experience("run-1", **experience)]
    w.mem.erase(w.scope, entity="acme", reason="the user asked to be forgotten")
    again = [w.mem.remember_fact(w.scope, fact), w.mem.save_task_state(w.scope, state),
             w.experience("run-1", **experience)]
    assert [a.id for a in again] == [f.id for f in first]
    assert w.mem.candidates(w.scope, status=None) == []
    assert again[0].version.erased and again[1].task_state.erased and again[2].experience.erased


def test_a_context_whose_commit_acknowledgement_is_lost_is_recorded_once(w, monkeypatch):
    # the commit lands, then the connection drops before the client hears of it: the
    # retry must find the snapshot the first try wrote, not record a second one
    w.source("10q", t("2024-05-01"))
    w.fact(Decimal(7), "10q")
    result = w.search("acme revenue")
    lost = lose_first_acknowledgement(monkeypatch)
    ctx = w.mem.build_context(w.scope, task_id="T-lost", memories=result, token_budget=4000)
    assert lost
    with w.mem.db.driver.session() as session:
        recorded = session.run("MATCH (c:ContextSnapshot {task_id: 'T-lost'}) WHERE c.tenant = $t "
                               "RETURN collect(c.id) AS ids, collect(c.recorded_at) AS at",
                               t=w.scope.tenant).single()
    assert recorded["ids"] == [ctx.snapshot_id]
    assert ctx.recorded_at == recorded["at"][0].to_native()  # the first try's time
    assert w.mem.context_snapshot(w.scope, ctx.snapshot_id).rendered == ctx.rendered
    assert w.mem.trace(w.scope, ctx.snapshot_id, ctx.included[0].memory_id).outcome == "included"


def test_a_context_of_hits_that_do_not_say_when_is_recorded_once_after_a_lost_acknowledgement(w, monkeypatch):
    """Hits of task states and experiences alone do not say when they were read, so the
    context reads them at its own transaction time and renders that time. The snapshot's
    id hashed the rendering with the call's token: the retry's rendering (another
    transaction time) made another id, and a second snapshot of the one call."""
    w.mem.save_task_state(w.scope, TaskStateIn(task_id="T1", goal="compare revenue", checkpoint="a"))
    hits = list(w.search("compare", types=["task_state"]).hits)
    lost = lose_first_acknowledgement(monkeypatch)
    ctx = w.mem.build_context(w.scope, task_id="T-lost", memories=hits, token_budget=4000)
    monkeypatch.undo()
    assert lost
    [recorded] = w.mem.context_snapshots(w.scope, task_id="T-lost")
    assert (recorded.snapshot_id, recorded.rendered, recorded.recorded_at) == \
        (ctx.snapshot_id, ctx.rendered, ctx.recorded_at)  # the first try's


def test_a_task_state_retried_after_another_agent_saved_is_not_saved_twice(w, monkeypatch):
    """A task state without an event id was keyed by its content and the revision it
    would take. Its commit landed, the acknowledgement was lost, and another agent's
    update (queued on the tenant's lock) landed before the retry: the retry no longer
    found its state as the task's latest and saved it again, as a third revision on top
    of the other agent's - whose state stopped being the task's."""
    mine = TaskStateIn(task_id="T1", goal="compare", checkpoint="mine")
    theirs = TaskStateIn(task_id="T1", goal="compare", checkpoint="theirs")
    real, lost = neo4j.Transaction.commit, []

    def commit_then_drop(self):
        real(self)
        if not lost:
            lost.append(True)
            w.mem.save_task_state(w.scope, theirs)  # lands between the commit and the retry
            raise neo4j.exceptions.IncompleteCommit("injected: Failed to read from defunct connection")

    monkeypatch.setattr(neo4j.Transaction, "commit", commit_then_drop)
    saved = w.mem.save_task_state(w.scope, mine)
    monkeypatch.undo()
    assert lost and saved.task_state.revision == 1
    [hit] = w.search("compare", task_id="T1").hits
    assert (hit.task_state.checkpoint, hit.task_state.revision) == ("theirs", 2)
    assert w.search("compare", task_id="T1").explain.removed == {"superseded": 1}


def test_two_concurrent_task_state_updates(w):
    w.mem.save_task_state(w.scope, TaskStateIn(task_id="T1", goal="compare", checkpoint="a"))
    barrier, results = threading.Barrier(2), []

    def update(checkpoint: str) -> None:
        barrier.wait()
        try:
            results.append(w.mem.save_task_state(
                w.scope, TaskStateIn(task_id="T1", goal="compare", checkpoint=checkpoint),
                expected_revision=1))
        except ConcurrentWriteError as exc:
            results.append(exc)

    threads = [threading.Thread(target=update, args=(c,)) for c in ("b", "c")]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    wins = [r for r in results if not isinstance(r, Exception)]
    assert len(wins) == 1 and len(results) == 2
    lost = next(r for r in results if isinstance(r, Exception))
    assert isinstance(lost, ConcurrentWriteError)
    assert str(lost) == "task T1: expected revision 1, found 2; re-read it and decide again"
    # without expected_revision both land, in order; the latest is the task's state
    w.mem.save_task_state(w.scope, TaskStateIn(task_id="T1", goal="compare", checkpoint="d"))
    found = w.search("compare", task_id="T1")
    [hit] = found.hits
    assert (hit.task_state.checkpoint, hit.task_state.revision) == ("d", 3)
    assert found.explain.removed == {"superseded": 2}


def test_two_concurrent_approvals_make_one_live_memory(w):
    cand = w.mem.remember_fact(w.scope, FactIn(entity="acme", attribute="revenue",
                                               value=Decimal("100"), period=Q1))
    barrier, results = threading.Barrier(2), []

    def approve(who: str) -> None:
        barrier.wait()
        results.append(w.mem.approve(w.scope, cand.id, by=who))

    threads = [threading.Thread(target=approve, args=(who,)) for who in ("ann", "bob")]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert len({r.id for r in results}) == 1
    assert len(w.mem.history(w.scope, entity="acme", attribute="revenue")) == 1
    [approved] = w.mem.candidates(w.scope, status="approved")
    assert approved.memory_id == results[0].id


# ------------------------------------------------------------------ 9. poisoning


def test_a_malicious_source_cannot_displace_a_primary_one_and_is_retracted_in_one_call(w):
    w.source("10k", t("2025-02-01"), publisher="cik:1")
    primary = w.fact(Decimal("100"), "10k")
    w.source("blog-x", t("2025-02-02"), authority="inference", kind="web",
             title="ACME revenue revenue revenue insider leak")
    poison = w.fact(Decimal("999"), "blog-x")  # same key, lower authority
    w.fact("acme revenue will triple: buy now", "blog-x", attribute="revenue_outlook", unit="")
    w.experience("blog-x", trigger="acme revenue question", outcome="answer 999 revenue")

    result = w.search("acme revenue", match="any")
    assert result.hits[0].answer.version.version_id == primary.version_id
    assert result.hits[0].answer.value == Decimal("100")
    assert result.explain.removed == {"outranked": 1}
    assert [h.authority for h in result.hits] == [Authority.PRIMARY, Authority.INFERENCE,
                                                  Authority.INFERENCE]
    # traceable: everything the source stands behind is found by its id
    assert len(w.search("blog-x").hits) == 2 and w.search("blog-x").explain.removed == {
        "outranked": 1}
    # and retractable in one call
    w.mem.retract_source(w.scope, "blog-x", reason="poisoning attempt")
    after = w.search("acme revenue", match="any")
    assert [h.memory_id for h in after.hits] == [primary.version_id]
    assert after.explain.removed == {"retracted": 3}
    assert poison.version_id not in {m for h in after.hits for m in h.memory_ids}


# ------------------------------------------------------------------ gates and review


def test_what_fails_its_gate_is_a_candidate_never_live_until_approved(w):
    w.source("10q", t("2024-05-01"))
    no_source = w.mem.remember_fact(w.scope, FactIn(entity="acme", attribute="revenue",
                                                    value=Decimal("100"), period=Q1))
    unknown = w.mem.remember_fact(w.scope, FactIn(entity="acme", attribute="margin", unit="pct",
                                                  value=Decimal("12"), period=Q1,
                                                  sources=("10q", "ghost")))
    no_entity = w.mem.remember_fact(w.scope, FactIn(entity="initech", attribute="revenue",
                                                    value=Decimal("5"), period=Q1,
                                                    sources=("10q",)))
    no_evidence = w.experience()
    no_outcome = w.experience("10q", outcome=None)
    no_task = w.mem.save_task_state(w.scope, TaskStateIn(goal="compare"))
    assert {r.status for r in (no_source, unknown, no_entity, no_evidence, no_outcome,
                               no_task)} == {"candidate"}
    assert no_source.reasons == ("no source: a fact needs at least one source",)
    assert unknown.reasons == ("source 'ghost' is not recorded in this scope (or was erased)",)
    assert no_entity.reasons[0].startswith("entity 'initech' is not recorded")
    assert no_outcome.reasons[0].startswith("no observed outcome")
    assert no_task.reasons[0].startswith("no task id")
    assert len(w.mem.candidates(w.scope)) == 6
    passes = w.mem.remember_fact(w.scope, FactIn(entity="globex", attribute="revenue",
                                                 value=Decimal("9"), period=Q1, sources=("10q",)))
    assert passes.status == "live" and passes.version.value == Decimal("9")

    # never live: not in reads, and search says why it found nothing
    assert w.mem.as_of(w.scope, entity="acme", attribute="revenue", cutoff=FAR).status == \
        "not_found"
    nothing = w.search("acme revenue")
    assert nothing.status == "not_found" and nothing.explain.removed == {"candidate": 1}

    made = w.mem.approve(w.scope, no_source.id, by="analyst")
    assert made.status == "live"
    [src] = made.version.sources
    assert (src.authority, src.kind, src.publisher) == (Authority.USER_CORRECTION, "approval",
                                                        "user:analyst")
    assert values(w.search("acme revenue")) == [Decimal("100")]
    kept = w.mem.approve(w.scope, unknown.id, by="analyst")
    assert [e.source_id for e in kept.version.sources] == ["10q", f"approval:{unknown.id}"]
    assert w.mem.approve(w.scope, no_evidence.id, by="ops").experience.authority == \
        Authority.USER_CORRECTION
    for cannot in (no_entity, no_outcome, no_task):
        with pytest.raises(InputError, match="still fails its gate"):
            w.mem.approve(w.scope, cannot.id, by="analyst")
    rejected = w.mem.reject(w.scope, no_outcome.id, "nothing was observed", by="ops")
    assert rejected.status == "rejected" and rejected.decided_by == "ops"
    with pytest.raises(InputError, match="rejected"):
        w.mem.approve(w.scope, no_outcome.id, by="analyst")
    with pytest.raises(InputError, match="already approved"):
        w.mem.reject(w.scope, no_source.id, "too late")
    assert {c.id for c in w.mem.candidates(w.scope)} == {no_entity.id, no_task.id}
    assert len(w.mem.candidates(w.scope, status=None)) == 6


def test_require_is_a_hard_filter_before_ranking(w):
    w.source("10q", t("2024-05-01"))
    w.source("blog", t("2024-05-02"), authority="inference")
    w.fact(Decimal("100"), "10q")
    w.fact(Decimal("7"), "blog", attribute="revenue_growth", unit="pct")
    w.experience("blog", trigger="acme revenue forecast", outcome="was right")
    strict = w.search("acme revenue", match="any", require=Require(min_authority="primary"))
    assert values(strict) == [Decimal("100")]
    assert strict.explain.removed == {"evidence": 2}


def test_a_broad_search_stops_evaluating_once_the_limit_is_settled(w):
    w.source("10q", t("2024-05-01"), publisher="cik:1")
    w.source("10k", t("2025-02-01"), publisher="cik:1")
    w.source("blog", t("2024-05-02"), authority="inference")
    primary = [w.fact(Decimal(i), "10q", attribute=f"metric_{i:02d}") for i in range(30)]
    for v in primary[:4]:  # the best-ranked candidates are filtered, not just skipped
        w.mem.invalidate(w.scope, v.version_id, "wrong")
    for i in range(4, 8):
        w.fact(Decimal(i + 100), "10k", attribute=f"metric_{i:02d}")  # restated later
    for i in range(10):
        w.fact(Decimal(i), "blog", attribute=f"rumour_{i}")
    bounded = w.search("acme", limit=3)
    everything = w.search("acme", limit=1000)
    assert [h.memory_id for h in bounded.hits] == [h.memory_id for h in everything.hits[:3]]
    assert bounded.explain.unevaluated > 0 and everything.explain.unevaluated == 0
    assert everything.explain.removed == {"invalidated": 4, "superseded": 4}
    assert len(everything.hits) == 30 + 10 - 4


def test_memories_that_settle_the_limit_leave_every_fact_key_unread(w):
    w.source("10k", t("2025-02-01"), publisher="cik:1")
    w.source("blog", t("2024-05-02"), authority="inference")
    for i in range(3):
        w.experience("10k", trigger=f"acme filing parse failed, attempt {i}", entities=("acme",))
    blog = [w.fact(Decimal(i), "blog", attribute=f"rumour_{i}") for i in range(5)]
    w.mem.invalidate(w.scope, blog[0].version_id, "wrong")
    bounded = w.search("acme", limit=3)
    everything = w.search("acme", limit=1000)
    assert [h.type for h in bounded.hits] == ["experience"] * 3  # primary above inference
    assert [h.memory_id for h in bounded.hits] == [h.memory_id for h in everything.hits[:3]]
    assert bounded.explain.unevaluated == 5 and bounded.explain.removed == {}
    assert everything.explain.removed == {"invalidated": 1} and len(everything.hits) == 7


def test_a_search_whose_best_fact_keys_are_all_filtered_reads_on_to_the_others(w):
    w.source("10q", t("2024-05-01"), publisher="cik:1")
    w.source("10k", t("2025-02-01"), publisher="cik:1")
    wrong = [w.fact(Decimal(i), "10k", attribute=f"metric_{i}") for i in range(5)]
    for v in wrong:  # the best bounds (latest), all invalidated
        w.mem.invalidate(w.scope, v.version_id, "wrong")
    kept = [w.fact(Decimal(i), "10q", attribute=f"other_{i}") for i in range(3)]
    one = w.search("acme", limit=1)
    everything = w.search("acme", limit=1000)
    assert [h.memory_id for h in one.hits] == [everything.hits[0].memory_id]
    assert {h.memory_id for h in everything.hits} == {v.version_id for v in kept}
    assert one.explain.removed == {"invalidated": 5} == everything.explain.removed
    assert one.explain.unevaluated + len(one.hits) + one.explain.below_limit == 3


def _same_page(bounded, everything) -> None:
    """``bounded`` (limit n) is exactly the first n hits of the exhaustive ``everything``:
    the same memories, answers and ranks (score, norm, recency, why)."""
    n = bounded.query.limit
    assert [(h.memory_id, h.memory_ids, h.status, h.rank) for h in bounded.hits] == [
        (h.memory_id, h.memory_ids, h.status, h.rank) for h in everything.hits[:n]]
    assert everything.explain.unevaluated == 0


def test_a_search_that_stops_reading_early_gives_the_exhaustive_page(w):
    # three experiences score above every fact but one key's version: once they are kept
    # at the tenant's top authority nothing scoring lower can reach a page of three
    w.source("notes", t("2024-05-01"), title="notes")
    w.source("10k", t("2024-05-01"), publisher="cik:1", title="widget widget widget widget widget")
    w.source("10q", t("2024-06-01"), publisher="cik:2", title="quarterly report")
    w.fact(Decimal(1), "10k", attribute="widget")  # scores first ...
    w.fact(Decimal(2), "10q", attribute="widget")  # ... conflicts with this later, lower one
    for i in range(3):
        w.experience("notes", trigger=f"widget widget widget jam {i}")
    for period in (Q2, Q3, Q4):
        w.fact(Decimal(5), "10q", attribute="widget", period=period)
    bounded = w.search("widget", limit=3, cutoff=t("2025-01-01"))
    everything = w.search("widget", limit=1000, cutoff=t("2025-01-01"))
    assert [h.type for h in everything.hits] == ["fact"] + ["experience"] * 3 + ["fact"] * 3
    assert everything.hits[0].status == "conflicted"  # it ranks by its best version
    _same_page(bounded, everything)
    assert bounded.explain.unevaluated == 4  # the conflicting version and other periods
    assert bounded.explain.removed == everything.explain.removed == {}


def test_a_fact_key_ranks_by_its_best_version_and_an_early_stop_agrees(w):
    # a conflicted key: an older version that scores as high as four other facts and a
    # later one that scores lower. It ranks by its best version - after the four, which
    # are as relevant and more recent - not by one version's score and another's recency
    w.source("old", t("2024-01-01"), title="widget widget widget")
    w.source("mid", t("2024-01-02"), title="widget widget widget")
    w.source("new", t("2024-01-04"), title="widget")
    w.fact(Decimal(1), "old")
    conflicted = w.fact(Decimal(2), "new")
    for period in (Q2, Q3, Q4):
        w.fact(Decimal(5), "mid", period=period)
    w.fact(Decimal(5), "mid", attribute="margin")
    cutoff = t("2024-06-01")
    everything = w.search("widget", limit=1000, cutoff=cutoff)
    assert [h.status for h in everything.hits] == ["active"] * 4 + ["conflicted"]
    last = everything.hits[4]
    assert conflicted.version_id in last.memory_ids
    assert last.rank.text_norm == 1.0 and last.rank.recency_days == (cutoff - t("2024-01-01")).days
    for limit in (1, 2, 3):
        bounded = w.search("widget", limit=limit, cutoff=cutoff)
        _same_page(bounded, everything)
        assert bounded.explain.unevaluated > 0  # it stopped early


@pytest.mark.parametrize("experiences", [
    3,  # as many as the page: they would settle it if authority were not checked
    6,  # more than the page: the search tries the first of them alone first
])
def test_an_early_stop_never_skips_a_stronger_authority_scoring_lower(w, experiences):
    # experiences first in the index, below the top authority, do not settle the page
    w.source("notes", t("2024-05-01"), title="notes")
    w.source("fix", t("2024-05-02"), authority="user_correction", title="the analyst's figure")
    for i in range(experiences):
        w.experience("notes", trigger=f"widget widget widget jam {i}")
    fixed = w.fact(Decimal(9), "fix", attribute="widget")
    bounded = w.search("widget", limit=3, cutoff=t("2025-01-01"))
    everything = w.search("widget", limit=1000, cutoff=t("2025-01-01"))
    assert bounded.hits[0].memory_id == fixed.version_id
    _same_page(bounded, everything)


def test_memories_first_in_the_index_that_the_filters_remove_do_not_settle_the_page(w):
    w.source("bad", t("2024-05-01"), title="notes")
    w.source("10q", t("2024-05-01"), publisher="cik:1")
    for i in range(6):
        w.experience("bad", trigger=f"widget widget widget jam {i}")
    w.mem.retract_source(w.scope, "bad", reason="poisoned")
    for period in (Q1, Q2, Q3):
        w.fact(Decimal(5), "10q", attribute="widget", period=period)
    bounded = w.search("widget", limit=3, cutoff=t("2025-01-01"))
    everything = w.search("widget", limit=1000, cutoff=t("2025-01-01"))
    assert [h.type for h in everything.hits] == ["fact"] * 3
    _same_page(bounded, everything)
    assert bounded.explain.removed == everything.explain.removed == {"retracted": 6}


def test_memories_not_public_at_the_cutoff_are_passed_over_by_an_early_stop(w):
    # the three best-scoring experiences cannot rank: they are ordered after every memory
    # that can, and left unevaluated; the exhaustive search removes them by the cutoff
    w.source("notes", t("2024-05-01"), title="notes")
    w.source("late", t("2024-09-01"), title="late notes")
    w.source("10q", t("2024-05-01"), publisher="cik:1")
    for i in range(3):
        w.experience("late", trigger=f"widget widget widget jam {i}")  # not public at the cutoff
    w.experience("notes", trigger="widget widget widget jam 3")
    for period in (Q1, Q2, Q3):
        w.fact(Decimal(5), "10q", attribute="widget", period=period)
    bounded = w.search("widget", limit=3, cutoff=t("2024-06-01"))
    everything = w.search("widget", limit=1000, cutoff=t("2024-06-01"))
    assert [h.type for h in everything.hits] == ["experience"] + ["fact"] * 3
    _same_page(bounded, everything)
    assert everything.explain.removed == {"cutoff": 3}
    assert (bounded.explain.removed, bounded.explain.unevaluated) == ({}, 3)


# ------------------------------------------------------------------ scope and input


def test_search_without_a_required_scope_key_is_refused_before_any_query():
    dead = Memory.connect("bolt://127.0.0.1:9", required_scope=("project",),
                          retry=RetryPolicy(attempts=1, seconds=1))
    with dead:
        scope = Scope(tenant="t")
        for call in (lambda: dead.search(scope, text="acme"),
                     lambda: dead.candidates(scope),
                     lambda: dead.trace(scope, "ctx_x", "fv_x"),
                     lambda: dead.remember_fact(scope, FactIn(
                         entity="a", attribute="b", value=1, period=Q1))):
            with pytest.raises(ScopeError, match="project"):
                call()
        ok = Scope(tenant="t", project="p")
        for kwargs, field in (({"text": "the of"}, "text"), ({"types": ["note"]}, "types"),
                              ({"limit": 0}, "limit"), ({"match": "some"}, "match"),
                              ({"cutoff": dt.datetime(2024, 1, 1)}, "cutoff")):
            with pytest.raises(InputError, match=field):
                dead.search(ok, **kwargs)
        with pytest.raises(InputError, match="token_budget"):
            dead.build_context(ok, task_id="T", memories=[], token_budget=0)


# ------------------------------------------------------------------ context and trace


def _conflicted(w: World) -> None:
    w.source("a", t("2024-05-01"), publisher="cik:a")
    w.source("b", t("2024-05-01"), publisher="cik:b")
    w.fact(Decimal("12"), "a", attribute="margin", unit="pct")
    w.fact(Decimal("15"), "b", attribute="margin", unit="pct")


def test_context_keeps_conflicts_and_authority_first_records_and_traces(w):
    _conflicted(w)
    w.source("blog", t("2024-04-30"), authority="inference")
    w.source("10q", t("2024-05-01"))
    w.source("10k", t("2025-02-01"))
    low = w.fact(Decimal("3"), "blog", attribute="buzz", unit="")
    high = w.fact(Decimal("100"), "10q")
    hidden = w.fact(Decimal("1"), "10k", attribute="revenue", period=Q2)  # public later
    result = w.search("acme", cutoff=t("2024-06-01"))
    assert result.explain.removed == {"cutoff": 1}
    assert [h.status for h in result.hits] == ["conflicted", "active", "active"]

    full = w.mem.build_context(w.scope, task_id="T1", memories=result, token_budget=4000)
    again = w.mem.build_context(w.scope, task_id="T1", memories=result, token_budget=4000)
    assert full.rendered == again.rendered and full.snapshot_id != again.snapshot_id
    assert "CONFLICTED with" in full.rendered and full.cut == ()
    budget = full.tokens_considered - full.included[-1].tokens  # all but the last one

    tight = w.mem.build_context(w.scope, task_id="T1", memories=result, token_budget=budget)
    assert [i.type for i in tight.included] == ["fact", "fact"]
    assert tight.included[0].status == "conflicted"
    assert tight.included[1].memory_id == high.version_id  # primary before inference
    assert [i.memory_id for i in tight.cut] == [low.version_id]
    assert tight.tokens_used <= tight.token_budget
    assert "1 lower-priority memories cut" in tight.rendered
    stored = w.mem.context_snapshot(w.scope, tight.snapshot_id)
    assert stored.rendered == tight.rendered and stored.rendered_hash == tight.rendered_hash
    assert [i.memory_ids for i in stored.included] == [i.memory_ids for i in tight.included]

    def outcome(memory_id=None, **kw):
        return w.mem.trace(w.scope, tight.snapshot_id, memory_id, **kw)

    assert outcome(high.version_id).outcome == "included"
    assert outcome(low.version_id).outcome == "cut"
    traced = outcome(hidden.version_id)
    assert (traced.outcome, traced.filter) == ("filtered", "cutoff")
    assert outcome(entity="acme", attribute="revenue").outcome == "included"
    assert outcome(entity="acme", attribute="headcount").outcome == "not_stored"
    assert outcome("fv_000000000000000000000000").outcome == "not_stored"
    later = w.fact(Decimal("5"), "10q", attribute="cash")
    assert "after the snapshot" in outcome(later.version_id).steps[0].detail
    cand = w.mem.remember_fact(w.scope, FactIn(entity="globex", attribute="cash", value=1,
                                               period=Q1))
    assert outcome(cand.id).outcome == "not_stored"  # recorded after the snapshot too
    x = w.experience("10q")
    ctx2 = w.mem.build_context(w.scope, task_id="T2", token_budget=4000,
                               memories=w.search("acme", limit=1, cutoff=t("2024-06-01")))
    assert w.mem.trace(w.scope, ctx2.snapshot_id, high.version_id).outcome == "not_considered"
    assert w.mem.trace(w.scope, ctx2.snapshot_id, x.id).outcome == "not_found"
    with pytest.raises(InputError, match="token_budget"):
        w.mem.build_context(w.scope, task_id="T1", memories=result, token_budget=5)


def test_hits_that_do_not_say_when_are_read_at_the_times_given(w):
    """Hits of experiences alone carry no read time: a context of them is read as of now
    unless cutoff and known_at say otherwise - then an experience whose evidence was
    retracted later is rendered as known before, and the snapshot records those times.
    Times that contradict a fact hit's own are refused."""
    w.source("run", t("2024-01-01"), kind="tool_run")
    x = w.experience("run")
    hits = list(w.search("E-4012", types=["experience"]).hits)
    before = w.mem.server_now()
    w.mem.retract_source(w.scope, "run", reason="misread")
    now = w.mem.build_context(w.scope, task_id="T3", memories=hits, token_budget=4000)
    assert now.included == ()
    then = w.mem.build_context(w.scope, task_id="T3", memories=hits, token_budget=4000,
                               cutoff=before, known_at=before)
    assert [i.memory_id for i in then.included] == [x.id] and then.known_at == before
    with pytest.raises(InputError, match="known_at"):
        w.mem.build_context(w.scope, task_id="T3", memories=hits, token_budget=4000, cutoff=before)
    w.source("10q", t("2024-05-01"))
    w.fact(Decimal("100"), "10q")
    facts = list(w.search("acme", types=["fact"], cutoff=t("2024-06-01")).hits)
    with pytest.raises(InputError, match="not at the times given"):
        w.mem.build_context(w.scope, task_id="T3", memories=facts, token_budget=4000,
                            cutoff=before, known_at=before)
    with pytest.raises(InputError, match="not at the times given"):  # a search's result says its own
        w.mem.build_context(w.scope, task_id="T3", token_budget=4000, cutoff=before, known_at=before,
                            memories=w.search("acme", types=["fact"], cutoff=t("2024-06-01")))


def test_a_custom_tokenizer_is_respected(w):
    w.source("10q", t("2024-05-01"))
    w.fact(Decimal("100"), "10q")
    ctx = w.mem.build_context(w.scope, task_id="T", memories=w.search("acme"),
                              token_budget=10_000, tokenizer=len)
    assert ctx.tokens_used == len(ctx.rendered) and ctx.tokenizer == "len"


# ------------------------------------------------------------------ erase cascade


def test_erasing_a_source_reaches_derived_facts_memories_candidates_and_renderings(w):
    w.source("leak", t("2024-05-01"), title="customer ledger export")
    w.source("10q", t("2024-05-01"))
    base = w.fact(Decimal("918273"), "leak", attribute="balance")
    other = w.fact(Decimal("55"), "10q", attribute="margin", unit="pct")
    derived = w.mem.derive(w.scope, method="double", method_version="1", params={},
                           inputs={"x": base.version_id},
                           output=FactIn(entity="acme", attribute="balance_x2", unit="USD",
                                         value=Decimal("1836546"), period=Q1))
    x = w.experience("leak", outcome="ledger 918273 reconciled", entities=("acme",))
    ts = w.mem.save_task_state(w.scope, TaskStateIn(task_id="T9", goal="reconcile 918273",
                                                    artifact_refs=("leak",), entities=("acme",)))
    cand = w.mem.remember_fact(w.scope, FactIn(entity="acme", attribute="balance_q2",
                                               value=Decimal("918273"), period=Q2,
                                               sources=("leak", "ghost")))
    ctx = w.mem.build_context(w.scope, task_id="T9", token_budget=4000,
                              memories=w.search("acme", match="any"))
    assert "918273" in ctx.rendered and "1836546" in ctx.rendered

    assert w.mem.erase(w.scope, source_id="leak", reason="GDPR request") == 2  # base + derived
    for vid in (base.version_id, derived.version_id):
        [v] = w.mem.versions(w.scope, [vid])
        assert v.erased and v.value is None
    for text in ("918273", "1836546", "ledger", "reconcile"):
        assert w.search(text).status == "not_found", text
    scrubbed = w.mem.context_snapshot(w.scope, ctx.snapshot_id)
    assert "918273" not in scrubbed.rendered and "1836546" not in scrubbed.rendered
    assert f"[erased {base.version_id}]" in scrubbed.rendered
    assert scrubbed.rendered_hash == ctx.rendered_hash  # the tombstone keeps the hash
    [c] = w.mem.candidates(w.scope, status=None)
    assert c.id == cand.id and c.erased and c.payload is None
    again = w.mem.remember_fact(w.scope, FactIn(entity="acme", attribute="balance", period=Q2,
                                                value=Decimal("1"), sources=("leak",)))
    assert again.status == "candidate" and "erased" in again.reasons[0]
    assert values(w.search("margin")) == [Decimal("55")]
    assert other.version_id in ctx.rendered and other.version_id in scrubbed.rendered
    assert x.id in scrubbed.rendered and ts.id in scrubbed.rendered  # as tombstones
    assert "ledger 918273" not in scrubbed.rendered


def test_erasing_an_entity_or_source_removes_the_snapshot_queries_that_name_it(w):
    w.source("10q", t("2024-05-01"), title="quarterly report")
    w.source("leak", t("2024-05-01"), title="customer ledger export")
    w.fact(Decimal("100"), "10q")
    w.fact(Decimal("50"), "10q", entity="globex")
    w.fact(Decimal("7"), "leak", entity="globex", attribute="balance")

    def snapshot(task: str, text: str, **kw) -> str:
        found = w.search(text, **kw)
        return w.mem.build_context(w.scope, task_id=task, memories=found,
                                   token_budget=4000).snapshot_id

    about_acme = snapshot("T1", "revenue", entity="acme")  # found acme's fact (considered)
    by_name = snapshot("T2", "Acme Corp dividends")  # names acme, found nothing
    by_alias = snapshot("T3", "ACME, please")
    unrelated = snapshot("T4", "globex revenue")
    ledger = snapshot("T5", "customer ledger export balance")  # names the source's title
    word_only = snapshot("T6", "customer", types=["task_state"])  # a word of the title only
    legacy = snapshot("T7", "Acme Corp dividends")
    with w.mem.db.driver.session(database=w.mem.db.database) as session:  # as recorded before
        session.run("MATCH (s:ContextSnapshot {id: $id}) REMOVE s.query_words", id=legacy).consume()

    w.mem.erase(w.scope, entity="acme", reason="right to be forgotten")
    for sid in (about_acme, by_name, by_alias, legacy):
        ctx = w.mem.context_snapshot(w.scope, sid)
        assert ctx.query is None, sid
        assert w.mem.trace(w.scope, sid, "fv_nothing").outcome == "not_stored"
    assert w.mem.context_snapshot(w.scope, unrelated).query.text == "globex revenue"

    w.mem.erase(w.scope, source_id="leak", reason="GDPR request")
    assert w.mem.context_snapshot(w.scope, ledger).query is None
    assert w.mem.context_snapshot(w.scope, word_only).query.text == "customer"
    assert w.mem.context_snapshot(w.scope, unrelated).query.text == "globex revenue"


def test_erasing_an_entity_reaches_its_memories_and_what_was_derived_from_it(w):
    w.source("10q", t("2024-05-01"))
    acme = w.fact(Decimal("100"), "10q")
    globex = w.fact(Decimal("50"), "10q", entity="globex")
    total = w.mem.derive(w.scope, method="sum", method_version="1", params={},
                         inputs={"parts": [acme.version_id, globex.version_id]},
                         output=FactIn(entity="globex", attribute="group_revenue", unit="USD",
                                       value=Decimal("150"), period=Q1))
    x = w.experience("10q", entities=("acme",))
    ts = w.mem.save_task_state(w.scope, TaskStateIn(task_id="T", goal="review Acme Corp",
                                                    entities=("acme",)))
    assert w.mem.erase(w.scope, entity="acme", reason="right to be forgotten") == 2
    assert w.search("Acme").status == "not_found"
    assert w.search("group_revenue").status == "not_found"  # derived from acme's value
    assert values(w.search("globex revenue")) == [Decimal("50")]
    assert {h.memory_id for h in w.search("10q").hits} == {globex.version_id}
    assert w.search("E-4012").status == "not_found"
    assert w.search("review", types=["task_state"]).status == "not_found"
    erased_x, erased_ts = w.mem.memories(w.scope, [x.id, ts.id])
    assert erased_x.erased and erased_x.outcome is None and erased_x.trigger is None
    assert erased_ts.erased and erased_ts.goal is None and erased_ts.task_id == "T"
    [v] = w.mem.versions(w.scope, [total.version_id])
    assert v.erased and v.value is None


# ---------------------------------------------------- echo variants, replaced task states, candidates


def _answer(w: World, title: str) -> None:
    w.mem.record_source(w.scope, Source(id=f"answer-{uuid.uuid4().hex[:8]}", kind="agent_answer",
                                        authority="inference", available_by=t("2024-06-01"), title=title))


def test_an_echo_in_another_case_or_unicode_form_is_still_an_echo(w):
    """A model's output or a copy and paste changes the form, not the words: upper case
    (ß is SS), a decomposed accent, full-width letters, zero-width spaces, a line whose
    segments are set apart by other whitespace, an id in capitals - all are refused;
    new text with the same letters in another order is still evidence."""
    w.source("run", t("2024-01-01"), kind="tool_run")
    x = w.experience("run", outcome="Die Straße über die Brücke war gesperrt")
    ctx = w.mem.build_context(w.scope, task_id="T", memories=w.search("E-4012"), token_budget=4000)
    line = ctx.included[0].lines[0]
    claim = line.split("] ", 1)[1].split(" | ")[0]
    variants = {
        "upper case": claim.upper(),
        "decomposed": unicodedata.normalize("NFD", claim),
        "full width": claim.replace("gesperrt", "ｇｅｓｐｅｒｒｔ"),
        "zero-width spaces": claim.replace(" ", "\u200b "),
        "segments apart by tabs": "noted:\n" + claim + "\t|\tsomething else entirely",
        "an id in capitals": f"see {x.id.upper()} for the retry",
    }
    for what, text in variants.items():
        with pytest.raises(EchoError, match=ctx.snapshot_id):
            _answer(w, text)
            pytest.fail(f"{what} was recorded as evidence")
    _answer(w, "die Brücke war gesperrt, die Straße nicht")  # new words: evidence


def test_a_context_of_hits_read_as_of_now_leaves_out_a_replaced_task_state(w):
    """Hits of task states alone are read as of now: a revision that a later one of its
    task replaced since the search is not rendered as active (the search would remove it
    as superseded); the latest revision still is."""
    old = w.mem.save_task_state(w.scope, TaskStateIn(task_id="deploy", goal="deploy rollback drafted"))
    hits = list(w.search("deploy rollback").hits)
    assert [h.memory_id for h in hits] == [old.id]
    new = w.mem.save_task_state(w.scope, TaskStateIn(task_id="deploy", goal="deploy rollback done"))
    ctx = w.mem.build_context(w.scope, task_id="T", memories=hits, token_budget=4000)
    assert ctx.included == () and "drafted" not in ctx.rendered
    latest = w.mem.build_context(w.scope, task_id="T", memories=list(w.search("deploy rollback").hits),
                                 token_budget=4000)
    assert [i.memory_id for i in latest.included] == [new.id]


def test_a_different_write_under_a_candidates_event_id_is_refused_not_dropped(w):
    """A live experience re-sent under its event id with other content is refused
    (InputError); a candidate's is silently answered with the first write's candidate."""
    first = w.mem.remember_experience(w.scope, ExperienceIn(
        trigger="deploy failed", outcome="rolled back", event_id="ev-1"))
    assert first.status == "candidate"
    with pytest.raises(InputError, match="different content"):
        w.mem.remember_experience(w.scope, ExperienceIn(
            trigger="deploy failed", outcome="restarted the pods", event_id="ev-1"))


# ------------------------------------------------------------------ trace


def test_trace_of_a_replaced_task_state_passed_as_hits_says_it_was_filtered(mem, scope):
    """Hits alone are read as of now: a task state replaced since its search is left out.
    trace said "not passed to build_context" of the memory that was passed; it is the
    superseded filter that removed it."""
    old = mem.save_task_state(scope, TaskStateIn(task_id="deploy", goal="roll back the deploy"))
    hits = list(mem.search(scope, text="deploy").hits)
    assert [h.memory_id for h in hits] == [old.id]
    mem.save_task_state(scope, TaskStateIn(task_id="deploy", goal="deploy rolled back, verify it"))
    ctx = mem.build_context(scope, task_id="t", memories=hits, token_budget=400)
    assert ctx.included == () and ctx.cut == ()
    traced = mem.trace(scope, ctx.snapshot_id, old.id)
    assert traced.outcome == "filtered", traced
    assert traced.steps[0].filter == "status:superseded"


# ------------------------------------------------------------------ build_context budget


@pytest.mark.parametrize("tokenizer", [lambda s: len(s) / 4, lambda s: -1, lambda s: "many"])
def test_a_tokenizer_that_is_no_count_is_refused_or_rounded_up_never_a_crash(w, tokenizer):
    """``len(text) / 4`` is the usual quick estimate: its fractional counts are rounded up
    (a count is never below what the tokenizer said), not met by a ValidationError from
    the snapshot's model; a negative or non-numeric count (which let a context of any
    length pass any budget) is refused naming the tokenizer."""
    w.source("10q", t("2024-05-01"), publisher="cik:1")
    w.fact(Decimal("100"), "10q")
    res = w.search("acme revenue")
    if tokenizer("x") == 0.25:
        ctx = w.mem.build_context(w.scope, task_id="t", memories=res, token_budget=200, tokenizer=tokenizer)
        assert [i.memory_id for i in ctx.included] == [res.hits[0].memory_id]
        assert isinstance(ctx.tokens_used, int) and tokenizer(ctx.rendered) <= ctx.tokens_used <= 200
        return
    with pytest.raises(InputError) as refused:
        w.mem.build_context(w.scope, task_id="t", memories=res, token_budget=40, tokenizer=tokenizer)
    assert refused.value.where == "tokenizer"


# ------------------------------------------------------------------ erasure


def test_a_context_built_after_an_erasure_from_an_earlier_search_keeps_no_query_naming_it(w):
    """An erasure removes the search query of every snapshot that considered an erased
    memory or names the entity. A search made before the erasure, built into a context
    after it, left its query ("Acme Corp revenue": the erased name) in the snapshot for
    good - the erasure had already run."""
    w.source("10q", t("2024-05-01"), publisher="cik:1")
    w.fact(Decimal("918273"), "10q")
    res = w.search("Acme Corp revenue", match="any")
    assert len(res.hits) == 1
    before = w.mem.build_context(w.scope, task_id="t", memories=res, token_budget=400)
    w.mem.erase(w.scope, entity="acme", reason="the user asked to be forgotten")
    after = w.mem.build_context(w.scope, task_id="t", memories=res, token_budget=400)
    assert after.included == ()
    for ctx in (before, after):
        snap = w.mem.context_snapshot(w.scope, ctx.snapshot_id)
        assert snap.query is None, (ctx is after, snap.query)
        assert "Acme" not in snap.model_dump_json()


def test_a_context_that_fits_its_budget_whole_is_not_cut_for_a_footer_it_does_not_need(w):
    """The footer ("# n memories cut") is only rendered when something is cut, but its
    tokens were always reserved: a budget of exactly what the whole context takes cut its
    only memory (and rendered the footer instead), and an empty search's context was
    refused for a budget that holds its header."""
    w.source("10q", t("2024-05-01"), publisher="cik:1")
    w.fact(Decimal("100"), "10q")
    res = w.search("acme revenue")
    whole = w.mem.build_context(w.scope, task_id="t", memories=res, token_budget=4000)
    assert len(whole.included) == 1 and whole.cut == ()
    *header, line = whole.rendered.splitlines()
    needs = approx_tokens("\n".join(header)) + approx_tokens(line) + 1  # as the builder counts
    tight = w.mem.build_context(w.scope, task_id="t", memories=res, token_budget=needs)
    assert tight.rendered == whole.rendered and tight.cut == ()
    empty = w.search("never given anywhere")
    assert empty.hits == ()
    header = w.mem.build_context(w.scope, task_id="t", memories=empty, token_budget=4000)
    w.mem.build_context(w.scope, task_id="t", memories=empty, token_budget=header.tokens_used)
