"""Search: hard filters first, then ranking, then the limit (the essay's section 5).

One read, three steps, nothing ranked or cut before every filter ran:

1. ``search.hits`` - the full-text index (``graphmem_search_text``) inside the caller's
   scope, then every filter that is a property of the hit: type, entity, task, known_at,
   erasure, cutoff, and for experiences and task states their status and evidence.
2. ``fact.read`` - the one read rule, run on the keys of the fact versions still
   kept, at the search's (cutoff, known_at) with its evidence requirement: a fact
   hit is what ``as_of`` would answer for that key, and a matched version that the
   rule does not keep (superseded, outranked, retracted, ...) is removed with that
   reason. The rule is not re-implemented here.
3. rank what is left, and only then apply ``limit``.

Step 2 costs one read-rule evaluation per fact key, so it runs in batches, best
candidates first: the keys that would fill the page if the rule kept them all and half
as many again, then twice the limit, doubling. Before the rule runs, each key's rank has
a bound - its strongest source's authority, then the score and availability of its best
matched version, then its uid - which the read rule's answer can only equal or fall
below. Once ``limit`` hits rank strictly above the best bound left, the remaining keys
cannot reach the result whatever their status and are not evaluated
(``explain.unevaluated`` counts their versions; ``explain.removed`` then covers the
evaluated ones). This is checked before every batch, the first included (experiences and
task states may settle the limit on their own), and a batch holds only keys whose bound
is above the limit-th rank so far. Nothing filtered ever takes a place in the result,
and no memory that passes the filters is displaced.
``trace`` evaluates exhaustively.

**Early termination.** The full-text index matches hundreds of memories for a broad
query (a ticker), by text score. No memory of a tenant can rank above the tenant's
strongest source (its authority is read from the end of an index), and none without a
source (a task state) or not public by the cutoff ranks above one that has one; so a
hit ranks no better than (that authority or none, its score, its availability, its id -
a fact version's is its key's uid). A fact key ranks by one of its matched versions, so
it ranks no better than its best one. ``search.hits`` orders the hits by those bounds
and first evaluates only the hits before the 1.5 x ``limit``-th experience or fact
public by the cutoff. Once the read rule has run, if ``limit`` hits rank strictly above
the bound of the first hit left (the frontier), nothing left can reach the page, and it
stays unevaluated (``explain.unevaluated`` counts it; ``removed`` and ``kept`` count the
evaluated hits). If not, the search asks again and evaluates every hit. Either way the
page is the one an exhaustive evaluation gives.

**Round trips.** The first batch runs inside ``search.hits`` (which includes
``fact.read``'s own text, see graphmem/queries.py), as does the loading of the
experiences and task states that can reach the page (``search.memories``, included):
a search is one statement unless the read rule removes keys from the first batch. Each
statement is its own auto-commit read (``Database.read_each``): one round trip, where
begin and commit would add two.
``search.hits`` sorts the keys by bound and returns only the first few times the
limit (with their count); the keys after them bound no better than the last one
returned, so they are asked for - all of them, once - only if that one could still
rank.

**Query text.** Words are stemmed (english analyzer), so "declines" meets "declined".
A token with a digit or inner punctuation (``E-4012``, ``0001564590-16-013195``,
``ERR_CONN_RESET``) or an all-capitals token (a ticker, ``PYPL``) is identifier-like: it
is searched as an exact phrase and is always required, so a query for a code the
memory never saw finds nothing rather than a near match. ``match="all"`` (default)
requires every word too: a question about something never stored comes back
``not_found``. ``match="any"`` lets plain words be optional (for a paraphrase that
shares only some words with the memory); identifier-like tokens stay required.
English stop words are ignored; a text of stop words only is refused.

**Ranking** (documented in every result's ``explain.ranking`` and each hit's ``rank``):
authority tier first (user_correction > primary > derived > inference > none - a task
state has no evidence, so no authority), then the full-text score (shown normalised to
the best-scoring match), then recency (``available_by`` closest to the cutoff), then
an id that only makes the order total: a fact key's uid, another memory's own id. A
fact key ranks by its best matched version that the read rule keeps (its score, then
its availability).
Authority is a tier, not a weight: no amount of keyword stuffing lets a low-authority
memory outrank a primary one (the poisoning defence), and within a tier the text decides.
"""

