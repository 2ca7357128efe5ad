"""The public value types: what callers pass in and what reads give back.

All models are pydantic v2 and immutable. Times are timezone-aware (a naive datetime
is refused, naming the field) and normalised to UTC. Fact values are typed: a
``Decimal`` (kept exactly, compared numerically), text, a boolean or a ``date``.

The input models (``Scope``, ``Period``, ``Entity``, ``Source``, ``FactIn``, ``Require``,
``ExperienceIn``, ``TaskStateIn``) hold every field to its bound (graphmem/limits.py)
and raise :class:`~graphmem.errors.InputError` naming the model and field, e.g.
``FactIn.attribute: 9,000 bytes in UTF-8; at most 2,048`` - when they are built,
validated, or copied with ``model_copy(update=...)`` - so nothing out of bounds reaches
a query. The models graphmem returns are not re-checked: they hold what is stored.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from decimal import Decimal
from enum import StrEnum
from functools import cached_property
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from . import limits, values
from .errors import InputError, ScopeError


def _aware_utc(value: dt.datetime) -> dt.datetime:
    if value.tzinfo is None or value.tzinfo.utcoffset(value) is None:
        raise ValueError("naive datetime refused: give a timezone (for example UTC)")
    try:
        return value.astimezone(dt.UTC)
    except OverflowError:  # 0001-01-01T00:30+01:00 is before the year 1 in UTC
        raise ValueError(f"{value.isoformat()} is outside the years 1 to 9999 in UTC") from None


AwareDatetime = Annotated[dt.datetime, AfterValidator(_aware_utc)]
FactValue = Decimal | bool | dt.date | str


def _within(limit: int) -> AfterValidator:
    """A string of at most ``limit`` UTF-8 bytes (graphmem/limits.py)."""

    quick = limit // 4  # no character takes more than four bytes

    def check(value: str) -> str:
        if len(value) <= quick:  # nearly every value: no call, no encoding
            return value
        problem = limits.utf8_problem(value, limit)
        if problem:
            raise ValueError(problem)
        return value

    return AfterValidator(check)


# Identifiers: indexed, or part of a fact key (limits.IDENTIFIER_BYTES); a Key may be ""
Identifier = Annotated[str, Field(min_length=1), _within(limits.IDENTIFIER_BYTES)]
Key = Annotated[str, _within(limits.IDENTIFIER_BYTES)]
Text = Annotated[str, _within(limits.TEXT_BYTES)]  # free text (limits.TEXT_BYTES)
Identifiers = Annotated[tuple[Identifier, ...], Field(max_length=limits.LIST_ITEMS)]
Texts = Annotated[tuple[Text, ...], Field(max_length=limits.LIST_ITEMS)]


_MODEL_NAME = re.compile(r"[A-Za-z_]\w*")


def _place(part: int | str) -> str:
    """One step of a field's location; a long dict key (itself the bad input) shortened."""
    if isinstance(part, int):
        return f"[{part}]"
    return f".{part}" if len(part) <= 64 else f".{part[:40]}...({len(part):,} characters)"


def input_error(model: str, exc: ValidationError) -> InputError:
    """A pydantic ValidationError as graphmem's InputError, naming the model and field
    of the first problem (``FactIn.period.end``, ``ExperienceIn.procedure[3]``).

    A nested input model raises its own InputError (pydantic runs its ``__init__``),
    which arrives here as the error's cause: its place is appended to this one's."""
    errors = exc.errors(include_url=False)
    first = errors[0]
    where = model + "".join(_place(p) for p in first["loc"])
    reason = first["msg"].removeprefix("Value error, ")
    inner = (first.get("ctx") or {}).get("error")
    if isinstance(inner, InputError):
        name = _MODEL_NAME.match(inner.where)
        where += inner.where[name.end():] if name else ""
        reason = inner.reason
    if len(errors) > 1:
        reason += f" (and {len(errors) - 1} more problem{'s' if len(errors) > 2 else ''})"
    return InputError(where, reason)


