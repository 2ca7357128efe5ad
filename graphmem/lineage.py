"""Lineage: derivations, impact analysis, the retraction cascade and recompute order.

A derivation is recorded as a source of authority ``derived`` (labels
``:Source:Derivation``) that USES its input facts and evidences its output fact, so
the read rule needs nothing special for derived facts: retracting a derivation's
source node is what invalidates its outputs, unless they have other live evidence.

``impact`` walks down from a source or a version level by level in Cypher (one
round trip per step, so the cost follows the affected set, not the graph), then
decides each node's fate in topological order with networkx:

- a fact is ``invalid`` when none of its evidence survives (every source retracted
  or an invalid derivation), and ``survives`` when other live evidence remains;
- a derivation is ``invalid`` when one of its inputs is invalid, and ``stale`` when
  an input is merely superseded by a newer version (recompute for new cutoffs);
- what survives stops the walk: nothing below it is affected.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from typing import Any, Literal

import networkx as nx
from pydantic import BaseModel, ConfigDict

from .db import Tx
from .errors import InputError, NotFoundError
from .facts import native, scope_params, source_uid
from .models import Scope
from .values import digest

Reason = Literal["origin", "invalid", "stale", "survives"]


class ImpactItem(BaseModel):
    """One fact version or derivation downstream of the origin, and why it is affected."""

    model_config = ConfigDict(frozen=True)
    kind: Literal["fact", "derivation"]
    id: str
    depth: int
    reason: Reason
    path: tuple[str, ...]
    label: str


class ImpactReport(BaseModel):
    """What lies downstream of a source or version, and the order to recompute it in."""

    model_config = ConfigDict(frozen=True)
    origin: str
    items: tuple[ImpactItem, ...]
    recompute_order: tuple[str, ...]
    counts: dict[str, int]
    max_depth: int | None
    truncated: bool
    known_at: dt.datetime | None = None

    def to_json(self) -> str:
        return self.model_dump_json(indent=2)

    def table(self) -> str:
        """A plain-text table: one row per affected node, then the recompute order."""
        rows = [("depth", "kind", "reason", "id", "what")]
        rows += [(str(i.depth), i.kind, i.reason, i.id, i.label) for i in self.items]
        widths = [max(len(r[c]) for r in rows) for c in range(5)]
        lines = ["  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)) for r in rows]
        lines.append("")
        lines.append("recompute order: " + (" -> ".join(self.recompute_order) or "(nothing)"))
        lines.append("counts: " + ", ".join(f"{k}={v}" for k, v in sorted(self.counts.items())))
        if self.truncated:
            lines.append(f"(cut at depth {self.max_depth}: deeper nodes were not examined)")
        return "\n".join(lines)


def derivation_id(method: str, method_version: str, params: dict[str, Any],
                  inputs: list[dict[str, Any]], output_key: str) -> str:
    return digest(method, method_version, params, inputs, output_key, prefix="drv_")


def normalise_inputs(inputs: dict[str, str | Sequence[str]]) -> list[dict[str, Any]]:
    """``{role: id | [ids]}`` to ordered ``[{role, position, version_id}]`` rows."""
    if not inputs:
        raise InputError("inputs", "a derivation needs at least one input")
    rows = []
    for role, ids in sorted(inputs.items()):
        for position, vid in enumerate([ids] if isinstance(ids, str) else list(ids)):
            if not isinstance(vid, str) or not vid:
                raise InputError(f"inputs[{role!r}]", "version ids must be non-empty strings")
            rows.append({"role": role, "position": position, "version_id": vid})
    return rows


def check_inputs(tx: Tx, scope: Scope, rows: list[dict[str, Any]], cutoff: dt.datetime | None
                 ) -> dt.datetime:
    """Refuse unknown, invalid or look-ahead inputs; return the latest input availability."""
    ids = sorted({r["version_id"] for r in rows})
    state = {s["version_id"]: s for s in tx.run("lineage.input_state", version_ids=ids,
                                                 **scope_params(scope))}
    latest: dt.datetime | None = None
    for vid in ids:
        s = state.get(vid)
        if s is None:
            raise NotFoundError(f"input version {vid} not found in scope {scope.id}")
        if s["erased"] or s["invalidated"] or s["public_by"] is None:
            raise InputError(f"inputs[{vid}]", "input is invalidated, retracted or erased")
        public_by = native(s["public_by"])
        if cutoff is not None and public_by > cutoff:
            raise InputError(
                f"inputs[{vid}]",
                f"look-ahead: public only from {public_by.isoformat()}, after the derivation's "
                f"cutoff {cutoff.isoformat()}",
            )
        latest = public_by if latest is None or public_by > latest else latest
    assert latest is not None
    return latest


def refuse_cycles(tx: Tx, scope: Scope, inputs: list[str], output: str) -> None:
    rows = tx.run("lineage.reaches", inputs=sorted(set(inputs)), target=output,
                  **scope_params(scope))
    bad = [r["input"] for r in rows if r["cycle"]]
    if bad:
        raise InputError(
            "inputs", f"cycle: output {output} is upstream of input(s) {', '.join(bad)}"
        )


# ---------------------------------------------------------------- impact


def _walk(tx: Tx, scope: Scope, roots: list[str], origin: str, known_at: Any,
          max_depth: int | None) -> tuple[nx.DiGraph, bool]:
    """The downstream subgraph as a DiGraph: origin -> facts -> derivations -> facts ..."""
    params = scope_params(scope)
    graph = nx.DiGraph()
    graph.add_node(origin, kind="origin")
    for vid in roots:
        graph.add_edge(origin, f"f:{vid}")
    frontier, depth, truncated = list(roots), 1, False
    while frontier:
        if max_depth is not None and depth + 2 > max_depth:
            # Cut here; say so only if something really lies below.
            truncated = bool(tx.run("lineage.downstream_step", version_ids=frontier,
                                    known_at=known_at, **params))
            break
        rows = tx.run("lineage.downstream_step", version_ids=frontier, known_at=known_at, **params)
        nxt = []
        for r in rows:
            d = f"d:{r['derivation'].removeprefix('derivation:')}"
            graph.add_node(d, kind="derivation", method=r["method"], uid=r["derivation_uid"],
                           retracted=r["retracted"])
            graph.add_edge(f"f:{r['input']}", d, role=r["role"])
            for out in r["outputs"]:
                if f"f:{out}" not in graph:
                    nxt.append(out)
                graph.add_edge(d, f"f:{out}")
        frontier, depth = sorted(set(nxt)), depth + 2
    return graph, truncated


def _decide(graph: nx.DiGraph, info: dict[str, dict[str, Any]], origin_kind: str,
            origin_uid: str | None) -> dict[str, Reason]:
    """Each node's fate, in topological order (inputs are decided before consumers)."""
    fate: dict[str, Reason] = {}
    invalid_sources = {origin_uid} if origin_uid else set()
    for node in nx.topological_sort(graph):
        kind = graph.nodes[node].get("kind")
        if kind == "origin":
            fate[node] = "origin"
            continue
        parents = [fate.get(p) for p in graph.predecessors(node)]
        if kind == "derivation":
            if "invalid" in parents or "origin" in parents:
                fate[node] = "invalid"
                invalid_sources.add(graph.nodes[node]["uid"])
            elif "stale" in parents:
                fate[node] = "stale"
            continue
        vid = node[2:]
        facts = info.get(vid, {})
        if any(p == "origin" for p in parents) and origin_kind == "version":
            fate[node] = "stale" if facts.get("superseded") else "invalid"
            continue
        if "invalid" in parents:
            live = [e for e in facts.get("evidence", [])
                    if not e["retracted"] and e["uid"] not in invalid_sources]
            fate[node] = "survives" if live else "invalid"
        elif "stale" in parents:
            fate[node] = "stale"
        elif "origin" in parents:  # a fact of the retracted source itself
            live = [e for e in facts.get("evidence", [])
                    if not e["retracted"] and e["uid"] not in invalid_sources]
            fate[node] = "survives" if live else "invalid"
    return fate


