"""The bitemporal fact repository: the write path and the as-of reads, over named Cypher.

The read rule lives in one statement, ``fact.read``; the write path runs that same
statement at the assertion's own ``available_by`` to decide whether an assertion is
more evidence for the value the key already has, or a new version. Python never
re-implements the rule: it only compares the candidate values Cypher returns.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Generic, NamedTuple, TypeVar

from . import echo, indexing
from .db import Tx
from .errors import ConcurrentWriteError, InputError
from .models import (
    Answer,
    Authority,
    Entity,
    Explain,
    FactIn,
    FactVersion,
    Period,
    Require,
    Scope,
    Source,
    SourceRecord,
    authority_of,
)
from .values import NOW, Now, decode, digest, encode, from_micros


def scope_params(scope: Scope) -> dict[str, str]:
    """The two parameters every statement filters on."""
    return {"tenant": scope.tenant, "scope": scope.id}


@lru_cache(maxsize=8192)  # writes name the same few entities and sources many times over
def _uid(scope_id: str, kind: str, ident: str) -> str:
    return digest(scope_id, kind, ident)


def entity_uid(scope: Scope, entity_id: str) -> str:
    return _uid(scope.id, "entity", entity_id)


def source_uid(scope: Scope, source_id: str) -> str:
    return _uid(scope.id, "source", source_id)


def native(value: Any) -> Any:
    """Neo4j temporal values to Python ones (other values unchanged).

    Datetimes come back in ``datetime.UTC``: the driver hands back a named "UTC" zone,
    which it would send back to Neo4j as a zone id, and Neo4j orders ``...Z[UTC]``
    after ``...Z`` at the same instant, breaking ``<=`` at the boundary.
    """
    if not hasattr(value, "to_native"):
        return value
    value = value.to_native()
    return value.astimezone(dt.UTC) if isinstance(value, dt.datetime) else value


_T = TypeVar("_T")


class _once(Generic[_T]):  # noqa: N801 - used as a decorator, like the cached_property it stands for
    """``functools.cached_property`` without its lock (Python 3.11 takes one at every
    first read): the value is computed at the first read and kept in the instance,
    which later reads find first. Ids are read once or twice per assertion, a build's
    20,000 a company; computing one twice in racing threads is harmless."""

    def __init__(self, compute: Callable[[Any], _T]):
        self._compute = compute
        self._name = compute.__name__
        self.__doc__ = compute.__doc__

    def __get__(self, instance: Any, owner: type | None = None) -> _T:
        if instance is None:
            return self  # type: ignore[return-value]
        value = instance.__dict__[self._name] = self._compute(instance)
        return value


def key_uid(scope: Scope, entity: str, attribute: str, unit: str, definition: str, period_text: str) -> str:
    """A fact key's id: its scope, entity, attribute, unit, definition and period (as
    ``Period.text``)."""
    return digest(scope.id, entity, attribute, unit, definition, period_text)


@dataclass(frozen=True)
class KeySpec:
    """The identity of a fact key: everything but the value and the times."""

    scope: Scope
    entity: str
    attribute: str
    unit: str
    definition: str
    period: Period

    @classmethod
    def of(cls, scope: Scope, fact: FactIn) -> KeySpec:
        return cls(scope, fact.entity, fact.attribute, fact.unit, fact.definition, fact.period)

    @_once  # a hash, asked for many times per assertion
    def uid(self) -> str:
        return key_uid(self.scope, self.entity, self.attribute, self.unit, self.definition, self.period_text)

    @_once
    def period_text(self) -> str:
        return self.period.text

    def params(self, times: Times) -> dict[str, Any]:
        """The key as a ``fact.create_versions`` row names it (its dates in ``times``)."""
        return {
            "uid": self.uid,
            "entity": self.entity,
            "entity_uid": entity_uid(self.scope, self.entity),
            "attribute": self.attribute,
            "unit": self.unit,
            "definition": self.definition,
            "period": self.period_text,
            "period_start": times.ref(self.period.start),
            "period_end": times.ref(self.period.end),
        }


@dataclass(frozen=True)
class Assertion:
    """One (fact, source) pair of a write: the unit the idempotency key is made of."""

    row: int
    key: KeySpec
    source_uid: str
    value_type: str
    value: str
    value_num: float | None
    available_by: dt.datetime
    available_text: str | None = None  # its ISO text, when the caller has it (a chunk's facts share a few times)

    @property
    def available_iso(self) -> str:
        return self.available_text or self.available_by.isoformat()

    @_once
    def idem(self) -> str:
        return idempotency_key(self.key.uid, self.source_uid, self.value_type, self.value, self.available_iso)

    @property
    def version_id(self) -> str:
        """The id of the version this assertion creates, when it creates one."""
        return "fv_" + self.idem

    @property
    def value_hash(self) -> str:
        return digest(self.value_type, self.value)


def idempotency_key(key_uid: str, source_uid: str, value_type: str, value: str, available_iso: str) -> str:
    """An assertion's idempotency key: its fact key, source, encoded value and
    available_by (a time's part is its ISO text: given as text, the digest's shorter route)."""
    return digest(key_uid, source_uid, value_type, value, available_iso)


@dataclass
class ChunkResult:
    created: int = 0
    evidence_added: int = 0
    unchanged: int = 0
    version_ids: list[str] | None = None


class Times:
    """The dates and datetimes of one statement, each sent once; rows name them by index.

    The driver encodes every temporal parameter in Python (a datetime costs about
    0.1 ms), so a chunk of 500 assertions that share a filing's available_by and a few
    period ends would pay for 1,500; through ``$times`` it pays for a handful. ``None``
    stays ``None`` (``$times[null]`` is null).
    """

    def __init__(self) -> None:
        self.values: list[dt.date] = []
        self._index: dict[dt.date, int] = {}

    def ref(self, value: dt.date | None) -> int | None:
        if value is None:
            return None
        if value not in self._index:
            self._index[value] = len(self.values)
            self.values.append(value)
        return self._index[value]


# ---------------------------------------------------------------- writes


def tick(tx: Tx, scope: Scope, now: dt.datetime | None) -> dt.datetime:
    """Take the tenant clock's lock and return this transaction's recorded_at."""
    return native(tx.one("admin.tick", tenant=scope.tenant, now=now)["recorded_at"])


def recorded_through(tx: Tx, scope: Scope) -> dt.datetime:
    """The default known_at of the scope's reads (cypher/admin.cypher, ``admin.known_at``)."""
    return native(tx.one("admin.recorded_through", tenant=scope.tenant)["known_at"])


