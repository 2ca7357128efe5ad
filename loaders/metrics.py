"""Derived filing metrics with lineage: last-twelve-months values and the essay's
"revenue retained per $100 of volume".

Each LTM window is chosen per company from what that company had made public by
the cutoff — never from a calendar — so two companies can get different windows
for the same cutoff. Every number is recorded through ``Memory.derive`` with its
inputs, so ``Memory.lineage`` and ``Memory.impact`` can trace it to its filings.

An LTM ending on day E is built, in this order of preference, from:
1. an annual period ending E (the fiscal year itself);
2. four contiguous quarters ending E;
3. year-to-date ending E + the prior fiscal year − the prior year-to-date.

``screen_ltm`` does the same for many companies at once, as a point-in-time screen
(graphmem/screen.py): each company's window at a calendar frame, or its latest.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from decimal import Decimal

from graphmem import Answer, FactIn, FactVersion, InputError, Memory, Period, Scope, Screen
from graphmem import screen as screening

Span = tuple[dt.date, dt.date]  # a duration's (start, end)
QUARTER = range(80, 101)
YEAR = range(350, 381)
YTD = range(170, 290)  # six or nine months


@dataclass(frozen=True)
class Window:
    """One way to build an LTM value ending on ``end``: inputs by role, and the formula."""

    end: dt.date
    start: dt.date
    inputs: dict[str, FactVersion]
    formula: str

    def value(self) -> Decimal:
        v = {role: Decimal(version.value) for role, version in self.inputs.items()}
        if self.formula == "annual":
            return v["annual"]
        if self.formula == "four_quarters":
            return sum((v[f"q{i}"] for i in range(1, 5)), Decimal(0))
        return v["ytd"] + v["prior_year"] - v["prior_ytd"]


def _visible(answers: list[Answer], unit: str) -> tuple[dict[Span, FactVersion], dict[Span, Answer]]:
    """Of one entity's answers: each duration value in ``unit`` (no definition) by
    (start, end), and apart from them the periods whose answer is conflicted."""
    found: dict[Span, FactVersion] = {}
    conflicted: dict[Span, Answer] = {}
    for a in answers:
        v = a.version or (a.candidates[0] if a.candidates else None)
        if v is None or v.unit != unit or v.definition != "" or v.period.start is None:
            continue
        if a.status == "conflicted":
            conflicted[(v.period.start, v.period.end)] = a  # never silently picked
        else:
            found[(v.period.start, v.period.end)] = v
    return found, conflicted


def _days(start: dt.date, end: dt.date) -> int:
    return (end - start).days + 1


def _day_before(day: dt.date) -> dt.date | None:
    """The day before ``day``; None before the year 1, where no period can end."""
    return None if day == dt.date.min else day - dt.timedelta(days=1)


def windows(mem: Memory, scope: Scope, *, entity: str, concept: str, cutoff: dt.datetime,
            unit: str = "USD") -> list[Window]:
    """Every LTM window that can be built from what was public by the cutoff, latest first
    (a conflicted period is never an input: windows avoid it)."""
    answers = mem.facts_as_of(scope, entity=entity, attribute=concept, cutoff=cutoff)
    return built(_visible(answers, unit)[0])


def built(values: dict[Span, FactVersion]) -> list[Window]:
    """Every LTM window these duration values (by (start, end)) can build, latest first."""
    by_end: dict[dt.date, list[tuple[dt.date, FactVersion]]] = {}
    for (start, end), version in values.items():
        by_end.setdefault(end, []).append((start, version))
    out: list[Window] = []
    for end in sorted(by_end, reverse=True):
        window = _annual(by_end, end) or _quarters(by_end, end) or _ytd(by_end, end)
        if window:
            out.append(window)
    return out


def _annual(by_end, end):
    for start, v in by_end[end]:
        if _days(start, end) in YEAR:
            return Window(end, start, {"annual": v}, "annual")
    return None


def _quarter_ending(by_end, end):
    if end is None:
        return None
    return next(((s, v) for s, v in by_end.get(end, []) if _days(s, end) in QUARTER), None)


def _quarters(by_end, end):
    chosen, cursor = [], end
    for _ in range(4):
        q = _quarter_ending(by_end, cursor)
        if q is None:
            return None
        chosen.append(q)
        cursor = _day_before(q[0])
    chosen.reverse()
    return Window(end, chosen[0][0], {f"q{i}": v for i, (_, v) in enumerate(chosen, 1)},
                  "four_quarters")


def _ytd(by_end, end):
    for start, ytd in by_end[end]:
        if _days(start, end) not in YTD:
            continue
        before = _day_before(start)
        prior_year = next(((s, v) for s, v in by_end.get(before, [])
                           if _days(s, before) in YEAR), None)
        if prior_year is None:
            continue
        for prior_end in by_end:
            if abs((end - prior_end).days - 365) > 7:
                continue
            for s, prior_ytd in by_end[prior_end]:
                if s == prior_year[0] and abs(_days(s, prior_end) - _days(start, end)) <= 7:
                    return Window(end, prior_end + dt.timedelta(days=1),
                                  {"ytd": ytd, "prior_year": prior_year[1], "prior_ytd": prior_ytd},
                                  "ytd_plus_prior_year_minus_prior_ytd")
    return None


def ltm(mem: Memory, scope: Scope, *, entity: str, concept: str, cutoff: dt.datetime,
        unit: str = "USD", end: dt.date | None = None) -> FactVersion:
    """The LTM value of ``concept`` as of ``cutoff``, recorded as a derivation.

    Uses the latest window the entity had published by the cutoff, or the window
    ending ``end`` when given. Raises InputError when no window can be built.
    """
    found = windows(mem, scope, entity=entity, concept=concept, cutoff=cutoff, unit=unit)
    if end is not None:
        found = [w for w in found if w.end == end]
    if not found:
        raise InputError(f"ltm({entity}, {concept})",
                         f"no LTM window can be built from what was public by {cutoff.isoformat()}"
                         + (f" ending {end}" if end else ""))
    return _record(mem, scope, entity, concept, unit, found[0], cutoff)


def _record(mem: Memory, scope: Scope, entity: str, concept: str, unit: str, window: Window,
            cutoff: dt.datetime) -> FactVersion:
    """The window's LTM value, recorded as a derivation of its inputs (idempotent)."""
    return mem.derive(
        scope, method="ltm", method_version="1",
        params={"concept": concept, "formula": window.formula, "unit": unit},
        inputs={role: v.version_id for role, v in window.inputs.items()},
        output=FactIn(entity=entity, attribute=concept, definition="ltm", unit=unit,
                      period=Period(start=window.start, end=window.end), value=window.value()),
        cutoff=cutoff,
    )


