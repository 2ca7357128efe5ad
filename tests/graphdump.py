"""A tenant's graph in a canonical form, to hold two graphs equal: every node with its
labels and typed properties, every relationship with its type, ends and properties.

From Neo4j (``from_neo4j``: what is stored, each value with its Cypher type) or from an
offline build's rows (``from_rows``: the values handed to the importer, with the types
its layouts declare - graphmem/importcsv.py). ``recorded_at`` (and the tenant clock's
``last``, a key's ``written_at``) are transaction times: a bootstrap's are its own clock's, an online load's
the server's, so they can only differ; ``ranked`` replaces each by its rank among the
graph's transaction times, which must then be equal (same order, same grouping into
transactions).
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from graphmem.importcsv import ARRAY_DELIMITER, Layout

# a node's identity across two graphs: its uid, version id or (a clock) id
_NATURAL = "coalesce(n.uid, n.version_id, n.id)"
_TIMES = {"recorded_at", "last", "written_at"}

Value = tuple[str, Any]  # (Cypher type, canonical value)


@dataclass
class Dump:
    nodes: dict[tuple[str, str], dict[str, Value]]  # (labels, id) -> properties
    relationships: set[tuple[str, str, str, tuple[tuple[str, Value], ...]]]

    def ranked(self) -> Dump:
        """Transaction times replaced by their rank among the graph's transaction times."""
        stamps = {v for props in self.nodes.values() for k, v in props.items() if k in _TIMES}
        stamps |= {v for *_, props in self.relationships for k, v in props if k in _TIMES}
        rank = {stamp: ("rank", n) for n, stamp in enumerate(sorted(stamps, key=lambda s: s[1]))}

        def ranked(props: Iterable[tuple[str, Value]]) -> list[tuple[str, Value]]:
            return [(k, rank[v] if k in _TIMES else v) for k, v in props]

        return Dump({key: dict(ranked(props.items())) for key, props in self.nodes.items()},
                    {(t, a, b, tuple(ranked(props))) for t, a, b, props in self.relationships})

    def differences(self, other: Dump, limit: int = 10) -> list[str]:
        """What differs, for an assertion message (empty when equal)."""
        out = []
        for key in sorted(self.nodes.keys() | other.nodes.keys()):
            mine, theirs = self.nodes.get(key), other.nodes.get(key)
            if mine != theirs:
                if mine is None or theirs is None:
                    out.append(f"node {key}: only in {'second' if mine is None else 'first'}")
                else:
                    diff = {k: (mine.get(k), theirs.get(k)) for k in mine.keys() | theirs.keys()
                            if mine.get(k) != theirs.get(k)}
                    out.append(f"node {key}: {diff}")
        for rel in sorted(self.relationships ^ other.relationships, key=str)[:limit]:
            out.append(f"relationship only in {'first' if rel in self.relationships else 'second'}: {rel}")
        return out[:limit]


def _value(value: Any, cypher_type: str) -> Value:
    if hasattr(value, "to_native"):
        value = value.to_native()
    if isinstance(value, dt.datetime):
        return cypher_type, value.astimezone(dt.UTC).isoformat()
    if isinstance(value, dt.date):
        return cypher_type, value.isoformat()
    if isinstance(value, list):
        return cypher_type, tuple(value)
    return cypher_type, value


def from_neo4j(driver, tenant: str, database: str = "neo4j") -> Dump:
    with driver.session(database=database) as session:
        nodes = {}
        for row in session.run(
                f"MATCH (n) WHERE n.tenant = $tenant OR (n:GraphmemClock AND n.id = $tenant) "
                f"RETURN labels(n) AS labels, {_NATURAL} AS id, properties(n) AS props, "
                f"[k IN keys(n) | [k, valueType(n[k])]] AS types", tenant=tenant):
            types = dict(row["types"])
            nodes[":".join(sorted(row["labels"])), row["id"]] = {
                k: _value(v, types[k]) for k, v in row["props"].items()}
        relationships = set()
        for row in session.run(
                f"MATCH (n)-[r]->(m) WHERE n.tenant = $tenant "
                f"RETURN type(r) AS type, {_NATURAL} AS a, coalesce(m.uid, m.version_id, m.id) AS b, "
                f"properties(r) AS props, [k IN keys(r) | [k, valueType(r[k])]] AS types", tenant=tenant):
            types = dict(row["types"])
            relationships.add((row["type"], row["a"], row["b"], tuple(sorted(
                (k, _value(v, types[k])) for k, v in row["props"].items()))))
    return Dump(nodes, relationships)


