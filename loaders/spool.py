"""A file's validated rows, kept on disk grouped by filing while it is being loaded.

A companyfacts document is ordered by concept, but graphmem writes it filing by filing
(in order of publication), so every row must be read before the first filing can be
written. Holding the parsed document in Python costs several times the file's size
(a 1M-row file: about 1 GB). The spool holds a file's rows in Python up to
:data:`MEMORY_ROWS` (most companies: about 350 bytes a row), and beyond that moves them
to a temporary SQLite database (stdlib, on disk, a few MB of page cache), so a load's
memory stays bounded whatever the size of the file. Held in Python, the rows skip a
round trip through SQLite that was a tenth of an offline build's time.

It also keeps the one value per fact key that the re-rounding rule compares against
(``current``), in the same place as the rows: one per key is one per row of a large file.

A spool lives in a temporary folder named after its process
(``graphmem-spool-<pid>-...``) and is deleted when it closes. A load that is killed
cannot delete it; :func:`clean_stale`, called when a load starts, deletes the folders
of processes that no longer run.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import sqlite3
import tempfile
from collections.abc import Iterable, Iterator
from decimal import Decimal
from pathlib import Path
from types import TracebackType
from typing import NamedTuple


class Row(NamedTuple):
    """One validated companyfacts row, as the loader needs it back (``index``: its place
    in its unit's list, for a quarantine record)."""

    taxonomy: str
    concept: str
    unit: str
    start: str | None
    end: str
    value: Decimal
    index: int = 0

    @property
    def key(self) -> str:
        """The row's fact key within one company, as the re-rounding state names it."""
        return f"{self.taxonomy}:{self.concept}\x1f{self.unit}\x1f{self.start or ''}\x1f{self.end}"


_SCHEMA = """
CREATE TABLE rows (accession TEXT NOT NULL, taxonomy TEXT NOT NULL, concept TEXT NOT NULL,
                   unit TEXT NOT NULL, start TEXT, end TEXT NOT NULL, value TEXT NOT NULL,
                   idx INTEGER NOT NULL);
CREATE TABLE current (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
"""
_BATCH = 10_000  # rows per INSERT
MEMORY_ROWS = 100_000  # rows held in Python (about 35 MB) before the spool moves to disk
_PREFIX = "graphmem-spool-"
_OWNED = re.compile(rf"^{_PREFIX}(\d+)-")


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: running
        return True
    return True


def clean_stale(folder: str | Path | None = None) -> list[Path]:
    """Delete the spool folders left by processes that no longer run (a killed load);
    return them. Folders of running processes, and any other folder, are left alone."""
    removed = []
    root = Path(folder or tempfile.gettempdir())
    for path in root.glob(f"{_PREFIX}*"):
        match = _OWNED.match(path.name)
        if match and path.is_dir() and int(match[1]) != os.getpid() and not _running(int(match[1])):
            with contextlib.suppress(OSError):
                shutil.rmtree(path)
                removed.append(path)
    return removed
_LOOKUP = 500  # keys per SELECT (SQLite allows 999 parameters at the least)


class Spool:
    """Rows by accession, in memory and then, past :data:`MEMORY_ROWS`, in a temporary
    database; its folder is deleted on close."""

    def __init__(self) -> None:
        self._dir = tempfile.TemporaryDirectory(prefix=f"{_PREFIX}{os.getpid()}-")
        self._db: sqlite3.Connection | None = None  # on disk, once the rows outgrow memory
        self._held: dict[str, list[Row]] = {}  # by accession, in file order, while in memory
        self._current: dict[str, Decimal] = {}
        self._count = 0
        self._pending: list[tuple[str, str, str, str, str | None, str, str, int]] = []

    def __enter__(self) -> Spool:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
        self._dir.cleanup()

    def add(self, accession: str, row: Row) -> None:
        """Keep one row of ``accession``."""
        if self._db is None:
            self._held.setdefault(accession, []).append(row)
            self._count += 1
            if self._count > MEMORY_ROWS:
                self._to_disk()
            return
        self._pending.append((accession, *_stored(row)))
        if len(self._pending) >= _BATCH:
            self._flush()

    def _to_disk(self) -> None:
        """Move what is held to a database on disk, where every later row goes."""
        self._db = sqlite3.connect(Path(self._dir.name) / "rows.sqlite3")
        self._db.executescript("PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF;" + _SCHEMA)
        for accession, rows in self._held.items():
            self._pending.extend((accession, *_stored(row)) for row in rows)
            self._flush()
        self._held.clear()
        self.keep_current(self._current)
        self._current.clear()

    def _flush(self) -> None:
        assert self._db is not None
        self._db.executemany("INSERT INTO rows VALUES (?, ?, ?, ?, ?, ?, ?, ?)", self._pending)
        self._pending.clear()

    def seal(self) -> None:
        """All rows are in: index them by accession for reading back."""
        if self._db is None:
            return
        if self._pending:
            self._flush()
        self._db.execute("CREATE INDEX rows_by_accession ON rows (accession)")
        self._db.commit()

    def rows(self, accession: str) -> Iterator[Row]:
        """The rows of one accession, in file order."""
        if self._db is None:
            yield from self._held.get(accession, ())
            return
        cursor = self._db.execute(
            "SELECT taxonomy, concept, unit, start, end, value, idx FROM rows WHERE accession = ? ORDER BY rowid",
            (accession,))
        for taxonomy, concept, unit, start, end, value, idx in cursor:
            yield Row(taxonomy, concept, unit, start, end, Decimal(value), idx)

    def current(self, keys: Iterable[str]) -> dict[str, Decimal]:
        """The value last kept for each of these keys (those that have one)."""
        if self._db is None:
            return {key: self._current[key] for key in keys if key in self._current}
        out: dict[str, Decimal] = {}
        wanted = list(keys)
        for start in range(0, len(wanted), _LOOKUP):
            part = wanted[start:start + _LOOKUP]  # only the count of placeholders varies
            query = f"SELECT key, value FROM current WHERE key IN ({', '.join('?' * len(part))})"
            out.update((key, Decimal(value)) for key, value in self._db.execute(query, part))
        return out

    def keep_current(self, values: dict[str, Decimal]) -> None:
        """Remember each key's latest value (after a filing is planned)."""
        if self._db is None:
            self._current.update(values)
            return
        self._db.executemany("INSERT OR REPLACE INTO current VALUES (?, ?)",
                             [(key, str(value)) for key, value in values.items()])


def _stored(row: Row) -> tuple[str, str, str, str | None, str, str, int]:
    """A row as the database keeps it (its value as text: a Decimal read back is the same)."""
    return row.taxonomy, row.concept, row.unit, row.start, row.end, str(row.value), row.index