def put_entity(tx: Tx, scope: Scope, entity: Entity, recorded_at: Any, *, replace: bool = True) -> bool:
    """Create or update the entity; True if written. Without ``replace``, an entity
    already recorded is left as it is (False)."""
    uid = entity_uid(scope, entity.id)
    before = indexing.entity_before(tx, scope, uid)  # search text names the entity
    if before is not None and before["erased"]:
        raise InputError(f"entity {entity.id!r}", "was erased; an erased entity is not brought back")
    if before is not None and not replace:
        return False
    tx.run("entity.put", **entity_params(scope, entity), recorded_at=recorded_at)
    indexing.reindex_entity(tx, scope, uid, before, entity)
    return True


def entity_params(scope: Scope, entity: Entity) -> dict[str, Any]:
    """An entity as ``entity.put`` stores it (but its recorded_at); the offline build
    (graphmem.bulk) writes the same fields."""
    return {"uid": entity_uid(scope, entity.id), "id": entity.id, "name": entity.name, "kind": entity.kind,
            "aliases": list(entity.aliases), **scope_params(scope)}


def to_source_record(row: dict[str, Any]) -> SourceRecord:
    """A SourceRecord from a ``source.get_many`` row (what is stored, not re-checked
    against the input bounds)."""
    return SourceRecord.model_construct(
        id=row["id"], kind=row["kind"], authority=Authority(row["authority"]),
        available_by=native(row["available_by"]), publisher=row["publisher"], uri=row["uri"],
        title=row["title"], meta=json.loads(row["meta"] or "{}"),
        recorded_at=native(row["recorded_at"]), retracted_at=native(row["retracted_at"]),
        erased=row["erased_at"] is not None)


