"""The input of Neo4j's offline importer (``neo4j-admin database import full``) for
graphmem's graph: one CSV file per label and relationship type, with typed headers.

The layouts below are the properties the online statements write (``entity.put``,
``source.create``, ``fact.create_versions``, ``fact.add_evidence``, ``admin.tick``,
``load.mark``),
column for column; tests/test_bootstrap.py holds a bootstrapped graph equal to an
online one, property by property, so a property added online and not here fails it.

How values are written, and why:

* strings are quoted, ``None`` is an unquoted empty field: the importer reads ``""`` as
  an empty string (a fact key's ``definition`` is often ``""``) and an empty field as
  no property at all (what Cypher does with ``SET n.p = null``);
* numbers are unquoted (``repr`` of a float round-trips to the same double), dates and
  datetimes are ISO text, which the importer parses as ``date`` / ``datetime``;
* arrays are joined with U+001F (``--array-delimiter``), a control character no alias
  contains (an alias that does is refused). The importer cannot write an empty list:
  an entity without aliases, or a key without flagged versions (a build's keys have
  none), gets no property, and ``bootstrap.entity_aliases`` / ``bootstrap.key_flags``
  set ``[]`` after the import, as ``entity.put`` / ``fact.create_versions`` would have.
* when a field holds a line break, the importer is told ``--multiline-fields=true``
  (its slower parser, for every file; rare in filings). Its per-file mode (``v2``)
  refused such a file here ("found CR outside a text cell", with no CR in it).
* the importer reads a file in buffers of 4 Mi (Java) characters and fails on a row
  longer than one ("no newline character in the whole buffer"): a version's search
  text grows with each evidence (its source's title), so a long-lived fact can reach
  that. The longest row is measured as it is written and the importer's
  ``--read-buffer-size`` raised to hold it.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from .errors import InputError

ARRAY_DELIMITER = "\x1f"
READ_BUFFER = 4 * 2**20  # the importer's default --read-buffer-size, in Java (UTF-16) characters


@dataclass(frozen=True)
class Layout:
    """One importer input file: nodes of a label, or relationships of a type."""

    file: str
    kind: str  # "nodes" or "relationships"
    label: str
    header: tuple[str, ...]  # "name", "name:type", "uid:ID(Group)", ":START_ID(Group)" ...

    @cached_property
    def names(self) -> tuple[str, ...]:
        """The property (or id) name of each column, as rows give them."""
        return tuple(h.split(":")[0] or h for h in self.header)

    @cached_property
    def types(self) -> tuple[str, ...]:
        """The importer type of each column (``string`` when the header names none)."""
        return tuple(h.split(":", 1)[1] if ":" in h else "string" for h in self.header)


ENTITY = Layout("entities.csv", "nodes", "Entity", (
    "uid:ID(Entity)", "tenant", "scope", "id", "name", "kind", "aliases:string[]", "recorded_at:datetime"))
SOURCE = Layout("sources.csv", "nodes", "Source", (
    "uid:ID(Source)", "tenant", "scope", "id", "kind", "authority", "authority_rank:long", "publisher",
    "uri", "title", "meta", "available_by:datetime", "recorded_at:datetime"))
FACT_KEY = Layout("keys.csv", "nodes", "FactKey", (
    "uid:ID(FactKey)", "tenant", "scope", "entity", "attribute", "unit", "definition", "period",
    "period_start:date", "period_end:date", "revision:long", "tiers:long[]", "feeds:string[]", "flagged:string[]",
    "written_at:datetime"))
FACT = Layout("facts.csv", "nodes", "Fact", (
    "version_id:ID(Fact)", "tenant", "scope", "key_uid", "value", "value_type", "value_num:double",
    "value_hash", "event_time:date", "period_start:date", "available_by:datetime", "recorded_at:datetime",
    "revision:long", "search_scope", "search_text"))
CLOCK = Layout("clocks.csv", "nodes", "GraphmemClock", ("id:ID(GraphmemClock)", "last:datetime", "lock:boolean"))
LOAD_MARK = Layout("load_marks.csv", "nodes", "LoadMark", (
    "uid:ID(LoadMark)", "tenant", "scope", "kind", "id", "digest", "report", "recorded_at:datetime"))
ABOUT = Layout("about.csv", "relationships", "ABOUT", (":START_ID(FactKey)", ":END_ID(Entity)"))
VERSION_OF = Layout("version_of.csv", "relationships", "VERSION_OF", (":START_ID(Fact)", ":END_ID(FactKey)"))
EVIDENCED_BY = Layout("evidenced_by.csv", "relationships", "EVIDENCED_BY", (
    ":START_ID(Fact)", ":END_ID(Source)", "idem", "available_by:datetime", "recorded_at:datetime", "key_uid",
    "publisher", "top:long"))

LAYOUTS = (ENTITY, SOURCE, FACT_KEY, FACT, CLOCK, LOAD_MARK, ABOUT, VERSION_OF, EVIDENCED_BY)


_BATCH = 5000  # rows formatted at once, then checked and written


class _File:
    """One open input file: rows are formatted a batch at a time, then checked for line
    breaks (which make the file multiline) and written."""

    def __init__(self, path: Path, layout: Layout):
        self.path = path
        self.layout = layout
        self.rows = 0
        self.multiline = False
        self.longest = 0  # the longest row written, in code points, its line break included
        self._arrays = [n for n, t in enumerate(layout.types) if t.endswith("[]")]
        self._pending: list[str] = []  # lines
        self._handle = path.open("w", encoding="utf-8", newline="")
        self._handle.write(",".join(layout.header) + "\n")

    def add(self, row: Sequence[Any]) -> None:
        if len(row) != len(self.layout.header):
            raise ValueError(f"{self.layout.file}: {len(row)} values for {len(self.layout.header)} columns")
        self.add_line(self._row(row))

    def flush(self) -> None:
        if not self._pending:
            return
        text = "".join(self._pending)
        self.longest = max(self.longest, *map(len, self._pending))
        if not self.multiline and (text.count("\n") != len(self._pending) or "\r" in text):
            self.multiline = True
        self._handle.write(text)
        self.rows += len(self._pending)
        self._pending.clear()

    def add_line(self, line: str) -> None:
        """One row formatted by the caller (``GraphCsv.add_line``)."""
        self._pending.append(line)
        if len(self._pending) >= _BATCH:
            self.flush()

    def extend(self, path: Path, rows: int, multiline: bool, longest: int) -> None:
        """Append the rows of another file of this layout (written by another GraphCsv)."""
        self.flush()
        self._handle.flush()  # what this file holds so far, then the part's bytes after it
        with path.open("rb") as part:  # as bytes: both are UTF-8, and decoding took half the copy's time
            part.readline()  # its header: a header holds no line break
            shutil.copyfileobj(part, self._handle.buffer, 1 << 20)
        self.rows += rows
        self.multiline = self.multiline or multiline
        self.longest = max(self.longest, longest)

    def _row(self, row: Sequence[Any]) -> str:
        """One line of the file (the module docstring says how each value is written).
        Formatted here rather than by the csv module, which took twice as long for the
        same bytes (QUOTE_NONNUMERIC: a number check and a conversion per field)."""
        out = list(row)
        for n in self._arrays:
            out[n] = _array(row[n], self.layout, n)
        return ",".join(['"' + v.replace('"', '""') + '"' if type(v) is str else _field(v, self.layout, n)
                         for n, v in enumerate(out)]) + "\n"  # text, most fields, without a call

    def close(self) -> None:
        self.flush()
        self._handle.close()


def text(value: str) -> str:
    """A text field as a line holds it (see ``GraphCsv.add_line``): quoted, a quote doubled."""
    return '"' + value.replace('"', '""') + '"'


def field(value: Any, layout: Layout, column: int) -> str:
    """Any value of ``layout``'s ``column`` as a line holds it (an array as ``array``)."""
    if layout.types[column].endswith("[]"):
        joined = _array(value, layout, column)
        return "" if joined is None else text(joined)
    return _field(value, layout, column)