@contextmanager
def _input_errors(model: str) -> Iterator[None]:
    try:
        yield
    except ValidationError as exc:
        raise input_error(model, exc) from exc


class _RaisesInputErrorMeta(type(BaseModel)):  # type: ignore[misc]
    """Building an input model, ``Model(...)``, raises InputError on bad input.

    In the metaclass rather than an ``__init__`` override: pydantic runs a model that
    defines its own ``__init__`` through Python, which tripled the cost of a FactIn."""

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        try:  # not _input_errors: a generator per model built costs as much as a field
            return super().__call__(*args, **kwargs)
        except ValidationError as exc:
            raise input_error(cls.__name__, exc) from exc


class _RaisesInputError:
    """For input models: validating one raises InputError (see :func:`input_error`), and
    ``model_copy(update=...)`` validates the copy as a new model would be."""

    @classmethod
    def model_validate(cls, obj: Any, **options: Any) -> Any:
        with _input_errors(cls.__name__):
            return super().model_validate(obj, **options)  # type: ignore[misc]

    @classmethod
    def model_validate_json(cls, data: Any, **options: Any) -> Any:
        with _input_errors(cls.__name__):
            return super().model_validate_json(data, **options)  # type: ignore[misc]

    def model_copy(self, *, update: dict[str, Any] | None = None, deep: bool = False) -> Any:
        if not update:
            return super().model_copy(deep=deep)  # type: ignore[misc]
        fields = {name: getattr(self, name) for name in type(self).model_fields}
        extra = getattr(self, "__pydantic_extra__", None) or {}
        return self.model_validate({**fields, **extra, **update})


class Authority(StrEnum):
    """Who stands behind a claim, strongest first (DESIGN.md section 3)."""

    USER_CORRECTION = "user_correction"
    PRIMARY = "primary"
    DERIVED = "derived"
    INFERENCE = "inference"

    @property
    def rank(self) -> int:
        return {"user_correction": 4, "primary": 3, "derived": 2, "inference": 1}[self.value]


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class _In(_RaisesInputError, _Model, metaclass=_RaisesInputErrorMeta):
    """An input model: bounded fields, InputError on bad input."""


class Scope(_RaisesInputError, BaseModel, metaclass=_RaisesInputErrorMeta):
    """Where a call may look and write: a tenant plus any keys the deployment requires.

    ``Scope(tenant="acme", project="q3")``. Every read and write is confined to exactly
    this scope; a missing tenant or required key raises before any query runs. Bounds:
    the tenant ``limits.TENANT_BYTES``, at most ``limits.SCOPE_KEYS`` keys, the whole
    scope (``id``) ``limits.SCOPE_BYTES``.
    """

    model_config = ConfigDict(frozen=True, extra="allow")
    tenant: Annotated[str, _within(limits.TENANT_BYTES)]

    @model_validator(mode="after")
    def _check(self) -> Scope:
        if not self.tenant or not self.tenant.strip():
            raise ValueError("tenant must be a non-empty string")
        keys = self.keys()
        if len(keys) > limits.SCOPE_KEYS:
            raise ValueError(f"{len(keys)} scope keys; at most {limits.SCOPE_KEYS}")
        for key, value in keys.items():
            if not key:  # neither the command line nor a LangGraph store can name it back
                raise ValueError("a scope key needs a name (a non-empty string)")
            if not isinstance(value, str) or not value:
                raise ValueError(f"scope key {key!r} must be a non-empty string")
        problem = limits.utf8_problem(self.id, limits.SCOPE_BYTES)
        if problem:
            raise ValueError(f"the scope (tenant, key names and values) is {problem}")
        return self

    def keys(self) -> dict[str, str]:
        """The scope keys beside the tenant."""
        return dict(self.__pydantic_extra__ or {})

    @cached_property  # used in every id and every statement's parameters
    def id(self) -> str:
        """A canonical text for the whole scope: equal scopes, and only they, have equal ids
        (JSON, so no tenant or key value can imitate a separator)."""
        return json.dumps([self.tenant, sorted(self.keys().items())], ensure_ascii=False,
                          separators=(",", ":"))

    def require(self, keys: tuple[str, ...]) -> None:
        """Fail closed: raise ScopeError unless every required key is present."""
        missing = [k for k in keys if k not in self.keys()]
        if missing:
            raise ScopeError("scope", f"missing required key(s) {', '.join(missing)} in {self.id}")