def source_changed(source: Source, stored: dict[str, Any]) -> InputError | None:
    """The error for re-recording ``source`` over ``stored`` (its ``source.get_many`` row,
    or ``source_params``) with other fields, naming them - an availability with both
    times (a filing first loaded by its filed day, then by its acceptance time) - or
    None when they are the same. A source is immutable: a retraction does not free its
    id; the new fields go under a new id."""
    changed = [name for name, old, new in (
        ("kind", stored["kind"], source.kind), ("authority", stored["authority"], source.authority.value),
        ("available_by", native(stored["available_by"]), source.available_by),
        ("publisher", stored["publisher"], source.publisher_id), ("uri", stored["uri"], source.uri),
        ("title", stored["title"], source.title), ("meta", json.loads(stored["meta"] or "{}"), source.meta),
    ) if old != new]
    if not changed:
        return None
    if "available_by" in changed:
        changed[changed.index("available_by")] = (f"available_by {native(stored['available_by']).isoformat()} "
                                                  f"as recorded, {source.available_by.isoformat()} now")
    return InputError(f"source {source.id!r}", f"already recorded with other fields ({'; '.join(changed)}); "
                                               "sources are immutable: record this one under a new id")


_UNREAD: Any = object()


def record_source(tx: Tx, scope: Scope, source: Source, recorded_at: Any, existing: Any = _UNREAD) -> bool:
    """Create the source; True if new. A source is immutable: a different re-record is
    refused. ``existing``: its ``source.get_many`` row (None: not recorded), when the
    caller has just read it."""
    if existing is _UNREAD:
        existing = tx.one("source.get_many", uids=[source_uid(scope, source.id)], **scope_params(scope))
    if existing is not None:
        if existing["erased_at"] is None and (changed := source_changed(source, existing)):
            raise changed
        return False
    echo.check_source(tx, scope, source)  # injected memory is never new evidence
    tx.run("source.create", **source_params(scope, source), recorded_at=recorded_at)
    return True


def source_params(scope: Scope, source: Source) -> dict[str, Any]:
    """A source as ``source.create`` stores it (but its recorded_at); the offline build
    (graphmem.bulk) writes the same fields."""
    return {"uid": source_uid(scope, source.id), "id": source.id, "kind": source.kind,
            "authority": source.authority.value, "rank": source.authority.rank,
            "publisher": source.publisher_id, "uri": source.uri, "title": source.title,
            "meta": json.dumps(source.meta, sort_keys=True), "available_by": source.available_by,
            **scope_params(scope)}


class SourceState(NamedTuple):
    available_by: dt.datetime
    erased: bool
    retracted: bool = False


@dataclass(frozen=True)
class Prepared:
    """What a chunk's assertions need to know before any rule runs (``write.prepare``)."""

    sources: dict[str, SourceState]  # by source uid
    missing_entities: set[str]  # entity uids not in scope, or erased
    revisions: dict[str, int]  # stored key uid -> its revision


def _prepare(tx: Tx, scope: Scope, facts: Sequence[FactIn], keys: Sequence[KeySpec]) -> Prepared:
    """One round trip for the chunk's sources, entities and stored keys."""
    row = tx.one(
        "write.prepare",
        source_uids=sorted({source_uid(scope, sid) for fact in facts for sid in fact.sources}),
        entity_uids=sorted({entity_uid(scope, fact.entity) for fact in facts}),
        key_uids=sorted({key.uid for key in keys}),
        **scope_params(scope),
    )
    return Prepared(
        sources={s["uid"]: SourceState(from_micros(s["available_by"]), s["erased"], s["retracted"])
                 for s in row["sources"]},
        missing_entities={m["uid"] for m in row["missing_entities"]},
        revisions={k["uid"]: k["revision"] for k in row["keys"]},
    )


