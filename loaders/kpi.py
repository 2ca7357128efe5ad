"""A KPI table (CSV, one reported value per row) into graphmem.

The format is the one of ``tests/fixtures/kpi-pypl-shop.csv``::

    ticker,cik,company,concept,label,period_start,period_end,value,unit,printed,
    source_id,accession,form,filed,accepted,document,basis,note

``load(mem, scope, path)`` writes

* one :class:`Entity` per CIK: id ``cik:<cik>``, name ``company``, the ticker as alias;
* one :class:`Source` per ``source_id``: kind the ``form``, authority ``primary``,
  publisher the entity id (a later document of the company supersedes an earlier
  one), uri the EDGAR filing index when the ``accession`` is known, title the
  ``document``; ``available_by`` from ``accepted`` when given, else the ``filed`` date
  widened to the end of that day in New York — both decided by
  :mod:`graphmem.loaders.availability`; ``meta`` keeps ``available_by_rule``,
  ``document``, ``form``, ``filed``, ``accepted``, ``accession``, ``ticker``, the set of
  ``basis`` values of its rows, and — because a fact carries no metadata of its own —
  each row's basis and note under ``basis:<concept> <period>`` / ``note:<concept> <period>``;
* one :class:`FactIn` per row: entity ``cik:<cik>``, attribute ``concept``, ``unit``,
  period ``period_start..period_end``, the exact decimal ``value``.

Authority. Every basis is ``primary``. ``filing`` rows are read in the company's own
document. ``secondary`` rows are the company's own figure as quoted by press or data
services; the source named is still the company's document that first made it public,
so the publisher and the time are the company's. ``derived`` rows are the company's
own printed figures combined by plain arithmetic (``note`` shows it): no judgement or
model is involved, so the figure is still the company's. graphmem's ``derived``
authority means "computed by a recorded Derivation" (method, inputs, lineage), which
these rows are not — they have no input facts in the memory to point at. The
``basis`` (per source and per row) stays in ``Source.meta`` for whoever needs the
distinction; a later document of the company for the same key supersedes either way.

A filing already recorded in the scope by another load (``load companyfacts`` or
``load edgar``: the same id, accession, publisher, form and authority, recorded with the
SEC loader's title, meta and time) is cited as it was recorded (``_common.as_recorded``;
the filings loaders do the same the other way round): the table's rows are the same
filing's figures, so a retraction of that filing reaches them too (lineage, ``impact``).
Their available_by is then the recorded one, and the table's basis and notes for that
source are not stored; the report lists such sources under ``cited_as_recorded``.

Errors and transactions as for :mod:`.sec`: the whole table is checked first (the
file's size, its header - every column present, no column named twice, not even in
another case or with spaces around it -, CIK digits, decimal value, a unit id (any, as spelled),
dates, start after end, basis, one form/filed/accepted/document/CIK per source, and
graphmem's bounds on every entity, source and fact built from it) and the first problem
raises :class:`graphmem.InputError` naming the file, the row index (0 = first data row;
the line number is given too) and the concept; then each source is written with its
rows in one transaction, in ``available_by`` order. Loading the same table twice
changes nothing. The file is UTF-8, with or without a byte-order mark. KPI tables are
small (one row per reported figure; at most ``graphmem.limits.KPI_FILE_BYTES``), so
rows are kept in memory while grouping.
"""

from __future__ import annotations

import csv
import re
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from decimal import Decimal
from pathlib import Path

from graphmem import limits
from graphmem.errors import InputError
from graphmem.memory import Memory
from graphmem.models import Authority, Entity, FactIn, Period, Scope, Source

from . import availability as av
from ._common import LoadReport, as_recorded, check_unit, progress, put_entity, write_filing
from .sec import entity_id, filing_uri

__all__ = ["BASES", "COLUMNS", "load"]

COLUMNS = (
    "ticker", "cik", "company", "concept", "label", "period_start", "period_end", "value",
    "unit", "printed", "source_id", "accession", "form", "filed", "accepted", "document",
    "basis", "note",
)
BASES = ("filing", "secondary", "derived")
_REQUIRED = ("cik", "company", "concept", "period_start", "period_end", "value", "unit",
             "source_id", "form", "filed", "basis")
