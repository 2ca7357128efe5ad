"""The write path, offline: the graph the online write path would write, decided without
a database and written as the input of Neo4j's offline importer.

A :class:`Build` takes the calls a loader makes on a :class:`~graphmem.Memory` -
``put_entity(scope, entity)`` and ``record(scope, sources=, items=)`` - in the same
order. Each call is one transaction, with its own ``recorded_at``, checked by the same
functions as online (``facts._assertions``: entities and sources recorded, the
available_by rule, value encoding, idempotency keys), so a call the online path
refuses is refused here with the same error, and nothing of it is kept. A filing (one
entity's facts from one source) can come as rows instead of FactIns:
:meth:`Build.record_rows`, the same checks without a FactIn and an Assertion a row.

Deciding evidence or a new version is the read rule's work online (``fact.read``, at
the assertion's own available_by). A build decides it per fact key, from the key's
assertions in the order they were made, sorted by key: held in Python up to
:data:`PENDING_ROWS` assertions since the last flush (a company's, as a loader flushes),
beyond that in an on-disk spool (SQLite), so memory stays bounded whatever the size of
the build. For the keys a build takes, the read rule reduces to this (DESIGN.md
section 3):

* a key's assertions all come from one publisher at one authority, in non-decreasing
  available_by, and nothing is invalidated, retracted, resolved or erased - so every
  stored version is live and kept, and a version survives the supersede step exactly
  when its latest evidence is the key's latest evidence (no other version has evidence
  from that publisher later than it);
* an assertion whose idempotency key the key already holds changes nothing; one whose
  value a surviving version has adds evidence to it; any other makes a new version
  (a value returning to an older one included).

Keys outside that (a second publisher or authority, an earlier available_by after a
later one) are refused: a build is for initial loads of filings, where each company's
filings come in order of publication. The property test (tests/test_bootstrap.py)
holds this against the online path on random histories.

What a build cannot decide per call it decides at :meth:`Build.flush`: a loader flushes
after each company. Facts about an entity that was flushed are refused (its keys are
written), as is renaming an entity that has facts (the online path would re-index
their text). ``recorded_at`` is the build's start plus one microsecond per
transaction, in call order (the ticks reserved for parts included): the online order,
on the build's own clock.
"""

from __future__ import annotations

import datetime as dt
import json
import sqlite3
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from itertools import groupby
from operator import itemgetter
from pathlib import Path
from typing import Any, NamedTuple, Protocol

from . import facts, importcsv, indexing, limits
from .errors import InputError
from .importcsv import (
    ABOUT,
    CLOCK,
    ENTITY,
    EVIDENCED_BY,
    FACT,
    FACT_KEY,
    LOAD_MARK,
    SOURCE,
    VERSION_OF,
    ImportInput,
    Layout,
    text,
)
from .memory import entity_argument, record_args
from .models import Authority, Entity, FactIn, FactRow, Period, Scope, Source, WriteReport, check_scope
from .probe import Templates
from .values import digest, encode_typed, typed


class Sink(Protocol):
    """Where a build's nodes and relationships go (graphmem.importcsv.GraphCsv)."""

    def add(self, layout: Layout, row: Sequence[Any]) -> None: ...

    def add_line(self, layout: Layout, line: str) -> None: ...

    def extend(self, part: ImportInput) -> None: ...


_SCHEMA = """
CREATE TABLE entities (uid TEXT PRIMARY KEY, scope TEXT NOT NULL, id TEXT NOT NULL, name TEXT, kind TEXT,
                       aliases TEXT NOT NULL, recorded_at TEXT NOT NULL, facts INTEGER NOT NULL DEFAULT 0,
                       flushed INTEGER NOT NULL DEFAULT 0, part INTEGER NOT NULL DEFAULT 0) WITHOUT ROWID;
CREATE TABLE sources (uid TEXT PRIMARY KEY, scope TEXT NOT NULL, id TEXT NOT NULL, kind TEXT NOT NULL,
                      authority TEXT NOT NULL, publisher TEXT NOT NULL, uri TEXT, title TEXT, meta TEXT NOT NULL,
                      available_by TEXT NOT NULL, recorded_at TEXT NOT NULL, part INTEGER NOT NULL DEFAULT 0)
                      WITHOUT ROWID;
CREATE TABLE marks (uid TEXT PRIMARY KEY, scope TEXT NOT NULL, kind TEXT NOT NULL, id TEXT NOT NULL, digest TEXT,
                    report TEXT, recorded_at TEXT NOT NULL, part INTEGER NOT NULL DEFAULT 0) WITHOUT ROWID;
CREATE TABLE pending (seq INTEGER PRIMARY KEY, key_uid TEXT NOT NULL, scope TEXT NOT NULL,
                      entity_uid TEXT NOT NULL, entity TEXT NOT NULL, attribute TEXT NOT NULL, unit TEXT NOT NULL,
                      definition TEXT NOT NULL, period TEXT NOT NULL, period_start TEXT, period_end TEXT NOT NULL,
                      source_uid TEXT NOT NULL, idem TEXT NOT NULL, value_type TEXT NOT NULL, value TEXT NOT NULL,
                      value_num REAL, available_by TEXT NOT NULL, recorded_at TEXT NOT NULL);
"""
_PENDING = "INSERT INTO pending VALUES (?" + ", ?" * 17 + ")"
PENDING_ROWS = 100_000  # assertions held in Python between flushes (about 60 MB) before they go to disk
_BATCH = 500  # uids per lookup (SQLite allows 999 parameters at the least)


