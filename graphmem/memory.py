"""``Memory``: graphmem's public entry point, one object per database connection.

It owns the driver and hands every call to the repository functions as a unit of
work: one read or write transaction per logical operation (one per chunk for batch
writes), so that a failure leaves nothing of that operation behind. Every method
takes a :class:`Scope` first and checks it before any query runs.
"""

from __future__ import annotations

import datetime as dt
import os
import uuid
from collections.abc import Callable, Iterable, Iterator
from decimal import Decimal
from itertools import islice
from typing import TYPE_CHECKING, Any

import neo4j

from . import context as contexts
from . import facts, governance, limits, lineage, retrieval, schema, values
from . import screen as screening
from . import search as searching
from .db import Database, RetryPolicy, Timeouts, Tx
from .errors import InputError, NotFoundError
from .models import (
    Answer,
    Answers,
    Authority,
    Candidate,
    Context,
    Entity,
    Experience,
    ExperienceIn,
    FactIn,
    FactVersion,
    Period,
    Remembered,
    Require,
    Scope,
    Screen,
    SearchResult,
    Source,
    SourceRecord,
    TaskState,
    TaskStateIn,
    TraceResult,
    Versions,
    WriteReport,
    check_require,
    check_scope,
)
from .retrieval import rank
from .retrieval.vectors import VectorCache
from .values import NOW, Now, digest

if TYPE_CHECKING:
    from .research.panel import Panel

Clock = Callable[[], dt.datetime]


def _warmer(driver: neo4j.Driver, database: str | None) -> Any:
    """A plan warmer on ``driver`` (graphmem.warm), imported only when asked for: the
    server's detached warmer runs that module as ``python -m graphmem.warm``, and a package
    import of it before then would load it twice (runpy's warning in the server's log)."""
    from .warm import Warmer

    return Warmer(driver, database)


def _aware(name: str, value: dt.datetime | None) -> dt.datetime | None:
    return None if value is None else values.aware_utc(name, value)


_DERIVATION_ARGS = frozenset({"method", "method_version", "params", "inputs", "output", "cutoff"})
_FACT_VALUE_TYPES = (Decimal, bool, dt.date, str)  # models.FactValue (typed() refuses datetimes)


def _derivation_args(where: str, d: Any) -> dict[str, Any]:
    """One ``derive_many`` item: a dict of ``derive``'s keyword arguments, named by its
    place when it is not (a misspelt or missing key would otherwise be a TypeError about
    a private method)."""
    if not isinstance(d, dict):
        raise InputError(where, f"a dict of derive's arguments is required, got {type(d).__name__}")
    unknown = sorted(map(str, set(d) - _DERIVATION_ARGS))
    missing = sorted(_DERIVATION_ARGS - {"cutoff"} - set(d))
    if unknown or missing:
        said = [f"{what} {', '.join(keys)}" for what, keys in (("unknown", unknown), ("missing", missing)) if keys]
        raise InputError(where, "; ".join(said))
    return d


def _derivation_inputs(inputs: Any) -> Any:
    """``derive``'s inputs, each role's value an id or a list (tuple) of ids: anything else
    was a TypeError (None, a number) or had its keys taken for ids (a dict)."""
    for role, ids in inputs.items() if isinstance(inputs, dict) else ():
        if not isinstance(ids, (str, list, tuple)):
            raise InputError(f"inputs[{role!r}]", "a version id or a list of them is required, "
                                                 f"got {type(ids).__name__}")
    return inputs


def _instance(name: str, value: Any, kind: type, *, optional: bool = False) -> Any:
    """An argument that must be a graphmem model (or None when ``optional``)."""
    if value is None and optional:
        return None
    if not isinstance(value, kind):
        raise InputError(name, f"a graphmem.{kind.__name__} is required, got "
                               f"{type(value).__name__}")
    return value


def _iterable(name: str, value: Any) -> Iterable[Any]:
    """An argument that must be an iterable (its items are checked as they are taken):
    None or a number would otherwise be a TypeError from inside the call."""
    if not isinstance(value, Iterable):
        raise InputError(name, f"an iterable is required, got {type(value).__name__}")
    return value


def _required_keys(keys: Any) -> tuple[str, ...]:
    """``required_scope``: the scope key names every call must carry. A single string
    would be taken letter by letter, and every call refused for keys nobody has."""
    if isinstance(keys, str) or not isinstance(keys, Iterable):
        raise InputError("required_scope", f"a tuple of scope key names is required, got {type(keys).__name__}")
    names = tuple(keys)
    for n, key in enumerate(names):
        limits.check_id(f"required_scope[{n}]", key)
    return names


def _items(name: str, items: Iterable[Any], kind: type) -> Iterator[Any]:
    """Each item of an iterable argument, checked to be a ``kind`` as it is taken."""
    for n, item in enumerate(items):
        yield _instance(f"{name}[{n}]", item, kind)


def _line_item(attribute: Any, **unsupported: Any) -> bool:
    """Whether a screen's or panel's attribute is a line item of a family
    (graphmem/research/lineitems.py), which takes no period, definition or requirement."""
    if isinstance(attribute, str):  # a concept: the families need not be loaded (a first call's 40 ms)
        return False
    from .research.lineitems import LineItem

    if not isinstance(attribute, LineItem):
        return False
    for name, value in unsupported.items():
        if value:
            raise InputError(name, "a line item's screen or panel takes no " + name)
    return True


def entity_argument(entity: Any) -> Entity:
    """``put_entity``'s entity, checked to be one (by ``Memory`` and an offline build)."""
    return _instance("entity", entity, Entity)


def _flag(name: str, value: Any) -> bool:
    """A True/False option: any other value (``"no"``, 0, None) is refused, since Python
    would take a non-empty text for True and do the opposite of what was asked."""
    if not isinstance(value, bool):
        raise InputError(name, f"True or False is required, got {limits.shown(value)}")
    return value


def _revision(value: Any) -> int | None:
    return limits.check_int("expected_revision", value, 0, 2**62, optional=True)


def _reason(what: str, reason: Any) -> None:
    """A non-empty reason of at most ``limits.TEXT_BYTES``."""
    if not reason:
        raise InputError("reason", f"{what} needs a reason")
    limits.check_text("reason", reason)


def _key_args(*, optional: bool = False, **names: Any) -> None:
    """Entity and attribute arguments: identifiers (None allowed when ``optional``)."""
    for name, value in names.items():
        limits.check_id(name, value, optional=optional)


def _report(result: facts.ChunkResult, rows: int) -> WriteReport:
    return WriteReport(rows=rows, created=result.created, evidence_added=result.evidence_added,
                       unchanged=result.unchanged, chunks=1, version_ids=tuple(result.version_ids or ()))


