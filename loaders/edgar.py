"""``graphmem load edgar``: a universe of SEC companies into graphmem, resumably.

The input layer — which files make up the universe and which companies are asked for
(:mod:`.universe`), reading and checking one company's files into filings, facts and
quarantine records (:mod:`.sec`) — has no database. This module is the online write on
top of it: for each company, one write transaction per filing, in the order the
filings became public, through graphmem's own write path (``Memory.record``'s work).

Resuming without the read rule. Each filing's transaction also writes a *load mark*
(``load.mark``: the filing's accession and the digest of what it wrote, see
``sec.Batch``), and once every filing of a company is in, a company mark records the
fingerprint of its files (the CRC-32 and size a ZIP archive keeps for each member, or a
file's size and modification time), the options, and the company's report. A run then

* skips a company whose mark matches its files, without reading them (one lookup) -
  unless the load has a quarantine sink and the company had rows kept out: then it is
  read again, writing nothing, so that the sink (a ``--quarantine`` file written anew)
  lists its rows as one clean load's does;
* else reads the company and skips each filing whose mark matches its digest (one
  lookup for all of them), writing only the rest — so a load killed in the middle
  resumes at the filing that was being written, which its transaction left out whole.

Combined filings. One accession can be filed for several companies (a parent and its
subsidiaries). Its Source belongs to the company that recorded it first (publisher,
uri, cik); the next company's Source for it gets the id ``<accession>:cik:<CIK>``
(``sec.CompanyFacts.source_id``), found with one lookup per company, so each company
supersedes its own figures. Which company keeps the bare accession depends on the order
of loading (a universe loads in CIK order).

A filing of the company recorded before with other fields - by a KPI table, or by a load
that did not know its acceptance time - is cited as recorded (``_common.as_recorded``,
the same lookup): its rows stand on that one source, and the report lists it
(``cited_as_recorded``).

A mark only saves work: the write path's idempotency stays the safety net (a filing
written twice changes nothing), and ``resume=False`` writes every filing again through
it. A company whose files are not companyfacts JSON, or whose filing is refused, fails
alone: its error is in the report, its committed filings stay, the other companies
load, and a re-run continues.

The report (:class:`UniverseReport`) has one :class:`CompanyReport` per company:
rows, versions, corroborations, re-roundings, quarantined rows by reason, seconds, and
its status (``loaded``, ``recorded`` — nothing to do —, ``failed`` or ``missing``: asked
for but not in the inputs); and every member of the inputs that could not be read as
EDGAR JSON, with its reason (``skipped``, from :attr:`.universe.Universe.skipped`). A
failed company and a skipped member are the same kind of thing one level apart: what
could not be read is named, and everything else loads.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from graphmem.errors import InputError
from graphmem.facts import scope_params, source_uid, to_source_record
from graphmem.memory import Memory
from graphmem.models import Entity, Scope, Source, SourceRecord, WriteReport
from graphmem.values import digest

from . import sec
from ._common import LoadReport, as_recorded, put_entity, universe_progress, write_filing
from .quarantine import Sink
from .spool import clean_stale
from .universe import Company, Document, Skipped

__all__ = ["CompanyReport", "Online", "Store", "UniverseReport", "load", "load_company", "load_files"]


class CompanyReport(LoadReport):
    """What a load did for one company (``file`` is its companyfacts file). A company
    ``recorded`` before (nothing to do) carries the report of the load that recorded it,
    with this run's status and seconds."""

    cik: int
    name: str | None = None
    status: Literal["loaded", "recorded", "failed", "missing"] = "loaded"
    error: str | None = None