@dataclass
class Totals:
    """What a build wrote so far, by outcome (as a WriteReport counts an online write)."""

    created: int = 0
    evidence_added: int = 0
    unchanged: int = 0
    keys: int = 0

    def add(self, other: Totals) -> None:
        self.created += other.created
        self.evidence_added += other.evidence_added
        self.unchanged += other.unchanged
        self.keys += other.keys


@dataclass
class _Version:
    version_id: str
    value_type: str
    value: str
    revision: int
    first: tuple[Any, ...]  # the pending row that made it
    latest: str  # its latest evidence's available_by (ISO, UTC: orders as the times do)
    evidence: list[tuple[Any, ...]] = field(default_factory=list)


class Build:
    """An offline build of one new database; see the module docstring.

    ``sink`` receives the rows (``GraphCsv`` for the importer), ``templates`` renders
    search text (graphmem.probe), ``folder`` holds the spool. ``now`` fixes the clock's
    start (tests); by default it is the moment the build starts.

    A build can be made in parts (graphmem.loaders.bootstrap: a company each, in
    processes of their own): the whole build reserves ticks of its clock
    (:meth:`reserve`), a part is a Build with the same ``now`` whose transactions take
    ``ticks`` (a range of that reservation; more transactions than it holds are
    refused), and the whole build takes each finished part (:meth:`take`).
    """

    def __init__(self, folder: Path, sink: Sink, templates: Templates, now: dt.datetime | None = None,
                 ticks: range | None = None):
        self.folder = folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(folder / "build.sqlite3")
        self._db.executescript("PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF;" + _SCHEMA)
        self._open = True
        self._sink = sink
        self._templates = templates
        self.start = (now or dt.datetime.now(dt.UTC)).astimezone(dt.UTC).replace(tzinfo=dt.UTC)
        self._ticks = ticks.start if ticks is not None else 0
        self._stop = ticks.stop if ticks is not None else None
        self._capacity = len(ticks) - 1 if ticks is not None else None
        self.overflowed = False  # a transaction was refused: the part's ticks were all taken
        self._pending: list[tuple[Any, ...]] = []  # assertions since the last flush, unless on disk
        self._on_disk = False  # they outgrew PENDING_ROWS: they are in the spool's table
        self._seq = 0  # the order assertions were made in
        self._keys: dict[tuple[Any, ...], tuple[Any, ...]] = {}  # Build._key
        self._periods: dict[tuple[dt.date | None, dt.date], tuple[str, str | None, str]] = {}  # Build._key
        self._clocks: dict[str, str] = {}  # tenant -> its last recorded_at
        self._scopes: dict[str, Scope] = {}  # by scope id: a build names few
        self.totals = Totals()

    # ------------------------------------------------------------ the calls

    def scope(self, scope: Any) -> Scope:
        """A Scope, checked as ``Memory.scope`` checks it (a build requires no keys)."""
        return check_scope(scope, ())

    def _next(self) -> dt.datetime:
        if self._stop is not None and self._ticks + 1 >= self._stop:
            self.overflowed = True
            raise InputError("offline build", f"more than {self._capacity} transactions in one part of the build "
                             "(a company: its entity, filings and load mark)")
        return self.start + dt.timedelta(microseconds=self._ticks + 1)

    def reserve(self, ticks: int) -> range:
        """``ticks`` microseconds of the build's clock, from its next, for parts of the
        build (see the class docstring); its own next transaction comes after them."""
        first = self._ticks
        self._ticks += ticks
        return range(first, self._ticks)

    def holds(self, scope: Scope) -> bool:
        """Whether anything was recorded in ``scope`` (an entity, a source or a load mark)."""
        return any(self._db.execute(f"SELECT 1 FROM {table} WHERE scope = ? LIMIT 1", (scope.id,)).fetchone()
                   for table in ("entities", "sources", "marks"))

    def take(self, part: ImportInput, spool: Path, clocks: dict[str, str], scopes: dict[str, Scope],
             totals: Totals) -> None:
        """A part made by a Build in a reserved range of this one's clock (and finished):
        its importer files (``ImportInput`` of its closed sink), its entities, sources and
        load marks (from its spool ``spool``: this build's later calls see them, as a
        build's own, and ``finish`` leaves them to the part's files), tenant clocks,
        scopes and totals."""
        self._db.execute("ATTACH DATABASE ? AS part", (str(spool / "build.sqlite3"),))
        try:
            self._db.execute("INSERT INTO entities SELECT uid, scope, id, name, kind, aliases, recorded_at, facts, "
                             "1, 1 FROM part.entities")
            self._db.execute("INSERT INTO sources SELECT uid, scope, id, kind, authority, publisher, uri, title, "
                             "meta, available_by, recorded_at, 1 FROM part.sources")
            self._db.execute("INSERT INTO marks SELECT uid, scope, kind, id, digest, report, recorded_at, 1 "
                             "FROM part.marks")
        finally:
            self._db.commit()  # a database is detached outside a transaction
            self._db.execute("DETACH DATABASE part")
        self._sink.extend(part)
        for tenant, last in clocks.items():
            self._clocks[tenant] = max(last, self._clocks.get(tenant, last))
        for scope_id, scope in scopes.items():
            self._scopes.setdefault(scope_id, scope)
        self.totals.add(totals)

    @property
    def clocks(self) -> dict[str, str]:
        """Each tenant's last recorded_at so far (ISO)."""
        return dict(self._clocks)

    @property
    def scopes(self) -> dict[str, Scope]:
        return dict(self._scopes)

    @property
    def templates(self) -> Templates:
        return self._templates

    def _commit(self, scope: Scope, at: dt.datetime) -> None:
        """The transaction went through: the clock moves on, as ``admin.tick`` had."""
        self._ticks += 1
        self._clocks[scope.tenant] = at.isoformat()
        self._scopes.setdefault(scope.id, scope)

    def put_entity(self, scope: Scope, entity: Entity) -> None:
        """As ``Memory.put_entity``: create the entity, or update its names."""
        scope = self.scope(scope)
        entity = entity_argument(entity)
        at = self._next()
        uid = facts.entity_uid(scope, entity.id)
        row = self._db.execute("SELECT name, kind, aliases, facts FROM entities WHERE uid = ?", (uid,)).fetchone()
        names = (entity.name, entity.kind, json.dumps(list(entity.aliases)))
        if row is None:
            self._db.execute("INSERT INTO entities (uid, scope, id, name, kind, aliases, recorded_at) "
                             "VALUES (?, ?, ?, ?, ?, ?, ?)", (uid, scope.id, entity.id, *names, at.isoformat()))
        elif tuple(row[:3]) != names:
            if row[3]:
                raise InputError(f"entity {entity.id!r}", "renamed after facts about it were recorded; an offline "
                                 "build takes each entity's names before its facts")
            self._db.execute("UPDATE entities SET name = ?, kind = ?, aliases = ? WHERE uid = ?", (*names, uid))
        self._commit(scope, at)

    def record(self, scope: Scope, *, sources: Iterable[Source] = (), items: Iterable[FactIn] = (),
               marks: Iterable[dict[str, Any]] = ()) -> WriteReport:
        """As ``Memory.record``: sources and facts in one transaction, all or nothing, with
        the ``load.mark`` of each of ``marks`` in it (a filings loader's bookkeeping).

        The facts' fates (new version, evidence, unchanged) are decided at ``flush``;
        the report counts rows and the sources recorded."""
        scope = self.scope(scope)
        sources, items = record_args(sources, items)
        at = self._next()
        new = self._new_sources(scope, sources)
        columns = [self._key(scope, f.entity, f.attribute, f.unit, f.definition, f.period) for f in items]
        entity_uids = sorted({facts.entity_uid(scope, entity) for entity in {fact.entity for fact in items}})
        known = self._prepared(scope, items, new, entity_uids)
        assertions = facts._assertions(scope, items, [facts.KeySpec.of(scope, f) for f in items], known, 0)
        self._check_open(entity_uids)
        recorded_at, seq = at.isoformat(), self._seq
        held = [(seq + n, *columns[a.row], a.source_uid, a.idem, a.value_type, a.value, a.value_num, a.available_iso,
                 recorded_at) for n, a in enumerate(assertions, 1)]
        self._recorded(scope, at, new, held, entity_uids, marks)
        return WriteReport(rows=len(items), sources_recorded=len(new), chunks=1)

    def record_rows(self, scope: Scope, source: Source, entity: str, rows: Sequence[FactRow], *,
                    marks: Iterable[dict[str, Any]] = ()) -> WriteReport:
        """``record(scope, sources=[source], items=..., marks=marks)`` of one FactIn per row,
        ``FactIn(entity=entity, attribute=, unit=, period=, value=, sources=(source.id,))``,
        without building them: a filing is one entity's facts from one source, and a
        FactIn and an Assertion a row were a fifth of a build's CPU.

        The same checks and errors: the first row goes through a FactIn and the checks
        of ``record`` (its entity, source and available_by stand for every row's), the
        others through FactIn's bounds (see :func:`_checked`); each row then makes the
        assertion ``record`` would."""
        scope = self.scope(scope)
        rows = list(_iterable_rows(rows))
        limits.check_count("items", len(rows), limits.RECORD_ITEMS)
        if not rows:
            return self.record(scope, sources=[source], marks=marks)
        (source,), _ = record_args([source], ())
        first = _fact(entity, source.id, rows, 0)
        rows = _checked(entity, source.id, rows)
        at = self._next()
        new = self._new_sources(scope, [source])
        uids = [facts.entity_uid(scope, entity)]
        (assertion,) = facts._assertions(scope, [first], [facts.KeySpec.of(scope, first)],
                                         self._prepared(scope, [first], new, uids), 0)
        self._check_open(uids)
        recorded_at, seq = at.isoformat(), self._seq
        source_uid, available = assertion.source_uid, assertion.available_iso
        held, key = [], self._key
        for n, (attribute, unit, period, value) in enumerate(rows, 1):
            columns = key(scope, entity, attribute, unit, "", period)
            value_type, value_text, number = encode_typed(value)  # _checked: typed
            held.append((seq + n, *columns, source_uid,
                         facts.idempotency_key(columns[0], source_uid, value_type, value_text, available),
                         value_type, value_text, number, available, recorded_at))
        self._recorded(scope, at, new, held, uids, marks)
        return WriteReport(rows=len(rows), sources_recorded=len(new), chunks=1)

    def _recorded(self, scope: Scope, at: dt.datetime, new: list[Source], held: list[tuple[Any, ...]],
                  entity_uids: list[str], marks: Iterable[dict[str, Any]]) -> None:
        """A transaction's writes, once it is checked: its new sources, its assertions
        held for the next flush (numbered from ``self._seq``), its entities marked as
        having facts, its load marks; then the clock moves on."""
        recorded_at = at.isoformat()
        self._db.executemany(
            "INSERT INTO sources VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0)",
            [(facts.source_uid(scope, s.id), scope.id, s.id, s.kind, s.authority.value, s.publisher_id, s.uri,
              s.title, json.dumps(s.meta, sort_keys=True), s.available_by.isoformat(), recorded_at) for s in new])
        self._seq += len(held)
        self._hold(held)
        self._db.executemany("UPDATE entities SET facts = 1 WHERE uid = ?", [(uid,) for uid in entity_uids])
        self._marks(scope, marks, recorded_at)
        self._commit(scope, at)

    def _key(self, scope: Scope, entity: str, attribute: str, unit: str, definition: str, period: Period
             ) -> tuple[Any, ...]:
        """A fact's key as the columns of a pending row (``_KEY``, its uid, to ``_END``),
        made once per key since the last flush (at most PENDING_ROWS of them), so that a
        key reported again (a filing repeats the year before) is not hashed again; a
        period's texts once per period."""
        memo = (scope.id, entity, attribute, unit, definition, period.start, period.end)
        found = self._keys.get(memo)
        if found is None:
            if len(self._keys) >= PENDING_ROWS:
                self._keys.clear()
            texts = self._periods.get(memo[5:])
            if texts is None:
                texts = self._periods[memo[5:]] = _period_texts(period)
            found = self._keys[memo] = (
                facts.key_uid(scope, entity, attribute, unit, definition, texts[0]), scope.id,
                facts.entity_uid(scope, entity), entity, attribute, unit, definition, *texts)
        return found

    def _hold(self, rows: list[tuple[Any, ...]]) -> None:
        """Keep a transaction's assertions for the next flush (see the module docstring)."""
        if not self._on_disk and len(self._pending) + len(rows) <= PENDING_ROWS:
            self._pending.extend(rows)
            return
        self._db.executemany(_PENDING, self._pending + rows)
        self._pending.clear()
        self._on_disk = True

    def mark(self, scope: Scope, mark: dict[str, Any]) -> None:
        """A ``load.mark`` in a transaction of its own (a company's, after its filings)."""
        scope = self.scope(scope)
        at = self._next()
        self._marks(scope, [mark], at.isoformat())
        self._commit(scope, at)

    def _marks(self, scope: Scope, marks: Iterable[dict[str, Any]], recorded_at: str) -> None:
        """As ``load.mark``: a mark's kind and id are set when it is created; its digest,
        report and recorded_at whenever it is written."""
        for m in marks:
            if self._db.execute("SELECT 1 FROM marks WHERE uid = ? AND part = 1", (m["uid"],)).fetchone():
                raise InputError(f"load mark {m['id']!r}", "written by a part of this build (a company of a "
                                 "universe) already: an offline build writes each company once")
            self._db.execute(
                "INSERT INTO marks VALUES (?, ?, ?, ?, ?, ?, ?, 0) ON CONFLICT (uid) DO UPDATE SET "
                "digest = excluded.digest, report = excluded.report, recorded_at = excluded.recorded_at",
                (m["uid"], scope.id, m["kind"], m["id"], m["digest"], m["report"], recorded_at))

    def marks_of(self, scope: Scope, uids: Sequence[str]) -> list[dict[str, Any]]:
        """As ``load.marks``: the marks with these uids in this scope."""
        return [{"kind": kind, "id": ident, "digest": digest_, "report": report}
                for kind, ident, digest_, report, mark_scope in self._select(
                    "SELECT kind, id, digest, report, scope FROM marks WHERE uid IN ({})", list(uids))
                if mark_scope == scope.id]

    def publishers(self, scope: Scope, uids: Sequence[str]) -> dict[str, str]:
        """The publisher of each of these sources recorded in this build, by uid."""
        return {uid: publisher for uid, publisher, source_scope in self._select(
            "SELECT uid, publisher, scope FROM sources WHERE uid IN ({})", list(uids)) if source_scope == scope.id}

    def _new_sources(self, scope: Scope, sources: list[Source]) -> list[Source]:
        """The sources not recorded yet; a source recorded with other fields is refused
        (``facts.record_source``'s rule and message)."""
        new: dict[str, Source] = {}
        for source in sources:
            uid = facts.source_uid(scope, source.id)
            stored = self._sources([uid]).get(uid) or new.get(uid)
            if stored is None:
                new[uid] = source
            elif changed := facts.source_changed(source, facts.source_params(scope, stored)):
                raise changed
        return list(new.values())

    def _prepared(self, scope: Scope, items: list[FactIn], new: list[Source], entity_uids: list[str]
                  ) -> facts.Prepared:
        """What ``write.prepare`` would return for these facts (about ``entity_uids``):
        their sources' times and the entities missing from the scope."""
        uids = sorted({facts.source_uid(scope, sid) for sid in {sid for fact in items for sid in fact.sources}})
        found = self._sources(uids) | {facts.source_uid(scope, s.id): s for s in new}
        present = {uid for (uid,) in self._select("SELECT uid FROM entities WHERE uid IN ({})", entity_uids)}
        return facts.Prepared(
            sources={uid: facts.SourceState(s.available_by, False) for uid, s in found.items()},
            missing_entities=set(entity_uids) - present, revisions={})

    def _check_open(self, entity_uids: list[str]) -> None:
        for (entity_id,) in self._select("SELECT id FROM entities WHERE flushed = 1 AND uid IN ({})", entity_uids):
            raise InputError(f"entity {entity_id!r}", "its facts were already written (flushed); an offline build "
                             "takes each entity's facts before the next flush")

    def _select(self, query: str, uids: Sequence[str]) -> Iterator[tuple[Any, ...]]:
        for start in range(0, len(uids), _BATCH):
            part = uids[start:start + _BATCH]
            yield from self._db.execute(query.format(", ".join("?" * len(part))), part)

    def _sources(self, uids: Sequence[str]) -> dict[str, Source]:
        return {row[0]: _source(row) for row in self._select(
            "SELECT uid, id, kind, authority, publisher, uri, title, meta, available_by FROM sources "
            "WHERE uid IN ({})", uids)}

    # ------------------------------------------------------------ deciding

    def flush(self) -> Totals:
        """Decide and write every key recorded since the last flush (see module docstring)."""
        totals = Totals()
        if not self._pending and not self._on_disk:
            return totals
        writer = _KeyWriter(self, self._sink, self._templates, totals)
        if self._on_disk:
            rows: Iterable[tuple[Any, ...]] = self._db.execute("SELECT * FROM pending ORDER BY key_uid, seq")
            entities = [uid for (uid,) in self._db.execute("SELECT DISTINCT entity_uid FROM pending")]
        else:  # held in seq order: a stable sort keeps it within each key
            rows = sorted(self._pending, key=itemgetter(_KEY))
            entities = sorted({row[_ENTITY_UID] for row in self._pending})
        for _, group in groupby(rows, key=itemgetter(_KEY)):
            writer.key(list(group))
        self._db.executemany("UPDATE entities SET flushed = 1 WHERE uid = ?", [(uid,) for uid in entities])
        self._db.execute("DELETE FROM pending")
        self._pending.clear()
        self._keys.clear()
        self._periods.clear()
        self._on_disk = False
        self.totals.add(totals)
        return totals

    def finish(self, clocks: bool = True) -> Totals:
        """Flush, then write the entities, sources, load marks and (unless ``clocks`` is
        false: a part's are its whole build's to write) the tenant clocks; close the
        spool. The clock written never runs ahead of the real one: parts reserve time on
        it faster than it passes when they have nothing to write, so this waits for it
        (at most 66 ms a company, loaders/bootstrap.STRIDE)."""
        self.flush()
        for uid, scope_id, entity_id, name, kind, aliases, recorded_at in self._db.execute(
                "SELECT uid, scope, id, name, kind, aliases, recorded_at FROM entities WHERE part = 0"):
            scope = self._scopes[scope_id]
            self._sink.add(ENTITY, (uid, scope.tenant, scope_id, entity_id, name, kind, json.loads(aliases),
                                    recorded_at))
        for row in self._db.execute("SELECT uid, id, kind, authority, publisher, uri, title, meta, available_by, "
                                    "scope, recorded_at FROM sources WHERE part = 0"):
            scope, source = self._scopes[row[9]], _source(row)
            p = facts.source_params(scope, source)
            self._sink.add(SOURCE, (p["uid"], p["tenant"], p["scope"], p["id"], p["kind"], p["authority"],
                                    p["rank"], p["publisher"], p["uri"], p["title"], p["meta"],
                                    source.available_by.isoformat(), row[10]))
        for uid, scope_id, kind, ident, digest_, report, recorded_at in self._db.execute(
                "SELECT uid, scope, kind, id, digest, report, recorded_at FROM marks WHERE part = 0"):
            self._sink.add(LOAD_MARK, (uid, self._scopes[scope_id].tenant, scope_id, kind, ident, digest_, report,
                                       recorded_at))
        if clocks:
            ahead = (self.start + dt.timedelta(microseconds=self._ticks) - dt.datetime.now(dt.UTC)).total_seconds()
            time.sleep(max(0.0, ahead))
            for tenant, last in self._clocks.items():
                self._sink.add(CLOCK, (tenant, last, True))
        self.close()
        return self.totals

    def close(self) -> None:
        """Close the spool, what it holds kept on disk (a part's is read by its whole
        build: ``take``). ``finish`` closes it; a build given up on is closed with this."""
        if self._open:
            self._db.commit()
            self._db.close()
            self._open = False

    def entity(self, uid: str) -> tuple[Scope, Entity]:
        scope_id, entity_id, name, kind, aliases = self._db.execute(
            "SELECT scope, id, name, kind, aliases FROM entities WHERE uid = ?", (uid,)).fetchone()
        return self._scopes[scope_id], Entity(id=entity_id, name=name, kind=kind, aliases=tuple(json.loads(aliases)))

    def source(self, uid: str) -> Source:
        return self._sources([uid])[uid]


