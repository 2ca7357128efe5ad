"""Geometry for the pictures: a key's versions on (cutoff x known_at), and a layered
drawing of a lineage or impact graph. Pure functions of what the Memory API returned;
the templates turn them into inline SVG.

The versions plot uses ordinal axes: each tick is a time at which something happened
to the key (a version or one of its evidences became public or was recorded, a version
was invalidated, erased or resolved, a source of it retracted), evenly spaced whatever
the gap; each version is drawn over the cells where it is live (:class:`Box`). Between two ticks nothing about the drawn
versions changes, so a column (or row) stands for every time in it: a click in column
``j`` picks the tick that opens it (the first column, before every tick, picks one
second before the first). Which version *answers* at a point is never decided here:
that is the read rule's job, and the page asks ``Memory.as_of``.
"""

from __future__ import annotations

import datetime as dt
from bisect import bisect_right
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import islice

import networkx as nx

from ..models import FactVersion

LEFT, TOP, RIGHT, BOTTOM = 172, 16, 16, 92  # margins around the plot area (px)
WIDTH, HEIGHT = 740, 300  # the plot area


@dataclass(frozen=True)
class Box:
    """One version's shape: the cells where it is live, in plot pixels. A cell holds
    it when one of its evidences is public by the column's cutoff (x) and recorded, and
    neither its source retracted nor the version invalidated, by the row's known_at (y).
    Each evidence reaches the right edge, so a row holds one run, from its earliest live
    evidence on: ``parts`` are those runs bottom up (adjoining rows of one start merged),
    ``path`` their outline, one staircase per stack of adjoining rows."""

    version: FactVersion
    parts: tuple[tuple[float, float, float, float], ...]  # (x, y, w, h) each
    path: str
    ended: str | None  # why it is not live at the top: erased, invalidated, retracted

    @property
    def label(self) -> tuple[float, float]:
        """Where the value is written: inside its lowest row, at the left."""
        x, y, _, h = self.parts[0] if self.parts else (0.0, 0.0, 0.0, 0.0)
        return x + 4, y + h - 5


@dataclass(frozen=True)
class Tick:
    at: dt.datetime
    pos: float  # where its column (x) or row (y) starts, in plot pixels


@dataclass(frozen=True)
class VersionsPlot:
    boxes: tuple[Box, ...]
    xs: tuple[Tick, ...]
    ys: tuple[Tick, ...]
    point: tuple[float, float]  # the picked (cutoff, known_at), centred in its cell
    col: float  # column width
    row: float  # row height
    x_picks: tuple[dt.datetime, ...]  # the cutoff a click in each column picks
    y_picks: tuple[dt.datetime, ...]  # the known_at a click in each row picks (bottom up)
    left: int = LEFT
    top: int = TOP
    width: int = WIDTH
    height: int = HEIGHT
    full_width: int = LEFT + WIDTH + RIGHT
    full_height: int = TOP + HEIGHT + BOTTOM


def _ended(v: FactVersion) -> str | None:
    """Why a version is not live at the top of the picture, for its mark: erased,
    invalidated, or every source retracted. A resolution marks it but ends nothing (the
    read rule ranks the chosen value above it), nor does the retraction of one source
    while another still evidences it."""
    kinds = {r.kind for r in v.lifecycle}
    if v.erased or "erased" in kinds:
        return "erased"
    if "invalidated" in kinds:
        return "invalidated"
    if v.sources and all(e.retracted for e in v.sources):
        return "retracted"
    return None


def _spans(v: FactVersion, retracted: Mapping[str, dt.datetime]
           ) -> list[tuple[dt.datetime, dt.datetime, dt.datetime | None]]:
    """A version's live evidence as (public from, recorded from, until): what the read
    rule (fact.read) keeps - the version's own stamps passed, an evidence public by the
    cutoff and recorded by known_at, its source not retracted and the version not
    invalidated by known_at. An erased version is live nowhere (the read drops it at
    every known_at). A retracted source whose time is not known ends the evidence at
    the version's last retraction record."""
    if v.erased or any(r.kind == "erased" for r in v.lifecycle):
        return []
    invalidated = min((r.recorded_at for r in v.lifecycle if r.kind == "invalidated"), default=None)
    last_retraction = max((r.recorded_at for r in v.lifecycle if r.kind == "retracted"), default=None)
    spans = []
    for e in v.sources or ():
        until = retracted.get(e.source_id, last_retraction) if e.retracted else None
        ends = [t for t in (until, invalidated) if t is not None]
        spans.append((max(e.available_by, v.available_by), max(e.recorded_at, v.recorded_at),
                      min(ends) if ends else None))
    return spans


