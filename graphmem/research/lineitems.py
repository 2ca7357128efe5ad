"""Standardized line items: one quantity, the concepts companies report it under, the
choice made per company from what was public by each cutoff, with lineage.

**A family** is data (graphmem/research/lineitems.json is the built-in one; users pass
their own file in the same shape to :func:`load`): a name, a version, and items. An
item names its members - US-GAAP or IFRS elements (``us-gaap:Revenues``,
``ifrs-full:Revenue``) in order of preference, each with a sign (``-1``: the element's
sign is the opposite of the item's, as a payment for capital expenditure is reported
positive and the item is a cash outflow) - the unit its values take (``currency``: an
ISO code such as ``USD``; ``per_share``: a currency per share, ``USD/shares``;
``shares``) and its period (``duration`` or ``instant``). A panel or screen of an item
asks frames of its period's kind - ``CY2024Q3``, ``CY2024`` or ``latest="quarter"``
(``"year"``) for a duration, ``CY2024Q3I`` or ``latest="instant"`` for an instant - and
refuses the other kind (InputError naming the frames): no key could answer there.

**The choice, per cell, without look-ahead.** A line item's panel (or screen) is the
panel of each member concept, combined cell by cell: an entity's value for a frame at a
cutoff is that of the first member, in the family's order, that has an ``active`` or
``conflicted`` row for that frame and cutoff in a unit the item allows. The others are
``skipped`` with why: ``unit X`` (its row, or its keys of the frame, in a unit that is
not the item's), what the read rule removed of its keys (``invalidated``,
``retracted``, ``erased``, ``lacking evidence``: its ``explain``), ``latest CY...``
(with ``latest``: an older frame than the chosen one), else ``nothing public`` (no key
of the frame was public by the cutoff). Each member's row is a screen's, so only what
was public by the cutoff can decide the choice: a company that moved from
``SalesRevenueNet`` to ``RevenueFromContractWithCustomerExcludingAssessedTax`` gets
the first for a quarter until the second is filed for it - and the second afterwards,
once a later filing restates that quarter under it. With ``latest``, the cell's frame
is the latest in which any member has a candidate in a unit the item allows (a key in
another unit never decides it), and the first member that has one there is chosen.

**A read never writes.** A cell's answer is the reported version it was chosen from,
its value (and a conflicted cell's candidates') times the member's sign; the cell's
``version_id`` and ``reported_version_id`` are that version's id. So every cell is
what ``screen`` and ``as_of`` of its concept answer at its cutoff and known_at, signed.
All member panels read in one transaction at one known_at (given, or the server's time
when the panel starts, asked once the arguments are checked), which the Panel reports.
A cell no member answers keeps nothing of a member's row: no value, unit or period, and
no first value, first version or restated flag.

**Units.** With ``unit=None`` each entity's keys in a unit the item does not allow are
left out and each filer answers in its own currency: a panel of revenue takes each
filer's figure in its own currency, and a filer with two currencies for one frame (a
20-F's figure and its USD convenience translation) reads conflicted between them, every
candidate shown (graphmem/screen.py's Units). With ``unit=`` the member panels read that
unit only.

**Lineage, when asked.** :func:`record` records the values of a panel or screen read
as of now, in ONE write transaction: each distinct reported version with ``Memory.
derive``'s rule - method ``lineitem``, the family's version as method version,
parameters (family, item, concept, sign), the reported version as input, the output a
fact of attribute ``item:<family>:<name>`` (same entity, unit and period; the signed
value). Then ``lineage`` shows the reported fact behind a standardized value and
``impact`` of the filing that reported it reaches the derived fact. Recording is
idempotent: the same reported version gives the same derived version every time.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from dataclasses import dataclass, replace
from decimal import Decimal
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from .. import limits
from ..errors import InputError
from ..models import Answer, Explain, FactIn, FactVersion, Scope, Screen
from ..screen import Selection
from .panel import Panel, PanelCell, Refused, frame_end

if TYPE_CHECKING:
    from ..memory import Memory

UNITS = {"currency": re.compile(r"[A-Z]{3}"), "per_share": re.compile(r"[A-Z]{3}/shares"),
         "shares": re.compile(r"shares")}
METHOD = "lineitem"


@dataclass(frozen=True)
class Member:
    concept: str
    sign: int = 1


@dataclass(frozen=True)
class LineItem:
    """One standardized quantity of a family (pass it as a screen's or panel's attribute)."""

    family: str
    version: str
    name: str
    label: str
    unit: Literal["currency", "per_share", "shares"]
    period: Literal["duration", "instant"]
    members: tuple[Member, ...]

    @property
    def attribute(self) -> str:
        """The attribute the standardized values are recorded under."""
        return f"item:{self.family}:{self.name}"

    def allows(self, unit: str | None) -> bool:
        return unit is not None and UNITS[self.unit].fullmatch(unit) is not None


@dataclass(frozen=True)
class Family:
    name: str
    version: str
    items: dict[str, LineItem]

    def __getitem__(self, name: str) -> LineItem:
        if name not in self.items:
            raise InputError("item", f"{name!r} is not an item of family {self.name}: "
                                     f"{', '.join(sorted(self.items))}")
        return self.items[name]


def _member(where: str, raw: Any) -> Member:
    body = {"concept": raw} if isinstance(raw, str) else raw
    if not isinstance(body, dict) or not isinstance(body.get("concept"), str) or ":" not in body["concept"]:
        raise InputError(where, "a member is 'taxonomy:Concept' or {\"concept\": ..., \"sign\": 1 or -1}")
    limits.check_text(where, body["concept"], limits.IDENTIFIER_BYTES)
    sign = body.get("sign", 1)
    # an integer: true equals 1 and -1.0 equals -1, but a Decimal times a float fails
    if isinstance(sign, bool) or not isinstance(sign, int) or sign not in (1, -1):
        raise InputError(where, f"sign must be 1 or -1 (an integer), got {sign!r}")
    return Member(body["concept"], sign)


def parse(data: Any, origin: str) -> Family:
    """A family from its JSON data; InputError naming the file and item at fault."""
    if not isinstance(data, dict) or not isinstance(data.get("items"), dict) or not data["items"]:
        raise InputError(origin, "a family is {\"family\": name, \"version\": v, \"items\": {name: item}}")
    name, version = str(data.get("family", "")), str(data.get("version", ""))
    if not name or not version:
        raise InputError(origin, "a family needs a name (\"family\") and a \"version\"")
    items = {}
    for key, item in data["items"].items():
        where = f"{origin}: items.{key}"
        if not isinstance(item, dict) or item.get("unit") not in UNITS or \
                item.get("period") not in ("duration", "instant"):
            raise InputError(where, f"an item needs unit ({', '.join(UNITS)}), period (duration or "
                                    "instant) and concepts")
        concepts = item.get("concepts")
        if not isinstance(concepts, list) or not concepts:
            raise InputError(where, "concepts: a non-empty list, in order of preference")
        members = tuple(_member(f"{where}.concepts[{n}]", c) for n, c in enumerate(concepts))
        items[key] = LineItem(name, version, key, str(item.get("label", key)), item["unit"], item["period"],
                              members)
    return Family(name, version, items)


def load(path: str | Path | None = None) -> Family:
    """A family from a JSON file, or the built-in one."""
    if path is None:
        text = resources.files("graphmem.research").joinpath("lineitems.json").read_text(encoding="utf-8")
        return parse(json.loads(text), "lineitems.json")
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(str(path), f"cannot read a family from it: {exc}") from exc
    return parse(data, str(path))  # outside the try: its InputError (a ValueError) names the item


# ---------------------------------------------------------------- panels and screens


def _combine(item: LineItem, panels: list[Panel], refused: list[Refused],
             latest: bool) -> dict[tuple, tuple[PanelCell, int | None, list]]:
    """Per (cutoff, frame or None, entity): the chosen member's cell (or, when none is,
    the first member's with every member's ``explain`` summed), its index, and the
    members skipped before it with why (see the module docstring)."""
    by_member = [{(c.cutoff, None if latest else c.frame, c.entity): c for c in p.cells} for p in panels]
    out: dict[tuple, tuple[PanelCell, int | None, list]] = {}
    for where in dict.fromkeys(k for cells in by_member for k in cells):
        cells = [cells.get(where) for cells in by_member]
        usable = [c if c is not None and c.status != "not_found" and item.allows(c.unit) else None for c in cells]
        if latest:  # the latest frame any member has, then the first member that has it
            frame = max((c.frame for c in usable if c), default=None,
                        key=frame_end)
            usable = [c if c and c.frame == frame else None for c in usable]
        chosen = next((n for n, c in enumerate(usable) if c is not None), None)
        skipped = [_why(item.members[n].concept, c, frame if latest else None, refused[n].get(where, ()))
                   for n, c in enumerate(cells[:chosen] if chosen is not None else cells)]
        if chosen is not None:
            out[where] = (cells[chosen], chosen, skipped)  # type: ignore[assignment]
            continue
        present = [c for c in cells if c is not None]
        explain = sum((c.answer.explain for c in present if c.answer.explain), Explain())
        out[where] = (present[0].model_copy(update={"answer": present[0].answer.model_copy(
            update={"explain": explain})}), None, skipped)
    return out


# what removed a key, by the read rule's filter (Explain's fields, in its order)
_REMOVED = {"erased": "erased", "invalidated": "invalidated", "retracted": "retracted",
            "evidence": "lacking evidence"}


def _why(concept: str, cell: PanelCell | None, frame: str | None, refused: tuple[str, ...]) -> str:
    """Why a member was skipped. Without a row: the units its keys came in that the item
    refuses (``refused``), then what the read rule removed of its keys (its
    ``explain``), else nothing public; with one: a frame older than the latest, or a
    unit the item refuses."""
    if cell is None or cell.status == "not_found":
        explain = cell.answer.explain if cell is not None else Explain()
        reasons = [f"unit {' or '.join(refused)}"] if refused else []
        reasons += [why for name, why in _REMOVED.items() if getattr(explain, name)]
        return f"{concept}: {', '.join(reasons) or 'nothing public'}"
    if frame is not None and cell.frame != frame:
        return f"{concept}: latest {cell.frame}"
    return f"{concept}: unit {cell.unit}"


def _times(value: Decimal, sign: int) -> Decimal:
    """``value`` times the member's ``sign``, exactly: Decimal arithmetic rounds to its
    context's 28 digits (``* -1`` and even ``* 1``), and a stored value may have 64. A
    zero stays as it is: negated it would read ``-0`` (a CSV, a screen), where the item
    recorded from it reads 0."""
    return value if sign == 1 or not value else value.copy_negate()


def _signed(answer: Answer, sign: int) -> Answer:
    """The answer with its versions' values times the member's sign."""
    def flip(v: FactVersion) -> FactVersion:
        return v.model_copy(update={"value": _times(v.value, sign)}) if isinstance(v.value, Decimal) else v

    if sign == 1:
        return answer
    return answer.model_copy(update={"version": flip(answer.version) if answer.version else None,
                                     "candidates": tuple(flip(v) for v in answer.candidates)})


def _other_kind(frame: str) -> str:
    """The frame of the other kind that goes with ``frame``: an instant's quarter, the
    instant ending a quarter or a year."""
    if frame.endswith("I"):
        return frame[:-1]
    return f"{frame}I" if "Q" in frame else f"{frame}Q4I"


def _period(item: LineItem, frames: tuple[Selection, ...], latest: str | None, name: str) -> None:
    """Refuse frames of the other kind than the item's period (``name``: the frames'
    argument): an instant item has no key in a duration frame, nor a duration item in an
    instant one, so every cell would be not_found without a word."""
    instant = item.period == "instant"
    if latest is not None and (latest == "instant") != instant:
        asked = "latest='instant'" if instant else "latest='quarter' or 'year'"
        raise InputError("latest", f"{item.name} is {'an instant' if instant else 'a duration'} item: "
                                   f"ask {asked}, not {latest!r}")
    for s in frames:
        if (s.kind == "instant") != instant:
            kind = "an instant frame such as" if instant else "a quarter or a year such as"
            raise InputError(name, f"{item.name} is {'an instant' if instant else 'a duration'} item and "
                                   f"{s.label} {'a duration' if instant else 'an instant'} frame: ask {kind} "
                                   f"{_other_kind(s.label)}")


def _member_panels(mem: Memory, scope: Scope, item: LineItem, known_at: dt.datetime | None,
                   **kwargs: Any) -> list[tuple[Panel, Refused]]:
    """Each member's panel, and the units its unit rule refused (panel.panel_refusing),
    in one read transaction at one known_at, with the item's unit rule (see Units in the
    module docstring). The arguments are checked before any query, the server's time
    included: bad ones never wait for a server. They are checked once, for the first
    member, and the others take that query with their concept (checked with the family):
    cutoffs, frames or entities given as an iterator are read once, as a panel reads
    them - read again per member, the second found them spent and refused them as empty."""
    from . import panel as panels

    first = panels.make_query(attribute=item.members[0].concept, known_at=known_at, definition="", require=None,
                              **kwargs)
    _period(item, first.frames, first.latest, "frames")
    at = known_at or mem.recorded_through(scope)
    base = replace(first.base, units=item.allows, known_at=at)
    queries = [replace(first, base=replace(base, attribute=m.concept)) for m in item.members]
    return mem.db.read(lambda tx: [panels.panel_refusing(tx, scope, q) for q in queries], "panel")


def panel(mem: Memory, scope: Scope, item: LineItem, *, known_at: dt.datetime | None = None,
          **kwargs: Any) -> Panel:
    """A line item's panel: each member's panel, combined cell by cell (see the module
    docstring); a read only. Takes ``Memory.panel``'s arguments (known_at checked)."""
    return _panel(mem, scope, item, known_at, **kwargs)[0]