def _assertions(scope: Scope, facts: Sequence[FactIn], keys: Sequence[KeySpec], known: Prepared,
                offset: int) -> list[Assertion]:
    """Check sources and entities exist, fix each fact's available_by, expand per source.

    ``offset`` is the chunk's first row in the caller's batch, so errors name that row.
    A chunk names few entities and sources for many facts: each is looked up once.
    """
    out: list[Assertion] = []
    missing: dict[str, bool] = {}  # entity id -> not in scope (or erased)
    iso: dict[dt.datetime, str] = {}  # the chunk's available_by times as ISO text
    sources: dict[str, tuple[str, SourceState | None]] = {}  # source id -> its uid and state
    for row, (fact, key) in enumerate(zip(facts, keys, strict=True)):
        absent = missing.get(fact.entity)
        if absent is None:
            absent = missing[fact.entity] = entity_uid(scope, fact.entity) in known.missing_entities
        if absent:
            raise InputError(f"facts[{row + offset}].entity",
                             f"entity {fact.entity!r} not found in scope (or erased); put_entity first")
        if not fact.sources:
            raise InputError(f"facts[{row + offset}].sources", "a fact needs at least one source")
        public: dt.datetime | None = None  # when the last of its sources became public
        for sid in fact.sources:
            found = sources.get(sid)
            if found is None:
                uid = source_uid(scope, sid)
                found = sources[sid] = uid, known.sources.get(uid)
            stored = found[1]
            if stored is None:
                raise InputError(f"facts[{row + offset}].sources", f"source {sid!r} not recorded in scope {scope.id}")
            if stored.erased:
                raise InputError(f"facts[{row + offset}].sources",
                                 f"source {sid!r} was erased; it evidences nothing new")
            if public is None or stored.available_by > public:
                public = stored.available_by
        assert public is not None  # a fact has a source
        available_by = fact.available_by or public
        if available_by < public:
            raise InputError(f"facts[{row + offset}].available_by",
                             f"{available_by.isoformat()} is before its source became public ({public.isoformat()})")
        value_type, value, value_num = encode(fact.value)
        text = iso.get(available_by)
        if text is None:
            text = iso[available_by] = available_by.isoformat()
        for sid in (fact.sources if len(fact.sources) == 1 else dict.fromkeys(fact.sources)):
            out.append(Assertion(row, key, sources[sid][0], value_type, value, value_num, available_by, text))
    return out


def _rounds(assertions: list[Assertion]) -> Iterable[list[Assertion]]:
    """Split so that no key appears twice in one round: a later assertion must see the earlier."""
    pending = list({a.idem: a for a in assertions}.values())
    while pending:
        seen: set[str] = set()
        this, rest = [], []
        for a in pending:
            (rest if a.key.uid in seen else this).append(a)
            seen.add(a.key.uid)
        yield this
        pending = rest


def _decide(tx: Tx, params: dict[str, Any], batch: list[Assertion], recorded_at: Any,
            stored: set[str]) -> dict[int, tuple[str, str]]:
    """Each assertion's fate, from the read rule at its own available_by (``fact.read``,
    seeking each key by uid): ``unchanged`` (re-sent), ``evidence`` for the version that
    has its value then, or ``create`` a new version (without a read for a key that is
    not ``stored`` yet)."""
    decisions = {n: ("create", a.version_id) for n, a in enumerate(batch)}
    times = Times()
    # by uid alone: fact.read ignores a selector's other fields then (not worth encoding);
    # the source finds an earlier send of the same assertion (`already`)
    reads = [{"i": n, "uid": a.key.uid, "cutoff": times.ref(a.available_by), "known_at": times.ref(recorded_at),
              "idem": a.idem, "source": a.source_uid} for n, a in enumerate(batch) if a.key.uid in stored]
    if not reads:
        return decisions
    for row in tx.run("fact.read", reads=reads, times=times.values, brief=True, min_rank=0, kinds=None,
                      **params):
        a = batch[row["i"]]
        if row["already"]:
            decisions[row["i"]] = ("unchanged", row["already"])
            continue
        same = [c["f"]["version_id"] for c in row["candidates"]
                if (c["f"]["value_type"], c["f"]["value"]) == (a.value_type, a.value)]
        if same:
            decisions[row["i"]] = ("evidence", same[0])
    return decisions


