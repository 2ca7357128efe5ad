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
    """`expected_revision` did not match the key's revision at write time."""

    def __init__(self, key: str, expected: int, actual: int):
        super().__init__(
            f"fact key {key}: expected revision {expected}, found {actual}; "
            "re-read the key and decide again"
        )
        self.key = key
        self.expected = expected
        self.actual = actual


class StatementError(GraphmemError):
    """A non-transient database error, with the named statement that raised it.

    The driver's exception stays available as ``__cause__`` and its Neo4j status code
    as ``code``; transient faults are retried and never become this.
    """

    def __init__(self, statement: str, cause: BaseException):
        code = getattr(cause, "code", None) or type(cause).__name__
        message = getattr(cause, "message", None) or str(cause)
        super().__init__(f"statement {statement!r} failed: {code}: {message}")
        self.statement = statement
        self.code = code


class QueryCatalogError(GraphmemError):
    """The cypher/ folder is malformed: a missing, duplicate or empty named statement."""


class ServerError(GraphmemError):
    """The local Neo4j launcher could not be built, started, or stopped."""


class EchoError(InputError):
    """Refused as new evidence: the text repeats memory graphmem itself injected into a
    context (a snapshot's rendering, one of its lines, or a memory id it cited)."""
