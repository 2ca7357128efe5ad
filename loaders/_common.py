"""What the filings loaders share: the unit check, the load report, the progress bar,
and the one write per filing.
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from collections.abc import Sequence
from contextlib import contextmanager
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from graphmem.db import Tx
from graphmem.errors import InputError
from graphmem.facts import scope_params
from graphmem.memory import Memory, record_args, record_in, record_label
from graphmem.models import Entity, FactIn, Scope, Source, SourceRecord, WriteReport

# ------------------------------------------------------------------ units

#: The longest unit id accepted. XBRL unit ids are open-ended (``USD``, ``USD/shares``,
#: ``segment``, ``Stock_options``, ``case_filed``, ``reportableSegments`` ...): the SEC
#: emits whatever a filer declared, so graphmem accepts any of them and refuses only
#: what cannot be a unit id at all. Real ones are a few dozen characters at most.
MAX_UNIT_LENGTH = 256


def unit_problem(unit: Any) -> str | None:
    """Why ``unit`` cannot be a unit id, or None when it can.

    Refused: a non-string, the empty string, any whitespace or control character (a
    unit id is one XML name, or two joined by ``/``), and more than
    :data:`MAX_UNIT_LENGTH` characters. Everything else is kept exactly as spelled: the
    unit is part of the fact key, so ``Segment`` and ``segment`` are two keys.
    """
    if not isinstance(unit, str):
        return f"a unit must be a string, got {type(unit).__name__}"
    if not unit:
        return "a unit must not be empty"
    if len(unit) > MAX_UNIT_LENGTH:
        return f"a unit of {len(unit)} characters is longer than {MAX_UNIT_LENGTH}"
    bad = next((c for c in unit if c.isspace() or not c.isprintable()), None)
    if bad is not None:
        return f"a unit must not contain whitespace or control characters, got {unit!r}"
    return None


def unit_ok(unit: Any) -> bool:
    """Can ``unit`` be a unit id? (see :func:`unit_problem`)"""
    return unit_problem(unit) is None


def check_unit(unit: Any, where: str) -> str:
    """``unit`` itself, or InputError naming ``where`` and why it cannot be a unit."""
    problem = unit_problem(unit)
    if problem is not None:
        raise InputError(where, problem)
    return unit


# ------------------------------------------------------------------ report


class LoadReport(BaseModel):
    """What one load did. ``versions_created + evidence_added + unchanged`` counts the
    (fact, source) assertions written; a second load of the same file has only
    ``unchanged`` ones, or, when it resumes, ``filings_recorded`` filings it did not
    write again. ``rows`` counts every row read, ``quarantined`` those kept out (by
    reason in ``quarantine``; their filings in ``quarantined_filings``)."""

    model_config = ConfigDict(extra="forbid")

    file: str
    entities: int = 0
    sources: int = 0
    sources_recorded: int = 0
    filings_recorded: int = 0
    rows: int = 0
    assertions: int = 0
    duplicates: int = 0
    rerounded: int = 0
    versions_created: int = 0
    evidence_added: int = 0
    unchanged: int = 0
    quarantined: int = 0
    quarantine: dict[str, int] = Field(default_factory=dict)
    quarantined_filings: list[str] = Field(default_factory=list)
    case_variants: list[str] = Field(default_factory=list)
    missing_pages: list[str] = Field(default_factory=list)
    cited_as_recorded: list[str] = Field(default_factory=list)  # filings an earlier load recorded: as_recorded
    rules: dict[str, int] = Field(default_factory=dict)
    seconds: float = 0.0

    def add_rule(self, rule: str) -> None:
        counts = Counter(self.rules)
        counts[rule] += 1
        self.rules = dict(sorted(counts.items()))

    def add_quarantined(self, records: Sequence[Any]) -> None:
        """Count quarantine records (anything with ``reason`` and ``accession``)."""
        if not records:
            return
        counts = Counter(self.quarantine)
        counts.update(r.reason for r in records)
        self.quarantine = dict(sorted(counts.items()))
        self.quarantined += len(records)
        filings = set(self.quarantined_filings) | {r.accession for r in records if r.accession}
        self.quarantined_filings = sorted(filings)


# ------------------------------------------------------------------ progress


@contextmanager
def progress(description: str, total: int, enabled: bool | None = None):
    """A rich progress bar on a terminal only; yields ``advance()``.

    ``enabled=None`` shows it when stderr is a terminal; pipes, CI logs and pytest
    get nothing, and do not import rich (a tenth of a second).
    """
    if enabled is False or (enabled is None and not sys.stderr.isatty()):
        yield lambda n=1: None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    console = Console(stderr=True)
    show = console.is_terminal if enabled is None else enabled
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        disable=not show,
        transient=False,
    ) as bar:
        task = bar.add_task(description, total=total)
        yield lambda n=1: bar.advance(task, n)


class _Bar:
    """What ``universe_progress`` yields: name the company in hand, count filings and rows
    as they go by, and close a company."""

    def __init__(self, bar: Any = None, task: Any = None):
        self._bar, self._task = bar, task
        self.filings = self.rows = 0

    def company(self, name: str) -> None:
        if self._bar is not None:
            self._bar.update(self._task, description=name)

    def advance(self, filings: int = 0, rows: int = 0) -> None:
        self.filings += filings
        self.rows += rows
        if self._bar is not None:
            self._bar.update(self._task, filings=self.filings, rows=self.rows)

    def done(self) -> None:
        if self._bar is not None:
            self._bar.advance(self._task, 1)


@contextmanager
def universe_progress(companies: int, enabled: bool | None = None):
    """A progress bar over a universe of companies — companies done, filings and rows
    so far, their rate, the time left — on a terminal only; yields a :class:`_Bar`
    (which does nothing off a terminal, without importing rich)."""
    if enabled is False or (enabled is None and not sys.stderr.isatty()):
        yield _Bar()
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    console = Console(stderr=True)
    with Progress(
        TextColumn("{task.description:<24}"), BarColumn(), MofNCompleteColumn(), TextColumn("companies"),
        TextColumn("{task.fields[filings]:,} filings {task.fields[rows]:,} rows"),
        TextColumn("{task.fields[rate]}"), TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
        console=console, disable=not (console.is_terminal if enabled is None else enabled), transient=False,
    ) as bar:
        task = bar.add_task("", total=companies, filings=0, rows=0, rate="")
        started = time.monotonic()
        shown = _Bar(bar, task)
        base = shown.advance

        def advance(filings: int = 0, rows: int = 0) -> None:
            base(filings, rows)
            elapsed = time.monotonic() - started
            bar.update(task, rate=f"{shown.rows / elapsed:,.0f} rows/s" if elapsed > 0 else "")

        shown.advance = advance  # type: ignore[method-assign]
        yield shown


# ------------------------------------------------------------------ the write


def put_entity(mem: Memory, scope: Scope, entity: Entity) -> None:
    """Put a company, keeping what was recorded of it where this load knows nothing: a
    load without the submissions file has no tickers, and a file without ``entityName``
    no name. Not knowing them is not knowing they are gone (``entity.put`` replaces every
    field: a reload of an updated companyfacts file alone would drop the tickers)."""
    recorded = mem.entity(scope, entity.id) if not entity.aliases or entity.name is None else None
    if recorded is not None:
        entity = entity.model_copy(update={"aliases": entity.aliases or tuple(recorded.aliases),
                                           "name": entity.name if entity.name is not None else recorded.name})
    mem.put_entity(scope, entity)


def as_recorded(source: Source, recorded: SourceRecord | None, report: LoadReport) -> Source:
    """``source``, or the same filing as an earlier load recorded it - the same id,
    accession, publisher, form and authority, recorded with other fields (another
    loader's title and meta, a time learned later) - noted in ``report.cited_as_recorded``.
    Sources are immutable, and the rows are the same filing's: they cite it as recorded
    (its time too), so that its withdrawal reaches them, rather than failing the filing
    or recording a second source of it. Anything else recorded under the id is left to
    the write, which refuses it."""
    accession = source.meta.get("accession")
    if recorded is None or recorded.erased or accession is None:
        return source
    kept = Source.model_validate(recorded.model_dump(include=set(Source.model_fields)))
    if _filing(kept) != _filing(source) or kept == source:
        return source
    report.cited_as_recorded.append(source.id)
    return kept


def _filing(source: Source) -> tuple[Any, ...]:
    """What makes two sources the same filing, whatever else they say of it."""
    return source.publisher_id, source.kind, source.authority, source.meta.get("accession")


def write_filing(
    mem: Memory, scope: Scope, source: Source, items: Sequence[FactIn], where: str,
    mark: dict[str, Any] | None = None,
) -> WriteReport:
    """Record ``source`` and assert ``items`` in ONE write transaction (as ``Memory.record``)
    and, with ``mark``, the ``load.mark`` of that filing in the same transaction: a
    failure leaves neither the source, nor any fact of that filing, nor its mark. Errors
    are re-raised naming the file and filing (``where``) before graphmem's own location."""
    scope = mem.scope(scope)
    sources, facts_in = record_args([source], items)

    def work(tx: Tx, at: Any) -> WriteReport:
        report = record_in(tx, scope, sources, facts_in, at)
        if mark is not None:
            tx.run("load.mark", recorded_at=at, **mark, **scope_params(scope))
        return report

    try:
        return mem.write(scope, record_label(sources), work)
    except InputError as exc:
        raise InputError(f"{where}: {exc.where}", exc.reason) from exc
