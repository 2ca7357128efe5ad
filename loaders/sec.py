"""SEC EDGAR company facts (``data.sec.gov/api/xbrl/companyfacts/``) into graphmem.

``load(mem, scope, companyfacts, submissions=None)`` writes

* one :class:`Entity` per company: id ``cik:<CIK without leading zeros>``, name the
  file's ``entityName``, kind ``company``, and the tickers of the submissions file
  (when given) as ``aliases``;
* one :class:`Source` per accession number: id the accession (``0001564590-16-013195``),
  kind the form (``10-K``), authority ``primary``, publisher the entity id — so a later
  filing of the same company supersedes an earlier one and the same value re-reported
  is corroboration — uri the EDGAR filing index, title ``"10-K filed 2016-02-24"``,
  ``available_by`` from :mod:`graphmem.loaders.availability` and ``meta`` with
  ``available_by_rule``, ``form``, ``filed``, ``accession``, ``cik`` and, when used,
  the raw ``acceptanceDateTime``;
* one :class:`FactIn` per row, keyed by (CIK, ``"taxonomy:concept"``, unit, period)
  with the period from ``start``/``end`` only: ``fy``/``fp`` name the *filing's* focus
  and ``frame`` sits only on the last-filed row, so neither is point-in-time safe.

Order and transactions. Filings are written in ``available_by`` order (then accession),
each in ONE write transaction with its source (see ``_common.write_filing``), so a
failure leaves nothing of that filing; the memory's idempotency makes a reload change
nothing and a failed load resumable by running it again.

Validation first. The whole file is checked before anything is written — the JSON,
the keys, the types of ``val``/``start``/``end``/``accn``/``form``/``filed``, the unit
(whitelist in ``_common.unit_ok``), the period (start after end), one form/filed per
accession. The first problem raises :class:`graphmem.InputError` naming the file, the
``taxonomy:concept [unit]`` and the row index in that unit's list; the database is
untouched. Numbers are parsed as exact decimals (``parse_float=Decimal``); a JSON
``true`` or a string where a number belongs is refused; ``NaN``/``Infinity`` too.

Memory. The file is read with ``json.load`` (Tesla's is 2.7 MB; companyfacts files
top out in the tens of MB). Validation keeps only row references grouped by accession,
and FactIn objects are built for one accession at a time, written, and dropped; beyond
that the loader keeps one decimal per fact key (the re-rounding rule below).

Re-rounding. From late 2019 Tesla reports in millions, so a 2019 10-K re-prints the
2018 balance ``29,739,614,000`` as ``29,740,000,000``. Treating that as a restatement
would make a new version that is *less* precise and says nothing new. Rule: a later
value ``v`` re-rounds the key's current value ``u`` (the value this load last asserted
for the key, i.e. what the memory holds at that point of the file) when

1. both are integers, ``v != u`` and ``v != 0``;
2. ``p = min(trailing zeros of v, P) >= 3`` where ``P`` is the later filing's rounding
   for that unit — the most common number of trailing zeros among its non-zero
   integer values of the unit (companyfacts drops XBRL's ``decimals``; this recovers
   it; ties go to the smaller, stricter count);
3. ``u`` has fewer than ``p`` trailing zeros (it is the more precise figure); and
4. ``|u - v| <= 10**p / 2`` — ``v`` is ``u`` rounded to ``10**p``.

Then the later filing is asserted as evidence for ``u`` (corroboration: no new version,
the earlier, more precise figure stands, and the later filing is listed among its
sources). Anything else that differs — ``3,404,451,000`` re-printed as ``3,405,000,000``
(off by one million at the filing's rounding), decimals such as EPS — is a new version
(restatement), as DESIGN.md section 3 says. ``reround=False`` turns the rule off.
Only values within one file are compared: a file loaded over data from another file
starts with no current values.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

from graphmem.errors import InputError
from graphmem.memory import Memory
from graphmem.models import Authority, Entity, FactIn, Period, Scope, Source

from . import availability as av
from ._common import LoadReport, check_unit, progress, write_filing

__all__ = ["LoadReport", "entity_id", "filing_uri", "load", "read_json", "rerounds"]

_ACCESSION = re.compile(r"^\d{10}-\d{2}-\d{6}$")
_REQUIRED = ("end", "val", "accn", "form", "filed")


def entity_id(cik: int | str) -> str:
    """``cik:1318605`` for CIK 1318605 or ``"0001318605"``."""
    return f"cik:{int(cik)}"


def filing_uri(cik: int | str, accession: str) -> str:
    """The EDGAR filing index page of ``accession``."""
    return (
        f"https://www.sec.gov/Archives/edgar/data/{int(cik)}/"
        f"{accession.replace('-', '')}/{accession}-index.htm"
    )


# ------------------------------------------------------------------ reading


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number")


def read_json(path: str | Path) -> Any:
    """The parsed JSON of ``path`` with exact decimals, or InputError naming the file."""
    path = Path(path)
    try:
        with path.open("rb") as handle:
            return json.load(handle, parse_float=Decimal, parse_constant=_no_constant)
    except FileNotFoundError:
        raise InputError(str(path), "file not found") from None
    except json.JSONDecodeError as exc:
        raise InputError(str(path), f"not valid JSON: {exc.msg} at line {exc.lineno} "
                                    f"column {exc.colno}") from None
    except (UnicodeDecodeError, ValueError) as exc:
        raise InputError(str(path), f"not valid JSON: {exc}") from None


def _cik(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise InputError(where, f"cik must be a number or digits, got {type(value).__name__}")
    if isinstance(value, str) and not value.isdigit():
        raise InputError(where, f"cik must be digits, got {value!r}")
    if int(value) <= 0:
        raise InputError(where, f"cik must be positive, got {value!r}")
    return int(value)


def _value(val: Any, where: str) -> Decimal:
    if isinstance(val, bool) or not isinstance(val, (int, Decimal)):
        raise InputError(where, f"val must be a number, got {type(val).__name__} {val!r}")
    value = Decimal(val)
    if not value.is_finite():
        raise InputError(where, f"val must be finite, got {val!r}")
    return value


def _text(row: dict[str, Any], key: str, where: str) -> str:
    value = row[key]
    if not isinstance(value, str) or not value.strip():
        raise InputError(where, f"{key} must be a non-empty string, got {value!r}")
    return value


def _trailing_zeros(value: Decimal) -> int | None:
    """Trailing zeros of a non-zero integer; None for zero or a fraction."""
    if value == 0 or value != value.to_integral_value():
        return None
    n, count = abs(int(value)), 0
    while n % 10 == 0:
        n //= 10
        count += 1
    return count


def rerounds(earlier: Decimal, later: Decimal, precision: int) -> bool:
    """Is ``later`` just ``earlier`` rounded to the later filing's ``precision``?

    ``precision`` is that filing's usual number of trailing zeros for the unit
    (3 = thousands, 6 = millions). See the module docstring for the rule.
    """
    later_zeros = _trailing_zeros(later)
    if later_zeros is None or earlier == later or earlier != earlier.to_integral_value():
        return False
    p = min(later_zeros, precision)
    if p < 3:
        return False
    earlier_zeros = _trailing_zeros(earlier)
    if earlier_zeros is not None and earlier_zeros >= p:
        return False
    return abs(earlier - later) * 2 <= Decimal(10) ** p


class _Filing:
    """What validation keeps of one accession: its form and date, and row references."""

    __slots__ = ("accession", "form", "filed", "refs", "zeros")

    def __init__(self, accession: str, form: str, filed: dt.date):
        self.accession = accession
        self.form = form
        self.filed = filed
        self.refs: list[tuple[str, str, str, int]] = []
        self.zeros: dict[str, Counter[int]] = defaultdict(Counter)

    def precision(self, unit: str) -> int:
        counts = self.zeros.get(unit)
        if not counts:
            return 0
        return max(counts.items(), key=lambda kv: (kv[1], -kv[0]))[0]


def _rows(data: Any, file: str) -> Iterator[tuple[str, str, str, int, Any]]:
    """Every (taxonomy, concept, unit, index, row), checking the nesting on the way."""
    facts = data.get("facts")
    if not isinstance(facts, dict):
        raise InputError(f"{file}: facts", "missing or not an object")
    for taxonomy, concepts in facts.items():
        if not isinstance(concepts, dict):
            raise InputError(f"{file}: {taxonomy}", "taxonomy must map concepts to objects")
        for concept, body in concepts.items():
            where = f"{file}: {taxonomy}:{concept}"
            if not isinstance(body, dict) or "units" not in body:
                raise InputError(where, "missing key 'units'")
            units = body["units"]
            if not isinstance(units, dict):
                raise InputError(where, "'units' must map unit names to row lists")
            for unit, rows in units.items():
                if not isinstance(rows, list):
                    raise InputError(f"{where} [{unit}]", "rows must be a list")
                for index, row in enumerate(rows):
                    yield taxonomy, concept, unit, index, row


def _check_row(row: Any, where: str) -> tuple[Period, Decimal, str, str, dt.date]:
    if not isinstance(row, dict):
        raise InputError(where, f"row must be an object, got {type(row).__name__}")
    for key in _REQUIRED:
        if key not in row:
            raise InputError(where, f"missing key {key!r}")
    value = _value(row["val"], where)
    end = av.parse_date(row["end"], f"{where}: end")
    start = av.parse_date(row["start"], f"{where}: start") if row.get("start") is not None else None
    if start is not None and start > end:
        raise InputError(where, f"impossible period: start {start} is after end {end}")
    accession = _text(row, "accn", where)
    if not _ACCESSION.match(accession):
        raise InputError(where, f"accn {accession!r} is not an accession number (0000000000-00-000000)")
    form = _text(row, "form", where)
    filed = av.parse_date(row["filed"], f"{where}: filed")
    return Period(start=start, end=end), value, accession, form, filed


def _validate(data: Any, file: str) -> tuple[int, str, dict[str, _Filing], int]:
    if not isinstance(data, dict):
        raise InputError(file, "a companyfacts object is required at the top level")
    for key in ("cik", "entityName", "facts"):
        if key not in data:
            raise InputError(file, f"missing key {key!r}")
    cik = _cik(data["cik"], f"{file}: cik")
    name = data["entityName"]
    if not isinstance(name, str) or not name.strip():
        raise InputError(f"{file}: entityName", f"must be a non-empty string, got {name!r}")
    filings: dict[str, _Filing] = {}
    rows = 0
    for taxonomy, concept, unit, index, row in _rows(data, file):
        where = f"{file}: {taxonomy}:{concept} [{unit}] row {index}"
        check_unit(unit, where)
        _, value, accession, form, filed = _check_row(row, where)
        filing = filings.get(accession)
        if filing is None:
            filing = filings[accession] = _Filing(accession, form, filed)
        elif (filing.form, filing.filed) != (form, filed):
            raise InputError(
                where,
                f"accession {accession} is form {form} filed {filed} here but "
                f"{filing.form} filed {filing.filed} in an earlier row",
            )
        filing.refs.append((taxonomy, concept, unit, index))
        zeros = _trailing_zeros(value)
        if zeros is not None:
            filing.zeros[unit][zeros] += 1
        rows += 1
    return cik, name.strip(), filings, rows


def _submissions(path: str | Path, cik: int) -> tuple[dict[str, str], tuple[str, ...], bool]:
    """Acceptance times by accession, the tickers, and whether the clock is New York's."""
    file = str(path)
    data = read_json(path)
    if not isinstance(data, dict):
        raise InputError(file, "a submissions object is required at the top level")
    if "cik" in data and _cik(data["cik"], f"{file}: cik") != cik:
        raise InputError(f"{file}: cik", f"is {data['cik']!r}, but the company facts are CIK {cik}")
    try:
        recent = data["filings"]["recent"]
        numbers = recent["accessionNumber"]
        accepted = recent["acceptanceDateTime"]
    except (KeyError, TypeError) as exc:
        raise InputError(file, f"missing key {exc.args[0]!r} under filings.recent") from None
    if not isinstance(numbers, list) or not isinstance(accepted, list):
        raise InputError(f"{file}: filings.recent", "accessionNumber and acceptanceDateTime must be lists")
    if len(numbers) != len(accepted):
        raise InputError(f"{file}: filings.recent", "accessionNumber and acceptanceDateTime differ in length")
    acceptances: dict[str, str] = {}
    for index, (number, text) in enumerate(zip(numbers, accepted, strict=True)):
        where = f"{file}: filings.recent row {index}"
        if not isinstance(number, str) or not _ACCESSION.match(number):
            raise InputError(where, f"accessionNumber {number!r} is not an accession number")
        if text in (None, ""):
            continue
        if not isinstance(text, str):
            raise InputError(where, f"acceptanceDateTime must be a string, got {text!r}")
        av.from_acceptance(text, where=f"{where}: acceptanceDateTime")  # refuse bad text now
        acceptances[number] = text
    tickers = data.get("tickers") or []
    if not isinstance(tickers, list) or not all(isinstance(t, str) for t in tickers):
        raise InputError(f"{file}: tickers", "must be a list of strings")
    return acceptances, tuple(t for t in tickers if t), av.edgar_clock_is_new_york(acceptances.values())