def _period_texts(period: Period) -> tuple[str, str | None, str]:
    """A period's text (``Period.text``) and its start's and end's ISO texts."""
    start, end = None if period.start is None else period.start.isoformat(), period.end.isoformat()
    return period.text, start, end


def _source(row: Sequence[Any]) -> Source:
    """A Source from a ``sources`` row (uid, id, kind, authority, publisher, uri, title,
    meta, available_by, ...)."""
    return Source(id=row[1], kind=row[2], authority=Authority(row[3]), publisher=row[4], uri=row[5],
                  title=row[6], meta=json.loads(row[7]), available_by=dt.datetime.fromisoformat(row[8]))


def _iterable_rows(rows: Any) -> Iterable[Any]:
    if isinstance(rows, (str, bytes, dict)) or not isinstance(rows, Iterable):
        raise InputError("rows", f"a list of (attribute, unit, period, value) rows is required, "
                                 f"got {type(rows).__name__}")
    return rows


def _fact(entity: str, source_id: str, rows: Sequence[Any], n: int) -> FactIn:
    """Row ``n`` as the FactIn it stands for (FactIn's checks and conversions), or
    FactIn's InputError naming the row."""
    row = rows[n]
    if not isinstance(row, tuple) or len(row) != 4:
        raise InputError(f"rows[{n}]", f"an (attribute, unit, period, value) tuple is required, got "
                                       f"{limits.shown(repr(row))}")
    attribute, unit, period, value = row
    try:
        return FactIn(entity=entity, attribute=attribute, unit=unit, period=period, value=value, sources=(source_id,))
    except InputError as exc:
        raise InputError(f"rows[{n}] {exc.where}", exc.reason) from exc


