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

Errors and transactions as for :mod:`.sec`: the whole table is checked first (header,
CIK digits, decimal value, unit whitelist, dates, start after end, basis, one
form/filed/accepted/document/CIK per source) and the first problem raises
:class:`graphmem.InputError` naming the file, the row index (0 = first data row; the
line number is given too) and the concept; then each source is written with its rows
in one transaction, in ``available_by`` order. Loading the same table twice changes
nothing. KPI tables are small (one row per reported figure), so rows are kept in
memory while grouping.
"""

from __future__ import annotations

import csv
import re
import time
from collections import defaultdict
from decimal import Decimal
from pathlib import Path

from graphmem.errors import InputError
from graphmem.memory import Memory
from graphmem.models import Authority, Entity, FactIn, Period, Scope, Source

from . import availability as av
from ._common import LoadReport, check_unit, progress, write_filing
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


def _read(path: Path, file: str) -> list[dict[str, str]]:
    try:
        with path.open(newline="", encoding="utf-8") as handle:
            reader = csv.DictReader(handle)
            header = reader.fieldnames or []
            missing = [c for c in COLUMNS if c not in header]
            if missing:
                raise InputError(file, f"missing column(s) {', '.join(missing)}")
            rows = []
            for index, row in enumerate(reader):
                if None in row or any(v is None for v in row.values()):
                    raise InputError(f"{file}: row {index} (line {index + 2})",
                                     "wrong number of fields")
                rows.append({k: (v or "").strip() for k, v in row.items()})
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


def load(
    mem: Memory, scope: Scope, path: str | Path, *, show_progress: bool | None = None
) -> LoadReport:
    """Load a KPI table; see the module docstring. Returns a :class:`LoadReport`."""
    started = time.monotonic()
    scope = mem.scope(scope)
    path = Path(path)
    file = str(path)
    rows = _read(path, file)

    entities: dict[int, Entity] = {}
    groups: dict[str, list[tuple[int, dict[str, str], Period, Decimal]]] = defaultdict(list)
    for index, row in enumerate(rows):
        where = f"{file}: row {index} (line {index + 2}, concept {row.get('concept') or '?'!r})"
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
        group.append((index, row, period, value))
        known = entities.get(cik)
        entity = Entity(id=entity_id(cik), name=row["company"], kind="company",
                        aliases=(row["ticker"],) if row["ticker"] else ())
        if known is not None and known != entity:
            raise InputError(where, f"CIK {cik} is {known.name!r} ({', '.join(known.aliases)}) "
                                    f"in an earlier row but {entity.name!r} here")
        entities[cik] = entity

    plan = []
    for source_id, group in groups.items():
        first = group[0][1]
        where = f"{file}: row {group[0][0]} (source {source_id!r})"
        if first["accepted"]:
            when = av.from_acceptance(first["accepted"], where=f"{where}: accepted")
        else:
            when = av.filed_end_of_day(first["filed"], f"{where}: filed")
        plan.append((when.at, source_id, group, when))
    plan.sort(key=lambda p: (p[0], p[1]))

    report = LoadReport(file=file, rows=len(rows))
    for entity in entities.values():
        mem.put_entity(scope, entity)
    report.entities = len(entities)

    with progress(path.name, len(plan), show_progress) as advance:
        for _, source_id, group, when in plan:
            first = group[0][1]
            publisher = entity_id(first["cik"])
            meta = {
                "available_by_rule": when.rule,
                "form": first["form"],
                "filed": first["filed"],
                "document": first["document"],
                "basis": ",".join(sorted({row["basis"] for _, row, _, _ in group})),
            }
            for field in ("accepted", "accession", "ticker"):
                if first[field]:
                    meta[field] = first[field]
            items = []
            for _, row, period, value in group:
                label = f"{row['concept']} {period.text}"
                meta[f"basis:{label}"] = row["basis"]
                if row["note"]:
                    meta[f"note:{label}"] = row["note"]
                items.append(FactIn(entity=publisher, attribute=row["concept"], unit=row["unit"],
                                    period=period, value=value, sources=(source_id,)))
            source = Source(
                id=source_id,
                kind=first["form"],
                authority=Authority.PRIMARY,
                available_by=when.at,
                publisher=publisher,
                uri=filing_uri(first["cik"], first["accession"]) if first["accession"] else None,
                title=first["document"] or f"{first['form']} filed {first['filed']}",
                meta=meta,
            )
            result = write_filing(mem, scope, source, items, f"{file}: source {source_id}")
            report.sources += 1
            report.sources_recorded += result.sources_recorded
            report.add_rule(when.rule)
            report.assertions += len(items)
            report.versions_created += result.created
            report.evidence_added += result.evidence_added
            report.unchanged += result.unchanged
            advance()
    report.seconds = round(time.monotonic() - started, 3)
    return report
