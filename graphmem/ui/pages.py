"""The pages: each checks its query parameters (a bad one is named before any query;
only ``page`` is checked after the read that counts the rows), calls the public
:class:`~graphmem.Memory` API in the server's scope and returns a template name with
what it shows. No read rule lives here: an answer is what ``as_of`` / ``screen`` /
``search`` returned; lists are cut into pages after the call, except a key's and a
lineage's versions, of which only the page shown is read.
"""

from __future__ import annotations

import calendar
import datetime as dt
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from decimal import Decimal
from typing import Any

import networkx as nx

from .. import limits
from ..errors import InputError, NotFoundError
from ..memory import Memory
from ..models import MEMORY_TYPES, Authority, Period, Require, Scope, SourceRecord
from ..research import cli as panel_args
from ..research import lineitems
from ..research.panel import LATEST, Panel, PanelCell
from ..screen import SORTS
from ..values import NOW, aware_utc, parse_time
from . import plot

VERSIONS_PER_PAGE = 20  # a key's versions drawn and listed at once: a light page
ROWS_PER_PAGE = 50  # rows of the other tables
STEPS = {"1m": 1, "3m": 3, "1y": 12}  # a screen's cutoff steps, in months
PANEL_COLUMNS = 60  # cutoffs a panel page shows side by side: a table still read on one screen
PANEL_TEXT_BYTES = 4_000  # a panel's frames= or cutoffs= (a range, or a comma list)

Page = tuple[str, dict[str, Any]]