def _checked(entity: str, source_id: str, rows: Sequence[Any]) -> list[FactRow]:
    """The rows as their FactIns hold them, or the InputError of the first a FactIn
    refuses. A row of the types a FactIn keeps as they are (texts, a Period, a Decimal:
    what loaders send) is checked here against FactIn's bounds, each distinct text once;
    any other row is built as its FactIn, which converts or refuses it."""
    fits: dict[str, bool] = {}  # text -> within an identifier's bound
    out: list[FactRow] = []
    for n, row in enumerate(rows):
        if type(row) is tuple and len(row) == 4:
            attribute, unit, period, value = row
            if (type(attribute) is str and type(unit) is str and type(period) is Period and type(value) is Decimal
                    and attribute and _fits(attribute, fits) and _fits(unit, fits) and _decimal_fits(value)):
                out.append(row)
                continue
        fact = _fact(entity, source_id, rows, n)
        out.append((fact.attribute, fact.unit, fact.period, fact.value))
    return out


def _fits(text: str, seen: dict[str, bool]) -> bool:
    """Is ``text`` within an identifier's bound (as FactIn checks it)?"""
    found = seen.get(text)
    if found is None:
        found = seen[text] = limits.utf8_problem(text, limits.IDENTIFIER_BYTES) is None
    return found