from __future__ import annotations

import bisect
import datetime as dt
import functools
import re
import reprlib
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from . import facts, governance, indexing, limits
from .db import Tx
from .errors import InputError
from .models import (
    MEMORY_TYPES,
    Answer,
    Authority,
    Experience,
    MemoryType,
    Rank,
    Require,
    Scope,
    SearchExplain,
    SearchHit,
    SearchQuery,
    SearchResult,
    TaskState,
    authority_of,
    check_require,
)
from .values import epoch, from_micros

MODES = ("text", "semantic", "hybrid")
# The order the filters run in (search.hits, then fact.read), for explain.
FILTERS = ("type", "entity", "task", "known_at", "erased", "candidate", "cutoff",
           "invalidated", "retracted", "evidence", "outranked", "superseded")
STATUS = frozenset({"erased", "candidate", "invalidated", "retracted", "outranked",
                    "superseded"})
RANKING = ("authority tier (user_correction > primary > derived > inference > none), then "
           "full-text score, then recency (available_by closest to the cutoff), then id (a fact "
           "key's uid, another memory's own id)")
# Lucene's English stop words (the english analyzer drops them).
STOP_WORDS = frozenset((
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is",
    "it", "no", "not", "of", "on", "or", "such", "that", "the", "their", "then", "there",
    "these", "they", "this", "to", "was", "will", "with"))
_IDENTIFIER = re.compile(r"\d|\w[-_.:/]\w")
_EDGES = ".,;:!?()[]{}<>\"'`"


def filter_name(removed_by: str) -> str:
    """The filter a removal reason belongs to (DESIGN.md's list: scope, cutoff, known_at,
    status, evidence; plus the caller's own selectors type, entity, task)."""
    return f"status:{removed_by}" if removed_by in STATUS else removed_by


def _identifier(token: str) -> bool:
    return bool(_IDENTIFIER.search(token)) or (len(token) > 1 and token.isupper())


def _phrase(token: str) -> str:
    """A token as a Lucene phrase: inside quotes only backslash and quote are special, so
    no input can change the query's structure (or reach another scope's documents)."""
    return '"' + token.replace("\\", "\\\\").replace('"', '\\"') + '"'


def tokens(text: str) -> list[str]:
    """A text's words as a query takes them: split on whitespace, edge punctuation off,
    words without a letter or digit dropped."""
    return [t for t in (raw.strip(_EDGES) for raw in text.split()) if any(c.isalnum() for c in t)]


def words(*texts: str | None) -> str:
    """Texts as one lower-case string of whole words with a space on each side, so that
    ``" " + name + " "`` is found in it only as a sequence of whole words."""
    return " " + " ".join(t.lower() for text in texts if text for t in tokens(text)) + " "


def lucene(scope: Scope, text: str | None, match: str, entity: str | None) -> str:
    """The full-text query: the scope token, the text's terms (at most
    ``limits.SEARCH_TERMS``, each one clause), the entity id if given."""
    parts = [f"+search_scope:{_phrase(indexing.scope_token(scope))}^0"]
    if text is not None:
        clauses = []
        for token in tokens(text):
            if token.lower() in STOP_WORDS:
                continue
            required = match == "all" or _identifier(token)
            clauses.append(("+" if required else "") + _phrase(token))
        if not clauses:
            raise InputError("text", "nothing searchable: only stop words or punctuation")
        if len(clauses) > limits.SEARCH_TERMS:
            raise InputError("text", f"{len(clauses):,} searchable words; at most "
                                     f"{limits.SEARCH_TERMS} (each is a clause of the query)")
        parts.append("+search_text:(" + " ".join(clauses) + ")")
    if entity is not None:  # narrows the index lookup; the entity filter still decides
        parts.append(f"+search_text:{_phrase(entity)}")
    return " ".join(parts)