def check_scope(scope: Any, required: tuple[str, ...]) -> Scope:
    """Validate a call's scope argument before any query: a Scope with all required keys."""
    if not isinstance(scope, Scope):
        raise ScopeError("scope", f"a graphmem.Scope is required, got {type(scope).__name__}")
    scope.require(required)
    return scope


class Period(_In):
    """Valid time of a fact: an instant (``end`` only) or a duration (inclusive dates)."""

    start: dt.date | None = None
    end: dt.date

    @model_validator(mode="after")
    def _order(self) -> Period:
        if self.start is not None and self.start > self.end:
            raise ValueError(f"period start {self.start} is after its end {self.end}")
        return self

    @property
    def text(self) -> str:
        return f"{self.start}..{self.end}" if self.start else str(self.end)

    @classmethod
    def parse(cls, text: str, name: str = "period") -> Period:
        """The inverse of ``text``: ``2015-12-31`` (an instant) or ``2025-01-01..2025-03-31``
        (a duration), as a command line or a URL gives it; InputError naming ``name``."""
        start, sep, end = text.partition("..")
        try:
            if sep:
                return cls(start=dt.date.fromisoformat(start), end=dt.date.fromisoformat(end))
            return cls(end=dt.date.fromisoformat(text))
        except ValueError as exc:  # Python's reason quotes the text: shortened with it
            why = str(exc) if len(text) <= 64 else f"got {limits.shown(text)}"
            raise InputError(name, f"expected DATE or DATE..DATE: {why}") from exc

    @property
    def days(self) -> int | None:
        return None if self.start is None else (self.end - self.start).days + 1


class Entity(_In):
    """Something facts are about: a company, a person, a service."""

    id: Identifier
    name: Text | None = None
    kind: Identifier | None = None
    aliases: Identifiers = ()


class Source(_In):
    """A document or event that evidences facts, with the time it became public."""

    id: Identifier
    kind: Identifier
    authority: Authority
    available_by: AwareDatetime
    publisher: Identifier | None = None
    uri: Text | None = None
    title: Text | None = None
    meta: dict[Identifier, Text] = Field(default_factory=dict)

    @field_validator("meta")
    @classmethod
    def _meta_size(cls, meta: dict[str, str]) -> dict[str, str]:
        problem = limits.utf8_problem(json.dumps(meta, ensure_ascii=False), limits.META_BYTES)
        if problem:
            raise ValueError(f"as JSON, {problem}")
        return meta

    @property
    def publisher_id(self) -> str:
        """Who stands behind it; by default a source is its own publisher."""
        return self.publisher or f"source:{self.id}"


class FactIn(_In):
    """One assertion: ``entity``'s ``attribute`` has ``value`` for ``period``, per ``sources``.

    ``available_by`` defaults to the latest ``available_by`` of its sources. The value is
    checked by :func:`graphmem.values.typed` (types and bounds).
    """

    entity: Identifier
    attribute: Identifier
    value: FactValue
    period: Period
    sources: Identifiers = ()
    unit: Key = ""
    definition: Key = ""
    available_by: AwareDatetime | None = None

    @field_validator("value", mode="before")
    @classmethod
    def _typed(cls, value: Any) -> Any:
        return values.typed(value)


FactRow = tuple[str, str, Period, FactValue]
"""A fact of one entity from one source (a filing), as ``Build.record_rows`` takes it:
(attribute, unit, period, value), the FactIn's fields that differ from row to row."""


