"""The MCP tools: graphmem's public API, one tool per call an agent needs.

Each tool asks the server's :class:`~.access.Access` who is calling (the scope is never
an argument), calls :class:`graphmem.Memory`, and returns the structured result of
:mod:`.results` with a short text to quote. graphmem's errors come back as MCP tool
errors (``is_error``) with the API's own message and type, and so do arguments that do
not fit before the tool runs (:class:`StrictTool`): one the tool does not take (a
``tenant`` or ``scope`` a client believes it can choose) is refused by name, and one of
the wrong type or out of bounds is graphmem's ``InputError`` naming it; a transient database fault
is retried inside ``Memory`` by its retry policy first, and only one that outlasts the
policy is reported.

Which tools a server offers depends on its grants: reads always; context and writes
unless ``--read-only``; ``approve`` / ``reject`` with ``--allow-review``; ``invalidate``,
``retract_source`` and ``erase`` with ``--allow-admin``. Annotations say truthfully what
each does: read-only, additive or destructive, idempotent or not.

(No ``from __future__ import annotations`` here: the SDK reads each tool's parameter
and return annotations to build its input and output schemas.)
"""

import datetime as dt
import reprlib
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import FuncMetadata
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from neo4j.exceptions import DriverError, Neo4jError
from pydantic import BaseModel, Field, ValidationError

from ...errors import GraphmemError, InputError, UnavailableError
from ...memory import Memory
from ...models import (
    Authority,
    Entity,
    Experience,
    ExperienceIn,
    FactIn,
    Period,
    Rank,
    Require,
    SearchHit,
    Source,
    TaskStateIn,
    TraceResult,
)
from ...values import NOW, Now, parse_time
from . import results as r
from .access import Access, Caller

# ---------------------------------------------------------------- bounds and argument types
# Every argument has a bound the SDK checks (JSON schema) before the tool runs.

MAX_TEXT, MAX_IDS, MAX_BUDGET = 4000, 200, 100_000
Id = Annotated[str, Field(min_length=1, max_length=1024)]
Text = Annotated[str, Field(min_length=1, max_length=MAX_TEXT)]
Ids = Annotated[list[Id], Field(max_length=MAX_IDS)]
Unit = Annotated[str, Field(max_length=256)]
Definition = Annotated[str, Field(max_length=1024)]  # one bound to write a key's and to ask for it
When = Annotated[str | None, Field(max_length=40, description=(
    "ISO 8601 date or datetime. A date means the end of that day (UTC); a datetime without "
    "a zone is UTC."))]
Cutoff = Annotated[str | None, Field(max_length=40, description=(
    "Publication cutoff: only what was public by then (ISO date or datetime; a date means the "
    "end of that day UTC). Default: now."))]
KnownAt = Annotated[str | None, Field(max_length=40, description=(
    "Transaction time: as graphmem had recorded it by then (ISO). Default: now. Earlier "
    "values show what was known before later corrections."))]
Day = Annotated[dt.date | None, Field(description="ISO date, e.g. 2024-03-31")]
Limit = Annotated[int, Field(ge=1, le=100)]
MinAuthority = Annotated[Authority | None, Field(description=(
    "Only facts backed by a source of at least this authority "
    "(user_correction > primary > derived > inference)."))]


def _period(end: dt.date | None, start: dt.date | None) -> Period | None:
    if end is None:
        if start is not None:
            raise InputError("period_start", "give period_end too")
        return None
    try:
        return Period(start=start, end=end)
    except InputError as exc:  # the model refuses a start after the end
        raise InputError("period_start", exc.reason) from exc


def _require(min_authority: Authority | None) -> Require | None:
    return Require(min_authority=min_authority) if min_authority else None


# ---------------------------------------------------------------- running a tool


@dataclass(frozen=True)
class Grants:
    """What a server may do beyond reading: set on its command line."""

    read_only: bool = False
    allow_review: bool = False
    allow_admin: bool = False

    def __post_init__(self) -> None:
        if self.read_only and (self.allow_review or self.allow_admin):
            raise InputError("--read-only", "cannot be combined with --allow-review or --allow-admin")

    def allows(self, kind: str) -> bool:
        return {"read": True, "write": not self.read_only, "review": self.allow_review,
                "admin": self.allow_admin}[kind]


READ = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True,
                      open_world_hint=False)
ADDITIVE = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True,
                           open_world_hint=False)
DESTRUCTIVE = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True,
                              open_world_hint=False)
# (build_context and erase record something new on every call: not idempotent)


def _result(out: BaseModel, text: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)],
                          structured_content=out.model_dump(mode="json"))


