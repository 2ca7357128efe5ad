"""Lineage: derivations, impact analysis, the retraction cascade and recompute order.

A derivation is recorded as a source of authority ``derived`` (labels
``:Source:Derivation``) that USES its input facts and evidences its output fact, so
the read rule needs nothing special for derived facts: retracting a derivation's
source node is what invalidates its outputs, unless they have other live evidence.

``impact`` fetches everything downstream of a source or a version in one statement
(one breadth-first search in Neo4j that stops below anchored facts, so the cost
follows the affected set, not the graph), walks it level by level in Python, then
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
from collections import Counter
from collections.abc import Sequence
from operator import itemgetter
from typing import Any, Literal, NamedTuple

import networkx as nx
from pydantic import BaseModel, ConfigDict

from . import collector, limits
from .db import Tx
from .errors import InputError, NotFoundError
from .facts import native, scope_params, source_uid
from .models import Scope
from .render import printable
from .values import digest, micros

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
        rows += [(str(i.depth), i.kind, i.reason, printable(i.id), printable(i.label)) for i in self.items]
        widths = [max(len(r[c]) for r in rows) for c in range(5)]
        lines = ["  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)) for r in rows]
        lines.append("")
        lines.append("recompute order: " + (printable(" -> ".join(self.recompute_order)) or "(nothing)"))
        lines.append("counts: " + ", ".join(f"{k}={v}" for k, v in sorted(self.counts.items())))
        if self.truncated:
            lines.append(f"(cut at depth {self.max_depth}: deeper nodes were not examined)")
        return "\n".join(lines)


def derivation_id(method: str, method_version: str, params_text: str,
                  inputs: list[dict[str, Any]], output_key: str) -> str:
    """Stable id of a derivation: the same method, parameters (canonical JSON), inputs
    and output key always name the same derivation, so re-deriving changes nothing."""
    return digest(method, method_version, params_text, inputs, output_key, prefix="drv_")


def normalise_inputs(inputs: dict[str, str | Sequence[str]]) -> list[dict[str, Any]]:
    """``{role: id | [ids]}`` to ordered ``[{role, position, version_id}]`` rows."""
    if not inputs or not isinstance(inputs, dict):
        raise InputError("inputs", "a derivation needs at least one input ({role: id(s)})")
    for role in inputs:  # before sorting them: roles of two types do not sort (a TypeError)
        limits.check_id("inputs", role, limit=limits.NAME_BYTES)
    rows = []
    for role, ids in sorted(inputs.items()):
        versions = [ids] if isinstance(ids, str) else list(ids)
        if not versions:  # a role without inputs: nothing to check, nothing to be public
            raise InputError(f"inputs[{role!r}]", "a role needs at least one version id")
        for position, vid in enumerate(versions):
            if not isinstance(vid, str) or not vid:
                raise InputError(f"inputs[{role!r}]", "version ids must be non-empty strings")
            limits.check_id(f"inputs[{role!r}][{position}]", vid)
            rows.append({"role": role, "position": position, "version_id": vid})
    limits.check_count("inputs", len(rows), limits.IDS_PER_CALL)
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


def standing_id(tx: Tx, scope: Scope, did: str) -> tuple[str, dict[str, Any] | None]:
    """The id a derivation is recorded under now: its own, or - once a retraction took it
    (a cascade found it invalid, as when an input it was made from is now public only
    later, or it was withdrawn) - the first of its successors not retracted. A retracted
    source validates nothing new, so re-deriving under the old id returned an output no
    read shows (or was refused for its changed availability); re-deriving is how the
    recompute order is followed, so it records the derivation again, from its inputs as
    they stand, while a re-sent derivation that stands still changes nothing. Returns the
    id and its source's row (None: not recorded yet), for facts.record_source."""
    params = scope_params(scope)
    while (row := tx.one("source.get_many", uids=[source_uid(scope, f"derivation:{did}")], **params)) \
            and row["retracted_at"] is not None:
        did = digest(did, "recomputed", prefix="drv_")
    return did, row


