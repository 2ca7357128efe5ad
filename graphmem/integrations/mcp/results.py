"""What the MCP tools return: one structured shape per tool and a short text to quote.

Every fact a tool shows carries its status (active / conflicted / not_found), value and
value type (a decimal is its exact canonical text), unit, period, the three times,
authority, every source with its authority and URI, and the read's ``explain`` (how many
versions each hard filter removed). A conflict is a conflict: no value at the top, every
candidate listed, and the text says so. The models reuse graphmem's own where the API
already has the shape (Evidence, Explain, Experience, TaskState, Candidate, ...).
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from typing import Annotated, Any, Literal

import networkx as nx
from pydantic import BaseModel, ConfigDict, WithJsonSchema

from ...lineage import ImpactItem, ImpactReport
from ...models import (
    Answer,
    Authority,
    Candidate,
    Context,
    Entity,
    Evidence,
    Experience,
    Explain,
    FactVersion,
    Lifecycle,
    Period,
    Rank,
    Remembered,
    Screen,
    SearchExplain,
    SearchResult,
    SourceRecord,
    TaskState,
)
from ...values import encode

ValueType = Literal["decimal", "text", "boolean", "date"]
MAX_SHOWN = 200  # list results (impact items, lineage nodes) show at most this many


# ---------------------------------------------------------------- published schemas
# The SDK client validates every result against the tool's output schema with jsonschema,
# in Python: each nested model ($ref), each `anyOf [X, null]` and each list item costs it
# a descent, and ten fully typed search hits took 24 ms to check on a loaded machine, more
# than finding them. So the published schema types the top level of a result exactly and
# describes nested objects in words; the server still builds and checks every result
# against the models below (pydantic, in Rust).


def objects(description: str) -> WithJsonSchema:
    """A list of nested results, published as an array of objects with its shape in words."""
    return WithJsonSchema({"type": "array", "items": {"type": "object"}, "description": description})


def _lean(schema: dict[str, Any]) -> None:
    """Nullable fields as a type list (one check) rather than pydantic's anyOf (a try per
    branch)."""
    for prop in schema.get("properties", {}).values():
        branches = prop.get("anyOf", [])
        other = [b for b in branches if b != {"type": "null"}]
        if len(branches) == 2 and len(other) == 1 and isinstance(other[0].get("type"), str):
            del prop["anyOf"]
            prop.update(other[0], type=[other[0]["type"], "null"])
            if "enum" in prop:
                prop["enum"] = [*prop["enum"], None]


Sources = Annotated[list[Evidence], objects(
    "each source behind it: source_id, kind, authority, publisher, uri, title, available_by, "
    "recorded_at, retracted")]
AuthorityOut = Annotated[Authority | None, WithJsonSchema(
    {"enum": [a.value for a in Authority] + [None],
     "description": "user_correction > primary > derived > inference"})]
PeriodOut = Annotated[Period | None, WithJsonSchema(
    {"type": ["object", "null"], "description": "start (null for an instant) and end, ISO dates"})]
ExplainOut = Annotated[Explain, WithJsonSchema(
    {"type": "object", "description": "versions considered, then how many each filter removed: "
                                      "known_at, erased, cutoff, invalidated, retracted, evidence, "
                                      "outranked, superseded"})]
SearchExplainOut = Annotated[SearchExplain, WithJsonSchema(
    {"type": "object", "description": "matched (index hits in this scope), removed (per filter: "
                                      "type, entity, task, known_at, erased, candidate, cutoff, "
                                      "invalidated, retracted, evidence, outranked, superseded), kept, "
                                      "returned, below_limit, unevaluated, ranking, embedding_ms "
                                      "(semantic and hybrid: the query's embedding time)"})]


class _Out(BaseModel):
    model_config = ConfigDict(json_schema_extra=lambda schema, _: _lean(schema))


class Fact(_Out):
    """One fact version as a tool shows it."""

    version_id: str
    entity: str
    attribute: str
    value: str | None  # canonical text; None once erased
    value_type: ValueType | None
    unit: str
    definition: str
    period: PeriodOut
    event_time: dt.date
    available_by: dt.datetime
    recorded_at: dt.datetime
    authority: AuthorityOut
    sources: Sources
    lifecycle: Annotated[list[Lifecycle], objects(
        "what happened to it later: kind (invalidated, retracted, resolved, erased), "
        "recorded_at, reason, by, ref")] = []
    derivation: dict[str, Any] | None = None
    erased: bool = False


class AnswerOut(_Out):
    """An as-of answer. ``active``: the value and its version at the top; ``conflicted``:
    no value at the top, every candidate in ``candidates``; ``not_found``: nothing live."""

    status: Literal["active", "conflicted", "not_found"]
    entity: str
    attribute: str
    cutoff: dt.datetime
    known_at: dt.datetime
    value: str | None = None
    value_type: ValueType | None = None
    unit: str | None = None
    period: PeriodOut = None
    event_time: dt.date | None = None
    available_by: dt.datetime | None = None
    recorded_at: dt.datetime | None = None
    version_id: str | None = None
    authority: AuthorityOut = None
    sources: Sources = []
    derivation: dict[str, Any] | None = None
    candidates: Annotated[list[Fact], objects(
        "a conflict's versions, each with value, value_type, unit, period, event_time, "
        "available_by, recorded_at, authority, sources")] = []
    explain: ExplainOut


class AnswersOut(_Out):
    answers: Annotated[list[AnswerOut], objects("each as as_of returns it")]
    total: int
    truncated: bool


class ScreenOut(_Out):
    """A screen: one answer per entity of its universe (``counts`` by status)."""

    attribute: str
    frame: str | None
    period: PeriodOut = None
    unit: str | None
    cutoff: dt.datetime
    known_at: dt.datetime
    universe: Literal["entities", "attribute"]
    counts: dict[str, int]
    unknown: list[str]
    answers: Annotated[list[AnswerOut], objects("each as as_of returns it, in the screen's sort order")]
    total: int
    truncated: bool


class HistoryOut(_Out):
    versions: Annotated[list[Fact], objects(
        "each version: version_id, entity, attribute, value, value_type, unit, definition, period, "
        "event_time, available_by, recorded_at, authority, sources, lifecycle, derivation, erased")]
    total: int
    truncated: bool


class HitOut(_Out):
    type: Literal["fact", "experience", "task_state"]
    memory_id: str
    memory_ids: list[str]
    status: Literal["active", "conflicted"]
    rank: Rank
    fact: AnswerOut | None = None
    experience: Experience | None = None
    task_state: TaskState | None = None


class SearchOut(_Out):
    status: Literal["found", "not_found"]
    cutoff: dt.datetime
    known_at: dt.datetime
    hits: Annotated[list[HitOut], objects(
        "in rank order, each: type, memory_id, memory_ids (a conflict's candidates), status, rank "
        "(position, authority, text_score, why; semantic and hybrid also semantic_score, "
        "fused_score, identifiers), and fact (as as_of returns it), experience or "
        "task_state")]
    explain: SearchExplainOut


class LineageOut(_Out):
    version_id: str
    direction: Literal["upstream", "downstream"]
    nodes: list[dict[str, Any]]
    edges: list[dict[str, Any]]
    total_nodes: int
    truncated: bool


class ImpactOut(_Out):
    origin: str
    items: Annotated[list[ImpactItem], objects("each: kind, id, depth, reason (invalid, stale, "
                                               "survives), path, label")]
    total_items: int
    recompute_order: list[str]
    counts: dict[str, int]
    truncated: bool  # items or the recompute order were cut to MAX_SHOWN, or a depth limit
    known_at: dt.datetime | None


class ContextOut(_Out):
    snapshot_id: str
    task_id: str
    rendered: str
    token_budget: int
    tokens_used: int
    included: list[str]
    cut: list[str]
    notes: dict[str, str] = {}  # ids asked for and not rendered as such, and why
    cutoff: dt.datetime | None
    known_at: dt.datetime | None


class RememberedOut(_Out):
    type: Literal["fact", "experience", "task_state"]
    status: Literal["live", "candidate"]
    id: str
    reasons: list[str]
    fact: Fact | None = None
    experience: Experience | None = None
    task_state: TaskState | None = None


class CandidatesOut(_Out):
    candidates: Annotated[list[Candidate], objects(
        "each: id, type, payload, reasons, status (pending, approved, rejected), recorded_at, "
        "decided_at, decided_by, decision_reason, memory_id")]
    total: int
    truncated: bool


class SourceOut(_Out):
    recorded: bool  # False: the identical source was already recorded
    source: SourceRecord


class EntityOut(_Out):
    recorded: bool  # False: already recorded (left unchanged)
    entity: Entity


class ErasedOut(_Out):
    target: str
    erased_versions: int


class ErrorOut(_Out):
    """A tool error: the API's exception type and message (``where``/``reason`` for input)."""

    type: str
    message: str
    where: str | None = None
    reason: str | None = None


