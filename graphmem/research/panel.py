"""Point-in-time panels: a screen (graphmem/screen.py) at every asked frame and cutoff,
or each entity's latest period of a kind at every cutoff, in a few statements.

**Cells.** A panel has one cell per (cutoff, frame, entity of that cutoff's universe) -
or, with ``latest``, per (cutoff, entity): then the cell's frame is the latest frame of
that kind in which the entity has an ``active`` or ``conflicted`` key at the cutoff (for
a line item's member panel, in a unit the item allows: graphmem/research/lineitems.py),
and the cell is what a screen of that frame would answer for it (no such frame:
not_found, frame None). Every cell is, by construction, the row ``screen`` gives for its
frame and cutoff - the same keys, read by the same rule, chosen by the same code
(``screen.choose``) - and the answer ``as_of`` gives for its key.

**How it is read.** A key's answer at (C, K) changes with C only at the key's own
evidence times (when one of its evidence edges, or a resolution settling one of its
versions, becomes public). So one statement (``panel.keys``) finds the universe, each
entity's keys that can belong to an asked frame, and each key's evidence times; the
cutoffs are split, per key, into stretches between two of those times; and the read rule
(``fact.read`` itself, in batches of 2,000) reads each key once per stretch that holds a
cutoff it is needed at, never once per cutoff. A key with three filings read over forty
cutoffs is read at most four times. With ``latest``, a key with no evidence public by a
cutoff cannot answer there, so at each cutoff only the keys of the entity's latest frame
holding a public key are read; an entity whose keys there all read ``not_found``
(retracted, invalidated, below the requirement) tries its next frame in another round
(a latest ``not_found`` cell's ``explain`` sums the keys read for it; a screen's one-unit
rule applies among the entities that share a frame at a cutoff). A key that a line
item's unit rule leaves out (screen.py's Units) is no candidate either, so it never
decides the latest frame; ``panel_refusing`` also gives, per ``not_found`` cell, the
units of the keys it left out. With ``first_reported``, each key that answers a cell is read once more at each of its
evidence times (as known at known_at: edges recorded by then, of versions not erased),
and the first that reads ``active`` - by the cell's cutoff - is the value as first
reported (a key first filed and since invalidated or retracted reads it at its first
filing that still counts); a cell is ``restated`` when its value differs.

**The universe** per cutoff is the screen's: the ``entities`` given, or every entity
that had made the attribute public by that cutoff (as recorded by known_at), so an
entity joins the panel at its first filing and never earlier.

**known_at** is one time for the whole panel; without it, the time of the panel's first
statement, used for every read (a screen without it uses its own statement's time).

Bounds, checked before any query: those of a screen, at most ``limits.PANEL_CUTOFFS``
cutoffs and ``limits.PANEL_FRAMES`` frames; at most ``limits.PANEL_CELLS`` cells, checked
before any query when ``entities`` are given, else once the universe is known.
"""

from __future__ import annotations

import bisect
import datetime as dt
import functools
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from .. import collector, facts, limits
from .. import screen as screening
from ..db import Tx
from ..errors import InputError
from ..models import Answer, Explain, FactValue, Period, _Model, _Tabular, filed
from ..values import aware_utc, epoch, from_micros

LATEST: dict[str, tuple[int, int] | None] = {
    "quarter": screening.QUARTER_DAYS, "year": screening.YEAR_DAYS, "instant": None}
_READS = 2_000  # reads per fact.read statement
_FIRST_DAY, _LAST_DAY = dt.date(1, 1, 1), dt.date(9999, 12, 31)
_EPOCH = from_micros(0)
Refused = dict[tuple[dt.datetime, str | None, str], tuple[str, ...]]  # see panel_refusing


class PanelCell(_Model):
    """One cell: an entity's answer for a frame at a cutoff, flattened for tables.

    ``value``, ``unit``, ``period``, ``available_by`` (when the answering version became
    public), ``filings`` (the ids of its live evidence; of every candidate when
    conflicted) and ``version_id`` come from ``answer``. With ``first_reported``:
    ``first_value`` and ``first_version_id``, the key's answer at its first evidence
    time (known at known_at) that reads active by the cutoff, and ``restated``, whether
    the cell's value differs from it (None unless both are active). For a line item
    (graphmem/research/lineitems.py): the ``concept`` chosen, the members ``skipped``
    before it with why, and the ``reported_version_id`` (the chosen reported version,
    whose value times the member's sign is the cell's)."""

    entity: str
    frame: str | None
    cutoff: dt.datetime
    status: Literal["active", "conflicted", "not_found"]
    value: FactValue | None = None
    unit: str | None = None
    period: Period | None = None
    available_by: dt.datetime | None = None
    filings: tuple[str, ...] = ()
    version_id: str | None = None
    first_value: FactValue | None = None
    first_version_id: str | None = None
    restated: bool | None = None
    concept: str | None = None
    skipped: tuple[str, ...] = ()
    reported_version_id: str | None = None
    answer: Answer