def refuse_cycles(tx: Tx, scope: Scope, inputs: list[str], output: str) -> None:
    rows = tx.run("lineage.reaches", inputs=sorted(set(inputs)), target=output,
                  **scope_params(scope))
    bad = [r["input"] for r in rows if r["cycle"]]
    if bad:
        raise InputError(
            "inputs", f"cycle: output {output} is upstream of input(s) {', '.join(bad)}"
        )


# ---------------------------------------------------------------- impact


class _Fact(NamedTuple):
    """A fact of the downstream closure, as ``lineage.downstream`` returns it."""

    version_id: str
    root: bool
    anchored: bool
    derivations: list[tuple[str, int | None]]  # its live derivations: node ("d:<id>"), and when
    # their evidence is public if later than the fact was (µs; None: not later)
    entity: str
    attribute: str
    period: str
    available_by: Any
    public_from: int | None  # not anchored, yet other live evidence backs it: public from then (µs)


class _Derivation(NamedTuple):
    """A derivation of the downstream closure: its inputs (with roles), outputs and
    availability (its latest input's, when it was made)."""

    id: str
    uid: str
    method: str
    inputs: list[list[str]]
    outputs: list[str]
    available_by: int  # epoch microseconds


class _Closure(NamedTuple):
    """Everything downstream of an origin, fetched in one statement, indexed for the walk."""

    facts: dict[str, _Fact]  # by version id
    derivations: dict[str, _Derivation]  # by graph node ("d:<id>")
    users: dict[str, list[str]]  # version id -> the derivation nodes that use it

    @property
    def roots(self) -> list[str]:
        return [v for v, f in self.facts.items() if f.root]


def _closure(tx: Tx, scope: Scope, *, source: str | None, version: str | None, known_at: Any,
             prune: bool, with_time: bool) -> _Closure:
    """The downstream closure of a source uid or a version in one round trip.

    One statement, one row of id lists: a round trip per level and
    a record (or a map) per node is what made the walk slow, in the driver's decoding
    more than in Neo4j. A depth limit is applied by the walk, not here (a quantifier
    cannot be a parameter), so a limited impact fetches what an unlimited one does.
    """
    [row] = tx.run("lineage.downstream", source=source, version=version, known_at=known_at, prune=prune,
                   with_time=with_time, **scope_params(scope))
    fact_rows, derivation_rows = row["facts"], row["derivations"]
    facts = {f[0]: _Fact._make(f)._replace(derivations=[(_node(d), later) for d, later in f[3]])
             for f in fact_rows}
    derivations = {_node(d[0]): _Derivation._make(d) for d in derivation_rows}
    users: dict[str, list[str]] = {}
    for node, d in derivations.items():
        for vid, _role in d.inputs:
            users.setdefault(vid, []).append(node)
    return _Closure(facts, derivations, users)


def _node(derivation_source_id: str) -> str:
    """A derivation's graph node ("d:<id>") from its source id ("derivation:<id>")."""
    return f"d:{derivation_source_id.removeprefix('derivation:')}"


def _walk(closure: _Closure, origin: str, max_depth: int | None, prune: bool = True
          ) -> tuple[nx.DiGraph, bool]:
    """The affected subgraph as a DiGraph: origin -> facts -> derivations -> facts ...

    Level by level over the fetched closure, so depth limits cut exactly where they
    did when each level was a query. Anchored facts (other live, non-derived evidence)
    are kept as leaves but not walked below (unless ``prune`` is off, for a full
    downstream drawing): nothing under them can be affected. Only the structure: what
    a node is comes from the closure (``_describe`` copies it in for a drawing), and the
    edges go in one batch per level (networkx's per-call and per-attribute costs add up).
    """
    facts, derivations, users = closure
    graph = nx.DiGraph()
    graph.add_node(origin)
    if max_depth is not None and max_depth < 1:  # the origin's own facts lie at depth 1
        return graph, bool(closure.roots)
    graph.add_edges_from((origin, f"f:{vid}") for vid in closure.roots)
    frontier = sorted(v for v in closure.roots if not facts[v].anchored)
    depth, truncated = 1, False
    while frontier:
        if max_depth is not None and depth + 2 > max_depth:
            truncated = any(v in users for v in frontier)  # cut only if something lies below
            break
        step: dict[str, list[str]] = {}  # derivation node -> its inputs in this frontier
        for vid in frontier:
            for node in users.get(vid, ()):
                if node in step:
                    step[node].append(vid)
                else:
                    step[node] = [vid]
        nxt, edges = [], []
        for node, inputs in step.items():
            edges += [(f"f:{vid}", node) for vid in inputs]
            for vid in derivations[node].outputs:
                out = f"f:{vid}"
                if out not in graph and not (prune and facts[vid].anchored):
                    nxt.append(vid)
                edges.append((node, out))
        graph.add_edges_from(edges)
        frontier, depth = sorted(set(nxt)), depth + 2
    return graph, truncated


