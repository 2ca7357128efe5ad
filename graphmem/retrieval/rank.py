"""Semantic and hybrid search: the hard filters first, then similarity over what is legal.

A search by meaning scores every memory of its scope in process (vectors.py: one matrix
product over the scope's vectors, kept coherent with the graph) and sends its best
candidates (in no order) to the text search's own statement (search.hits,
graphmem/search.py) in place of the full-text index's hits. Everything else is the same
code: every hard filter - scope, type, entity, task, known_at, erasure, cutoff, status,
evidence, and for fact keys the read rule itself (fact.read) - decides which candidates
are legal on their nodes in the graph, and only legal ones are ranked; nothing outside
them can come back, however similar. The ranking key is the text search's: authority
tier (no similarity lets a low-authority memory outrank a primary one), then the score,
then recency, then id.

**Exact, not approximate.** The candidates not sent all score at most the best of them
(``rest``), so none can rank above (the tenant's strongest authority, ``rest``): once
``limit`` legal hits rank strictly above that, the page is the one ranking every memory
of the scope would give (the text search's early termination, with the same check). If
not, the search sends eight times as many candidates, and finally all of them. Neo4j's
vector index is not used: an approximate index bounds nothing it skipped.

**The meaning score** is 2 x the number of the query's identifiers the memory holds
(tokens with a digit or inner punctuation, or all capitals: an error code, accession,
CVE, ticker or id, matched exactly through the full-text index - so a memory holding
one ranks above any that does not, whatever the embedding says) plus the fused score in
[0, 1]: ``semantic``, the cosine similarity of the query's vector with the memory's
stored one ((1 + cos) / 2, Neo4j's convention; a memory with several vectors takes its
best); ``hybrid``, ``TEXT_WEIGHT`` x the full-text score (the query's words with
``match="any"``) plus (1 - ``TEXT_WEIGHT``) x the similarity, each min-max-normalised
over the scope's memories (those about the entity, when one is asked for).
Reciprocal-rank fusion measured worse on LoCoMo (docs/PERFORMANCE.md), as the issue's
own measurements found.

**A search never writes.** It reads the scope's embedder record and refuses another
embedder; the vectors are made when a memory is written through a ``GraphmemStore`` with
an ``index``, or by ``graphmem embed`` (``Memory.embed``), an explicit step of its own.
A memory of the scope with no vector by the embedder yet makes the search refuse with an
InputError naming that step (``unembedded="refuse"``, the default), so a read-only
connection, or a search at a past ``known_at``, never writes and never silently misses a
memory; ``unembedded="last"`` ranks such memories with no semantic score (0 in
``semantic``, the lowest similarity in ``hybrid``), after the embedded ones of their
authority tier in ``semantic`` (LangGraph's ``InMemoryStore`` does this for items put
without an index). ``explain`` gives each hit's text score, semantic score, fused score
and identifier count; ``SearchQuery.mode`` records the mode with every context snapshot
built from it.
"""

from __future__ import annotations

import dataclasses
import re
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import facts, limits, search, values
from ..errors import InputError
from ..models import Scope, SearchExplain, SearchHit, SearchResult
from . import vectors
from .embedders import Embedder
from .store import check_space

TEXT_WEIGHT = 0.4
"""Hybrid's weight on the normalised text score (1 - it on similarity): see
docs/PERFORMANCE.md for the sweep on LoCoMo it was chosen by."""
RANKING = {
    "semantic": "authority tier, then the query's identifiers held (exact), then cosine "
                "similarity to the query, then recency, then id; over the legal candidates only",
    "hybrid": f"authority tier, then the query's identifiers held (exact), then "
              f"{TEXT_WEIGHT:g} x min-max(text score) + {1 - TEXT_WEIGHT:g} x min-max(similarity), "
              "then recency, then id; over the legal candidates only",
}


FIRST = 2
"""Candidates a search by meaning sends first, per unit of its limit (at least 20): a
page usually settles within them (the read rule removes some fact versions: a restated
figure's first version, ...). Each retry sends eight times as many."""


_WORD = re.compile(r"\w+(?:['.]\w+)*")
"""A word as the index's tokenizer (Unicode word breaks) cuts it: letters or digits joined
by an inner dot or apostrophe stay one word (``s.a``, ``it's``, ``1.5``)."""
_POSSESSIVE = re.compile(r"'s$")


def _identifiers(text: str) -> list[str]:
    """The query's identifier-like tokens that the index holds: one whose every word is a
    stop word once its possessive is dropped (``IT``, ``AND/OR``, ``IT'S``, as the english
    analyzer does) analyses to nothing, so no memory holds it; ``S.A.`` is one word, not
    two stop words, and a required phrase of the text's own query."""
    return sorted({t for t in search.tokens(text) if search._identifier(t) and any(
        _POSSESSIVE.sub("", w) not in search.STOP_WORDS for w in _WORD.findall(t.lower()))})


