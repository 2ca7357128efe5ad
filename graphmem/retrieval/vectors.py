"""A scope's vectors in process: every memory's similarity to a query in one matrix product.

A search by meaning ranks every memory of its scope by similarity, so scoring them in
Cypher reads every vector of the scope from the store for every search (1.3 s at 10,000
memories, docs/PERFORMANCE.md). Instead each process keeps, per (store, tenant, scope,
embedder), the scope's memories with their vectors as one numpy matrix of unit rows, and
ranks them with one product (a few milliseconds at 100,000). The graph stays the judge
of what is legal: these scores only order the candidates that ``search.hits`` then runs
every hard filter on (graphmem/retrieval/rank.py).

**Kept coherent with the graph, checked before every search** (``retrieval.prepare``, one
auto-commit read that also runs the search's full-text lookups). Every write of a tenant
ticks the tenant's clock (``admin.tick``), so an unchanged clock means an unchanged
scope; otherwise the statement returns the scope's memories created since the last look
(``recorded_at``) and those whose vector changed since (``embedded_at``: every statement
that sets or clears a vector - an embedding, a search text rebuilt after a rename or an
erasure, the erasure itself - stamps it with its transaction's clock time), both
through range indexes (schema.030-033). The clock is read before the memories, so a
write committing in between is read again next time, never lost; and the search then
reads the graph as known at that clock time (rank.py), so the copy and the filters see
the same memories. The store's id guards against a database replaced under a running
process (``bootstrap --replace``): another id, and the scope is read whole again.

**Bounded**: at most ``CACHE_BYTES`` of vectors per ``Memory``; the scopes searched least
recently are dropped first (the one being searched is always kept). A scope is read whole
on its first search by meaning in a process: 2.3-2.8 s at 100,000 memories of 64
dimensions (docs/PERFORMANCE.md).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..models import Scope

CACHE_BYTES = 1 << 30
"""The vectors (and their per-memory arrays) one Memory keeps in process across scopes
(float32: 100,000 memories of 384 dimensions take 154 MB); ids and entity lists come on
top (about 10 MB per 100,000 memories)."""

CHUNK = 10_000
"""Memories per record when a scope is read whole (a record of 10,000 vectors of 384
dimensions is about 35 MB)."""

EARLIEST = -(1 << 62)
"""The availability of a memory that records none: public at any cutoff."""

UNREADY, VECTORS, NO_VECTOR, GONE = 0, 1, 2, 3
"""A memory's state: no vector by the embedder yet; vectors; an empty vector list (a
LangGraph item put with ``index=False``: never similar); no longer searchable (erased)."""


@dataclass
class Scores:
    """A query's view of a scope as it stood at one look: its memories (ids and their
    index), which memories a search ranks (``member``: not erased, about the entity when
    one is asked for), each member's similarity in [0, 1] ((1 + cos) / 2, Neo4j's
    convention; NaN without a vector, and for a memory that is not a member: it is not
    scored) and, of the members, the ones its filters leave (``legal``)."""

    ids: list[str]
    index: dict[str, int]
    fact: np.ndarray
    similarity: np.ndarray  # float32, one per memory; NaN without a vector, or when not a member
    member: np.ndarray  # bool, one per memory
    legal: np.ndarray  # the members recorded by known_at, public by the cutoff, of the types asked: indexes, sorted
    unready: int  # members with no vector by the embedder yet
    span: tuple[float, float]  # the members' lowest and highest similarity (0, 0 when none has a vector)
    # the members each of those filters removed, in search.hits' order (type, known_at,
    # cutoff): never sent, so counted here for explain, as a text search counts its matches'
    removed: dict[str, int] = field(default_factory=dict)

    def of(self, memory_id: str) -> float | None:
        """One memory's similarity (None: no vector, or not in this copy)."""
        i = self.index.get(memory_id)
        if i is None or i >= len(self.similarity) or np.isnan(self.similarity[i]):
            return None
        return float(self.similarity[i])

    def members_in(self, values: dict[str, float] | dict[str, int]) -> tuple[np.ndarray, np.ndarray]:
        """The members among a dict's memory ids: their indexes and values (a memory
        written after this copy's look is not one)."""
        at = np.fromiter((self.index.get(memory_id, -1) for memory_id in values), np.int64, len(values))
        ok = (at >= 0) & (at < len(self.member))
        ok[ok] = self.member[at[ok]]
        return at[ok], np.fromiter(values.values(), np.float64, len(values))[ok]


