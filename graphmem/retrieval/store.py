"""Vectors kept with the memories (cypher/retrieval.cypher).

**One embedder per scope.** The first embedder used in a scope is recorded there (an
``EmbeddingSpace`` node: name, dimension and its vector of a fixed text,
``embedders.PROBE``). Another embedder is refused with an InputError naming both, before
any vector is read or written: cosine similarity between vectors of two models means
nothing, so they are never mixed. One of the same name and dimension whose vector of the
probe text is not the recorded one's (``embedders.SAME_MODEL``) is another model under
that name (two lambdas are both ``<lambda>``), refused as well. A scope recorded before
probes were kept takes its embedder's probe the next time that embedder claims it. Changing the model is a
re-embedding (``graphmem embed --embedder NEW --switch``): the scope records the target,
searches are refused until every memory has a vector by it, and a killed run resumes
where it stopped (each batch commits; what is left is what has no vector by the target).

**What is embedded** is the text a memory is found by (``search_text``: a fact version's
key, value and sources; an experience's or task state's fields), unless the caller
gives its own text (a LangGraph store embeds its index fields). A memory is embedded
by the write that makes it when written through a ``GraphmemStore`` with an ``index``,
else by ``graphmem embed`` (``Memory.embed``), an explicit write step; a search never
writes, and refuses while memories of its scope have no vector (rank.py). An erasure
removes a vector with its payload.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any

from .. import facts, search
from ..db import Tx
from ..errors import InputError
from ..models import Scope
from .embedders import BATCH, SAME_MODEL, Embedder

TextOf = Callable[[dict[str, Any]], list[str]]
"""The texts to embed for a memory (a ``retrieval.texts`` row: id, text, value): one vector
each, stored concatenated; no text stores an empty vector list (never similar)."""


def _params(scope: Scope) -> dict[str, Any]:
    return facts.scope_params(scope)


def check_space(row: dict[str, Any] | None, embedder: Embedder) -> None:
    """Refuse an embedder that is not the scope's (or a scope being re-embedded)."""
    if row is None or row["name"] is None:
        return
    if row["target"] is not None:
        raise InputError("embedder", f"this scope is being re-embedded from {row['name']} to "
                                     f"{row['target']}: run `graphmem embed --embedder ... --switch` "
                                     "to finish before searching by meaning")
    if (row["name"], row["dims"]) != (embedder.name, embedder.dims):
        raise InputError("embedder", f"this scope's vectors are by {row['name']} ({row['dims']} "
                                     f"dimensions); {embedder.name} ({embedder.dims}) would mix "
                                     "them: use the same embedder, or re-embed the scope (graphmem embed --switch)")
    check_probe(row.get("probe"), embedder)


def check_probe(probe: list[float] | None, embedder: Embedder) -> None:
    """Refuse an embedder that has the recorded name but is another model (module docstring)."""
    if probe is not None and (similarity := embedder.similarity(probe)) < SAME_MODEL:
        raise InputError("embedder", f"{embedder.name} is not the model this scope's vectors were made with, "
                                     f"though it has its name: the two embed one text {similarity:.2f} alike "
                                     "(one model: 1.00). Give the new one a name of its own (Embedder(fn, "
                                     "name=...)) and re-embed the scope with it (graphmem embed --switch)")


def claim(memory: Any, scope: Scope, embedder: Embedder, row: dict[str, Any] | None = None) -> None:
    """Make ``embedder`` the scope's, or check that it is (InputError otherwise);
    ``row``: the scope's ``retrieval.space`` when the caller has just read it."""
    probe = embedder.probe()
    row = row or memory.db.read_one("retrieval.space", **_params(scope))
    if row is None or row["name"] is None or (row["probe"] is None and row["name"] == embedder.name):
        memory.write(scope, "retrieval.claim", lambda tx, at: claim_in(tx, scope, embedder, probe, at))
    else:
        check_space(row, embedder)


def checked(memory: Any, scope: Scope, embedder: Embedder) -> list[float]:
    """Check ``embedder`` against the scope's, reading only (InputError otherwise), and
    return its vector of the probe text, for :func:`claim_in` to record."""
    probe = embedder.probe()
    check_space(memory.db.read_one("retrieval.space", **_params(scope)), embedder)
    return probe