def _cell(ticks: Sequence[dt.datetime], at: dt.datetime) -> int:
    """The column (row) a time falls in: 0 before the first tick, i after tick i-1."""
    return bisect_right(list(ticks), at)


Run = tuple[int, int, int]  # a column and the first and last row of adjoining rows it starts in


def _runs(spans: Sequence[tuple[dt.datetime, dt.datetime, dt.datetime | None]], xs: Sequence[dt.datetime],
          ys: Sequence[dt.datetime]) -> list[Run]:
    """The cells live evidence covers, bottom up: in each row (opened by its tick; row 0
    precedes every record) the earliest column an evidence live there is public in."""
    runs: list[Run] = []
    for j, known_at in enumerate(ys, start=1):
        live = [a for a, r, u in spans if r <= known_at and (u is None or known_at < u)]
        if not live:
            continue
        column = _cell(xs, min(live))
        if runs and runs[-1][0] == column and runs[-1][2] == j - 1:
            runs[-1] = (column, runs[-1][1], j)
        else:
            runs.append((column, j, j))
    return runs


def _box(v: FactVersion, runs: Sequence[Run], col: float, row: float) -> Box:
    """``runs`` in pixels (known_at grows upwards), and their outline: a staircase per
    stack of adjoining runs, up the left side from the bottom, down the right edge."""
    parts = tuple((c * col, HEIGHT - (hi + 1) * row, WIDTH - c * col, (hi - lo + 1) * row) for c, lo, hi in runs)
    outlines, stack = [], []
    for i, (c, lo, hi) in enumerate(runs):
        stack.append((c * col, HEIGHT - lo * row, HEIGHT - (hi + 1) * row))
        if i + 1 == len(runs) or runs[i + 1][1] != hi + 1:
            points = [(WIDTH, stack[0][1])]
            for x, bottom, top in stack:
                points += [(x, bottom), (x, top)]
            points.append((WIDTH, stack[-1][2]))
            outlines.append("M" + " L".join(f"{x:.1f},{y:.1f}" for x, y in points) + " Z")
            stack = []
    return Box(v, parts, " ".join(outlines), _ended(v))


def versions_plot(versions: Sequence[FactVersion], cutoff: dt.datetime, known_at: dt.datetime,
                  retracted: Mapping[str, dt.datetime] | None = None) -> VersionsPlot:
    """The live cells of ``versions`` and the picked point, on ordinal axes: a tick at
    every time a version or one of its evidences became public (x) or was recorded, and
    at every lifecycle record and source retraction (y). ``retracted`` gives the
    retraction time of each retracted source (by id)."""
    retracted = retracted or {}
    spans = {v.version_id: _spans(v, retracted) for v in versions}
    xs = sorted({v.available_by for v in versions} | {a for s in spans.values() for a, _, _ in s})
    ys = sorted({v.recorded_at for v in versions} | {r.recorded_at for v in versions for r in v.lifecycle}
                | {t for s in spans.values() for _, r, u in s for t in (r, u) if t is not None})
    col, row = WIDTH / (len(xs) + 1), HEIGHT / (len(ys) + 1)
    boxes = tuple(_box(v, _runs(spans[v.version_id], xs, ys), col, row) for v in versions)
    point = ((_cell(xs, cutoff) + 0.5) * col, HEIGHT - (_cell(ys, known_at) + 0.5) * row)
    return VersionsPlot(boxes, tuple(Tick(t, _cell(xs, t) * col) for t in xs),
                        tuple(Tick(t, HEIGHT - _cell(ys, t) * row) for t in ys), point, col, row,
                        _picks(xs), _picks(ys))


