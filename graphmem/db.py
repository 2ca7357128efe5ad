"""The one place graphmem talks to Neo4j: named statements in managed transactions.

Reads run in read transactions and writes in write transactions, so a ``neo4j://``
routing URI sends them to the right cluster members; all sessions share one bookmark
manager, so a read after a write sees it (read-your-writes) on a cluster as well.

Time limits. Every transaction carries a timeout (:class:`Timeouts`): the server rolls
back a transaction that runs longer. A write holds its tenant's clock lock
(``admin.tick``) from its first statement to its commit, so the write timeout bounds how
long a stalled writer - a stopped process, a machine asleep, a debugger - keeps the
other writers of its tenant waiting. A transaction rolled back for its timeout is tried
once more: it may have spent its time queued behind a stalled writer, or been the
stalled one (nothing of it was written, so a second try is safe for any work); a second
timeout raises :class:`TransactionTimeoutError`.

Faults. Transient faults (the driver's ``is_retryable()``: ServiceUnavailable,
SessionExpired, TransientError - a deadlock, or a lock wait past the server's
``db.lock.acquisition.timeout``) are retried with tenacity, bounded by a
:class:`RetryPolicy` and jittered. Two more are retried because graphmem knows what the
driver cannot:

* a lost commit acknowledgement (``IncompleteCommit``: the connection dropped while the
  commit was in flight), for idempotent work only: reads, and every write whose retry
  finds what a landed first try recorded (see ``Memory.write``). Work that is not
  idempotent raises :class:`CommitUnknownError` instead;
* a transaction stopped while it waited for a lock (``LockClientStopped``: its own
  timeout ran out behind a stalled writer): it did nothing, so it can run again.

Transient faults that outlast the policy raise :class:`UnavailableError`; every other
database error is raised at once as a :class:`StatementError` naming the statement.
"""

from __future__ import annotations

import logging
import math
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from typing import Any, TypeVar

import neo4j
from neo4j.exceptions import DriverError, IncompleteCommit, Neo4jError
from tenacity import (
    Retrying,
    retry_if_exception,
    stop_after_attempt,
    stop_after_delay,
    wait_random_exponential,
)

from .errors import (
    CommitUnknownError,
    GraphmemError,
    InputError,
    StatementError,
    TransactionTimeoutError,
    UnavailableError,
    describe,
)
from .queries import QUERIES, Catalogue

log = logging.getLogger("graphmem.db")
T = TypeVar("T")

_TIMED_OUT = frozenset({"Neo.ClientError.Transaction.TransactionTimedOut",
                        "Neo.ClientError.Transaction.TransactionTimedOutClientConfiguration"})
_LOCK_WAIT_STOPPED = "Neo.ClientError.Transaction.LockClientStopped"


def _env_number(env: Mapping[str, str], name: str, *, integer: bool = False) -> float | None:
    """A non-negative number from environment variable ``name`` (None when unset)."""
    text = env.get(name, "").strip()
    if not text:
        return None
    try:
        value = int(text) if integer else float(text)
    except ValueError:
        raise InputError(name, f"expected a {'whole ' if integer else ''}number, got {text!r}") from None
    if not math.isfinite(value) or value < 0:
        raise InputError(name, f"must be a finite number >= 0, got {text!r}")
    return value


def _check(settings: object) -> None:
    """Every field of a settings dataclass: a finite number >= 0 (bounds checked up front)."""
    for f in fields(settings):  # type: ignore[arg-type]
        value = getattr(settings, f.name)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
                or value < 0:
            raise InputError(f"{type(settings).__name__}.{f.name}", f"must be a finite number >= 0, "
                                                                    f"got {value!r}")


@dataclass(frozen=True)
class RetryPolicy:
    """How long a transient fault is retried: at most ``attempts`` tries within ``seconds``.

    ``seconds`` (120) outlasts the write timeout (60) and a lock wait (the launcher's 20):
    a writer queued behind a stalled one keeps trying until the server has rolled the
    stalled one back. ``from_env`` reads ``$GRAPHMEM_RETRY_ATTEMPTS`` and
    ``$GRAPHMEM_RETRY_SECONDS`` (a load that should outlast a server restart: raise both).
    """

    attempts: int = 8
    seconds: float = 120.0
    first_wait: float = 0.2
    max_wait: float = 5.0

    def __post_init__(self) -> None:
        _check(self)
        if self.attempts < 1:
            raise InputError("RetryPolicy.attempts", "must be at least 1")

    @classmethod
    def from_env(cls, env: Mapping[str, str] = os.environ) -> RetryPolicy:
        given = {"attempts": _env_number(env, "GRAPHMEM_RETRY_ATTEMPTS", integer=True),
                 "seconds": _env_number(env, "GRAPHMEM_RETRY_SECONDS")}
        return cls(**{k: v for k, v in given.items() if v is not None})