# ---------------------------------------------------------------- building


def _typed(value: Any) -> tuple[str | None, ValueType | None]:
    if value is None:
        return None, None
    value_type, text, _ = encode(value)
    return text, value_type  # type: ignore[return-value]


def _version(v: FactVersion) -> dict[str, Any]:
    """The fields a version shows both as a Fact and at the top of an active answer, taken
    from graphmem's model as they are (built once: no dump and re-check on the way)."""
    text, value_type = _typed(v.value)
    return {"version_id": v.version_id, "value": text, "value_type": value_type, "unit": v.unit,
            "period": v.period, "event_time": v.event_time, "available_by": v.available_by,
            "recorded_at": v.recorded_at, "authority": v.authority, "sources": list(v.sources),
            "derivation": v.derivation}


def fact(v: FactVersion) -> Fact:
    return Fact(entity=v.entity, attribute=v.attribute, definition=v.definition,
                lifecycle=list(v.lifecycle), erased=v.erased, **_version(v))


def answer(a: Answer) -> AnswerOut:
    top = _version(a.version) if a.version is not None else {}
    return AnswerOut(status=a.status, entity=a.entity, attribute=a.attribute, cutoff=a.cutoff,
                     known_at=a.known_at, candidates=[fact(v) for v in a.candidates],
                     explain=a.explain, **top)