def _decimal_fits(value: Decimal) -> bool:
    """Does FactIn take this decimal as it is (finite, within graphmem's bounds)?"""
    try:
        typed(value)
    except ValueError:
        return False
    return True


# pending row columns
(_SEQ, _KEY, _SCOPE, _ENTITY_UID, _ENTITY, _ATTRIBUTE, _UNIT, _DEFINITION, _PERIOD, _START, _END, _SOURCE, _IDEM,
 _TYPE, _VALUE, _NUM, _AVAILABLE, _RECORDED) = range(18)


class _KeyWriter:
    """One flush: each key's assertions decided in order and written to the sink, with
    the entities, sources and search-text templates the flush's keys share cached."""

    def __init__(self, build: Build, sink: Sink, templates: Templates, totals: Totals):
        self._build = build
        self._sink = sink
        self._templates = templates
        self._totals = totals
        self._entities: dict[str, tuple[Scope, Entity]] = {}
        self._sources: dict[str, Source] = {}
        self._feeds: dict[str, _Feed] = {}  # by source uid (a source is of one scope)
        self._publishers: dict[str, tuple[str, Authority]] = {}  # by source uid
        self._scope_text: dict[str, str] = {}  # a scope's fields of a line, by scope id
        self._patterns: dict[tuple[str, str, str], str] = {}
        self._tokens: dict[tuple[str, str], str] = {}  # a scope_token field, by entity and source uid
        self._tier_text: dict[tuple[int, int], str] = {}  # a tiers field, by versions and rank

    def key(self, rows: list[tuple[Any, ...]]) -> None:
        versions = self._decide(rows)
        first = rows[0]
        scope, _ = self._entity(first[_ENTITY_UID])
        revision = sum(1 + len(v.evidence) for v in versions)  # one per write, as online
        # The key's index of its evidence (fact.create_versions; DESIGN.md, "Reading a
        # key with a long history"): one publisher at one authority, so one feed, every
        # version's top that authority's rank, nothing flagged; written_at is the last write.
        feed = self._feed(first)
        tiers = self._tiers(len(versions), feed.rank)
        written_at = max(row[_RECORDED] for v in versions for row in (v.first, *v.evidence))
        # lines as importcsv writes them (uids, ISO dates and times are written as they are: no quote in them)
        key = first[_KEY]
        self._sink.add_line(FACT_KEY, (
            f'"{key}",{self._scope_fields(scope)},{text(first[_ENTITY])},{text(first[_ATTRIBUTE])},'
            f'{text(first[_UNIT])},{text(first[_DEFINITION])},{text(first[_PERIOD])},{_date_field(first[_START])},'
            f'"{first[_END]}",{revision},"{tiers}",{feed.feeds},,"{written_at}"\n'))
        self._sink.add_line(ABOUT, f'"{key}","{first[_ENTITY_UID]}"\n')
        for version in versions:
            self._version(scope, version, feed)
        self._totals.keys += 1

    def _decide(self, rows: list[tuple[Any, ...]]) -> list[_Version]:
        """The key's versions, from its assertions in the order they were made."""
        versions: list[_Version] = []
        landed: set[str] = set()  # idempotency keys the key holds
        latest = ""
        publisher: tuple[str, Authority] | None = None
        revision = 0
        for row in rows:
            if row[_IDEM] in landed:
                self._totals.unchanged += 1
                continue
            by = self._by(row[_SOURCE])
            publisher = publisher or by
            if by != publisher or row[_AVAILABLE] < latest:
                raise InputError(
                    f"{row[_ENTITY]} {row[_ATTRIBUTE]} [{row[_UNIT]}] {row[_PERIOD]}",
                    f"source {self._source(row[_SOURCE]).id!r} ({by[0]}, {by[1].value}, available "
                    f"{row[_AVAILABLE]}) follows evidence from {publisher[0]} ({publisher[1].value}) available "
                    f"{latest}: an offline build takes each key from one publisher at one authority, in order of "
                    "availability")
            revision += 1
            landed.add(row[_IDEM])
            same = None
            for v in versions:  # the one with the row's value, if it survived to the key's latest evidence
                if v.latest == latest and v.value == row[_VALUE] and v.value_type == row[_TYPE]:
                    same = v
                    break
            if same is None:
                versions.append(_Version("fv_" + row[_IDEM], row[_TYPE], row[_VALUE], revision, row, row[_AVAILABLE]))
                self._totals.created += 1
            else:
                same.evidence.append(row)
                same.latest = row[_AVAILABLE]
                self._totals.evidence_added += 1
            latest = row[_AVAILABLE]
        return versions

    def _by(self, source_uid: str) -> tuple[str, Authority]:
        """The source's publisher and authority (what a key's evidence must share)."""
        found = self._publishers.get(source_uid)
        if found is None:
            source = self._source(source_uid)
            found = self._publishers[source_uid] = source.publisher_id, source.authority
        return found

    def _feed(self, row: tuple[Any, ...]) -> _Feed:
        """The row's source's publisher and authority rank, as ``source.create`` stores
        them, with their fields of a key's and an evidence's line."""
        found = self._feeds.get(row[_SOURCE])
        if found is None:
            scope, _ = self._entity(row[_ENTITY_UID])
            params = facts.source_params(scope, self._source(row[_SOURCE]))
            publisher, rank = params["publisher"], params["rank"]
            found = self._feeds[row[_SOURCE]] = _Feed(
                rank, importcsv.field([f"{rank}{publisher}"], FACT_KEY, _FEEDS), f"{text(publisher)},{rank}")
        return found

    def _tiers(self, versions: int, rank: int) -> str:
        """A key's ``tiers`` field: its live versions at its feed's authority rank."""
        found = self._tier_text.get((versions, rank))
        if found is None:
            found = self._tier_text[versions, rank] = "\x1f".join(
                [str(versions) if t == rank else "0" for t in range(1, 5)])
        return found

    def _token(self, row: tuple[Any, ...]) -> str:
        """The ``scope_token`` field of a version of the row's entity from its source."""
        found = self._tokens.get((row[_ENTITY_UID], row[_SOURCE]))
        if found is None:
            found = self._tokens[row[_ENTITY_UID], row[_SOURCE]] = text(self._pattern("scope_token", row))
        return found

    def _scope_fields(self, scope: Scope) -> str:
        """A scope's tenant and id fields of a line (its id is JSON: it has quotes to double)."""
        found = self._scope_text.get(scope.id)
        if found is None:
            found = self._scope_text[scope.id] = f"{text(scope.tenant)},{text(scope.id)}"
        return found

    def _version(self, scope: Scope, v: _Version, feed: _Feed) -> None:
        first = v.first
        value_hash = digest(v.value_type, v.value)
        search = self._pattern("create", first).format(
            v.version_id, first[_IDEM], first[_SOURCE], v.value, v.value_type, value_hash, first[_KEY], first[_ENTITY],
            first[_ENTITY_UID], first[_ATTRIBUTE], first[_UNIT], first[_DEFINITION], first[_PERIOD])
        for row in v.evidence:
            search += self._pattern("append", row).format(row[_IDEM], row[_SOURCE], v.version_id)
        key, vid = first[_KEY], v.version_id
        number = "" if first[_NUM] is None else float.__repr__(first[_NUM])  # a float or None (encode)
        token = self._token(first)
        self._sink.add_line(FACT, (
            f'"{vid}",{self._scope_fields(scope)},"{key}",{text(v.value)},{text(v.value_type)},{number},'
            f'"{value_hash}","{first[_END]}",{_date_field(first[_START])},"{first[_AVAILABLE]}",'
            f'"{first[_RECORDED]}",{v.revision},{token},{text(search)}\n'))
        self._sink.add_line(VERSION_OF, f'"{vid}","{key}"\n')
        for row in (first, *v.evidence):
            self._sink.add_line(EVIDENCED_BY, f'"{vid}","{row[_SOURCE]}","{row[_IDEM]}","{row[_AVAILABLE]}",'
                                              f'"{row[_RECORDED]}","{key}",{feed.fields}\n')

    # what a flush's keys share, cached for the flush

    def _entity(self, uid: str) -> tuple[Scope, Entity]:
        found = self._entities.get(uid)
        if found is None:
            found = self._entities[uid] = self._build.entity(uid)
        return found

    def _source(self, uid: str) -> Source:
        found = self._sources.get(uid)
        if found is None:
            found = self._sources[uid] = self._build.source(uid)
        return found

    def _pattern(self, which: str, row: tuple[Any, ...]) -> str:
        """The probed template ``which`` (create, append, scope_token) for the row's entity
        and source, with the entity's, the source's and the scope's slots filled in, as a
        ``str.format`` pattern of what is left (``_SLOTS[which]``, in that order)."""
        cache = (which, row[_ENTITY_UID], row[_SOURCE])
        found = self._patterns.get(cache)
        if found is None:
            scope, entity = self._entity(row[_ENTITY_UID])
            source = self._source(row[_SOURCE])
            template = getattr(self._templates, which)(entity, source).fill(
                {"params.tenant": scope.tenant, "params.scope": scope.id,
                 "params.scope_token": indexing.scope_token(scope)}
                | _flat("entity", facts.entity_params(scope, entity))
                | _flat("s1" if which == "create" else "s2", facts.source_params(scope, source)))
            found = self._patterns[cache] = template.pattern(_SLOTS[which])
        return found


