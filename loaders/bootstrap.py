"""SEC company facts into a new database built offline (``graphmem bootstrap``).

The same loader as ``graphmem load`` (:func:`graphmem.loaders.sec.load`: the same
validation, availability rules, re-rounding and filing order) writes into an offline
build (:class:`graphmem.bulk.Build`) instead of a Memory; after each company the build
decides that company's keys (``flush``), which fills in what the online load reports
per filing: versions created, evidence added, unchanged. The build, the importer and
the swap are :func:`graphmem.offline.bootstrap`'s.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from graphmem.bulk import Build
from graphmem.models import Scope

from . import sec
from ._common import LoadReport

Company = tuple[str | Path, str | Path | None]  # a companyfacts file and its submissions file


def load(build: Build, scope: Scope, companies: Iterable[Company], *, reround: bool = True,
         show_progress: bool | None = None) -> list[LoadReport]:
    """Each company's facts into ``build``, one company after the other; one report each."""
    reports = []
    for companyfacts, submissions in companies:
        report = sec.load(build, scope, companyfacts, submissions, reround=reround, show_progress=show_progress)
        totals = build.flush()
        report.versions_created = totals.created
        report.evidence_added = totals.evidence_added
        report.unchanged = totals.unchanged
        reports.append(report)
    return reports
