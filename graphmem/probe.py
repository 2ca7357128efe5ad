"""What the online write statements write, learned by running them in a transaction
that is rolled back: the search text of a graph built offline (graphmem.bulk), and the
property names its importer input must have (graphmem.importcsv).

A fact version's ``search_text`` is Cypher's work: ``fact.create_versions`` writes it
from the fragments ``search.fact_text`` and ``search.source_text``, and each
``fact.add_evidence`` appends its source's text. An offline build has to write the
same bytes without running those statements once per version, and without a second,
hand-written copy of that text that could drift from them. So it runs the real
statements - ``entity.put``, ``source.create`` (twice), ``fact.create_versions``,
``fact.add_evidence``, ``admin.tick`` and ``load.mark`` - on one probe version whose every string
parameter is a marker (``\\x02<n>\\x03``), reads back what they wrote, and rolls back.
The text that comes back is a template: literal text with a marker wherever a
parameter was pasted. Filling in a version's real parameters gives, byte for byte,
what the online statements would have written.

A template holds for the shape it was probed with: ``coalesce`` and ``reduce`` write
other text for a missing name or another number of aliases. So one is probed per
shape, on first use: an entity's name and kind present or not and how many aliases it
has; a source's uri and title present or not, and its authority. Text that a
statement computes from a parameter instead of pasting it (upper-cased, trimmed) breaks
its marker, which is refused here; a condition on a parameter's value would not be
seen here, and is what the equality tests (tests/test_bootstrap.py) are for.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Mapping, Sequence
from decimal import Decimal
from typing import Any, NamedTuple

from . import facts
from .db import Database, Tx
from .errors import GraphmemError
from .importcsv import CLOCK, ENTITY, EVIDENCED_BY, FACT, FACT_KEY, LOAD_MARK, SOURCE, Layout
from .models import Authority, Entity, Period, Scope, Source
from .values import encode

_AT = dt.datetime(2000, 1, 2, 3, 4, 5, tzinfo=dt.UTC)  # a time for every time parameter
_PERIOD = Period(start=dt.date(2000, 1, 1), end=dt.date(2000, 12, 31))
_MARK = re.compile("\x02(\\d+)\x03")


class ProbeError(GraphmemError):
    """The online statements write something an offline build cannot reproduce."""


class Slot(NamedTuple):
    name: str


class Template(NamedTuple):
    """Text with named slots, as the online statements wrote it around the markers."""

    parts: tuple[str | Slot, ...]

    @property
    def slots(self) -> set[str]:
        return {p.name for p in self.parts if isinstance(p, Slot)}

    def fill(self, values: Mapping[str, str]) -> Template:
        """The template with these slots filled in (the rest stay slots)."""
        parts: list[str | Slot] = []
        for part in self.parts:
            text = values.get(part.name) if isinstance(part, Slot) else part
            if text is None:
                parts.append(part)
            elif parts and isinstance(parts[-1], str):
                parts[-1] += text
            else:
                parts.append(text)
        return Template(tuple(parts))

    def pattern(self, order: Sequence[str]) -> str:
        """The template as a ``str.format`` pattern taking the values of ``order``, in that
        order, positionally (the fast way to render many texts); a slot not in ``order``
        is a ProbeError."""
        pieces = []
        for part in self.parts:
            if isinstance(part, Slot):
                if part.name not in order:
                    raise ProbeError(f"the search text uses {part.name}, which an offline build does not "
                                     "supply (graphmem.bulk)")
                pieces.append(f"{{{order.index(part.name)}}}")
            else:
                pieces.append(part.replace("{", "{{").replace("}", "}}"))
        return "".join(pieces)

    def render(self, values: Mapping[str, str]) -> str:
        """The text with every slot filled; a slot without a value is a ProbeError."""
        try:
            return "".join(p if isinstance(p, str) else values[p.name] for p in self.parts)
        except KeyError as exc:
            raise ProbeError(f"the search text uses {exc.args[0]}, which an offline build does not "
                             "supply (graphmem.bulk)") from None


class _Marks:
    """Markers for the probe's parameters, and templates from the text written with them."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def mark(self, value: Any, name: str) -> Any:
        """``value`` with every string in it replaced by a marker named by its path."""
        if isinstance(value, str):
            self.names.append(name)
            return f"\x02{len(self.names) - 1}\x03"
        if isinstance(value, dict):
            return {k: self.mark(v, f"{name}.{k}") for k, v in value.items()}
        if isinstance(value, list):
            return [self.mark(v, f"{name}.{n}") for n, v in enumerate(value)]
        return value

    def template(self, text: str | None, what: str) -> Template:
        if text is None:
            raise ProbeError(f"the probe version has no {what}")
        parts: list[str | Slot] = []
        for n, piece in enumerate(_MARK.split(text)):
            if n % 2:
                parts.append(Slot(self.names[int(piece)]))
            elif "\x02" in piece or "\x03" in piece:
                raise ProbeError(f"the {what} is computed from a parameter rather than pasted: {text!r}")
            elif piece:
                parts.append(piece)
        return Template(tuple(parts))