LOOKBACK = dt.timedelta(days=730)  # screen_ltm without a frame: figures of the last two years
INPUTS_BEFORE = dt.timedelta(days=380)  # how long before its end a window's inputs end


def screen_ltm(mem: Memory, scope: Scope, *, concept: str, cutoff: dt.datetime, frame: str | None = None,
               known_at: dt.datetime | None = None, entities: list[str] | None = None, unit: str = "USD",
               sort: str = "entity") -> Screen:
    """Every company's LTM value of ``concept`` using only what was public by ``cutoff``
    (as recorded by ``known_at``), each window chosen per company as ``ltm`` does.

    With ``frame`` (``CY2024Q3``; a year means its fourth quarter), the window whose last
    day belongs to that quarter's end (``CY2024Q3I``: the quarter end nearest it, see
    graphmem/screen.py), the nearest if several; without, each company's latest window
    among its figures of the two years before the cutoff. Each value is recorded as a
    derivation of its inputs, as ``ltm`` records it (again: nothing new), and is the
    row's version; ``Screen.inputs`` lists the inputs. A company whose window would take
    a conflicted figure is ``conflicted`` with that figure's candidates, never given a
    window around it; one without a window is ``not_found``. The universe: ``entities``,
    or every company with a figure of the concept in the span read (the frame's window
    and the 380 days before it, or the two years before the cutoff).
    """
    end = _ltm_end(frame)
    q = screening.make_query(attribute=concept, selection=end, cutoff=cutoff, known_at=known_at,
                             entities=entities, unit=unit, definition="ltm", require=None,
                             sort=sort)  # checks the arguments before any query
    span = ((end.end_from - INPUTS_BEFORE, end.end_to) if end else (_lookback(cutoff), None))
    known = q.known_at or mem.recorded_through(scope)  # every read of the screen at one known_at
    answers = mem.facts_as_of(scope, attribute=concept, valid_from=span[0], valid_to=span[1],
                              cutoff=cutoff, known_at=known)
    by_entity: dict[str, list[Answer]] = {}
    for a in answers:
        by_entity.setdefault(a.entity, []).append(a)
    universe = list(q.entities) if q.entities is not None else sorted(by_entity)
    rows, inputs = [], {}
    for entity in universe:
        answer, window = _ltm_answer(mem, scope, entity, q, end, by_entity.get(entity, []), known)
        rows.append(answer)
        if window is not None:
            inputs[entity] = tuple(window.inputs.values())
    unknown = [e for e in universe if e not in by_entity and mem.entity(scope, e) is None]
    return Screen(attribute=concept, definition="ltm", unit=unit,
                  frame=screening.Selection.frame(frame).label if frame else None, period=None,
                  cutoff=cutoff, known_at=known, universe="entities" if entities is not None else "attribute",
                  sort=sort, answers=tuple(screening.ordered(rows, sort)), unknown=tuple(sorted(unknown)),
                  inputs=inputs)