class UniverseReport(BaseModel):
    """One report per company, in the order they were loaded, and the totals."""

    model_config = ConfigDict(extra="forbid")

    companies: list[CompanyReport] = Field(default_factory=list)
    skipped: list[Skipped] = Field(default_factory=list)
    seconds: float = 0.0

    @property
    def not_loaded(self) -> list[CompanyReport]:
        """The companies that failed, or were asked for and not found."""
        return [c for c in self.companies if c.status in ("failed", "missing")]

    def totals(self) -> dict[str, Any]:
        """What this run did, summed over the companies: counts, quarantine by reason,
        companies by status. A company recorded before adds only its filings, as already
        recorded: its counts are the earlier load's work (a re-run that skips every
        company reads no row and writes nothing)."""
        keys = ("rows", "assertions", "versions_created", "evidence_added", "unchanged", "rerounded",
                "quarantined", "sources", "sources_recorded", "filings_recorded")
        worked = [c for c in self.companies if c.status != "recorded"]
        out: dict[str, Any] = {k: sum(getattr(c, k) for c in worked) for k in keys}
        out["filings_recorded"] += sum(c.sources for c in self.companies if c.status == "recorded")
        reasons: Counter[str] = Counter()
        for c in worked:
            reasons.update(c.quarantine)
        out["quarantine"] = dict(sorted(reasons.items()))
        out["companies"] = dict(sorted(Counter(c.status for c in self.companies).items()))
        out["skipped"] = len(self.skipped)
        out["seconds"] = self.seconds
        out["rows_per_s"] = round(out["rows"] / self.seconds, 1) if self.seconds else None
        return out


def _mark_uid(scope: Scope, kind: str, ident: str) -> str:
    return digest(scope.id, "load-mark", kind, ident)


class Store(Protocol):
    """What a universe load writes through: a Memory (:class:`Online`), or an offline
    build of a new database (graphmem.loaders.bootstrap), which writes the same graph."""

    def scope(self, scope: Any) -> Scope: ...

    def marks(self, scope: Scope, uids: list[str]) -> list[dict[str, Any]]:
        """The ``load.marks`` rows of these mark uids."""

    def publishers(self, scope: Scope, uids: list[str]) -> dict[str, str]:
        """The publisher of each of these sources that is recorded, by source uid."""

    def recorded(self, scope: Scope, uids: list[str]) -> dict[str, SourceRecord]:
        """These sources as recorded, by source uid (those that are)."""

    def put_entity(self, scope: Scope, entity: Entity) -> None: ...

    def write_filing(self, scope: Scope, source: Source, batch: sec.Batch, where: str,
                     mark: dict[str, Any]) -> WriteReport:
        """A filing (``source``, the batch's own or as recorded), its facts and its load
        mark, in one transaction."""

    def settle(self, report: CompanyReport) -> CompanyReport:
        """The company's report once every filing is written (before its mark records it)."""

    def mark(self, scope: Scope, mark: dict[str, Any]) -> None:
        """A company's load mark, in a transaction of its own."""


class Online:
    """A universe load into a Memory: one write transaction per filing (the default)."""

    def __init__(self, mem: Memory):
        self.mem = mem

    def scope(self, scope: Any) -> Scope:
        return self.mem.scope(scope)

    def marks(self, scope: Scope, uids: list[str]) -> list[dict[str, Any]]:
        return self.mem.db.read_all("load.marks", uids=uids, tenant=scope.tenant, scope=scope.id)

    def publishers(self, scope: Scope, uids: list[str]) -> dict[str, str]:
        return {uid: s.publisher_id for uid, s in self.recorded(scope, uids).items()}

    def recorded(self, scope: Scope, uids: list[str]) -> dict[str, SourceRecord]:
        rows = self.mem.db.read_all("source.get_many", uids=uids, tenant=scope.tenant, scope=scope.id)
        return {r["uid"]: to_source_record(r) for r in rows}

    def put_entity(self, scope: Scope, entity: Entity) -> None:
        put_entity(self.mem, scope, entity)  # tickers and name kept when this load has none

    def write_filing(self, scope: Scope, source: Source, batch: sec.Batch, where: str,
                     mark: dict[str, Any]) -> WriteReport:
        return write_filing(self.mem, scope, source, batch.items, where, mark)

    def settle(self, report: CompanyReport) -> CompanyReport:
        return report  # each filing's counts came back with its write

    def mark(self, scope: Scope, mark: dict[str, Any]) -> None:
        self.mem.write(scope, "load_mark", lambda tx, at: tx.run(
            "load.mark", recorded_at=at, **mark, **scope_params(scope)))