def record_args(sources: Iterable[Source], items: Iterable[FactIn]) -> tuple[list[Source], list[FactIn]]:
    """The sources and facts of one :meth:`Memory.record`, checked before any query: their
    types, and at most ``limits.RECORD_SOURCES`` and ``limits.RECORD_ITEMS`` of them."""
    sources, items = list(_iterable("sources", sources)), list(_iterable("items", items))
    limits.check_count("sources", len(sources), limits.RECORD_SOURCES)
    limits.check_count("items", len(items), limits.RECORD_ITEMS)
    return list(_items("sources", sources, Source)), list(_items("items", items, FactIn))


def record_in(tx: Tx, scope: Scope, sources: list[Source], items: list[FactIn], at: Any) -> WriteReport:
    """What :meth:`Memory.record` does inside its transaction, for a caller that adds its
    own bookkeeping to that same transaction (the EDGAR loader's load marks)."""
    new = sum(facts.record_source(tx, scope, source, at) for source in sources)
    report = _report(facts.write_facts(tx, scope, items, at), len(items)) if items else WriteReport()
    return report.model_copy(update={"sources_recorded": new, "chunks": 1})


def record_label(sources: list[Source]) -> str:
    """``record (source 0001564590-16-013195)``: an error of a filing's write names it."""
    if not sources:
        return "record"
    ids = [s.id for s in sources[:3]] + ([f"{len(sources) - 3} more"] if len(sources) > 3 else [])
    return f"record (source{'s' if len(sources) > 1 else ''} {', '.join(ids)})"


def _chunks(items: Iterable[Any], size: int) -> Iterator[list[Any]]:
    iterator = iter(items)
    while chunk := list(islice(iterator, size)):
        yield chunk


