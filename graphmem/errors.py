"""The exceptions graphmem raises, so callers can tell bad input from a server fault."""

from __future__ import annotations


class GraphmemError(Exception):
    """Base class of every error graphmem raises on purpose."""


class InputError(GraphmemError, ValueError):
    """Input refused before any query ran: names the field (or file/row) and the reason."""

    def __init__(self, where: str, reason: str):
        super().__init__(f"{where}: {reason}")
        self.where = where
        self.reason = reason


class ScopeError(InputError):
    """A call's scope lacks the tenant or a key the deployment requires (fail closed)."""


class NotFoundError(GraphmemError, LookupError):
    """A version, source or entity named by the caller does not exist in this scope."""


class ConcurrentWriteError(GraphmemError):
    """`expected_revision` did not match the revision at write time of ``key`` (what was
    written: ``fact key ...``, ``task ...``)."""

    def __init__(self, key: str, expected: int, actual: int):
        super().__init__(
            f"{key}: expected revision {expected}, found {actual}; re-read it and decide again"
        )
        self.key = key
        self.expected = expected
        self.actual = actual


class StatementError(GraphmemError):
    """A non-transient database error, with the named statement that raised it.

    The driver's exception stays available as ``__cause__`` and its Neo4j status code
    as ``code``; transient faults are retried and never become this.
    """

    def __init__(self, statement: str, cause: BaseException, work: str | None = None):
        within = f"{work}: " if work and work != statement else ""
        super().__init__(f"{within}statement {statement!r} failed: {describe(cause)}")
        self.statement = statement
        self.work = work
        self.code = getattr(cause, "code", None) or type(cause).__name__


class TransactionTimeoutError(StatementError):
    """The server rolled a transaction back because it ran longer than its timeout, twice.

    Nothing of it was written. The first timeout is tried again (the transaction may
    have waited behind a stalled writer, or stalled itself); work too large for its
    timeout ends here. The timeout is ``Timeouts.write`` / ``Timeouts.read``
    (``$GRAPHMEM_WRITE_TIMEOUT`` / ``$GRAPHMEM_READ_TIMEOUT``).
    """

    def __init__(self, statement: str, cause: BaseException, timeout: float | None,
                 work: str | None = None, tries: int = 1):
        super().__init__(statement, cause, work)
        within = f"{work}: " if work and work != statement else ""
        limit = f"its {timeout:g} s timeout" if timeout else "the server's transaction timeout"
        self.args = (f"{within}rolled back by the server at statement {statement!r} after running "
                     f"longer than {limit} ({tries} tr{'ies' if tries > 1 else 'y'}); nothing of "
                     "it was written",)
        self.timeout = timeout


class UnavailableError(GraphmemError):
    """Neo4j stayed unreachable (or the fault stayed transient) for the whole retry policy.

    Raised after the last attempt; the driver's last exception is ``__cause__``. The
    unit of work was rolled back or, for an idempotent write whose commit
    acknowledgement was lost, may have landed: running it again is safe either way.
    """

    def __init__(self, work: str, cause: BaseException, attempts: int, seconds: float):
        super().__init__(f"{work}: gave up after {attempts} attempt(s) in {seconds:.0f} s: "
                         f"{describe(cause)}")
        self.work = work
        self.attempts = attempts


class CommitUnknownError(GraphmemError):
    """The connection was lost while a write that is not idempotent was committing.

    The server may or may not have recorded it, and running it again could record it
    twice (``assert_fact`` with ``expected_revision`` would then see its own write as a
    concurrent one): re-read the state, then decide. Every other write is retried.
    """

    def __init__(self, work: str, cause: BaseException):
        super().__init__(f"{work}: the connection was lost before the commit was acknowledged; "
                         f"it may or may not have been recorded (re-read before writing again): "
                         f"{describe(cause)}")
        self.work = work


def describe(cause: BaseException) -> str:
    """A driver exception as ``Code: message`` (the Neo4j status code when it has one)."""
    code = getattr(cause, "code", None) or type(cause).__name__
    message = getattr(cause, "message", None) or str(cause)
    return f"{code}: {message}"


class QueryCatalogError(GraphmemError):
    """The cypher/ folder is malformed: a missing, duplicate or empty named statement."""


class ServerError(GraphmemError):
    """The local Neo4j launcher could not be built, started, or stopped."""


class EchoError(InputError):
    """Refused as new evidence: the text repeats memory graphmem itself injected into a
    context (a snapshot's rendering, one of its lines, or a memory id it cited)."""