@dataclass(frozen=True)
class Timeouts:
    """How long the server lets one transaction run before it rolls it back, in seconds
    (0: no limit).

    ``write`` (60 s) bounds how long a stalled writer holds its tenant: every other
    writer of that tenant proceeds at most about ``write`` + 1 s (the server's check
    interval) + a retry's backoff after the stalled transaction began. A filing of
    thousands of rows commits in about a second on a quiet machine and within seconds
    on one loaded tenfold; raise it for larger single transactions (``Memory.record``
    of a huge unit, a retraction cascading over a very large graph). ``read`` (300 s)
    stops a runaway read on the server. Schema statements run without a limit:
    ``migrate`` waits for index population itself.
    ``from_env`` reads ``$GRAPHMEM_WRITE_TIMEOUT`` and ``$GRAPHMEM_READ_TIMEOUT``.
    """

    write: float = 60.0
    read: float = 300.0

    def __post_init__(self) -> None:
        _check(self)

    @classmethod
    def from_env(cls, env: Mapping[str, str] = os.environ) -> Timeouts:
        given = {"write": _env_number(env, "GRAPHMEM_WRITE_TIMEOUT"),
                 "read": _env_number(env, "GRAPHMEM_READ_TIMEOUT")}
        return cls(**{k: v for k, v in given.items() if v is not None})


def is_transient(exc: BaseException) -> bool:
    """The driver's own verdict: only faults it calls retryable are worth another try."""
    return isinstance(exc, (Neo4jError, DriverError)) and exc.is_retryable()


def retryable(exc: BaseException, idempotent: bool) -> bool:
    """Worth another try: a transient fault, a lock wait stopped by its own timeout, or
    (idempotent work only) a commit whose acknowledgement was lost."""
    if isinstance(exc, IncompleteCommit):
        return idempotent
    return is_transient(exc) or getattr(exc, "code", None) == _LOCK_WAIT_STOPPED


class Tx:
    """A transaction that runs statements by name; errors carry the statement's name.

    It wraps a driver transaction, or a session whose every statement is its own
    auto-commit transaction (``Database.read_each``; ``timeout`` then goes with each
    statement)."""

    def __init__(self, tx: neo4j.Transaction | neo4j.Session, queries: Catalogue = QUERIES,
                 timeout: float | None = None):
        self._tx = tx
        self._queries = queries
        self._timeout = timeout

    def run(self, name: str, /, **params: Any) -> list[dict[str, Any]]:
        """Run named statement ``name`` and return its records as dicts.

        Each record's values zipped with the result's keys, not ``record.data()``:
        statements return values and maps, never nodes, and ``data()`` walks every nested
        value to convert graph objects (a quarter of a search's client time when its rows
        carry long lists); ``dict(record)`` looks each field up by name (a tenth of a
        panel's 28,000 records). A database
        error leaves tagged with the statement's name; ``Database`` decides whether it
        is retried and which graphmem error it becomes.
        """
        query = self._queries[name]
        if self._timeout is not None:
            query = neo4j.Query(query, timeout=self._timeout)
        try:
            result = self._tx.run(query, params)
            keys = result.keys()
            return [dict(zip(keys, record, strict=True)) for record in result]
        except (Neo4jError, DriverError) as exc:
            exc.graphmem_statement = name  # type: ignore[attr-defined]
            raise

    def one(self, name: str, /, **params: Any) -> dict[str, Any] | None:
        """Run ``name`` and return its single record, or None when it returns none."""
        rows = self.run(name, **params)
        return rows[0] if rows else None