class Panel(_Tabular, _Model):
    """Cells ordered by cutoff, then frame (as asked) and entity. ``frames`` lists the
    asked frames (empty with ``latest``); ``universe`` says how entities were found, as
    for a screen; ``unknown``: entities given that the scope does not hold; ``item`` and
    ``family``: the line item it standardizes, if any."""

    attribute: str
    definition: str
    unit: str | None
    frames: tuple[str, ...]
    latest: str | None
    cutoffs: tuple[dt.datetime, ...]
    known_at: dt.datetime
    universe: Literal["entities", "attribute"]
    first_reported: bool
    cells: tuple[PanelCell, ...]
    unknown: tuple[str, ...] = ()
    item: str | None = None
    family: str | None = None

    def cell(self, entity: str, cutoff: dt.datetime, frame: str | None = None) -> PanelCell | None:
        """The cell of ``entity`` at ``cutoff`` (and ``frame``, unless ``latest``), both
        read as ``panel`` reads them: a naive cutoff is refused (compared with the
        cells' aware ones it would match nothing, an answer of None that says "no
        cell"), and a frame is parsed as a frame (``cy2024q1 `` is CY2024Q1)."""
        at = aware_utc("cutoff", cutoff)
        label = screening.Selection.frame(frame).label if self.latest is None and frame is not None else ""
        return next((c for c in self.cells if c.entity == entity and c.cutoff == at
                     and (self.latest is not None or c.frame == label)), None)

    def counts(self) -> dict[str, int]:
        out = {"active": 0, "conflicted": 0, "not_found": 0}
        for c in self.cells:
            out[c.status] += 1
        return out


# ---------------------------------------------------------------- arguments


@dataclass(frozen=True)
class Query:
    """A panel's arguments, checked: a screen's (``base``, without a frame) and its
    frames or latest kind and its cutoffs (sorted, distinct)."""

    base: screening.Query
    frames: tuple[screening.Selection, ...]
    latest: str | None
    cutoffs: tuple[dt.datetime, ...]
    first_reported: bool

    def params(self) -> dict[str, Any]:
        """``panel.keys``'s $q (no value null, as for screen.read)."""
        b = self.base
        if self.latest is not None:
            days = LATEST[self.latest]
            ends, instants, durations = (_FIRST_DAY, _LAST_DAY), days is None, days is not None
        else:
            ends = (min(s.end_from for s in self.frames), max(s.end_to for s in self.frames))
            instants = any(s.kind == "instant" for s in self.frames)
            durations = any(s.kind == "duration" for s in self.frames)
            days = (min(s.days[0] for s in self.frames if s.kind == "duration") if durations else 0,
                    max(s.days[1] for s in self.frames if s.kind == "duration") if durations else 0)
        return {"attribute": b.attribute, "definition": b.definition, "unit": b.unit or "",
                "any_unit": b.unit is None, "entities": list(b.entities or ()), "everyone": b.entities is None,
                "known_at": epoch(b.known_at or b.cutoff), "now": b.known_at is None,
                "end_from": ends[0], "end_to": ends[1], "instants": instants, "durations": durations,
                "min_days": (days or (0, 0))[0], "max_days": (days or (0, 0))[1]}


def _cutoffs(cutoffs: Any) -> tuple[dt.datetime, ...]:
    if isinstance(cutoffs, (str, dt.datetime)) or not isinstance(cutoffs, Iterable):
        raise InputError("cutoffs", "an iterable of aware datetimes is required")
    out = set()
    for n, c in limits.given("cutoffs", cutoffs, limits.PANEL_CUTOFFS):
        out.add(aware_utc(f"cutoffs[{n}]", c))
        if len(out) > limits.PANEL_CUTOFFS:
            raise InputError("cutoffs", f"more than {limits.PANEL_CUTOFFS:,} cutoffs")
    if not out:
        raise InputError("cutoffs", "empty: a panel needs at least one cutoff")
    return tuple(sorted(out))