class Memory:
    """A bitemporal memory in one Neo4j database.

    Use :meth:`connect` or :meth:`from_env`, ideally as a context manager. ``required_scope``
    names the scope keys (beside the tenant) that every call must carry; ``retry`` bounds
    how long transient faults are retried and ``timeouts`` how long one transaction may
    run (see graphmem/db.py); ``clock`` is for tests only (production stamps
    ``recorded_at`` with the server's transaction time). ``warm``: plan the statements of
    the usual first calls on a background thread (graphmem.warm), so that the first call
    after a server start does not wait for its plans.

    Idempotency. A lost commit acknowledgement (the server or the connection dropped
    while a commit was in flight) is retried for every call whose second run records
    nothing twice - every read and every write but one: facts, experiences and
    candidates are keyed by their content (or event id), entities and sources are
    upserted, invalidations, retractions, approvals and rejections skip what is already
    recorded, and ``resolve``, ``erase``, ``build_context`` and ``save_task_state`` (of
    a state without an event id) name each call with a token drawn once. A retried
    write reports what the retry found: a fact version that landed the first time
    counts as ``unchanged``, a source or an entity put with ``replace=False`` as not
    newly recorded.
    ``assert_fact`` with ``expected_revision`` is not idempotent (its own landed write
    would look like a concurrent one): it raises CommitUnknownError instead.
    """

    def __init__(
        self,
        driver: neo4j.Driver,
        database: str | None = None,
        *,
        required_scope: tuple[str, ...] = (),
        retry: RetryPolicy | None = None,
        timeouts: Timeouts | None = None,
        clock: Clock | None = None,
        chunk_size: int = 500,
        embedder: Any = None,
        warm: bool = False,
    ):
        # Always name the database: the driver then skips resolving the user's home
        # database before each session (a round trip on clusters and Aura).
        self._db = Database(driver, database or "neo4j", _instance("retry", retry, RetryPolicy, optional=True),
                            timeouts=_instance("timeouts", timeouts, Timeouts, optional=True))
        self._required = _required_keys(required_scope)
        self._clock = clock
        self._chunk_size = limits.check_int("chunk_size", chunk_size, 1, limits.CHUNK_SIZE)
        # semantic and hybrid search (graphmem/retrieval): None keeps search full-text only
        self._embedder = retrieval.as_embedder(embedder)
        self._vectors = VectorCache()
        self._warmer = _warmer(driver, self._db.database) if warm else None

    # ------------------------------------------------------------ lifecycle

    @classmethod
    def connect(
        cls,
        uri: str,
        auth: tuple[str, str] | None = None,
        database: str | None = None,
        **options: Any,
    ) -> Memory:
        """Connect to ``uri`` (``bolt://``, ``neo4j://`` for a cluster or Aura, ``+s`` for TLS)."""
        driver = neo4j.GraphDatabase.driver(uri, auth=auth, notifications_min_severity="OFF")
        try:
            return cls(driver, database, **options)
        except BaseException:  # an option refused: the caller never gets the driver to close
            driver.close()
            raise

    @classmethod
    def from_env(cls, **options: Any) -> Memory:
        """Connect with ``GRAPHMEM_NEO4J_URI`` / ``_USER`` / ``_PASSWORD`` / ``_DATABASE``;
        the retry policy and timeouts, unless given, from ``GRAPHMEM_RETRY_ATTEMPTS`` /
        ``_RETRY_SECONDS`` / ``_WRITE_TIMEOUT`` / ``_READ_TIMEOUT`` (defaults where unset),
        and the embedder from ``GRAPHMEM_EMBEDDER`` (a spec: graphmem/retrieval/embedders.py)."""
        uri = os.environ.get("GRAPHMEM_NEO4J_URI")
        if not uri:
            raise InputError("GRAPHMEM_NEO4J_URI", "not set; e.g. bolt://127.0.0.1:7687")
        password = os.environ.get("GRAPHMEM_NEO4J_PASSWORD")
        auth = (os.environ.get("GRAPHMEM_NEO4J_USER", "neo4j"), password) if password else None
        options.setdefault("retry", RetryPolicy.from_env())
        options.setdefault("timeouts", Timeouts.from_env())
        options.setdefault("embedder", os.environ.get("GRAPHMEM_EMBEDDER") or None)
        return cls.connect(uri, auth, os.environ.get("GRAPHMEM_NEO4J_DATABASE") or None, **options)

    def close(self) -> None:
        if self._warmer is not None:
            self._warmer.stop()
        self._db.driver.close()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def db(self) -> Database:
        """The transaction runner, for the other repositories built on this memory."""
        return self._db

    @property
    def vectors(self) -> VectorCache:
        """This memory's in-process copies of its scopes' vectors, which searches by
        meaning rank with (graphmem/retrieval/vectors.py)."""
        return self._vectors

    def migrate(self) -> int:
        """Apply the schema (idempotent, safe to race); return the recorded schema version."""
        return schema.migrate(self._db)

    def server_now(self) -> dt.datetime:
        """The server's clock, which stamps every recorded_at: the default cutoff (NOW).

        Reads default to it rather than to this machine's clock, which may run behind
        the server's (Aura, a cluster) and would hide the latest writes."""
        return facts.native(self._db.read_one("admin.now")["now"])

    def recorded_through(self, scope: Scope) -> dt.datetime:
        """The default known_at of ``scope``'s reads: its tenant's last committed
        transaction time (the server's clock for a tenant that wrote nothing). Every write
        committed is recorded by then and every write in flight after it, so a read at it
        reads the same whenever it runs (cypher/admin.cypher, ``admin.known_at``); a test
        clock given to this memory stands instead."""
        scope = self.scope(scope)
        return self._now() or self._db.read(lambda tx: facts.recorded_through(tx, scope), "recorded_through")

    def schema_version(self) -> int:
        return schema.current_version(self._db)

    def server_info(self) -> dict[str, Any]:
        """Neo4j's name, version and edition, and graphmem's schema objects."""
        info = self._db.read_one("admin.server_info") or {}
        info["schema_version"] = self.schema_version()
        info["schema"] = self._db.read_all("admin.constraints_and_indexes")
        return info

    # ------------------------------------------------------------ helpers

    def scope(self, scope: Any) -> Scope:
        """Fail closed: the scope must be a Scope carrying every required key."""
        return check_scope(scope, self._required)

    def _now(self) -> dt.datetime | None:
        return self._clock() if self._clock else None

    def _cutoff(self, cutoff: Any) -> dt.datetime | Now:
        """A read's cutoff: a timezone-aware datetime, or NOW (this memory's clock when it
        has one, else the read's own transaction time). It is never left to default."""
        if cutoff is NOW:
            return self._now() or NOW
        if cutoff is None:
            raise InputError("cutoff", "required: a datetime, or graphmem.NOW for the read's own time")
        return _aware("cutoff", cutoff)  # type: ignore[return-value]

    def write(self, scope: Scope, label: str, work: Callable[[Tx, Any], Any], *,
              idempotent: bool = True) -> Any:
        """Run ``work(tx, recorded_at)`` in one write transaction with the tenant's
        transaction time (taking the tenant clock's lock first: see ``admin.tick``).

        ``idempotent``: a second run of ``work`` after a landed commit records nothing
        twice (see the class docstring), so a lost commit acknowledgement is retried.
        """
        return self._db.write(lambda tx: work(tx, facts.tick(tx, scope, self._now())), label,
                              idempotent=idempotent)

    # ------------------------------------------------------------ writes

    def put_entity(self, scope: Scope, entity: Entity, *, replace: bool = True) -> bool:
        """Create or update an entity (its descriptive fields are not versioned); True if
        written. With ``replace=False`` an entity already recorded is left as it is, decided
        in the write's own transaction (two callers recording one id at once: one writes)."""
        scope = self.scope(scope)
        entity_argument(entity)
        _flag("replace", replace)
        return self.write(scope, "put_entity",
                          lambda tx, at: facts.put_entity(tx, scope, entity, at, replace=replace))

    def record_source(self, scope: Scope, source: Source) -> bool:
        """Record a source; re-recording the identical source changes nothing (returns False)."""
        scope = self.scope(scope)
        _instance("source", source, Source)
        return self.write(scope, "record_source", lambda tx, at: facts.record_source(tx, scope, source, at))

    def assert_fact(
        self, scope: Scope, fact: FactIn, *, expected_revision: int | None = None
    ) -> FactVersion:
        """Assert one fact; return the version it created or added evidence to.

        With ``expected_revision``, raise ConcurrentWriteError unless the key is at that
        revision (0 for a new key; a read of the key says it: ``Answer.revision``);
        without it, concurrent writers serialise.
        """
        scope = self.scope(scope)
        _instance("fact", fact, FactIn)
        _revision(expected_revision)

        def work(tx: Tx, at: Any) -> FactVersion:
            result = facts.write_facts(tx, scope, [fact], at, expected_revision)
            return facts.versions_by_id(tx, scope, result.version_ids)[0]

        # with expected_revision a retry would meet its own landed write as a concurrent one
        return self.write(scope, "assert_fact", work, idempotent=expected_revision is None)

    def assert_facts(self, scope: Scope, items: Iterable[FactIn]) -> WriteReport:
        """Assert many facts, ``chunk_size`` per transaction; a failed chunk leaves nothing."""
        scope = self.scope(scope)
        total = WriteReport()
        for chunk in _chunks(_items("facts", _iterable("items", items), FactIn), self._chunk_size):
            report = self.write(
                scope, "assert_facts",
                lambda tx, at, c=chunk, o=total.rows: _report(facts.write_facts(tx, scope, c, at, offset=o), len(c)),
            )
            total = total.merged(report)
        return total

    def record(self, scope: Scope, *, sources: Iterable[Source] = (),
               items: Iterable[FactIn] = ()) -> WriteReport:
        """Record sources and assert facts in ONE write transaction: all of it or nothing.

        For a unit that must not be split — a filing and every value it reports. At most
        ``limits.RECORD_SOURCES`` sources and ``limits.RECORD_ITEMS`` facts.
        """
        scope = self.scope(scope)
        sources, items = record_args(sources, items)
        return self.write(scope, record_label(sources), lambda tx, at: record_in(tx, scope, sources, items, at))

    def invalidate(self, scope: Scope, version_id: str, reason: str, *, by: str | None = None) -> FactVersion:
        """Mark a version as wrong from now on (known_at before now still shows it)."""
        scope = self.scope(scope)
        limits.check_id("version_id", version_id)
        _reason("an invalidation", reason)
        limits.check_id("by", by, optional=True, limit=limits.NAME_BYTES)

        def work(tx: Tx, at: Any) -> FactVersion:
            self._existing(tx, scope, [version_id])
            lineage.invalidate(tx, scope, [version_id], reason=reason, by=by, at=at)
            return facts.versions_by_id(tx, scope, [version_id])[0]

        return self.write(scope, "invalidate", work)

    def resolve(
        self, scope: Scope, *, versions: list[str], value: Any, reason: str, by: str
    ) -> FactVersion:
        """Settle a conflict: a ``user_correction`` assertion of ``value`` naming the versions.

        It wins from its own times on; reads at earlier cutoffs or known_at still show
        the conflict that existed then.
        """
        scope = self.scope(scope)
        versions = limits.check_ids("versions", versions)
        if not versions:
            raise InputError("versions", "name at least one version to resolve")
        if not by:
            raise InputError("by", "a resolution names who made it")
        limits.check_id("by", by, limit=limits.NAME_BYTES)
        _reason("a resolution", reason)
        try:
            value = values.typed(value)
        except ValueError as exc:
            raise InputError("value", str(exc)) from None
        if not isinstance(value, _FACT_VALUE_TYPES):  # here, not in the write (its FactIn would say it)
            raise InputError("value", "a Decimal (or int), bool, date or str is required; "
                                      f"got {type(value).__name__}")

        # one id per call, the same for its retries: a retry after a commit whose
        # acknowledgement was lost finds the resolution instead of recording a second
        record_id = digest(scope.id, sorted(versions), uuid.uuid4().hex, prefix="res_")

        def work(tx: Tx, at: Any) -> FactVersion:
            done = tx.one("lifecycle.resolution", record_id=record_id, **facts.scope_params(scope))
            if done:
                return facts.versions_by_id(tx, scope, [done["chosen"]])[0]
            settled = self._existing(tx, scope, versions)
            keys = {(v.entity, v.attribute, v.unit, v.definition, v.period) for v in settled}
            if len(keys) != 1:
                raise InputError("versions", "all versions of a resolution must share one fact key")
            first = settled[0]
            source = Source(
                id=f"resolution:{record_id}",
                kind="resolution",
                authority=Authority.USER_CORRECTION,
                publisher=f"user:{by}",
                available_by=facts.native(at),
                title=reason,
            )
            facts.record_source(tx, scope, source, at)
            fact = FactIn(
                entity=first.entity,
                attribute=first.attribute,
                unit=first.unit,
                definition=first.definition,
                period=first.period,
                value=value,
                sources=(source.id,),
            )
            chosen = facts.write_facts(tx, scope, [fact], at).version_ids[0]
            tx.run(
                "lifecycle.resolve",
                chosen=chosen,
                settled=[v for v in versions if v != chosen],
                record_id=record_id,
                reason=reason,
                by=by,
                recorded_at=at,
                available_by=at,
                **facts.scope_params(scope),
            )
            return facts.versions_by_id(tx, scope, [chosen])[0]

        return self.write(scope, "resolve", work)

    def erase(
        self,
        scope: Scope,
        *,
        entity: str | None = None,
        source_id: str | None = None,
        reason: str,
        by: str | None = None,
    ) -> int:
        """Forget an entity or a source: payloads go from every version and read; tombstones stay.

        The erasure reaches every fact derived from an erased version, and the
        experiences, task states, candidates and context-snapshot renderings that used
        the entity or source (governance.erase_cascade). Returns how many fact versions
        were erased.
        """
        scope = self.scope(scope)
        if (entity is None) == (source_id is None):
            raise InputError("erase", "give exactly one of entity= or source_id=")
        limits.check_id("entity", entity, optional=True)
        limits.check_id("source_id", source_id, optional=True)
        _reason("an erasure", reason)
        limits.check_id("by", by, optional=True, limit=limits.NAME_BYTES)
        e_uid = facts.entity_uid(scope, entity) if entity else None
        s_uid = facts.source_uid(scope, source_id) if source_id else None

        # one id per call, the same for its retries (see resolve)
        record_id = digest(scope.id, e_uid, s_uid, uuid.uuid4().hex, prefix="era_")

        def work(tx: Tx, at: Any) -> int:
            params = facts.scope_params(scope)
            done = tx.one("lifecycle.erasure", record_id=record_id, **params)
            if done:
                return int(done["erased"])
            targets = tx.one("lifecycle.erase_targets", entity_uid=e_uid, source_uid=s_uid, **params)
            version_ids = governance.erase_reach(tx, scope, targets["version_ids"] if targets else [])
            names = contexts.erase_names(tx, scope, e_uid, s_uid)
            row = tx.one(
                "lifecycle.erase",
                version_ids=version_ids,
                entity_uid=e_uid,
                source_uid=s_uid,
                record_id=record_id,
                target=f"entity:{entity}" if entity else f"source:{source_id}",
                reason=reason,
                by=by,
                recorded_at=at,
                **params,
            )
            governance.erase_cascade(tx, scope, record_id=record_id, entity_uid=e_uid,
                                     source_uid=s_uid, version_ids=version_ids, names=names,
                                     at=at)
            return int(row["erased"]) if row else 0

        return self.write(scope, "erase", work)

    # ------------------------------------------------------------ reads

    def as_of(
        self,
        scope: Scope,
        *,
        entity: str,
        attribute: str,
        period: Period | None = None,
        cutoff: dt.datetime | Now,
        known_at: dt.datetime | None = None,
        unit: str | None = None,
        definition: str | None = None,
        require: Require | None = None,
    ) -> Answer:
        """What the memory says about ``entity``'s ``attribute`` at (cutoff, known_at).

        Without ``period``, the latest period that has an answer; if several keys end on
        that day (units, definitions, durations), InputError asks which. ``cutoff=NOW``
        reads what is public as the read runs (see :data:`graphmem.NOW`).
        """
        scope = self.scope(scope)
        _key_args(entity=entity, attribute=attribute)
        limits.check_text("unit", unit, limits.IDENTIFIER_BYTES, optional=True)
        limits.check_text("definition", definition, limits.IDENTIFIER_BYTES, optional=True)
        _instance("period", period, Period, optional=True)
        check_require(require)
        cutoff = self._cutoff(cutoff)
        known_at = _aware("known_at", known_at) or self._now()
        selector = {
            "entity": entity,
            "attribute": attribute,
            "unit": unit,
            "definition": definition,
            "period": period.text if period else None,
            "valid_from": None,
            "valid_to": None,
        }
        def read() -> list[Answer]:  # at the cutoff and known_at as they stand when called
            return self._db.read(lambda tx: facts.read_answers(tx, scope, [selector], cutoff, known_at, require),
                                 "as_of")

        answers = read()
        if not answers and (known_at is None or cutoff is NOW):  # no key: say when we looked
            cutoff = self.server_now() if cutoff is NOW else cutoff
            if known_at is None:  # a time the read reproduces at: read again there
                known_at = self.recorded_through(scope)
                answers = read()
        return facts.pick_latest(answers, entity, attribute, cutoff, known_at, require)

    def facts_as_of(
        self,
        scope: Scope,
        *,
        entity: str | None = None,
        attribute: str | None = None,
        valid_from: dt.date | None = None,
        valid_to: dt.date | None = None,
        cutoff: dt.datetime | Now,
        known_at: dt.datetime | None = None,
        require: Require | None = None,
    ) -> list[Answer]:
        """Every key whose period ends in [valid_from, valid_to] - of ``entity``, of
        ``attribute``, of both, or (both left open) of the whole scope - answered at
        (cutoff, known_at); keys with nothing live are left out. Sorted by period end,
        then entity and attribute."""
        scope = self.scope(scope)
        _key_args(entity=entity, attribute=attribute, optional=True)
        for name, day in (("valid_from", valid_from), ("valid_to", valid_to)):
            if day is not None and (not isinstance(day, dt.date) or isinstance(day, dt.datetime)):
                raise InputError(name, f"a date is required, got {type(day).__name__}")
        check_require(require)
        cutoff = self._cutoff(cutoff)
        known_at = _aware("known_at", known_at) or self._now()
        if valid_from is not None and valid_to is not None and valid_from > valid_to:
            raise InputError("valid_from", f"{valid_from} is after valid_to {valid_to}")

        def work(tx: Tx) -> list[Answer]:
            if entity is not None and attribute is not None:
                selectors = [{"entity": entity, "attribute": attribute, "valid_from": valid_from,
                              "valid_to": valid_to}]
            else:
                selectors = facts.open_keys(tx, scope, entity, attribute, valid_from, valid_to)
            return facts.read_answers(tx, scope, selectors, cutoff, known_at, require)

        found = [a for a in self._db.read(work, "facts_as_of") if a.status != "not_found"]
        return Answers(sorted(found, key=lambda a: ((a.version or a.candidates[0]).period.end, a.entity, a.attribute,
                                           (a.version or a.candidates[0]).period.text)))

    def screen(
        self,
        scope: Scope,
        *,
        attribute: str,
        frame: str | None = None,
        period: Period | None = None,
        cutoff: dt.datetime,
        known_at: dt.datetime | None = None,
        entities: Iterable[str] | None = None,
        unit: str | None = None,
        definition: str = "",
        require: Require | None = None,
        sort: str = "entity",
    ) -> Screen:
        """Every entity's ``attribute`` for a calendar ``frame`` (``CY2024``, ``CY2024Q3``,
        ``CY2024Q3I``) or an exact ``period``, using only what was public by ``cutoff`` as
        recorded by ``known_at``: one Answer per entity of the universe (``entities``, or
        every entity that had made the attribute public by the cutoff), not_found and
        conflicted ones included. See graphmem/screen.py for the frame rule and the
        choice of each entity's key."""
        scope = self.scope(scope)
        if _line_item(attribute, period=period, definition=definition, require=require):
            from .research import lineitems

            return lineitems.screen(self, scope, attribute, frame=frame, cutoff=_aware("cutoff", cutoff),
                                    known_at=_aware("known_at", known_at) or self._now(), entities=entities,
                                    unit=unit, sort=sort)
        q = screening.make_query(
            attribute=attribute, selection=screening.selection(frame, period), cutoff=_aware("cutoff", cutoff),
            known_at=_aware("known_at", known_at) or self._now(), entities=entities, unit=unit,
            definition=definition, require=require, sort=sort)
        # one statement: its own auto-commit read, one round trip
        return self._db.read_each(lambda tx: screening.screen(tx, scope, q), "screen")

    def panel(
        self,
        scope: Scope,
        *,
        attribute: str,
        frames: Iterable[str] | None = None,
        latest: str | None = None,
        cutoffs: Iterable[dt.datetime],
        known_at: dt.datetime | None = None,
        entities: Iterable[str] | None = None,
        unit: str | None = None,
        definition: str = "",
        require: Require | None = None,
        first_reported: bool = False,
    ) -> Panel:
        """A screen at every one of ``frames`` (or each entity's ``latest`` quarter, year
        or instant) and every one of ``cutoffs``, as of one ``known_at``, read in a few
        statements: each key once per stretch of cutoffs between its evidence times. With
        ``first_reported``, each cell also carries its key's value as first reported and
        whether it was restated. ``attribute`` may be a line item of a family
        (graphmem/research/lineitems.py; a read: ``lineitems.record`` records its
        lineage). See graphmem/research/panel.py."""
        from .research import panel as panels

        scope = self.scope(scope)
        if _line_item(attribute, definition=definition, require=require):
            from .research import lineitems

            return lineitems.panel(self, scope, attribute, frames=frames, latest=latest, cutoffs=cutoffs,
                                   known_at=_aware("known_at", known_at) or self._now(), entities=entities,
                                   unit=unit, first_reported=first_reported)
        q = panels.make_query(attribute=attribute, frames=frames, latest=latest, cutoffs=cutoffs,
                              known_at=_aware("known_at", known_at) or self._now(), entities=entities,
                              unit=unit, definition=definition, require=require, first_reported=first_reported)
        return self._db.read(lambda tx: panels.panel(tx, scope, q), "panel")

    def history(
        self, scope: Scope, *, entity: str, attribute: str, period: Period | None = None
    ) -> list[FactVersion]:
        """Every version of the key(s), with evidence and lifecycle records, both time axes:
        by period, then in transaction-time order (the versions of one transaction by
        available_by, so a backfill's history reads in publication order)."""
        scope = self.scope(scope)
        _key_args(entity=entity, attribute=attribute)
        _instance("period", period, Period, optional=True)

        def work(tx: Tx) -> list[FactVersion]:
            rows = tx.run(
                "fact.history",
                entity=entity,
                attribute=attribute,
                period=period.text if period else None,
                **facts.scope_params(scope),
            )
            return Versions(facts.versions_by_id(tx, scope, [r["version_id"] for r in rows]))

        return self._db.read(work, "history")

    def history_index(self, scope: Scope, *, entity: str, attribute: str, period: Period | None = None,
                      unit: str | None = None, definition: str | None = None) -> list[dict[str, Any]]:
        """The keys ``history`` would read (of one unit and definition when given), each
        as its ``period`` (text), ``unit``, ``definition`` and ``version_ids`` in
        transaction-time order, and nothing else of the versions: a long history is paged
        through with it, each page read with :meth:`versions`."""
        scope = self.scope(scope)
        _key_args(entity=entity, attribute=attribute)
        _instance("period", period, Period, optional=True)
        limits.check_text("unit", unit, limits.IDENTIFIER_BYTES, optional=True)
        limits.check_text("definition", definition, limits.IDENTIFIER_BYTES, optional=True)
        return self._db.read_all("fact.history_index", entity=entity, attribute=attribute,
                                 period=period.text if period else None, unit=unit, definition=definition,
                                 **facts.scope_params(scope))

    def source(self, scope: Scope, source_id: str) -> SourceRecord | None:
        """A recorded source with its meta and transaction time (None if unknown here)."""
        scope = self.scope(scope)
        limits.check_id("source_id", source_id)
        row = self._db.read_one("source.get_many", uids=[facts.source_uid(scope, source_id)],
                                **facts.scope_params(scope))
        return facts.to_source_record(row) if row else None

    def entity(self, scope: Scope, entity_id: str, *, erased: bool = True) -> Entity | None:
        """An entity by id (None if unknown in this scope), as stored: an erased one's
        tombstone (its id alone), or with ``erased=False`` None for it - an erased entity
        is none to write about (put_entity refuses to bring it back)."""
        scope = self.scope(scope)
        limits.check_id("entity_id", entity_id)
        _flag("erased", erased)
        row = self._db.read_one("entity.get", uid=facts.entity_uid(scope, entity_id),
                                **facts.scope_params(scope))
        if row is None or (row["erased"] and not erased):
            return None
        return Entity.model_construct(id=row["id"], name=row["name"], kind=row["kind"],
                                      aliases=tuple(row["aliases"]))

    def counts(self, scope: Scope) -> dict[str, int]:
        """How many entities, sources, derivations, fact keys, versions and evidence edges."""
        scope = self.scope(scope)
        return self._db.read_one("admin.counts", **facts.scope_params(scope)) or {}

    def versions(self, scope: Scope, version_ids: list[str]) -> list[FactVersion]:
        """Versions by id (unknown ids are left out)."""
        scope = self.scope(scope)
        version_ids = limits.check_ids("version_ids", version_ids)
        return self._db.read(lambda tx: facts.versions_by_id(tx, scope, version_ids), "versions")

    def _existing(self, tx: Tx, scope: Scope, version_ids: list[str]) -> list[FactVersion]:
        found = facts.versions_by_id(tx, scope, version_ids)
        missing = set(version_ids) - {v.version_id for v in found}
        if missing:
            raise NotFoundError(f"no version {', '.join(sorted(missing))} in scope {scope.id}")
        return found

    # ------------------------------------------------------------ lineage

    def derive(
        self,
        scope: Scope,
        *,
        method: str,
        method_version: str,
        params: dict[str, Any],
        inputs: dict[str, str | list[str]],
        output: FactIn,
        cutoff: dt.datetime | None = None,
    ) -> FactVersion:
        """Record a derivation and its output fact (authority ``derived``).

        The output's ``available_by`` is the latest of its inputs'. With ``cutoff``, every
        input must have been public by then (no look-ahead). A derivation that would
        consume its own downstream is refused. Re-deriving the same thing changes nothing.
        """
        return self.derive_many(scope, [{"method": method, "method_version": method_version, "params": params,
                                         "inputs": inputs, "output": output, "cutoff": cutoff}])[0]

    def derive_many(self, scope: Scope, derivations: list[dict[str, Any]]) -> list[FactVersion]:
        """``derive`` for each of ``derivations`` (dicts of its keyword arguments), all
        checked before the query and recorded in ONE write transaction (all or nothing);
        at most ``limits.RECORD_ITEMS`` of them."""
        scope = self.scope(scope)
        if not isinstance(derivations, list) or len(derivations) > limits.RECORD_ITEMS:
            raise InputError("derivations", f"a list of at most {limits.RECORD_ITEMS:,} derivations")
        specs = [self._derivation(scope, **_derivation_args(f"derivations[{i}]", d))
                 for i, d in enumerate(derivations)]

        def work(tx: Tx, at: Any) -> list[FactVersion]:
            return [self._derive_in(tx, at, scope, *spec) for spec in specs]

        return self.write(scope, "derive", work)

    def _derivation(self, scope: Scope, *, method: str, method_version: str, params: dict[str, Any],
                    inputs: dict[str, str | list[str]], output: FactIn, cutoff: dt.datetime | None = None
                    ) -> tuple[Any, ...]:
        """One derivation's arguments, checked."""
        cutoff = _aware("cutoff", cutoff)
        if not method or not method_version:
            raise InputError("method", "a derivation needs a method and a method version")
        limits.check_id("method", method, limit=limits.NAME_BYTES)
        limits.check_id("method_version", method_version, limit=limits.NAME_BYTES)
        _instance("output", output, FactIn)
        if not isinstance(params, dict):  # json.dumps would store None, a string or a list as well
            raise InputError("params", f"a dict is required, got {type(params).__name__}")
        rows = lineage.normalise_inputs(_derivation_inputs(inputs))
        return method, method_version, lineage.params_json(params), rows, output, cutoff

    @staticmethod
    def _derive_in(tx: Tx, at: Any, scope: Scope, method: str, method_version: str, params_text: str,
                   rows: list[dict[str, Any]], output: FactIn, cutoff: dt.datetime | None) -> FactVersion:
        available_by = lineage.check_inputs(tx, scope, rows, cutoff)
        did, stored = lineage.standing_id(tx, scope, lineage.derivation_id(
            method, method_version, params_text, rows, facts.KeySpec.of(scope, output).uid))
        source = Source(id=f"derivation:{did}", kind="derivation",
                        authority=Authority.DERIVED, publisher=f"method:{method}",
                        available_by=available_by,
                        title=f"{method} {method_version}")
        new = facts.record_source(tx, scope, source, at, stored)
        if new:
            tx.run("lineage.mark_derivation", uid=facts.source_uid(scope, source.id),
                   method=method, method_version=method_version, params=params_text,
                   cutoff=cutoff, inputs=rows, **facts.scope_params(scope))
        out = output.model_copy(update={"sources": (source.id,), "available_by": available_by})
        written = facts.write_facts(tx, scope, [out], at)
        if not new and written.created:
            raise InputError("output", f"derivation {did} already produced another value from "
                             "these inputs; a changed formula needs a new method_version")
        vid = written.version_ids[0]
        if not written.created:  # only an existing version can lie upstream of an input
            lineage.refuse_cycles(tx, scope, [r["version_id"] for r in rows], vid)
        return facts.versions_by_id(tx, scope, [vid])[0]

    def impact(
        self,
        scope: Scope,
        *,
        source_id: str | None = None,
        version_id: str | None = None,
        max_depth: int | None = None,
        cutoff: dt.datetime | None = None,
        known_at: dt.datetime | None = None,
    ) -> lineage.ImpactReport:
        """What lies downstream of a source (as if retracted) or a version (as if invalid)."""
        scope = self.scope(scope)
        if (source_id is None) == (version_id is None):  # before server_now, a query
            raise InputError("impact", "give exactly one of source_id= or version_id=")
        limits.check_id("source_id", source_id, optional=True)
        limits.check_id("version_id", version_id, optional=True)
        limits.check_int("max_depth", max_depth, 0, limits.DEPTH, optional=True)
        cutoff = _aware("cutoff", cutoff)
        known_at = _aware("known_at", known_at) or self.recorded_through(scope)
        return self._db.read(
            lambda tx: lineage.impact(tx, scope, source_id=source_id, version_id=version_id,
                                      max_depth=max_depth, cutoff=cutoff, known_at=known_at),
            "impact",
        )

    def retract_source(self, scope: Scope, source_id: str, *, reason: str,
                       by: str | None = None) -> lineage.ImpactReport:
        """Withdraw a source: retract it and every derivation its impact makes invalid.

        One transaction; running it again changes nothing; reads with known_at before it
        still see the old state. Returns the impact report it applied.
        """
        scope = self.scope(scope)
        limits.check_id("source_id", source_id)
        _reason("a retraction", reason)
        limits.check_id("by", by, optional=True, limit=limits.NAME_BYTES)

        def work(tx: Tx, at: Any) -> lineage.ImpactReport:
            report = lineage.impact(tx, scope, source_id=source_id, version_id=None,
                                    max_depth=None, cutoff=None, known_at=at)
            uids = [facts.source_uid(scope, source_id), *lineage.retraction_targets(report, scope)]
            tx.run("lifecycle.retract", uids=uids, record_id=digest(scope.id, source_id, at,
                                                                      prefix="ret_"),
                   reason=reason, by=by, cause=f"source:{source_id}", recorded_at=at,
                   **facts.scope_params(scope))
            return report

        return self.write(scope, "retract_source", work)

    def lineage(self, scope: Scope, version_id: str, direction: str = "upstream",
                max_depth: int | None = None, *, known_at: dt.datetime | None = None) -> Any:
        """The lineage of a version as a ``networkx.DiGraph`` (edges from input to output),
        as recorded by ``known_at`` (default now): what a number was built on then."""
        scope = self.scope(scope)
        limits.check_id("version_id", version_id)
        if direction not in ("upstream", "downstream"):  # before server_now, a query
            raise InputError("direction", f"must be 'upstream' or 'downstream', got {limits.shown(direction)}")
        limits.check_int("max_depth", max_depth, 0, limits.DEPTH, optional=True)
        known_at = _aware("known_at", known_at) or self.recorded_through(scope)
        return self._db.read(
            lambda tx: lineage.lineage_graph(tx, scope, version_id, direction, max_depth,
                                             known_at),
            "lineage",
        )

    # ------------------------------------------------------------ agent memory (governance)
    # Typed memories with write gates and a candidate queue, scoped search with hard
    # filters first, a context builder that records what it injected, and the trace of
    # a memory through a context (governance.py, search.py, context.py).

    def remember_fact(self, scope: Scope, fact: FactIn) -> Remembered:
        """The gated fact write for agents: live if its sources and entity are recorded,
        else kept as a candidate with the reasons (``assert_fact`` raises instead)."""
        scope = self.scope(scope)
        _instance("fact", fact, FactIn)
        return self.write(scope, "remember_fact",
                          lambda tx, at: governance.remember_fact(tx, scope, fact, at))

    def remember_experience(self, scope: Scope, experience: ExperienceIn) -> Remembered:
        """Store an experience: live with an observed outcome and validating evidence,
        else a candidate. An outcome that echoes injected memory raises EchoError."""
        scope = self.scope(scope)
        _instance("experience", experience, ExperienceIn)
        return self.write(scope, "remember_experience",
                          lambda tx, at: governance.remember_experience(tx, scope, experience, at))

    def save_task_state(self, scope: Scope, state: TaskStateIn, *,
                        expected_revision: int | None = None) -> Remembered:
        """Save a new revision of a task's state (a candidate if it has no task id).

        With ``expected_revision`` (0 for a new task), ConcurrentWriteError unless the
        task is at that revision; re-sending the current state changes nothing.
        """
        scope = self.scope(scope)
        _instance("state", state, TaskStateIn)
        _revision(expected_revision)
        call = uuid.uuid4().hex  # one per call: the same for its retries
        return self.write(scope, "save_task_state", lambda tx, at: governance.save_task_state(
            tx, scope, state, at, call, expected_revision))

    def memories(self, scope: Scope, memory_ids: list[str]) -> list[Experience | TaskState]:
        """Experiences and task states by id (unknown ids are left out), as of now."""
        scope = self.scope(scope)
        memory_ids = limits.check_ids("memory_ids", memory_ids)
        known_at = self.recorded_through(scope)
        found = self._db.read(lambda tx: governance.load_memories(
            tx, scope, memory_ids, known_at=known_at, cutoff=None), "memories")
        return [found[m] for m in memory_ids if m in found]

    def memories_at(self, scope: Scope, memory_ids: list[str], *, cutoff: dt.datetime,
                    known_at: dt.datetime) -> tuple[dict[str, Experience | TaskState], dict[str, str]]:
        """Experiences and task states by id as a search at (cutoff, known_at) would keep
        them: the live ones by id, and for each other id of one the filter that removes it
        (search.memories_at)."""
        scope = self.scope(scope)
        memory_ids = limits.check_ids("memory_ids", memory_ids)
        cutoff, known_at = _aware("cutoff", cutoff), _aware("known_at", known_at)
        if cutoff is None or known_at is None:
            raise InputError("cutoff" if cutoff is None else "known_at", "a judgement at a time needs the time")
        return self._db.read(lambda tx: searching.memories_at(tx, scope, memory_ids, cutoff, known_at),
                             "memories")

    def candidates(self, scope: Scope, *, status: str | None = "pending") -> list[Candidate]:
        """Candidates awaiting review (``status=None``: all, with their computed status)."""
        scope = self.scope(scope)
        if status not in (None, "pending", "approved", "rejected"):
            raise InputError("status", "must be None, 'pending', 'approved' or 'rejected'")
        return self._db.read(lambda tx: governance.list_candidates(tx, scope, status=status),
                             "candidates")

    def approve(self, scope: Scope, candidate_id: str, *, by: str) -> Remembered:
        """Make a candidate live, vouched for by ``by`` (see governance.approve)."""
        scope = self.scope(scope)
        limits.check_id("candidate_id", candidate_id)
        if not by:
            raise InputError("by", "an approval names who made it")
        limits.check_id("by", by, limit=limits.NAME_BYTES)
        return self.write(scope, "approve",
                          lambda tx, at: governance.approve(tx, scope, candidate_id, by, at))

    def reject(self, scope: Scope, candidate_id: str, reason: str, *,
               by: str | None = None) -> Candidate:
        """Record that a candidate must never become live, and why."""
        scope = self.scope(scope)
        limits.check_id("candidate_id", candidate_id)
        _reason("a rejection", reason)
        limits.check_id("by", by, optional=True, limit=limits.NAME_BYTES)
        return self.write(scope, "reject", lambda tx, at: governance.reject(
            tx, scope, candidate_id, reason, by, at))

    def search(
        self,
        scope: Scope,
        *,
        text: str | None = None,
        types: Iterable[str] | None = None,
        entity: str | None = None,
        task_id: str | None = None,
        cutoff: dt.datetime | None = None,
        known_at: dt.datetime | None = None,
        require: Require | None = None,
        limit: int = 10,
        match: str = "all",
        mode: str = "text",
        embedder: Any = None,
        unembedded: str = "refuse",
    ) -> SearchResult:
        """Memories matching ``text`` that pass every hard filter, ranked, at most ``limit``.

        Filters (scope, type, entity, task, known_at, cutoff - default: known_at -,
        status, evidence) run before ranking and limit; fact hits carry what ``as_of``
        gives for their key. See graphmem/search.py for query syntax and ranking.

        ``mode``: ``text`` (full text), ``semantic`` (similarity to ``text`` by the
        embedder: this call's, else the memory's) or ``hybrid`` (both fused); every filter
        still runs first (graphmem/retrieval/rank.py). A search never writes: memories with
        no vector yet are refused (``unembedded="refuse"``: run ``embed`` first) or ranked
        after the embedded ones of their authority tier (``"last"``).
        """
        scope = self.scope(scope)
        rank.check_unembedded(unembedded)
        emb = retrieval.as_embedder(embedder) or self._embedder
        q = searching.make_query(
            scope, text=text, match=match, types=types, entity=entity, task_id=task_id,
            cutoff=_aware("cutoff", cutoff), known_at=_aware("known_at", known_at) or self._now(),
            require=require, limit=limit, mode=mode, embedder=emb.name if emb else None)
        if mode != "text":
            return retrieval.search(self, scope, q, emb, unembedded=unembedded)
        # one auto-commit read per statement: a search is usually one statement
        return self._db.read_each(lambda tx: searching.search(tx, scope, q), "search")

    def embed(self, scope: Scope, *, embedder: Any = None, switch: bool = False,
              progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
        """Embed every memory of the scope not yet embedded by the embedder (this call's,
        else the memory's); ``switch`` re-embeds a scope made with another one. Resumable:
        see graphmem/retrieval/store.py."""
        scope = self.scope(scope)
        _flag("switch", switch)
        emb = retrieval.as_embedder(embedder) or self._embedder
        if emb is None:
            raise InputError("embedder", "no embedder: pass embedder= here or to Memory")
        return retrieval.backfill(self, scope, emb, switch=switch, progress=progress)

    def build_context(self, scope: Scope, *, task_id: str, memories: Any, token_budget: int,
                      tokenizer: Callable[[str], int] | None = None, cutoff: dt.datetime | None = None,
                      known_at: dt.datetime | None = None) -> Context:
        """Render ``memories`` (a SearchResult of this scope, or hits of one search) within
        ``token_budget`` and record the context snapshot (see graphmem/context.py).

        Every memory is re-read in this scope at the search's cutoff and known_at: what
        is rendered is what the graph holds (an erased memory is left out), and a hit of
        another scope is refused with InputError. Hits of experiences and task states
        alone do not say when they were read: ``cutoff`` and ``known_at`` (both) say it,
        else they are read as of now."""
        scope = self.scope(scope)
        if not isinstance(task_id, str) or not task_id:
            raise InputError("task_id", "a context belongs to a task: give its id")
        limits.check_id("task_id", task_id)
        limits.check_int("token_budget", token_budget, 1, limits.TOKEN_BUDGET)
        if tokenizer is not None and not callable(tokenizer):
            raise InputError("tokenizer", "must be a callable str -> int")
        cutoff, known_at = _aware("cutoff", cutoff), _aware("known_at", known_at)
        if (cutoff is None) != (known_at is None):
            raise InputError("cutoff" if cutoff is None else "known_at", "give both times, or neither")
        given = contexts.check_memories(scope, memories, None if cutoff is None else (cutoff, known_at))
        call = uuid.uuid4().hex  # one per call: the same for its retries
        return self.write(scope, "build_context", lambda tx, at: contexts.record(
            tx, scope, task_id=task_id, memories=given, token_budget=token_budget,
            tokenizer=tokenizer, at=at, call=call))

    def context_snapshot(self, scope: Scope, snapshot_id: str) -> Context:
        """A recorded context snapshot: what was considered, included, cut, and rendered."""
        scope = self.scope(scope)
        limits.check_id("snapshot_id", snapshot_id)
        return self._db.read(lambda tx: contexts.load(tx, scope, snapshot_id), "context_snapshot")

    def context_snapshots(self, scope: Scope, *, task_id: str | None = None, offset: int = 0,
                          limit: int = 20) -> list[Context]:
        """Recorded context snapshots, newest first: ``limit`` (at most
        ``limits.SEARCH_LIMIT``) from ``offset`` on, of one task when ``task_id`` is given."""
        scope = self.scope(scope)
        limits.check_id("task_id", task_id, optional=True)
        offset = limits.check_int("offset", offset, 0, limits.PAGE_OFFSET)
        limit = limits.check_int("limit", limit, 1, limits.SEARCH_LIMIT)
        return self._db.read(lambda tx: contexts.recent(tx, scope, task_id, offset, limit),
                             "context_snapshots")

    def trace(self, scope: Scope, snapshot_id: str, memory_id: str | None = None, *,
              entity: str | None = None, attribute: str | None = None,
              period: Period | None = None) -> TraceResult:
        """What happened to a memory (or every version of a fact key) on its way into the
        context of ``snapshot_id``: included, cut, not considered, filtered (by which
        filter), candidate only, not found by the search, or not stored."""
        scope = self.scope(scope)
        if (memory_id is None) == (entity is None or attribute is None):
            raise InputError("trace", "give memory_id=, or entity= and attribute=")
        limits.check_id("snapshot_id", snapshot_id)
        limits.check_id("memory_id", memory_id, optional=True)
        _key_args(entity=entity, attribute=attribute, optional=True)
        _instance("period", period, Period, optional=True)
        return self._db.read(lambda tx: contexts.trace(
            tx, scope, snapshot_id, memory_id, entity=entity, attribute=attribute,
            period=period), "trace")