def _check_revisions(known: Prepared, assertions: list[Assertion], expected_revision: int | None) -> None:
    """With ``expected_revision``, every key written must be at it (0 for a key not stored yet)."""
    if expected_revision is None:
        return
    keys = {a.key.uid: a.key for a in assertions}
    for uid in sorted(keys):
        if (stored := known.revisions.get(uid, 0)) != expected_revision:
            k = keys[uid]  # named as the caller wrote it; the uid is a digest of that
            raise ConcurrentWriteError(f"fact key {k.entity} {k.attribute} [{k.unit}] {k.period_text}"
                                       + (f" ({k.definition})" if k.definition else ""), expected_revision, stored)


def evidence_row(a: Assertion, version_id: str, times: Times) -> dict[str, Any]:
    """A ``fact.add_evidence`` row: ``a`` is more evidence for ``version_id``."""
    return {"source_uid": a.source_uid, "idem": a.idem, "available_by": times.ref(a.available_by),
            "version_id": version_id}


def version_row(a: Assertion, times: Times) -> dict[str, Any]:
    """A ``fact.create_versions`` row: ``a`` makes a new version (and its first evidence)."""
    return {**evidence_row(a, a.version_id, times), "key": a.key.params(times), "value": a.value,
            "value_type": a.value_type, "value_num": a.value_num, "value_hash": a.value_hash}


def write_facts(
    tx: Tx,
    scope: Scope,
    facts: Sequence[FactIn],
    recorded_at: Any,
    expected_revision: int | None = None,
    offset: int = 0,
) -> ChunkResult:
    """Write a chunk of assertions in the caller's transaction; see module docstring."""
    keys = [KeySpec.of(scope, fact) for fact in facts]
    known = _prepare(tx, scope, facts, keys)
    assertions = _assertions(scope, facts, keys, known, offset)
    _check_revisions(known, assertions, expected_revision)
    params = scope_params(scope)
    result = ChunkResult(version_ids=[""] * len(facts))
    outcome: dict[str, str] = {}  # idempotency key -> the version it landed on
    stored = set(known.revisions)
    for batch in _rounds(assertions):
        decisions = _decide(tx, params, batch, recorded_at, stored)
        stored |= {a.key.uid for a in batch}  # a later round reads what this one wrote
        creates, evidence, times = [], [], Times()
        for n, a in enumerate(batch):
            action, target = decisions[n]
            outcome[a.idem] = target
            if action == "unchanged":
                result.unchanged += 1
                continue
            if known.sources[a.source_uid].retracted:
                _withdrawn(scope, facts[a.row], a, offset)
            if action == "evidence":
                evidence.append(evidence_row(a, target, times))
            else:
                creates.append(version_row(a, times))
        if creates:
            tx.run("fact.create_versions", rows=creates, times=times.values, recorded_at=recorded_at,
                   scope_token=indexing.scope_token(scope), **params)
        if evidence:
            tx.run("fact.add_evidence", rows=evidence, times=times.values, recorded_at=recorded_at, **params)
        result.created += len(creates)
        result.evidence_added += len(evidence)
    result.unchanged += len(assertions) - len(outcome)  # repeats within this chunk
    for a in assertions:
        result.version_ids[a.row] = outcome[a.idem]
    return result


def _withdrawn(scope: Scope, fact: FactIn, a: Assertion, offset: int) -> None:
    """Refuse a new assertion from a withdrawn source: it would be evidence no read shows
    (a re-send of one that landed before the retraction is unchanged, not refused)."""
    sid = next(s for s in fact.sources if source_uid(scope, s) == a.source_uid)
    raise InputError(f"facts[{a.row + offset}].sources",
                     f"source {sid!r} was withdrawn (retracted); it evidences nothing new")