# ------------------------------------------------------------------ loading


def load(
    mem: Memory,
    scope: Scope,
    companyfacts: str | Path,
    submissions: str | Path | None = None,
    *,
    ny_clock: bool | None = None,
    reround: bool = True,
    show_progress: bool | None = None,
) -> LoadReport:
    """Load one companyfacts file (and the company's submissions file, for acceptance times).

    ``ny_clock`` forces (True/False) the submissions clock reading; None detects it
    (see :mod:`.availability`). ``reround=False`` makes every changed value a new
    version. Returns a :class:`LoadReport`.
    """
    started = time.monotonic()
    scope = mem.scope(scope)
    file = str(companyfacts)
    data = read_json(companyfacts)
    cik, name, filings, rows = _validate(data, file)
    acceptances: dict[str, str] = {}
    tickers: tuple[str, ...] = ()
    detected = False
    if submissions is not None:
        acceptances, tickers, detected = _submissions(submissions, cik)
    clock = detected if ny_clock is None else ny_clock

    publisher = entity_id(cik)
    plan = []
    for filing in filings.values():
        when = av.filing_availability(
            filing.accession, filed=filing.filed, acceptances=acceptances, ny_clock=clock,
            where=f"{file}: accession {filing.accession}",
        )
        plan.append((when.at, filing.accession, filing, when))
    plan.sort(key=lambda p: (p[0], p[1]))

    report = LoadReport(file=file, rows=rows)
    mem.put_entity(scope, Entity(id=publisher, name=name, kind="company", aliases=tickers))
    report.entities = 1

    current: dict[tuple[str, str, str], Decimal] = {}
    with progress(f"{Path(file).name}", len(plan), show_progress) as advance:
        for _, accession, filing, when in plan:
            meta = {
                "available_by_rule": when.rule,
                "form": filing.form,
                "filed": filing.filed.isoformat(),
                "accession": accession,
                "cik": str(cik),
            }
            if accession in acceptances:
                meta["acceptance"] = acceptances[accession]
            source = Source(
                id=accession,
                kind=filing.form,
                authority=Authority.PRIMARY,
                available_by=when.at,
                publisher=publisher,
                uri=filing_uri(cik, accession),
                title=f"{filing.form} filed {filing.filed.isoformat()}",
                meta=meta,
            )
            items, rerounded, duplicates = _facts(data, filing, publisher, current, reround)
            result = write_filing(mem, scope, source, items, f"{file}: accession {accession}")
            report.sources += 1
            report.sources_recorded += result.sources_recorded
            report.add_rule(when.rule)
            report.assertions += len(items) - duplicates
            report.duplicates += duplicates
            report.rerounded += rerounded
            report.versions_created += result.created
            report.evidence_added += result.evidence_added
            report.unchanged += result.unchanged
            del items
            advance()
    report.seconds = round(time.monotonic() - started, 3)
    return report


