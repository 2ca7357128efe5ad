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
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from decimal import Decimal

from graphmem import Answer, FactIn, FactVersion, InputError, Memory, Period, Scope

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


def _visible(mem: Memory, scope: Scope, entity: str, concept: str, unit: str,
             cutoff: dt.datetime) -> dict[tuple[dt.date | None, dt.date], FactVersion]:
    """Every duration value of the concept public by the cutoff, by (start, end)."""
    found: dict[tuple[dt.date | None, dt.date], FactVersion] = {}
    answers: list[Answer] = mem.facts_as_of(scope, entity=entity, attribute=concept, cutoff=cutoff)
    for a in answers:
        if a.status == "conflicted" or a.version is None:
            continue  # a conflicted period is never silently picked; windows avoid it
        if a.version.unit == unit and a.version.definition == "" and a.version.period.start:
            found[(a.version.period.start, a.version.period.end)] = a.version
    return found


def _days(start: dt.date, end: dt.date) -> int:
    return (end - start).days + 1


def windows(mem: Memory, scope: Scope, *, entity: str, concept: str, cutoff: dt.datetime,
            unit: str = "USD") -> list[Window]:
    """Every LTM window that can be built from what was public by the cutoff, latest first."""
    values = _visible(mem, scope, entity, concept, unit, cutoff)
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
    return next(((s, v) for s, v in by_end.get(end, []) if _days(s, end) in QUARTER), None)


def _quarters(by_end, end):
    chosen, cursor = [], end
    for _ in range(4):
        q = _quarter_ending(by_end, cursor)
        if q is None:
            return None
        chosen.append(q)
        cursor = q[0] - dt.timedelta(days=1)
    chosen.reverse()
    return Window(end, chosen[0][0], {f"q{i}": v for i, (_, v) in enumerate(chosen, 1)},
                  "four_quarters")


def _ytd(by_end, end):
    for start, ytd in by_end[end]:
        if _days(start, end) not in YTD:
            continue
        prior_year = next(((s, v) for s, v in by_end.get(start - dt.timedelta(days=1), [])
                           if _days(s, start - dt.timedelta(days=1)) in YEAR), None)
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
    window = found[0]
    return mem.derive(
        scope, method="ltm", method_version="1",
        params={"concept": concept, "formula": window.formula, "unit": unit},
        inputs={role: v.version_id for role, v in window.inputs.items()},
        output=FactIn(entity=entity, attribute=concept, definition="ltm", unit=unit,
                      period=Period(start=window.start, end=window.end), value=window.value()),
        cutoff=cutoff,
    )


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
