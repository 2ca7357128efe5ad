"""Geometry for the pictures: a key's versions on (cutoff x known_at), and a layered
drawing of a lineage or impact graph. Pure functions of what the Memory API returned;
the templates turn them into inline SVG.

The versions plot uses ordinal axes: each tick is a time at which something happened
to the key (a version became public, was recorded, was invalidated, retracted, erased
or resolved), evenly spaced whatever the gap. Between two ticks nothing about the drawn
versions changes, so a column (or row) stands for every time in it: a click in column
``j`` picks the tick that opens it (the first column, before every tick, picks one
second before the first). Which version *answers* at a point is never decided here:
that is the read rule's job, and the page asks ``Memory.as_of``.
"""

from __future__ import annotations

import datetime as dt
from bisect import bisect_right
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from itertools import islice

import networkx as nx

from ..models import FactVersion

LEFT, TOP, RIGHT, BOTTOM = 172, 16, 16, 92  # margins around the plot area (px)
WIDTH, HEIGHT = 740, 300  # the plot area


@dataclass(frozen=True)
class Box:
    """One version's rectangle: public from its available_by on (x), recorded from its
    recorded_at until its first lifecycle record (y), in plot pixels."""

    version: FactVersion
    x: float
    y: float
    w: float
    h: float
    ended: str | None  # the lifecycle record that closes it (invalidated, retracted, ...)


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


def _ended(v: FactVersion) -> tuple[dt.datetime | None, str | None]:
    """When a version stops being recorded as live, and why: its first invalidation or
    erasure, or the retraction of the last of its sources. A resolution marks it but
    ends nothing (the read rule ranks the chosen value above it), nor does the
    retraction of one source while another still evidences it."""
    ends = [(r.recorded_at, r.kind) for r in v.lifecycle if r.kind in ("invalidated", "erased")]
    retracted = [(r.recorded_at, r.kind) for r in v.lifecycle if r.kind == "retracted"]
    if retracted and v.sources and all(e.retracted for e in v.sources):
        ends.append(max(retracted))
    return min(ends) if ends else (None, None)


def _cell(ticks: Sequence[dt.datetime], at: dt.datetime) -> int:
    """The column (row) a time falls in: 0 before the first tick, i after tick i-1."""
    return bisect_right(list(ticks), at)


def versions_plot(versions: Sequence[FactVersion], cutoff: dt.datetime,
                  known_at: dt.datetime) -> VersionsPlot:
    """The rectangles of ``versions`` and the picked point, on ordinal axes."""
    xs = sorted({v.available_by for v in versions})
    ends = {v.version_id: _ended(v) for v in versions}
    ys = sorted({v.recorded_at for v in versions} | {e for e, _ in ends.values() if e})
    col, row = WIDTH / (len(xs) + 1), HEIGHT / (len(ys) + 1)
    x_at = {t: (i + 1) * col for i, t in enumerate(xs)}
    y_at = {t: HEIGHT - (i + 1) * row for i, t in enumerate(ys)}  # known_at grows upwards
    boxes = []
    for v in versions:
        end, why = ends[v.version_id]
        y_top = y_at[end] if end else 0.0
        x, y_bottom = x_at[v.available_by], y_at[v.recorded_at]
        boxes.append(Box(v, x, y_top, WIDTH - x, y_bottom - y_top, why))
    point = ((_cell(xs, cutoff) + 0.5) * col, HEIGHT - (_cell(ys, known_at) + 0.5) * row)
    return VersionsPlot(tuple(boxes), tuple(Tick(t, x_at[t]) for t in xs),
                        tuple(Tick(t, y_at[t]) for t in ys), point, col, row, _picks(xs), _picks(ys))


def _picks(ticks: list[dt.datetime]) -> tuple[dt.datetime, ...]:
    """What a click in each cell picks: a second before the first tick, then each tick."""
    return (ticks[0] - dt.timedelta(seconds=1), *ticks) if ticks else ()


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