_TYPES = {"string": "STRING NOT NULL", "long": "INTEGER NOT NULL", "double": "FLOAT NOT NULL",
          "boolean": "BOOLEAN NOT NULL", "date": "DATE NOT NULL", "datetime": "ZONED DATETIME NOT NULL",
          "string[]": "LIST<STRING NOT NULL> NOT NULL", "long[]": "LIST<INTEGER NOT NULL> NOT NULL"}


def _typed(value: Any, importer_type: str) -> Value:
    if importer_type.startswith("ID("):
        return _TYPES["string"], value
    if importer_type == "datetime":
        return _TYPES[importer_type], dt.datetime.fromisoformat(value).astimezone(dt.UTC).isoformat()
    if importer_type.endswith("[]"):  # [] as bootstrap.entity_aliases / key_flags set it after the import
        return ("LIST<NOTHING> NOT NULL", ()) if not value else (_TYPES[importer_type], tuple(value))
    return _TYPES[importer_type], value


_FIELD = re.compile(r'"((?:[^"]|"")*)"|([^,"\n]*)')


def _read_line(layout: Layout, line: str) -> tuple[Any, ...]:
    """A line's values as the importer reads them (graphmem.importcsv's docstring): quoted
    text with its quotes doubled, an empty field as None (no property), a number by its
    column's type, an array split at U+001F."""
    assert line.endswith("\n"), line
    values: list[Any] = []
    at = 0
    for kind in layout.types:
        found = _FIELD.match(line, at)
        quoted, plain = found.group(1), found.group(2)
        if quoted is not None:
            value: Any = quoted.replace('""', '"')
        elif plain == "":
            value = None
        else:
            value = int(plain) if kind == "long" else float(plain)
        if kind.endswith("[]"):  # none: [] once the finish has run (bootstrap.entity_aliases, key_flags)
            value = [] if value is None else [int(item) if kind == "long[]" else item
                                              for item in value.split(ARRAY_DELIMITER)]
        values.append(value)
        at = found.end() + 1
        assert line[at - 1] in ",\n", (layout.file, line)
    assert at == len(line), (layout.file, line)
    return tuple(values)


class RowSink:
    """A build's sink that keeps its rows by layout (for small test builds)."""

    def __init__(self) -> None:
        self.rows: dict[Layout, list[Sequence[Any]]] = {}

    def add(self, layout: Layout, row: Sequence[Any]) -> None:
        self.rows.setdefault(layout, []).append(tuple(row))

    def add_line(self, layout: Layout, line: str) -> None:
        """A row given as a line of the importer's file: read back as the importer reads it."""
        self.add(layout, _read_line(layout, line))

    def dump(self, tenant: str) -> Dump:
        """The rows of ``tenant`` as the importer stores them (None: no property)."""
        nodes, relationships = {}, set()
        for layout, rows in self.rows.items():
            columns = list(zip(layout.names, layout.types, strict=True))
            for row in rows:
                props = {name: _typed(value, kind) for (name, kind), value in zip(columns, row, strict=True)
                         if value is not None and not name.startswith(":")}
                if layout.kind == "nodes":
                    if props.get("tenant", props.get("id"))[1] == tenant:
                        nodes[layout.label, row[0]] = props
                else:
                    relationships.add((layout.label, row[0], row[1], tuple(sorted(props.items()))))
        owned = {key[1] for key in nodes}
        return Dump(nodes, {r for r in relationships if r[1] in owned})