class EntityShape(NamedTuple):
    named: bool
    kinded: bool
    aliases: int

    @classmethod
    def of(cls, entity: Entity) -> EntityShape:
        return cls(entity.name is not None, entity.kind is not None, len(entity.aliases))


class SourceShape(NamedTuple):
    uri: bool
    title: bool
    authority: Authority

    @classmethod
    def of(cls, source: Source) -> SourceShape:
        return cls(source.uri is not None, source.title is not None, source.authority)


class Probed(NamedTuple):
    """What one probe learned: a new version's text (slots ``entity.*``, ``s1.*``,
    ``fact.*``, ``params.*``), the text one more evidence appends (``s2.*``,
    ``evidence.*``), the version's scope token, and the property names written."""

    create: Template
    append: Template
    scope_token: Template
    properties: dict[str, set[str]]


def _probe(tx: Tx, entity_shape: EntityShape, source_shape: SourceShape) -> Probed:
    """Run the write statements on markers (the caller rolls back) and read the result."""
    marks = _Marks()
    scope = Scope(tenant="probe")
    params = marks.mark({**facts.scope_params(scope), "scope_token": "token"}, "params")
    shared = {"tenant": params["tenant"], "scope": params["scope"]}

    def without_scope(values: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in values.items() if k not in shared}

    entity = Entity(id="entity", name="name" if entity_shape.named else None,
                    kind="kind" if entity_shape.kinded else None,
                    aliases=tuple(f"alias{n}" for n in range(entity_shape.aliases)))
    e = marks.mark(without_scope(facts.entity_params(scope, entity)), "entity")
    tx.run("entity.put", **e, **shared, recorded_at=_AT)
    sources = []
    for name in ("s1", "s2"):
        source = Source(id=name, kind="kind", authority=source_shape.authority, available_by=_AT,
                        publisher="publisher", uri="uri" if source_shape.uri else None,
                        title="title" if source_shape.title else None, meta={"k": "v"})
        s = marks.mark(without_scope(facts.source_params(scope, source)), name)
        tx.run("source.create", **s, **shared, recorded_at=_AT)
        sources.append(s)
    key = facts.KeySpec(scope, "entity", "attribute", "unit", "definition", _PERIOD)
    first = facts.Assertion(0, key, "s1", *encode("value"), _AT)
    times = facts.Times()
    row = marks.mark(facts.version_row(first, times), "fact")
    row["source_uid"], row["key"]["entity_uid"] = sources[0]["uid"], e["uid"]
    row["value_num"] = float(Decimal("1.5"))  # a number, so that the property is written
    tx.run("fact.create_versions", rows=[row], times=times.values, recorded_at=_AT,
           scope_token=params["scope_token"], **shared)
    created = tx.one("bootstrap.probe", version_id=row["version_id"], tenant=shared["tenant"], mark_uid=None)
    second = facts.Assertion(0, key, "s2", *encode("value"), _AT)
    evidence = marks.mark(facts.evidence_row(second, "version", times), "evidence")
    evidence["source_uid"], evidence["version_id"] = sources[1]["uid"], row["version_id"]
    tx.run("fact.add_evidence", rows=[evidence], times=times.values, recorded_at=_AT, **shared)
    facts.tick(tx, Scope(tenant=shared["tenant"]), _AT)
    mark = marks.mark({"uid": "uid", "kind": "filing", "id": "id", "digest": "digest", "report": "report"}, "mark")
    tx.run("load.mark", **mark, recorded_at=_AT, **shared)
    added = tx.one("bootstrap.probe", version_id=row["version_id"], tenant=shared["tenant"], mark_uid=mark["uid"])
    if created is None or added is None:
        raise ProbeError("the probe version was not written")
    before, after = created["text"] or "", added["text"] or ""
    if not after.startswith(before):
        raise ProbeError("fact.add_evidence no longer appends to a version's search text")
    return Probed(
        create=marks.template(created["text"], "search text"),
        append=marks.template(after[len(before):], "search text added with evidence"),
        scope_token=marks.template(created["scope_token"], "search scope"),
        properties={k: set(v) for k, v in added.items() if k not in ("text", "scope_token")})