def query_lucene(scope: Scope, text: str | None, match: str, entity: str | None,
                 mode: str = "text") -> str:
    """A search's Lucene query, recorded with it: the text's for a text search; for a
    semantic or hybrid one, the scope alone (every memory of the scope is a candidate
    and the filters decide which are legal: graphmem/retrieval/rank.py)."""
    return lucene(scope, text if mode == "text" else None, match, entity)


def make_query(scope: Scope, *, text: str | None, match: str, types: Any, entity: str | None,
               task_id: str | None, cutoff: dt.datetime | None, known_at: dt.datetime | None,
               require: Require | None, limit: int, mode: str = "text",
               embedder: str | None = None) -> dict[str, Any]:
    """Check a search's arguments before any query; the fields of its SearchQuery."""
    limits.check_text("text", text, limits.SEARCH_TEXT_BYTES, optional=True)
    if mode not in MODES:
        raise InputError("mode", f"must be one of {', '.join(MODES)}; got {limits.shown(mode)}")
    if mode != "text" and (text is None or embedder is None):
        raise InputError("mode", f"{mode} search needs a text and an embedder "
                                 "(Memory(embedder=...) or search(embedder=...))")
    if match not in ("all", "any"):
        raise InputError("match", "must be 'all' or 'any'")
    if types is not None and not isinstance(types, (str, list, tuple, set, frozenset)):
        raise InputError("types", f"a memory type or a list of them is required, got {type(types).__name__}")
    types = tuple(MEMORY_TYPES if types is None else ([types] if isinstance(types, str)
                                                      else types))
    unknown = [t for t in types if t not in MEMORY_TYPES]
    if unknown or not types:
        raise InputError("types", f"must be some of {', '.join(MEMORY_TYPES)}; got {reprlib.repr(unknown)}")
    # each once: a choice among three, however long the list it came in (it is sent to the
    # server and recorded with a context's snapshot)
    types = tuple(dict.fromkeys(types))
    limits.check_int("limit", limit, 1, limits.SEARCH_LIMIT)
    limits.check_id("entity", entity, optional=True)
    limits.check_id("task_id", task_id, optional=True)
    check_require(require)
    return {"text": text, "match": match, "lucene": query_lucene(scope, text, match, entity, mode),
            "types": types, "entity": entity, "task_id": task_id, "cutoff": cutoff,
            "known_at": known_at, "require": require, "limit": limit, "mode": mode,
            "embedder": embedder if mode != "text" else None}


@dataclass
class _Hit:
    """A kept memory and what it ranks by. For a fact key, ``score`` and ``available_ms``
    are those of its best matched version the read rule kept (best score, then latest
    availability), so that it has a bound known before the rule runs: its best matched
    version; ``tie`` is the key's uid (a memory's: its id)."""

    type: MemoryType
    memory_id: str
    score: float
    authority: int
    available_ms: int  # available_by as epoch milliseconds
    tie: str
    # a fact key's fact.read row, with the search's cutoff and evidence requirement
    read: tuple[dict[str, Any], dt.datetime, Require | None] | None = None
    # a fact key's matched version it ranks by (its best kept one), which need not be
    # the version shown first (a conflict shows every candidate): its scores explain the rank
    by: str | None = None

    def key(self) -> tuple[Any, ...]:
        return _key(self.authority, self.score, self.available_ms, self.tie)

    @functools.cached_property
    def answer(self) -> Answer | None:
        """A fact key's Answer, built only for the hits that are shown or traced."""
        return facts._answer(*self.read) if self.read else None


def _key(authority: int, score: float, available_ms: int, tie: str) -> tuple[Any, ...]:
    """The rank order (smaller first): authority, text score, recency, id."""
    return (-authority, -score, -available_ms, tie)