def impact(tx: Tx, scope: Scope, *, source_id: str | None, version_id: str | None,
           max_depth: int | None, cutoff: dt.datetime | None, known_at: Any) -> ImpactReport:
    """Everything downstream of a source (as if retracted) or a version (as if invalidated)."""
    params = scope_params(scope)
    if (source_id is None) == (version_id is None):
        raise InputError("impact", "give exactly one of source_id= or version_id=")
    if source_id is not None:
        s_uid = source_uid(scope, source_id)
        origin = f"s:{source_id}"
        roots = [r["version_id"] for r in tx.run("lineage.source_facts", uid=s_uid,
                                                  known_at=known_at, **params)]
        if not roots and not tx.run("source.get_many", uids=[s_uid], **params):
            raise NotFoundError(f"no source {source_id!r} in scope {scope.id}")
        graph, truncated = _walk(tx, scope, roots, origin, known_at, max_depth)
    else:
        s_uid = None
        origin = f"v:{version_id}"
        graph, truncated = _walk(tx, scope, [version_id], origin, known_at, max_depth)
    fact_ids = [n[2:] for n in graph if n.startswith("f:")]
    info = {r["version_id"]: r for r in tx.run("lineage.fact_info", version_ids=fact_ids,
                                                known_at=known_at, **params)}
    if version_id is not None and version_id not in info:
        raise NotFoundError(f"no version {version_id} in scope {scope.id}")
    fate = _decide(graph, info, "source" if source_id else "version", s_uid)
    if cutoff is not None:  # only what was public by the cutoff
        fate = {n: r for n, r in fate.items()
                if not n.startswith("f:") or native(info[n[2:]]["available_by"]) <= cutoff}
    affected = [n for n, r in fate.items() if r != "origin"]
    items = []
    for node in affected:
        path = nx.shortest_path(graph, origin, node)
        if node.startswith("f:"):
            f = info[node[2:]]
            label = f"{f['entity']} {f['attribute']} {f['period']}"
        else:
            label = f"{graph.nodes[node]['method']}"
        items.append(ImpactItem(kind="fact" if node.startswith("f:") else "derivation",
                                id=node[2:], depth=len(path) - 1, reason=fate[node],
                                path=tuple(p[2:] for p in path), label=label))
    items.sort(key=lambda i: (i.depth, i.kind, i.id))
    order = [n[2:] for n in nx.topological_sort(graph)
             if n.startswith("d:") and fate.get(n) in ("invalid", "stale")]
    counts: dict[str, int] = {}
    for i in items:
        counts[f"{i.kind}s_{i.reason}"] = counts.get(f"{i.kind}s_{i.reason}", 0) + 1
    return ImpactReport(origin=origin, items=tuple(items), recompute_order=tuple(order),
                        counts=counts, max_depth=max_depth, truncated=truncated,
                        known_at=native(known_at) if known_at is not None else None)


