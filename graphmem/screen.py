"""Point-in-time screens: every entity's value of one attribute for one period or
calendar frame, using only what was public at a cutoff, as recorded by known_at.

The SEC's ``frames`` API answers "every company's X for CY2024Q3" from the latest
filings only - with look-ahead. A screen gives the same question's answer as of any
cutoff: each entity's key is chosen, and answered by the read rule (``fact.read``,
included in ``screen.read``), from what was public then.

**Frames** (the SEC's notation, read case-insensitively): ``CY2024`` a calendar year,
``CY2024Q3`` a calendar quarter, ``CY2024Q3I`` the instant that ends a quarter. A
fact key belongs to at most one frame of each kind:

- a duration of 335 to 395 days (365 ± 30, both ends counted) belongs to the calendar
  year that holds its middle day (the earlier one when it has two), one of 61 to 121
  days (91 ± 30) to the calendar quarter that does; other lengths belong to no frame;
- an instant belongs to the quarter whose last day is nearest (halfway between two: the
  earlier).

So a 52/53-week quarter ending 2024-09-28 is CY2024Q3, and so is Marvell's fiscal third
quarter 2024-08-04..2024-11-02 (the SEC labels it so too). This rule gives the SEC's own
frame label to 15,160 of the 15,172 labelled rows of four real companyfacts files
(tests/test_screen.py); the 12 others are one-month durations the SEC labels as
instant frames, which a screen never takes for instants.

**Which key answers for an entity.** Its candidates are the keys of the frame (or of the
exact ``period``) in the asked unit and definition whose read at (cutoff, known_at) is
``active`` or ``conflicted`` - a key with nothing public by the cutoff is not a
candidate, so nothing published later can take part in the choice. Among them the key
that fits the calendar period best wins: the fewest days between their first days plus
between their last days (for instants: between the dates); then the one whose evidence
was public most recently (the SEC's "last filed"); then the period's text. A conflicted
best key makes the entity ``conflicted`` (all candidates shown): a worse-fitting key is
never picked to avoid a conflict. No candidate: ``not_found``, with what each filter
removed on the frame's keys (``explain.cutoff`` > 0: something was filed, but later).

**The universe** (which entities get a row): the ``entities`` given, in full - unknown
ones too, reported ``not_found`` and listed in ``Screen.unknown``; or, without them,
every entity of the scope that had made a value of the attribute public by the cutoff
(any period or unit, the asked definition), as recorded by known_at. An entity that
first reported it later is not in the universe: listing it would be look-ahead. An
entity one of whose keys answers is in it (its version was public by the cutoff), so
only the rest are tested, by a second statement (``screen.universe``) at the known_at
the first one used.

**Units.** ``unit=None`` takes every unit, but a screen answers in one unit: if the
candidate keys come in several - across entities, or one entity's figure and its
translation - ``InputError`` lists them (pass ``unit=``); never a silent pick. A
line item's member panels (graphmem/research/lineitems.py) pass ``units``, the item's
unit rule: keys in other units are left out, and each filer answers in its own
currency; a filer whose figure comes in two allowed units (a 20-F's figure and its USD
convenience translation) is conflicted between them, every candidate shown, and the
rest of the universe is answered.

**Sort**: ``entity`` (id order), ``value`` or ``-value`` (numeric, decimals before other
values); rows without one value (conflicted, then not_found) follow in entity order.

Bounds, checked before any query: ``attribute``, ``unit``, ``definition`` and each
entity id at most 2,048 bytes in UTF-8 (``limits.IDENTIFIER_BYTES``); at most 100,000
entities (``limits.SCREEN_ENTITIES``); frame years 1000 to 9998.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Literal

from . import collector, facts, limits
from .db import Tx
from .errors import InputError
from .models import Answer, Explain, Period, Require, Scope, Screen, check_require
from .values import epoch, from_micros

YEARS = range(1000, 9999)
QUARTER_DAYS = (61, 121)  # 91 +/- 30, both ends counted
YEAR_DAYS = (335, 395)  # 365 +/- 30
SORTS = ("entity", "value", "-value")
_FRAME = re.compile(r"CY(\d{4})(?:Q([1-4]))?(I)?", re.IGNORECASE)
_DAY = dt.timedelta(days=1)


def _quarter(year: int, q: int) -> tuple[dt.date, dt.date]:
    """First and last day of calendar quarter ``q`` of ``year``."""
    first = dt.date(year, 3 * q - 2, 1)
    after = dt.date(year + 1, 1, 1) if q == 4 else dt.date(year, 3 * q + 1, 1)
    return first, after - _DAY


def _shift(year: int, q: int, by: int) -> tuple[int, int]:
    n = year * 4 + q - 1 + by
    return n // 4, n % 4 + 1


@dataclass(frozen=True)
class Selection:
    """Which fact keys a screen reads: an exact period, or a calendar frame's window.

    ``start``/``end`` are the calendar period (for a period: itself); a key matches when
    its period ends in [end_from, end_to] and, by kind, is the period, is an instant, or
    lasts ``days`` with its middle day in [start, end] (see the module docstring)."""

    label: str
    kind: Literal["period", "instant", "duration"]
    start: dt.date | None
    end: dt.date
    end_from: dt.date
    end_to: dt.date
    days: tuple[int, int] = (0, 0)
    period: Period | None = None

    @classmethod
    def frame(cls, text: Any) -> Selection:
        """Parse an SEC calendar frame; InputError naming it if it is not one."""
        if not isinstance(text, str):
            raise InputError("frame", f"a string such as 'CY2024Q3' is required, got {type(text).__name__}")
        match = _FRAME.fullmatch(text.strip())
        if match is None:
            raise InputError("frame", f"{limits.shown(text)} is not a calendar frame: expected CY#### (a year), "
                                      "CY####Q# (a quarter) or CY####Q#I (the instant ending a quarter), "
                                      "for example CY2024Q3")
        year, q, instant = int(match[1]), match[2], bool(match[3])
        label = text.strip().upper()
        if year not in YEARS:
            raise InputError("frame", f"{text!r}: the year must be from {YEARS.start} to {YEARS.stop - 1}")
        if q is None and instant:
            raise InputError("frame", f"{text!r}: an instant frame names a quarter; the year's last "
                                      f"day is CY{year}Q4I")
        if q is None:
            first, last = dt.date(year, 1, 1), dt.date(year, 12, 31)
            return cls._duration(label, first, last, YEAR_DAYS)
        first, last = _quarter(year, int(q))
        if not instant:
            return cls._duration(label, first, last, QUARTER_DAYS)
        before = _quarter(*_shift(year, int(q), -1))[1]
        after = _quarter(*_shift(year, int(q), 1))[1]
        # nearest quarter end, halfway going to the earlier: strictly nearer than the
        # previous one, no farther than the next one
        return cls(label, "instant", first, last,
                   end_from=before + dt.timedelta(days=(last - before).days // 2 + 1),
                   end_to=last + dt.timedelta(days=(after - last).days // 2))

    @classmethod
    def _duration(cls, label: str, first: dt.date, last: dt.date, days: tuple[int, int]) -> Selection:
        # a period of n days ends ceil((n - 1) / 2) days after its middle day
        return cls(label, "duration", first, last, days=days,
                   end_from=first + dt.timedelta(days=days[0] // 2),
                   end_to=last + dt.timedelta(days=days[1] // 2))

    @classmethod
    def exact(cls, period: Any) -> Selection:
        if not isinstance(period, Period):
            raise InputError("period", f"a graphmem.Period is required, got {type(period).__name__}")
        return cls(period.text, "period", period.start, period.end, period.end, period.end, period=period)

    def matches(self, period: Period) -> bool:
        """Whether a key of this period is one of the selection's (what screen.read checks)."""
        if not self.end_from <= period.end <= self.end_to:
            return False
        if self.kind == "period":
            return period == self.period
        if self.kind == "instant":
            return period.start is None
        if period.start is None or not self.days[0] <= period.days <= self.days[1]:
            return False
        assert self.start is not None
        return self.start <= period.start + dt.timedelta(days=(period.days - 1) // 2) <= self.end

    def distance(self, period: Period) -> int:
        """Days between the key's period and the calendar period: how well it fits."""
        if self.kind == "instant" or period.start is None or self.start is None:
            return abs((period.end - self.end).days)
        return abs((period.start - self.start).days) + abs((period.end - self.end).days)

    def params(self) -> dict[str, Any]:
        """``screen.read``'s parameters for this selection."""
        return {"kind": self.kind, "period": self.period.text if self.period else "",
                "end_from": self.end_from, "end_to": self.end_to,
                "min_days": self.days[0], "max_days": self.days[1],
                "mid_from": self.start or self.end, "mid_to": self.end}


def frame_of(period: Period) -> str | None:
    """The frame a period belongs to: ``CY2024Q3I`` for an instant, ``CY2024Q3`` or
    ``CY2024`` for a duration of a quarter's or a year's length, else None - and None
    when that frame's year is outside ``YEARS``: no frame of it can be asked, and a
    stored period such as 0202-03-31 (a typo in a filing) must not fail a latest panel."""
    if period.start is None:
        year, q = period.end.year, (period.end.month - 1) // 3 + 1
        for y, n in (_shift(year, q, -1), (year, q)):
            if y in YEARS and Selection.frame(f"CY{y}Q{n}I").matches(period):
                return f"CY{y}Q{n}I"
        return None  # its nearest quarter end is in a year outside YEARS
    middle = period.start + dt.timedelta(days=(period.days - 1) // 2)
    if middle.year not in YEARS:
        return None
    if QUARTER_DAYS[0] <= period.days <= QUARTER_DAYS[1]:
        return f"CY{middle.year}Q{(middle.month - 1) // 3 + 1}"
    if YEAR_DAYS[0] <= period.days <= YEAR_DAYS[1]:
        return f"CY{middle.year}"
    return None


# ---------------------------------------------------------------- arguments


def _text(name: str, value: Any, *, empty: bool = False) -> str:
    """An identifier argument (``limits.IDENTIFIER_BYTES``; ``empty``: "" allowed)."""
    if not isinstance(value, str) or (not value and not empty):
        raise InputError(name, "a non-empty string is required" if not empty else "a string is required")
    limits.check_text(name, value, limits.IDENTIFIER_BYTES)
    return value


def entity_list(entities: Any) -> tuple[str, ...] | None:
    """The universe as given: distinct ids in their first order (None: not given)."""
    if entities is None:
        return None
    if isinstance(entities, str) or not isinstance(entities, Iterable):
        raise InputError("entities", "an iterable of entity ids is required (a single string is not one)")
    out: dict[str, None] = {}
    for n, entity in limits.given("entities", entities, limits.SCREEN_ENTITIES):
        out[_text(f"entities[{n}]", entity)] = None
        if len(out) > limits.SCREEN_ENTITIES:
            raise InputError("entities", f"more than {limits.SCREEN_ENTITIES:,} entities")
    if not out:
        raise InputError("entities", "empty: give at least one entity id, or None for every entity "
                                     "that reported the attribute")
    return tuple(out)


@dataclass(frozen=True)
class Query:
    """A screen's arguments, checked."""

    attribute: str
    selection: Selection | None
    cutoff: dt.datetime
    known_at: dt.datetime | None
    entities: tuple[str, ...] | None
    unit: str | None
    definition: str
    require: Require | None
    sort: str
    units: Callable[[str | None], bool] | None = None  # a line item's unit rule (see Units)

    def params(self) -> dict[str, Any]:
        """``screen.read``'s $q: no value null, whatever was asked (see the statement)."""
        return {"attribute": self.attribute, "definition": self.definition,
                "unit": self.unit or "", "any_unit": self.unit is None,
                "entities": list(self.entities or ()), "everyone": self.entities is None,
                "cutoff": epoch(self.cutoff), "known_at": epoch(self.known_at or self.cutoff),
                "now": self.known_at is None, **self.selected.params()}

    @property
    def selected(self) -> Selection:
        assert self.selection is not None, "a screen of stored keys has a frame or a period"
        return self.selection


def selection(frame: Any, period: Any) -> Selection:
    """What a screen reads: exactly one of a frame or a period."""
    if (frame is None) == (period is None):
        raise InputError("frame", "give exactly one of frame= (e.g. 'CY2024Q3') or period=")
    return Selection.frame(frame) if frame is not None else Selection.exact(period)


def make_query(*, attribute: Any, selection: Selection | None, cutoff: dt.datetime | None,
               known_at: dt.datetime | None, entities: Any, unit: Any, definition: Any, require: Any,
               sort: Any) -> Query:
    """Check a screen's arguments before any query (cutoff and known_at come checked as
    datetimes; ``selection`` None is a derived metric's "each entity's latest")."""
    if cutoff is None:
        raise InputError("cutoff", "a screen needs a cutoff: only what was public by then counts")
    check_require(require)
    if sort not in SORTS:
        raise InputError("sort", f"must be one of {', '.join(SORTS)}; got {limits.shown(sort)}")
    return Query(attribute=_text("attribute", attribute), selection=selection, cutoff=cutoff,
                 known_at=known_at, entities=entity_list(entities),
                 unit=None if unit is None else _text("unit", unit, empty=True),
                 definition=_text("definition", definition, empty=True), require=require, sort=sort)


# ---------------------------------------------------------------- the screen


def read(tx: Tx, scope: Scope, q: Query) -> tuple[dt.datetime, list[str], list[str], list[Answer]]:
    """``screen.read``: (known_at, universe, unknown entities, an Answer per matched key)."""
    row = tx.one("screen.read", q=q.params(), **facts.require_params(q.require), **facts.scope_params(scope))
    assert row is not None  # the statement always returns its one row
    answers = [facts._answer(a, q.cutoff, q.require)
               for a in sorted(row["answers"], key=lambda a: a["i"])]
    known_at = from_micros(row["known_at"])
    return known_at, universe(tx, scope, q, known_at, row["ids"], answers), row["unknown"], answers


def universe(tx: Tx, scope: Scope, q: Query, known_at: dt.datetime, ids: list[str],
             answers: list[Answer]) -> list[str]:
    """The universe among the entities screen.read read: the given entities, or those with
    a value public by the cutoff - every one with an answer found, the rest as
    ``screen.universe`` finds them at the same known_at (see screen.read)."""
    if q.entities is not None:
        return ids
    found = {a.entity for a in answers if a.status != "not_found"}
    rest = [i for i in ids if i not in found]
    if not rest:
        return ids
    row = tx.one("screen.universe", ids=rest, attribute=q.attribute, definition=q.definition,
                 cutoff=epoch(q.cutoff), known_at=epoch(known_at), **facts.scope_params(scope))
    assert row is not None  # the statement always returns its one row
    joined = set(row["ids"])
    return [i for i in ids if i in found or i in joined]


def _fit(selection: Selection, answer: Answer) -> tuple[Any, ...]:
    """Sort key of a candidate key's answer: best fit, then most recently public, then period."""
    versions = answer.shown
    latest = max(e.available_by for v in versions for e in v.sources)
    period = versions[0].period
    return (selection.distance(period), -latest.timestamp(), period.text)


def choose(q: Query, universe: list[str], answers: list[Answer], cutoff: dt.datetime,
           known_at: dt.datetime) -> list[Answer]:
    """One Answer per entity of the universe: its best-fitting candidate key's, or
    not_found with what each filter removed on its keys (see the module docstring)."""
    if q.units is not None and q.unit is None:
        answers = [a for a in answers if a.status == "not_found" or q.units(a.shown[0].unit)]
    by_entity: dict[str, list[Answer]] = {}
    for answer in answers:
        by_entity.setdefault(answer.entity, []).append(answer)
    entities = q.entities if q.entities is not None else universe
    if q.units is None:
        _one_unit(q, [a for a in answers if a.status != "not_found"])
    out = []
    for entity in entities:
        mine = by_entity.get(entity, [])
        found = [a for a in mine if a.status != "not_found"]
        if q.units is not None and q.unit is None and len({v.unit for a in found for v in a.shown}) > 1:
            out.append(_in_several_units(q, found, cutoff, known_at))
        elif found:
            # most entities have one candidate: its fit need not be measured
            out.append(found[0] if len(found) == 1 else min(found, key=lambda a: _fit(q.selected, a)))
        else:
            out.append(Answer(status="not_found", entity=entity, attribute=q.attribute, cutoff=cutoff,
                              known_at=known_at, explain=sum((a.explain for a in mine), Explain())))
    return out


def _in_several_units(q: Query, found: list[Answer], cutoff: dt.datetime, known_at: dt.datetime) -> Answer:
    """An entity whose figure comes in several units a line item allows (TSMC's TWD figure
    and its USD convenience translation): conflicted between each unit's best-fitting key,
    every candidate shown, as a conflict of publishers is - never a silent pick, and never
    a refusal of the whole universe for one filer's second unit."""
    by_unit: dict[str | None, list[Answer]] = {}
    for answer in found:
        by_unit.setdefault(answer.shown[0].unit, []).append(answer)
    best = [min(group, key=lambda a: _fit(q.selected, a)) for _, group in sorted(by_unit.items(),
                                                                                key=lambda u: u[0] or "")]
    shown = tuple(v for a in best for v in a.shown)
    first = found[0]
    return Answer(status="conflicted", entity=first.entity, attribute=first.attribute, cutoff=cutoff,
                  known_at=known_at, require=first.require, candidates=shown,
                  explain=sum((a.explain for a in found), Explain()))


def _one_unit(q: Query, found: list[Answer]) -> None:
    """Without an asked unit, every candidate key must share one: a choice between units
    would be a silent pick (an entity's USD translation beside its TWD figure)."""
    if q.unit is not None:
        return
    by_unit: dict[str, set[str]] = {}
    for answer in found:
        for v in answer.shown:
            by_unit.setdefault(v.unit, set()).add(answer.entity)
    units = {unit: len(entities) for unit, entities in by_unit.items()}
    if len(units) > 1:
        listed = ", ".join(f"{u or '(no unit)'!r}: {n} entit{'y' if n == 1 else 'ies'}"
                           for u, n in sorted(units.items()))
        raise InputError("unit", f"{q.attribute} for {q.selected.label} comes in several units "
                                 f"({listed}); pass unit= to screen one")


_STATUS_ORDER = {"active": 0, "conflicted": 1, "not_found": 2}


def ordered(answers: list[Answer], sort: str) -> list[Answer]:
    """The rows in the asked order (see the module docstring)."""
    by_entity = sorted(answers, key=lambda a: a.entity)
    if sort == "entity":
        return by_entity
    active = [a for a in by_entity if a.status == "active"]
    rest = sorted((a for a in by_entity if a.status != "active"), key=lambda a: _STATUS_ORDER[a.status])

    def value(a: Answer) -> tuple[int, Any]:
        v = a.value
        return (0, v) if isinstance(v, Decimal) else (1, str(v))

    numbers = sorted((a for a in active if isinstance(a.value, Decimal)), key=value,
                     reverse=sort == "-value")
    others = sorted((a for a in active if not isinstance(a.value, Decimal)), key=value,
                    reverse=sort == "-value")
    return numbers + others + rest


@collector.paused()  # see graphmem/collector.py
def screen(tx: Tx, scope: Scope, q: Query) -> Screen:
    """A point-in-time screen in one statement and, when some entities have no answer, a
    second (see the module docstring)."""
    known_at, universe, unknown, answers = read(tx, scope, q)
    rows = choose(q, universe, answers, q.cutoff, known_at)
    return Screen(attribute=q.attribute, definition=q.definition, unit=q.unit,
                  frame=q.selected.label if q.selected.kind != "period" else None,
                  period=q.selected.period, cutoff=q.cutoff, known_at=known_at,
                  universe="entities" if q.entities is not None else "attribute", sort=q.sort,
                  answers=tuple(ordered(rows, q.sort)), unknown=tuple(sorted(unknown)))
