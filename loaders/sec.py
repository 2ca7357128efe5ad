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
untouched. Numbers are parsed as exact decimals (``ijson``'s ``use_float=False``); a JSON
``true`` or a string where a number belongs is refused; ``NaN``/``Infinity`` too.

Memory. The file is streamed (``ijson``): each row is checked as it is read and kept on
disk in a temporary SQLite spool grouped by accession (:mod:`.spool`), together with the
one value per fact key the re-rounding rule compares against; FactIn objects are built
for one accession at a time, written, and dropped. Memory is flat in the size of the
file: at any time Python holds one row being parsed and one filing's facts.

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

import ijson

from graphmem import values
from graphmem.errors import InputError
from graphmem.models import Authority, Entity, FactIn, Period, Scope, Source

from . import availability as av
from ._common import LoadReport, Writer, check_unit, progress, write_filing
from .spool import Row, Spool

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
    try:  # graphmem's bounds on a decimal, before anything reads its digits
        return values.typed(value)
    except ValueError as exc:
        raise InputError(where, f"val out of bounds: {exc}") from None


def _text(row: dict[str, Any], key: str, where: str) -> str:
    value = row[key]
    if not isinstance(value, str) or not value.strip():
        raise InputError(where, f"{key} must be a non-empty string, got {value!r}")
    return value


def _trailing_zeros(value: Decimal) -> int | None:
    """Trailing zeros of a non-zero integer; None for zero or a fraction."""
    if value == 0 or value != value.to_integral_value():
        return None
    digits = str(abs(int(value)))  # counted on the text: once per row of the file
    return len(digits) - len(digits.rstrip("0"))


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
    """What validation keeps of one accession in memory: its form and date (and the text
    the date was read from), and how its values are rounded per unit (its rows go to the
    spool)."""

    __slots__ = ("accession", "form", "filed", "filed_text", "zeros", "_precision")

    def __init__(self, accession: str, form: str, filed: dt.date, filed_text: str):
        self.accession = accession
        self.form = form
        self.filed = filed
        self.filed_text = filed_text
        self.zeros: dict[str, Counter[int]] = defaultdict(Counter)
        self._precision: dict[str, int] = {}

    def precision(self, unit: str) -> int:
        """The usual trailing zeros of the unit's values, once per unit (asked per row;
        only after the whole file is read, when ``zeros`` is complete)."""
        if unit not in self._precision:
            counts = self.zeros.get(unit)
            self._precision[unit] = max(counts.items(), key=lambda kv: (kv[1], -kv[0]))[0] if counts else 0
        return self._precision[unit]


_ROW_DEPTH = 6  # facts > taxonomy > concept > "units" > unit > row index
FACTS = object()  # what _stream yields for the start of `facts`: present, and an object


def _stream(path: str | Path) -> Iterator[tuple[tuple[str | int, ...], Any]]:
    """(location, value) of each top-level value but ``facts`` and of each row, streamed.

    ``location`` is the path of keys (and the row's index) down to the value. The nesting
    above the rows is checked on the way; each row and top-level value is built alone, so
    no more than one row is ever held (``ijson``, decimals exact as with ``json.load``).
    """
    file = str(path)
    keys: list[str | int] = []  # the current key (map) or index (array) of each open container
    arrays: list[bool] = []  # whether each open container is an array
    seen_units: list[bool] = []  # per open concept body: has it a "units" key?
    try:
        with Path(path).open("rb") as handle:
            events = ijson.basic_parse(handle, use_float=False)
            for event, value in events:
                if event == "map_key":
                    keys[-1] = value
                    if len(keys) == 4 and value == "units":
                        seen_units[-1] = True
                    continue
                if event in ("end_map", "end_array"):
                    if len(keys) == 4:
                        _check_units(seen_units.pop(), keys, file)
                    keys.pop()
                    arrays.pop()
                    continue
                if arrays and arrays[-1]:
                    keys[-1] = int(keys[-1]) + 1
                location = tuple(keys)
                if (len(location) == 1 and location[0] != "facts") or (
                        len(location) == _ROW_DEPTH and location[3] == "units"):
                    yield location, _build(event, value, events)
                    continue
                if len(location) > 3 and location[3] != "units":
                    _build(event, value, events)  # a label or description: read past it
                    continue
                _check_nesting(location, event, file)
                if len(location) == 1:
                    yield location, FACTS
                if event in ("start_map", "start_array"):
                    keys.append(-1 if event == "start_array" else "")
                    arrays.append(event == "start_array")
                    if len(keys) == 4:
                        seen_units.append(False)
    except FileNotFoundError:
        raise InputError(file, "file not found") from None
    except (ijson.JSONError, UnicodeDecodeError, ValueError) as exc:
        raise InputError(file, f"not valid JSON: {_first_line(exc)}") from None


def _first_line(exc: BaseException) -> str:
    """The parser's message without yajl's multi-line excerpt (or a bytes repr)."""
    text = exc.args[0] if exc.args else str(exc)
    text = text.decode("utf-8", "replace") if isinstance(text, bytes) else str(text)
    return text.strip().splitlines()[0] if text.strip() else type(exc).__name__


def _build(event: str, value: Any, events: Iterator[tuple[str, Any]]) -> Any:
    """The whole value that starts with this event (consuming the rest of it).

    Built by hand rather than with ``ijson.ObjectBuilder``: a row is a flat map of
    scalars, and this loop is most of the parse's time.
    """
    if event == "start_map":
        built: dict[str, Any] = {}
        key = ""
        for event, value in events:
            if event == "map_key":
                key = value
            elif event == "end_map":
                return built
            else:  # a scalar is its own value: no call for it (most of a row's values)
                built[key] = _build(event, value, events) if event in _OPENS else value
    if event == "start_array":
        items: list[Any] = []
        for event, value in events:
            if event == "end_array":
                return items
            items.append(_build(event, value, events) if event in _OPENS else value)
    return value


_OPENS = frozenset({"start_map", "start_array"})


def _check_nesting(location: tuple[str | int, ...], event: str, file: str) -> None:
    """facts -> taxonomy -> concept -> units -> unit -> rows: each level the right kind."""
    is_map, is_list = event == "start_map", event == "start_array"
    if not location and not is_map:
        raise InputError(file, "a companyfacts object is required at the top level")
    if len(location) == 1 and not is_map:
        raise InputError(f"{file}: facts", "missing or not an object")
    if len(location) == 2 and not is_map:
        raise InputError(f"{file}: {location[1]}", "taxonomy must map concepts to objects")
    if len(location) == 3 and not is_map:
        raise InputError(f"{file}: {location[1]}:{location[2]}", "missing key 'units'")
    if len(location) == 4 and location[3] == "units" and not is_map:
        raise InputError(f"{file}: {location[1]}:{location[2]}", "'units' must map unit names to row lists")
    if len(location) == 5 and location[3] == "units" and not is_list:
        raise InputError(f"{file}: {location[1]}:{location[2]} [{location[4]}]", "rows must be a list")


def _check_units(seen: bool, keys: list[str | int], file: str) -> None:
    if not seen:
        raise InputError(f"{file}: {keys[1]}:{keys[2]}", "missing key 'units'")


class _Rows:
    """The row checks, remembering what a file repeats: each distinct unit, date text and
    filing is checked once, not once per row (Tesla's 17,718 rows name 11 units, 239
    dates and 50 filings). Errors are raised with ``where`` relative to the row
    ("" or ": end"); the caller names the file and row (see :func:`_validate`)."""

    def __init__(self) -> None:
        self.filings: dict[str, _Filing] = {}
        self._units: set[str] = set()
        self._dates: dict[str, str] = {}  # a checked date text -> its ISO text

    def check(self, row: Any, unit: str) -> tuple[_Filing, str | None, str, Decimal]:
        """The row's filing, ISO start (or None) and end, and exact value."""
        if unit not in self._units:
            check_unit(unit, "")
            self._units.add(unit)
        if not isinstance(row, dict):
            raise InputError("", f"row must be an object, got {type(row).__name__}")
        for key in _REQUIRED:
            if key not in row:
                raise InputError("", f"missing key {key!r}")
        value = _value(row["val"], "")
        end = self._date(row["end"], ": end")
        start = row.get("start")
        if start is not None:
            start = self._date(start, ": start")
            if start > end:  # ISO texts order as the dates do
                raise InputError("", f"impossible period: start {start} is after end {end}")
        return self._filing(row), start, end, value

    def _date(self, text: Any, where: str) -> str:
        """The ISO text of a date text (checked the first time it is seen)."""
        iso = self._dates.get(text) if isinstance(text, str) else None
        if iso is None:
            iso = av.parse_date(text, where).isoformat()
            self._dates[text] = iso
        return iso

    def _filing(self, row: dict[str, Any]) -> _Filing:
        """The row's accession, form and filing date, one per accession across the file."""
        filing = self.filings.get(row["accn"]) if isinstance(row["accn"], str) else None
        if filing is not None and row["form"] == filing.form and row["filed"] == filing.filed_text:
            return filing  # as an earlier row of this accession had them: checked then
        accession = _text(row, "accn", "")
        if not _ACCESSION.match(accession):
            raise InputError("", f"accn {accession!r} is not an accession number (0000000000-00-000000)")
        form = _text(row, "form", "")
        filed = dt.date.fromisoformat(self._date(row["filed"], ": filed"))
        if filing is None:
            filing = self.filings[accession] = _Filing(accession, form, filed, row["filed"])
        elif (filing.form, filing.filed) != (form, filed):
            raise InputError(
                "",
                f"accession {accession} is form {form} filed {filed} here but "
                f"{filing.form} filed {filing.filed} in an earlier row",
            )
        return filing


def _validate(path: str | Path, spool: Spool) -> tuple[int, str, dict[str, _Filing], int]:
    """Check the whole file, row by row as it streams, and spool its rows by accession;
    the first problem raises before anything is written."""
    file = str(path)
    top: dict[str, Any] = {}
    checks = _Rows()
    rows = 0
    for location, row in _stream(path):
        if len(location) == 1:
            top[str(location[0])] = row
            continue
        _, taxonomy, concept, _, unit, index = location
        try:
            filing, start, end, value = checks.check(row, unit)
        except InputError as exc:  # named here, not built for every row that passes
            raise InputError(f"{file}: {taxonomy}:{concept} [{unit}] row {index}{exc.where}",
                             exc.reason) from None
        spool.add(filing.accession, Row(taxonomy, concept, unit, start, end, value))
        zeros = _trailing_zeros(value)
        if zeros is not None:
            filing.zeros[unit][zeros] += 1
        rows += 1
    for key in ("cik", "entityName", "facts"):
        if key not in top:
            raise InputError(file, f"missing key {key!r}")
    cik = _cik(top["cik"], f"{file}: cik")
    name = top["entityName"]
    if not isinstance(name, str) or not name.strip():
        raise InputError(f"{file}: entityName", f"must be a non-empty string, got {name!r}")
    spool.seal()
    return cik, name.strip(), checks.filings, rows


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
    mem: Writer,
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
    with Spool() as spool:
        report = _load(mem, scope, companyfacts, submissions, spool, ny_clock, reround, show_progress)
    report.seconds = round(time.monotonic() - started, 3)
    return report


def _load(mem: Writer, scope: Scope, companyfacts: str | Path, submissions: str | Path | None,
          spool: Spool, ny_clock: bool | None, reround: bool, show_progress: bool | None) -> LoadReport:
    """``load``, with the file's rows spooled by accession."""
    file = str(companyfacts)
    cik, name, filings, rows = _validate(companyfacts, spool)
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
            items, rerounded, duplicates = _facts(spool, filing, publisher, reround)
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
    return report


def _facts(spool: Spool, filing: _Filing, entity: str, reround: bool) -> tuple[list[FactIn], int, int]:
    """The FactIns of one filing (validated rows), with re-roundings made corroborations."""
    rows = list(spool.rows(filing.accession))
    keys = [f"{r.taxonomy}:{r.concept}\x1f{r.unit}\x1f{r.start or ''}\x1f{r.end}" for r in rows]
    current = spool.current(set(keys)) if reround else {}
    changed: dict[str, Decimal] = {}
    items: list[FactIn] = []
    seen: set[tuple[str, Decimal]] = set()
    rerounded = duplicates = 0
    periods = _Periods()
    for row, key in zip(rows, keys, strict=True):
        value = row.value
        earlier = current.get(key)
        if (reround and earlier is not None
                and rerounds(earlier, value, filing.precision(row.unit))):
            value = earlier
            rerounded += 1
        if (key, value) in seen:
            duplicates += 1
        seen.add((key, value))
        if current.get(key) != value:
            current[key] = changed[key] = value
        items.append(FactIn(entity=entity, attribute=f"{row.taxonomy}:{row.concept}", unit=row.unit,
                            period=periods.of(row.start, row.end), value=value,
                            sources=(filing.accession,)))
    if reround:
        spool.keep_current(changed)  # only what moved: the rest is in the spool already
    return items, rerounded, duplicates


class _Periods(dict[tuple[str | None, str], Period]):
    """One Period per (start, end) of a filing: its rows report a few periods for many
    concepts, and a Period is immutable, so its FactIns share them."""

    def of(self, start: str | None, end: str) -> Period:
        period = self.get((start, end))
        if period is None:
            period = self[start, end] = Period(start=dt.date.fromisoformat(start) if start else None,
                                               end=dt.date.fromisoformat(end))
        return period