class Require(_In):
    """Evidence a read insists on: a minimum authority and/or source kinds."""

    min_authority: Authority | None = None
    kinds: Identifiers | None = None


def check_require(require: Any) -> Require | None:
    """A read's ``require`` argument: None or a Require that admits some evidence. A
    Require of no kinds (``kinds=()``) admits none, so every read under it would be
    not_found - never what was meant (kinds left out accept any)."""
    if require is None:
        return None
    if not isinstance(require, Require):
        raise InputError("require", f"a graphmem.Require is required, got {type(require).__name__}")
    if require.kinds is not None and not require.kinds:
        raise InputError("require", "kinds=() admits no evidence: name at least one source kind, "
                                    "or leave kinds out to accept any")
    return require


class Evidence(_Model):
    """One source standing behind a version, and when that became known and public."""

    source_id: str
    kind: str
    authority: Authority
    publisher: str
    uri: str | None = None
    title: str | None = None
    available_by: dt.datetime
    recorded_at: dt.datetime
    retracted: bool = False


class Lifecycle(_Model):
    """A record of something that happened to a version after it was written."""

    kind: Literal["invalidated", "retracted", "resolved", "erased"]
    recorded_at: dt.datetime
    reason: str | None = None
    by: str | None = None
    ref: str | None = None


class FactVersion(_Model):
    """One immutable version of a fact key, with its three times and its evidence."""

    version_id: str
    entity: str
    attribute: str
    unit: str
    definition: str
    period: Period
    value: FactValue | None
    event_time: dt.date
    available_by: dt.datetime
    recorded_at: dt.datetime
    revision: int
    authority: Authority | None = None
    sources: tuple[Evidence, ...] = ()
    lifecycle: tuple[Lifecycle, ...] = ()
    erased: bool = False
    derivation: dict[str, Any] | None = None


class Explain(_Model):
    """How many versions each hard filter removed, in the order they ran.

    Scope is applied first, at the index lookup, and is not counted: counting the
    versions another scope holds would tell this caller that they exist.
    """

    versions: int = 0
    known_at: int = 0
    erased: int = 0
    cutoff: int = 0
    invalidated: int = 0
    retracted: int = 0
    evidence: int = 0
    outranked: int = 0
    superseded: int = 0

    @property
    def status(self) -> int:
        """Versions removed by their status at (cutoff, known_at)."""
        return self.invalidated + self.retracted + self.outranked + self.superseded

    def __add__(self, other: Explain) -> Explain:
        fields = type(self).model_fields
        return Explain(**{f: getattr(self, f) + getattr(other, f) for f in fields})


class Answer(_Model):
    """The result of an as-of read: the version chosen, or every candidate of a conflict,
    at (``cutoff``, ``known_at``) under the evidence requirement ``require``.

    ``revision`` is the key's revision when the read ran, whatever its ``known_at`` (0:
    no such key yet): what ``assert_fact``'s ``expected_revision`` compares with. Every
    write, evidence, invalidation, retraction, resolution and erasure moves it, while a
    version's own ``revision`` is the key's when that version was made. None: not the
    answer of one key (a read without a period that found several, none live; a
    screen's or a panel's entity without a key)."""

    status: Literal["active", "conflicted", "not_found"]
    entity: str
    attribute: str
    cutoff: dt.datetime
    known_at: dt.datetime
    require: Require | None = None
    version: FactVersion | None = None
    candidates: tuple[FactVersion, ...] = ()
    explain: Explain = Explain()
    revision: int | None = None

    @property
    def value(self) -> FactValue | None:
        return self.version.value if self.version else None

    @property
    def shown(self) -> list[FactVersion]:
        """What the answer shows: its version, or every candidate of a conflict (none
        when not found)."""
        return [self.version] if self.version else list(self.candidates)