def _panel(mem: Memory, scope: Scope, item: LineItem, known_at: dt.datetime | None,
           **kwargs: Any) -> tuple[Panel, tuple[FactVersion | None, ...]]:
    """The line item's panel and, cell by cell, the reported version its value was
    chosen from as its member's panel read it (None: no active value): with the evidence
    that was live at the cell's cutoff as known at known_at, never a filing made later,
    as ``screen``'s ``inputs`` must show it."""
    kwargs = {"frames": None, "latest": None, "entities": None, "unit": None, "first_reported": False, **kwargs}
    members = _member_panels(mem, scope, item, known_at, **kwargs)
    panels = [p for p, _ in members]
    latest = kwargs.get("latest") is not None
    rows = []
    for (_, frame, _), (cell, chosen, skipped) in _combine(item, panels, [r for _, r in members], latest).items():
        member = item.members[chosen] if chosen is not None else None
        update: dict[str, Any] = {"concept": member.concept if member else None, "skipped": tuple(skipped)}
        if member is None:  # nothing of the member row it was built from stays (its value, first value ...)
            answer = Answer(status="not_found", entity=cell.entity, attribute=item.attribute, cutoff=cell.cutoff,
                            known_at=cell.answer.known_at, require=cell.answer.require, explain=cell.answer.explain)
            update.update(status="not_found", value=None, unit=None, period=None, available_by=None, filings=(),
                          version_id=None, first_value=None, first_version_id=None, restated=None,
                          frame=frame if not latest else None)
        else:
            answer = _signed(cell.answer, member.sign).model_copy(update={"attribute": item.attribute})
            update.update(value=answer.version.value if answer.version else None,
                          reported_version_id=cell.version_id)
            if isinstance(cell.first_value, Decimal):
                update["first_value"] = _times(cell.first_value, member.sign)
        rows.append((cell.model_copy(update={**update, "answer": answer}), cell.answer.version if member else None))
    order = {f: i for i, f in enumerate(panels[0].frames)}
    rows.sort(key=lambda r: (r[0].cutoff, order.get(r[0].frame or "", 0), r[0].entity))
    return panels[0].model_copy(update={
        "attribute": item.attribute, "cells": tuple(c for c, _ in rows), "item": item.name, "family": item.family,
        "unknown": tuple(sorted(set.intersection(*(set(p.unknown) for p in panels))))}), tuple(v for _, v in rows)


