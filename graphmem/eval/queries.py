"""``graphmem eval retrieval --queries FILE``: a user's fixed query set on each rung.

FILE is JSON Lines, one query a line::

    {"query": "why did we undo the deployment?", "scope": {"tenant": "acme", "project": "web"},
     "relevant": ["exp_..."], "forbidden": ["fv_..."], "cutoff": "2025-01-01T00:00:00Z",
     "known_at": null, "types": ["experience"], "group": "paraphrase"}

``scope`` is a graphmem scope (``tenant`` and its keys); ``namespace`` (a list of labels,
with ``tenant``) names a LangGraph store namespace instead, whose ids are item keys (labels
as the store takes them: 1 to 16, none empty or with a period).
``relevant`` and ``forbidden`` are memory ids (a fact version id stands for its key's
hit), ``cutoff``/``known_at`` ISO times (default: now), ``group`` an optional label the
results are also broken down by. Each rung the configuration offers (text; semantic and
hybrid with an embedder) is scored: recall@5/@10 and MRR (over the queries that name
relevant ids), forbidden hits (any is a failure), latency p50/p95 and the query-embedding time. Nothing is written.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

from .. import limits, search
from ..errors import InputError
from ..models import MEMORY_TYPES, Scope
from ..values import aware_utc
from . import rungs, score

MAX_QUERIES = 100_000


def read(path: Path) -> list[dict[str, Any]]:
    """The query set, each line checked before any search runs."""
    out = []
    try:
        lines = path.read_text(encoding="utf-8-sig").splitlines()
    except (OSError, UnicodeDecodeError) as exc:  # JSON Lines are UTF-8 (a byte-order mark allowed)
        raise InputError(str(path), str(exc)) from exc
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"{path}:{n}"
        try:
            q = json.loads(line)
        except ValueError as exc:
            raise InputError(where, f"not JSON: {exc}") from exc
        if not isinstance(q, dict) or not isinstance(q.get("query"), str):
            raise InputError(where, 'an object with a "query" string is required')
        if not all(_strings(q.get(k, [])) for k in ("relevant", "forbidden")):
            raise InputError(where, '"relevant" and "forbidden" are lists of ids')
        if q.get("group") is not None and not isinstance(q["group"], str):
            raise InputError(where, '"group" is a label (a string)')
        if "types" in q and not _types(q["types"]):
            raise InputError(where, f'"types" is a list of memory types ({", ".join(MEMORY_TYPES)})')
        try:
            q["_scope"] = _scope(q)
            _query_text(q["query"], *q["_scope"])
            q["_times"] = {k: _time(k, q.get(k)) for k in ("cutoff", "known_at")}
        except (ValueError, TypeError) as exc:
            raise InputError(where, str(exc)) from exc
        out.append(q)
    if len(out) > MAX_QUERIES:
        raise InputError(str(path), f"{len(out):,} queries; at most {MAX_QUERIES:,}")
    return out


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(x, str) for x in value)


def _types(value: Any) -> bool:
    """``types`` as the search takes it (one type, or a list of them; null: every type),
    checked here so that a wrong one is named by its line before any search runs."""
    value = [value] if isinstance(value, str) else value
    return value is None or (_strings(value) and bool(value) and set(value) <= set(MEMORY_TYPES))


def _scope(q: dict[str, Any]) -> tuple[Scope, str | None]:
    """The scope to search, and the entity of a LangGraph namespace (None for a scope)."""
    if "namespace" in q:
        from ..integrations.langgraph import ENTITY_PREFIX
        from ..integrations.langgraph import _labels as store_labels

        labels, tenant = q["namespace"], q.get("tenant")
        if not isinstance(labels, list):
            raise ValueError('"namespace" is a list of labels')
        store_labels(labels, "namespace", empty=False)  # one the store takes: else no store wrote it
        if not isinstance(tenant, str):
            raise ValueError('a "namespace" needs its "tenant" (a string)')
        ns = ".".join(labels)
        return Scope(tenant=tenant, namespace=ns), ENTITY_PREFIX + ns
    if not isinstance(q.get("scope"), dict):
        raise ValueError('a "scope" object (tenant and its keys) or a "namespace" is required')
    return Scope(**q["scope"]), None


def _query_text(text: str, scope: Scope, entity: str | None) -> None:
    """A query's text as every rung's search takes it (its size, text UTF-8 can carry, its
    searchable words), so that a bad one is named by its line before any search runs."""
    try:
        limits.check_text("query", text, limits.SEARCH_TEXT_BYTES)
        search.lucene(scope, text, "any", entity)
    except InputError as exc:
        raise InputError("query", exc.reason) from exc


def _time(name: str, value: Any) -> dt.datetime | None:
    """A query's cutoff or known_at, in UTC: one outside the years 1 to 9999 there is
    refused with its line, not by the search of that line once the lines before it ran."""
    if value is None:
        return None
    t = dt.datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    if t.tzinfo is None:
        raise ValueError(f"{value}: a time with its offset is required")
    return aware_utc(name, t)


def _stands_for(hit: Any, entity: str | None) -> set[str]:
    """The ids a hit stands for: its memory ids, and in a LangGraph namespace its item key
    (the ids such a query names), so that a forbidden item returned is counted."""
    ids = set(hit.memory_ids) | {hit.memory_id}
    return ids | {hit.answer.attribute} if entity and hit.answer else ids


def run(memory: Any, path: Path, embedder: Any = None, limit: int = 10) -> dict[str, Any]:
    offered = rungs(embedder)
    tallies = {r: score.Tally() for r in offered}
    for q in read(path):
        scope, entity = q["_scope"]
        for rung in offered:
            result, ms = score.timed(
                memory.search, scope, text=q["query"], types=q.get("types"), entity=entity, limit=limit,
                match="any", mode=rung, embedder=embedder if rung != "text" else None, **q["_times"])
            # a hit retrieves every id it stands for (each of a conflict's candidates)
            shown = [_stands_for(h, entity) for h in result.hits]
            relevant, forbidden = set(q.get("relevant", [])), set(q.get("forbidden", []))
            forbidden_hits = {i for ids in shown for i in ids} & forbidden
            tallies[rung].add([q["group"]] if q.get("group") else [], shown, relevant, len(forbidden_hits),
                              ms=ms, embedding_ms=result.explain.embedding_ms)
    results = {r: t.summary() for r, t in tallies.items()}
    return {"queries": str(path), "embedder": embedder.name if embedder else None, "rungs": results,
            "ok": all(r["forbidden_hits"] == 0 for r in results.values())}
