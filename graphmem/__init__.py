"""graphmem: a bitemporal knowledge-graph memory for agents and analysts, on Neo4j."""

from .db import RetryPolicy
from .errors import (
    ConcurrentWriteError,
    GraphmemError,
    InputError,
    NotFoundError,
    ScopeError,
    StatementError,
)
from .memory import Memory
from .models import (
    Answer,
    Authority,
    Entity,
    Evidence,
    Explain,
    FactIn,
    FactVersion,
    Period,
    Require,
    Scope,
    Source,
    WriteReport,
)

__all__ = [
    "Answer",
    "Authority",
    "ConcurrentWriteError",
    "Entity",
    "Evidence",
    "Explain",
    "FactIn",
    "FactVersion",
    "GraphmemError",
    "InputError",
    "Memory",
    "NotFoundError",
    "Period",
    "Require",
    "RetryPolicy",
    "Scope",
    "ScopeError",
    "Source",
    "StatementError",
    "WriteReport",
]
