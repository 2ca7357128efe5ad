"""Keeping the search index in step with writes.

Each memory node carries ``search_text`` (what a search can find it by) and
``search_scope`` (a token of its scope, so the full-text index itself skips other
scopes). Both are derived data, written by named statements from what the graph holds,
never edited by hand: a fact version's by the statements that create it or add
evidence to it (``fact.create_versions``, ``fact.add_evidence``), and rebuilt here
after an entity's names change, after an experience or task state is written, and
after an erasure (an erased memory drops out of the index because its text becomes
null).

This module imports nothing but the transaction runner and values, so the fact
repository can call it without an import cycle.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .db import Tx
from .models import Entity, Scope
from .values import digest


def scope_token(scope: Scope) -> str:
    """The scope as one index token: a hash, so no scope value reaches Lucene's syntax."""
    return digest(scope.id, prefix="s", size=32)


def _params(scope: Scope) -> dict[str, str]:
    return {"tenant": scope.tenant, "scope": scope.id, "scope_token": scope_token(scope)}


def index_facts(tx: Tx, scope: Scope, version_ids: Iterable[str]) -> None:
    """Rebuild the search text of these fact versions (an erased one leaves the index)."""
    ids = sorted(set(version_ids))
    if ids:
        tx.run("search.index_facts", version_ids=ids, **_params(scope))


def index_memories(tx: Tx, scope: Scope, memory_ids: Iterable[str]) -> None:
    """Rebuild the search text of these experiences and task states."""
    ids = sorted(set(memory_ids))
    if ids:
        tx.run("search.index_memories", memory_ids=ids, **_params(scope))


def entity_before(tx: Tx, scope: Scope, uid: str) -> dict[str, Any] | None:
    """An entity's searchable fields as stored, read before an update changes them."""
    return tx.one("search.entity_text", uid=uid, tenant=scope.tenant, scope=scope.id)


def reindex_entity(tx: Tx, scope: Scope, uid: str, before: dict[str, Any] | None,
                   entity: Entity) -> None:
    """After ``put_entity``: rebuild what mentions the entity, only if its names changed.

    Loaders re-put the same entity for every filing; rebuilding all its facts each time
    would make loading quadratic, so an unchanged entity costs one small read.
    """
    if before is None or (before["name"], before["kind"], list(before["aliases"] or [])) == (
        entity.name, entity.kind, list(entity.aliases)
    ):
        return
    row = tx.one("search.about_entity", uid=uid, tenant=scope.tenant, scope=scope.id)
    if row:
        index_facts(tx, scope, row["version_ids"])
        index_memories(tx, scope, row["memory_ids"])
