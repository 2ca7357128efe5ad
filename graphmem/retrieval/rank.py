"""Semantic and hybrid search: the hard filters first, then similarity over what is legal.

1. **The legal candidates** are search.hits' answer for the scope with no text (every
   memory of the scope matches): scope, type, entity, task, known_at, erasure, cutoff,
   status and evidence, and for fact keys the read rule itself - the very statements a
   text search runs (graphmem/search.py), so there is one read rule. Nothing outside
   them is scored, so nothing outside them can come back, however similar.
2. **Similarity** is exact: the cosine of the query's vector with each legal memory's
   stored vector, computed by Neo4j over the legal ids only (``retrieval.similarity``).
   A legal memory not yet embedded is embedded now, stored, and scored (the search
   waits for it, as a text search waits for the full-text index).
3. **Ranking**, by key: authority tier (as in a text search: no similarity lets a
   low-authority memory outrank a primary one), then how many of the query's
   identifiers the memory holds (a token with a digit or inner punctuation, or all
   capitals: an error code, accession, CVE, ticker or id - exact, whatever the
   embedding says), then the fused score, then recency, then id.
   ``semantic``: the fused score is the similarity. ``hybrid``: a weighted sum of the
   min-max-normalised full-text score (the query's words with ``match="any"``; 0 for a
   legal memory the text does not match) and similarity, ``TEXT_WEIGHT`` on the text.
   Reciprocal-rank fusion measured worse on LoCoMo (docs/PERFORMANCE.md), as the
   issue's own measurements found.

``explain`` gives each hit's text score, semantic score, fused score and identifier
count; ``SearchQuery.mode`` records the mode with every context snapshot built from it.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

from .. import governance, search
from ..db import Tx
from ..errors import InputError
from ..models import Scope, SearchExplain, SearchResult
from .embedders import Embedder
from .store import claim, embed_rows, texts

TEXT_WEIGHT = 0.5
"""Hybrid's weight on the normalised text score (1 - it on similarity): see
docs/PERFORMANCE.md for the sweep on LoCoMo it was chosen by."""
RANKING = {
    "semantic": "authority tier, then the query's identifiers held (exact), then cosine "
                "similarity to the query, then recency, then id; over the legal candidates only",
    "hybrid": f"authority tier, then the query's identifiers held (exact), then "
              f"{TEXT_WEIGHT:g} x min-max(text score) + {1 - TEXT_WEIGHT:g} x min-max(similarity), "
              "then recency, then id; over the legal candidates only",
}


def legal(tx: Tx, scope: Scope, q: dict[str, Any]) -> search.Evaluation:
    """Every memory of the scope that passes the search's hard filters (search.hits with
    no text, every hit evaluated)."""
    assert q["lucene"] == search.query_lucene(scope, None, "any", q["entity"])
    return search.evaluate(tx, scope, q, exhaustive=True)


def _identifiers(text: str) -> list[str]:
    return sorted({t for t in search.tokens(text) if search._identifier(t)})


def text_scores(tx: Tx, scope: Scope, text: str, entity: str | None) -> dict[str, float]:
    """The full-text score of each memory of the scope the query's words match
    (``match="any"``), by id; empty when the text has nothing searchable."""
    try:
        lucene = search.lucene(scope, text, "any", entity)
    except InputError:  # stop words only: no text side
        return {}
    return {r["id"]: r["score"] for r in tx.run("retrieval.text_scores", lucene=lucene,
                                                 **_scope(scope))}


def held(tx: Tx, scope: Scope, text: str) -> dict[str, int]:
    """How many of the query's identifier-like tokens each memory holds (exact phrase)."""
    counts: dict[str, int] = {}
    for token in _identifiers(text):
        for r in tx.run("retrieval.text_scores", lucene=search.lucene(scope, token, "all", None),
                        **_scope(scope)):
            counts[r["id"]] = counts.get(r["id"], 0) + 1
    return counts


def _scope(scope: Scope) -> dict[str, str]:
    return {"tenant": scope.tenant, "scope": scope.id}


def _cosine01(a: list[float], b: list[float], dims: int) -> float | None:
    """Neo4j's vector.similarity.cosine for a fresh vector: (1 + cos) / 2, best part
    (as retrieval.similarity: None for no vector, 0.5 - orthogonal - for a zero one)."""
    best = None
    for i in range(0, len(a), dims):
        part = a[i:i + dims]
        na, nb = math.sqrt(sum(x * x for x in part)), math.sqrt(sum(x * x for x in b))
        s = (1 + sum(x * y for x, y in zip(part, b, strict=True)) / (na * nb)) / 2 if na and nb else 0.5
        best = s if best is None else max(best, s)
    return best