def retraction_targets(report: ImpactReport, scope: Scope) -> list[str]:
    """Source uids to retract for a report: the invalid derivations."""
    return [digest(scope.id, "source", f"derivation:{i.id}") for i in report.items
            if i.kind == "derivation" and i.reason == "invalid"]


# ---------------------------------------------------------------- export


def lineage_graph(tx: Tx, scope: Scope, version_id: str, direction: str,
                  max_depth: int | None, known_at: Any) -> nx.DiGraph:
    """The lineage of one version as a DiGraph whose edges point from input to output."""
    params = scope_params(scope)
    graph = nx.DiGraph()
    if direction == "downstream":
        walked, _ = _walk(tx, scope, [version_id], f"v:{version_id}", known_at, max_depth)
        walked.remove_node(f"v:{version_id}")
        graph.update(walked)
    elif direction == "upstream":
        frontier, depth = [version_id], 0
        graph.add_node(f"f:{version_id}")
        while frontier and (max_depth is None or depth + 2 <= max_depth):
            nxt = []
            for r in tx.run("lineage.upstream_step", version_ids=frontier, **params):
                if r["derivation"]:
                    d = f"d:{r['source'].removeprefix('derivation:')}"
                    graph.add_node(d, kind="derivation", method=r["method"])
                    graph.add_edge(d, f"f:{r['fact']}")
                    for i in r["inputs"]:
                        graph.add_edge(f"f:{i['version_id']}", d, role=i["role"])
                        nxt.append(i["version_id"])
                else:
                    s = f"s:{r['source']}"
                    graph.add_node(s, kind="source", authority=r["authority"],
                                   source_kind=r["kind"], uri=r["uri"] or "")
                    graph.add_edge(s, f"f:{r['fact']}")
            frontier, depth = sorted(set(nxt)), depth + 2
    else:
        raise InputError("direction", "must be 'upstream' or 'downstream'")
    facts = [n[2:] for n in graph if n.startswith("f:")]
    for r in tx.run("lineage.fact_info", version_ids=facts, known_at=known_at, **params):
        graph.nodes[f"f:{r['version_id']}"].update(
            kind="fact", entity=r["entity"], attribute=r["attribute"], period=r["period"])
    for node, data in graph.nodes(data=True):
        data.setdefault("kind", node.split(":", 1)[0])
        data["label"] = _label(node, data)
    return graph


def _label(node: str, data: dict[str, Any]) -> str:
    if data.get("kind") == "fact":
        return f"{data.get('entity')} {data.get('attribute')} {data.get('period')}"
    if data.get("kind") == "derivation":
        return f"{data.get('method')}"
    return node


def params_json(params: dict[str, Any]) -> str:
    try:
        return json.dumps(params, sort_keys=True, default=str)
    except TypeError as exc:
        raise InputError("params", f"must be JSON-serialisable: {exc}") from exc
