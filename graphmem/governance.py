"""Agent memory governance: typed memories, their write gates, the candidate queue and
the erase cascade (DESIGN.md sections 5 and 7; the essay's sections 2 and 4).

Three memory types, each with a gate that decides whether a write may become live:

============  =====================================================================
fact          at least one source, every source recorded in the scope, its entity
              recorded (``derive`` already refuses a derivation without inputs and
              method, and stays the way to write a derived fact)
experience    an observed outcome and at least one validating evidence source
task_state    a task id (a task state lives with its task; it is never promoted)
============  =====================================================================

A write that fails its gate is stored as a :class:`~graphmem.models.Candidate` with the
reasons, never dropped and never live: it is not in any read, search or context until
someone approves it. Approving records an ``Approval``; for a fact or experience that
lacked evidence, the approver's own ``user_correction`` source becomes its evidence (the
essay's ``user_approved`` gate). Rejecting records a ``Rejection``. A candidate's status
is computed from those records, never stored in a field.

``Memory.assert_fact`` is unchanged: it is the trusted, programmatic path (loaders),
where a missing source or entity is a caller's bug and raises InputError with nothing
written. ``Memory.remember_fact`` is the gated path for agent writes.

Idempotency: an experience or task state with an ``event_id`` is keyed by scope, type
and event id; without one, an experience by its content, and a task state by its call
(a retry finds it) and its content (one re-sent while it is still the task's latest
revision changes nothing). A candidate is keyed by scope, type and content. Re-sending
any of them returns what the first write stored, whatever became of it since: the
repeat of a memory whose source was retracted, or whose entity was erased, since is
that memory (or its tombstone), not a new candidate for review.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

from . import echo, facts, indexing
from .db import Tx
from .errors import ConcurrentWriteError, InputError, NotFoundError
from .models import (
    Authority,
    Candidate,
    Evidence,
    Experience,
    ExperienceIn,
    FactIn,
    MemoryType,
    Remembered,
    Scope,
    Source,
    TaskState,
    TaskStateIn,
    authority_of,
)
from .values import decode, digest, encode, from_micros, with_times

APPROVAL_KIND = "approval"


# ---------------------------------------------------------------- lookups


class _Known(NamedTuple):
    """What the gates know of a write's sources and entities (:func:`_known`)."""

    sources: dict[str, dict[str, Any]]  # the usable ones, by id, with when each became public
    missing: set[str]  # entity ids not recorded (or erased)
    retracted: set[str]  # source ids recorded but withdrawn
    erased: set[str]  # entity ids of ``missing`` that were erased


def _known(tx: Tx, scope: Scope, source_ids: Iterable[str], entity_ids: Iterable[str]) -> _Known:
    """The usable sources among ``source_ids``: recorded, not erased and not retracted
    (an erased or withdrawn source validates nothing new: a memory it alone backs would
    be live and yet filtered out of every read); the entities not recorded."""
    sids = {facts.source_uid(scope, s): s for s in set(source_ids)}
    eids = {facts.entity_uid(scope, e): e for e in set(entity_ids)}
    row = tx.one("write.prepare", source_uids=sorted(sids), entity_uids=sorted(eids), key_uids=[],
                 **facts.scope_params(scope))
    sources = {sids[s["uid"]]: {"id": sids[s["uid"]], "available_by": from_micros(s["available_by"])}
               for s in row["sources"] if not s["erased"] and not s["retracted"]}
    return _Known(sources, {eids[m["uid"]] for m in row["missing_entities"]},
                  {sids[s["uid"]] for s in row["sources"] if s["retracted"] and not s["erased"]},
                  {eids[m["uid"]] for m in row["missing_entities"] if m["erased"]})


def _source_reasons(claimed: Sequence[str], known: _Known, what: str) -> list[str]:
    if not claimed:
        return [f"no source: {what}"]
    return [f"source {sid!r} was retracted: it validates nothing new" if sid in known.retracted
            else f"source {sid!r} is not recorded in this scope (or was erased)"
            for sid in claimed if sid not in known.sources]


def _entity_reasons(known: _Known) -> list[str]:
    """Why the write's entities keep it a candidate: not recorded (put_entity first), or
    erased - put_entity refuses to bring an erased entity back, so it is not the remedy."""
    return [f"entity {e!r} was erased: it takes no new memories" if e in known.erased
            else f"entity {e!r} is not recorded in this scope (put_entity first)" for e in sorted(known.missing)]


# ---------------------------------------------------------------- candidates


