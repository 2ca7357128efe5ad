"""Rows that cannot be facts: kept out of the load, and recorded.

A companyfacts row with no ``end`` or ``accn``, a value that is not a number, an
impossible date, a value or identifier beyond graphmem's bounds ... cannot become a
fact version. Refusing the whole file for one such row would refuse most real files, so
the row is *quarantined* instead: left out, and described by a :class:`Quarantined`
record (file, ``taxonomy:concept``, unit, row index, accession, reason, detail). Every
other row of the filing still loads.

The reasons are a small fixed vocabulary (:data:`REASONS`), so that a load can count
them; ``detail`` says exactly what was wrong with that row. A load prints the counts
by reason, writes every record as one JSON line where the user asks
(:class:`JsonLines`), and its report names the filings that had quarantined rows.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import IO

from pydantic import BaseModel, ConfigDict

#: Why a row was kept out. A row is quarantined for the first of these it meets.
REASONS = {
    "not-an-object": "the row is not a JSON object",
    "missing-key": "a required key (end, val, accn, form, filed) is absent",
    "not-a-number": "val is not a finite number",
    "bad-date": "end, start or filed is not a real YYYY-MM-DD date (or filed is one no filing has: 9999-12-31)",
    "impossible-period": "start is after end",
    "bad-accession": "accn is not an accession number (0000000000-00-000000)",
    "bad-form": "form is not a non-empty string",
    "filing-mismatch": "the form or filed date differs from an earlier row of the same accession",
    "bad-unit": "the unit id cannot be a unit (empty, whitespace or control characters, too long)",
    "out-of-bounds": "graphmem's own checks refuse the fact (a value, identifier or date beyond its bounds)",
    "bad-acceptance": "a submissions row whose accession number or acceptance time cannot be read "
                      "(that filing falls back to its filed date)",
}


class Quarantined(BaseModel):
    """One row kept out of a load, and why. ``row`` is the row's index in its unit's list
    (for a submissions file: in its column lists); ``accession`` is the row's filing
    when it names one (``accn`` is an accession number)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    file: str
    attribute: str | None = None
    unit: str | None = None
    row: int
    accession: str | None = None
    reason: str
    detail: str


#: Where quarantine records go as they are made (a JSON Lines file, a list, a counter).
Sink = Callable[[Quarantined], None]


class JsonLines:
    """Writes each record as one JSON object per line (``--quarantine FILE``); a context
    manager, and a :data:`Sink`."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._out: IO[str] | None = self.path.open("w", encoding="utf-8")
        self.written = 0

    def __call__(self, record: Quarantined) -> None:
        assert self._out is not None, "closed"
        self._out.write(json.dumps(record.model_dump(), ensure_ascii=False) + "\n")
        self.written += 1

    def close(self) -> None:
        if self._out is not None:
            self._out.close()
            self._out = None

    def __enter__(self) -> JsonLines:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()