def claim_in(tx: Tx, scope: Scope, embedder: Embedder, probe: list[float], at: Any) -> None:
    """:func:`claim` inside a caller's write transaction, so that the claim stands or
    falls with the writes it is for (a writer that claimed meanwhile: InputError, and the
    transaction rolls back)."""
    check_space(tx.one("retrieval.claim", name=embedder.name, dims=embedder.dims, probe=probe,
                       recorded_at=at, **_params(scope)), embedder)


def embed_rows(tx_write: Callable[[Callable[[Tx], Any]], Any], scope: Scope, embedder: Embedder,
               rows: list[dict[str, Any]], text_of: TextOf) -> dict[str, list[float]]:
    """Embed these memories (``retrieval.texts`` rows, each with ``fact``) and store their
    vectors in one write; their vectors by id (concatenated when several). Each vector is
    stored with the search text it was made from, so a memory whose text was rebuilt
    while the model ran (a rename, an erased source) takes none (retrieval.set_vectors)."""
    texts = [text_of(r) for r in rows]
    flat = embedder.documents([t for ts in texts for t in ts])
    vectors, i = {}, 0
    for row, ts in zip(rows, texts, strict=True):
        vectors[row["id"]] = [x for v in flat[i:i + len(ts)] for x in v]
        i += len(ts)
    tx_write(lambda tx: tx.run("retrieval.set_vectors", name=embedder.name, **_params(scope),
                               rows=[{"id": r["id"], "fact": r["fact"], "vector": vectors[r["id"]],
                                      "text": r["text"]}
                                     for r in rows]))
    return vectors


def texts(tx: Tx, scope: Scope, ids: Iterable[tuple[str, bool]]) -> list[dict[str, Any]]:
    """``retrieval.texts`` rows for (id, is_fact) pairs, each marked with ``fact``."""
    ids = list(ids)
    facts_ = [i for i, fact in ids if fact]
    rows = tx.run("retrieval.texts", facts=facts_, memories=[i for i, fact in ids if not fact],
                  **_params(scope))
    kinds = set(facts_)
    return [{**r, "fact": r["id"] in kinds} for r in rows]


def backfill(memory: Any, scope: Scope, embedder: Embedder, *, switch: bool = False,
             text_of: TextOf | None = None,
             progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    """Embed every memory of the scope with no vector by ``embedder`` (``graphmem embed``).

    A scope with another embedder is refused unless ``switch``: then the embedder becomes
    the scope's target, every memory is re-embedded, and the scope switches to it at the
    end. Each batch of ``BATCH`` memories commits on its own, so a killed run loses at
    most one batch and the next run does only what is left. ``progress(done, total)``
    is called after each batch."""
    probe = embedder.probe()
    params = {**_params(scope), "name": embedder.name, "dims": embedder.dims}
    row = memory.db.read_one("retrieval.space", **_params(scope))
    if row is None or row["name"] is None or not switch or (row["name"] == embedder.name and row["target"] is None):
        claim(memory, scope, embedder, row)
    else:  # a re-embedding resumed with another model under the target's name is refused
        check_probe(row["probe"] if row["name"] == embedder.name else None, embedder)
        memory.write(scope, "retrieval.retarget", lambda tx, at: check_probe(
            tx.one("retrieval.retarget", probe=probe, **params)["target_probe"], embedder))
    started = time.perf_counter()
    todo = memory.db.read_all("retrieval.pending", **params,
                              lucene=search.lucene(scope, None, "any", None))
    done = 0
    for start in range(0, len(todo), BATCH):
        batch = [(r["id"], r["fact"]) for r in todo[start:start + BATCH]]
        rows = memory.db.read(lambda tx, b=batch: texts(tx, scope, b), "retrieval.texts")
        embed_rows(lambda work: memory.write(scope, "retrieval.set_vectors", lambda tx, at: work(tx)),
                   scope, embedder, rows, text_of or embedder.text_of)
        done += len(batch)
        if progress:
            progress(done, len(todo))
    switched = switch and memory.write(scope, "retrieval.switch", lambda tx, at: tx.run(
        "retrieval.switch", recorded_at=at, **params))
    return {"embedded": done, "embedder": embedder.name, "dims": embedder.dims,
            "switched": bool(switched), "seconds": round(time.perf_counter() - started, 3)}