def _fact_payload(fact: FactIn) -> dict[str, Any]:
    """A fact as JSON that round-trips its typed value (a Decimal stays a Decimal)."""
    payload = fact.model_dump(mode="json")
    value_type, text, _ = encode(fact.value)
    payload["value"] = {"type": value_type, "text": text}
    return payload


def _fact_of(payload: dict[str, Any]) -> FactIn:
    data = dict(payload)
    data["value"] = decode(payload["value"]["type"], payload["value"]["text"])
    return FactIn.model_validate(data)


def _strings(value: Any) -> Iterable[str]:
    """Every string inside a JSON value (the candidate's searchable text)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list | tuple):
        for v in value:
            yield from _strings(v)


def _store_candidate(tx: Tx, scope: Scope, memory_type: MemoryType, payload: dict[str, Any],
                     reasons: list[str], at: Any, *, event_id: str | None = None
                     ) -> Remembered:
    """Keep a write that failed its gate, with its reasons (idempotent; never live). Another
    write under a candidate's event id is refused, as for a live memory (``_existing``):
    answering it with the first write's candidate would drop it silently."""
    cid = digest(scope.id, "candidate", memory_type, event_id or payload, prefix="cand_")
    refs = [facts.entity_uid(scope, e) for e in _entity_ids(memory_type, payload)]
    refs += [facts.source_uid(scope, s) for s in _source_ids(memory_type, payload)]
    tx.run("candidate.create", id=cid, memory_type=memory_type,
           payload=json.dumps(payload, sort_keys=True), reasons=reasons, refs=sorted(set(refs)),
           search_text=" ".join([memory_type, *_strings(payload)]),
           scope_token=indexing.scope_token(scope), recorded_at=at, **facts.scope_params(scope))
    stored = list_candidates(tx, scope, ids=[cid])[0]
    if stored.payload is not None and stored.payload != json.loads(json.dumps(payload)):  # None: erased
        raise InputError(f"{memory_type}.event_id", f"event already recorded as {cid} with different content")
    return Remembered(type=memory_type, status="candidate", id=cid, reasons=stored.reasons)


def _entity_ids(memory_type: MemoryType, payload: dict[str, Any]) -> list[str]:
    if memory_type == "fact":
        return [payload["entity"]]
    return list(payload.get("entities") or [])


def _source_ids(memory_type: MemoryType, payload: dict[str, Any]) -> list[str]:
    key = {"fact": "sources", "experience": "evidence", "task_state": "artifact_refs"}
    return list(payload.get(key[memory_type]) or [])


def _candidate(row: dict[str, Any]) -> Candidate:
    c = row["c"]
    return Candidate(
        id=c["id"],
        type=c["memory_type"],
        payload=json.loads(c["payload"]) if c.get("payload") else None,
        reasons=tuple(c["reasons"]),
        status=row["status"],
        recorded_at=facts.native(c["recorded_at"]),
        decided_at=facts.native(row["decided_at"]),
        decided_by=row["decided_by"],
        decision_reason=row["decision_reason"],
        memory_id=row["memory_id"],
        erased=c.get("erased_at") is not None,
    )


def list_candidates(tx: Tx, scope: Scope, *, ids: Sequence[str] | None = None,
                    status: str | None = None) -> list[Candidate]:
    rows = tx.run("candidate.list", ids=list(ids) if ids is not None else None, status=status,
                  **facts.scope_params(scope))
    return [_candidate(r) for r in rows]


# ---------------------------------------------------------------- facts


def remember_fact(tx: Tx, scope: Scope, fact: FactIn, at: Any) -> Remembered:
    """The gated fact write: live if it has recorded sources and entity, else a candidate
    (a repeat of an assertion already stored is what that stored, whatever its sources
    have become since)."""
    known = _known(tx, scope, fact.sources, [fact.entity])
    reasons = _entity_reasons(known) + _source_reasons(
        fact.sources, known, "a fact needs at least one source")
    if reasons:
        repeat = facts.landed(tx, scope, fact)  # re-sent: what the first write stored
        if repeat is not None:
            return _live(tx, scope, "fact", repeat, at)
        return _store_candidate(tx, scope, "fact", _fact_payload(fact), reasons, at)
    vid = facts.write_facts(tx, scope, [fact], at).version_ids[0]
    return _live(tx, scope, "fact", vid, at)


# ---------------------------------------------------------------- experiences


def _content_hash(payload: dict[str, Any]) -> str:
    return digest({k: v for k, v in payload.items() if k != "event_id"}, prefix="c")