def _field(value: Any, layout: Layout, column: int) -> str:
    """A value as the importer reads it: text quoted (a quote doubled), a boolean as quoted
    ``true``/``false``, a number as Python writes it (a float's ``repr`` round-trips),
    None as an empty unquoted field (no property)."""
    if isinstance(value, str):
        return '"' + value.replace('"', '""') + '"'
    if value is None:
        return ""
    if value is True or value is False:
        return '"true"' if value else '"false"'
    if isinstance(value, float):
        return float.__repr__(value)  # numpy's float64 is a float whose own repr names its type
    if isinstance(value, int):
        return int.__repr__(value)
    raise TypeError(f"{layout.file}: column {layout.names[column]}: a build writes text, numbers, booleans "
                    f"and None, not {type(value).__name__}")


def _array(items: Iterable[str | int] | None, layout: Layout, column: int) -> str | None:
    items = [str(item) for item in items or ()]
    if not items:
        return None
    for item in items:
        if ARRAY_DELIMITER in item:
            raise InputError(f"{layout.label}.{layout.names[column]}",
                             f"{item!r} contains U+001F, the importer's array delimiter")
    return ARRAY_DELIMITER.join(items)


@dataclass(frozen=True)
class ImportInput:
    """The files written, ready for the importer: what ``import_args`` names."""

    folder: Path
    rows: dict[str, int]  # by file name
    multiline: tuple[str, ...]  # file names with a line break inside a field
    longest: int = 0  # the longest row of any file, in code points

    def import_args(self, folder: str | None = None) -> list[str]:
        """The importer's arguments for these files (``folder``: where the importer will
        see them, e.g. ``/import`` inside a container; by default where they are, named
        whole: the importer reads a relative name from its own working folder)."""
        base = folder or str(self.folder.absolute())
        args = ["--array-delimiter=U+001F", "--bad-tolerance=0"]
        for layout in LAYOUTS:
            if layout.file in self.rows:
                args.append(f"--{layout.kind}={layout.label}={base}/{layout.file}")
        if self.multiline:  # v1, for every file: v2's per-file mode misreads some of these files
            args.append("--multiline-fields=true")
        if 2 * self.longest > READ_BUFFER:  # a code point takes at most two Java characters
            args.append(f"--read-buffer-size={2 * self.longest}")
        return args