def _describe(graph: nx.DiGraph, closure: _Closure) -> None:
    """Copy what each walked node is (and each input's role) into a downstream drawing."""
    for node, data in graph.nodes(data=True):
        if node.startswith("f:"):
            f = closure.facts[node[2:]]
            data.update(kind="fact", anchored=f.anchored, derivations=len(f.derivations))
        elif node.startswith("d:"):
            d = closure.derivations[node]
            data.update(kind="derivation", method=d.method, uid=d.uid)
            for vid, role in d.inputs:
                if graph.has_edge(f"f:{vid}", node):
                    graph.edges[f"f:{vid}", node]["role"] = role


def _decide(graph: nx.DiGraph, closure: _Closure, origin: str, version_origin: bool,
            superseded: bool) -> dict[str, Reason | None]:
    """Each node's fate, in topological order (inputs are decided before consumers), which
    the returned dict keeps: it is also the recompute order.

    A derivation is invalid when an input is, or when an input that stands is now
    public only later than the derivation is (its earlier evidence all went: made from
    it before then, the derivation looked ahead); stale when an input is stale. A fact
    is invalid when it is not anchored and every live derivation evidencing it is
    invalid (the origin's own facts: when they have no other evidence that survives) -
    unless other live evidence, public later, still backs it: it survives, public from
    then. What backs it may be another live derivation public later, too: it stands
    only from the earliest of what is left. Stale when one of its live derivations is
    stale; else it survives. None: not affected at all.
    A derivation already retracted is walked (a report lists it again) but is no
    evidence left to the fact: only the live ones decide.
    """
    fate: dict[str, Reason | None] = {}
    later: dict[str, int] = {}  # facts that stand only by evidence public later than they were: from when
    for node in nx.topological_sort(graph):
        parents = {fate[p] for p in graph.predecessors(node)}
        if node == origin:
            fate[node] = "origin"
        elif node.startswith("d:"):
            fate[node] = ("invalid" if parents & {"invalid", "origin"} or _ahead(closure, node, later)
                          else "stale" if "stale" in parents else None)
        elif not parents & {"invalid", "stale", "origin"}:
            fate[node] = None
        elif "origin" in parents and version_origin:
            fate[node] = "stale" if superseded else "invalid"
        elif (fact := closure.facts[node[2:]]).anchored:
            fate[node] = "survives"
        else:
            fate[node] = _standing(fact, fate, later)
    return fate


def _standing(fact: _Fact, fate: dict[str, Reason | None], later: dict[str, int]) -> Reason:
    """The fate of a fact not anchored whose evidence was hit: invalid when no live
    evidence is left; else stale when a live derivation of it is, or it survives - and
    when all that is left (other evidence, derivations not invalid) is public later than
    the fact was, it is public only from the earliest of it, which ``later`` records."""
    left = [at for d, at in fact.derivations if fate.get(d) != "invalid"]  # no fate: unaffected
    if fact.public_from is not None:
        left.append(fact.public_from)
    if not left:
        return "invalid"
    if None not in left:
        later[fact.version_id] = min(at for at in left if at is not None)
    return "stale" if any(fate.get(d) == "stale" for d, _ in fact.derivations) else "survives"