def _frames(frames: Any, latest: Any) -> tuple[tuple[screening.Selection, ...], str | None]:
    if (frames is None) == (latest is None):
        raise InputError("frames", "give exactly one of frames= (e.g. ['CY2024Q3']) or latest= "
                                   f"({', '.join(LATEST)})")
    if latest is not None:
        if latest not in LATEST:
            raise InputError("latest", f"must be one of {', '.join(LATEST)}; got {limits.shown(latest)}")
        return (), latest
    if isinstance(frames, str) or not isinstance(frames, Iterable):
        raise InputError("frames", "an iterable of calendar frames is required (a single string is not one)")
    out: dict[str, screening.Selection] = {}
    for _, frame in limits.given("frames", frames, limits.PANEL_FRAMES):
        selection = screening.Selection.frame(frame)
        out.setdefault(selection.label, selection)
        if len(out) > limits.PANEL_FRAMES:
            raise InputError("frames", f"more than {limits.PANEL_FRAMES} frames")
    if not out:
        raise InputError("frames", "empty: give at least one frame")
    return tuple(out.values()), None


def make_query(*, attribute: Any, frames: Any, latest: Any, cutoffs: Any, known_at: dt.datetime | None,
               entities: Any, unit: Any, definition: Any, require: Any, first_reported: Any) -> Query:
    """Check a panel's arguments before any query."""
    selections, kind = _frames(frames, latest)
    times = _cutoffs(cutoffs)
    if not isinstance(first_reported, bool):
        raise InputError("first_reported", "True or False")
    base = screening.make_query(attribute=attribute, selection=None, cutoff=times[0], known_at=known_at,
                                entities=entities, unit=unit, definition=definition, require=require,
                                sort="entity")
    if base.entities is not None:
        _cells(len(base.entities) * len(times) * max(1, len(selections)))
    return Query(base, selections, kind, times, first_reported)


def _cells(cells: int) -> None:
    if cells > limits.PANEL_CELLS:
        raise InputError("cutoffs", f"the panel would have {cells:,} cells, more than "
                                    f"{limits.PANEL_CELLS:,}: ask fewer cutoffs, frames or entities")


# ---------------------------------------------------------------- the plan


@dataclass
class _Key:
    uid: str
    entity: str
    period: Period
    frames: tuple[str, ...]
    points: list[int]  # evidence times, epoch microseconds, sorted

    def stretch(self, cutoff: int) -> int:
        """Which stretch between evidence times holds the cutoff (0: before the first)."""
        return bisect.bisect_right(self.points, cutoff)

    def public(self, cutoff: int) -> bool:
        """Whether any evidence of the key was public by the cutoff (else it cannot answer)."""
        return bool(self.points) and self.points[0] <= cutoff