def similarity(memory: Any, scope: Scope, hits: list[search._Hit], vector: list[float],
               embedder: Embedder) -> dict[str, float | None]:
    """Each legal hit's similarity to the query; embeds and stores the ones not embedded."""
    ids = [(h.memory_id, h.type == "fact") for h in hits]
    fact_ids = {i for i, f in ids if f}
    rows = memory.db.read_all(
        "retrieval.similarity", facts=list(fact_ids), memories=[i for i, f in ids if not f],
        vector=vector, zero=not any(vector), name=embedder.name, dims=embedder.dims, **_scope(scope))
    sims = {r["id"]: r["similarity"] for r in rows if r["ready"]}
    todo = [(r["id"], r["id"] in fact_ids) for r in rows if not r["ready"]]
    if todo:
        found = memory.db.read(lambda tx: texts(tx, scope, todo), "retrieval.texts")
        fresh = embed_rows(lambda work: memory.write(scope, "retrieval.set_vectors",
                                                     lambda tx, at: work(tx)),
                           scope, embedder, found, embedder.text_of)
        sims.update({i: _cosine01(v, vector, embedder.dims or len(vector)) for i, v in fresh.items()})
    return sims


def _minmax(values: dict[str, Any], ids: list[str]) -> dict[str, float]:
    got = {i: values.get(i) or 0.0 for i in ids}
    low, high = min(got.values(), default=0.0), max(got.values(), default=0.0)
    return {i: (v - low) / (high - low) if high > low else 0.0 for i, v in got.items()}


def fuse(mode: str, text: dict[str, float], sims: dict[str, Any], ids: list[str]
         ) -> dict[str, float]:
    """The fused score of each id: similarity (semantic), or the weighted sum of both
    min-max-normalised over the legal candidates (hybrid)."""
    if mode == "semantic":
        return {i: sims.get(i) or 0.0 for i in ids}
    t, s = _minmax(text, ids), _minmax(sims, ids)
    return {i: TEXT_WEIGHT * t[i] + (1 - TEXT_WEIGHT) * s[i] for i in ids}


def run(memory: Any, scope: Scope, q: dict[str, Any], embedder: Embedder,
        timer: Callable[[], float] = time.perf_counter) -> SearchResult:
    """A semantic or hybrid search (the module docstring)."""
    started = timer()
    vector = embedder.query(q["text"])
    embedding_ms = (timer() - started) * 1000

    def read(tx: Tx) -> tuple[search.Evaluation, dict[str, float], dict[str, int]]:
        ev = legal(tx, scope, q)
        text = text_scores(tx, scope, q["text"], q["entity"]) if q["mode"] == "hybrid" else {}
        return ev, text, held(tx, scope, q["text"])

    claim(memory, scope, embedder)
    ev, text, idents = memory.db.read_each(read, "search")
    ids = [h.memory_id for h in ev.ranked]
    sims = similarity(memory, scope, ev.ranked, vector, embedder) if ids else {}
    fused = fuse(q["mode"], text, sims, ids)
    for h in ev.ranked:
        h.score = text.get(h.memory_id, 0.0)
    ranked = sorted(ev.ranked, key=lambda h: (-h.authority, -idents.get(h.memory_id, 0),
                                              -fused[h.memory_id], -h.available_ms, h.tie))
    top = ranked[:q["limit"]]
    details = _details(memory, scope, ev, top)
    best = max(text.values(), default=0.0)
    hits = tuple(search._search_hit(h, position, best, ev.query.cutoff, details,
                                    semantic_score=sims.get(h.memory_id),
                                    fused_score=fused[h.memory_id],
                                    identifiers=idents.get(h.memory_id, 0))
                 for position, h in enumerate(top, 1))
    explain = SearchExplain(matched=ev.matched, removed=ev.counts(), kept=len(ranked),
                            returned=len(hits), below_limit=len(ranked) - len(hits),
                            ranking=RANKING[q["mode"]], embedding_ms=round(embedding_ms, 3))
    return SearchResult(status="found" if hits else "not_found", hits=hits, explain=explain,
                        query=ev.query)


def _details(memory: Any, scope: Scope, ev: search.Evaluation, top: list[search._Hit]
             ) -> dict[str, Any]:
    """The experiences and task states on the page, as search.hits reads them."""
    ids = [h.memory_id for h in top if h.type != "fact"]
    if not ids:
        return {}
    rows = memory.db.read(lambda tx: tx.run("search.memories", memory_ids=ids,
                                            known_at=ev.query.known_at, **_scope(scope)),
                          "search.memories")
    return governance.to_memories(rows, known_at=ev.query.known_at, cutoff=ev.query.cutoff)
