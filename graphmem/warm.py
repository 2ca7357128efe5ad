"""Plans made, and the server's code paths run, before the first call needs them.

Neo4j plans a statement the first time its server sees the statement's text with its
parameters' types (the executable query cache, per database), and on a server just
started its planner and its runtime are cold code for the JVM as well: the first
``as_of``, ``screen`` or ``search`` after a start took hundreds of times a warm call.
:func:`warm` makes the calls an agent or a user makes first (as_of, facts_as_of,
history, entity, screen, search, and the LangGraph store's search: its namespaces, then
a namespace's search) for real, in tenants of its own that hold nothing (``warm``,
``graphmem-warm``, ``gw``), so that every statement on their way is planned and executed
once. The server's warmer (``python -m graphmem.warm``) then makes as_of, facts_as_of,
history and a search on one stored key, if there is one (``admin.sample``: read only),
so that the server's code that reads what an answer holds runs too; a Memory's warmer,
in a process that may serve one tenant, reads no one's data. Nothing is written,
whatever a call tries: the warming Memory's write transactions are always rolled back
(``Database.rolled_back``). An empty tenant's answers are empty, so a call may stop
early or fail once its first statements have run; that is all it is for, and errors
are ignored.

Executing, not only planning: warming through ``EXPLAIN`` (planned, cached, never run)
left a warmed first call 10-45 times a warm one; running the calls (and the stored
key's reads) brings it to 1.2-1.4 times (bench/bench_coldstart.py, docs/PERFORMANCE.md).

The cache key has each parameter's type and, for a string or a list, its length rounded
up to a power of ten (Neo4j 5's parameter size hint: 1, 10, 100, ...). The strings that
vary in graphmem's statements are the tenant (a name of 2-10 or 11-100 characters), the
scope (its JSON: 10 characters for a 2-character tenant, 11-100 for most) and a search's
Lucene query (the scope's digest and the words: 11-100 characters for a few words, more
for a sentence); so the calls run for a tenant of 2, 4 and 13 characters and a search of
a few words and of a sentence (a 1-character tenant's shapes are left cold).

Two ways in, both in the background, never in the way of a call that comes first:

* ``server start`` (and the start at the end of a bootstrap) runs ``python -m
  graphmem.warm`` detached once Bolt answers (``server.start(..., warm=True)``);
* ``Memory(..., warm=True)`` (and ``Memory.connect``/``from_env`` with it) runs
  :func:`warm` on a daemon thread with sessions of its own; ``close()`` stops it before
  its next statement.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import neo4j

from .db import Database, RetryPolicy
from .memory import Memory
from .models import Period, Scope

log = logging.getLogger("graphmem.warm")
_AT = dt.datetime(2000, 1, 1, tzinfo=dt.UTC)
_SENTENCE = "what did the filings of the company say about revenue in the last quarter"


def _calls(s: Scope) -> dict[str, Callable[[Any], Any]]:
    """The first calls, as their callers make them, in scope ``s`` (the store's own reads:
    graphmem.integrations.langgraph)."""
    return {
        "as_of": lambda m: m.as_of(s, entity="e", attribute="a", cutoff=_AT),
        "as_of period": lambda m: m.as_of(s, entity="e", attribute="a", period=Period(end=_AT.date()),
                                          unit="", definition="", cutoff=_AT),
        "facts_as_of": lambda m: m.facts_as_of(s, entity="e", cutoff=_AT),
        "history": lambda m: m.history(s, entity="e", attribute="a"),
        "entity": lambda m: m.entity(s, "e"),
        "screen": lambda m: m.screen(s, attribute="a", frame="CY2000", cutoff=_AT),
        "search": lambda m: m.search(s, text="warm", cutoff=_AT),
        "search sentence": lambda m: m.search(s, text=_SENTENCE, cutoff=_AT),
        "search entity": lambda m: m.search(s, text="warm", types=("fact",), entity="e", match="any"),
        "store search": lambda m: _store(m, s.tenant).search(("warm",), query="warm"),
        # its namespaces hold nothing, so the search of one is made as the store makes it
        "store namespace search": lambda m: _store(m, s.tenant)._ranked([("warm",)], "warm", 10),
    }


def _store(memory: Any, tenant: str) -> Any:
    """A LangGraph store on ``memory`` (an optional extra: without it, an ImportError ends
    this call like any other)."""
    from .integrations.langgraph import GraphmemStore

    return GraphmemStore(memory, tenant=tenant)


def _stored(memory: Any) -> None:
    """The reads of a call with answers, on one stored key (``admin.sample``): an empty
    tenant's calls end where the answers would begin, and the server's code that reads
    versions, sources and search hits would stay cold."""
    row = memory.db.read_one("admin.sample")
    if row is None:
        return
    tenant, pairs = json.loads(row["scope"])
    scope, now = Scope(tenant=tenant, **dict(pairs)), dt.datetime.now(dt.UTC)
    memory.as_of(scope, entity=row["entity"], attribute=row["attribute"], cutoff=now)
    memory.facts_as_of(scope, entity=row["entity"], cutoff=now)
    memory.history(scope, entity=row["entity"], attribute=row["attribute"])
    memory.search(scope, text=" ".join((row["text"] or "").split()[:3]) or row["entity"], cutoff=now)


# tenant names of 2, 3-10 and 11+ characters: the tenant and the scope's JSON in each of
# their size classes (a 2-character tenant's scope JSON has 10 characters)
CALLS = {f"{name} ({len(tenant)})": call for tenant in ("warm", "graphmem-warm", "gw")
         for name, call in _calls(Scope(tenant=tenant)).items()}
# the server's own warmer (``python -m graphmem.warm``) reads one stored key too; a
# Memory's warmer, in a process that may serve one tenant, reads no one's data
SERVER_CALLS = CALLS | {"a stored key": _stored}


def warm(driver: neo4j.Driver, database: str | None = None, stop: threading.Event | None = None,
         calls: dict[str, Callable[[Any], Any]] = CALLS) -> dict[str, float]:
    """Make ``calls`` on ``driver``'s server, writing nothing; seconds per call. ``stop``
    set: no further call starts."""
    warming = Memory(driver, database, retry=RetryPolicy(attempts=1))
    _unwritten(warming.db)
    seconds = {}
    for name, call in calls.items():
        if stop is not None and stop.is_set():
            break
        clock = time.monotonic()
        try:
            call(warming)
        except Exception as exc:  # noqa: BLE001 - empty answers end a call early; its plans are made
            log.debug("warming %s ended: %s", name, exc)
        seconds[name] = time.monotonic() - clock
    return seconds


def _unwritten(db: Database) -> None:
    """Every write transaction of ``db`` rolled back: a warming call writes nothing."""

    def write(work: Callable[[Any], Any], label: str = "write", *, idempotent: bool = False) -> Any:
        return db.rolled_back(work, label)

    db.write = write  # type: ignore[method-assign]


class Warmer:
    """:func:`warm` on a daemon thread; :meth:`stop` keeps it from starting another call."""

    def __init__(self, driver: neo4j.Driver, database: str | None):
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(driver, database), name="graphmem-warm",
                                        daemon=True)
        self._thread.start()

    def _run(self, driver: neo4j.Driver, database: str | None) -> None:
        try:
            warm(driver, database, self._stop)
        except Exception as exc:  # noqa: BLE001 - a closed driver, a server gone: nothing to warm
            log.debug("warming stopped: %s", exc)

    def stop(self, timeout: float = 2.0) -> None:
        """Start no further call; wait up to ``timeout`` seconds for the one under way."""
        self._stop.set()
        self._thread.join(timeout)


def main(argv: list[str]) -> None:
    """``python -m graphmem.warm URI``: warm the server at URI (the password, if any, in
    ``$GRAPHMEM_NEO4J_PASSWORD``) and print the seconds per call."""
    password = os.environ.get("GRAPHMEM_NEO4J_PASSWORD")
    auth = (os.environ.get("GRAPHMEM_NEO4J_USER", "neo4j"), password) if password else None
    with neo4j.GraphDatabase.driver(argv[0], auth=auth, notifications_min_severity="OFF") as driver:
        seconds = warm(driver, "neo4j", calls=SERVER_CALLS)
    print(" ".join(f"{name}={s:.2f}s" for name, s in seconds.items()))


if __name__ == "__main__":
    main(sys.argv[1:])
