"""``graphmem eval``: the evaluation protocol as a command (docs/DESIGN.md, *Evaluation*).

- counterexamples.py: the minimum counter-example set, by layer, in a throwaway tenant;
- queries.py: a user's fixed query set scored on each retrieval rung;
- locomo.py: the LoCoMo benchmark's conversations, loaded and scored on each rung.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator
from typing import Any

from ..errors import InputError

RUNGS = ("text", "semantic", "hybrid")


def rungs(embedder: Any) -> tuple[str, ...]:
    """The rungs a configuration offers: full text always, the others with an embedder."""
    return RUNGS if embedder is not None else RUNGS[:1]


@contextlib.contextmanager
def throwaway(memory: Any, what: str) -> Iterator[str]:
    """A fresh tenant for an evaluation, removed afterwards whatever happens."""
    tenant = f"eval-{what}-{uuid.uuid4().hex[:12]}"
    try:
        yield tenant
    finally:
        drop(memory, tenant)


def drop(memory: Any, tenant: str) -> None:
    if not tenant.startswith("eval-"):
        raise InputError("tenant", f"{tenant}: only an evaluation's own tenant (eval-...) is removed")
    memory.db.schema("eval.drop_tenant", tenant=tenant)