class Database:
    """A driver, a database name, a retry policy and timeouts; opens a session per unit of work."""

    def __init__(
        self,
        driver: neo4j.Driver,
        database: str | None,
        retry: RetryPolicy | None = None,
        queries: Catalogue = QUERIES,
        timeouts: Timeouts | None = None,
    ):
        self.driver = driver
        self.database = database
        self.retry = retry or RetryPolicy()
        self.timeouts = timeouts or Timeouts()
        self.queries = queries
        self._bookmarks = neo4j.GraphDatabase.bookmark_manager()

    def _session(self, mode: str) -> neo4j.Session:
        return self.driver.session(database=self.database, default_access_mode=mode,
                                   bookmark_manager=self._bookmarks)

    def _attempts(self, label: str, idempotent: bool, timeout: float | None,
                  body: Callable[[], T]) -> T:
        """Run ``body`` until it succeeds, retrying what ``retryable`` allows within the
        policy; a failure leaves as the graphmem error that says what happened."""
        policy, began, tries, timed_out = self.retry, time.monotonic(), 0, []

        def again(exc: BaseException) -> bool:
            if getattr(exc, "code", None) in _TIMED_OUT:  # once: see the module docstring
                timed_out.append(exc)
                return len(timed_out) == 1
            return retryable(exc, idempotent)

        retrying = Retrying(
            retry=retry_if_exception(again),
            stop=stop_after_attempt(policy.attempts) | stop_after_delay(policy.seconds),
            wait=_backoff(policy),
            before_sleep=lambda state: log.warning(
                "%s: retry %d after %s", label, state.attempt_number,
                describe(state.outcome.exception())),
            reraise=True,
        )
        try:
            for attempt in retrying:
                with attempt:
                    tries = attempt.retry_state.attempt_number
                    return body()
        except GraphmemError:
            raise
        except (Neo4jError, DriverError) as exc:
            raise _failure(label, exc, idempotent, timeout, tries, time.monotonic() - began) from exc
        raise AssertionError("unreachable: tenacity re-raises the last error")  # pragma: no cover

    def _transaction(self, mode: str, work: Callable[[Tx], T], label: str, idempotent: bool,
                     timeout: float, commit: bool = True) -> T:
        def body() -> T:
            with self._session(mode) as session:
                tx = session.begin_transaction(timeout=timeout, metadata={"graphmem": label})
                try:
                    result = work(Tx(tx, self.queries))
                    tx.commit() if commit else tx.rollback()
                except BaseException:
                    if not tx.closed():
                        tx.rollback()
                    raise
                return result

        return self._attempts(label, idempotent, timeout, body)

    def read(self, work: Callable[[Tx], T], label: str = "read") -> T:
        """Run ``work`` in a read transaction (routed to a reader on a cluster)."""
        return self._transaction(neo4j.READ_ACCESS, work, label, True, self.timeouts.read)

    def read_each(self, work: Callable[[Tx], T], label: str = "read") -> T:
        """Run ``work`` with each statement in its own auto-commit read transaction.

        A statement is then one round trip (run and pull), where an explicit transaction
        adds two (begin, commit) - most of a short read's time on a busy machine. For
        reads only, and only those whose statements need nothing in common but their
        parameters: Neo4j reads are read-committed, so a later statement of one
        transaction sees later commits just the same. Routing, bookmarks (read-your-
        writes), timeout and retries are those of ``read``.
        """
        timeout = self.timeouts.read

        def body() -> T:
            with self._session(neo4j.READ_ACCESS) as session:
                return work(Tx(session, self.queries, timeout))

        return self._attempts(label, True, timeout, body)

    def write(self, work: Callable[[Tx], T], label: str = "write", *, idempotent: bool = False) -> T:
        """Run ``work`` in one write transaction: all of it commits, or none of it.

        ``idempotent``: running ``work`` again after a commit that landed records nothing
        twice, so a commit whose acknowledgement was lost is retried; otherwise it
        raises CommitUnknownError.
        """
        return self._transaction(neo4j.WRITE_ACCESS, work, label, idempotent, self.timeouts.write)

    def rolled_back(self, work: Callable[[Tx], T], label: str = "probe") -> T:
        """Run ``work`` in a write transaction that is always rolled back: to see what
        statements would write, writing nothing (graphmem.probe)."""
        return self._transaction(neo4j.WRITE_ACCESS, work, label, True, self.timeouts.write, commit=False)

    def read_one(self, name: str, /, **params: Any) -> dict[str, Any] | None:
        """Shorthand: one named read statement, its single record or None."""
        return self.read(lambda tx: tx.one(name, **params), name)

    def read_all(self, name: str, /, **params: Any) -> list[dict[str, Any]]:
        """Shorthand: one named read statement, all its records."""
        return self.read(lambda tx: tx.run(name, **params), name)

    def schema(self, name: str, /, **params: Any) -> None:
        """Run one schema statement in its own auto-commit transaction (DDL needs one),
        without a time limit (index population is waited for by ``admin.await_indexes``)."""

        def body() -> None:
            with self._session(neo4j.WRITE_ACCESS) as session:
                Tx(session, self.queries, 0).run(name, **params)

        self._attempts(name, True, 0, body)


def _backoff(policy: RetryPolicy) -> Callable[[Any], float]:
    """Jittered exponential backoff cut to what is left of ``policy.seconds``: the stop
    condition is checked only after a try, so an uncut sleep (up to ``max_wait``) would
    start a try after the policy's time has run out."""
    jittered = wait_random_exponential(multiplier=policy.first_wait, max=policy.max_wait)

    def wait(state: Any) -> float:
        return max(0.0, min(jittered(state), policy.seconds - (state.seconds_since_start or 0.0)))

    return wait


def _failure(label: str, exc: Neo4jError | DriverError, idempotent: bool, timeout: float | None,
             tries: int, seconds: float) -> GraphmemError:
    """The graphmem error for a unit of work that failed for good with ``exc``."""
    statement = getattr(exc, "graphmem_statement", None)
    if isinstance(exc, IncompleteCommit) and not idempotent:
        return CommitUnknownError(label, exc)
    if retryable(exc, idempotent):  # it was retried until the policy stopped it
        return UnavailableError(label if statement in (None, label) else f"{label} ({statement})",
                                exc, tries, seconds)
    where = statement or "(commit)"  # outside any statement: at begin or commit
    if getattr(exc, "code", None) in _TIMED_OUT:
        return TransactionTimeoutError(where, exc, timeout, label, tries)
    return StatementError(where, exc, label)