def landed(tx: Tx, scope: Scope, fact: FactIn) -> str | None:
    """The version an earlier send of this very assertion made, if one did, whatever
    became of it, its sources or its entity since: a gate that refuses the assertion now
    (a source retracted, the entity erased) meets a re-send, not a new write."""
    key = KeySpec.of(scope, fact)
    known = _prepare(tx, scope, [fact], [key])
    stamps = [known.sources.get(source_uid(scope, sid)) for sid in fact.sources]
    if key.uid not in known.revisions or not stamps or None in stamps:
        return None
    value_type, value, value_num = encode(fact.value)
    first = Assertion(0, key, source_uid(scope, fact.sources[0]), value_type, value, value_num,
                      fact.available_by or max(s.available_by for s in stamps))
    row = tx.one("fact.landed", key_uid=key.uid, source_uid=first.source_uid, idem=first.idem,
                 **scope_params(scope))
    return row["version_id"] if row else None


# ---------------------------------------------------------------- reads


def evidence_fields(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Evidence fields from statement rows (times as epoch microseconds), earliest first."""
    return [{"source_id": e["source_id"], "kind": e["kind"], "authority": e["authority"],
             "publisher": e["publisher"], "uri": e["uri"], "title": e["title"],
             "available_by": from_micros(e["available_by"]), "recorded_at": from_micros(e["recorded_at"]),
             "retracted": bool(e.get("retracted"))}
            for e in sorted(rows, key=lambda e: (e["available_by"], e["source_id"]))]


@lru_cache(maxsize=65_536)
def _period(text: str) -> Period:
    """A key's period from its text (``Period.text``), once per text: statements return
    the text rather than the key's two dates, which the driver decodes 20 times slower
    (120,000 of them in a 2,000-company panel); periods are frozen, so they are shared."""
    return Period.parse(text)


def version_fields(
    key: dict[str, Any],
    f: dict[str, Any],
    evidence: Iterable[dict[str, Any]],
    rank: int | None = None,
    lifecycle: Iterable[dict[str, Any]] = (),
    since: int | None = None,
) -> dict[str, Any]:
    """A FactVersion's fields from a key map, a fact node map and its evidence rows (their
    times as epoch microseconds), for pydantic to validate in one call with the model that
    holds it: a screen decodes thousands, and nested dicts validate in pydantic-core at
    about half the cost of building each model in Python. ``since``: the available_by a
    read shows (:func:`_public_from`), when not the version's own."""
    period = _period(key["period"])
    ev = evidence_fields(evidence)
    if rank is None:
        rank = max((Authority(e["authority"]).rank for e in ev if not e["retracted"]), default=0)
    return {
        "version_id": f["version_id"], "entity": key["entity"], "attribute": key["attribute"],
        "unit": key["unit"], "definition": key["definition"], "period": period,
        "value": decode(f["value_type"], f.get("value")), "event_time": period.end,
        "available_by": from_micros(f["available_by"] if since is None else since),
        "recorded_at": from_micros(f["recorded_at"]),
        "revision": f["revision"], "authority": authority_of(rank) if rank else None, "sources": ev,
        "lifecycle": sorted(({"kind": x["kind"], "recorded_at": from_micros(x["recorded_at"]),
                              "reason": x.get("reason"), "by": x.get("by"), "ref": x.get("ref")}
                             for x in lifecycle), key=lambda x: x["recorded_at"]),
        "erased": f.get("erased_at") is not None,
    }


def to_version(key: dict[str, Any], f: dict[str, Any], evidence: Iterable[dict[str, Any]],
               rank: int | None = None, lifecycle: Iterable[dict[str, Any]] = ()) -> FactVersion:
    """A FactVersion from a key map, a fact node map and its evidence rows (see version_fields)."""
    return FactVersion.model_validate(version_fields(key, f, evidence, rank, lifecycle))


def _public_from(candidate: dict[str, Any]) -> int:
    """When what a read shows of a candidate became public, as read: its earliest live
    evidence (DESIGN.md section 4). That is the version's own available_by unless the
    evidence that first made it public was withdrawn since, or does not meet the read's
    requirement: a value standing on a later filing alone was not public before it."""
    return min((e["available_by"] for e in candidate["live"]), default=candidate["f"]["available_by"])