def screen(mem: Memory, scope: Scope, item: LineItem, *, frame: str, cutoff: dt.datetime | None,
           **kwargs: Any) -> Screen:
    """A line item's screen: its panel at one frame and cutoff, as a Screen whose
    ``choices`` say, per entity, which concept was chosen and which were skipped, and
    whose ``inputs`` hold the reported version behind each value, as reported - as the
    screen read it, with the evidence live at its cutoff and known_at (a filing made
    after the cutoff, or a record made after known_at, is no part of it). Its
    arguments are refused in a screen's words (``cutoff``, ``frame``), not a panel's."""
    from ..screen import SORTS, ordered

    if cutoff is None:  # as screen.make_query says it
        raise InputError("cutoff", "a screen needs a cutoff: only what was public by then counts")
    sort = kwargs.pop("sort", "entity")
    if sort not in SORTS:
        raise InputError("sort", f"must be one of {', '.join(SORTS)}; got {sort!r}")
    _period(item, (Selection.frame(frame),), None, "frame")
    p, reported = _panel(mem, scope, item, kwargs.pop("known_at", None), frames=[frame], cutoffs=[cutoff], **kwargs)
    return Screen(attribute=item.attribute, definition="", unit=kwargs.get("unit"), frame=p.frames[0], period=None,
                  cutoff=p.cutoffs[0], known_at=p.known_at,
                  universe="entities" if kwargs.get("entities") is not None else "attribute", sort=sort,
                  answers=tuple(ordered([c.answer for c in p.cells], sort)), unknown=p.unknown,
                  inputs={c.entity: (v,) for c, v in zip(p.cells, reported, strict=True) if v is not None},
                  choices={c.entity: {"concept": c.concept, "skipped": list(c.skipped)} for c in p.cells})