def _error(exc: Exception) -> CallToolResult:
    if isinstance(exc, (Neo4jError, DriverError, UnavailableError)):  # outlasted the retry policy
        out = r.ErrorOut(type="DatabaseUnavailable",
                         message=f"the database did not answer after retries: {exc}")
    else:
        out = r.ErrorOut(type=type(exc).__name__, message=str(exc), where=getattr(exc, "where", None),
                         reason=getattr(exc, "reason", None))
    return CallToolResult(content=[TextContent(type="text", text=f"{out.type}: {out.message}")],
                          structured_content=out.model_dump(mode="json"), is_error=True)


def _invalid(exc: ValidationError, model: type[BaseModel] | None = None) -> InputError:
    """A pydantic refusal as graphmem's InputError: where is the argument (or field), the
    reason pydantic's words for it with the value refused (shortened), and the other
    fields refused, if any, named after. ``model``: the tool's argument model, whose
    union-typed arguments pydantic refuses once per member (``value.str``,
    ``value.int`` ...): named once, as the argument."""
    errors = exc.errors()
    where = list(dict.fromkeys(_where(e["loc"], model) for e in errors))
    first = errors[0]
    got = "" if isinstance(first.get("input"), dict) else f", got {reprlib.repr(first.get('input'))}"
    more = f" (also refused: {', '.join(where[1:])})" if len(where) > 1 else ""
    return InputError(where[0], first["msg"] + got + more)


def _where(loc: tuple[int | str, ...], model: type[BaseModel] | None) -> str:
    """An error's location, without the member tag that follows a union-typed argument."""
    parts = list(loc)
    fields = {f.alias or n: f for n, f in model.model_fields.items()} if model is not None else {}
    field = fields.get(str(parts[0])) if parts else None
    if len(parts) > 1 and field is not None and _is_union(field.annotation):
        del parts[1]
    return ".".join(str(p) for p in parts) or "input"


def _is_union(annotation: Any) -> bool:
    """A union of two or more types besides None (``X | None`` is no union to pydantic)."""
    return typing.get_origin(annotation) in (typing.Union, types.UnionType) and len(
        [a for a in typing.get_args(annotation) if a is not type(None)]) > 1


def _run(access: Access, ctx: Context, work: Callable[[Caller], tuple[BaseModel, str]]) -> CallToolResult:
    """Resolve the caller, run the work, and turn graphmem's errors into tool errors."""
    try:
        out, text = work(access.caller(ctx))
    except ValidationError as exc:  # a model refused an argument: the API's InputError
        return _error(_invalid(exc))
    except InputError as exc:
        return _error(_as_argument(exc))
    except (GraphmemError, Neo4jError, DriverError) as exc:
        return _error(exc)
    return _result(out, text)


_MODELS = ("FactIn.", "Entity.", "Source.", "ExperienceIn.", "TaskStateIn.")  # the tools build these


def _as_argument(exc: InputError) -> InputError:
    """A model's refusal of a field the tool filled from its argument of the same name
    (``FactIn.entity``, ``Entity.aliases[1]``), named as that argument: the schemas count
    characters and the models bytes, so a value can pass the one and not the other."""
    model = next((m for m in _MODELS if exc.where.startswith(m)), None)
    if model is None:
        return exc
    return type(exc)(exc.where.removeprefix(model), exc.reason)


def _value(value: str | int | float | bool, value_type: str | None) -> Any:
    """A tool's fact value in graphmem's typed form (JSON numbers become exact decimals)."""
    kind = value_type or ("boolean" if isinstance(value, bool) else
                          "decimal" if isinstance(value, int | float) else "text")
    try:
        if kind == "decimal":  # an int exactly, without its text (past 4,300 digits str() raises)
            return Decimal(value) if isinstance(value, int) else Decimal(str(value))
        if kind == "boolean":
            if isinstance(value, bool) or value in ("true", "false"):
                return value is True or value == "true"
            raise ValueError("true or false")
        if kind == "date":
            return dt.date.fromisoformat(str(value))
        return str(value)
    except (InvalidOperation, ValueError) as exc:
        raise InputError("value", f"not a {kind}: {_shown(value)}") from exc


def _shown(value: Any) -> str:
    """A refused value for its error message: an integer too long for Python's text is
    described by its size, since repr() of it raises too."""
    try:
        return reprlib.repr(value)
    except ValueError:
        return f"an integer of {value.bit_length():,} bits"


# ---------------------------------------------------------------- the tools


class StrictTool(Tool):
    """An SDK tool whose arguments graphmem checks first, so that a call that does not fit
    is answered as graphmem answers bad input: a tool error whose structured content is
    the InputError (type, message, where, reason), not the SDK's validation text.

    An argument the tool does not take is refused by name (the SDK would drop it: a client
    that sends ``tenant`` would be answered from the server's scope without being told);
    then the SDK's own argument model (types, bounds) is run, its refusal made an
    InputError. The SDK checks the arguments again when it calls the tool: the check
    is done twice, 50-80 microseconds each on a loaded machine, next to a read's
    milliseconds."""

    async def run(self, arguments: dict[str, Any], context: Any, convert_result: bool = False) -> Any:
        refused = _refused(self, arguments)
        return refused if refused is not None else await super().run(arguments, context, convert_result)