def _grown(array: np.ndarray, size: int, fill: Any) -> np.ndarray:
    """``array`` in a larger one (its first axis ``size``), the rest ``fill``."""
    out = np.full((size, *array.shape[1:]), fill, array.dtype)
    out[:len(array)] = array
    return out


def _unit(rows: np.ndarray) -> np.ndarray:
    """Each row scaled to length 1 (a zero row stays zero: similarity 0.5 to anything)."""
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    return np.divide(rows, norms, out=np.zeros_like(rows), where=norms > 0)


@dataclass
class ScopeVectors:
    """One scope's memories and their unit vectors: ``rows`` (float32, one per vector)
    with the memory each belongs to (``owner``, -1 for a retired row); a memory of several
    vectors (a LangGraph item indexed on several fields) takes its best. ``aligned``:
    row i is memory i's only vector (a memory without one has a zero row), so no
    per-memory maximum is needed. The arrays grow by doubling."""

    dims: int
    store: str | None = None
    last: Any = None  # the tenant clock's time at the last look
    ids: list[str] = field(default_factory=list)
    index: dict[str, int] = field(default_factory=dict)
    about: dict[str, list[int]] = field(default_factory=dict)  # entity uid -> memories
    fact: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))
    state: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int8))
    recorded: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    available: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    rows: np.ndarray | None = None
    owner: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    used: int = 0  # rows in use
    aligned: bool = True
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        if self.rows is None:
            self.rows = np.zeros((0, self.dims), np.float32)

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for a in (self.rows, self.owner, self.fact, self.state, self.recorded, self.available))

    def load(self, chunks: list[dict[str, Any]]) -> None:
        """Take a whole scope (``retrieval.vectors`` records, one list per field) into
        this empty copy: at once when each memory has at most one vector, else memory by
        memory."""
        columns = {k: [x for chunk in chunks for x in chunk[k]] for k in (
            "ids", "fact", "alive", "embedding", "entities", "recorded", "available")}
        embedding = [e[0] for e in columns["embedding"]]
        if any(e is not None and len(e) > self.dims for e in embedding):
            self.apply([{"id": i, "fact": f, "alive": a, "embedding": e, "entities": n, "recorded": r,
                         "available": v} for i, f, a, e, n, r, v in zip(
                columns["ids"], columns["fact"], columns["alive"], embedding, columns["entities"],
                columns["recorded"], columns["available"], strict=True)])
            return
        count = len(columns["ids"])
        self.ids = columns["ids"]
        self.index = {memory_id: i for i, memory_id in enumerate(self.ids)}
        for i, uids in enumerate(columns["entities"]):
            for uid in uids:
                self.about.setdefault(uid, []).append(i)
        self.fact = np.asarray(columns["fact"], bool)
        self.recorded = np.asarray(columns["recorded"], np.int64)
        self.available = np.asarray([EARLIEST if v is None else v for v in columns["available"]], np.int64)
        with_vector = [i for i, e in enumerate(embedding) if e]
        self.state = np.where(np.asarray(columns["alive"], bool), UNREADY, GONE).astype(np.int8)
        self.state[[i for i, e in enumerate(embedding) if e is not None and self.state[i] != GONE]] = NO_VECTOR
        self.state[[i for i in with_vector if self.state[i] != GONE]] = VECTORS
        self.rows = np.zeros((count, self.dims), np.float32)
        if with_vector:
            self.rows[with_vector] = _unit(np.asarray([embedding[i] for i in with_vector], np.float32))
        self.owner, self.used = np.arange(count, dtype=np.int64), count

    def apply(self, changed: list[dict[str, Any]]) -> None:
        """Take these memories as they now are (``retrieval.vector_row`` rows)."""
        for row in changed:
            i = self.index.get(row["id"])
            if i is None:
                i = self.index[row["id"]] = len(self.ids)
                self.ids.append(row["id"])
                if i >= len(self.fact):
                    size = max(2 * len(self.fact), 64)
                    self.fact, self.state = _grown(self.fact, size, False), _grown(self.state, size, GONE)
                    self.recorded = _grown(self.recorded, size, 0)
                    self.available = _grown(self.available, size, EARLIEST)
                self.fact[i] = row["fact"]
                self.recorded[i] = row["recorded"]
                self.available[i] = EARLIEST if row["available"] is None else row["available"]
                for uid in row["entities"]:
                    self.about.setdefault(uid, []).append(i)
            parts = self._parts(row)
            self.state[i] = (GONE if not row["alive"] else UNREADY if parts is None
                             else VECTORS if len(parts) else NO_VECTOR)
            self._place(i, parts if parts is not None else np.zeros((0, self.dims), np.float32))

    def _parts(self, row: dict[str, Any]) -> np.ndarray | None:
        """A row's vectors as unit rows (a zero vector stays zero: similarity 0.5)."""
        if row["embedding"] is None:
            return None
        return _unit(np.asarray(row["embedding"], np.float32).reshape(-1, self.dims))

    def _place(self, i: int, parts: np.ndarray) -> None:
        """Memory i's rows become ``parts``: in place while every memory has one row
        (its own index), else its old rows are retired and the new ones appended."""
        if self.aligned and len(parts) <= 1:
            if i == self.used:
                self._grow(1)
                self.owner[i] = i
                self.used += 1
            self.rows[i] = parts[0] if len(parts) else 0.0
            return
        self.aligned = False
        self.owner[:self.used][self.owner[:self.used] == i] = -1
        self._grow(len(parts))
        self.rows[self.used:self.used + len(parts)] = parts
        self.owner[self.used:self.used + len(parts)] = i
        self.used += len(parts)

    def _grow(self, n: int) -> None:
        if self.used + n > len(self.rows):
            size = max(self.used + n, 2 * len(self.rows), 64)
            self.rows, self.owner = _grown(self.rows, size, 0.0), _grown(self.owner, size, -1)

    def _similarity(self, query: list[float], count: int, memories: np.ndarray | None = None) -> np.ndarray:
        """The best similarity of each memory's vectors to the query vector, (1 + cos) / 2
        (a zero query: 0.5 for all), float32, within 1e-6 of Neo4j's own cosine: every
        memory's, or only those of ``memories`` (indexes, in their order) - a search about
        one entity multiplies only its rows, when each memory has one (``aligned``)."""
        q = np.asarray(query, np.float32)
        norm = np.linalg.norm(q)
        q = q / norm if norm > 0 else q
        per_row = (self.rows[memories] if self.aligned and memories is not None else self.rows[:self.used]) @ q
        per_row += 1.0
        per_row *= 0.5
        if self.aligned:
            return per_row
        similarity = np.full(count, -np.inf, np.float32)
        live = self.owner[:self.used] >= 0
        np.maximum.at(similarity, self.owner[:self.used][live], per_row[live])
        return similarity if memories is None else similarity[memories]

    def scores(self, query: list[float], entity_uid: str | None, known_at: int, cutoff: int,
               facts: bool | None) -> Scores:
        """Each member's similarity to the query vector (the other memories are not
        scored), and which members a search with these filters ranks: ``known_at`` and
        ``cutoff`` in epoch microseconds, ``facts`` True or False for fact versions only
        or none of them (None: both). Decided here, under the lock, so that another search catching the
        copy up meanwhile changes nothing this one sees; and over the whole scope in a few
        passes whose temporaries are a few bytes per memory, since a search's time goes
        with the memory it sweeps (the matrix product already reads every vector)."""
        count = len(self.ids)
        state = self.state[:count]
        # the id list and index only grow (a reload replaces them): their first `count`
        # entries stay this copy's
        if entity_uid is None:
            similarity = self._similarity(query, count)
            similarity[state != VECTORS] = np.nan
            member = state != GONE
            ok, removed = _filtered(member, self.fact[:count], self.recorded[:count], self.available[:count],
                                    known_at, cutoff, facts)
            legal, unready = np.flatnonzero(ok), int(np.count_nonzero(state == UNREADY))
            low, high = np.fmin.reduce(similarity, initial=np.nan), np.fmax.reduce(similarity, initial=np.nan)
        else:
            about = np.unique(np.asarray(self.about.get(entity_uid, []), np.int64))  # sorted, once each
            about = about[state[about] != GONE]
            similarity = np.full(count, np.nan, np.float32)  # the others are not ranked: not scored
            similarity[about] = np.where(state[about] == VECTORS, self._similarity(query, count, about), np.nan)
            member = np.zeros(count, bool)
            member[about] = True
            ok, removed = _filtered(np.ones(len(about), bool), self.fact[about], self.recorded[about],
                                    self.available[about], known_at, cutoff, facts)
            legal, unready = about[ok], int(np.count_nonzero(state[about] == UNREADY))
            low, high = (np.fmin.reduce(similarity[about], initial=np.nan),
                         np.fmax.reduce(similarity[about], initial=np.nan))
        span = (0.0, 0.0) if np.isnan(low) else (float(low), float(high))
        return Scores(self.ids, self.index, self.fact[:count].copy(), similarity, member, legal, unready, span,
                      removed)