def _words(scope: Scope, text: str) -> str | None:
    """The query's words as a ``match="any"`` Lucene query (hybrid's text side); None
    when the text has nothing searchable (stop words only). A text of more words than a
    full-text query takes is refused as a text search refuses it, rather than searched
    with no text side at all."""
    if all(t.lower() in search.STOP_WORDS for t in search.tokens(text)):
        return None
    return search.lucene(scope, text, "any", None)


UNEMBEDDED = ("refuse", "last")


def check_unembedded(unembedded: Any) -> None:
    """A search's ``unembedded``: checked for a text search too, which does not use it,
    so that a misspelt value is refused wherever it is given rather than only by mode."""
    if unembedded not in UNEMBEDDED:
        raise InputError("unembedded", f"must be one of {', '.join(UNEMBEDDED)}; got {limits.shown(unembedded)}")


@dataclasses.dataclass
class _Lookup:
    """What a search by meaning reads from the full-text index (``retrieval.prepare``):
    hybrid's text scores, and how many of the query's identifiers each memory holds
    (exact phrases), by id."""

    text: dict[str, float]
    idents: dict[str, int]

    @staticmethod
    def queries(scope: Scope, q: dict[str, Any]) -> list[str]:
        """The Lucene queries: hybrid's words first (if any), then each identifier -
        unless hybrid's words already give the one identifier's holders (an identifier is
        a required clause of the words' query, so it matches exactly them)."""
        words = _words(scope, q["text"]) if q["mode"] == "hybrid" else None
        tokens = _identifiers(q["text"])
        if words and len(tokens) == 1:
            tokens = []
        return ([words] if words else []) + [search.lucene(scope, token, "all", None) for token in tokens]

    @classmethod
    def of(cls, scope: Scope, q: dict[str, Any], found: list[list[list[Any]]]) -> _Lookup:
        answers = [dict(zip(ids, scores, strict=True)) for ids, scores in found]
        text = answers.pop(0) if q["mode"] == "hybrid" and _words(scope, q["text"]) else {}
        if text and len(_identifiers(q["text"])) == 1:
            answers = [text]
        idents: dict[str, int] = {}
        for answer in answers:
            for memory_id in answer:
                idents[memory_id] = idents.get(memory_id, 0) + 1
        return cls(text, idents)


def _as_of(q: dict[str, Any], prepared: dict[str, Any]) -> dict[str, Any]:
    """The search's (cutoff, known_at), read as of the tenant's clock at the look that
    brought the copy up to date: a write committing after it is in neither the copy nor
    the filters' view, so the page is exact for the known_at it reports (at most the
    clock's time: nothing was recorded later yet). The cutoff defaults to the look's time,
    as a text search's to its own."""
    asked = q["known_at"] or prepared["now"].to_native()
    last = prepared["last"].to_native() if prepared["last"] is not None else None
    return {"known_at": min(asked, last) if last is not None else asked, "cutoff": q["cutoff"] or asked}


def _fused(mode: str, scores: vectors.Scores, found: _Lookup) -> np.ndarray:
    """The meaning score of each legal member (the module docstring), as a numpy array in
    the order of ``scores.legal``. The normalisations are over every member (the legal
    ones and those the filters removed), as the module docstring says; the full-text
    scores and identifiers are sparse (the index's matches), so they are added where they
    fall rather than spread over the scope."""
    meaning = scores.similarity[scores.legal].astype(np.float64)
    missing = np.isnan(meaning)
    if mode == "semantic":
        meaning[missing] = 0.0
    else:
        smin, smax = scores.span
        meaning[missing] = smin  # no vector: the lowest similarity (never NaN)
        if smax > smin:  # the formula's operations in its order: the same bits, so the same ties
            meaning -= smin
            meaning /= smax - smin
            meaning *= 1 - TEXT_WEIGHT
        else:
            meaning[:] = 0.0
        at, text = scores.members_in(found.text)
        if len(text):
            # a member the index did not match scores 0 (then tmin is 0, and so is its part)
            tmin = 0.0 if len(text) < np.count_nonzero(scores.member) else text.min()
            tmax = max(text.max(), 0.0)
            if tmax > tmin:
                _add(meaning, scores.legal, at, TEXT_WEIGHT * ((text - tmin) / (tmax - tmin)))
    at, idents = scores.members_in(found.idents)
    _add(meaning, scores.legal, at, 2.0 * idents)
    return meaning


def _add(meaning: np.ndarray, legal: np.ndarray, at: np.ndarray, values: np.ndarray) -> None:
    """``values`` added to the members ``at`` (scope indexes) that are legal."""
    if not len(at):
        return
    place = np.searchsorted(legal, at)
    hit = place < len(legal)
    hit[hit] = legal[place[hit]] == at[hit]
    meaning[place[hit]] += values[hit]