@dataclass
class Evaluation:
    """Every matched memory's fate: kept (ranked), removed by a filter, or - in a bounded
    evaluation - left unevaluated because it could not rank within the limit."""

    query: SearchQuery
    matched: int
    best: float = 0.0
    reasons: Counter[str] = field(default_factory=Counter)
    removed: dict[str, str] = field(default_factory=dict)  # ids: always for fact.read's
    ranked: list[_Hit] = field(default_factory=list)
    unevaluated: int = 0
    # experiences and task states that can reach the page, by id (none for a trace)
    details: dict[str, Experience | TaskState] = field(default_factory=dict)

    def counts(self) -> dict[str, int]:
        return {f: self.reasons[f] for f in FILTERS if self.reasons[f]}


# Fact keys search.hits returns at first, per unit of limit: the read rule runs on at
# most 1.5 x ``limit`` keys (in search.hits itself), then on twice the limit, so four
# times the limit covers the first two batches; a search that needs more asks again, for
# all of them.
_KEYS_PER_LIMIT = 4

# A matched fact key: the upper bound of its authority, and its matched versions' text
# score and availability (epoch milliseconds) by version id.
Key = tuple[int, dict[str, tuple[float, int]]]


def evaluate(tx: Tx, scope: Scope, q: dict[str, Any], exhaustive: bool = False
             ) -> Evaluation:
    """Steps 1 and 2 of the module docstring, and the ranking of everything kept.

    ``exhaustive`` (trace): every matched hit and fact key is evaluated and every removal
    is reported by id. Otherwise the hits the index ranks first are evaluated alone, and
    all of them only if those do not settle the page (see *Early termination*).
    """
    if not exhaustive:
        ev = _evaluate(tx, scope, q, lazy=True)
        if ev is not None:
            return ev
    ev = _evaluate(tx, scope, q, lazy=False, exhaustive=exhaustive)
    assert ev is not None  # only a lazy evaluation can leave the page unsettled
    return ev


def memories_at(tx: Tx, scope: Scope, memory_ids: list[str], cutoff: dt.datetime, known_at: dt.datetime
                ) -> tuple[dict[str, Experience | TaskState], dict[str, str]]:
    """Experiences and task states named by id, judged as a search at (cutoff, known_at)
    judges them - the same statement and filters, the ids standing in for the index's
    hits (as a search by meaning's candidates do): the live ones, with their evidence as
    of then, and for each other its filter (erased, cutoff, retracted, superseded, ...).
    An id of no experience or task state of the scope is in neither."""
    q = make_query(scope, text=None, match="all", types=("experience", "task_state"), entity=None,
                   task_id=None, cutoff=cutoff, known_at=known_at, require=None,
                   limit=max(1, min(len(memory_ids), limits.SEARCH_LIMIT)))
    q["meaning"] = {"candidates": [[m, False, 0.0] for m in memory_ids], "rest": None, "others": 0}
    ev = evaluate(tx, scope, q, exhaustive=True)
    live = governance.load_memories(tx, scope, [h.memory_id for h in ev.ranked],
                                    known_at=ev.query.known_at, cutoff=ev.query.cutoff)
    return live, {m: filter_name(why) for m, why in ev.removed.items()}


def evaluate_candidates(tx: Tx, scope: Scope, q: dict[str, Any]) -> Evaluation | None:
    """A search by meaning's evaluation of the candidates it sent (``q["meaning"]``,
    graphmem/retrieval/rank.py): every one is evaluated, and None when those it did not
    send could still rank (it then sends more)."""
    return _evaluate(tx, scope, q, lazy=False)


