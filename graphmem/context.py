"""The context builder, its snapshots, and the trace of any memory through a snapshot
(DESIGN.md section 7; the essay's section 6: retrieved is not remembered).

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
erased memory's line from every rendering, and removes the search query of every
snapshot that considered an erased memory or whose query names the erased entity or
source (its id, name, an alias or a source title, as whole words of the query text or
its entity selector; the query's words are kept for that as ``query_words``).

**Trace.** ``trace`` says what happened to a memory on its way into one snapshot:
included, cut for budget, found by the search but not considered, filtered (by which
filter: the search is re-evaluated at the snapshot's own cutoff and known_at, which
reproduces its filters exactly), a candidate only, stored but not matched by the query
(``not_found``), or not stored (or stored only after the snapshot's known_at).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from . import echo, facts, search
from .db import Tx
from .errors import InputError, NotFoundError
from .models import (
    Context,
    ContextItem,
    Evidence,
    FactVersion,
    Period,
    Scope,
    SearchHit,
    SearchQuery,
    SearchResult,
    TraceResult,
    TraceStep,
)
from .values import digest

Tokenizer = Callable[[str], int]
OUTCOMES = ("included", "cut", "not_considered", "filtered", "candidate", "not_found",
            "not_stored")


def approx_tokens(text: str) -> int:
    """The default token count: ``max(whitespace words, ceil(characters / 4))``."""
    return max(len(text.split()), math.ceil(len(text) / 4))


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
    shown = [answer.version] if answer.version else list(answer.candidates)
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

    reserve = tokenizer(header) + 1 + tokenizer(footer(len(ordered))) + 1
    if reserve > token_budget:
        raise InputError("token_budget", f"{token_budget} tokens cannot hold the context's "
                                         f"header and footer ({reserve} tokens)")
    used, items, rendered_lines = reserve, [], []
    for priority, hit in enumerate(ordered):
        lines = _lines(hit)
        tokens = sum(tokenizer(line) + 1 for _, line, _ in lines)
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
                total, reserve + sum(i.tokens for i in items))


def check_memories(memories: Any) -> tuple[list[SearchHit], SearchQuery | None]:
    """A SearchResult, or a sequence of its hits; refused before any query otherwise."""
    if isinstance(memories, SearchResult):
        return list(memories.hits), memories.query
    if isinstance(memories, (str, bytes)) or not isinstance(memories, Sequence):
        raise InputError("memories", "a SearchResult or a list of SearchHit is required")
    hits = list(memories)
    bad = [i for i, h in enumerate(hits) if not isinstance(h, SearchHit)]
    if bad:
        raise InputError(f"memories[{bad[0]}]", "a SearchHit is required (from Memory.search)")
    return hits, None


def _times(hits: Sequence[SearchHit]) -> tuple[dt.datetime | None, dt.datetime | None]:
    answers = [h.answer for h in hits if h.answer is not None]
    if not answers:
        return None, None
    return answers[0].cutoff, answers[0].known_at


def record(tx: Tx, scope: Scope, *, task_id: str, memories: Any, token_budget: int,
           tokenizer: Tokenizer | None, at: dt.datetime, call: str) -> Context:
    """Plan the context and record its snapshot in the caller's write transaction.

    ``call`` names one ``build_context`` call (any retry of it passes the same): the
    snapshot's id is derived from it, not from the transaction time, so a retry after a
    commit whose acknowledgement was lost returns the snapshot already recorded."""
    hits, query = check_memories(memories)
    cutoff, known_at = (query.cutoff, query.known_at) if query else _times(hits)
    count = tokenizer or approx_tokens
    p = plan(task_id, hits, token_budget, count, cutoff, known_at)
    rendered_hash = hashlib.sha256(p.rendered.encode()).hexdigest()
    snapshot_id = digest(scope.id, task_id, rendered_hash, call, prefix="ctx_")
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
        evaluation = search.evaluate(tx, scope, q, exhaustive=True)
    steps = tuple(_step(tx, scope, ctx, m, evaluation) for m in ids)
    best = min(steps, key=lambda s: OUTCOMES.index(s.outcome))
    return TraceResult(snapshot_id=snapshot_id, outcome=best.outcome, steps=steps)


def _step(tx: Tx, scope: Scope, ctx: Context, memory_id: str,
          evaluation: search.Evaluation | None) -> TraceStep:
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
    state = tx.one("context.memory_state", id=memory_id, **facts.scope_params(scope))
    if not state or not state["stored"]:
        return TraceStep(memory_id=memory_id, outcome="not_stored",
                         detail="no memory with this id in this scope")
    recorded = facts.native(state["recorded_at"])
    if ctx.known_at is not None and recorded > ctx.known_at:
        return TraceStep(memory_id=memory_id, outcome="not_stored",
                         detail=f"stored only at {_time(recorded)}, after the snapshot's "
                                f"known_at {_time(ctx.known_at)}")
    if evaluation is not None and memory_id in evaluation.removed:
        name = search.filter_name(evaluation.removed[memory_id])
        return TraceStep(memory_id=memory_id, outcome="filtered", filter=name,
                         detail=f"the search matched it and removed it by {name} at cutoff "
                                f"{_time(ctx.cutoff)}, known_at {_time(ctx.known_at)}")
    if state["candidate"]:
        return TraceStep(memory_id=memory_id, outcome="candidate",
                         detail="stored only as a candidate awaiting review; never live")
    if evaluation is None:
        return TraceStep(memory_id=memory_id, outcome="not_considered",
                         detail="not passed to build_context (no search query was recorded, "
                                "or an erasure removed it)")
    for position, hit in enumerate(evaluation.ranked, 1):
        shown = ([hit.memory_id] if hit.answer is None else
                 [v.version_id for v in ([hit.answer.version] if hit.answer.version
                                         else hit.answer.candidates)])
        if memory_id in shown:
            limit = evaluation.query.limit
            why = (f"ranked #{position}, below the search limit {limit}" if position > limit
                   else f"found by the search at #{position} but not passed to build_context")
            return TraceStep(memory_id=memory_id, outcome="not_considered", detail=why)
    return TraceStep(memory_id=memory_id, outcome="not_found",
                     detail="stored, but the search did not match it (its text has none of "
                            "the query's required terms, or another type/entity)")