@dataclass
class _Plan:
    """What the panel reads: each key once per stretch holding a cutoff it is needed at
    (and, with first_reported, at each of its evidence times), and the answers so far."""

    query: Query
    known_at: dt.datetime
    micros: list[int]  # the cutoffs, epoch microseconds
    universes: list[list[str]]  # per cutoff
    keys: dict[str, list[_Key]]  # per entity
    unknown: list[str]
    reads: list[dict[str, Any]] = field(default_factory=list)
    answers: list[Answer] = field(default_factory=list)
    read_at: dict[tuple[str, int], int] = field(default_factory=dict)  # (key uid, stretch) -> read
    first_at: dict[str, list[tuple[int, int]]] = field(default_factory=dict)  # key uid -> (point, read)
    times: facts.Times = field(default_factory=facts.Times)
    refused: Refused = field(default_factory=dict)  # see panel_refusing
    by_frame: dict[str, dict[str, list[_Key]]] = field(init=False)  # entity -> frame -> keys

    def __post_init__(self) -> None:
        self.by_frame = {}
        for entity, keys in self.keys.items():
            frames = self.by_frame[entity] = {}
            for k in keys:
                for frame in k.frames:
                    frames.setdefault(frame, []).append(k)

    def need(self, key: _Key, n: int) -> None:
        """Read ``key`` at cutoff ``n`` (once per stretch)."""
        at = (key.uid, key.stretch(self.micros[n]))
        if at not in self.read_at:
            self.read_at[at] = self._read(key.uid, self.query.cutoffs[n])

    def need_first(self, key: _Key) -> None:
        """Read ``key`` at each of its points up to the last cutoff (see first_reported)."""
        if key.uid not in self.first_at:
            self.first_at[key.uid] = [(m, self._read(key.uid, from_micros(m)))
                                      for m in dict.fromkeys(key.points) if m <= self.micros[-1]]

    def first(self, key: _Key, cutoff: int) -> Answer | None:
        """The key's answer at its first point, by ``cutoff``, that reads active: the value
        as first reported (None: it never read active by then)."""
        return next((a for m, i in self.first_at.get(key.uid, ()) if m <= cutoff
                     and (a := self.answers[i]).status == "active"), None)

    def _read(self, uid: str, cutoff: dt.datetime) -> int:
        self.reads.append({"i": len(self.reads), "uid": uid, "cutoff": self.times.ref(cutoff),
                           "known_at": self.times.ref(self.known_at)})
        return len(self.reads) - 1

    def at(self, key: _Key, n: int) -> Answer:
        return self.answers[self.read_at[(key.uid, key.stretch(self.micros[n]))]]

    def has(self, key: _Key, n: int) -> bool:
        """Whether ``key`` was read at cutoff ``n``."""
        return (key.uid, key.stretch(self.micros[n])) in self.read_at

    def read(self, tx: Tx, scope: Any) -> None:
        """The reads not read yet, through ``fact.read`` itself, in batches."""
        require = self.query.base.require
        start = len(self.answers)
        self.answers += [None] * (len(self.reads) - start)  # type: ignore[list-item]
        for first in range(start, len(self.reads), _READS):
            rows = tx.run("fact.read", reads=self.reads[first:first + _READS], times=self.times.values,
                          brief=False, **facts.require_params(require), **facts.scope_params(scope))
            for row in rows:
                cutoff = self.times.values[self.reads[row["i"]]["cutoff"]]
                self.answers[row["i"]] = facts._answer(row, cutoff, require)
        assert all(a is not None for a in self.answers[start:])


def _frames_of(q: Query, period: Period) -> tuple[str, ...]:
    if q.latest is None:
        return tuple(s.label for s in q.frames if s.matches(period))
    frame = screening.frame_of(period)
    if frame is None or (frame.endswith("I") != (q.latest == "instant")) or \
            (q.latest == "year") != ("Q" not in frame):
        return ()
    return (frame,)


@functools.lru_cache(maxsize=4096)
def frame_end(frame: str | None) -> dt.date:
    """The last day of a frame (None: before every frame), to find an entity's latest."""
    return screening.Selection.frame(frame).end if frame else dt.date.min


def _micros(t: dt.datetime) -> int:
    return (t - _EPOCH) // dt.timedelta(microseconds=1)


def plan(q: Query, row: dict[str, Any]) -> _Plan:
    """The panel's universe per cutoff and each entity's keys in the asked frames, from
    ``panel.keys``'s row."""
    micros = [_micros(c) for c in q.cutoffs]
    entities = row["entities"]
    universes = [[e["id"] for e in entities if q.base.entities is not None
                  or (e["first"] is not None and e["first"] <= m)] for m in micros]
    _cells(sum(len(u) for u in universes) * max(1, len(q.frames)))
    keys: dict[str, list[_Key]] = {}
    for e in entities:
        for k in e["keys"]:
            period = facts._period(k["period"])  # its text: the driver decodes dates 20 times slower
            frames = _frames_of(q, period)
            if frames:
                keys.setdefault(e["id"], []).append(_Key(k["uid"], e["id"], period, frames, sorted(k["points"])))
    return _Plan(q, from_micros(row["known_at"]), micros, universes, keys,
                 [e["id"] for e in entities if not e["known"]])


# ---------------------------------------------------------------- the cells


def _cell(answer: Answer, frame: str | None, cutoff: dt.datetime) -> PanelCell:
    answer = answer if answer.cutoff == cutoff else answer.model_copy(update={"cutoff": cutoff})
    v = answer.version
    shown = (v,) if v else answer.candidates
    available_by, filings = filed(shown)
    return PanelCell(
        entity=answer.entity, frame=frame, cutoff=cutoff, status=answer.status, answer=answer,
        value=v.value if v else None, unit=shown[0].unit if shown else None,
        period=shown[0].period if shown else None, available_by=available_by, filings=tuple(filings),
        version_id=v.version_id if v else None)


