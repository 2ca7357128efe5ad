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


def migrate(db: Database) -> int:
    """Apply every migration (each is idempotent), then record the version; return it."""
    for _, name in migrations():
        try:
            db.schema(name)
        except StatementError as exc:
            if not any(tag in str(exc.code) for tag in _ALREADY):
                raise
    db.schema("admin.await_indexes")
    row = db.write(lambda tx: tx.one("admin.record_schema_version", version=latest()),
                   "migrate", idempotent=True)
    return int(row["version"])
