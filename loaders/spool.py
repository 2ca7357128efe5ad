"""A file's validated rows, kept on disk grouped by filing while it is being loaded.

A companyfacts document is ordered by concept, but graphmem writes it filing by filing
(in order of publication), so every row must be read before the first filing can be
written. Holding the parsed document in Python costs several times the file's size
(a 1M-row file: about 1 GB); the spool keeps the rows in a temporary SQLite database
instead (stdlib, on disk, a few MB of page cache), so a load's memory stays flat in the
size of the file: what is in Python at any time is one filing's rows.

It also keeps the one value per fact key that the re-rounding rule compares against
(``current``), for the same reason: one per key is one per row of a large file.

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
    """Rows by accession in a temporary database that is deleted on close."""

    def __init__(self) -> None:
        self._dir = tempfile.TemporaryDirectory(prefix=f"{_PREFIX}{os.getpid()}-")
        self._db = sqlite3.connect(Path(self._dir.name) / "rows.sqlite3")
        self._db.executescript("PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF;" + _SCHEMA)
        self._pending: list[tuple[str, str, str, str, str | None, str, str, int]] = []

    def __enter__(self) -> Spool:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        self._db.close()
        self._dir.cleanup()

    def add(self, accession: str, row: Row) -> None:
        """Keep one row of ``accession`` (written in batches)."""
        self._pending.append((accession, row.taxonomy, row.concept, row.unit, row.start, row.end,
                              str(row.value), row.index))
        if len(self._pending) >= _BATCH:
            self._flush()

    def _flush(self) -> None:
        self._db.executemany("INSERT INTO rows VALUES (?, ?, ?, ?, ?, ?, ?, ?)", self._pending)
        self._pending.clear()

    def seal(self) -> None:
        """All rows are in: index them by accession for reading back."""
        if self._pending:
            self._flush()
        self._db.execute("CREATE INDEX rows_by_accession ON rows (accession)")
        self._db.commit()

    def rows(self, accession: str) -> Iterator[Row]:
        """The rows of one accession, in file order."""
        cursor = self._db.execute(
            "SELECT taxonomy, concept, unit, start, end, value, idx FROM rows WHERE accession = ? ORDER BY rowid",
            (accession,))
        for taxonomy, concept, unit, start, end, value, idx in cursor:
            yield Row(taxonomy, concept, unit, start, end, Decimal(value), idx)

    def current(self, keys: Iterable[str]) -> dict[str, Decimal]:
        """The value last kept for each of these keys (those that have one)."""
        out: dict[str, Decimal] = {}
        wanted = list(keys)
        for start in range(0, len(wanted), _LOOKUP):
            part = wanted[start:start + _LOOKUP]  # only the count of placeholders varies
            query = f"SELECT key, value FROM current WHERE key IN ({', '.join('?' * len(part))})"
            out.update((key, Decimal(value)) for key, value in self._db.execute(query, part))
        return out

    def keep_current(self, values: dict[str, Decimal]) -> None:
        """Remember each key's latest value (after a filing is planned)."""
        self._db.executemany("INSERT OR REPLACE INTO current VALUES (?, ?)",
                             [(key, str(value)) for key, value in values.items()])