EARLIEST = dt.datetime.min.replace(tzinfo=dt.UTC)


def _picks(ticks: list[dt.datetime]) -> tuple[dt.datetime, ...]:
    """What a click in each cell picks: a second before the first tick (or the earliest
    time a datetime holds, when the first tick is within a second of it: a filing can be
    public at 0001-01-01T00:00Z, and nothing precedes that), then each tick."""
    if not ticks:
        return ()
    second = dt.timedelta(seconds=1)
    return (ticks[0] - second if ticks[0] - EARLIEST >= second else EARLIEST, *ticks)


# ---------------------------------------------------------------- graphs

NODE_W, NODE_H, GAP_X, GAP_Y = 190, 34, 34, 12
MAX_NODES = 150


@dataclass(frozen=True)
class Node:
    id: str  # "f:<version id>", "s:<source id>", "d:<derivation id>"
    kind: str  # fact, source, derivation
    label: str  # in full, shown on hover
    lines: tuple[str, str]  # shown in the box
    x: float
    y: float
    mark: str = ""  # a class: origin, invalid, stale, survives


@dataclass(frozen=True)
class Edge:
    path: str  # an SVG path from the right of one node to the left of the next


@dataclass
class GraphPlot:
    nodes: list[Node] = field(default_factory=list)
    edges: list[Edge] = field(default_factory=list)
    width: int = 0
    height: int = 0
    hidden: int = 0  # nodes beyond MAX_NODES, not drawn
    node_w: int = NODE_W
    node_h: int = NODE_H


def _lines(node: str, kind: str, data: dict) -> tuple[str, str]:
    """A node's two lines: what it is, then which (a fact's period and value)."""
    if "lines" in data:
        return data["lines"]
    if kind == "fact":
        value = f" = {data['value']}" if data.get("value") else ""
        return str(data.get("attribute", "")), f"{data.get('period', '')}{value}"
    if kind == "derivation":
        return str(data.get("method", "derivation")), node[2:]
    return f"source ({data.get('source_kind') or 'document'})", node[2:]


def _placed(graph: nx.DiGraph) -> Iterator[tuple[str, tuple[float, float]]]:
    """Every node with its place, layer by layer (the order the drawing keeps)."""
    layers = [sorted(layer) for layer in nx.topological_generations(graph)] if graph else []
    for i, layer in enumerate(layers):
        for j, node in enumerate(layer):
            yield node, (i * (NODE_W + GAP_X), j * (NODE_H + GAP_Y))


def in_order(graph: nx.DiGraph) -> list[str]:
    """The nodes in drawing order: the first ``MAX_NODES`` are the ones drawn."""
    return [node for node, _ in _placed(graph)]


def graph_plot(graph: nx.DiGraph, marks: dict[str, str] | None = None) -> GraphPlot:
    """``graph`` (edges from input to output) in layers, left to right: each node in
    the first layer after all its inputs. At most ``MAX_NODES`` nodes, the nearest
    layers first; the rest are counted, not drawn."""
    marks = marks or {}
    shown = dict(islice(_placed(graph), MAX_NODES))
    plot = GraphPlot(hidden=graph.number_of_nodes() - len(shown))
    for node, (x, y) in shown.items():
        data = graph.nodes[node]
        kind = data.get("kind", node.split(":", 1)[0])
        plot.nodes.append(Node(node, kind, str(data.get("label") or node), _lines(node, kind, data), x, y,
                               marks.get(node, "")))
    for a, b in graph.edges:
        if a in shown and b in shown:
            (x1, y1), (x2, y2) = shown[a], shown[b]
            x1, y1, y2 = x1 + NODE_W, y1 + NODE_H / 2, y2 + NODE_H / 2
            mid = (x1 + x2) / 2
            plot.edges.append(Edge(f"M{x1:.0f},{y1:.0f} C{mid:.0f},{y1:.0f} {mid:.0f},{y2:.0f} "
                                   f"{x2:.0f},{y2:.0f}"))
    plot.width = int(max((x for x, _ in shown.values()), default=0) + NODE_W + 2)
    plot.height = int(max((y for _, y in shown.values()), default=0) + NODE_H + 2)
    return plot