def _store(mem: Memory | Store) -> Store:
    return Online(mem) if isinstance(mem, Memory) else mem


def _company_digest(company: Company, options: dict[str, Any]) -> str:
    """What a company's files and the load's options are, as one hash (see the module
    docstring): the company mark that says it was loaded from exactly these."""
    files = [company.facts.fingerprint if company.facts else None, *(d.fingerprint for d in company.submissions)]
    return digest(sec.DIGEST_VERSION, files, sorted(options.items()))


def _filing_mark(entity: str, accession: str) -> str:
    """A filing mark's id: the company's, since a combined filing is one accession of
    several companies."""
    return f"{entity}/{accession}"


def _marks(store: Store, scope: Scope, cik: int, accessions: Sequence[str]) -> dict[tuple[str, str], dict[str, Any]]:
    """The company mark and the filing marks of these accessions, by (kind, id)."""
    entity = sec.entity_id(cik)
    uids = [_mark_uid(scope, "company", entity)]
    uids += [_mark_uid(scope, "filing", _filing_mark(entity, a)) for a in accessions]
    return {(row["kind"], row["id"]): row for row in store.marks(scope, uids)}


def _shared(store: Store, scope: Scope, facts: sec.CompanyFacts) -> frozenset[str]:
    """The accessions of this company that another company's load recorded as its own
    source already: combined filings of several registrants (see ``sec.source_id``)."""
    uids = {source_uid(scope, a): a for a in facts.accessions}
    return frozenset(uids[uid] for uid, publisher in store.publishers(scope, list(uids)).items()
                     if publisher != facts.entity.id)


def load_company(mem: Memory | Store, scope: Scope, company: Company, *, ny_clock: bool | None = None,
                 reround: bool = True, resume: bool = True, quarantine: Sink | None = None,
                 advance: Any = None, fail: bool = False) -> CompanyReport:
    """Load one company's files (see the module docstring); returns its report.

    ``advance(filings=n, rows=n)`` is told of each filing written or skipped. An
    InputError (files that are not EDGAR JSON, a refused filing) makes the report
    ``failed``, or is raised with ``fail``.
    """
    started = time.monotonic()
    store = _store(mem)
    scope = store.scope(scope)
    file = company.facts.name if company.facts else ""
    if company.facts is None:
        return CompanyReport(file=file, cik=company.cik, status="missing",
                             error="no companyfacts file for this CIK in the inputs")
    options = {"ny_clock": ny_clock, "reround": reround}
    fingerprint = _company_digest(company, options)
    if resume and company.cik:
        stored = _marks(store, scope, company.cik, []).get(("company", sec.entity_id(company.cik)))
        if stored is not None and stored["digest"] == fingerprint and stored["report"]:
            report = CompanyReport.model_validate_json(stored["report"])
            if quarantine is None or not report.quarantined:  # else read again: its records go to this sink
                return report.model_copy(update={"status": "recorded",
                                                 "seconds": round(time.monotonic() - started, 3)})
    report = CompanyReport(file=file, cik=company.cik)
    try:
        with sec.reading(company, ny_clock=ny_clock, reround=reround, sink=quarantine) as facts:
            report = _write(store, scope, facts, report, resume, fingerprint, advance)
    except InputError as exc:
        if fail:
            raise
        report = report.model_copy(update={"status": "failed", "error": str(exc)})
    report.seconds = round(time.monotonic() - started, 3)
    return report