def screen(s: Screen, limit: int) -> ScreenOut:
    return ScreenOut(attribute=s.attribute, frame=s.frame, period=s.period, unit=s.unit, cutoff=s.cutoff,
                     known_at=s.known_at, universe=s.universe, counts=s.counts(), unknown=list(s.unknown),
                     answers=[answer(a) for a in s.answers[:limit]], total=len(s.answers),
                     truncated=len(s.answers) > limit)


def search(result: SearchResult) -> SearchOut:
    hits = [HitOut(type=h.type, memory_id=h.memory_id, memory_ids=list(h.memory_ids),
                   status=h.status, rank=h.rank, experience=h.experience,
                   task_state=h.task_state, fact=answer(h.answer) if h.answer else None)
            for h in result.hits]
    return SearchOut(status=result.status, cutoff=result.query.cutoff,
                     known_at=result.query.known_at, hits=hits, explain=result.explain)


def remembered(r: Remembered) -> RememberedOut:
    return RememberedOut(type=r.type, status=r.status, id=r.id, reasons=list(r.reasons),
                         fact=fact(r.version) if r.version else None,
                         experience=r.experience, task_state=r.task_state)


def impact(report: ImpactReport) -> ImpactOut:
    cut = len(report.items) > MAX_SHOWN or len(report.recompute_order) > MAX_SHOWN
    return ImpactOut(origin=report.origin, items=list(report.items[:MAX_SHOWN]),
                     total_items=len(report.items),
                     recompute_order=list(report.recompute_order[:MAX_SHOWN]),
                     counts=report.counts, truncated=cut or report.truncated,
                     known_at=report.known_at)


def lineage(graph: nx.DiGraph, version_id: str, direction: str) -> LineageOut:
    data = json.loads(json.dumps(nx.node_link_data(graph, edges="edges"), default=str))
    nodes = data["nodes"][:MAX_SHOWN]
    kept = {n["id"] for n in nodes}
    edges = [e for e in data["edges"] if e["source"] in kept and e["target"] in kept]
    return LineageOut(version_id=version_id, direction=direction, nodes=nodes, edges=edges,
                      total_nodes=len(data["nodes"]), truncated=len(data["nodes"]) > MAX_SHOWN)


def context(ctx: Context, notes: dict[str, str]) -> ContextOut:
    return ContextOut(snapshot_id=ctx.snapshot_id, task_id=ctx.task_id, rendered=ctx.rendered or "",
                      token_budget=ctx.token_budget, tokens_used=ctx.tokens_used,
                      included=[m for i in ctx.included for m in i.memory_ids],
                      cut=[m for i in ctx.cut for m in i.memory_ids], notes=notes,
                      cutoff=ctx.cutoff, known_at=ctx.known_at)


# ---------------------------------------------------------------- short texts


def _time(t: dt.datetime | None) -> str:
    return t.astimezone(dt.UTC).isoformat().replace("+00:00", "Z") if t else "-"


def _sources(sources: Sequence[Evidence]) -> str:
    return "; ".join(f"{e.source_id} ({e.kind}, {e.authority.value}"
                     + (f", {e.uri}" if e.uri else "") + (", RETRACTED" if e.retracted else "") + ")"
                     for e in sources) or "none"


def fact_line(f: Fact | AnswerOut) -> str:
    """``value unit for period (version, authority; sources; times)``."""
    unit = f" {f.unit}" if f.unit else ""
    period = f.period.text if f.period else "-"
    value = "[erased]" if isinstance(f, Fact) and f.erased else f.value
    return (f"{value}{unit} for {period} (version {f.version_id}, authority "
            f"{f.authority.value if f.authority else 'none'}; sources: {_sources(f.sources)}; "
            f"event {f.event_time}, available {_time(f.available_by)}, recorded {_time(f.recorded_at)})")


def _explain(e: Explain) -> str:
    removed = {k: n for k, n in e.model_dump().items() if n and k != "versions"}
    return (f"{e.versions} version(s) considered; removed "
            + (", ".join(f"{k}={n}" for k, n in removed.items()) or "none"))