def _refused(tool: Tool, arguments: dict[str, Any]) -> CallToolResult | None:
    """The tool error for arguments that do not fit ``tool`` (None: they fit)."""
    taken = [f.alias or n for n, f in tool.fn_metadata.arg_model.model_fields.items()]
    unknown = sorted(set(arguments) - set(taken))
    if unknown:
        why = "; the scope is the server's, never an argument" if {"tenant", "scope"} & set(unknown) else ""
        return _error(InputError(", ".join(unknown), f"not an argument of {tool.name} (it takes "
                                 f"{', '.join(taken)}){why}"))
    try:
        tool.fn_metadata.validate_arguments(arguments)
    except ValidationError as exc:
        return _error(_invalid(exc, tool.fn_metadata.arg_model))
    return None


class TextArguments(FuncMetadata):
    """The SDK's argument handling, except that a string given for an argument that takes
    a string stays that string.

    The SDK reads a string argument as JSON first when the argument's type is not exactly
    ``str`` (for clients that send lists as JSON text), and keeps what it parses unless
    that is a string or a number: so an optional text or the value's union given the text
    '{"retries": 3}', '["a", "b"]' or 'null' became an object, a list or None - a JSON
    document as a text fact, an outcome or a title was refused, and an entity or a search
    text "null" was read as none given (every entity's facts, a search without text).
    Arguments that take no string (lists, objects) are still read from JSON text."""

    def pre_parse_json(self, data: dict[str, Any]) -> dict[str, Any]:
        parsed = super().pre_parse_json(data)
        fields = {f.alias or n: f for n, f in self.arg_model.model_fields.items()}
        return {k: data[k] if isinstance(data[k], str) and k in fields and _takes_text(fields[k].annotation)
                else v for k, v in parsed.items()}


def _takes_text(annotation: Any) -> bool:
    """Whether an argument's type accepts a string as it is (str, or a union with str)."""
    if typing.get_origin(annotation) is Annotated:
        return _takes_text(typing.get_args(annotation)[0])
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return any(_takes_text(a) for a in typing.get_args(annotation))
    return annotation is str


def _tool(fn: Callable, title: str, annotations: ToolAnnotations) -> Tool:
    """The SDK's tool for ``fn``, publishing the output schema of its result model.

    Every tool returns a CallToolResult whose structured content is the JSON dump of that
    very model (``_result``), so it matches the published schema by construction; the
    SDK's server-side check of it (a full pydantic validation of the dump, 0.07 ms for a
    ten-hit search) is left out by giving the tool its schema without the model, as the
    SDK does for hand-built metadata. The client still checks every result against the
    schema."""
    made = StrictTool.from_function(fn, title=title, annotations=annotations.model_copy(update={"title": title}))
    sdk = made.fn_metadata
    made.fn_metadata = TextArguments(arg_model=sdk.arg_model, output_schema=sdk.output_schema,
                                     wrap_output=sdk.wrap_output)  # no output_model: see above
    return made