def filed(shown: Sequence[FactVersion]) -> tuple[dt.datetime | None, list[str]]:
    """Where what an answer shows (its version, or every candidate) came from: the latest
    availability among them and their sources' ids, each once, first seen first. A panel
    asks this for every cell, so a lone version takes no generators."""
    if len(shown) == 1:
        ids = [e.source_id for e in shown[0].sources]
        return shown[0].available_by, ids if len(ids) < 2 else list(dict.fromkeys(ids))
    return (max((x.available_by for x in shown), default=None),
            list(dict.fromkeys(e.source_id for x in shown for e in x.sources)))


class _Tabular:
    """``to_arrow``, ``to_pandas`` and ``to_polars`` for a result (graphmem/research/frames.py
    has the columns; the optional extra ``dataframes``)."""

    def to_arrow(self, *, decimals: str = "decimal") -> Any:
        from .research import frames

        return frames.to_arrow(self, decimals=decimals)

    def to_pandas(self, *, decimals: str = "decimal") -> Any:
        from .research import frames

        return frames.to_pandas(self, decimals=decimals)

    def to_polars(self, *, decimals: str = "decimal") -> Any:
        from .research import frames

        return frames.to_polars(self, decimals=decimals)


class Answers(_Tabular, list):  # type: ignore[type-arg]
    """A list of Answers (``facts_as_of``) that converts to a DataFrame."""


class Versions(_Tabular, list):  # type: ignore[type-arg]
    """A list of FactVersions (``history``) that converts to a DataFrame."""


class Screen(_Tabular, _Model):
    """A point-in-time screen: one Answer per entity of its universe, in ``sort`` order
    (graphmem/screen.py has the frame rule, the choice of each entity's key and the
    universe). ``universe`` says how its entities were found: ``entities`` (as given) or
    ``attribute`` (every entity that had made the attribute public by the cutoff);
    ``unknown`` lists entities given that the scope does not hold (their rows are
    ``not_found``). For a screen of a derived metric (``graphmem.loaders.metrics.screen_ltm``)
    ``inputs`` lists, by entity, the versions each active value was derived from; for a
    screen of a line item (graphmem/research/lineitems.py) ``choices`` says, by entity,
    which concept was chosen and which were skipped, and why."""

    attribute: str
    definition: str
    unit: str | None
    frame: str | None
    period: Period | None
    cutoff: dt.datetime
    known_at: dt.datetime
    universe: Literal["entities", "attribute"]
    sort: str
    answers: tuple[Answer, ...]
    unknown: tuple[str, ...] = ()
    inputs: dict[str, tuple[FactVersion, ...]] = Field(default_factory=dict)
    choices: dict[str, dict[str, Any]] = Field(default_factory=dict)

    def counts(self) -> dict[str, int]:
        """How many entities are active, conflicted and not_found."""
        out = {"active": 0, "conflicted": 0, "not_found": 0}
        for answer in self.answers:
            out[answer.status] += 1
        return out


class WriteReport(_Model):
    """What a batch write did, counted by outcome; ``version_ids`` follow the input rows."""

    rows: int = 0
    created: int = 0
    evidence_added: int = 0
    unchanged: int = 0
    sources_recorded: int = 0
    chunks: int = 0
    version_ids: tuple[str, ...] = ()

    def merged(self, other: WriteReport) -> WriteReport:
        """The totals of two consecutive writes."""
        return WriteReport(
            rows=self.rows + other.rows, created=self.created + other.created,
            evidence_added=self.evidence_added + other.evidence_added,
            unchanged=self.unchanged + other.unchanged,
            sources_recorded=self.sources_recorded + other.sources_recorded,
            chunks=self.chunks + other.chunks, version_ids=self.version_ids + other.version_ids)


class SourceRecord(Source):
    """A source as recorded: its fields plus when graphmem stored it, and its retraction."""

    recorded_at: dt.datetime
    retracted_at: dt.datetime | None = None
    erased: bool = False


def authority_of(rank: int) -> Authority:
    """The Authority with this numeric rank (4 = user_correction ... 1 = inference)."""
    authority = _BY_RANK.get(rank)
    if authority is None:
        raise InputError("authority", f"no authority has rank {rank}")
    return authority