def _existing(tx: Tx, scope: Scope, memory_id: str, content_hash: str, where: str) -> bool:
    """True if this memory is already stored with this content (a retry or duplicate)."""
    row = tx.one("memory.content_hash", memory_id=memory_id, **facts.scope_params(scope))
    if row is None:
        return False
    if row["content_hash"] != content_hash:
        raise InputError(where, f"event already recorded as {memory_id} with different content")
    return True


def remember_experience(tx: Tx, scope: Scope, experience: ExperienceIn, at: Any,
                        *, approval: Source | None = None) -> Remembered:
    """The gated experience write: live with an observed outcome and validating evidence.

    Its outcome passes the echo guard first (an outcome the agent read in its own
    context was not observed). Its ``available_by`` is the latest of its evidence's.
    One already stored (re-sent) is returned as it is, whatever its evidence has
    become since: a gate it would fail now would keep the repeat as a candidate.
    """
    payload = experience.model_dump(mode="json")
    memory_id = digest(scope.id, "experience", experience.event_id or payload, prefix="exp_")
    content_hash = _content_hash(payload)
    if _existing(tx, scope, memory_id, content_hash, "experience.event_id"):
        return _live(tx, scope, "experience", memory_id, at)
    if experience.outcome:
        echo.refuse(tx, scope, "experience", [("outcome", experience.outcome)])
    known = _known(tx, scope, experience.evidence, experience.entities)
    reasons = []
    if not (experience.outcome or "").strip():
        reasons.append("no observed outcome: an experience records what was observed")
    reasons += _entity_reasons(known)
    if approval is None:
        reasons += _source_reasons(experience.evidence, known,
                                   "an experience needs at least one validating evidence record")
    if reasons:
        return _store_candidate(tx, scope, "experience", payload, reasons, at,
                                event_id=experience.event_id)
    evidence = [known.sources[s] for s in experience.evidence if s in known.sources]
    if approval is not None:
        evidence.append({"id": approval.id, "available_by": approval.available_by})
    tx.run(
        "experience.create", memory_id=memory_id, trigger=experience.trigger,
        preconditions=list(experience.preconditions), procedure=list(experience.procedure),
        outcome=experience.outcome, content_hash=content_hash,
        available_by=max(facts.native(e["available_by"]) for e in evidence),
        evidence=[facts.source_uid(scope, e["id"]) for e in evidence],
        entities=[facts.entity_uid(scope, e) for e in experience.entities],
        recorded_at=at, **facts.scope_params(scope))
    indexing.index_memories(tx, scope, [memory_id])
    return _live(tx, scope, "experience", memory_id, at)


# ---------------------------------------------------------------- task states


def save_task_state(tx: Tx, scope: Scope, state: TaskStateIn, at: Any, call: str,
                    expected_revision: int | None = None) -> Remembered:
    """The gated task-state write: a new revision of its task, the latest being active.

    Re-sending the task's current state changes nothing; with ``expected_revision``, a
    mismatch with the task's revision raises ConcurrentWriteError. A state without an
    event id is keyed by ``call``, a token the caller draws once per call: a retry after
    a landed commit finds it even when another writer's state has landed since.
    """
    payload = state.model_dump(mode="json")
    task_id = (state.task_id or "").strip()
    content_hash = _content_hash(payload)
    memory_id = digest(scope.id, "task_state", *((state.event_id,) if state.event_id else (task_id, call)),
                       prefix="ts_")
    if _existing(tx, scope, memory_id, content_hash, "task_state.event_id"):  # re-sent: as stored
        return _task_result(tx, scope, memory_id, at)
    known = _known(tx, scope, (), state.entities)
    reasons = [] if task_id else ["no task id: a task state lives with its task"]
    reasons += _entity_reasons(known)
    if reasons:
        return _store_candidate(tx, scope, "task_state", payload, reasons, at,
                                event_id=state.event_id)
    current = tx.one("task.current", task_id=task_id, **facts.scope_params(scope))
    if not state.event_id and current["content_hash"] == content_hash:
        return _task_result(tx, scope, current["memory_id"], at)
    revision = current["revision"]
    if expected_revision is not None and expected_revision != revision:
        raise ConcurrentWriteError(f"task {task_id}", expected_revision, revision)
    known = _known(tx, scope, state.artifact_refs, ()).sources
    tx.run(
        "task.create", memory_id=memory_id, task_id=task_id, goal=state.goal,
        checkpoint=state.checkpoint, open_items=list(state.open_items),
        artifact_refs=list(state.artifact_refs), revision=revision + 1,
        content_hash=content_hash, available_by=state.available_by,
        sources=[facts.source_uid(scope, s) for s in known],
        entities=[facts.entity_uid(scope, e) for e in state.entities],
        recorded_at=at, **facts.scope_params(scope))
    indexing.index_memories(tx, scope, [memory_id])
    return _task_result(tx, scope, memory_id, at)


