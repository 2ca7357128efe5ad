"""The one place graphmem talks to Neo4j: named statements in managed transactions.

Reads run in read transactions and writes in write transactions, so a ``neo4j://``
routing URI sends them to the right cluster members; all sessions share one bookmark
manager, so a read after a write sees it (read-your-writes) on a cluster as well.
Transient faults (``exc.is_retryable()``: ServiceUnavailable, SessionExpired,
TransientError) are retried with tenacity, bounded and jittered; every other error
is raised at once as a :class:`StatementError` naming the statement.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import neo4j
from neo4j.exceptions import DriverError, Neo4jError
from tenacity import (
    Retrying,
    retry_if_exception,
    stop_after_attempt,
    stop_after_delay,
    wait_random_exponential,
)

from .errors import StatementError
from .queries import QUERIES, Catalogue

log = logging.getLogger("graphmem.db")
T = TypeVar("T")


@dataclass(frozen=True)
class RetryPolicy:
    """How long a transient fault is retried: at most ``attempts`` tries within ``seconds``."""

    attempts: int = 8
    seconds: float = 60.0
    first_wait: float = 0.2
    max_wait: float = 5.0


def is_transient(exc: BaseException) -> bool:
    """The driver's own verdict: only faults it calls retryable are worth another try."""
    return isinstance(exc, (Neo4jError, DriverError)) and exc.is_retryable()


class Tx:
    """A transaction that runs statements by name; errors carry the statement's name.

    It wraps a driver transaction, or a session whose every statement is its own
    auto-commit transaction (``Database.read_each``)."""

    def __init__(self, tx: neo4j.Transaction | neo4j.Session, queries: Catalogue = QUERIES):
        self._tx = tx
        self._queries = queries

    def run(self, name: str, /, **params: Any) -> list[dict[str, Any]]:
        """Run named statement ``name`` and return its records as dicts.

        ``dict(record)``, not ``record.data()``: statements return values and maps, never
        nodes, and ``data()`` walks every nested value to convert graph objects - a
        quarter of a search's client time when its rows carry long lists.
        """
        query = self._queries[name]
        try:
            return [dict(record) for record in self._tx.run(query, params)]
        except (Neo4jError, DriverError) as exc:
            if is_transient(exc):
                exc.add_note(f"graphmem statement: {name}")
                raise
            raise StatementError(name, exc) from exc

    def one(self, name: str, /, **params: Any) -> dict[str, Any] | None:
        """Run ``name`` and return its single record, or None when it returns none."""
        rows = self.run(name, **params)
        return rows[0] if rows else None


class Database:
    """A driver, a database name and a retry policy; opens a session per unit of work."""

    def __init__(
        self,
        driver: neo4j.Driver,
        database: str | None,
        retry: RetryPolicy | None = None,
        queries: Catalogue = QUERIES,
    ):
        self.driver = driver
        self.database = database
        self.retry = retry or RetryPolicy()
        self.queries = queries
        self._bookmarks = neo4j.GraphDatabase.bookmark_manager()

    def _retrying(self) -> Retrying:
        policy = self.retry
        return Retrying(
            retry=retry_if_exception(is_transient),
            stop=stop_after_attempt(policy.attempts) | stop_after_delay(policy.seconds),
            wait=wait_random_exponential(multiplier=policy.first_wait, max=policy.max_wait),
            before_sleep=lambda state: log.warning(
                "transient fault, retry %d: %s", state.attempt_number, state.outcome.exception()
            ),
            reraise=True,
        )

    def _run(self, mode: str, work: Callable[[Tx], T], commit: bool = True) -> T:
        for attempt in self._retrying():
            with attempt, self.driver.session(
                database=self.database,
                default_access_mode=mode,
                bookmark_manager=self._bookmarks,
            ) as session:
                tx = session.begin_transaction()
                try:
                    result = work(Tx(tx, self.queries))
                    tx.commit() if commit else tx.rollback()
                except BaseException:
                    if not tx.closed():
                        tx.rollback()
                    raise
                return result
        raise AssertionError("unreachable: tenacity re-raises the last error")  # pragma: no cover

    def read(self, work: Callable[[Tx], T], label: str = "read") -> T:
        """Run ``work`` in a read transaction (routed to a reader on a cluster)."""
        return self._wrap_commit(neo4j.READ_ACCESS, work, label)

    def read_each(self, work: Callable[[Tx], T], label: str = "read") -> T:
        """Run ``work`` with each statement in its own auto-commit read transaction.

        A statement is then one round trip (run and pull), where an explicit transaction
        adds two (begin, commit) - most of a short read's time on a busy machine. For
        reads only, and only those whose statements need nothing in common but their
        parameters: Neo4j reads are read-committed, so a later statement of one
        transaction sees later commits just the same. Routing, bookmarks (read-your-
        writes) and retries are those of ``read``.
        """
        try:
            for attempt in self._retrying():
                with attempt, self.driver.session(
                    database=self.database,
                    default_access_mode=neo4j.READ_ACCESS,
                    bookmark_manager=self._bookmarks,
                ) as session:
                    return work(Tx(session, self.queries))
        except (Neo4jError, DriverError) as exc:
            if is_transient(exc):
                raise
            raise StatementError(label, exc) from exc
        raise AssertionError("unreachable: tenacity re-raises the last error")  # pragma: no cover

    def write(self, work: Callable[[Tx], T], label: str = "write") -> T:
        """Run ``work`` in one write transaction: all of it commits, or none of it."""
        return self._wrap_commit(neo4j.WRITE_ACCESS, work, label)

    def rolled_back(self, work: Callable[[Tx], T], label: str = "probe") -> T:
        """Run ``work`` in a write transaction that is always rolled back: to see what
        statements would write, writing nothing (graphmem.probe)."""
        return self._wrap_commit(neo4j.WRITE_ACCESS, work, label, commit=False)

    def _wrap_commit(self, mode: str, work: Callable[[Tx], T], label: str, commit: bool = True) -> T:
        try:
            return self._run(mode, work, commit)
        except (Neo4jError, DriverError) as exc:
            if is_transient(exc):
                raise
            # Raised outside any statement, at begin or commit: name the unit of work.
            raise StatementError(f"{label} (commit)", exc) from exc

    def read_one(self, name: str, /, **params: Any) -> dict[str, Any] | None:
        """Shorthand: one named read statement, its single record or None."""
        return self.read(lambda tx: tx.one(name, **params), name)

    def read_all(self, name: str, /, **params: Any) -> list[dict[str, Any]]:
        """Shorthand: one named read statement, all its records."""
        return self.read(lambda tx: tx.run(name, **params), name)

    def schema(self, name: str, /, **params: Any) -> None:
        """Run one schema statement in its own auto-commit transaction (DDL needs one)."""
        query = self.queries[name]
        for attempt in self._retrying():
            with attempt:
                try:
                    with self.driver.session(
                        database=self.database,
                        default_access_mode=neo4j.WRITE_ACCESS,
                        bookmark_manager=self._bookmarks,
                    ) as session:
                        session.run(query, params).consume()
                except (Neo4jError, DriverError) as exc:
                    if is_transient(exc):
                        raise
                    raise StatementError(name, exc) from exc
