"""Semantic and hybrid search: the hard filters first, then similarity over what is legal.

A search by meaning is the text search's own statement (search.hits, graphmem/search.py)
with two changes: its Lucene query is the scope alone, so every memory of the scope is a
candidate, and each candidate's score is its meaning score (``retrieval.rescore``)
instead of a text score. Everything else is the same code: every hard filter - scope,
type, entity, task, known_at, erasure, cutoff, status, evidence, and for fact keys the
read rule itself (fact.read) - decides which candidates are legal, and only legal ones
are ranked; nothing outside them can come back, however similar. The ranking key is the
text search's: authority tier (no similarity lets a low-authority memory outrank a
primary one), then the score, then recency, then id; and its early termination (only
the best-scored candidates are run through the read rule, until ``limit`` legal hits
rank above anything left) is exact for this key too, so the page equals exact ranking
over the whole legal set.

**The meaning score** is 2 x the number of the query's identifiers the memory holds
(tokens with a digit or inner punctuation, or all capitals: an error code, accession,
CVE, ticker or id, matched exactly through the full-text index - so a memory holding
one ranks above any that does not, whatever the embedding says) plus the fused score in
[0, 1]: ``semantic``, the cosine similarity of the query's vector with the memory's
stored one (Neo4j's ``vector.similarity.cosine``, (1 + cos) / 2, exact, over every
candidate); ``hybrid``, ``TEXT_WEIGHT`` x the full-text score (the query's words with
``match="any"``) plus (1 - ``TEXT_WEIGHT``) x the similarity, each min-max-normalised
over the scope's memories. Reciprocal-rank fusion measured worse on LoCoMo
(docs/PERFORMANCE.md), as the issue's own measurements found.

**A search never writes.** It reads the scope's embedder record and refuses another
embedder; the vectors are made when a memory is written through a ``GraphmemStore`` with
an ``index``, or by ``graphmem embed`` (``Memory.embed``), an explicit step of its own.
A memory of the scope with no vector by the embedder yet makes the search refuse with an
InputError naming that step (``unembedded="refuse"``, the default), so a read-only
connection, or a search at a past ``known_at``, never writes and never silently misses a
memory; ``unembedded="last"`` ranks such memories after the embedded ones of their
authority tier instead, with no semantic score (LangGraph's ``InMemoryStore`` does this for items put without an index).
``explain`` gives each hit's text score, semantic score, fused score and identifier
count; ``SearchQuery.mode`` records the mode with every context snapshot built from it.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from typing import Any

from .. import search
from ..db import Tx
from ..errors import InputError
from ..models import Scope, SearchExplain, SearchResult
from .embedders import Embedder
from .store import check_space

TEXT_WEIGHT = 0.7
"""Hybrid's weight on the normalised text score (1 - it on similarity): see
docs/PERFORMANCE.md for the sweep on LoCoMo it was chosen by."""
RANKING = {
    "semantic": "authority tier, then the query's identifiers held (exact), then cosine "
                "similarity to the query, then recency, then id; over the legal candidates only",
    "hybrid": f"authority tier, then the query's identifiers held (exact), then "
              f"{TEXT_WEIGHT:g} x min-max(text score) + {1 - TEXT_WEIGHT:g} x min-max(similarity), "
              "then recency, then id; over the legal candidates only",
}


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


def similarity(memory: Any, scope: Scope, hits: list[search._Hit], vector: list[float],
               embedder: Embedder) -> dict[str, float | None]:
    """The similarity of each of these hits to the query (for explain)."""
    rows = memory.db.read_all(
        "retrieval.similarity", facts=[h.memory_id for h in hits if h.type == "fact"],
        memories=[h.memory_id for h in hits if h.type != "fact"], vector=vector, zero=not any(vector),
        name=embedder.name, dims=embedder.dims, **_scope(scope))
    return {r["id"]: r["similarity"] for r in rows}


UNEMBEDDED = ("refuse", "last")


def run(memory: Any, scope: Scope, q: dict[str, Any], embedder: Embedder, *,
        unembedded: str = "refuse", timer: Callable[[], float] = time.perf_counter) -> SearchResult:
    """A semantic or hybrid search (the module docstring): reads only."""
    if unembedded not in UNEMBEDDED:
        raise InputError("unembedded", f"must be one of {', '.join(UNEMBEDDED)}; got {unembedded!r}")
    started = timer()
    vector = embedder.query(q["text"])
    embedding_ms = (timer() - started) * 1000
    check_space(memory.db.read_one("retrieval.space", **_scope(scope)), embedder)

    def scores(tx: Tx) -> tuple[dict[str, float], dict[str, int]]:
        text = text_scores(tx, scope, q["text"], q["entity"]) if q["mode"] == "hybrid" else {}
        return text, held(tx, scope, q["text"])

    text, idents = memory.db.read_each(scores, "search")
    meaning = {"name": embedder.name, "dims": embedder.dims, "vector": vector, "zero": not any(vector),
               "mode": q["mode"], "w": TEXT_WEIGHT, "text": text, "idents": idents}
    ev = memory.db.read_each(lambda tx: search.evaluate(tx, scope, {**q, "meaning": meaning}), "search")
    if ev.unready and unembedded == "refuse":
        raise InputError("embedder", f"{len(ev.unready)} memories of scope {scope.id} have no vector "
                                     f"by {embedder.name} yet: embed them first with `graphmem embed "
                                     "--embedder ...` (Memory.embed); a search never writes")
    top = ev.ranked[:q["limit"]]
    sims = similarity(memory, scope, top, vector, embedder) if top else {}
    best = max(text.values(), default=0.0)
    hits = tuple(search._search_hit(dataclasses.replace(h, score=text.get(h.memory_id, 0.0)), position, best,
                                    ev.query.cutoff, ev.details, semantic_score=sims.get(h.memory_id),
                                    fused_score=h.score - 2 * idents.get(h.memory_id, 0),
                                    identifiers=idents.get(h.memory_id, 0))
                 for position, h in enumerate(top, 1))
    explain = SearchExplain(matched=ev.matched, removed=ev.counts(), kept=len(ev.ranked),
                            returned=len(hits), below_limit=len(ev.ranked) - len(hits),
                            unevaluated=ev.unevaluated, ranking=RANKING[q["mode"]],
                            embedding_ms=round(embedding_ms, 3))
    return SearchResult(status="found" if hits else "not_found", hits=hits, explain=explain,
                        query=ev.query)
