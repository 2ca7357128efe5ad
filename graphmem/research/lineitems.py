"""Standardized line items: one quantity, the concepts companies report it under, the
choice made per company from what was public by each cutoff, with lineage.

**A family** is data (graphmem/research/lineitems.json is the built-in one; users pass
their own file in the same shape to :func:`load`): a name, a version, and items. An
item names its members - US-GAAP or IFRS elements (``us-gaap:Revenues``,
``ifrs-full:Revenue``) in order of preference, each with a sign (``-1``: the element's
sign is the opposite of the item's, as a payment for capital expenditure is reported
positive and the item is a cash outflow) - the unit its values take (``currency``: an
ISO code such as ``USD``; ``per_share``: a currency per share, ``USD/shares``;
``shares``) and its period (``duration`` or ``instant``).

**The choice, per cell, without look-ahead.** A line item's panel (or screen) is the
panel of each member concept, combined cell by cell: an entity's value for a frame at a
cutoff is that of the first member, in the family's order, that has an ``active`` or
``conflicted`` row for that frame and cutoff in a unit the item allows. The others are
``skipped`` with why (``nothing public``: no key of the frame was public by the
cutoff; ``unit X``: the unit is not the item's). Each member's row is a screen's, so
only what was public by the cutoff can decide the choice: a company that moved from
``SalesRevenueNet`` to ``RevenueFromContractWithCustomerExcludingAssessedTax`` gets
the first for a quarter until the second is filed for it - and the second afterwards,
once a later filing restates that quarter under it. With ``latest``, the cell's frame
is the latest in which any member has a candidate, and the first member that has one
there is chosen.

**Lineage.** Each active cell's value is recorded with ``Memory.derive``: method
``lineitem``, the family's version as method version, parameters (family, item, chosen
concept, sign) and the reported version as input, the output a fact of attribute
``item:<name>`` (same entity, unit and period; value times the sign). So ``lineage``
shows the reported fact behind a standardized value, and ``impact`` of the filing that
reported it reaches the derived fact. Derivations are idempotent: the same reported
version gives the same derived version at every cutoff.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from dataclasses import dataclass
from decimal import Decimal
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from .. import limits
from ..errors import InputError
from ..models import Answer, FactIn, FactVersion, Scope, Screen
from .panel import Panel, PanelCell, frame_end

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
        return f"item:{self.name}"

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
    if body.get("sign", 1) not in (1, -1):
        raise InputError(where, f"sign must be 1 or -1, got {body.get('sign')!r}")
    return Member(body["concept"], body.get("sign", 1))


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
        return parse(json.loads(Path(path).read_text(encoding="utf-8")), str(path))
    except (OSError, ValueError) as exc:
        raise InputError(str(path), f"cannot read a family from it: {exc}") from exc


# ---------------------------------------------------------------- panels and screens


def _combine(item: LineItem, panels: list[Panel], latest: bool) -> dict[tuple, tuple[PanelCell, int | None, list]]:
    """Per (cutoff, frame or None, entity): the chosen member's cell, its index, and the
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
        skipped = [_why(item.members[n].concept, c, frame if latest else None)
                   for n, c in enumerate(cells[:chosen] if chosen is not None else cells)]
        fallback = next(c for c in cells if c is not None)
        out[where] = (cells[chosen] if chosen is not None else fallback, chosen, skipped)
    return out


def _why(concept: str, cell: PanelCell | None, frame: str | None) -> str:
    if cell is None or cell.status == "not_found":
        return f"{concept}: nothing public"
    if frame is not None and cell.frame != frame:
        return f"{concept}: latest {cell.frame}"
    return f"{concept}: unit {cell.unit}"


def _derived(mem: Memory, scope: Scope, item: LineItem, member: Member, version: FactVersion,
             cutoff: dt.datetime) -> FactVersion:
    """The standardized value, recorded as a derivation of the reported version."""
    value = version.value * member.sign if isinstance(version.value, Decimal) else version.value
    return mem.derive(scope, method=METHOD, method_version=item.version,
                      params={"family": item.family, "item": item.name, "concept": member.concept,
                              "sign": member.sign},
                      inputs={"reported": version.version_id},
                      output=FactIn(entity=version.entity, attribute=item.attribute, unit=version.unit,
                                    period=version.period, value=value),
                      cutoff=cutoff)