def _ahead(closure: _Closure, node: str, later: dict[str, int]) -> bool:
    """Whether a derivation is public before one of its inputs now is: an input that
    lost every earlier evidence (``later``) and stands by later ones alone."""
    d = closure.derivations[node]
    return any(later[vid] > d.available_by for vid, _ in d.inputs if vid in later)


def _shortest_paths(graph: nx.DiGraph, origin: str) -> dict[str, tuple[str, ...]]:
    """One shortest path from the origin to every node, as a report shows it (ids without
    their "f:"/"d:" prefixes): the breadth-first search of networkx's
    ``single_source_shortest_path`` (same order, so the same paths), building each final
    tuple once instead of a list per node that is then copied again per item.
    """
    paths = {origin: (origin[2:],)}
    level = [origin]
    while level:
        nxt = []
        for node in level:
            for child in graph.successors(node):
                if child not in paths:
                    paths[child] = (*paths[node], child[2:])
                    nxt.append(child)
        level = nxt
    return paths


@collector.paused()  # see graphmem/collector.py
def impact(tx: Tx, scope: Scope, *, source_id: str | None, version_id: str | None,
           max_depth: int | None, cutoff: dt.datetime | None, known_at: Any,
           as_invalid: bool = False) -> ImpactReport:
    """Everything downstream of a source (as if retracted) or a version.

    A version origin that has been superseded makes its consumers ``stale``; otherwise,
    or with ``as_invalid`` (an invalidation), they are ``invalid``.
    """
    params = scope_params(scope)
    if (source_id is None) == (version_id is None):
        raise InputError("impact", "give exactly one of source_id= or version_id=")
    superseded = False
    if source_id is not None:
        s_uid, origin = source_uid(scope, source_id), f"s:{source_id}"
    else:
        s_uid, origin = None, f"v:{version_id}"
        row = tx.one("lineage.superseded", version_id=version_id, known_at=known_at, **params)
        if row is None:
            raise NotFoundError(f"no version {version_id} in scope {scope.id}")
        superseded = row["superseded"] and not as_invalid
    closure = _closure(tx, scope, source=s_uid, version=version_id, known_at=known_at, prune=True,
                       with_time=cutoff is not None)
    if s_uid is not None and not closure.facts and not tx.run("source.get_many", uids=[s_uid], **params):
        raise NotFoundError(f"no source {source_id!r} in scope {scope.id}")
    graph, truncated = _walk(closure, origin, max_depth)
    fate = _decide(graph, closure, origin, version_id is not None, superseded)
    affected = [n for n, r in fate.items() if r not in (None, "origin") and _public(closure, n, cutoff)]
    labels = closure.facts
    paths = _shortest_paths(graph, origin)
    items = []  # plain dicts, validated in one pass with the report (not one model per item)
    for node in affected:
        if node.startswith("f:"):
            f = labels[node[2:]]
            kind, label = "fact", f"{f.entity} {f.attribute} {f.period}"
        else:
            kind, label = "derivation", f"{closure.derivations[node].method}"
        path = paths[node]
        items.append({"kind": kind, "id": node[2:], "depth": len(path) - 1, "reason": fate[node],
                      "path": path, "label": label})
    items.sort(key=itemgetter("depth", "kind", "id"))
    order = [n[2:] for n in affected  # fate (and so affected) is in topological order
             if n.startswith("d:") and fate[n] in ("invalid", "stale")]
    counts = Counter(f"{i['kind']}s_{i['reason']}" for i in items)
    return ImpactReport.model_validate({
        "origin": origin, "items": items, "recompute_order": order, "counts": counts,
        "max_depth": max_depth, "truncated": truncated,
        "known_at": native(known_at) if known_at is not None else None})


