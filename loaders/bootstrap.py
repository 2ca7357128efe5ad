"""SEC filings into a new database built offline (``graphmem bootstrap``).

The universe loader of ``graphmem load edgar`` (:mod:`.edgar`: the same input layer,
checks, quarantine, availability rules, re-rounding, filing order, combined filings and
load marks) writes through :class:`Offline` into an offline build
(:class:`graphmem.bulk.Build`) instead of a Memory. Each filing and its load mark are
one transaction of the build, as online; once a company's filings are in, the build
decides that company's keys (``flush``), which gives the counts an online load reports
per filing (versions created, evidence added, unchanged) before the company's mark
records its report. The build, the importer and the swap are
:func:`graphmem.offline.bootstrap`'s.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from graphmem.bulk import Build
from graphmem.errors import InputError
from graphmem.models import Entity, FactIn, Scope, Source, WriteReport

from . import edgar
from .quarantine import Sink
from .universe import Company, Document, Skipped


class Offline:
    """An :class:`edgar.Store` over an offline build (see the module docstring)."""

    def __init__(self, build: Build):
        self.build = build

    def scope(self, scope: Any) -> Scope:
        return self.build.scope(scope)

    def marks(self, scope: Scope, uids: list[str]) -> list[dict[str, Any]]:
        return self.build.marks_of(scope, uids)

    def publishers(self, scope: Scope, uids: list[str]) -> dict[str, str]:
        return self.build.publishers(scope, uids)

    def put_entity(self, scope: Scope, entity: Entity) -> None:
        # a company's first write: what a failed company wrote before it failed is decided
        # now, uncounted (online, its filings stay written and its report counts nothing)
        self.build.flush()
        self.build.put_entity(scope, entity)

    def write_filing(self, scope: Scope, source: Source, items: list[FactIn], where: str,
                     mark: dict[str, Any]) -> WriteReport:
        try:
            return self.build.record(scope, sources=[source], items=items, marks=[mark])
        except InputError as exc:  # named as _common.write_filing names it
            raise InputError(f"{where}: {exc.where}", exc.reason) from exc

    def settle(self, report: edgar.CompanyReport) -> edgar.CompanyReport:
        totals = self.build.flush()
        return report.model_copy(update={"versions_created": totals.created, "evidence_added": totals.evidence_added,
                                         "unchanged": totals.unchanged})

    def mark(self, scope: Scope, mark: dict[str, Any]) -> None:
        self.build.mark(scope, mark)


def load(build: Build, scope: Scope, companies: Iterable[Company], *, quarantine: Sink | None = None,
         show_progress: bool | None = None, skipped: Sequence[Skipped] = ()) -> edgar.UniverseReport:
    """A universe into ``build``, as :func:`edgar.load` loads it into a Memory."""
    return edgar.load(Offline(build), scope, companies, quarantine=quarantine, show_progress=show_progress,
                      skipped=skipped)


def load_files(build: Build, scope: Scope, companyfacts: str | Path | Document,
               submissions: Sequence[str | Path | Document] = (), *,
               quarantine: Sink | None = None) -> edgar.CompanyReport:
    """One company's files into ``build``, as :func:`edgar.load_files` (``graphmem load
    companyfacts``) loads them into a Memory: an InputError for files that are not
    companyfacts JSON."""
    return edgar.load_files(Offline(build), scope, companyfacts, submissions, quarantine=quarantine,
                            show_progress=False)