class Params:
    """A request's query parameters, read one by one with their bounds; a bad one raises
    InputError naming it (the page shows the message)."""

    def __init__(self, query: Any):
        self._q = query

    def text(self, name: str, *, required: bool = False, limit: int = limits.IDENTIFIER_BYTES
             ) -> str | None:
        value = (self._q.get(name) or "").strip()
        if not value:
            if required:
                raise InputError(name, "required")
            return None
        return limits.check_text(name, value, limit)

    def part(self, name: str) -> str | None:
        """A key's unit or definition: None when absent (any), else as given - empty is
        the key's own default, which a link to that key must be able to name."""
        if name not in self._q:
            return None
        return limits.check_text(name, self._q.get(name).strip(), limits.IDENTIFIER_BYTES)

    def time(self, name: str) -> dt.datetime | None:
        return parse_time(self.text(name, limit=64), name)

    def period(self, name: str = "period") -> Period | None:
        text = self.text(name, limit=64)
        return Period.parse(text, name) if text else None

    def number(self, name: str, default: int | None, low: int, high: int) -> int | None:
        text = self.text(name, limit=20)
        if text is None:
            return default
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or not low <= value <= high:
            raise InputError(name, f"an integer from {low:,} to {high:,} is required, got {text!r}")
        return value

    def choice(self, name: str, options: Sequence[str], default: str | None) -> str | None:
        value = self.text(name, limit=64)
        if value is None:
            return default
        if value not in options:
            raise InputError(name, f"must be one of {', '.join(options)}; got {value!r}")
        return value

    def choices(self, name: str, options: Sequence[str]) -> tuple[str, ...]:
        given = [v for v in self._q.getlist(name) if v]
        for value in given:
            if value not in options:
                raise InputError(name, f"must be among {', '.join(options)}; got {value!r}")
        return tuple(given)

    def page(self, count: int, size: int, default: int = 1) -> tuple[int, int]:
        """The page asked for (1-based) and how many pages ``count`` rows make."""
        pages = max(1, -(-count // size))
        return self.number("page", default, 1, pages) or 1, pages


def _window(rows: Sequence[Any], page: int, size: int) -> Sequence[Any]:
    return rows[(page - 1) * size:page * size]


def number(value: Any) -> str:
    """A value as an analyst reads it: thousands separated, exact, never in exponent
    notation (``str(Decimal)`` would show 1E-7)."""
    if isinstance(value, Decimal):
        return f"{value:,f}"
    return "" if value is None else str(value)


def iso(value: dt.datetime | None) -> str:
    """A time as a URL keeps it: a bare date for the end of a day, else ISO with a Z."""
    if value is None:
        return ""
    value = value.astimezone(dt.UTC)
    if value.time() == dt.time.max:
        return value.date().isoformat()
    return value.isoformat().replace("+00:00", "Z")


# ---------------------------------------------------------------- 1 search

SEARCH_FIELDS = {"text": "q", "task_id": "task"}  # the API's argument -> the page's parameter


@contextmanager
def _fields(names: Mapping[str, str]) -> Iterator[None]:
    """An InputError the API raises naming its own argument (``text``), named by the
    page's parameter the analyst typed it in (``q``): the message must point at a field
    of the page."""
    try:
        yield
    except InputError as exc:
        if exc.where not in names:
            raise
        raise InputError(names[exc.where], exc.reason) from exc



def search(memory: Memory, scope: Scope, p: Params) -> Page:
    text = p.text("q", limit=limits.SEARCH_TEXT_BYTES)
    entity, task = p.text("entity"), p.text("task")
    types = p.choices("type", MEMORY_TYPES)
    authority = p.choice("min_authority", [a.value for a in Authority], None)
    match = p.choice("match", ("all", "any"), "all")
    limit = p.number("limit", 20, 1, 100)
    cutoff, known_at = p.time("cutoff"), p.time("known_at")
    found = {"result": None, "source": None, "entity": None}
    if text or entity or task:
        with _fields(SEARCH_FIELDS):
            found["result"] = memory.search(
                scope, text=text, types=types or None, entity=entity, task_id=task, cutoff=cutoff,
                known_at=known_at, require=Require(min_authority=authority) if authority else None,
                limit=limit or 20, match=match or "all")
    if text and " " not in text and len(text.encode()) <= limits.IDENTIFIER_BYTES:  # an exact id?
        found["source"] = memory.source(scope, text)
        found["entity"] = memory.entity(scope, text)
    return "search.html", {**found, "types": MEMORY_TYPES, "authorities": [a.value for a in Authority]}


# ---------------------------------------------------------------- 2 a key


def key(memory: Memory, scope: Scope, p: Params) -> Page:
    """A key's versions, one page at a time (the page holding the answer by default), and
    the answer at the point picked. Several keys match (no period, or several units or
    definitions): the list to pick one from."""
    entity, attribute = p.text("entity", required=True), p.text("attribute", required=True)
    period, unit, definition = p.period(), p.part("unit"), p.part("definition")
    cutoff, known_at = p.time("cutoff"), p.time("known_at")
    index = memory.history_index(scope, entity=entity, attribute=attribute, period=period, unit=unit,
                                 definition=definition)
    keys = [(r["period"], r["unit"], r["definition"]) for r in index]
    base = {"entity": entity, "attribute": attribute, "count": sum(len(r["version_ids"]) for r in index)}
    if len(keys) != 1:  # none, or several to choose from
        page, pages = p.page(len(keys), ROWS_PER_PAGE)
        return "keys.html", {**base, "keys": _window(keys, page, ROWS_PER_PAGE), "nkeys": len(keys),
                             "page": page, "pages": pages}
    period_text, unit, definition = keys[0]
    answer = memory.as_of(scope, entity=entity, attribute=attribute, period=Period.parse(period_text),
                          unit=unit, definition=definition, cutoff=cutoff or NOW, known_at=known_at)
    ids = index[0]["version_ids"]
    shown = answer.version or (answer.candidates[0] if answer.candidates else None)
    at = ids.index(shown.version_id) if shown and shown.version_id in ids else len(ids) - 1
    page, pages = p.page(len(ids), VERSIONS_PER_PAGE, default=at // VERSIONS_PER_PAGE + 1)
    window = sorted(memory.versions(scope, list(_window(ids, page, VERSIONS_PER_PAGE))),
                    key=lambda v: (v.available_by, v.recorded_at, v.version_id))
    conflict = {v.version_id for v in answer.candidates}
    return "key.html", {
        **base, "period": period_text, "unit": unit, "definition": definition, "answer": answer,
        "window": window, "page": page, "pages": pages, "conflict": conflict,
        "plot": plot.versions_plot(window, answer.cutoff, answer.known_at, _retractions(memory, scope, window)),
        "picked": {"cutoff": iso(cutoff), "known_at": iso(known_at)}}


def _retractions(memory: Memory, scope: Scope, versions: Sequence[Any]) -> dict[str, dt.datetime]:
    """When each retracted source of ``versions`` was retracted: a version stays live
    until its last live evidence goes, so the picture needs each source's own time (a
    version's lifecycle lists the retractions, not which source each withdrew). One read
    per retracted source, of which a page has few."""
    ids = sorted({e.source_id for v in versions for e in v.sources if e.retracted})
    found = {i: memory.source(scope, i) for i in ids}
    return {i: s.retracted_at for i, s in found.items() if s is not None and s.retracted_at is not None}


# ---------------------------------------------------------------- 3 a source


def _impact_graph(report: Any, origin: SourceRecord) -> tuple[nx.DiGraph, dict[str, str]]:
    """The impact report's items as a graph along their shortest paths from the origin
    (paths name bare ids: each becomes the ``f:``/``d:``/``s:`` node the drawing links)."""
    names = {report.origin[2:]: report.origin}
    names.update((i.id, f"{i.kind[0]}:{i.id}") for i in report.items)
    graph, marks = nx.DiGraph(), {report.origin: "origin"}
    graph.add_node(report.origin, kind="source", source_kind=origin.kind, label=origin.title or origin.id)
    for item in report.items:
        node = names[item.id]
        graph.add_node(node, kind=item.kind, label=f"{item.label} ({item.reason})",
                       lines=(item.label.split(" ", 1)[-1], f"{item.reason}, depth {item.depth}"))
        marks[node] = item.reason
        path = [names.get(n, n) for n in item.path]
        graph.add_edges_from(zip(path, path[1:], strict=False))
    return graph, marks


def source(memory: Memory, scope: Scope, p: Params) -> Page:
    source_id = p.text("id", required=True)
    cutoff, known_at = p.time("cutoff"), p.time("known_at")
    depth = p.number("depth", None, 0, limits.DEPTH)
    record = memory.source(scope, source_id)
    if record is None:
        raise NotFoundError(f"no source {source_id!r} in this scope")
    report = memory.impact(scope, source_id=source_id, cutoff=cutoff, known_at=known_at, max_depth=depth)
    graph, marks = _impact_graph(report, record)
    page, pages = p.page(len(report.items), ROWS_PER_PAGE)
    first = report if depth != 0 else memory.impact(scope, source_id=source_id, cutoff=cutoff,
                                                     known_at=report.known_at, max_depth=1)
    return "source.html", {
        "source": record, "report": report, "items": _window(report.items, page, ROWS_PER_PAGE),
        "page": page, "pages": pages, "drawing": plot.graph_plot(graph, marks), "evidences": _evidences(first)}


def _evidences(report: Any) -> int:
    """The fact versions a source evidences: its impact's first step. A preview cut at
    depth 0 has none, so the page reads one step for the count (it files them all the same)."""
    return sum(1 for i in report.items if i.kind == "fact" and i.depth == 1)


# ---------------------------------------------------------------- 4 lineage


def lineage(memory: Memory, scope: Scope, p: Params) -> Page:
    """A version's lineage graph as recorded by ``known_at`` (default now), and its fact
    versions listed a page at a time in drawing order: only the versions listed or drawn
    are read."""
    version_id = p.text("version", required=True)
    direction = p.choice("direction", ("upstream", "downstream"), "upstream")
    depth, known_at = p.number("depth", None, 0, limits.DEPTH), p.time("known_at")
    graph = memory.lineage(scope, version_id, direction or "upstream", depth, known_at=known_at)
    facts = [n for n in plot.in_order(graph) if graph.nodes[n].get("kind") == "fact"]
    page, pages = p.page(len(facts), ROWS_PER_PAGE)
    listed = [n[2:] for n in _window(facts, page, ROWS_PER_PAGE)]
    drawn = [n[2:] for n in facts[:plot.MAX_NODES]]
    read = memory.versions(scope, list(dict.fromkeys([version_id, *listed, *drawn])))
    retracted = _retractions(memory, scope, read) if known_at else {}
    found = {v.version_id: _filed_by(v, known_at, retracted) for v in read}
    for v in found.values():  # an erased version has no value left to show, and says so
        graph.nodes[f"f:{v.version_id}"]["value"] = "[erased]" if v.erased else f"{number(v.value)} {v.unit}"
    return "lineage.html", {"version": found.get(version_id), "listed": [found[i] for i in listed if i in found],
                            "drawing": plot.graph_plot(graph, {f"f:{version_id}": "origin"}),
                            "direction": direction, "count": graph.number_of_nodes(), "facts": len(facts),
                            "page": page, "pages": pages}


def _filed_by(version: Any, known_at: dt.datetime | None, retracted: Mapping[str, dt.datetime]) -> Any:
    """``version``'s filings as recorded by ``known_at``: ``Memory.lineage`` leaves out
    evidence recorded later, so the header and rows must not name a filing the drawing
    (and the API) say was not known yet, nor mark retracted one withdrawn after it
    (``Memory.versions`` reads them as of now). ``retracted``: each retracted source's time."""
    if known_at is None:
        return version
    return version.model_copy(update={"sources": tuple(
        e.model_copy(update={"retracted": e.retracted and retracted.get(e.source_id, known_at) <= known_at})
        for e in version.sources if e.recorded_at <= known_at)})


# ---------------------------------------------------------------- 5 a screen


def shift_months(at: dt.datetime, months: int) -> dt.datetime | None:
    """The same time of day ``months`` later (earlier when negative): on a month's last
    day, the target month's last day (as ``graphmem panel``'s ranges step, so a quarter
    end stays a quarter end); else the same day, or a shorter month's last. None when the
    target is outside the years a datetime holds (no step to offer)."""
    y, m = divmod(at.month - 1 + months, 12)
    year, month = at.year + y, m + 1
    if not dt.MINYEAR <= year <= dt.MAXYEAR:
        return None
    last = calendar.monthrange(year, month)[1]
    month_end = at.day == calendar.monthrange(at.year, at.month)[1]
    return at.replace(year=year, month=month, day=last if month_end else min(at.day, last))


def screen(memory: Memory, scope: Scope, p: Params) -> Page:
    attribute = p.text("attribute")
    frame, period = p.text("frame", limit=32), p.period()
    cutoff, known_at = p.time("cutoff"), p.time("known_at")
    unit, definition = p.text("unit"), p.text("definition") or ""
    sort = p.choice("sort", SORTS, "entity")
    step = p.choice("step", tuple(STEPS), "3m") or "3m"
    if attribute is None:
        return "screen.html", {"result": None, "steps": STEPS, "sorts": SORTS}
    cutoff = cutoff or memory.server_now()
    result = memory.screen(scope, attribute=attribute, frame=frame, period=period, cutoff=cutoff,
                           known_at=known_at, unit=unit, definition=definition, sort=sort or "entity")
    page, pages = p.page(len(result.answers), ROWS_PER_PAGE)
    return "screen.html", {
        "result": result, "rows": _window(result.answers, page, ROWS_PER_PAGE), "page": page,
        "pages": pages, "steps": STEPS, "sorts": SORTS,
        "earlier": iso(shift_months(cutoff, -STEPS[step])), "later": iso(shift_months(cutoff, STEPS[step]))}


# ---------------------------------------------------------------- 5b a panel


def _panel_rows(result: Panel, entities: Sequence[str]) -> list[dict[str, Any]]:
    """The grid of ``entities``: a row per entity (``latest``) or per entity and frame, a
    cell per cutoff, in the panel's own order."""
    wanted, rows = set(entities), {}
    for c in result.cells:
        if c.entity in wanted:
            row = rows.setdefault((c.entity, None if result.latest else c.frame),
                                  {"entity": c.entity, "frame": None if result.latest else c.frame, "cells": {}})
            row["cells"][c.cutoff] = c
    order = {f: i for i, f in enumerate(result.frames)}
    return sorted(rows.values(), key=lambda r: (r["entity"], order.get(r["frame"], 0)))


def panel(memory: Memory, scope: Scope, p: Params) -> Page:
    """A point-in-time panel (``Memory.panel``) as a table: entities (and frames) down,
    cutoffs across, each value a link to its key at that cutoff; a page of entities at a
    time. ``frames=`` and ``cutoffs=`` are parsed by ``graphmem panel``'s own parsers;
    ``definition=`` is a screen's (default: the key's own), so a screen's "as a panel"
    shows the figures it screened."""
    attribute, item = p.text("attribute"), p.text("item", limit=64)
    latest = p.choice("latest", tuple(LATEST), None)
    frames_text, cutoffs_text = p.text("frames", limit=PANEL_TEXT_BYTES), p.text("cutoffs", limit=PANEL_TEXT_BYTES)
    known_at, unit, definition = p.time("known_at"), p.text("unit"), p.text("definition") or ""
    context: dict[str, Any] = {"result": None, "latests": tuple(LATEST)}
    if attribute is None and item is None:
        return "panel.html", context
    if attribute is not None and item is not None:
        raise InputError("item", "give exactly one of attribute= or item=")
    if cutoffs_text is None:
        raise InputError("cutoffs", "required: FROM..TO:quarterly (monthly, yearly) or dates separated by commas")
    times = [aware_utc("cutoffs", t) for t in panel_args.cutoffs(cutoffs_text, "cutoffs", files=False)]
    if len(times) > PANEL_COLUMNS:
        raise InputError("cutoffs", f"{len(times)} cutoffs: this page shows at most {PANEL_COLUMNS} "
                                    "(the command line's graphmem panel takes more)")
    asked: Any = lineitems.load()[item] if item else attribute
    result = memory.panel(scope, attribute=asked, frames=panel_args.frames(frames_text, "frames")
                          if frames_text else None, latest=latest, cutoffs=times, known_at=known_at, unit=unit,
                          definition=definition)
    entities = sorted({c.entity for c in result.cells})
    size = max(1, ROWS_PER_PAGE // max(1, len(result.frames)))
    page, pages = p.page(len(entities), size)
    return "panel.html", {**context, "result": result, "page": page, "pages": pages, "entities": len(entities),
                          "rows": _panel_rows(result, _window(entities, page, size))}


def evidence(answer: Any) -> list[Any]:
    """The filings behind an answer: its version's, or every candidate's of a conflict
    (each side has its own; the first candidate's alone would hide the disagreement)."""
    versions = answer.shown
    return list({e.source_id: e for v in versions for e in v.sources}.values())


def shown_version(cell: PanelCell) -> Any:
    """The version a panel cell shows and links: its answer, or its first candidate."""
    a = cell.answer
    return a.version or (a.candidates[0] if a.candidates else None)


# ---------------------------------------------------------------- 6 agent memory


def agent(memory: Memory, scope: Scope, p: Params) -> Page:
    status = p.choice("status", ("pending", "approved", "rejected", "all"), "pending")
    task = p.text("task")
    candidates = memory.candidates(scope, status=None if status == "all" else status)
    page, pages = p.page(len(candidates), ROWS_PER_PAGE)
    snapshots_page = p.number("snapshots_page", 1, 1, limits.PAGE_OFFSET // ROWS_PER_PAGE) or 1
    snapshots = memory.context_snapshots(scope, task_id=task, offset=(snapshots_page - 1) * ROWS_PER_PAGE,
                                         limit=ROWS_PER_PAGE + 1)  # one more: is there a next page
    return "agent.html", {
        "candidates": _window(candidates, page, ROWS_PER_PAGE), "page": page, "pages": pages,
        "status": status, "snapshots": snapshots[:ROWS_PER_PAGE], "snapshots_page": snapshots_page,
        "more_snapshots": len(snapshots) > ROWS_PER_PAGE}


def snapshot(memory: Memory, scope: Scope, p: Params) -> Page:
    snapshot_id, memory_id = p.text("id", required=True), p.text("memory")
    context = memory.context_snapshot(scope, snapshot_id)
    trace = memory.trace(scope, snapshot_id, memory_id) if memory_id else None
    return "snapshot.html", {"context": context, "trace": trace}


PAGES: Mapping[str, Callable[[Memory, Scope, Params], Page]] = {
    "/": search, "/key": key, "/source": source, "/lineage": lineage, "/screen": screen, "/panel": panel,
    "/agent": agent, "/agent/snapshot": snapshot}