def _evaluate(tx: Tx, scope: Scope, q: dict[str, Any], *, lazy: bool,
              exhaustive: bool = False) -> Evaluation | None:
    """One evaluation; None when ``lazy`` left hits unevaluated that might still rank."""
    req = facts.require_params(q["require"])
    entity_uid = facts.entity_uid(scope, q["entity"]) if q["entity"] else None
    limit = q["limit"]

    def hits(keys: int | None, read: bool) -> dict[str, Any]:
        row = tx.one("search.hits", lucene=q["lucene"], types=list(q["types"]),
                     entity_uid=entity_uid, task_id=q["task_id"], cutoff=epoch(q["cutoff"]),
                     known_at=epoch(q["known_at"]), limit=None if exhaustive else limit, keys=keys,
                     read=read, lazy=lazy, meaning=q.get("meaning"), **req, **facts.scope_params(scope))
        assert row is not None  # the statement aggregates: always one row
        return row

    row = hits(None if exhaustive else _KEYS_PER_LIMIT * limit, True)
    known_at, cutoff = from_micros(row["known_at"]), from_micros(row["cutoff"])
    query = SearchQuery(**{**{f: q[f] for f in SearchQuery.model_fields if f in q},
                           "known_at": known_at, "cutoff": cutoff})
    ev = Evaluation(query, row["matched"], row["best"] or 0.0,
                    Counter(r for r in row["reasons"] if r), dict(row["removed"]),
                    [_Hit(kind, memory_id, score, rank, available_ms, memory_id)
                     for memory_id, kind, score, available_ms, rank in row["memories"]],
                    unevaluated=row["skipped"] + row["fact_versions"],
                    details=governance.to_memories(row["details"], known_at=known_at,
                                                   cutoff=cutoff))
    keys = _keys(row["keys"])
    # the first batch, read by search.hits itself
    _read(ev, {k: keys[k][1] for k in row["read"]}, row["answers"], cutoff, q["require"])
    pending = sorted(set(keys) - set(row["read"]), key=lambda k: _bound(k, keys[k]))
    left = row["key_count"] - len(keys)  # keys search.hits did not return: none of
    last = _bound(*next(reversed(keys.items()))) if keys else None  # them has a better bound
    size = 2 * limit
    while pending or left:
        if not pending:  # every key returned is read
            if len(ev.ranked) >= limit and not last < ev.ranked[limit - 1].key():
                break
            if row["skipped"]:
                return None  # rather than every key of some hits, every hit
            more = _keys(hits(None, False)["keys"])  # the next may still rank: all of them
            pending = sorted(set(more) - set(keys), key=lambda k: _bound(k, more[k]))
            keys, left = more, 0
            continue
        # only keys whose bound is above the limit-th rank so far can still enter (the
        # other memories may settle the limit before any fact key is read)
        reach = len(pending) if len(ev.ranked) < limit else bisect.bisect_left(
            pending, ev.ranked[limit - 1].key(), key=lambda k: _bound(k, keys[k]))
        if not reach:
            break
        batch, pending = pending[:min(size, reach)], pending[min(size, reach):]
        size *= 2
        matched = {k: keys[k][1] for k in batch}
        _read(ev, matched, read_keys(tx, scope, batch, cutoff, known_at, req, matched), cutoff,
              q["require"])
    if row["skipped"] and not _settled(ev, limit, row["frontier"]):
        return None
    return ev


def _settled(ev: Evaluation, limit: int, frontier: list[Any]) -> bool:
    """Whether ``limit`` hits rank strictly above every hit left unevaluated: at best, the
    ``frontier`` (search.hits: an authority bound, a score, an availability, an id)."""
    return len(ev.ranked) >= limit and ev.ranked[limit - 1].key() < _key(*frontier)


def _keys(rows: list[list[Any]]) -> dict[str, Key]:
    """search.hits' fact keys (uid, authority bound, matched versions) by uid, in order."""
    return {uid: (rank, {vid: (score, at) for vid, score, at in matched})
            for uid, rank, matched in rows}


def _bound(uid: str, key: Key) -> tuple[Any, ...]:
    """The best rank key a fact key could reach, whatever the read rule keeps: its
    strongest source, then its best matched version's score and availability, its uid."""
    rank, matched = key
    return _key(rank, *max(matched.values()), uid)


def read_keys(tx: Tx, scope: Scope, uids: list[str], cutoff: dt.datetime,
              known_at: dt.datetime, req: dict[str, Any],
              matched: dict[str, Iterable[str]] | None = None) -> list[dict[str, Any]]:
    """The read rule on these keys (by uid) at a search's (cutoff, known_at): one
    ``fact.read`` row per key, ``i`` its index in ``uids`` (as search.hits reads them),
    with the filter that removed each of its ``matched`` versions."""
    times = facts.Times()
    reads = [{"i": i, "uid": uid, "entity": None, "attribute": None, "unit": None,
              "definition": None, "period": None, "valid_from": None, "valid_to": None,
              "cutoff": times.ref(cutoff), "known_at": times.ref(known_at), "idem": None,
              "source": None, "versions": list((matched or {}).get(uid, ()))}
             for i, uid in enumerate(uids)]
    return tx.run("fact.read", reads=reads, times=times.values, brief=False, **req,
                  **facts.scope_params(scope))


