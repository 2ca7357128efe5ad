"""The context builder, its snapshots, and the trace of any memory through a snapshot
(DESIGN.md section 7; the essay's section 6: retrieved is not remembered).

**Memories of its own scope only.** A context is built from a SearchResult of the
caller's scope (a result of another scope is refused before any query) or from hits of
one search; every memory is then re-read in the caller's scope at that search's cutoff,
known_at and evidence requirement (``reread``), and only what the graph holds there is
rendered: a hit whose memory is not in the scope is refused (InputError naming it), a
memory erased since the search is left out, and a value or source in the objects passed
in never reaches the rendering.

**Rendering** is deterministic: the same hits, task and budget give the same text. Every
memory is one line (a conflict is one line per candidate, kept or cut together)::

    - [fact fv_…] acme · revenue [USD] 2024-01-01..2024-03-31 = 110 | active
      | authority primary | sources: 10k (filing, primary, cik:1, https://…)
      | event 2024-03-31 · available 2025-02-01T00:00:00Z · recorded 2025-11-30T09:40:00Z

(one line; wrapped here)
so the model always sees a memory's claim with its status (a conflict says
``CONFLICTED with …``), authority, sources and three times, and can cite its id.

**Budget.** Memories are taken in priority order - conflicts first (a silent pick is
the error a conflict marker prevents), then authority (user_correction > primary >
derived > inference > none), then the search's rank, then id - and each is included
if it still fits; what does not fit is cut, and a footer line says how many were cut.
The rendering is also in priority order, so the most important memories come first.

**Tokens.** ``tokenizer`` is any ``str -> int``; the default, :func:`approx_tokens`, is
``max(words, ceil(characters / 4))`` - about what BPE tokenizers give for English and
never below the word count. Whatever the tokenizer, the final rendering is counted as a
whole and never exceeds the budget.

**Snapshot.** Each build records a ``(:Record:ContextSnapshot)`` with what was
considered, included and cut, token counts, the rendering and its SHA-256, the search
query it came from, linked by ``INCLUDED`` (rendered line, line and claim hashes) to
every memory node it rendered. The echo guard reads these hashes; an erasure scrubs an
erased memory's line from every rendering (and the line of a fact that listed an erased
source, whose uri it showed), and removes the search query of every
snapshot that considered an erased memory or whose query names the erased entity or
source (its id, name, an alias or a source title, as whole words of the query text or
its entity selector; the query's words are kept for that as ``query_words``).

**Trace.** ``trace`` says what happened to a memory on its way into one snapshot:
included, cut for budget, found by the search but not considered, filtered (by which
filter: the search is re-evaluated in the caller's scope at the snapshot's own cutoff
and known_at, which reproduces its filters exactly; an erased memory is filtered by
``status:erased``), a candidate only, stored but not matched by the query
(``not_found``), or not stored in this scope (or stored only after the snapshot's
known_at) - whatever a snapshot lists.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
import numbers
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from . import echo, facts, governance, limits, search
from .db import Tx
from .errors import InputError, NotFoundError
from .models import (
    Answer,
    Context,
    ContextItem,
    Evidence,
    Experience,
    FactVersion,
    Period,
    Require,
    Scope,
    SearchHit,
    SearchQuery,
    SearchResult,
    TaskState,
    TraceResult,
    TraceStep,
)
from .values import digest, epoch

Tokenizer = Callable[[str], int]
OUTCOMES = ("included", "cut", "not_considered", "filtered", "candidate", "not_found",
            "not_stored")


def approx_tokens(text: str) -> int:
    """The default token count: ``max(whitespace words, ceil(characters / 4))``."""
    return max(len(text.split()), math.ceil(len(text) / 4))


def counted(tokenizer: Tokenizer) -> Tokenizer:
    """``tokenizer`` held to being a count: a fractional one (``len(text) / 4``, the usual
    estimate) is rounded up, never down, and anything but a number >= 0 is refused
    (InputError): a negative count would let a context of any length pass any budget."""
    def count(text: str) -> int:
        n = tokenizer(text)
        if isinstance(n, bool) or not isinstance(n, numbers.Real) or not 0 <= n < math.inf:
            raise InputError("tokenizer", f"must return a number of tokens >= 0, returned {n!r}")
        return math.ceil(n)
    return count


def _time(value: dt.datetime | None) -> str:
    return value.astimezone(dt.UTC).isoformat().replace("+00:00", "Z") if value else "-"


def _clean(text: Any) -> str:
    """One line: user text may not break the one-memory-per-line layout."""
    return " ".join(str(text).split()).replace(echo.SEGMENT, " / ")


def _sources(label: str, evidence: Sequence[Evidence]) -> str:
    live = [e for e in evidence if not e.retracted]
    if not live:
        return f"{label}: none"
    return f"{label}: " + "; ".join(
        f"{_clean(e.source_id)} ({_clean(e.kind)}, {e.authority.value}, {_clean(e.publisher)}"
        + (f", {_clean(e.uri)}" if e.uri else "") + ")" for e in live)


def _line(kind: str, memory_id: str, claim: str, *segments: str) -> str:
    return f"- [{kind} {memory_id}] " + echo.SEGMENT.join((claim, *segments))


def _fact_lines(hit: SearchHit) -> list[tuple[str, str, str]]:
    answer = hit.answer
    assert answer is not None
    shown = answer.shown
    out = []
    for v in shown:
        others = [w.version_id for w in shown if w.version_id != v.version_id]
        out.append((v.version_id, *_fact_line(v, others)))
    return out


def _fact_line(v: FactVersion, conflict_with: list[str]) -> tuple[str, str]:
    claim = (f"{_clean(v.entity)} · {_clean(v.attribute)}"
             + (f" [{_clean(v.unit)}]" if v.unit else "")
             + (f" (definition: {_clean(v.definition)})" if v.definition else "")
             + f" {v.period.text} = {_clean(v.value)}")
    status = f"CONFLICTED with {', '.join(conflict_with)}" if conflict_with else "active"
    line = _line("fact", v.version_id, claim, status,
                 f"authority {v.authority.value if v.authority else 'none'}",
                 _sources("sources", v.sources),
                 f"event {v.event_time} · available {_time(v.available_by)} · recorded "
                 f"{_time(v.recorded_at)}")
    return line, claim


def _memory_line(hit: SearchHit) -> tuple[str, str, str]:
    if hit.experience is not None:
        x = hit.experience
        claim = (f"when {_clean(x.trigger)}"
                 + (f"; if {' and '.join(_clean(p) for p in x.preconditions)}"
                    if x.preconditions else "")
                 + (f"; do {' -> '.join(_clean(p) for p in x.procedure)}" if x.procedure else "")
                 + f"; observed: {_clean(x.outcome)}")
        line = _line("experience", x.memory_id, claim, "active",
                     f"authority {x.authority.value if x.authority else 'none'}",
                     _sources("evidence", x.sources),
                     f"available {_time(x.available_by)} · recorded {_time(x.recorded_at)}")
        return x.memory_id, line, claim
    t = hit.task_state
    assert t is not None
    claim = (f"task {_clean(t.task_id)}: goal {_clean(t.goal)}; checkpoint {_clean(t.checkpoint)}"
             + f"; open: {', '.join(_clean(i) for i in t.open_items) or 'none'}"
             + f"; artifacts: {', '.join(_clean(a) for a in t.artifact_refs) or 'none'}")
    line = _line("task_state", t.memory_id, claim, f"active (revision {t.revision})",
                 "authority none", "sources: none",
                 f"available {_time(t.available_by)} · recorded {_time(t.recorded_at)}")
    return t.memory_id, line, claim


def _lines(hit: SearchHit) -> list[tuple[str, str, str]]:
    """(memory id, line, claim) for each memory a hit shows."""
    return _fact_lines(hit) if hit.type == "fact" else [_memory_line(hit)]


@dataclass
class Plan:
    """A rendered context before it is recorded."""

    rendered: str
    included: list[ContextItem]
    cut: list[ContextItem]
    lines: list[dict[str, Any]]
    tokens_used: int
    tokens_considered: int


def _priority(hit: SearchHit) -> tuple[Any, ...]:
    authority = hit.rank.authority.rank if hit.rank.authority else 0
    return (hit.status != "conflicted", -authority, hit.rank.position, hit.memory_id)


def plan(task_id: str, hits: Sequence[SearchHit], token_budget: int, tokenizer: Tokenizer,
         cutoff: dt.datetime | None, known_at: dt.datetime | None) -> Plan:
    """Render within the budget (see module docstring); pure and deterministic."""
    header = (f"# graphmem context for task {_clean(task_id)}: cutoff {_time(cutoff)}, "
              f"known_at {_time(known_at)}\n# one memory per line: [type id] claim | status | "
              "authority | sources | event · available · recorded times")
    unique = list({h.memory_id: h for h in hits}.values())
    ordered = sorted(unique, key=_priority)

    def footer(n: int) -> str:
        return f"# {n} lower-priority memories cut for the token budget (see the snapshot)"

    # each hit's lines and their count, made once (a real tokenizer is not cheap)
    counted = [(hit, lines, sum(tokenizer(line) + 1 for _, line, _ in lines))
               for hit in ordered for lines in [_lines(hit)]]
    # the footer is rendered only when something is cut: reserved only when not all fits
    head = tokenizer(header)
    framing = head + 1 + tokenizer(footer(len(ordered))) + 1  # as considered
    reserve = head if head + sum(tokens for _, _, tokens in counted) <= token_budget else framing
    if reserve > token_budget:
        raise InputError("token_budget", f"{token_budget} tokens cannot hold the context's "
                                         f"header and footer ({reserve} tokens)")
    used, items, rendered_lines = reserve, [], []
    for priority, (hit, lines, tokens) in enumerate(counted):
        fits = used + tokens <= token_budget
        used += tokens if fits else 0
        items.append(ContextItem(
            memory_id=hit.memory_id, memory_ids=tuple(m for m, _, _ in lines), type=hit.type,
            status=hit.status, authority=hit.rank.authority, priority=priority, tokens=tokens,
            lines=tuple(line for _, line, _ in lines), decision="included" if fits else "cut",
            reason=("fits the budget" if fits else
                    f"budget: needs {tokens} tokens, {token_budget - used} left")))
        if fits:
            rendered_lines.append(lines)
    while True:  # a tokenizer need not be additive over lines: count the whole
        cut = [i for i in items if i.decision == "cut"]
        body = [line for group in rendered_lines for _, line, _ in group]
        rendered = "\n".join([header, *body, *([footer(len(cut))] if cut else [])])
        total = tokenizer(rendered)
        if total <= token_budget or not rendered_lines:
            break
        rendered_lines.pop()
        last = max(i.priority for i in items if i.decision == "included")
        items = [i.model_copy(update={"decision": "cut", "reason": "budget: whole-text count"})
                 if i.priority == last else i for i in items]
    included = [i for i in items if i.decision == "included"]
    line_rows = []
    for n, group in enumerate(rendered_lines):
        for k, (memory_id, line, claim) in enumerate(group):
            line_rows.append({
                "memory_id": memory_id, "item": n, "line": k, "tokens": tokenizer(line),
                "text": line, "line_hash": echo.fingerprint(line),
                "claim_hash": (echo.fingerprint(claim)
                               if len(echo.normalise(claim)) >= echo.MIN_CLAIM else None)})
    return Plan(rendered, included, [i for i in items if i.decision == "cut"], line_rows,
                total, framing + sum(i.tokens for i in items))


@dataclass(frozen=True)
class Memories:
    """What a ``build_context`` call was given, checked before any query: the hits, the
    search they came from (its query, when given a SearchResult) and the times and
    evidence requirement that search read them at (None: no hit says; then now)."""

    hits: list[SearchHit]
    query: SearchQuery | None
    cutoff: dt.datetime | None
    known_at: dt.datetime | None
    require: Require | None


def check_memories(scope: Scope, memories: Any, at: tuple[dt.datetime, dt.datetime] | None = None
                   ) -> Memories:
    """A SearchResult of this scope, or a list of hits of one search (at most
    ``limits.CONTEXT_MEMORIES``); refused before any query otherwise. ``at``: the
    (cutoff, known_at) to read a list of hits at when none says when it was read
    (experiences and task states alone: a fact hit's answer says it); refused when a hit
    says otherwise.

    A SearchResult's query names its scope (the scope token in its Lucene query): a
    result of another scope is refused, so neither its query nor its hits reach this
    scope's snapshot. Hits alone carry no scope; ``reread`` refuses those of another."""
    if isinstance(memories, SearchResult):
        q = memories.query
        if q.lucene != search.query_lucene(scope, q.text, q.match, q.entity, q.mode):
            raise InputError("memories", f"not a search result of scope {scope.id}: a context "
                                         "is built only from a search in its own scope")
        limits.check_count("memories", len(memories.hits), limits.CONTEXT_MEMORIES)
        if at is not None and at != (q.cutoff, q.known_at):
            raise InputError("memories", f"a search read at cutoff {_time(q.cutoff)}, known_at "
                             f"{_time(q.known_at)}, not at the times given ({_time(at[0])}, {_time(at[1])})")
        return Memories(_ids_checked(list(memories.hits)), q, q.cutoff, q.known_at, q.require)
    if isinstance(memories, (str, bytes)) or not isinstance(memories, Sequence):
        raise InputError("memories", "a SearchResult or a list of SearchHit is required")
    limits.check_count("memories", len(memories), limits.CONTEXT_MEMORIES)
    hits = list(memories)
    bad = [i for i, h in enumerate(hits) if not isinstance(h, SearchHit)]
    if bad:
        raise InputError(f"memories[{bad[0]}]", "a SearchHit is required (from Memory.search)")
    _ids_checked(hits)
    answered = [(i, h.answer) for i, h in enumerate(hits) if h.answer is not None]
    if not answered:
        return Memories(hits, None, *(at or (None, None)), None)
    first, a = answered[0]
    for i, b in answered[1:]:
        if (b.cutoff, b.known_at, b.require) != (a.cutoff, a.known_at, a.require):
            raise InputError(f"memories[{i}]", f"read at cutoff {_time(b.cutoff)}, known_at "
                             f"{_time(b.known_at)}, require {b.require}, unlike memories[{first}] "
                             f"(cutoff {_time(a.cutoff)}, known_at {_time(a.known_at)}, require "
                             f"{a.require}): a context is built from the hits of one search")
    if at is not None and at != (a.cutoff, a.known_at):
        raise InputError(f"memories[{first}]", f"read at cutoff {_time(a.cutoff)}, known_at "
                         f"{_time(a.known_at)}, not at the times given ({_time(at[0])}, {_time(at[1])})")
    return Memories(hits, None, a.cutoff, a.known_at, a.require)


def _ids_checked(hits: list[SearchHit]) -> list[SearchHit]:
    """Hits whose ids are ids (``limits.IDENTIFIER_BYTES``, text UTF-8 can carry): a hit may
    be made or changed by hand (SearchHit is a returned model, not checked), and its ids are
    query parameters and part of the snapshot."""
    for i, h in enumerate(hits):
        limits.check_id(f"memories[{i}].memory_id", h.memory_id)
        for j, memory_id in enumerate(h.memory_ids):
            limits.check_id(f"memories[{i}].memory_ids[{j}]", memory_id)
    return hits


def reread(tx: Tx, scope: Scope, given: Memories, cutoff: dt.datetime | None,
           known_at: dt.datetime | None) -> list[SearchHit]:
    """The hits as this scope says they are at (cutoff, known_at): nothing a context
    renders comes from the objects the caller passed, only from the graph.

    A hit whose memory is not a fact version, experience or task state of this scope is
    refused (InputError naming it): it comes from another scope, or was made up. A fact
    hit is its key's answer by the read rule (``fact.read``) under the search's evidence
    requirement; an experience or task state is read back with its evidence. What is no
    longer live there - erased since the search, or (for hits that came without their
    search) recorded after known_at, not public by the cutoff, without live evidence, a
    task state replaced by a later revision - is left out. A hit keeps its search
    position (the context's order after conflicts and authority); its authority is the
    re-read one."""
    if not given.hits or cutoff is None or known_at is None:  # no hits, no times
        return []
    row = tx.one("context.reread", ids=sorted({h.memory_id for h in given.hits}),
                 cutoff=epoch(cutoff), known_at=epoch(known_at),
                 **facts.require_params(given.require), **facts.scope_params(scope))
    assert row is not None  # the statement aggregates: always one row
    stored = {memory_id: (kind, uid) for memory_id, kind, uid in row["stored"]}
    for i, h in enumerate(given.hits):
        if h.memory_id not in stored:
            raise InputError(f"memories[{i}]", f"{h.memory_id!r} is not a fact version, "
                             f"experience or task state of scope {scope.id}: a context is "
                             "built only from memories of its own scope")
    answers = {row["uids"][a["i"]]: facts._answer(a, cutoff, given.require)
               for a in row["answers"]}
    others = governance.to_memories(row["details"], known_at=known_at, cutoff=cutoff)
    superseded = set(row["superseded"])
    out = []
    for h in given.hits:
        kind, uid = stored[h.memory_id]
        hit = (_fact_hit(h, answers[uid]) if kind == "fact"
               else None if h.memory_id in superseded
               else _memory_hit(h, others[h.memory_id], cutoff, known_at))
        if hit is not None:
            out.append(hit)
    return out


def _fact_hit(hit: SearchHit, answer: Answer) -> SearchHit | None:
    """A fact hit as its key's re-read answer shows it (None: nothing live is left)."""
    if answer.status == "not_found":
        return None
    shown = answer.shown
    strongest = max((v.authority for v in shown if v.authority), key=lambda a: a.rank,
                    default=None)
    return SearchHit(type="fact", memory_id=shown[0].version_id,
                     memory_ids=tuple(v.version_id for v in shown), status=answer.status,
                     answer=answer, rank=hit.rank.model_copy(update={"authority": strongest}))


def _memory_hit(hit: SearchHit, item: Experience | TaskState, cutoff: dt.datetime,
                known_at: dt.datetime) -> SearchHit | None:
    """An experience or task state hit as read back (None: not live at the times)."""
    experience = item if isinstance(item, Experience) else None
    if (item.erased or item.recorded_at > known_at or item.available_by > cutoff
            or (experience is not None and experience.authority is None)):
        return None
    return SearchHit(type="experience" if experience else "task_state",
                     memory_id=item.memory_id, memory_ids=(item.memory_id,), status="active",
                     experience=experience,
                     task_state=item if isinstance(item, TaskState) else None,
                     rank=hit.rank.model_copy(update={
                         "authority": experience.authority if experience else None}))


def record(tx: Tx, scope: Scope, *, task_id: str, memories: Memories, token_budget: int,
           tokenizer: Tokenizer | None, at: dt.datetime, call: str) -> Context:
    """Re-read the memories, plan the context and record its snapshot in the caller's
    write transaction.

    ``call`` names one ``build_context`` call (any retry of it passes the same): the
    snapshot's id is derived from it, not from the transaction time nor from the
    rendering (which shows that time when the hits do not say when they were read), so
    a retry after a commit whose acknowledgement was lost returns the snapshot already
    recorded."""
    query = memories.query
    cutoff, known_at = memories.cutoff, memories.known_at
    if memories.hits and known_at is None:  # hits that do not say when: as of now
        cutoff = known_at = at
    hits = reread(tx, scope, memories, cutoff, known_at)
    if query is not None and len(hits) < len(memories.hits):
        # re-read at its own search's times, a hit is left out only when it was erased
        # since: the erasure has already scrubbed the queries of the snapshots that
        # considered it, and would have scrubbed this one's (its words may name it)
        query = None
    count = tokenizer or approx_tokens
    p = plan(task_id, hits, token_budget, counted(count), cutoff, known_at)
    rendered_hash = hashlib.sha256(p.rendered.encode()).hexdigest()
    snapshot_id = digest(scope.id, task_id, call, prefix="ctx_")
    name = getattr(count, "__qualname__", type(count).__name__)
    name = "approx_tokens: max(words, ceil(chars/4))" if count is approx_tokens else name
    items = [i.model_dump(mode="json", exclude={"lines"}) for i in p.included + p.cut]
    stored = tx.one("context.record", id=snapshot_id, task_id=task_id, rendered=p.rendered,
           rendered_hash=rendered_hash, echo_hash=echo.fingerprint(p.rendered),
           token_budget=token_budget, tokens_used=p.tokens_used,
           tokens_considered=p.tokens_considered, tokenizer=name,
           considered=[m for i in p.included + p.cut for m in i.memory_ids],
           included=[m for i in p.included for m in i.memory_ids],
           cut=[m for i in p.cut for m in i.memory_ids], items=json.dumps(items),
           query=query.model_dump_json() if query else None,
           query_words=search.words(query.text, query.entity) if query else None,
           cutoff=cutoff, known_at=known_at,
           lines=p.lines, recorded_at=at, **facts.scope_params(scope))
    if facts.native(stored["recorded_at"]) != at:  # recorded by a try that committed
        return load(tx, scope, snapshot_id)
    return Context(snapshot_id=snapshot_id, task_id=task_id, rendered=p.rendered,
                   rendered_hash=rendered_hash, token_budget=token_budget,
                   tokens_used=p.tokens_used, tokens_considered=p.tokens_considered,
                   tokenizer=name, included=tuple(p.included), cut=tuple(p.cut),
                   cutoff=cutoff, known_at=known_at, recorded_at=at, query=query)


def erase_names(tx: Tx, scope: Scope, entity_uid: str | None, source_uid: str | None
                ) -> list[str]:
    """What the erased entity or source is called (id, name, aliases; id, title), as
    ``search.words``: read before ``lifecycle.erase`` removes it, so that the cascade can
    find the snapshot queries that name it."""
    row = tx.one("context.erase_names", entity_uid=entity_uid, source_uid=source_uid,
                 **facts.scope_params(scope))
    named = [search.words(n) for n in (row["names"] if row else [])]
    return [n for n in named if n.strip()]


# ---------------------------------------------------------------- reading back, trace


def load(tx: Tx, scope: Scope, snapshot_id: str) -> Context:
    """A recorded snapshot as a Context (lines of cut memories were never rendered)."""
    row = tx.one("context.get", id=snapshot_id, **facts.scope_params(scope))
    if row is None:
        raise NotFoundError(f"no context snapshot {snapshot_id} in scope {scope.id}")
    s = row["s"]
    lines: dict[int, list[str]] = {}
    for r in row["lines"]:
        lines.setdefault(r["item"], []).append(r["text"] or f"- [erased {r['memory_id']}]")
    items = [ContextItem.model_validate({**i, "lines": ()}) for i in json.loads(s["items"])]
    included = [i for i in items if i.decision == "included"]
    included = [i.model_copy(update={"lines": tuple(lines.get(n, ()))})
                for n, i in enumerate(included)]
    return Context(
        snapshot_id=s["id"], task_id=s["task_id"], rendered=s["rendered"],
        rendered_hash=s["rendered_hash"], token_budget=s["token_budget"],
        tokens_used=s["tokens_used"], tokens_considered=s["tokens_considered"],
        tokenizer=s["tokenizer"], included=tuple(included),
        cut=tuple(i for i in items if i.decision == "cut"),
        cutoff=facts.native(s.get("cutoff")), known_at=facts.native(s.get("known_at")),
        recorded_at=facts.native(s["recorded_at"]),
        query=SearchQuery.model_validate_json(s["query"]) if s.get("query") else None)


def recent(tx: Tx, scope: Scope, task_id: str | None, skip: int, limit: int) -> list[Context]:
    """One page of this scope's snapshots (of one task, if given), newest first."""
    rows = tx.run("context.list", task_id=task_id, skip=skip, limit=limit, **facts.scope_params(scope))
    return [load(tx, scope, r["id"]) for r in rows]


def trace(tx: Tx, scope: Scope, snapshot_id: str, memory_id: str | None, *,
          entity: str | None, attribute: str | None, period: Period | None) -> TraceResult:
    """The fate of one memory, or of every version of a fact key, in one snapshot."""
    ctx = load(tx, scope, snapshot_id)
    if memory_id is not None:
        ids = [memory_id]
    else:
        rows = tx.run("fact.history", entity=entity, attribute=attribute,
                      period=period.text if period else None, **facts.scope_params(scope))
        ids = [r["version_id"] for r in rows]
    if not ids:
        step = TraceStep(memory_id=f"{entity}/{attribute}", outcome="not_stored",
                         detail="no version of this fact key was ever stored in this scope")
        return TraceResult(snapshot_id=snapshot_id, outcome="not_stored", steps=(step,))
    evaluation = None
    if ctx.query is not None:
        q = {f: getattr(ctx.query, f) for f in SearchQuery.model_fields}
        # the Lucene query of this scope, never a recorded one (which names a scope)
        q["lucene"] = search.query_lucene(scope, q["text"], q["match"], q["entity"], q["mode"])
        if q["mode"] != "text":  # every memory of the scope was a candidate: judge only these
            q["meaning"] = {"candidates": [[m, fact, 0.0] for m in ids for fact in (True, False)],
                            "rest": None, "others": 0}
        evaluation = search.evaluate(tx, scope, q, exhaustive=True)
    steps = tuple(_step(tx, scope, ctx, m, evaluation) for m in ids)
    best = min(steps, key=lambda s: OUTCOMES.index(s.outcome))
    return TraceResult(snapshot_id=snapshot_id, outcome=best.outcome, steps=steps)


def _step(tx: Tx, scope: Scope, ctx: Context, memory_id: str,
          evaluation: search.Evaluation | None) -> TraceStep:
    state = tx.one("context.memory_state", id=memory_id, **facts.scope_params(scope))
    if not state or not state["stored"]:  # whatever a snapshot lists: not of this scope
        return TraceStep(memory_id=memory_id, outcome="not_stored",
                         detail="no memory with this id in this scope")
    for item in ctx.included:
        if memory_id in item.memory_ids:
            return TraceStep(memory_id=memory_id, outcome="included",
                             detail=f"rendered at priority {item.priority} ({item.tokens} "
                                    f"tokens of {ctx.token_budget})")
    for item in ctx.cut:
        if memory_id in item.memory_ids:
            return TraceStep(memory_id=memory_id, outcome="cut",
                             detail=f"considered at priority {item.priority}, cut for the "
                                    f"token budget ({item.reason})")
    recorded = facts.native(state["recorded_at"])
    if ctx.known_at is not None and recorded > ctx.known_at:
        return TraceStep(memory_id=memory_id, outcome="not_stored",
                         detail=f"stored only at {_time(recorded)}, after the snapshot's "
                                f"known_at {_time(ctx.known_at)}")
    if state["erased_at"] is not None:  # out of the index, so no search matches it
        return TraceStep(memory_id=memory_id, outcome="filtered", filter="status:erased",
                         detail=f"erased at {_time(facts.native(state['erased_at']))}: "
                                "every read and search leaves it out")
    if evaluation is not None and memory_id in evaluation.removed:
        name = search.filter_name(evaluation.removed[memory_id])
        return TraceStep(memory_id=memory_id, outcome="filtered", filter=name,
                         detail=f"the search matched it and removed it by {name} at cutoff "
                                f"{_time(ctx.cutoff)}, known_at {_time(ctx.known_at)}")
    if state["candidate"]:
        return TraceStep(memory_id=memory_id, outcome="candidate",
                         detail="stored only as a candidate awaiting review; never live")
    if evaluation is None and (name := _memory_filter(tx, scope, ctx, memory_id)):
        return TraceStep(memory_id=memory_id, outcome="filtered", filter=name,
                         detail=f"not live at cutoff {_time(ctx.cutoff)}, known_at "
                                f"{_time(ctx.known_at)}: removed by {name} (a memory passed to "
                                "build_context there was left out)")
    if evaluation is None:
        return TraceStep(memory_id=memory_id, outcome="not_considered",
                         detail="not passed to build_context (no search query was recorded, "
                                "or an erasure removed it)")
    if evaluation.query.mode != "text" and any(memory_id in _shown(hit) for hit in evaluation.ranked):
        return TraceStep(memory_id=memory_id, outcome="not_considered",
                         detail=f"passed every filter at cutoff {_time(ctx.cutoff)}, known_at "
                                f"{_time(ctx.known_at)}; ranked by meaning ({evaluation.query.mode}, "
                                f"{evaluation.query.embedder}) below the hits passed to build_context "
                                "(trace does not embed: search again with the snapshot's query for its rank)")
    for position, hit in enumerate(evaluation.ranked, 1):
        if memory_id in _shown(hit):
            limit = evaluation.query.limit
            why = (f"ranked #{position}, below the search limit {limit}" if position > limit
                   else f"found by the search at #{position} but not passed to build_context")
            return TraceStep(memory_id=memory_id, outcome="not_considered", detail=why)
    return TraceStep(memory_id=memory_id, outcome="not_found",
                     detail="stored, but the search did not match it (its text has none of "
                            "the query's required terms, or another type/entity)")


def _memory_filter(tx: Tx, scope: Scope, ctx: Context, memory_id: str) -> str | None:
    """The filter that removes an experience or task state at the snapshot's (cutoff,
    known_at), when no search query says (hits passed alone, read at those times: a task
    state replaced by then was passed and left out, not "not passed"); None if it is live
    there, no such memory, or the snapshot read nothing."""
    if ctx.cutoff is None or ctx.known_at is None or not memory_id.startswith(("exp_", "ts_")):
        return None
    _, removed = search.memories_at(tx, scope, [memory_id], ctx.cutoff, ctx.known_at)
    return removed.get(memory_id)


def _shown(hit: search._Hit) -> list[str]:
    """The memory ids a ranked hit shows: its own, or its fact key's answer's versions."""
    if hit.answer is None:
        return [hit.memory_id]
    return [v.version_id for v in hit.answer.shown]