def _write(store: Store, scope: Scope, facts: sec.CompanyFacts, report: CompanyReport, resume: bool,
           fingerprint: str, advance: Any) -> CompanyReport:
    """Write a company that has been read: its entity, each filing not yet recorded, its
    company mark."""
    report = report.model_copy(update={
        "cik": facts.cik, "name": facts.entity.name, "rows": facts.rows, "case_variants": facts.case_variants,
        "missing_pages": list(facts.acceptances.missing_pages)})
    report.add_quarantined(facts.quarantined)
    marks = _marks(store, scope, facts.cik, facts.accessions) if resume else {}
    recorded = {ident.rpartition("/")[2]: m["digest"] for (kind, ident), m in marks.items() if kind == "filing"}
    store.put_entity(scope, facts.entity)
    report.entities = 1
    shared = _shared(store, scope, facts)
    earlier = store.recorded(scope, [source_uid(scope, facts.source_id(a, shared)) for a in facts.accessions])
    for batch in facts.batches(recorded, shared):
        report.sources += 1
        source = as_recorded(batch.source, earlier.get(source_uid(scope, batch.source.id)), report)
        report.add_rule(source.meta.get("available_by_rule", "as recorded"))
        report.rerounded += batch.rerounded
        if batch.recorded:
            report.filings_recorded += 1
        else:
            where = f"{facts.file}: accession {batch.source.id}"
            ident = _filing_mark(facts.entity.id, batch.source.meta["accession"])
            mark = {"uid": _mark_uid(scope, "filing", ident), "kind": "filing", "id": ident,
                    "digest": batch.digest, "report": None}
            result = store.write_filing(scope, source, batch, where, mark)
            report.sources_recorded += result.sources_recorded
            report.assertions += len(batch.facts) - batch.duplicates
            report.duplicates += batch.duplicates
            report.versions_created += result.created
            report.evidence_added += result.evidence_added
            report.unchanged += result.unchanged
        if advance is not None:
            advance(filings=1, rows=batch.rows)
    report.name = facts.entity.name
    report = store.settle(report)
    store.mark(scope, {"uid": _mark_uid(scope, "company", facts.entity.id), "kind": "company",
                       "id": facts.entity.id, "digest": fingerprint, "report": report.model_dump_json()})
    return report


def load(mem: Memory | Store, scope: Scope, companies: Iterable[Company], *, ny_clock: bool | None = None,
         reround: bool = True, resume: bool = True, quarantine: Sink | None = None,
         show_progress: bool | None = None, total: int | None = None,
         skipped: Sequence[Skipped] = ()) -> UniverseReport:
    """Load every company (one after the other); see the module docstring.

    ``companies``: from :func:`graphmem.loaders.universe.select`; ``skipped``: what the
    universe could not read (its ``skipped``), for the report. Spool folders left by
    killed loads are deleted first. A progress bar (companies, filings, rows, rate,
    ETA) shows on a terminal only (``show_progress`` forces it on or off).
    """
    started = time.monotonic()
    store = _store(mem)
    scope = store.scope(scope)
    clean_stale()
    companies = list(companies) if total is None else companies
    count = total if total is not None else len(companies)  # type: ignore[arg-type]
    out = UniverseReport(skipped=list(skipped))
    with universe_progress(count, show_progress) as bar:
        for company in companies:
            bar.company(f"CIK {company.cik}")
            out.companies.append(load_company(store, scope, company, ny_clock=ny_clock, reround=reround,
                                              resume=resume, quarantine=quarantine, advance=bar.advance))
            bar.done()
    out.seconds = round(time.monotonic() - started, 3)
    return out


def load_files(mem: Memory | Store, scope: Scope, companyfacts: str | Path | Document,
               submissions: Sequence[str | Path | Document] = (), *, ny_clock: bool | None = None,
               reround: bool = True, resume: bool = True, show_progress: bool | None = None,
               quarantine: Sink | None = None) -> CompanyReport:
    """One company from its files (``sec.load``): raises the InputError for which the
    universe load would report the company as failed."""
    clean_stale()
    company = Company(0, sec.document(companyfacts), [sec.document(d) for d in submissions])
    with universe_progress(1, show_progress) as bar:
        bar.company(company.facts.name if company.facts else "")
        return load_company(mem, scope, company, ny_clock=ny_clock, reround=reround, resume=resume,
                            quarantine=quarantine, advance=bar.advance, fail=True)


def report_json(report: UniverseReport) -> str:
    """The whole report as JSON: totals, each company, then every member skipped."""
    return json.dumps({"totals": report.totals(), "companies": [c.model_dump() for c in report.companies],
                       "skipped": [s.model_dump() for s in report.skipped]}, indent=2, default=str)