def _facts(
    data: dict[str, Any],
    filing: _Filing,
    entity: str,
    current: dict[tuple[str, str, str], Decimal],
    reround: bool,
) -> tuple[list[FactIn], int, int]:
    """The FactIns of one filing (validated rows), with re-roundings made corroborations."""
    facts = data["facts"]
    items: list[FactIn] = []
    seen: set[tuple[str, str, str, Decimal]] = set()
    rerounded = duplicates = 0
    for taxonomy, concept, unit, index in filing.refs:
        row = facts[taxonomy][concept]["units"][unit][index]
        attribute = f"{taxonomy}:{concept}"
        start = row.get("start")
        period = Period(start=dt.date.fromisoformat(start) if start else None,
                        end=dt.date.fromisoformat(row["end"]))
        value = Decimal(row["val"])
        key = (attribute, unit, period.text)
        earlier = current.get(key)
        if (reround and earlier is not None
                and rerounds(earlier, value, filing.precision(unit))):
            value = earlier
            rerounded += 1
        if (*key, value) in seen:
            duplicates += 1
        seen.add((*key, value))
        current[key] = value
        items.append(FactIn(entity=entity, attribute=attribute, unit=unit, period=period,
                            value=value, sources=(filing.accession,)))
    return items, rerounded, duplicates