def shown(row: dict[str, Any]) -> list[dict[str, Any]]:
    """The candidates of a full ``fact.read`` row that its Answer shows, in its order:
    the one version of an active key, every candidate of a conflicted one (strongest
    authority first, then earliest public as read, then id)."""
    ordered = sorted(row["candidates"], key=lambda c: (-(c["rank"] or 0), _public_from(c), c["f"]["version_id"]))
    return ordered[:1] if row["status"] == "active" else ordered


def _with_all_evidence(row: dict[str, Any]) -> list[dict[str, Any]]:
    """``shown(row)``, each with when it became public as read (``since``, its own
    evidence's), an active key's one version listing the live evidence of every
    candidate: they hold its one value (two publishers can each stand behind a version
    of it, say one written before the other's earlier filing of it), and an active
    answer lists all its evidence (DESIGN.md section 3, step 4), each source once."""
    picked = [{**c, "since": _public_from(c)} for c in shown(row)]
    if row["status"] != "active" or len(row["candidates"]) < 2:
        return picked
    return [{**picked[0], "live": list({e["source_id"]: e for c in row["candidates"] for e in c["live"]}.values())}]


def _answer(row: dict[str, Any], cutoff: dt.datetime | Now, require: Require | None = None) -> Answer:
    """An Answer from a full ``fact.read`` row (its times come as epoch microseconds), read
    under ``require``; a read at ``NOW`` reports the transaction time it used."""
    candidates = [version_fields(row["key"], c["f"], c["live"], c["rank"], since=c["since"])
                  for c in _with_all_evidence(row)]
    status = row["status"]
    return Answer.model_validate({
        "status": status,
        "entity": row["key"]["entity"],
        "attribute": row["key"]["attribute"],
        "cutoff": from_micros(row["cutoff"]) if cutoff is NOW else cutoff,
        "known_at": from_micros(row["known_at"]),
        "require": require,
        "version": candidates[0] if status == "active" else None,
        "candidates": candidates if status == "conflicted" else (),
        "explain": row["explain"],
        "revision": row["key"]["revision"],
    })


def require_params(require: Require | None) -> dict[str, Any]:
    if require is None:
        return {"min_rank": 0, "kinds": None}
    return {
        "min_rank": require.min_authority.rank if require.min_authority else 0,
        "kinds": list(require.kinds) if require.kinds is not None else None,
    }


_READS = 1000  # reads per fact.read call when a selector opens onto many keys


def read_answers(
    tx: Tx,
    scope: Scope,
    selectors: Sequence[dict[str, Any]],
    cutoff: dt.datetime | Now,
    known_at: dt.datetime | None,
    require: Require | None,
) -> list[Answer]:
    """One Answer per fact key the selectors match (not_found ones included). Reads in
    several statements take one default known_at, read first: each statement would read
    the tenant's clock anew (admin.known_at), and a write may commit in between."""
    if known_at is None and len(selectors) > _READS:
        known_at = recorded_through(tx, scope)
    times = Times()
    at = {"now": True} if cutoff is NOW else {"cutoff": times.ref(cutoff)}
    reads = [{"i": i, **selector, **at, "known_at": times.ref(known_at), "idem": None}
             for i, selector in enumerate(selectors)]
    answers = []
    for start in range(0, len(reads), _READS):
        rows = tx.run("fact.read", reads=reads[start:start + _READS], times=times.values, brief=False,
                      **require_params(require), **scope_params(scope))
        answers += [_answer(row, cutoff, require) for row in rows]
    derived = with_derivations(tx, scope, [v for a in answers for v in (a.version, *a.candidates) if v])
    if not derived:
        return answers
    return [a.model_copy(update={"version": a.version and derived.get(a.version.version_id, a.version),
                                 "candidates": tuple(derived.get(c.version_id, c) for c in a.candidates)})
            for a in answers]


