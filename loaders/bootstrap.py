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
  ``STRIDE - 1`` of them: its entity, filings and load mark; a company with more is
  left out whole, its report says why); recorded_at keeps the online order, and its
  ranks are what the equality tests compare;
* combined filings (:mod:`.edgar`): whether a company's accession was recorded by
  another company first is a question about the companies before it. A process of its
  own answers "no"; the part is taken only if the companies before it agree (the usual
  case), and otherwise made again here, with their answers;
* search-text templates (graphmem.probe): a process of its own has those probed so
  far, and a part that needs another shape is made again here, where the database is.

Nothing else is shared between companies: a company's keys, entity, load marks and
sources (a combined filing's included) are its own. A universe goes into a scope the
build holds nothing in (what the build holds is not in the processes), and the build
takes each part's entities, sources and marks, so that its later calls see them.
A company whose keys the build's rule cannot decide is left out whole, reported failed
(one process used to stop the whole build there).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import gc
import multiprocessing
import shutil
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from graphmem.bulk import Build, Totals
from graphmem.errors import InputError
from graphmem.importcsv import GraphCsv, ImportInput
from graphmem.models import Entity, Scope, Source, SourceRecord, WriteReport
from graphmem.probe import Probed, Shape, Templates, Unprobed

from . import edgar, sec
from ._common import universe_progress
from .quarantine import Quarantined, Sink
from .spool import clean_stale
from .universe import Company, Document, Skipped

STRIDE = 65536  # microseconds of the build's clock per company: 65,535 transactions (65,533 filings)
# (a bank that files a prospectus a day with its fee exhibit in XBRL passes 4,096 filings; the
# clock reserved, 66 ms a company, is 21 minutes for the whole archive: less than its build)

GC_THRESHOLD = 10_000  # allocations between the collector's youngest runs while a part is built (Python: 700)

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

    def recorded(self, scope: Scope, uids: list[str]) -> dict[str, SourceRecord]:
        """None, by the build's rule: a universe goes into a scope the build holds nothing
        in, so no earlier load recorded a company's filings (one recorded by a company
        before it in the build is another publisher's: a combined filing, ``publishers``)."""
        return {}

    def put_entity(self, scope: Scope, entity: Entity) -> None:
        # a company's first write: what a failed company wrote before it failed is decided
        # now, uncounted (online, its filings stay written and its report counts nothing)
        self.build.flush()
        self.build.put_entity(scope, entity)

    def write_filing(self, scope: Scope, source: Source, batch: sec.Batch, where: str,
                     mark: dict[str, Any]) -> WriteReport:
        try:  # the rows, not a FactIn each (Build.record_rows: the same checks)
            return self.build.record_rows(scope, source, batch.entity, batch.facts, marks=[mark])
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
    if build.holds(scope):
        raise InputError(f"scope {scope.id!r}", "holds entities, sources or load marks in this build already: an "
                         "offline build loads a universe into a scope it holds nothing in")
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
    spool: Path  # its entities, sources and load marks
    clocks: dict[str, str]
    scopes: dict[str, Scope]
    totals: Totals
    asked: dict[str, str | None]  # the publishers it asked for, and what it was told


@contextlib.contextmanager
def _collecting_less() -> Iterator[None]:
    """Python's cyclic garbage collector run less often while a part is built: a part
    allocates a few containers per row and holds a company's rows (its spools), which
    every collection walked again, finding no cycles to free (it took 15% of a part's
    time). Memory freed by reference counting, nearly all of it, is freed as before."""
    before = gc.get_threshold()
    gc.set_threshold(GC_THRESHOLD, *before[1:])
    try:
        yield
    finally:
        gc.set_threshold(*before)


@_collecting_less()
def _part(task: _Task, templates: Templates, prior: Publishers | None) -> _Part:
    """Build one company (as ``edgar.load_company`` loads it) into a part of its own.

    A company that failed after some filings keeps them, decided uncounted, as online. A
    company whose keys the build's rule cannot decide, or with more transactions than its
    ticks, is left out whole: nothing of it is written, and its report says why."""
    csv = GraphCsv(task.folder / "csv")
    build = Build(task.folder / "spool", csv, templates, now=task.start, ticks=task.ticks)
    try:
        store = Offline(build, prior)
        quarantined: list[Quarantined] = []
        report = edgar.load_company(store, task.scope, task.company, quarantine=quarantined.append)
        try:
            if build.overflowed:
                raise InputError(report.file, report.error or "more transactions than a company's ticks")
            build.finish(clocks=False)
            files: ImportInput | None = csv.close()
        except InputError as exc:
            report = report.model_copy(update={"status": "failed", "error": f"left out whole: {exc}"})
            files = None
        return _Part(report, quarantined, files, task.folder / "spool", build.clocks, build.scopes, build.totals,
                     store.asked)
    finally:
        csv.close()
        build.close()


def _ready() -> None:
    """Nothing: submitted to start a process of the pool (a process imports graphmem
    when it starts, about a second) while the first part is made here."""


def _work(task: _Task) -> _Part | None:
    """A part in a process of its own; None when it needs a template not probed yet (the
    part is made again where the database is)."""
    try:
        return _part(task, Templates(None, task.probed), None)
    except Unprobed:
        return None


class _Parts:
    """The parts of one universe build: made in order here, or in processes of their own
    and taken in order."""

    def __init__(self, build: Build, scope: Scope):
        self._build, self._scope = build, scope
        self._folder = build.folder / "parts"

    def __enter__(self) -> _Parts:
        return self

    def __exit__(self, *exc: object) -> None:
        shutil.rmtree(self._folder, ignore_errors=True)

    def made(self, companies: list[Company], ticks: range, workers: int) -> Iterator[_Part]:
        """Each company's part, taken into the build, in the companies' order."""
        tasks = (self._task(n, company, ticks) for n, company in enumerate(companies))
        if workers <= 1 or len(companies) < 2:
            for task in tasks:
                yield self._take(task, self._here(task))
            return
        first = next(tasks)  # made here: it probes the templates the others will mostly need
        window: deque[tuple[_Task, Future[_Part | None] | None]] = deque()
        pool = ProcessPoolExecutor(min(workers, len(companies)), mp_context=multiprocessing.get_context("spawn"))
        try:
            for _ in range(min(workers, len(companies))):  # the processes start (and import) meanwhile
                pool.submit(_ready)
            yield self._take(first, self._here(first))
            for task in tasks:
                window.append((task, self._submit(pool, task)))
                if len(window) > 2 * workers:  # parts waiting to be taken: bounded
                    yield self._settle(*window.popleft())
            while window:
                yield self._settle(*window.popleft())
        finally:
            pool.shutdown(cancel_futures=True)

    def _task(self, n: int, company: Company, ticks: range) -> _Task:
        own = range(ticks.start + n * STRIDE, ticks.start + (n + 1) * STRIDE)
        return _Task(company, self._scope, self._build.start, own, self._folder / str(n),
                     self._build.templates.probed)

    @staticmethod
    def _submit(pool: ProcessPoolExecutor, task: _Task) -> Future[_Part | None] | None:
        try:
            return pool.submit(_work, task)
        except BrokenProcessPool:  # a worker died (killed, out of memory): the rest are made here
            return None

    def _settle(self, task: _Task, made: Future[_Part | None] | None) -> _Part:
        """A part from a process of its own, taken if what it was told about the companies
        before it holds; made again here if not, if it needs a template, or if its process
        failed (a worker killed, an archive that cannot be opened there)."""
        try:
            part = made.result() if made is not None else None
        except Exception:  # noqa: BLE001 - made again here, where an error of its own is raised or reported
            part = None
        if part is not None and self._build.publishers(self._scope, list(part.asked)) == {
                uid: publisher for uid, publisher in part.asked.items() if publisher is not None}:
            return self._take(task, part)
        shutil.rmtree(task.folder, ignore_errors=True)
        return self._take(task, self._here(task))

    def _here(self, task: _Task) -> _Part:
        return _part(task, self._build.templates, self._build.publishers)

    def _take(self, task: _Task, part: _Part) -> _Part:
        if part.files is not None:
            self._build.take(part.files, part.spool, part.clocks, part.scopes, part.totals)
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