def _names(layout: Layout) -> set[str]:
    return {n for n in layout.names if not n.startswith(":")}


_LAYOUTS = {"entity": ENTITY, "source": SOURCE, "key": FACT_KEY, "fact": FACT, "clock": CLOCK,
            "evidence": EVIDENCED_BY, "mark": LOAD_MARK}


def check_layouts(properties: Mapping[str, set[str]]) -> None:
    """Refuse to build when the online statements write properties the importer's
    layouts do not have, or the reverse (probed with every optional field present)."""
    for what, layout in _LAYOUTS.items():
        if properties[what] != _names(layout):
            raise ProbeError(
                f"the online statements write {layout.label} properties {sorted(properties[what])}, "
                f"the importer input has {sorted(_names(layout))} (graphmem/importcsv.py)")
    for what in ("about", "version_of"):
        if properties[what]:
            raise ProbeError(f"the online statements write {what} properties {sorted(properties[what])}")


Shape = tuple[EntityShape, SourceShape]


class Unprobed(GraphmemError):
    """A shape that templates without a database were not given: the build that needs it
    is made again where a database is (graphmem.loaders.bootstrap)."""


class Templates:
    """The search-text templates of one build, probed per shape on first use.

    ``connect`` gives the database to probe (any Neo4j: nothing is written); it is
    called on the first probe only, so a server can still be starting meanwhile.
    Without one (a build in a process of its own), only the shapes in ``probed`` are
    known, and any other raises :class:`Unprobed`.
    """

    def __init__(self, connect: Callable[[], Database] | None, probed: dict[Shape, Probed] | None = None):
        self._connect = connect
        self._db: Database | None = None
        self._probed: dict[Shape, Probed] = dict(probed or {})

    @property
    def probed(self) -> dict[Shape, Probed]:
        """What was probed so far, by shape (to hand to templates without a database)."""
        return dict(self._probed)

    def _get(self, entity: EntityShape, source: SourceShape) -> Probed:
        found = self._probed.get((entity, source))
        if found is None:
            if self._connect is None:
                raise Unprobed(f"no template probed for {entity}, {source}")
            if self._db is None:
                self._db = self._connect()
                full = self._db.rolled_back(
                    lambda tx: _probe(tx, EntityShape(True, True, 1), SourceShape(True, True, Authority.PRIMARY)))
                check_layouts(full.properties)
            found = self._probed[entity, source] = self._db.rolled_back(lambda tx: _probe(tx, entity, source))
        return found

    def create(self, entity: Entity, source: Source) -> Template:
        """A new version's text, slots ``fact.*`` and ``s1.*`` left to fill."""
        probed = self._get(EntityShape.of(entity), SourceShape.of(source))
        return probed.create

    def append(self, entity: Entity, source: Source) -> Template:
        """The text one more evidence from ``source`` appends (slots ``s2.*``, ``evidence.*``)."""
        return self._get(EntityShape.of(entity), SourceShape.of(source)).append

    def scope_token(self, entity: Entity, source: Source) -> Template:
        return self._get(EntityShape.of(entity), SourceShape.of(source)).scope_token