def _filtered(member: np.ndarray, fact: np.ndarray, recorded: np.ndarray, available: np.ndarray, known_at: int,
              cutoff: int, facts: bool | None) -> tuple[np.ndarray, dict[str, int]]:
    """Which members pass the type, known_at and cutoff filters, and how many each
    removed, in search.hits' order (a memory is counted under the first that removes it)."""
    typed = member if facts is None else member & (fact == facts)
    known = typed & (recorded <= known_at)
    ok = known & (available <= cutoff)
    counts = {"type": np.count_nonzero(member) - np.count_nonzero(typed),
              "known_at": np.count_nonzero(typed) - np.count_nonzero(known),
              "cutoff": np.count_nonzero(known) - np.count_nonzero(ok)}
    return ok, {name: int(n) for name, n in counts.items() if n}


class VectorCache:
    """The scopes' vectors one Memory keeps, least recently searched dropped first."""

    def __init__(self, budget: int = CACHE_BYTES):
        self._budget = budget
        self._scopes: OrderedDict[tuple[str, str, str, int], ScopeVectors] = OrderedDict()
        self._lock = threading.Lock()

    def scope(self, scope: Scope, name: str, dims: int) -> ScopeVectors:
        """The scope's vectors by this embedder (empty until its first look)."""
        key = (scope.tenant, scope.id, name, dims)
        with self._lock:
            vectors = self._scopes.pop(key, None) or ScopeVectors(dims)
            self._scopes[key] = vectors
            while len(self._scopes) > 1 and sum(v.nbytes for v in self._scopes.values()) > self._budget:
                self._scopes.popitem(last=False)
        return vectors


