"""The shared test world: a tenant with named entities and short helpers, and the
instants the scenarios use, so each scenario reads like a story."""

from __future__ import annotations

import datetime as dt

import neo4j

from graphmem import Authority, Entity, ExperienceIn, FactIn, Memory, Period, Scope, Source

UTC = dt.UTC
US = dt.timedelta(microseconds=1)
Q1 = Period(start=dt.date(2024, 1, 1), end=dt.date(2024, 3, 31))
Q2 = Period(start=dt.date(2024, 4, 1), end=dt.date(2024, 6, 30))
Q3 = Period(start=dt.date(2024, 7, 1), end=dt.date(2024, 9, 30))
Q4 = Period(start=dt.date(2024, 10, 1), end=dt.date(2024, 12, 31))
FAR = dt.datetime(2100, 1, 1, tzinfo=UTC)
ENTITIES = {
    "acme": Entity(id="acme", name="Acme Corp", kind="company", aliases=("ACME",)),
    "globex": Entity(id="globex", name="Globex", kind="company", aliases=("GBX",)),
}


TX0 = dt.datetime(2025, 1, 1, tzinfo=UTC)  # a property test example's first transaction time


class TxClock:
    """Deterministic transaction time for property tests (``Memory(clock=...)``): TX0,
    TX0 + 1 s, ... from each ``reset``, so the model knows every ``recorded_at``."""

    def reset(self) -> None:
        self.last = TX0 - dt.timedelta(seconds=1)

    def __call__(self) -> dt.datetime:
        self.last += dt.timedelta(seconds=1)
        return self.last


def t(text: str) -> dt.datetime:
    """A UTC instant from ``YYYY-MM-DD`` or ``YYYY-MM-DDTHH:MM``."""
    return dt.datetime.fromisoformat(text).replace(tzinfo=UTC)


def lose_first_acknowledgement(monkeypatch, writing: str | None = None) -> list[bool]:
    """Make a commit land and then fail as if the connection dropped before its
    acknowledgement, with the driver's own exception for that (IncompleteCommit: a
    retry of idempotent work is graphmem's call). ``writing``: only the commit of a
    transaction that ran a statement containing this text (say, the one that creates
    fact versions); by default the next commit. The list it returns gets an item when
    that happened."""
    real_commit, real_run, lost, marked = neo4j.Transaction.commit, neo4j.Transaction.run, [], set()

    def run_and_mark(self, query, *args, **kwargs):
        if writing is not None and writing in str(query):
            marked.add(id(self))
        return real_run(self, query, *args, **kwargs)

    def commit_then_drop(self):
        real_commit(self)
        if not lost and (writing is None or id(self) in marked):
            lost.append(True)
            raise neo4j.exceptions.IncompleteCommit("injected: Failed to read from defunct connection")

    monkeypatch.setattr(neo4j.Transaction, "run", run_and_mark)
    monkeypatch.setattr(neo4j.Transaction, "commit", commit_then_drop)
    return lost


class World:
    """A memory and a tenant holding the entities acme (ticker ACME) and globex (GBX)."""

    def __init__(self, mem: Memory, scope: Scope, entities: tuple[str, ...] = ("acme", "globex")):
        self.mem, self.scope = mem, scope
        for entity in entities:
            mem.put_entity(scope, ENTITIES[entity])

    def source(self, sid: str, available_by: dt.datetime, authority: str = "primary",
               publisher: str | None = None, kind: str = "filing", title: str | None = None) -> Source:
        src = Source(id=sid, kind=kind, authority=Authority(authority), publisher=publisher,
                     available_by=available_by, uri=f"https://example.test/{sid}", title=title)
        self.mem.record_source(self.scope, src)
        return src

    def fact_in(self, value, *sources: str, period: Period = Q1, entity: str = "acme",
                attribute: str = "revenue", unit: str = "USD", **kw) -> FactIn:
        return FactIn(entity=entity, attribute=attribute, value=value, period=period,
                      sources=sources, unit=unit, **kw)

    def fact(self, value, *sources: str, expected_revision: int | None = None, **kw):
        return self.mem.assert_fact(self.scope, self.fact_in(value, *sources, **kw),
                                    expected_revision=expected_revision)

    def read(self, cutoff: dt.datetime, known_at: dt.datetime | None = None, *,
             period: Period | None = Q1, entity: str = "acme", attribute: str = "revenue", **kw):
        return self.mem.as_of(self.scope, entity=entity, attribute=attribute, period=period,
                              cutoff=cutoff, known_at=known_at, **kw)

    def history(self, period: Period | None = Q1, entity: str = "acme", attribute: str = "revenue"):
        return self.mem.history(self.scope, entity=entity, attribute=attribute, period=period)

    def experience(self, *evidence: str, outcome: str | None = "the retry succeeded",
                   trigger: str = "card payment declined with error E-4012 insufficient funds",
                   **kw):
        return self.mem.remember_experience(self.scope, ExperienceIn(
            trigger=trigger, procedure=("wait one minute", "retry with a smaller amount"),
            outcome=outcome, evidence=evidence, **kw))

    def search(self, text: str | None = None, **kw):
        return self.mem.search(self.scope, text=text, **kw)
