"""Lineage graphs out of Python: a table, JSON, DOT, GraphML, or a PNG drawing."""

from __future__ import annotations

import json
from pathlib import Path

import networkx as nx

from .errors import InputError
from .render import table


def write(graph: nx.DiGraph, fmt: str, out: Path | None) -> str | None:
    """Render ``graph`` as ``fmt``; return text, or None when a file was written."""
    if fmt == "table":
        rows = [(a, graph.nodes[a].get("label", a), "->", b, graph.nodes[b].get("label", b),
                 graph.edges[a, b].get("role", "")) for a, b in _ordered_edges(graph)]
        return table(("from", "what", "", "to", "what", "role"), rows)
    text = None
    if fmt == "json":
        text = json.dumps(nx.node_link_data(graph, edges="edges"), default=str, indent=2)
    elif fmt == "dot":
        text = dot(graph)
    elif fmt == "graphml":
        nx.write_graphml(_stringified(graph), out)
        return None
    elif fmt == "png":
        png(graph, out)
        return None
    else:
        raise InputError("--format", f"unknown format {fmt!r}")
    if out is not None:
        Path(out).write_text(text)
        return None
    return text


def _ordered_edges(graph: nx.DiGraph) -> list[tuple[str, str]]:
    order = {n: i for i, n in enumerate(nx.topological_sort(graph))}
    return sorted(graph.edges, key=lambda e: (order[e[0]], order[e[1]]))


def _stringified(graph: nx.DiGraph) -> nx.DiGraph:
    """GraphML takes scalar attributes only; None becomes an empty string."""
    copy = nx.DiGraph()
    for n, data in graph.nodes(data=True):
        copy.add_node(n, **{k: "" if v is None else v for k, v in data.items()})
    for a, b, data in graph.edges(data=True):
        copy.add_edge(a, b, **{k: "" if v is None else v for k, v in data.items()})
    return copy


def _quote(text: object) -> str:
    return '"' + str(text).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


SHAPES = {"source": "note", "derivation": "box", "fact": "ellipse"}


def dot(graph: nx.DiGraph) -> str:
    """Graphviz DOT text, sources as notes, derivations as boxes, facts as ellipses."""
    lines = ["digraph lineage {", "  rankdir=LR;"]
    for n, data in graph.nodes(data=True):
        shape = SHAPES.get(data.get("kind", ""), "ellipse")
        lines.append(f"  {_quote(n)} [label={_quote(data.get('label', n))}, shape={shape}];")
    for a, b, data in graph.edges(data=True):
        role = f" [label={_quote(data['role'])}]" if data.get("role") else ""
        lines.append(f"  {_quote(a)} -> {_quote(b)}{role};")
    lines.append("}")
    return "\n".join(lines)


def png(graph: nx.DiGraph, out: Path | None) -> None:
    """Draw the graph left to right by topological generation (needs matplotlib)."""
    if out is None:
        raise InputError("--out", "a PNG needs a file name")
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise InputError("--format png", "needs matplotlib: pip install 'graphmem[png]'") from exc
    layered = graph.copy()
    for depth, generation in enumerate(nx.topological_generations(layered)):
        for n in generation:
            layered.nodes[n]["layer"] = depth
    pos = nx.multipartite_layout(layered, subset_key="layer")
    colours = {"source": "#f4d35e", "derivation": "#9ad1d4", "fact": "#a9c7e8"}
    width = 4 + 3 * (max(nx.get_node_attributes(layered, "layer").values(), default=0) + 1)
    fig, ax = plt.subplots(figsize=(width, max(4, 0.7 * len(graph))))
    nx.draw_networkx_edges(layered, pos, ax=ax, arrows=True, arrowsize=12, edge_color="#888")
    nx.draw_networkx_nodes(layered, pos, ax=ax, node_size=500,
                           node_color=[colours.get(d.get("kind"), "#ddd")
                                       for _, d in layered.nodes(data=True)])
    nx.draw_networkx_labels(layered, pos, ax=ax, font_size=7,
                            labels={n: _wrap(d.get("label", n)) for n, d in layered.nodes(data=True)})
    ax.set_axis_off()
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def _wrap(text: str, width: int = 28) -> str:
    words, lines, line = str(text).split(), [], ""
    for w in words:
        if len(line) + len(w) + 1 > width and line:
            lines.append(line)
            line = w
        else:
            line = f"{line} {w}".strip()
    lines.append(line)
    return "\n".join(lines)