def _task_result(tx: Tx, scope: Scope, memory_id: str, at: Any) -> Remembered:
    return _live(tx, scope, "task_state", memory_id, at)


def _live(tx: Tx, scope: Scope, memory_type: MemoryType, memory_id: str, at: Any
          ) -> Remembered:
    """A stored live memory, read back as the write that made it returns it."""
    if memory_type == "fact":
        version = facts.versions_by_id(tx, scope, [memory_id])[0]
        return Remembered(type="fact", status="live", id=memory_id, version=version)
    item = load_memories(tx, scope, [memory_id], known_at=at, cutoff=None)[memory_id]
    return Remembered(type=memory_type, status="live", id=memory_id,
                      experience=item if memory_type == "experience" else None,
                      task_state=item if memory_type == "task_state" else None)


# ---------------------------------------------------------------- review


def approve(tx: Tx, scope: Scope, candidate_id: str, by: str, at: Any) -> Remembered:
    """Make a pending candidate live, vouched for by ``by``; approving twice is one approval.

    What an approver can vouch for is evidence: a fact or experience that lacked a
    recorded source gets the approver's ``user_correction`` source instead (the
    unrecorded source ids it claimed are named in that source's meta). What an approval
    cannot supply - an entity that is not recorded, an outcome that was never observed,
    a task id - raises InputError, and the candidate stays pending.
    """
    found = list_candidates(tx, scope, ids=[candidate_id])
    if not found:
        raise NotFoundError(f"no candidate {candidate_id} in scope {scope.id}")
    cand = found[0]
    if cand.status == "approved" and cand.memory_id:
        return _live(tx, scope, cand.type, cand.memory_id, at)
    if cand.status == "rejected":
        raise InputError("candidate", f"{candidate_id} was rejected by {cand.decided_by} "
                                      f"({cand.decision_reason}); it cannot be approved")
    if cand.payload is None:
        raise InputError("candidate", f"{candidate_id} was erased")
    made = _make_live(tx, scope, cand, by, at)
    if made.status != "live":
        raise InputError("candidate", f"{candidate_id} still fails its gate after approval: "
                                      + "; ".join(made.reasons))
    tx.run("candidate.approve", id=candidate_id, memory_id=made.id, by=by,
           record_id=digest(candidate_id, prefix="apr_"), recorded_at=at,
           **facts.scope_params(scope))
    return made


def _approval_source(tx: Tx, scope: Scope, cand: Candidate, by: str, at: Any,
                     unrecorded: Sequence[str]) -> Source:
    source = Source(id=f"approval:{cand.id}", kind=APPROVAL_KIND,
                    authority=Authority.USER_CORRECTION, publisher=f"user:{by}",
                    available_by=facts.native(at), title=f"{by} approved candidate {cand.id}",
                    meta={"claimed_sources": ",".join(unrecorded)} if unrecorded else {})
    facts.record_source(tx, scope, source, at)
    return source


def _make_live(tx: Tx, scope: Scope, cand: Candidate, by: str, at: Any) -> Remembered:
    payload = cand.payload or {}
    if cand.type == "fact":
        fact = _fact_of(payload)
        known = _known(tx, scope, fact.sources, [fact.entity])
        if known.missing:
            return Remembered(type="fact", status="candidate", id=cand.id,
                              reasons=tuple(_entity_reasons(known)))
        unrecorded = [s for s in fact.sources if s not in known.sources]
        if unrecorded or not fact.sources:
            approval = _approval_source(tx, scope, cand, by, at, unrecorded)
            fact = fact.model_copy(update={
                "sources": (*[s for s in fact.sources if s in known.sources], approval.id),
                "available_by": None})
        return remember_fact(tx, scope, fact, at)
    if cand.type == "experience":
        exp = ExperienceIn.model_validate(payload)
        known = _known(tx, scope, exp.evidence, ()).sources
        unrecorded = [s for s in exp.evidence if s not in known]
        if exp.outcome and (unrecorded or not exp.evidence):
            approval = _approval_source(tx, scope, cand, by, at, unrecorded)
            exp = exp.model_copy(update={"evidence": tuple(s for s in exp.evidence if s in known)})
            return remember_experience(tx, scope, exp, at, approval=approval)
        return remember_experience(tx, scope, exp, at)
    return save_task_state(tx, scope, TaskStateIn.model_validate(payload), at, cand.id)