Chosen = list[tuple[PanelCell, "_Key | None"]]  # each cell and the key that answers it


def _left_out(q: screening.Query, answer: Answer) -> str | None:
    """The unit of ``answer`` if a line item's unit rule leaves it out (a candidate in a
    unit the item does not allow, no unit asked: screen.py's Units), else None."""
    if q.units is None or q.unit is not None or answer.status == "not_found":
        return None
    unit = (answer.version or answer.candidates[0]).unit
    return None if q.units(unit) else unit


def _candidate(q: screening.Query, answer: Answer) -> bool:
    """Whether ``answer`` is a candidate of its frame: active or conflicted, and kept by
    a line item's unit rule."""
    return answer.status != "not_found" and _left_out(q, answer) is None


def _refuse(p: _Plan, n: int, frame: str | None, entity: str, answers: Iterable[Answer]) -> None:
    """Note the units of ``answers`` that the unit rule left out of the entity's
    not_found cell at cutoff ``n`` and ``frame`` (see panel_refusing)."""
    units = {u for a in answers if (u := _left_out(p.query.base, a)) is not None}
    if units:
        p.refused[(p.query.cutoffs[n], frame if p.query.latest is None else None, entity)] = tuple(sorted(units))


def _choose(p: _Plan, n: int, selection: screening.Selection, entities: list[str]) -> Chosen:
    """The screen's choice among the entities' keys of one frame read at cutoff ``n``."""
    cutoff = p.query.cutoffs[n]
    fq = replace(p.query.base, selection=selection, cutoff=cutoff, entities=tuple(entities))
    keyed = [(k, p.at(k, n)) for e in entities for k in p.by_frame.get(e, {}).get(selection.label, ())
             if p.has(k, n)]
    key_of = {id(a): k for k, a in keyed}
    mine: dict[str, list[Answer]] = {}  # each entity's answers, when a line item's unit rule may refuse some
    if fq.units is not None:
        for _, a in keyed:
            mine.setdefault(a.entity, []).append(a)
    out: Chosen = []
    for a in screening.choose(fq, entities, [a for _, a in keyed], cutoff, p.known_at):
        if a.status == "not_found" and a.entity in mine:
            _refuse(p, n, selection.label, a.entity, mine[a.entity])
        out.append((_cell(a, selection.label, cutoff), key_of.get(id(a))))
    return out


def _frames_cells(tx: Tx, scope: Any, p: _Plan) -> Chosen:
    """Every (cutoff, frame, entity) cell: every key of the frames at every cutoff."""
    for n in range(len(p.micros)):
        for e in p.universes[n]:
            for k in p.keys.get(e, ()):
                p.need(k, n)
    p.read(tx, scope)
    return [c for n in range(len(p.micros)) for s in p.query.frames
            for c in _choose(p, n, s, p.universes[n])]


@dataclass
class _Frames:
    """One entity's keys by frame, and its frames in the order their first key became
    public: the frames with a public key at a cutoff are a prefix of that order."""

    keys: dict[str, list[_Key]]
    firsts: list[int]  # each frame's first public point, ascending
    order: list[str]  # the frames, in that order
    latest_first: dict[int, list[str]] = field(default_factory=dict)  # prefix length -> frames

    @classmethod
    def of(cls, by_frame: dict[str, list[_Key]]) -> _Frames:
        """From the entity's keys by frame (``_Plan.by_frame``'s)."""
        firsts = sorted((min(k.points[0] for k in ks if k.points), f)
                        for f, ks in by_frame.items() if any(k.points for k in ks))
        return cls(by_frame, [m for m, _ in firsts], [f for _, f in firsts])

    def public(self, cutoff: int) -> list[str]:
        """The frames with a key public by ``cutoff``, latest first."""
        j = bisect.bisect_right(self.firsts, cutoff)
        if j not in self.latest_first:
            self.latest_first[j] = sorted(self.order[:j], key=frame_end, reverse=True)
        return self.latest_first[j]

    def public_keys(self, frame: str, cutoff: int) -> list[_Key]:
        return [k for k in self.keys[frame] if k.public(cutoff)]