def since(vectors: ScopeVectors) -> dict[str, Any]:
    """``retrieval.prepare``'s parameters for what changed since the last look (none the
    first time: the scope is then read whole)."""
    seen = vectors.store is not None and vectors.last is not None
    return {"store": vectors.store if seen else None, "since": vectors.last if seen else None}


def scores(db: Any, scope: Scope, name: str, vectors: ScopeVectors, asked: dict[str, Any],
           prepared: dict[str, Any], query: list[float], entity_uid: str | None, known_at: int,
           cutoff: int, facts: bool | None) -> Scores:
    """Catch up with the graph (``prepared``: a ``retrieval.prepare`` row read with the
    parameters ``asked``, :func:`since`'s), then score every memory of the scope against
    ``query`` and apply the search's filters (:meth:`ScopeVectors.scores`). Its rows (each
    memory as it stood at that look) cover every change after ``asked["since"]``, so they
    bring the copy up to date whenever it stands at or after that point: another thread's
    look may have moved it meanwhile."""
    with vectors.lock:
        same = prepared["store"] == vectors.store and vectors.last is not None
        if same and prepared["last"] is not None and prepared["last"] <= vectors.last:
            pass  # the copy is as new as this look, or newer
        elif same and asked["since"] is not None and asked["since"] <= vectors.last:
            vectors.apply(prepared["rows"])
            vectors.last = prepared["last"]
        else:  # the first look, a replaced store, or a look that raced another
            fresh = ScopeVectors(vectors.dims)
            fresh.load(db.read_all("retrieval.vectors", tenant=scope.tenant, scope=scope.id, name=name,
                                   chunk=CHUNK))
            vectors.__dict__.update({k: v for k, v in fresh.__dict__.items() if k != "lock"})
            vectors.store, vectors.last = prepared["store"], prepared["last"]
        return vectors.scores(query, entity_uid, known_at, cutoff, facts)
