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

A universe is built a company at a time, each company a part of the build of its own
(:func:`load`; ``graphmem.bulk.Build``'s parts), so that companies can be built in
processes of their own (``workers``) and their parts taken in the universe's order. What
makes that deterministic and equal to one process:

* the clock: the build reserves :data:`STRIDE` microseconds of its clock per company, in
  the universe's order, and a company's transactions take its own (at most
  ``STRIDE - 1`` of them: filings); recorded_at keeps the online order, and its ranks
  are what the equality tests compare;
* combined filings (:mod:`.edgar`): whether a company's accession was recorded by
  another company first is a question about the companies before it. A process of its
  own answers "no"; the part is taken only if the companies before it agree (the usual
  case), and otherwise made again here, with their answers;
* search-text templates (graphmem.probe): a process of its own has those probed so
  far, and a part that needs another shape is made again here, where the database is.

Nothing else is shared between companies: a company's keys, entity, load marks and
sources (a combined filing's included) are its own.
"""

from __future__ import annotations

import datetime as dt
import multiprocessing
import shutil
import sqlite3
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from graphmem.bulk import Build, Totals
from graphmem.errors import InputError
from graphmem.importcsv import GraphCsv, ImportInput
from graphmem.models import Entity, FactIn, Scope, Source, WriteReport
from graphmem.probe import Probed, Shape, Templates, Unprobed

from . import edgar
from ._common import universe_progress
from .quarantine import Quarantined, Sink
from .spool import clean_stale
from .universe import Company, Document, Skipped

STRIDE = 4096  # microseconds of the build's clock per company: at most 4,095 transactions (filings)
_LOOKUP = 500  # uids per SELECT (SQLite allows 999 parameters at the least)

Publishers = Callable[[Scope, list[str]], dict[str, str]]


class Offline:
    """An :class:`edgar.Store` over an offline build (see the module docstring).
    ``prior`` answers which sources the companies before this one recorded; what was
    asked and answered is kept in ``asked``."""

    def __init__(self, build: Build, prior: Publishers | None = None):
        self.build = build
        self._prior = prior
        self.asked: dict[str, str | None] = {}

    def scope(self, scope: Any) -> Scope:
        return self.build.scope(scope)

    def marks(self, scope: Scope, uids: list[str]) -> list[dict[str, Any]]:
        return self.build.marks_of(scope, uids)

    def publishers(self, scope: Scope, uids: list[str]) -> dict[str, str]:
        found = (self._prior(scope, uids) if self._prior else {}) | self.build.publishers(scope, uids)
        self.asked.update((uid, found.get(uid)) for uid in uids)
        return found

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
         show_progress: bool | None = None, skipped: Sequence[Skipped] = (), workers: int = 1
         ) -> edgar.UniverseReport:
    """A universe into ``build``, as :func:`edgar.load` loads it into a Memory, a company
    a part (see the module docstring), built in ``workers`` processes when more than one:
    the same build either way."""
    started = time.monotonic()
    scope = build.scope(scope)
    clean_stale()
    companies = list(companies)
    ticks = build.reserve(len(companies) * STRIDE)
    out = edgar.UniverseReport(skipped=list(skipped))
    with universe_progress(len(companies), show_progress) as bar, _Parts(build, scope) as parts:
        for part in parts.made(companies, ticks, workers):
            bar.company(f"CIK {part.report.cik}")
            for record in part.quarantined:
                if quarantine is not None:
                    quarantine(record)
            out.companies.append(part.report)
            bar.advance(filings=part.report.sources, rows=part.report.rows)
            bar.done()
    out.seconds = round(time.monotonic() - started, 3)
    return out


@dataclass(frozen=True)
class _Task:
    """One company's part of a universe build, as it goes to a process of its own."""

    company: Company
    scope: Scope
    start: dt.datetime  # the build's clock
    ticks: range  # the company's own of it
    folder: Path
    probed: dict[Shape, Probed]  # the templates probed so far


@dataclass
class _Part:
    """What building one company made: its report and quarantined rows, its importer
    files (None when its keys could not be decided: nothing of it is written), and what
    the whole build takes from it."""

    report: edgar.CompanyReport
    quarantined: list[Quarantined]
    files: ImportInput | None
    clocks: dict[str, str]
    scopes: dict[str, Scope]
    totals: Totals
    asked: dict[str, str | None]  # the publishers it asked for, and what it was told
    published: dict[str, str]  # the sources it recorded, with their publishers


def _part(task: _Task, templates: Templates, prior: Publishers | None) -> _Part:
    """Build one company (as ``edgar.load_company`` loads it) into a part of its own."""
    csv = GraphCsv(task.folder / "csv")
    build = Build(task.folder / "spool", csv, templates, now=task.start, ticks=task.ticks)
    store = Offline(build, prior)
    quarantined: list[Quarantined] = []
    report = edgar.load_company(store, task.scope, task.company, quarantine=quarantined.append)
    published: dict[str, str] = {}
    try:
        build.flush()  # a company that failed after some filings: they are decided, uncounted, as online
        published = build.recorded_publishers()
        build.finish(clocks=False)
        files: ImportInput | None = csv.close()
    except InputError as exc:  # keys the build's rule cannot decide: the company is left out whole
        report = report.model_copy(update={"status": "failed", "error": str(exc)})
        csv.close()
        files = None
    return _Part(report, quarantined, files, build.clocks, build.scopes, build.totals, store.asked, published)


def _work(task: _Task) -> _Part | None:
    """A part in a process of its own; None when it needs a template not probed yet (the
    part is made again where the database is)."""
    try:
        return _part(task, Templates(None, task.probed), None)
    except Unprobed:
        return None


class _Parts:
    """The parts of one universe build, made in order (or in processes of their own and
    taken in order), and what the companies taken so far recorded as their sources."""

    def __init__(self, build: Build, scope: Scope):
        self._build, self._scope = build, scope
        self._folder = build.folder / "parts"
        self._folder.mkdir(parents=True, exist_ok=True)
        self._published = sqlite3.connect(self._folder / "published.sqlite3")
        self._published.executescript("PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; "
                                      "CREATE TABLE published (uid TEXT PRIMARY KEY, publisher TEXT NOT NULL) "
                                      "WITHOUT ROWID;")

    def __enter__(self) -> _Parts:
        return self

    def __exit__(self, *exc: object) -> None:
        self._published.close()
        shutil.rmtree(self._folder, ignore_errors=True)

    def made(self, companies: list[Company], ticks: range, workers: int) -> Iterator[_Part]:
        """Each company's part, taken into the build, in the companies' order."""
        tasks = (self._task(n, company, ticks) for n, company in enumerate(companies))
        if workers <= 1 or len(companies) < 2:
            for task in tasks:
                yield self._take(task, self._here(task))
            return
        first = next(tasks)  # made here: it probes the templates the others will mostly need
        yield self._take(first, self._here(first))
        window: deque[tuple[_Task, Future[_Part | None]]] = deque()
        with ProcessPoolExecutor(min(workers, len(companies)), mp_context=multiprocessing.get_context("spawn")
                                 ) as pool:
            for task in tasks:
                window.append((task, pool.submit(_work, task)))
                if len(window) > 2 * workers:  # parts waiting to be taken: bounded
                    yield self._settle(*window.popleft())
            while window:
                yield self._settle(*window.popleft())

    def _task(self, n: int, company: Company, ticks: range) -> _Task:
        own = range(ticks.start + n * STRIDE, ticks.start + (n + 1) * STRIDE)
        return _Task(company, self._scope, self._build.start, own, self._folder / str(n),
                     self._build.templates.probed)

    def _settle(self, task: _Task, made: Future[_Part | None]) -> _Part:
        """A part from a process of its own, taken if what it was told about the companies
        before it holds, and made again here if not (or if it needs a template)."""
        part = made.result()
        if isinstance(part, _Part) and self._publishers(self._scope, list(part.asked)) == {
                uid: publisher for uid, publisher in part.asked.items() if publisher is not None}:
            return self._take(task, part)
        shutil.rmtree(task.folder, ignore_errors=True)
        return self._take(task, self._here(task))

    def _here(self, task: _Task) -> _Part:
        return _part(task, self._build.templates, self._publishers)

    def _publishers(self, scope: Scope, uids: list[str]) -> dict[str, str]:
        """The publishers of these sources, as recorded by the companies taken so far (or by
        the build itself, before the universe)."""
        found = self._build.publishers(scope, uids)
        for start in range(0, len(uids), _LOOKUP):
            part = uids[start:start + _LOOKUP]
            found.update(self._published.execute(
                f"SELECT uid, publisher FROM published WHERE uid IN ({', '.join('?' * len(part))})", part))
        return found

    def _take(self, task: _Task, part: _Part) -> _Part:
        if part.files is not None:
            self._build.take(part.files, part.clocks, part.scopes, part.totals)
            self._published.executemany("INSERT OR IGNORE INTO published VALUES (?, ?)", part.published.items())
        shutil.rmtree(task.folder, ignore_errors=True)
        return part


def load_files(build: Build, scope: Scope, companyfacts: str | Path | Document,
               submissions: Sequence[str | Path | Document] = (), *,
               quarantine: Sink | None = None) -> edgar.CompanyReport:
    """One company's files into ``build``, as :func:`edgar.load_files` (``graphmem load
    companyfacts``) loads them into a Memory: an InputError for files that are not
    companyfacts JSON."""
    return edgar.load_files(Offline(build), scope, companyfacts, submissions, quarantine=quarantine,
                            show_progress=False)