def open_keys(tx: Tx, scope: Scope, entity: str | None, attribute: str | None,
              valid_from: dt.date | None, valid_to: dt.date | None) -> list[dict[str, Any]]:
    """Selectors (by uid) for the keys of a read that leaves its entity or attribute open:
    each open shape has its own statement, so each seeks an index."""
    params = {**scope_params(scope), "valid_from": valid_from, "valid_to": valid_to}
    if entity is not None:
        rows = tx.run("fact.keys_of_entity", entity=entity, **params)
    elif attribute is not None:
        rows = tx.run("fact.keys_of_attribute", attribute=attribute, **params)
    else:
        rows = tx.run("fact.keys_in_period", **params)
    return [{"uid": row["uid"]} for row in rows]


def pick_latest(answers: list[Answer], entity: str, attribute: str, cutoff: dt.datetime,
                known_at: dt.datetime | None, require: Require | None) -> Answer:
    """For a read without an exact period: the latest period that has an answer (with
    none, the times the read used, or those given when no key matched)."""
    found = [a for a in answers if a.status != "not_found"]
    explain = sum((a.explain for a in answers), Explain())
    if not found:
        return Answer(
            status="not_found",
            entity=entity,
            attribute=attribute,
            cutoff=answers[0].cutoff if answers else cutoff,
            known_at=answers[0].known_at if answers else known_at,
            require=require,
            explain=explain,
            revision=answers[0].revision if len(answers) == 1 else None if answers else 0,
        )

    def period_of(a: Answer) -> Period:
        return (a.version or a.candidates[0]).period

    latest = max(period_of(a).end for a in found)
    at_latest = [a for a in found if period_of(a).end == latest]
    if len(at_latest) > 1:
        keys = sorted(
            f"period={period_of(a).text} unit={(a.version or a.candidates[0]).unit!r} "
            f"definition={(a.version or a.candidates[0]).definition!r}"
            for a in at_latest
        )
        raise InputError(
            "as_of",
            f"{entity}/{attribute} has {len(at_latest)} keys ending {latest}: "
            + "; ".join(keys) + " — pass period=, unit= or definition=",
        )
    return at_latest[0].model_copy(update={"explain": explain})


def versions_by_id(tx: Tx, scope: Scope, version_ids: Sequence[str]) -> list[FactVersion]:
    rows = tx.run("fact.versions", version_ids=list(version_ids), **scope_params(scope))
    by_id = {row["f"]["version_id"]: row for row in rows}
    versions = [
        to_version(r["key"], r["f"], r["ev"], lifecycle=r["lifecycle"])
        for vid in version_ids
        if (r := by_id.get(vid)) is not None
    ]
    derived = with_derivations(tx, scope, versions)
    return [derived.get(v.version_id, v) for v in versions]


def with_derivations(tx: Tx, scope: Scope, versions: Sequence[FactVersion]) -> dict[str, FactVersion]:
    """The derived ones of ``versions`` (not erased), by id, each with its ``derivation``:
    method, method version, parameters and inputs with their roles (DESIGN.md section 4:
    an answer carries them). A version derived more than once shows the derivation of
    its latest evidence not retracted (else of its latest). One statement, only when a
    version lists evidence of kind ``derivation``."""
    made: dict[str, str] = {}
    for v in versions:
        evidence = [e for e in v.sources if e.kind == "derivation"]
        if evidence and not v.erased:
            chosen = max([e for e in evidence if not e.retracted] or evidence,
                         key=lambda e: (e.available_by, e.recorded_at, e.source_id))
            made[v.version_id] = chosen.source_id
    if not made:
        return {}
    rows = {r["source_id"]: r for r in tx.run("lineage.derivations", **scope_params(scope),
                                               uids=[source_uid(scope, sid) for sid in set(made.values())])}
    out = {}
    for v in versions:
        r = rows.get(made.get(v.version_id, ""))
        if r is not None:
            out[v.version_id] = v.model_copy(update={"derivation": {
                "id": r["source_id"].removeprefix("derivation:"), "method": r["method"],
                "method_version": r["method_version"], "params": json.loads(r["params"]), "inputs": r["inputs"]}})
    return out