def _lookback(cutoff: dt.datetime) -> dt.date:
    """The first period end a screen without a frame reads: LOOKBACK before the cutoff,
    or the first day there is (a cutoff in the years 1 and 2 reaches before it)."""
    day = cutoff.date()
    return day - LOOKBACK if day - dt.date.min >= LOOKBACK else dt.date.min


def _ltm_end(frame: str | None) -> screening.Selection | None:
    """The instant frame an LTM window's last day must belong to (a year: its Q4)."""
    if frame is None:
        return None
    parsed = screening.Selection.frame(frame)
    if parsed.kind == "instant":
        return parsed
    quarter = (parsed.end.month - 1) // 3 + 1
    return screening.Selection.frame(f"CY{parsed.end.year}Q{quarter}I")


def _pick(found: list[Window], end: screening.Selection | None) -> Window | None:
    if end is None:
        return found[0] if found else None
    fits = [w for w in found if end.matches(Period(end=w.end))]
    return min(fits, key=lambda w: (end.distance(Period(end=w.end)), -w.end.toordinal()), default=None)


def _ltm_answer(mem: Memory, scope: Scope, entity: str, q: screening.Query, end: screening.Selection | None,
                answers: list[Answer], known: dt.datetime) -> tuple[Answer, Window | None]:
    """One company's row: its recorded LTM value, the conflict in its way, or not_found."""
    values, conflicted = _visible(answers, q.unit or "USD")
    window = _pick(built(values), end)
    # the window it would take if its conflicted figures could be used
    would = _pick(built({**values, **{span: a.candidates[0] for span, a in conflicted.items()}}), end)
    disputed = [conflicted[(v.period.start, v.period.end)] for v in (would.inputs.values() if would else ())
                if (v.period.start, v.period.end) in conflicted]
    base = {"entity": entity, "attribute": q.attribute, "cutoff": q.cutoff, "known_at": known}
    if disputed:
        return Answer(status="conflicted", candidates=tuple(c for a in disputed for c in a.candidates),
                      **base), None
    if window is None:
        return Answer(status="not_found", **base), None
    version = _record(mem, scope, entity, q.attribute, q.unit or "USD", window, q.cutoff)
    return Answer(status="active", version=version, **base), window


@dataclass(frozen=True)
class Retained:
    """Revenue retained per $100 of volume, and the LTM values it was computed from."""

    entity: str
    version: FactVersion
    revenue: FactVersion
    cost: FactVersion
    volume: FactVersion

    @property
    def per_100(self) -> Decimal:
        return Decimal(self.version.value)

    @property
    def window(self) -> Period:
        return self.version.period


def retained_per_100(mem: Memory, scope: Scope, *, entity: str, revenue: str, cost: str,
                     volume: str, cutoff: dt.datetime, unit: str = "USD") -> Retained:
    """(LTM revenue − LTM cost) / LTM volume × 100, on the latest window all three share."""
    ends = None
    for concept in (revenue, cost, volume):
        mine = {w.end for w in windows(mem, scope, entity=entity, concept=concept,
                                       cutoff=cutoff, unit=unit)}
        ends = mine if ends is None else ends & mine
    if not ends:
        raise InputError(f"retained_per_100({entity})",
                         f"no common LTM window for {revenue}, {cost}, {volume} by {cutoff.date()}")
    end = max(ends)
    parts = {c: ltm(mem, scope, entity=entity, concept=c, cutoff=cutoff, unit=unit, end=end)
             for c in (revenue, cost, volume)}
    rev, cst, vol = (Decimal(parts[c].value) for c in (revenue, cost, volume))
    value = ((rev - cst) / vol * 100).quantize(Decimal("0.000001"))
    version = mem.derive(
        scope, method="retained_per_100", method_version="1",
        params={"revenue": revenue, "cost": cost, "volume": volume},
        inputs={"revenue": parts[revenue].version_id, "cost": parts[cost].version_id,
                "volume": parts[volume].version_id},
        output=FactIn(entity=entity, attribute="RetainedPer100Volume", definition="ltm",
                      unit=f"{unit} per 100 {unit}", period=parts[revenue].period, value=value),
        cutoff=cutoff,
    )
    return Retained(entity, version, parts[revenue], parts[cost], parts[volume])