_DECIMAL = re.compile(r"^[+-]?\d+(\.\d+)?$")
#: Fields that belong to the source: every row of one source_id must agree on them.
_SOURCE_FIELDS = ("cik", "accession", "form", "filed", "accepted", "document")


def _header(cells: list[str], file: str) -> list[str]:
    """The column names, refused when one is named twice: a table with two ``value``
    columns (or ``value`` and ``Value ``) cannot say which one a fact takes."""
    names = [c.strip() for c in cells]
    seen: dict[str, int] = {}
    for position, name in enumerate(names, 1):
        key = name.casefold()
        if key and key in seen:
            raise InputError(f"{file}: header", f"columns {seen[key]} and {position} are both "
                                                f"named {name!r}: which one is meant is ambiguous")
        seen[key] = position
    missing = [c for c in COLUMNS if c not in names]
    if missing:
        raise InputError(file, f"missing column(s) {', '.join(missing)}")
    return names


def _read(path: Path, file: str) -> list[tuple[int, dict[str, str]]]:
    """The rows, each with the line of the file it starts on, as column name -> stripped
    text; UTF-8 with or without a byte-order mark. A blank line is no row (a table saved
    with an empty last line is the same table), and a quoted field may span lines, so the
    line is counted by the reader, not from the row's index."""
    try:
        size = path.stat().st_size
        if size > limits.KPI_FILE_BYTES:
            raise InputError(file, f"{size:,} bytes; a KPI table has at most "
                                   f"{limits.KPI_FILE_BYTES:,} (it is read whole)")
        with path.open(newline="", encoding="utf-8-sig") as handle:
            reader = csv.reader(handle)
            header = _header(next(reader, []), file)
            rows: list[tuple[int, dict[str, str]]] = []
            line = reader.line_num + 1  # where the next row starts
            for cells in reader:
                if cells:
                    if len(cells) != len(header):
                        raise InputError(f"{file}: row {len(rows)} (line {line})",
                                         f"{len(cells)} fields where the header has {len(header)}")
                    rows.append((line, {k: v.strip() for k, v in zip(header, cells, strict=True)}))
                line = reader.line_num + 1
            return rows
    except FileNotFoundError:
        raise InputError(file, "file not found") from None
    except UnicodeDecodeError as exc:
        raise InputError(file, f"not UTF-8 text: {exc}") from None
    except csv.Error as exc:
        raise InputError(file, f"not valid CSV: {exc}") from None


def _check(row: dict[str, str], where: str) -> tuple[int, Period, Decimal]:
    for column in _REQUIRED:
        if not row[column]:
            raise InputError(where, f"missing value for {column!r}")
    if not row["cik"].isdigit() or int(row["cik"]) <= 0:
        raise InputError(where, f"cik must be digits, got {row['cik']!r}")
    if not _DECIMAL.match(row["value"]):
        raise InputError(where, f"value must be a decimal number, got {row['value']!r}")
    value = Decimal(row["value"])
    check_unit(row["unit"], where)
    start = av.parse_date(row["period_start"], f"{where}: period_start")
    end = av.parse_date(row["period_end"], f"{where}: period_end")
    if start > end:
        raise InputError(where, f"impossible period: start {start} is after end {end}")
    av.parse_date(row["filed"], f"{where}: filed")
    if row["basis"] not in BASES:
        raise InputError(where, f"basis must be one of {', '.join(BASES)}, got {row['basis']!r}")
    return int(row["cik"]), Period(start=start, end=end), value