def _public(closure: _Closure, node: str, cutoff: dt.datetime | None) -> bool:
    """Whether a node of the report was public by the cutoff (None: no cutoff). A
    derivation is public when its latest input was, as its output is: one made public
    after the cutoff could not have been run by then, so it is no more listed, counted
    or put in the recompute order than its output is."""
    if cutoff is None:
        return True
    if node.startswith("f:"):
        return native(closure.facts[node[2:]].available_by) <= cutoff
    return closure.derivations[node].available_by <= micros(cutoff)


def retraction_targets(report: ImpactReport, scope: Scope) -> list[str]:
    """Source uids to retract for a report: the invalid derivations."""
    return [source_uid(scope, f"derivation:{i.id}") for i in report.items
            if i.kind == "derivation" and i.reason == "invalid"]


def invalidate(tx: Tx, scope: Scope, version_ids: Sequence[str], *, reason: str, by: str | None,
               at: Any) -> None:
    """Invalidate versions from ``at`` on, and retract every derivation that each one's
    impact makes invalid (an invalidated input invalidates what was derived from it).

    One invalidation record per version not invalidated yet, and the cascade for those
    only; the caller's transaction holds it all, so a failure leaves none of it."""
    rows = tx.run("lifecycle.invalidate", version_ids=list(version_ids),
                  record_id=digest(*version_ids, at, prefix="inv_"), reason=reason, by=by,
                  cause=None, recorded_at=at, **scope_params(scope))
    for version_id in [row["version_id"] for row in rows]:
        report = impact(tx, scope, source_id=None, version_id=version_id, max_depth=None,
                        cutoff=None, known_at=at, as_invalid=True)
        tx.run("lifecycle.retract", uids=retraction_targets(report, scope),
               record_id=digest(version_id, at, prefix="ret_"), reason=reason, by=by,
               cause=f"version:{version_id}", recorded_at=at, **scope_params(scope))


# ---------------------------------------------------------------- export


@collector.paused()  # see graphmem/collector.py
def lineage_graph(tx: Tx, scope: Scope, version_id: str, direction: str,
                  max_depth: int | None, known_at: Any) -> nx.DiGraph:
    """The lineage of one version as a DiGraph whose edges point from input to output, as
    recorded by ``known_at``: evidence and derivations recorded later are not in it."""
    params = scope_params(scope)
    graph = nx.DiGraph()
    if direction == "downstream":
        closure = _closure(tx, scope, source=None, version=version_id, known_at=known_at,
                           prune=False, with_time=False)
        # the walk counts the version itself as depth 1 below its origin; a lineage counts
        # from the version (depth 0), as upstream does
        walked, _ = _walk(closure, f"v:{version_id}", None if max_depth is None else max_depth + 1,
                          prune=False)
        walked.remove_node(f"v:{version_id}")
        _describe(walked, closure)
        graph.update(walked)
    elif direction == "upstream":
        frontier, depth = [version_id], 0
        graph.add_node(f"f:{version_id}")
        while frontier and (max_depth is None or depth + 2 <= max_depth):
            nxt = []
            for r in tx.run("lineage.upstream_step", version_ids=frontier, known_at=known_at, **params):
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
    facts = [n[2:] for n in graph if n.startswith("f:")] or [version_id]
    labelled = tx.run("lineage.fact_labels", version_ids=facts, known_at=known_at, **params)
    if version_id not in {r["version_id"] for r in labelled}:
        raise NotFoundError(f"no version {version_id} in scope {scope.id} as recorded by "
                            f"{native(known_at).isoformat()}")
    for r in labelled:
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
    """A derivation's parameters as canonical JSON, at most ``limits.TEXT_BYTES``: a value
    JSON has no type for (a Decimal, a date) as its text; NaN or an infinity refused (no
    JSON holds them: stored, they would make the record unreadable as JSON), and so is
    nesting deeper than the encoder recurses (a RecursionError that named nothing)."""
    try:
        text = json.dumps(params, sort_keys=True, default=str, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InputError("params", f"must be JSON-serialisable: {exc}") from exc
    except RecursionError:
        raise InputError("params", "nested too deep to write as JSON") from None
    return limits.check_text("params", text) or text
