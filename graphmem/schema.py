"""Schema migrations: the numbered ``schema.NNN.*`` statements of cypher/schema.cypher.

Each migration is an idempotent ``... IF NOT EXISTS`` command, so applying it twice,
or from two processes at once, is safe; the highest applied number is recorded on a
``(:GraphmemSchema {id: 'graphmem'})`` node and only ever moves forward.
"""

from __future__ import annotations

import re

from .db import Database
from .errors import StatementError
from .queries import QUERIES

_NUMBER = re.compile(r"^schema\.(\d+)\.")
_DDL = re.compile(r"^\s*(CREATE|DROP)\b")
_CREATED = re.compile(r"^\s*CREATE\s+(?:\w+\s+)?(?:INDEX|CONSTRAINT)\s+(\w+)")
_DROPPED = re.compile(r"^\s*DROP\s+(?:INDEX|CONSTRAINT)\s+(\w+)")
# A racing process created the same rule between our IF NOT EXISTS check and commit.
_ALREADY = ("EquivalentSchemaRuleAlreadyExists", "ConstraintAlreadyExists", "IndexAlreadyExists")


def migrations() -> list[tuple[int, str]]:
    """All migrations as ``(number, statement name)``, in the order they apply."""
    found = []
    for name in QUERIES.group("schema"):
        match = _NUMBER.match(name)
        if match is None:
            raise ValueError(f"schema statement {name!r} has no number")
        found.append((int(match[1]), name))
    return sorted(found)


def latest() -> int:
    return migrations()[-1][0]


def current_version(db: Database) -> int:
    row = db.read_one("admin.schema_version")
    return int(row["version"]) if row else 0


def fresh() -> list[str]:
    """The migrations a database needs whose data was all written in the current shape
    (one built offline, graphmem.offline): the schema objects alone. A data migration
    (a statement that is not CREATE or DROP) upgrades what was written before it, and
    such a database has nothing of that; an index that a later migration drops would
    be populated over the whole store only to be thrown away."""
    names = [name for _, name in migrations()]
    dropped = {m[1] for name in names if (m := _DROPPED.match(QUERIES[name]))}
    return [name for name in names if _DDL.match(QUERIES[name])
            and not ((m := _CREATED.match(QUERIES[name])) and m[1] in dropped)]


def apply(db: Database, names: list[str] | None = None) -> None:
    """Apply these migrations (by default every one; each is idempotent) in order. The
    indexes they create populate in the background: :func:`complete` waits for them."""
    for name in names if names is not None else [name for _, name in migrations()]:
        try:
            db.schema(name)
        except StatementError as exc:
            if not any(tag in str(exc.code) for tag in _ALREADY):
                raise


def complete(db: Database) -> int:
    """Wait until every index is online, then record the latest version; return it."""
    db.schema("admin.await_indexes")
    row = db.write(lambda tx: tx.one("admin.record_schema_version", version=latest()),
                   "migrate", idempotent=True)
    return int(row["version"])


def migrate(db: Database) -> int:
    """Apply every migration, wait for the indexes, record the version; return it."""
    apply(db)
    return complete(db)