_BY_RANK = {a.rank: a for a in Authority}  # a read decodes one per version


# ---------------------------------------------------------------- agent memory (governance)
# Memory types beside facts, the candidate queue, search results, context snapshots and
# traces (DESIGN.md sections 5 and 7). The logic lives in governance.py, search.py and
# context.py; these are the values callers pass in and get back.

MemoryType = Literal["fact", "experience", "task_state"]
MEMORY_TYPES: tuple[MemoryType, ...] = ("fact", "experience", "task_state")


class ExperienceIn(_In):
    """A procedure and what was observed when it ran: reusable only once validated.

    Write gate: an observed ``outcome`` and at least one validating ``evidence`` source
    (ids of recorded sources, e.g. the tool runs that showed it worked). ``event_id``
    makes a re-sent write idempotent; without it the content is the idempotency key.
    """

    trigger: Annotated[Text, Field(min_length=1)]
    preconditions: Texts = ()
    procedure: Texts = ()
    outcome: Text | None = None
    evidence: Identifiers = ()
    entities: Identifiers = ()
    event_id: Identifier | None = None


class TaskStateIn(_In):
    """Where a task stands: goal, checkpoint, open items, artifact references.

    Write gate: a ``task_id``. A task state lives with its task (each save is a new
    revision; the latest is active) and never becomes a long-term fact by itself.
    ``available_by`` defaults to the time it is recorded.
    """

    task_id: Key | None = None
    goal: Annotated[Text, Field(min_length=1)]
    checkpoint: Text = ""
    open_items: Texts = ()
    artifact_refs: Identifiers = ()
    entities: Identifiers = ()
    event_id: Identifier | None = None
    available_by: AwareDatetime | None = None


class Experience(_Model):
    """A stored experience with its validating evidence (as of the read that returned it)."""

    memory_id: str
    trigger: str | None
    preconditions: tuple[str, ...] = ()
    procedure: tuple[str, ...] = ()
    outcome: str | None
    entities: tuple[str, ...] = ()
    available_by: dt.datetime
    recorded_at: dt.datetime
    authority: Authority | None = None
    sources: tuple[Evidence, ...] = ()
    erased: bool = False


class TaskState(_Model):
    """One revision of a task's state."""

    memory_id: str
    task_id: str
    goal: str | None
    checkpoint: str | None
    open_items: tuple[str, ...] = ()
    artifact_refs: tuple[str, ...] = ()
    entities: tuple[str, ...] = ()
    available_by: dt.datetime
    recorded_at: dt.datetime
    revision: int
    erased: bool = False


class Remembered(_Model):
    """The outcome of a gated write: a live memory, or a candidate with the gate's reasons."""

    type: MemoryType
    status: Literal["live", "candidate"]
    id: str
    reasons: tuple[str, ...] = ()
    version: FactVersion | None = None
    experience: Experience | None = None
    task_state: TaskState | None = None


class Candidate(_Model):
    """A write that failed its gate, kept for review; its status comes from its records."""

    id: str
    type: MemoryType
    payload: dict[str, Any] | None
    reasons: tuple[str, ...]
    status: Literal["pending", "approved", "rejected"]
    recorded_at: dt.datetime
    decided_at: dt.datetime | None = None
    decided_by: str | None = None
    decision_reason: str | None = None
    memory_id: str | None = None
    erased: bool = False


class Rank(_Model):
    """Why a search hit sits where it does: authority tier, then text score, then recency."""

    position: int
    authority: Authority | None
    text_score: float
    text_norm: float
    recency_days: float
    why: str
    # semantic and hybrid search (graphmem/retrieval): the cosine similarity to the query,
    # in [0, 1], the fused score the rank used, and how many of the query's identifiers
    # the memory holds (ranked before any score)
    semantic_score: float | None = None
    fused_score: float | None = None
    identifiers: int = 0