def run(memory: Any, scope: Scope, q: dict[str, Any], embedder: Embedder, *,
        unembedded: str = "refuse", timer: Callable[[], float] = time.perf_counter) -> SearchResult:
    """A semantic or hybrid search (the module docstring): reads only."""
    check_unembedded(unembedded)
    started = timer()
    vector = embedder.query(q["text"])
    embedding_ms = (timer() - started) * 1000
    copy = memory.vectors.scope(scope, embedder.name, embedder.dims)
    asked = vectors.since(copy)
    prepared = memory.db.read_each(lambda tx: tx.one(
        "retrieval.prepare", tenant=scope.tenant, scope=scope.id, name=embedder.name,
        lucene=_Lookup.queries(scope, q), probe=(scope.tenant, scope.id) not in embedder.checked, **asked),
        "search")
    check_space(prepared["space"], embedder)
    if prepared["space"]["probe"] is not None:  # checked once per scope and embedder
        embedder.checked.add((scope.tenant, scope.id))
    q = {**q, **_as_of(q, prepared)}
    # only the memories of the types asked for, recorded by known_at and public by the
    # cutoff are sent: search.hits' first filters would remove the others
    wants_facts, wants_others = "fact" in q["types"], any(t != "fact" for t in q["types"])
    scores = vectors.scores(memory.db, scope, embedder.name, copy, asked, prepared, vector,
                            facts.entity_uid(scope, q["entity"]) if q["entity"] else None,
                            values.micros(q["known_at"]), values.micros(q["cutoff"]),
                            None if wants_facts and wants_others else wants_facts)
    if scores.unready and unembedded == "refuse":
        raise InputError("embedder", f"{scores.unready} memories of scope {scope.id} have no vector "
                                     f"by {embedder.name} yet: embed them first with `graphmem embed "
                                     "--embedder ...` (Memory.embed); a search never writes")
    found = _Lookup.of(scope, q, prepared["found"])
    members, meaning = scores.legal, _fused(q["mode"], scores, found)
    ev = _evaluate(memory, scope, q, scores, members, meaning)
    ev.matched += sum(scores.removed.values())  # every member is matched by meaning; these were never sent
    ev.reasons.update(scores.removed)
    top = ev.ranked[:q["limit"]]
    best = max(found.text.values(), default=0.0)
    hits = tuple(_hit(h, position, best, ev, scores, found) for position, h in enumerate(top, 1))
    explain = SearchExplain(matched=ev.matched, removed=ev.counts(), kept=len(ev.ranked),
                            returned=len(hits), below_limit=len(ev.ranked) - len(hits),
                            unevaluated=ev.unevaluated, ranking=RANKING[q["mode"]],
                            embedding_ms=round(embedding_ms, 3))
    return SearchResult(status="found" if hits else "not_found", hits=hits, explain=explain,
                        query=ev.query)


def _hit(h: search._Hit, position: int, best: float, ev: search.Evaluation, scores: vectors.Scores,
         found: _Lookup) -> SearchHit:
    """A ranked hit as returned: its text and semantic scores are those of the version it
    shows first, its fused score and identifiers those of the memory it ranks by - a fact
    key's best kept version (``h.by``), which a conflict may show after another, and
    whose identifiers are part of the key's score (the fused score is what is left)."""
    idents = found.idents.get(h.by or h.memory_id, 0)
    return search._search_hit(dataclasses.replace(h, score=found.text.get(h.memory_id, 0.0)), position, best,
                              ev.query.cutoff, ev.details, semantic_score=scores.of(h.memory_id),
                              fused_score=h.score - 2 * idents, identifiers=idents)


def _best(meaning: np.ndarray, k: int) -> tuple[np.ndarray, float]:
    """The indexes of the ``k`` highest scores (in no order) and the next score, for
    ``k`` below their number. ``argpartition`` over a scope's 100,000 scores takes 1-2 ms;
    a threshold from a strided sample of about 1,000 of them leaves a few hundred to
    partition. The answer is the same: when more than ``k`` scores reach the threshold,
    the ``k + 1`` highest all do (else every score is partitioned). Scores mostly tied (a
    zero query vector: 0.5 for all) leave nearly all of them above it: still the same
    answer, a little slower than partitioning them all."""
    sample = np.sort(meaning[::max(1, len(meaning) // 1024)])
    threshold = sample[-1 - min(len(sample) - 1, 4 * (k + 1) * len(sample) // len(meaning) + 1)]
    above = np.flatnonzero(meaning >= threshold)
    if len(above) <= k:
        above = np.arange(len(meaning))
    order = np.argpartition(-meaning[above], k)
    return above[order[:k]], float(meaning[above[order[k]]])


def _evaluate(memory: Any, scope: Scope, q: dict[str, Any], scores: vectors.Scores, members: np.ndarray,
              meaning: np.ndarray) -> search.Evaluation:
    """The search with its best ``FIRST`` x limit candidates, then eight times as many
    until the page is settled (the module docstring), finally every member."""
    sent = max(20, FIRST * q["limit"])
    while True:
        if sent >= len(members):
            order, rest = np.argsort(-meaning, kind="stable"), None
        else:
            order, rest = _best(meaning, sent)
        candidates = [[scores.ids[members[i]], bool(scores.fact[members[i]]), float(meaning[i])]
                      for i in order]
        bounded = {**q, "meaning": {"candidates": candidates, "rest": rest,
                                    "others": len(members) - len(candidates)}}
        ev = memory.db.read_each(lambda tx, b=bounded: search.evaluate_candidates(tx, scope, b), "search")
        if ev is not None:
            return ev
        sent *= 8