def panel(mem: Memory, scope: Scope, item: LineItem, **kwargs: Any) -> Panel:
    """A line item's panel: each member's panel, combined cell by cell, each active value
    recorded as a derivation (see the module docstring). Takes ``Memory.panel``'s
    arguments."""
    panels = [mem.panel(scope, attribute=m.concept, **kwargs) for m in item.members]
    latest = kwargs.get("latest") is not None
    recorded: dict[str, FactVersion] = {}
    cells = []
    for (_, frame, _), (cell, chosen, skipped) in _combine(item, panels, latest).items():
        member = item.members[chosen] if chosen is not None else None
        answer = cell.answer.model_copy(update={"attribute": item.attribute})
        update: dict[str, Any] = {"concept": member.concept if member else None, "skipped": tuple(skipped)}
        if member is not None and cell.answer.version is not None:
            reported = cell.answer.version
            if reported.version_id not in recorded:
                recorded[reported.version_id] = _derived(mem, scope, item, member, reported, cell.cutoff)
            derived = recorded[reported.version_id]
            answer = answer.model_copy(update={"version": derived})
            update.update(value=derived.value, version_id=derived.version_id, reported_version_id=reported.version_id)
            if cell.first_value is not None and isinstance(cell.first_value, Decimal):
                update["first_value"] = cell.first_value * member.sign
        if member is None:
            answer = Answer(status="not_found", entity=cell.entity, attribute=item.attribute, cutoff=cell.cutoff,
                            known_at=cell.answer.known_at, require=cell.answer.require)
            update.update(status="not_found", value=None, unit=None, period=None, available_by=None, filings=(),
                          version_id=None, frame=frame if not latest else None)
        cells.append(cell.model_copy(update={**update, "answer": answer}))
    order = {f: i for i, f in enumerate(panels[0].frames)}
    cells.sort(key=lambda c: (c.cutoff, order.get(c.frame or "", 0), c.entity))
    first = panels[0]
    return first.model_copy(update={
        "attribute": item.attribute, "cells": tuple(cells), "item": item.name, "family": item.family,
        "unknown": tuple(sorted(set.intersection(*(set(p.unknown) for p in panels))))})


def screen(mem: Memory, scope: Scope, item: LineItem, *, frame: str, cutoff: dt.datetime,
           **kwargs: Any) -> Screen:
    """A line item's screen: its panel at one frame and cutoff, as a Screen whose
    ``choices`` say, per entity, which concept was chosen and which were skipped, and
    whose ``inputs`` hold the reported version behind each value."""
    from ..screen import SORTS, ordered

    sort = kwargs.pop("sort", "entity")
    if sort not in SORTS:
        raise InputError("sort", f"must be one of {', '.join(SORTS)}; got {sort!r}")
    p = panel(mem, scope, item, frames=[frame], cutoffs=[cutoff], **kwargs)
    versions = {}
    if any(c.reported_version_id for c in p.cells):
        found = mem.versions(scope, [c.reported_version_id for c in p.cells if c.reported_version_id])
        versions = {v.version_id: v for v in found}
    return Screen(attribute=item.attribute, definition="", unit=kwargs.get("unit"), frame=p.frames[0], period=None,
                  cutoff=p.cutoffs[0], known_at=p.known_at,
                  universe="entities" if kwargs.get("entities") is not None else "attribute", sort=sort,
                  answers=tuple(ordered([c.answer for c in p.cells], sort)), unknown=p.unknown,
                  inputs={c.entity: (versions[c.reported_version_id],) for c in p.cells if c.reported_version_id},
                  choices={c.entity: {"concept": c.concept, "skipped": list(c.skipped)} for c in p.cells})