class SearchHit(_Model):
    """One memory a search returned, with the provenance an as-of read would give.

    A fact hit carries the :class:`Answer` of its key at the search's (cutoff, known_at);
    a conflicted key is one hit whose ``memory_ids`` are all its candidates.
    """

    type: MemoryType
    memory_id: str
    memory_ids: tuple[str, ...]
    status: Literal["active", "conflicted"]
    answer: Answer | None = None
    experience: Experience | None = None
    task_state: TaskState | None = None
    rank: Rank

    @property
    def authority(self) -> Authority | None:
        return self.rank.authority


class SearchQuery(_Model):
    """What a search was asked, with its effective times (recorded with context snapshots)."""

    text: str | None
    match: Literal["all", "any"]
    lucene: str
    types: tuple[MemoryType, ...]
    entity: str | None
    task_id: str | None
    cutoff: dt.datetime
    known_at: dt.datetime
    require: Require | None
    limit: int
    mode: Literal["text", "semantic", "hybrid"] = "text"
    embedder: str | None = None


class SearchExplain(_Model):
    """What each hard filter removed, in the order they ran, and how hits were ranked.

    ``matched`` counts the index hits inside the caller's scope (scope is applied at the
    index lookup and never counted, so nothing about other scopes leaks). ``removed`` is
    per matched memory (fact version, experience, task state, candidate). ``kept`` passed
    every filter; ``below_limit`` of them ranked after the limit; ``unevaluated`` matched
    memories were not evaluated (fact versions not run through the read rule, or any hit
    scoring below those that settled the page) because even at their best they would
    rank below the limit (see graphmem/search.py); ``removed`` and ``kept`` count the
    evaluated ones.
    """

    matched: int = 0
    removed: dict[str, int] = Field(default_factory=dict)
    kept: int = 0
    returned: int = 0
    below_limit: int = 0
    unevaluated: int = 0
    ranking: str = ""
    embedding_ms: float | None = None  # the query's embedding, apart from the search


class SearchResult(_Model):
    """Hits in rank order; ``not_found`` when no memory passed every hard filter."""

    status: Literal["found", "not_found"]
    hits: tuple[SearchHit, ...]
    explain: SearchExplain
    query: SearchQuery


class ContextItem(_Model):
    """One memory (or conflict group) the context builder considered."""

    memory_id: str
    memory_ids: tuple[str, ...]
    type: MemoryType
    status: Literal["active", "conflicted"]
    authority: Authority | None
    priority: int
    tokens: int
    lines: tuple[str, ...]
    decision: Literal["included", "cut"]
    reason: str


class Context(_Model):
    """A rendered context and the snapshot recorded for it."""

    snapshot_id: str
    task_id: str
    rendered: str | None
    rendered_hash: str
    token_budget: int
    tokens_used: int
    tokens_considered: int
    tokenizer: str
    included: tuple[ContextItem, ...]
    cut: tuple[ContextItem, ...]
    cutoff: dt.datetime | None
    known_at: dt.datetime | None
    recorded_at: dt.datetime
    query: SearchQuery | None = None

    @property
    def considered(self) -> tuple[str, ...]:
        return tuple(m for i in self.included + self.cut for m in i.memory_ids)


class TraceStep(_Model):
    """What happened to one memory on its way to (or not into) a context."""

    memory_id: str
    outcome: Literal["included", "cut", "not_considered", "filtered", "candidate",
                     "not_found", "not_stored"]
    filter: str | None = None
    detail: str


class TraceResult(_Model):
    """The fate of a memory (or every version a selector names) in one context snapshot.

    ``outcome`` is the furthest any of them got: included > cut > not_considered >
    filtered > candidate > not_found > not_stored.
    """

    snapshot_id: str
    outcome: Literal["included", "cut", "not_considered", "filtered", "candidate",
                     "not_found", "not_stored"]
    steps: tuple[TraceStep, ...]

    @property
    def filter(self) -> str | None:
        return next((s.filter for s in self.steps if s.outcome == self.outcome), None)