def record(mem: Memory, scope: Scope, item: LineItem, result: Panel | Screen) -> dict[str, FactVersion]:
    """Record the active values of a line item's panel or screen, read as of now, as
    derivations of their reported versions (see Lineage in the module docstring), in ONE
    write transaction; per reported version id, the derived version. The inputs are
    checked as of now: a version withdrawn since the read is refused (InputError)."""
    if result.attribute != item.attribute:
        raise InputError("result", f"a panel or screen of {item.attribute} is required, got {result.attribute}")
    if isinstance(result, Panel):
        shown = [(c.answer, c.concept, c.cutoff) for c in result.cells]
    else:
        shown = [(a, result.choices[a.entity]["concept"], result.cutoff) for a in result.answers]
    signs = {m.concept: m.sign for m in item.members}
    todo: dict[str, dict[str, Any]] = {}
    for answer, concept, cutoff in shown:
        v = answer.version
        if v is None or concept is None:
            continue
        if v.version_id in todo:
            todo[v.version_id]["cutoff"] = min(todo[v.version_id]["cutoff"], cutoff)
            continue
        todo[v.version_id] = {
            "method": METHOD, "method_version": item.version,
            "params": {"family": item.family, "item": item.name, "concept": concept, "sign": signs[concept]},
            "inputs": {"reported": v.version_id}, "cutoff": cutoff,
            "output": FactIn(entity=v.entity, attribute=item.attribute, unit=v.unit, period=v.period, value=v.value)}
    if not todo:
        return {}
    return dict(zip(todo, mem.derive_many(scope, list(todo.values())), strict=True))