def register(memory: Memory, access: Access, grants: Grants) -> list[Tool]:
    """The tools the grants allow, for a server on ``memory`` whose callers ``access`` names."""
    added: list[Tool] = []

    def tool(kind: str, annotations: ToolAnnotations, title: str) -> Callable[[Callable], Callable]:
        def add(fn: Callable) -> Callable:
            if grants.allows(kind):
                added.append(_tool(fn, title, annotations))
            return fn
        return add

    def now(cutoff: str | None) -> dt.datetime | Now:
        """A tool's cutoff, by default now: the read's own time (one statement)."""
        return parse_time(cutoff, "cutoff") or NOW

    def server_now(cutoff: str | None) -> dt.datetime:
        """A cutoff by default now, for the calls that take only a datetime: the server's
        clock, asked first."""
        return parse_time(cutoff, "cutoff") or memory.server_now()

    # ------------------------------------------------------------ reads

    @tool("read", READ, "Fact as of a time")
    def as_of(entity: Id, attribute: Id, ctx: Context, period_end: Day = None,
              period_start: Day = None, cutoff: Cutoff = None, known_at: KnownAt = None,
              unit: Unit | None = None, definition: Definition | None = None,
              min_authority: MinAuthority = None) -> Annotated[CallToolResult, r.AnswerOut]:
        """What the memory says about an entity's attribute, using only what was public by
        `cutoff` as graphmem had recorded it by `known_at` (both default to now). Without a
        period: the latest period that has an answer. `unit` and `definition` (e.g. `ltm` for
        a derived trailing value) pick one key where several share the period. Status
        `active` gives the value with its sources and three times; `conflicted` lists every
        disagreeing value (do not pick one: report the conflict); `not_found` means nothing
        live. `explain` counts what each filter removed (superseded, invalidated, cutoff, ...)."""
        def work(c: Caller) -> tuple[BaseModel, str]:
            out = r.answer(memory.as_of(
                c.scope, entity=entity, attribute=attribute, period=_period(period_end, period_start),
                cutoff=now(cutoff), known_at=parse_time(known_at, "known_at"), unit=unit,
                definition=definition, require=_require(min_authority)))
            return out, r.answer_text(out)
        return _run(access, ctx, work)

    @tool("read", READ, "Facts in a valid-time range")
    def facts(ctx: Context, entity: Id | None = None, attribute: Id | None = None,
              valid_from: Day = None, valid_to: Day = None, cutoff: Cutoff = None,
              known_at: KnownAt = None, min_authority: MinAuthority = None,
              limit: Annotated[int, Field(ge=1, le=500)] = 50) -> Annotated[CallToolResult, r.AnswersOut]:
        """Every fact of an entity (all attributes), or of an attribute (all entities), or of
        both, whose period ends between `valid_from` and `valid_to`, each answered as of
        (`cutoff`, `known_at`) like `as_of`. Give `entity` or `attribute` (or both). Sorted by
        period end; at most `limit` answers."""
        def work(c: Caller) -> tuple[BaseModel, str]:
            if entity is None and attribute is None:
                raise InputError("entity", "give entity or attribute (or both)")
            found = memory.facts_as_of(c.scope, entity=entity, attribute=attribute,
                                       valid_from=valid_from, valid_to=valid_to, cutoff=now(cutoff),
                                       known_at=parse_time(known_at, "known_at"),
                                       require=_require(min_authority))
            out = r.AnswersOut(answers=[r.answer(a) for a in found[:limit]], total=len(found),
                               truncated=len(found) > limit)
            return out, r.answers_text(out)
        return _run(access, ctx, work)

    @tool("read", READ, "Screen every company at a cutoff")
    def screen(attribute: Id, ctx: Context,
               frame: Annotated[str | None, Field(max_length=12, description=(
                   "Calendar frame: CY2024 (a year), CY2024Q3 (a quarter), CY2024Q3I (the instant "
                   "ending the quarter). Give a frame or a period."))] = None,
               period_end: Day = None, period_start: Day = None, cutoff: Cutoff = None,
               known_at: KnownAt = None, entities: Ids | None = None,
               unit: Annotated[str | None, Field(max_length=256)] = None,
               min_authority: MinAuthority = None,
               sort: Literal["entity", "value", "-value"] = "entity",
               limit: Annotated[int, Field(ge=1, le=500)] = 100) -> Annotated[CallToolResult, r.ScreenOut]:
        """Every entity's value of one attribute for a calendar frame or an exact period,
        using only what was public by `cutoff` as recorded by `known_at` (no look-ahead): one
        answer per entity, like `as_of`. Entities that are conflicted or have nothing public
        are listed as such, never dropped. Without `entities`, the universe is every entity
        that had made the attribute public by the cutoff. A fiscal period is matched to the
        calendar frame it best fits (a quarter of 91 +/- 30 days, a year of 365 +/- 30)."""
        def work(c: Caller) -> tuple[BaseModel, str]:
            found = memory.screen(c.scope, attribute=attribute, frame=frame,
                                  period=_period(period_end, period_start), cutoff=server_now(cutoff),
                                  known_at=parse_time(known_at, "known_at"), entities=entities, unit=unit,
                                  require=_require(min_authority), sort=sort)
            out = r.screen(found, limit)
            return out, r.screen_text(out)
        return _run(access, ctx, work)

    @tool("read", READ, "History of a fact")
    def history(entity: Id, attribute: Id, ctx: Context, period_end: Day = None,
                period_start: Day = None,
                limit: Annotated[int, Field(ge=1, le=1000)] = 100) -> Annotated[CallToolResult, r.HistoryOut]:
        """Every version of a fact (all periods unless one is given), oldest first, with both
        time axes (available_by: public; recorded_at: stored), evidence and what happened to
        each version later (invalidated, retracted, resolved, erased)."""
        def work(c: Caller) -> tuple[BaseModel, str]:
            found = memory.history(c.scope, entity=entity, attribute=attribute,
                                   period=_period(period_end, period_start))
            out = r.HistoryOut(versions=[r.fact(v) for v in found[:limit]], total=len(found),
                               truncated=len(found) > limit)
            return out, r.history_text(out)
        return _run(access, ctx, work)

    @tool("read", READ, "Search memory")
    def search(ctx: Context, text: Annotated[str | None, Field(max_length=1000)] = None,
               types: list[Literal["fact", "experience", "task_state"]] | None = None,
               entity: Id | None = None, task_id: Id | None = None, cutoff: Cutoff = None,
               known_at: KnownAt = None, min_authority: MinAuthority = None, limit: Limit = 10,
               match: Literal["all", "any"] = "all",
               mode: Literal["text", "semantic", "hybrid"] = "text"
               ) -> Annotated[CallToolResult, r.SearchOut]:
        """Search over facts, experiences and task states, with every hard filter (scope,
        type, entity, time, status, evidence) applied before ranking and the limit.
        mode="text" (full text): identifiers (codes, tickers, accession numbers) must match
        exactly; with match="all" every word is required, "any" makes plain words optional.
        mode="semantic" or "hybrid" (when the server has an embedder): by meaning, or
        meaning and text fused, among the memories that pass the filters; a memory holding
        the query's identifiers first. Ranked by authority, then text score (or fused score),
        then recency. A fact hit is what `as_of` would answer."""
        def work(c: Caller) -> tuple[BaseModel, str]:
            out = r.search(memory.search(c.scope, text=text, types=types, entity=entity,
                                         task_id=task_id, cutoff=parse_time(cutoff, "cutoff"),
                                         known_at=parse_time(known_at, "known_at"),
                                         require=_require(min_authority), limit=limit, match=match,
                                         mode=mode))
            return out, r.search_text(out)
        return _run(access, ctx, work)

    @tool("read", READ, "Lineage of a fact version")
    def lineage(version_id: Id, ctx: Context,
                direction: Literal["upstream", "downstream"] = "upstream",
                max_depth: Annotated[int | None, Field(ge=1, le=50)] = None, known_at: KnownAt = None
                ) -> Annotated[CallToolResult, r.LineageOut]:
        """The derivation graph of a fact version as JSON nodes and edges (edges point from
        input to output): `upstream` for where it came from, `downstream` for what was built
        on it; as graphmem had recorded it by `known_at` (default now)."""
        def work(c: Caller) -> tuple[BaseModel, str]:
            graph = memory.lineage(c.scope, version_id, direction, max_depth,
                                   known_at=parse_time(known_at, "known_at"))
            out = r.lineage(graph, version_id, direction)
            edges = "\n".join(f"  {e['source']} -> {e['target']}" for e in out.edges)
            return out, f"lineage {direction} of {version_id}: {out.total_nodes} node(s)\n{edges}"
        return _run(access, ctx, work)

    @tool("read", READ, "Impact of a source or version")
    def impact(ctx: Context, source_id: Id | None = None, version_id: Id | None = None,
               max_depth: Annotated[int | None, Field(ge=1, le=50)] = None
               ) -> Annotated[CallToolResult, r.ImpactOut]:
        """What lies downstream of a source (as if it were withdrawn) or of a fact version (as
        if it were invalid): every affected fact and derivation with depth and reason
        (invalid / stale / survives), and the order to recompute them in. Changes nothing."""
        def work(c: Caller) -> tuple[BaseModel, str]:
            out = r.impact(memory.impact(c.scope, source_id=source_id, version_id=version_id,
                                         max_depth=max_depth))
            return out, r.impact_text(out)
        return _run(access, ctx, work)

    @tool("read", READ, "Trace a memory through a context")
    def trace(snapshot_id: Id, ctx: Context, memory_id: Id | None = None, entity: Id | None = None,
              attribute: Id | None = None, period_end: Day = None,
              period_start: Day = None) -> Annotated[CallToolResult, TraceResult]:
        """What happened to a memory (or every version of a fact) on its way into the context
        snapshot `snapshot_id` (from `build_context`): included, cut for the budget, not
        considered, filtered (by which filter), a candidate only, not found by the search, or
        not stored. Give `memory_id`, or `entity` and `attribute`."""
        def work(c: Caller) -> tuple[BaseModel, str]:
            out = memory.trace(c.scope, snapshot_id, memory_id, entity=entity, attribute=attribute,
                               period=_period(period_end, period_start))
            return out, "\n".join([f"trace in {snapshot_id}: {out.outcome.upper()}",
                                   *(f"  {s.memory_id}: {s.outcome} - {s.detail}" for s in out.steps)])
        return _run(access, ctx, work)

    @tool("read", READ, "Candidates awaiting review")
    def candidates(ctx: Context, status: Literal["pending", "approved", "rejected", "all"] = "pending"
                   ) -> Annotated[CallToolResult, r.CandidatesOut]:
        """Writes that failed their gate (no source, unrecorded entity, no observed outcome,
        ...), kept for review with their reasons; never live until approved."""
        def work(c: Caller) -> tuple[BaseModel, str]:
            found = memory.candidates(c.scope, status=None if status == "all" else status)
            out = r.CandidatesOut(candidates=found[:MAX_IDS], total=len(found), truncated=len(found) > MAX_IDS)
            lines = [f"{x.id} {x.type} {x.status}: {'; '.join(x.reasons)}" for x in out.candidates]
            if out.truncated:
                lines.append(f"(showing {len(out.candidates)} of {out.total})")
            return out, "\n".join(lines) or f"no {status} candidates"
        return _run(access, ctx, work)

    # ------------------------------------------------------------ context

    @tool("write", ToolAnnotations(read_only_hint=False, destructive_hint=False,
                                   idempotent_hint=False, open_world_hint=False), "Build a context")
    def build_context(task_id: Id, ctx: Context,
                      token_budget: Annotated[int, Field(ge=1, le=MAX_BUDGET)] = 2000,
                      text: Annotated[str | None, Field(max_length=1000)] = None,
                      ids: Ids | None = None,
                      types: list[Literal["fact", "experience", "task_state"]] | None = None,
                      entity: Id | None = None, cutoff: Cutoff = None, known_at: KnownAt = None,
                      limit: Annotated[int, Field(ge=1, le=MAX_IDS)] = 20,
                      match: Literal["all", "any"] = "all") -> Annotated[CallToolResult, r.ContextOut]:
        """Render memories for a task within a token budget: those a search finds (`text`,
        `types`, `entity`, `cutoff`, `known_at`, `limit`), or the memories named by `ids`.
        One line per memory with its claim, status (a conflict says CONFLICTED), authority,
        sources and three times; conflicts and stronger sources come first when the budget
        is short. Records a context snapshot (its id is returned, for `trace`); text that
        repeats this context is refused later as new evidence (the echo guard)."""
        def work(c: Caller) -> tuple[BaseModel, str]:
            if (ids is None) == (text is None and entity is None and types is None):
                raise InputError("ids", "give ids, or a search (text, types, entity), not both")
            notes: dict[str, str] = {}
            times: dict[str, dt.datetime] = {}  # a search's hits say theirs
            if ids is None:
                chosen: Any = memory.search(c.scope, text=text, types=types, entity=entity,
                                            cutoff=parse_time(cutoff, "cutoff"),
                                            known_at=parse_time(known_at, "known_at"), limit=limit,
                                            match=match)
            else:
                times = {"cutoff": server_now(cutoff),
                         "known_at": parse_time(known_at, "known_at") or memory.recorded_through(c.scope)}
                chosen = _hits_by_id(memory, c, ids, times["cutoff"], times["known_at"], notes)
            out = r.context(memory.build_context(c.scope, task_id=task_id, memories=chosen,
                                                 token_budget=token_budget, **times), notes)
            skipped = "".join(f"\n# not rendered: {m} ({why})" for m, why in notes.items())
            return out, f"{out.rendered}\n# snapshot {out.snapshot_id}{skipped}"
        return _run(access, ctx, work)

    # ------------------------------------------------------------ writes through the gates

    @tool("write", ADDITIVE, "Record an entity")
    def record_entity(id: Id, ctx: Context, name: Annotated[str | None, Field(max_length=1024)] = None,
                      kind: Annotated[str | None, Field(max_length=256)] = None,
                      aliases: Annotated[list[Id], Field(max_length=50)] | None = None
                      ) -> Annotated[CallToolResult, r.EntityOut]:
        """Record something facts are about (a company, a person, a service) so facts about it
        can go live. An entity already recorded is left as it is (returned unchanged)."""
        def work(c: Caller) -> tuple[BaseModel, str]:
            # an erased entity: put_entity refuses it, saying why
            recorded = memory.put_entity(c.scope, Entity(id=id, name=name, kind=kind, aliases=tuple(aliases or ())),
                                         replace=False)
            out = r.EntityOut(recorded=recorded, entity=memory.entity(c.scope, id))
            return out, f"entity {id} " + ("recorded" if recorded else "already recorded (unchanged)")
        return _run(access, ctx, work)

    @tool("write", ADDITIVE, "Record a source")
    def record_source(id: Id, kind: Id, authority: Authority, available_by: Annotated[str, Field(
                          max_length=40, description="When it became public (ISO; a date means "
                          "the end of that day UTC).")], ctx: Context,
                      publisher: Id | None = None, uri: Annotated[str | None, Field(max_length=4096)] = None,
                      title: Annotated[str | None, Field(max_length=MAX_TEXT)] = None,
                      meta: Annotated[dict[str, Annotated[str, Field(max_length=MAX_TEXT)]],
                                      Field(max_length=50)] | None = None
                      ) -> Annotated[CallToolResult, r.SourceOut]:
        """Record a document or event that evidences facts (a filing, a tool run, a message),
        with when it became public and who stands behind it. Sources are immutable:
        re-recording the identical source changes nothing; different fields are refused.
        Text that repeats a context graphmem injected is refused (echo guard)."""
        def work(c: Caller) -> tuple[BaseModel, str]:
            new = memory.record_source(c.scope, Source(
                id=id, kind=kind, authority=authority, available_by=parse_time(available_by, "available_by"),
                publisher=publisher, uri=uri, title=title, meta=meta or {}))
            out = r.SourceOut(recorded=new, source=memory.source(c.scope, id))
            return out, f"source {id} " + ("recorded" if new else "already recorded (identical)")
        return _run(access, ctx, work)

    @tool("write", ADDITIVE, "Remember a fact")
    def remember_fact(entity: Id, attribute: Id,
                      value: Annotated[str | int | float | bool, Field(description=(
                          "The value. JSON numbers are stored as exact decimals; give a string "
                          "with value_type for a decimal that must keep all its digits."))],
                      period_end: dt.date, ctx: Context, period_start: Day = None,
                      value_type: Literal["decimal", "text", "boolean", "date"] | None = None,
                      unit: Unit = "", definition: Definition = "",
                      sources: Ids | None = None, available_by: When = None
                      ) -> Annotated[CallToolResult, r.RememberedOut]:
        """Assert a fact: `entity`'s `attribute` has `value` for the period, evidenced by
        recorded `sources`. Live if its sources and entity are recorded; otherwise kept as a
        candidate for review with the reasons (never silently dropped). Re-sending the same
        assertion changes nothing; a different value is a new version (history is kept)."""
        def work(c: Caller) -> tuple[BaseModel, str]:
            out = r.remembered(memory.remember_fact(c.scope, FactIn(
                entity=entity, attribute=attribute, value=_value(value, value_type),
                period=_period(period_end, period_start), unit=unit, definition=definition,
                sources=tuple(sources or ()), available_by=parse_time(available_by, "available_by"))))
            return out, r.remembered_text(out)
        return _run(access, ctx, work)

    @tool("write", ADDITIVE, "Remember an experience")
    def remember_experience(trigger: Text, ctx: Context, outcome: Text | None = None,
                            procedure: Annotated[list[Text], Field(max_length=50)] | None = None,
                            preconditions: Annotated[list[Text], Field(max_length=50)] | None = None,
                            evidence: Ids | None = None, entities: Ids | None = None,
                            event_id: Id | None = None) -> Annotated[CallToolResult, r.RememberedOut]:
        """Store what was done and what was OBSERVED: live only with an observed `outcome` and
        at least one recorded `evidence` source (e.g. the tool run that showed it); otherwise a
        candidate. An outcome that repeats memory graphmem injected is refused (echo guard).
        `event_id` makes a re-sent write idempotent."""
        def work(c: Caller) -> tuple[BaseModel, str]:
            out = r.remembered(memory.remember_experience(c.scope, ExperienceIn(
                trigger=trigger, outcome=outcome, procedure=tuple(procedure or ()),
                preconditions=tuple(preconditions or ()), evidence=tuple(evidence or ()),
                entities=tuple(entities or ()), event_id=event_id)))
            return out, r.remembered_text(out)
        return _run(access, ctx, work)

    @tool("write", ADDITIVE, "Save task state")
    def save_task_state(task_id: Id, goal: Text, ctx: Context,
                        checkpoint: Annotated[str, Field(max_length=MAX_TEXT)] = "",
                        open_items: Annotated[list[Text], Field(max_length=100)] | None = None,
                        artifact_refs: Ids | None = None, entities: Ids | None = None,
                        expected_revision: Annotated[int | None, Field(ge=0)] = None,
                        event_id: Id | None = None) -> Annotated[CallToolResult, r.RememberedOut]:
        """Save where a task stands (goal, checkpoint, open items, artifacts) as a new revision;
        the latest revision is the task's state. Re-sending the current state changes nothing.
        With `expected_revision`, refused if another writer moved the task on."""
        def work(c: Caller) -> tuple[BaseModel, str]:
            out = r.remembered(memory.save_task_state(c.scope, TaskStateIn(
                task_id=task_id, goal=goal, checkpoint=checkpoint, open_items=tuple(open_items or ()),
                artifact_refs=tuple(artifact_refs or ()), entities=tuple(entities or ()),
                event_id=event_id), expected_revision=expected_revision))
            return out, r.remembered_text(out)
        return _run(access, ctx, work)

    # ------------------------------------------------------------ review (--allow-review)

    @tool("review", ADDITIVE, "Approve a candidate")
    def approve(candidate_id: Id, ctx: Context) -> Annotated[CallToolResult, r.RememberedOut]:
        """Make a pending candidate live, vouched for by this server's reviewer identity (its
        missing evidence becomes the reviewer's user_correction source). Approving twice is
        one approval."""
        def work(c: Caller) -> tuple[BaseModel, str]:
            out = r.remembered(memory.approve(c.scope, candidate_id, by=c.actor))
            return out, r.remembered_text(out)
        return _run(access, ctx, work)

    @tool("review", ADDITIVE, "Reject a candidate")
    def reject(candidate_id: Id, reason: Text, ctx: Context) -> Annotated[CallToolResult, r.CandidatesOut]:
        """Record that a candidate must never become live, and why. Rejecting twice is one
        rejection."""
        def work(c: Caller) -> tuple[BaseModel, str]:
            done = memory.reject(c.scope, candidate_id, reason, by=c.actor)
            out = r.CandidatesOut(candidates=[done], total=1, truncated=False)
            return out, f"candidate {candidate_id} {done.status}"
        return _run(access, ctx, work)

    # ------------------------------------------------------------ destructive (--allow-admin)

    @tool("admin", DESTRUCTIVE, "Invalidate a fact version")
    def invalidate(version_id: Id, reason: Text, ctx: Context) -> Annotated[CallToolResult, r.Fact]:
        """Mark a fact version as wrong from now on: it disappears from every read at every
        cutoff (reads with an earlier known_at still show it), and what was derived from it
        is invalidated too."""
        def work(c: Caller) -> tuple[BaseModel, str]:
            out = r.fact(memory.invalidate(c.scope, version_id, reason, by=c.actor))
            return out, f"invalidated {version_id}: " + r.fact_line(out)
        return _run(access, ctx, work)

    @tool("admin", DESTRUCTIVE, "Retract a source")
    def retract_source(source_id: Id, reason: Text, ctx: Context) -> Annotated[CallToolResult, r.ImpactOut]:
        """Withdraw a source: every fact whose only evidence it is, and everything derived
        from those, becomes invalid (facts with other live evidence survive). Returns the
        impact it applied. Running it twice changes nothing."""
        def work(c: Caller) -> tuple[BaseModel, str]:
            out = r.impact(memory.retract_source(c.scope, source_id, reason=reason, by=c.actor))
            return out, r.impact_text(out)
        return _run(access, ctx, work)

    @tool("admin", DESTRUCTIVE.model_copy(update={"idempotent_hint": False}), "Erase")
    def erase(reason: Text, ctx: Context, entity: Id | None = None,
              source_id: Id | None = None) -> Annotated[CallToolResult, r.ErasedOut]:
        """Forget an entity or a source: its payload is removed from every version, derived
        fact, experience, task state and context rendering, history included; tombstones keep
        ids and times. Cannot be undone; an erased entity takes no new facts."""
        def work(c: Caller) -> tuple[BaseModel, str]:
            n = memory.erase(c.scope, entity=entity, source_id=source_id, reason=reason, by=c.actor)
            out = r.ErasedOut(target=f"entity:{entity}" if entity else f"source:{source_id}",
                              erased_versions=n)
            return out, f"erased {out.target}: {n} fact version(s)"
        return _run(access, ctx, work)

    return added