def _latest_cells(tx: Tx, scope: Any, p: _Plan) -> Chosen:
    """Each (cutoff, entity)'s cell in its latest frame with a candidate. A key with no
    evidence public by the cutoff cannot be one, so only the latest frame holding a
    public key is read first; an entity whose keys there all read not_found (retracted,
    invalidated, below the requirement) or are left out by a line item's unit rule tries
    its next frame in the next round."""
    index = {e: _Frames.of(frames) for e, frames in p.by_frame.items()}
    nothing = _Frames.of({})
    todo = {(e, n): index.get(e, nothing).public(m) for n, m in enumerate(p.micros) for e in p.universes[n]}
    found: dict[tuple[str, int], str | None] = {}
    while todo:
        public = {(e, n): index[e].public_keys(frames[0], p.micros[n]) if frames else []
                  for (e, n), frames in todo.items()}
        for (_, n), keys in public.items():
            for k in keys:
                p.need(k, n)
        p.read(tx, scope)
        rest = {}
        for (e, n), frames in todo.items():
            if frames and any(_candidate(p.query.base, p.at(k, n)) for k in public[(e, n)]):
                found[(e, n)] = frames[0]
            elif len(frames) > 1:
                rest[(e, n)] = frames[1:]
            else:
                found[(e, n)] = None
        todo = rest
    out: Chosen = []
    for n, cutoff in enumerate(p.query.cutoffs):
        by_frame: dict[str | None, list[str]] = {}
        for e in p.universes[n]:
            by_frame.setdefault(found[(e, n)], []).append(e)
        for e in by_frame.pop(None, []):
            read = [p.at(k, n) for k in p.keys.get(e, ()) if p.has(k, n)]
            _refuse(p, n, None, e, read)
            explain = sum((a.explain for a in read), Explain())
            none = Answer(status="not_found", entity=e, attribute=p.query.base.attribute, cutoff=cutoff,
                          known_at=p.known_at, require=p.query.base.require, explain=explain)
            out.append((_cell(none, None, cutoff), None))
        for frame, entities in by_frame.items():
            assert frame is not None
            out += _choose(p, n, screening.Selection.frame(frame), entities)
    return out


def _first_reported(tx: Tx, scope: Any, p: _Plan, chosen: Chosen) -> list[PanelCell]:
    """Each cell with its key's answer at the key's first point that reads active (read
    for the keys that answer a cell only) and whether its value was restated since."""
    for _, key in chosen:
        if key is not None:
            p.need_first(key)
    p.read(tx, scope)
    out = []
    for cell, key in chosen:
        first = p.first(key, _micros(cell.cutoff)) if key is not None else None
        if first is not None and first.version is not None:
            v = cell.answer.version
            cell = cell.model_copy(update={
                "first_value": first.version.value, "first_version_id": first.version.version_id,
                "restated": None if v is None else v.value != first.version.value})
        out.append(cell)
    return out


def panel(tx: Tx, scope: Any, q: Query) -> Panel:
    """A point-in-time panel (see the module docstring), built with Python's cyclic
    collector paused (graphmem/collector.py: a quarter of a large panel's time)."""
    return panel_refusing(tx, scope, q)[0]


def panel_refusing(tx: Tx, scope: Any, q: Query) -> tuple[Panel, Refused]:
    """The panel and, for a line item's member panel (``q.base.units``, no unit asked),
    per ``not_found`` cell - keyed (cutoff, frame or None with ``latest``, entity) - the
    units of the candidate keys the item's unit rule left out of it, sorted: the line
    item says the member was skipped for them (``unit X``)."""
    with collector.paused():
        return _panel(tx, scope, q)


def _panel(tx: Tx, scope: Any, q: Query) -> tuple[Panel, Refused]:
    row = tx.one("panel.keys", q=q.params(), **facts.scope_params(scope))
    assert row is not None  # the statement always returns its one row
    p = plan(q, row)
    chosen = _frames_cells(tx, scope, p) if q.latest is None else _latest_cells(tx, scope, p)
    rows = _first_reported(tx, scope, p, chosen) if q.first_reported else [c for c, _ in chosen]
    order = {s.label: i for i, s in enumerate(q.frames)}
    rows.sort(key=lambda c: (c.cutoff, order.get(c.frame or "", 0), c.entity))
    b = q.base
    return Panel(attribute=b.attribute, definition=b.definition, unit=b.unit,
                 frames=tuple(s.label for s in q.frames), latest=q.latest, cutoffs=q.cutoffs,
                 known_at=p.known_at, universe="entities" if b.entities is not None else "attribute",
                 first_reported=q.first_reported, cells=tuple(rows), unknown=tuple(sorted(p.unknown))), p.refused