def reject(tx: Tx, scope: Scope, candidate_id: str, reason: str, by: str | None,
           at: Any) -> Candidate:
    """Record a rejection; rejecting twice is one rejection; an approved one cannot be."""
    found = list_candidates(tx, scope, ids=[candidate_id])
    if not found:
        raise NotFoundError(f"no candidate {candidate_id} in scope {scope.id}")
    if found[0].status == "approved":
        raise InputError("candidate", f"{candidate_id} was already approved; invalidate or "
                                      "retract the memory it made instead")
    if found[0].status == "pending":
        tx.run("candidate.reject", id=candidate_id, reason=reason, by=by,
               record_id=digest(candidate_id, prefix="rej_"), recorded_at=at,
               **facts.scope_params(scope))
    return list_candidates(tx, scope, ids=[candidate_id])[0]


# ---------------------------------------------------------------- reading memories


def _evidence(rows: Iterable[dict[str, Any]]) -> tuple[Evidence, ...]:
    return tuple(Evidence.model_validate(e) for e in facts.evidence_fields(rows))


def load_memories(tx: Tx, scope: Scope, memory_ids: Sequence[str], *, known_at: Any,
                  cutoff: Any) -> dict[str, Experience | TaskState]:
    """Experiences and task states by id, their evidence and authority as of (cutoff, known_at)
    (``cutoff`` None: as of ``known_at``)."""
    rows = tx.run("search.memories", memory_ids=list(memory_ids), known_at=known_at,
                  **facts.scope_params(scope))
    return to_memories(rows, known_at=known_at, cutoff=cutoff)


def to_memories(rows: Iterable[dict[str, Any]], *, known_at: Any, cutoff: Any
                ) -> dict[str, Experience | TaskState]:
    """``search.memories`` rows as experiences and task states (also what search.hits
    returns for the memories that can reach a search's page)."""
    limit = facts.native(cutoff if cutoff is not None else known_at)
    out: dict[str, Experience | TaskState] = {}
    for row in rows:
        m = row["m"]
        times = with_times(m, "available_by", "recorded_at")
        common = {"memory_id": m["memory_id"], "entities": tuple(row["entities"]),
                  "available_by": times["available_by"], "recorded_at": times["recorded_at"],
                  "erased": m["erased"]}
        if m["type"] == "experience":
            ev = _evidence(row["ev"])
            live = [e.authority.rank for e in ev if not e.retracted and e.available_by <= limit]
            out[m["memory_id"]] = Experience(
                trigger=m.get("trigger"), preconditions=tuple(m.get("preconditions") or ()),
                procedure=tuple(m.get("procedure") or ()), outcome=m.get("outcome"),
                authority=authority_of(max(live)) if live else None, sources=ev, **common)
        else:
            out[m["memory_id"]] = TaskState(
                task_id=m["task_id"], goal=m.get("goal"), checkpoint=m.get("checkpoint"),
                open_items=tuple(m.get("open_items") or ()),
                artifact_refs=tuple(m.get("artifact_refs") or ()), revision=m["revision"],
                **common)
    return out


# ---------------------------------------------------------------- erase cascade


def erase_reach(tx: Tx, scope: Scope, version_ids: Sequence[str]) -> list[str]:
    """The versions an erasure reaches: those given, and every fact derived from them
    at any depth (a derived value carries its inputs' information)."""
    if not version_ids:
        return []
    row = tx.one("cascade.downstream", version_ids=list(version_ids), **facts.scope_params(scope))
    return sorted(set(version_ids) | set(row["version_ids"] if row else []))


def erase_cascade(tx: Tx, scope: Scope, *, record_id: str, entity_uid: str | None,
                  source_uid: str | None, version_ids: Sequence[str], names: Sequence[str],
                  at: Any) -> None:
    """After ``lifecycle.erase``: erase the experiences, task states and candidates that
    used the entity or source, scrub their lines (and the erased facts') from context
    snapshot renderings, remove the search query of the snapshots that considered any of
    it or name it (``names``, from ``context.erase_names``), and take all of it out of the
    search index."""
    params = facts.scope_params(scope)
    tx.run("cascade.erase_memories", record_id=record_id, entity_uid=entity_uid,
           source_uid=source_uid, recorded_at=at, **params)
    tx.run("cascade.scrub_snapshots", record_id=record_id, recorded_at=at, **params)
    tx.run("context.scrub_queries", record_id=record_id, names=list(names), recorded_at=at,
           **params)
    touched = list(version_ids)
    if source_uid is not None:  # versions that keep other evidence no longer name it
        row = tx.one("cascade.source_facts", source_uid=source_uid, **params)
        touched += row["version_ids"] if row else []
    indexing.index_facts(tx, scope, touched)