class GraphCsv:
    """Writes rows into the importer's input files in ``folder`` (one per layout)."""

    def __init__(self, folder: Path):
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self._files: dict[str, _File] = {}

    def add(self, layout: Layout, row: Sequence[Any]) -> None:
        """One node or relationship: its values in the layout's column order."""
        self._file(layout).add(row)

    def add_line(self, layout: Layout, line: str) -> None:
        """One node or relationship already formatted as a line of the layout's file, its
        fields as :func:`field` and :func:`text` write them and the line break: for a
        writer that knows its values (ids and ISO times hold no quote to double) and
        writes many rows, where a field at a time took twice as long."""
        self._file(layout).add_line(line)

    def _file(self, layout: Layout) -> _File:
        file = self._files.get(layout.file)
        if file is None:
            file = self._files[layout.file] = _File(self.folder / layout.file, layout)
        return file

    def extend(self, part: ImportInput) -> None:
        """Append the rows of another GraphCsv's closed files (a part of this build made
        elsewhere, graphmem.loaders.bootstrap), file by file."""
        by_file = {layout.file: layout for layout in LAYOUTS}
        for name, rows in part.rows.items():
            self._file(by_file[name]).extend(part.folder / name, rows, name in part.multiline, part.longest)

    def close(self) -> ImportInput:
        """Flush and close every file; what the importer needs to read them."""
        for file in self._files.values():
            file.close()
        return ImportInput(
            folder=self.folder,
            rows={name: f.rows for name, f in self._files.items()},
            multiline=tuple(name for name, f in self._files.items() if f.multiline),
            longest=max((f.longest for f in self._files.values()), default=0))