def _facts(rows: list[tuple[int, dict[str, str]]], file: str
           ) -> tuple[dict[int, Entity], dict[str, list[tuple[int, dict[str, str], FactIn]]]]:
    """Check every row (with the line it starts on) and build its fact and entity: the
    entities by CIK, and each source's rows with their facts, in file order."""
    entities: dict[int, Entity] = {}
    groups: dict[str, list[tuple[int, dict[str, str], FactIn]]] = defaultdict(list)
    for index, (line, row) in enumerate(rows):
        concept = row.get("concept") or "?"
        concept = concept if len(concept) <= 80 else f"{concept[:40]}...({len(concept):,} characters)"
        where = f"{file}: row {index} (line {line}, concept {concept!r})"
        cik, period, value = _check(row, where)
        group = groups[row["source_id"]]
        if group:
            first = group[0][1]
            for field in _SOURCE_FIELDS:
                if row[field] != first[field]:
                    raise InputError(
                        where,
                        f"source {row['source_id']!r} has {field} {row[field]!r} here but "
                        f"{first[field]!r} in row {group[0][0]}",
                    )
        with _named(where):
            entity = Entity(id=entity_id(cik), name=row["company"], kind="company",
                            aliases=(row["ticker"],) if row["ticker"] else ())
            fact = FactIn(entity=entity.id, attribute=row["concept"], unit=row["unit"],
                          period=period, value=value, sources=(row["source_id"],))
        group.append((index, row, fact))
        known = entities.get(cik)
        if known is not None and known != entity:
            raise InputError(where, f"CIK {cik} is {known.name!r} ({', '.join(known.aliases)}) "
                                    f"in an earlier row but {entity.name!r} here")
        entities[cik] = entity
    return entities, groups


def _source(source_id: str, group: list[tuple[int, dict[str, str], FactIn]],
            when: av.Availability, where: str) -> Source:
    """The source of one group of rows (see the module docstring for its meta)."""
    first = group[0][1]
    meta = {
        "available_by_rule": when.rule,
        "form": first["form"],
        "filed": first["filed"],
        "document": first["document"],
        "basis": ",".join(sorted({row["basis"] for _, row, _ in group})),
    }
    for field in ("accepted", "accession", "ticker"):
        if first[field]:
            meta[field] = first[field]
    for _, row, fact in group:
        label = f"{row['concept']} {fact.period.text}"
        meta[f"basis:{label}"] = row["basis"]
        if row["note"]:
            meta[f"note:{label}"] = row["note"]
    with _named(where):
        return Source(
            id=source_id,
            kind=first["form"],
            authority=Authority.PRIMARY,
            available_by=when.at,
            publisher=entity_id(first["cik"]),
            uri=filing_uri(first["cik"], first["accession"]) if first["accession"] else None,
            title=first["document"] or f"{first['form']} filed {first['filed']}",
            meta=meta,
        )


@contextmanager
def _named(where: str) -> Iterator[None]:
    """A model's InputError (a bound, a field) located in the file, row and concept."""
    try:
        yield
    except InputError as exc:
        raise InputError(f"{where}: {exc.where}", exc.reason) from exc


def load(
    mem: Memory, scope: Scope, path: str | Path, *, show_progress: bool | None = None
) -> LoadReport:
    """Load a KPI table; see the module docstring. Returns a :class:`LoadReport`."""
    started = time.monotonic()
    scope = mem.scope(scope)
    path = Path(path)
    file = str(path)
    rows = _read(path, file)
    entities, groups = _facts(rows, file)

    plan = []
    for source_id, group in groups.items():
        first = group[0][1]
        where = f"{file}: row {group[0][0]} (source {source_id!r})"
        if first["accepted"]:
            when = av.from_acceptance(first["accepted"], where=f"{where}: accepted")
        else:
            when = av.filed_end_of_day(first["filed"], f"{where}: filed")
        plan.append((_source(source_id, group, when, where), [f for _, _, f in group]))
    report = LoadReport(file=file, rows=len(rows))
    plan = [(as_recorded(source, mem.source(scope, source.id), report), items) for source, items in plan]
    plan.sort(key=lambda p: (p[0].available_by, p[0].id))

    for entity in entities.values():
        put_entity(mem, scope, entity)  # a table without tickers keeps the ones recorded
    report.entities = len(entities)

    with progress(path.name, len(plan), show_progress) as advance:
        for source, items in plan:
            result = write_filing(mem, scope, source, items, f"{file}: source {source.id}")
            report.sources += 1
            report.sources_recorded += result.sources_recorded
            report.add_rule(source.meta.get("available_by_rule", "as recorded"))
            report.assertions += len(items)
            report.versions_created += result.created
            report.evidence_added += result.evidence_added
            report.unchanged += result.unchanged
            advance()
    report.seconds = round(time.monotonic() - started, 3)
    return report