def answer_text(a: AnswerOut, times: bool = True) -> str:
    """One line for the answer (one per candidate for a conflict), then explain. Without
    ``times`` the line leaves out the read's cutoff and known_at (a search states them
    once, above all its hits)."""
    head = f"{a.entity} {a.attribute}" + (f" as of cutoff {_time(a.cutoff)}, known at "
                                          f"{_time(a.known_at)}" if times else "") + ": "
    if a.status == "active":
        lines = [head + "ACTIVE " + fact_line(a)]
    elif a.status == "conflicted":
        lines = [head + f"CONFLICTED between {len(a.candidates)} values (independent sources "
                 "disagree; none is picked):"] + [f"  - {fact_line(c)}" for c in a.candidates]
    else:
        lines = [head + "NOT FOUND"]
    return "\n".join(lines + [f"  explain: {_explain(a.explain)}"])


def answers_text(out: AnswersOut) -> str:
    lines = [answer_text(a) for a in out.answers] or ["no facts in that range"]
    if out.truncated:
        lines.append(f"(showing {len(out.answers)} of {out.total})")
    return "\n".join(lines)


def screen_text(out: ScreenOut) -> str:
    """A head line with the counts, then one line per entity (a conflict's candidates under it)."""
    what = out.frame or (out.period.text if out.period else "")
    head = (f"{out.attribute} {what} as of cutoff {_time(out.cutoff)}, known at {_time(out.known_at)}: "
            + ", ".join(f"{n} {status}" for status, n in out.counts.items()))
    lines = [head]
    for a in out.answers:
        if a.status == "active":
            lines.append(f"  {a.entity}: ACTIVE {fact_line(a)}")
        elif a.status == "conflicted":
            lines.append(f"  {a.entity}: CONFLICTED between {len(a.candidates)} values (none is picked):")
            lines += [f"    - {fact_line(c)}" for c in a.candidates]
        else:
            lines.append(f"  {a.entity}: NOT FOUND ({_explain(a.explain)})")
    if out.truncated:
        lines.append(f"(showing {len(out.answers)} of {out.total})")
    return "\n".join(lines)


def history_text(out: HistoryOut) -> str:
    lines = [f"{v.entity} {v.attribute}: " + fact_line(v)
             + "".join(f" [{x.kind} {_time(x.recorded_at)}]" for x in v.lifecycle)
             for v in out.versions] or ["no versions"]
    if out.truncated:
        lines.append(f"(showing {len(out.versions)} of {out.total})")
    return "\n".join(lines)


def hit_line(h: HitOut) -> str:
    if h.fact is not None:
        return f"#{h.rank.position} fact " + answer_text(h.fact, times=False)
    if h.experience is not None:
        x = h.experience
        return (f"#{h.rank.position} experience {x.memory_id}: when {x.trigger}; do "
                f"{' -> '.join(x.procedure) or '-'}; observed: {x.outcome} (authority "
                f"{x.authority.value if x.authority else 'none'}; evidence: {_sources(x.sources)}; "
                f"available {_time(x.available_by)}, recorded {_time(x.recorded_at)})")
    t = h.task_state
    assert t is not None
    return (f"#{h.rank.position} task_state {t.memory_id}: task {t.task_id} revision {t.revision}: "
            f"goal {t.goal}; checkpoint {t.checkpoint}; open: {', '.join(t.open_items) or 'none'} "
            f"(available {_time(t.available_by)}, recorded {_time(t.recorded_at)})")


def search_text(out: SearchOut) -> str:
    head = (f"search at cutoff {_time(out.cutoff)}, known at {_time(out.known_at)}: "
            f"{out.status.upper()}, {len(out.hits)} hit(s) of {out.explain.matched} matched; "
            f"removed by filter: {out.explain.removed or 'none'}")
    return "\n".join([head, *(hit_line(h) for h in out.hits)])


def remembered_text(out: RememberedOut) -> str:
    if out.status == "candidate":
        return (f"{out.type} kept as CANDIDATE {out.id} for review (not live): "
                + "; ".join(out.reasons))
    if out.fact is not None:
        return f"fact LIVE: {out.fact.entity} {out.fact.attribute} = " + fact_line(out.fact)
    return f"{out.type} LIVE: {out.id}"


def impact_text(out: ImpactOut) -> str:
    lines = [f"impact of {out.origin}: {out.total_items} downstream item(s); counts: "
             + (", ".join(f"{k}={v}" for k, v in sorted(out.counts.items())) or "none")]
    lines += [f"  depth {i.depth} {i.kind} {i.id} {i.reason}: {i.label}" for i in out.items]
    lines.append("recompute order: " + (" -> ".join(out.recompute_order) or "(nothing)"))
    if out.truncated:
        lines.append(f"(cut: showing at most {MAX_SHOWN} items, or a depth limit applied)")
    return "\n".join(lines)