def _hits_by_id(memory: Memory, c: Caller, ids: list[str], cutoff: dt.datetime,
                known_at: dt.datetime, notes: dict[str, str]) -> list[SearchHit]:
    """Search hits for memories named by id, as a search at (cutoff, known_at) would give
    them: a fact version stands for its key's answer then (a conflict stays a conflict), an
    experience or task state is judged by the search's own filters (Memory.memories_at);
    what is not live then is left out, with the reason in ``notes``. One (cutoff, known_at)
    for all of them: a context is read at one time."""
    hits: list[SearchHit] = []

    def add(**hit: Any) -> None:
        hits.append(SearchHit(rank=Rank(position=len(hits) + 1, authority=hit.pop("authority"),
                                        text_score=0.0, text_norm=0.0, recency_days=0.0,
                                        why="chosen by id"), **hit))

    versions = {v.version_id: v for v in memory.versions(c.scope, ids)}
    others, removed = memory.memories_at(c.scope, [i for i in ids if i not in versions], cutoff=cutoff,
                                         known_at=known_at)
    for mid in dict.fromkeys(ids):
        if mid in versions:
            v = versions[mid]
            a = memory.as_of(c.scope, entity=v.entity, attribute=v.attribute, period=v.period,
                             unit=v.unit, definition=v.definition, cutoff=cutoff, known_at=known_at)
            shown = a.shown
            if not shown:
                notes[mid] = f"its fact is not live at this cutoff and known_at ({a.explain})"
                continue
            if mid not in {s.version_id for s in shown}:
                notes[mid] = f"replaced by {', '.join(s.version_id for s in shown)} at this cutoff"
            if any(h.memory_id == shown[0].version_id for h in hits):
                continue
            add(type="fact", memory_id=shown[0].version_id, memory_ids=tuple(s.version_id for s in shown),
                status=a.status, answer=a, authority=shown[0].authority)
        elif mid in removed:
            notes[mid] = f"not live at this cutoff and known_at (removed by filter: {removed[mid]})"
        elif mid in others:
            m = others[mid]
            kind = "experience" if isinstance(m, Experience) else "task_state"
            add(type=kind, memory_id=mid, memory_ids=(mid,), status="active",
                authority=getattr(m, "authority", None), **{kind: m})
        else:
            notes[mid] = "no memory with this id in this scope"
    return hits