def _read(ev: Evaluation, keys: dict[str, dict[str, tuple[float, int]]],
          answers: list[dict[str, Any]], cutoff: dt.datetime, require: Require | None) -> None:
    """Rank the keys the read rule answered: a key is a hit if a matched version survives;
    each matched version it removed is counted under its reason."""
    order = list(keys)
    for row in answers:
        uid = order[row["i"]]
        matched = keys[uid]
        stage = {x["version_id"]: x["by"] for x in row["removed"]}
        kept = [vid for vid in matched if stage.get(vid) is None]
        for vid in matched:
            if stage.get(vid):
                ev.removed[vid] = stage[vid]
                ev.reasons[stage[vid]] += 1
        ev.unevaluated -= len(matched)
        if not kept:
            continue
        shown = facts.shown(row)  # what the Answer as_of builds from this row shows
        by = max(kept, key=lambda v: matched[v])
        score, available_ms = matched[by]
        ev.ranked.append(_Hit(
            "fact", shown[0]["f"]["version_id"], score, max(c["rank"] or 0 for c in shown),
            available_ms, uid, (row, cutoff, require), by))
    ev.ranked.sort(key=_Hit.key)


def search(tx: Tx, scope: Scope, q: dict[str, Any]) -> SearchResult:
    """A search: every hard filter, then ranking, then the limit, then details of the top."""
    ev = evaluate(tx, scope, q)
    top = ev.ranked[: q["limit"]]
    hits = tuple(_search_hit(h, position, ev.best, ev.query.cutoff, ev.details)
                 for position, h in enumerate(top, 1))
    explain = SearchExplain(matched=ev.matched, removed=ev.counts(), kept=len(ev.ranked),
                            returned=len(hits), below_limit=len(ev.ranked) - len(hits),
                            unevaluated=ev.unevaluated, ranking=RANKING)
    return SearchResult(status="found" if hits else "not_found", hits=hits, explain=explain,
                        query=ev.query)


def _search_hit(h: _Hit, position: int, best: float, cutoff: dt.datetime,
                details: dict[str, Any], **meaning: Any) -> SearchHit:
    """A ranked hit as returned; ``meaning``: a semantic or hybrid search's Rank fields
    (semantic_score, fused_score, identifiers; see graphmem/retrieval/rank.py)."""
    authority: Authority | None = authority_of(h.authority) if h.authority else None
    norm = h.score / best if best else 0.0
    days = (cutoff.timestamp() * 1000 - h.available_ms) / 86_400_000
    why = (f"#{position}: authority {authority.value if authority else 'none'} (tier "
           f"{h.authority}), "
           + (f"{meaning['identifiers']} of the query's identifiers, " if meaning.get("identifiers") else "")
           + (f"fused score {meaning['fused_score']:.3f} (semantic {meaning['semantic_score'] or 0:.3f}), "
              if meaning else "")
           + f"text score {h.score:.3f} = {norm:.2f} of the best match, available "
           f"{days:.1f} days before the cutoff")
    rank = Rank(position=position, authority=authority, text_score=h.score, text_norm=norm,
                recency_days=days, why=why, **meaning)
    if h.type == "fact":
        assert h.answer is not None
        shown = h.answer.shown
        return SearchHit(type="fact", memory_id=h.memory_id,
                         memory_ids=tuple(v.version_id for v in shown),
                         status=h.answer.status, answer=h.answer, rank=rank)
    item = details[h.memory_id]
    return SearchHit(type=h.type, memory_id=h.memory_id, memory_ids=(h.memory_id,),
                     status="active", rank=rank,
                     experience=item if h.type == "experience" else None,
                     task_state=item if h.type == "task_state" else None)