class _Feed(NamedTuple):
    """A source's publisher at its authority, as a key's and an evidence's lines hold it."""

    rank: int
    feeds: str  # the key's ``feeds`` field
    fields: str  # the evidence's ``publisher`` and ``top`` fields


_FEEDS = FACT_KEY.names.index("feeds")


def _date_field(iso: str | None) -> str:
    """An ISO date field of a line; None, no property, as an empty field."""
    return "" if iso is None else f'"{iso}"'


# what a version's (or evidence's) own values fill in, by template
_SLOTS = {
    "create": ("fact.version_id", "fact.idem", "fact.source_uid", "fact.value", "fact.value_type", "fact.value_hash",
               "fact.key.uid", "fact.key.entity", "fact.key.entity_uid", "fact.key.attribute", "fact.key.unit",
               "fact.key.definition", "fact.key.period"),
    "append": ("evidence.idem", "evidence.source_uid", "evidence.version_id"),
    "scope_token": (),
}


def _flat(prefix: str, params: dict[str, Any]) -> dict[str, str]:
    """Statement parameters as the slots a probe named them (``entity.name``,
    ``entity.aliases.0``): every string, by its path."""
    out: dict[str, str] = {}
    for name, value in params.items():
        if isinstance(value, str):
            out[f"{prefix}.{name}"] = value
        elif isinstance(value, list):
            out.update((f"{prefix}.{name}.{n}", item) for n, item in enumerate(value) if isinstance(item, str))
    return out
