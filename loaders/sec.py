"""SEC EDGAR company facts (``data.sec.gov/api/xbrl/companyfacts/``): reading one company.

:func:`read` turns one company's companyfacts file (and its submissions files, for
acceptance times) into :class:`CompanyFacts`: the company, its filings in the order they
became public, and for each filing a :class:`Batch` of what graphmem writes for it,

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
* one fact per row, keyed by (CIK, ``"taxonomy:concept"``, unit, period)
  with the period from ``start``/``end`` only: ``fy``/``fp`` name the *filing's* focus
  and ``frame`` sits only on the last-filed row, so neither is point-in-time safe.

Reading has no database: it is the input layer that the online load
(:mod:`graphmem.loaders.edgar`, and :func:`load` here for one file) and an offline
bootstrap share. Writing is theirs.

What is accepted. Any taxonomy (``us-gaap``, ``ifrs-full``, ``dei``, ``srt``, company
ones), any form (10-K, 20-F, 40-F, 6-K, 8-K, proxies, prospectuses ...), ``fy``/``fp``
and labels null or absent, values from tiny fractions to 1e14 in any currency, and any
unit id the SEC emits (``_common.unit_problem`` refuses only what cannot be a unit).
The unit is part of the key as spelled: ``Segment`` and ``segment`` in one file are two
keys (XBRL unit ids are case-sensitive; the report lists such case variants).

Rows that cannot be facts are quarantined, not fatal (:mod:`.quarantine`): a row with
no ``end``/``val``/``accn``/``form``/``filed``, a ``val`` that is not a finite number (a
JSON ``true`` or a string included), an impossible date, ``start`` after ``end``, an
``accn`` that is not an accession number, a form or filed date that differs from an
earlier row of the same accession, an impossible unit id, or a fact that graphmem's
models refuse (their bounds). It is left out and recorded; every other row of its filing
loads. What is not companyfacts JSON at all — not JSON, truncated, binary, the wrong
shape, no ``cik`` — raises :class:`graphmem.InputError` naming the file before any of
that company is written (the whole file is read before its first filing is).
Numbers are parsed as exact decimals (``ijson``'s ``use_float=False``); ``NaN`` and
``Infinity`` are not JSON and fail the file. A number too long for the parser to hold or
convert (a run of more than 600 digits, an exponent of ten digits or more: a 5,000-digit
integer crashed ijson's C backend) is written short before the parser sees it
(:mod:`.longnumbers`): with its exact value when graphmem's bounds take it, else as a
stand-in as far out of bounds, and its row is quarantined (``out-of-bounds``, the detail
saying what the number was). A value nested deeper than any row is read past, not built.

Submissions. A submissions file's ``filings.recent`` block holds about the last 1,000
filings; older ones are in paged files (``CIK##########-submissions-001.json`` ...: the
same columns at the top level, no ``cik``). Every page given is merged; a page named in
``filings.files`` but not given leaves its accessions to the filed-date rule, and the
report says which pages were missing. ``cik`` may be a number or digits with or without
leading zeros. A row whose accession number or acceptance time cannot be read is
quarantined (reason ``bad-acceptance``) and its filing keeps the filed-date rule. An
acceptance time can be days before the ``filed`` date (an after-hours Friday acceptance
is dated the next business day): the acceptance time is when the filing became public,
and it is what ``available_by`` takes.

Memory. The file is streamed (``ijson``): each row is checked as it is read and kept on
disk in a temporary SQLite spool grouped by accession (:mod:`.spool`), together with the
one value per fact key the re-rounding rule compares against; a filing's facts are built
for one accession at a time and dropped once written. Memory is flat in the size of the
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

Resuming. Each batch carries a digest of what it writes (its source's times and form,
every key and value after re-rounding). :meth:`CompanyFacts.batches` is given the
digests a previous load recorded per filing and marks the batches whose digest is
unchanged as ``recorded``: their facts are never built, while the re-rounding state
still moves through them, so the filings after them come out exactly as in one clean
load.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
from collections import Counter, defaultdict
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from decimal import Decimal
from functools import cached_property
from pathlib import Path
from typing import Any

import ijson

from graphmem import limits, values
from graphmem.errors import InputError
from graphmem.models import Authority, Entity, FactIn, FactRow, Period, Source

from . import availability as av
from . import longnumbers
from ._common import LoadReport, unit_problem
from .quarantine import Quarantined, Sink
from .spool import Row, Spool
from .universe import Company, Document
from .ziparchive import ArchiveError

__all__ = ["Acceptances", "Batch", "CompanyFacts", "LoadReport", "entity_id", "filing_uri", "load", "read",
           "read_json", "read_submissions", "reading", "rerounds"]

_ACCESSION = re.compile(r"^\d{10}-\d{2}-\d{6}$")
_REQUIRED = ("end", "val", "accn", "form", "filed")
#: Changes whenever what a batch writes for the same rows changes, so that filings
#: recorded by an older loader are written again (the write path's idempotency keeps
#: what is already there).
DIGEST_VERSION = "1"


def entity_id(cik: int | str) -> str:
    """``cik:1318605`` for CIK 1318605 or ``"0001318605"``."""
    return f"cik:{int(cik)}"


def filing_uri(cik: int | str, accession: str) -> str:
    """The EDGAR filing index page of ``accession``."""
    return (
        f"https://www.sec.gov/Archives/edgar/data/{int(cik)}/"
        f"{accession.replace('-', '')}/{accession}-index.htm"
    )


def document(item: str | Path | Document) -> Document:
    """A Document for a path (a Document stays itself)."""
    return item if isinstance(item, Document) else Document.file(item)


# ------------------------------------------------------------------ reading


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number")


def read_json(source: str | Path | Document) -> Any:
    """The parsed JSON of a file or archive member with exact decimals, or InputError
    naming it."""
    doc = document(source)
    try:
        with doc.open() as handle:
            return json.load(handle, parse_float=Decimal, parse_constant=_no_constant)
    except json.JSONDecodeError as exc:
        raise InputError(doc.name, f"not valid JSON: {exc.msg} at line {exc.lineno} "
                                   f"column {exc.colno}") from None
    except InputError:  # the file cannot be opened: its own reason, not "not valid JSON"
        raise
    except ArchiveError as exc:
        raise InputError(exc.where, exc.reason) from None
    except (UnicodeDecodeError, ValueError, OSError, RecursionError) as exc:
        raise InputError(doc.name, f"not valid JSON: {exc}") from None


def _cik(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise InputError(where, f"cik must be a number or digits, got {type(value).__name__}")
    if isinstance(value, str) and not value.isdigit():
        raise InputError(where, f"cik must be digits, got {value!r}")
    if int(value) <= 0 or len(str(value).lstrip("0")) > 10:
        raise InputError(where, f"cik must be a positive number of at most 10 digits, got {value!r}")
    return int(value)


def _accession_of(value: Any) -> str | None:
    """``value`` when it is an accession number (what a quarantine record names)."""
    return value if isinstance(value, str) and _ACCESSION.match(value) else None


class _Problem(Exception):
    """A row that cannot be a fact: its quarantine reason (see quarantine.REASONS) and detail."""

    def __init__(self, reason: str, detail: str):
        super().__init__(detail)
        self.reason = reason
        self.detail = detail


def _value(val: Any) -> Decimal:
    if isinstance(val, bool) or not isinstance(val, (int, Decimal)):
        raise _Problem("not-a-number", f"val must be a number, got {type(val).__name__} {val!r}")
    value = Decimal(val)
    if not value.is_finite():
        raise _Problem("not-a-number", f"val must be finite, got {val!r}")
    try:  # graphmem's bounds on a decimal, before anything reads its digits
        value = values.typed(value)
    except ValueError as exc:  # a stand-in for a number too long to read says what it was
        raise _Problem("out-of-bounds", f"val out of bounds: {longnumbers.describe(value) or exc}") from None
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
    """What reading keeps of one accession in memory: its form and date (and the text
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


def _attribute_problem(attribute: str) -> str | None:
    """Why a fact named ``attribute`` is past graphmem's bound on an identifier, or None.

    Checked while reading, not left to the FactIn: a filing a resumed load skips as
    recorded never builds its FactIns, and its rows must be quarantined all the same."""
    problem = limits.utf8_problem(attribute, limits.IDENTIFIER_BYTES)
    return None if problem is None else f"FactIn.attribute: {problem}"  # as the FactIn would say


class _Rows:
    """The row checks, remembering what a file repeats: each distinct unit, date text and
    filing is checked once, not once per row (Tesla's 17,718 rows name 11 units, 239
    dates and 50 filings). A row that cannot be a fact raises :class:`_Problem`."""

    def __init__(self) -> None:
        self.filings: dict[str, _Filing] = {}
        self._units: dict[str, str | None] = {}  # unit -> why it cannot be one (None: fine)
        self._attributes: dict[str, str | None] = {}  # "taxonomy:concept" -> why out of bounds (None: fine)
        self._dates: dict[str, str] = {}  # a checked date text -> its ISO text

    def check(self, row: Any, unit: str, attribute: str) -> tuple[_Filing, str | None, str, Decimal]:
        """The row's filing, ISO start (or None) and end, and exact value."""
        if unit not in self._units:
            self._units[unit] = unit_problem(unit)
        if self._units[unit] is not None:
            raise _Problem("bad-unit", self._units[unit])
        if attribute not in self._attributes:
            self._attributes[attribute] = _attribute_problem(attribute)
        if self._attributes[attribute] is not None:
            raise _Problem("out-of-bounds", self._attributes[attribute])
        if not isinstance(row, dict):
            raise _Problem("not-an-object", f"row must be an object, got {type(row).__name__}")
        for key in _REQUIRED:
            if key not in row or row[key] is None:
                raise _Problem("missing-key", f"missing key {key!r}")
        value = _value(row["val"])
        end = self._date(row["end"], "end")
        start = row.get("start")
        if start is not None:
            start = self._date(start, "start")
            if start > end:  # ISO texts order as the dates do
                raise _Problem("impossible-period", f"impossible period: start {start} is after end {end}")
        return self._filing(row), start, end, value

    def _date(self, text: Any, key: str) -> str:
        """The ISO text of a date text (checked the first time it is seen)."""
        iso = self._dates.get(text) if isinstance(text, str) else None
        if iso is None:
            try:
                iso = av.parse_date(text, key).isoformat()
            except InputError as exc:
                raise _Problem("bad-date", f"{key}: {exc.reason}") from None
            self._dates[text] = iso
        return iso

    def _filing(self, row: dict[str, Any]) -> _Filing:
        """The row's accession, form and filing date, one per accession across the file."""
        accession = row["accn"]
        filing = self.filings.get(accession) if isinstance(accession, str) else None
        if filing is not None and row["form"] == filing.form and row["filed"] == filing.filed_text:
            return filing  # as an earlier row of this accession had them: checked then
        if not isinstance(accession, str) or not _ACCESSION.match(accession):
            raise _Problem("bad-accession", f"accn {accession!r} is not an accession number (0000000000-00-000000)")
        form = row["form"]
        if not isinstance(form, str) or not form.strip():
            raise _Problem("bad-form", f"form must be a non-empty string, got {form!r}")
        too_long = limits.utf8_problem(form, limits.IDENTIFIER_BYTES)
        if too_long:  # the form is its Source's kind: refused there, it would fail the whole company
            raise _Problem("out-of-bounds", f"form (its Source's kind): {too_long}")
        filed = self._filed(row["filed"])
        if filing is None:
            filing = self.filings[accession] = _Filing(accession, form, filed, row["filed"])
        elif (filing.form, filing.filed) != (form, filed):
            raise _Problem(
                "filing-mismatch",
                f"accession {accession} is form {form} filed {filed} here but "
                f"{filing.form} filed {filing.filed} in an earlier row",
            )
        return filing

    def _filed(self, text: Any) -> dt.date:
        """A filing date whose end of day in New York is a time (that of 9999-12-31 is
        past the last one a datetime holds: no filing became public then)."""
        filed = dt.date.fromisoformat(self._date(text, "filed"))
        try:
            av.filed_end_of_day(filed)
        except InputError as exc:
            raise _Problem("bad-date", f"filed: {exc.reason}") from None
        return filed


@dataclass
class _Read:
    """What reading a companyfacts file gives: the company, its filings and counts."""

    cik: int
    name: str | None
    filings: dict[str, _Filing]
    rows: int
    quarantined: list[Quarantined]
    case_variants: list[str]


def _read_facts(doc: Document, spool: Spool, sink: Sink | None) -> _Read:
    """Check the whole file row by row as it streams, spool its rows by accession, and
    quarantine the rows that cannot be facts; a file that is not companyfacts raises."""
    file = doc.name
    top: dict[str, Any] = {}
    checks = _Rows()
    rows = 0
    kept: list[Quarantined] = []
    units: dict[tuple[str, str], set[str]] = defaultdict(set)  # (taxonomy, concept) -> its units
    for location, row in _stream(doc):
        if len(location) == 1:
            top[str(location[0])] = row
            continue
        _, taxonomy, concept, _, unit, index = location
        rows += 1
        try:
            filing, start, end, value = checks.check(row, unit, f"{taxonomy}:{concept}")
        except _Problem as problem:  # named here, not built for every row that passes
            record = Quarantined(file=file, attribute=f"{taxonomy}:{concept}", unit=str(unit), row=int(index),
                                 accession=_accession_of(row.get("accn") if isinstance(row, dict) else None),
                                 reason=problem.reason, detail=problem.detail)
            kept.append(record)
            if sink is not None:
                sink(record)
            continue
        units[taxonomy, concept].add(unit)
        spool.add(filing.accession, Row(taxonomy, concept, unit, start, end, value, int(index)))
        zeros = _trailing_zeros(value)
        if zeros is not None:
            filing.zeros[unit][zeros] += 1
    if "facts" not in top:
        raise InputError(file, "missing key 'facts'" + ("; it looks like a submissions file (it has 'filings'): "
                                                         "give it as the submissions" if "filings" in top else ""))
    if "cik" not in top:
        raise InputError(file, "missing key 'cik'")
    cik = _cik(top["cik"], f"{file}: cik")
    name = top.get("entityName")
    spool.seal()
    variants = sorted(f"{taxonomy}:{concept} [{', '.join(sorted(found))}]" for (taxonomy, concept), found
                      in units.items() if len({u.lower() for u in found}) < len(found))
    return _Read(cik, name.strip() if isinstance(name, str) and name.strip() else None,
                 checks.filings, rows, kept, variants)


# ------------------------------------------------------------------ submissions


@dataclass
class Acceptances:
    """What a company's submissions files say: acceptance times by accession, tickers,
    whether the clock is New York's, the pages named but not given, and the rows that
    could not be read."""

    times: dict[str, str] = field(default_factory=dict)
    tickers: tuple[str, ...] = ()
    ny_clock: bool = False
    missing_pages: tuple[str, ...] = ()
    quarantined: list[Quarantined] = field(default_factory=list)


def _columns(block: Any, where: str) -> tuple[list[Any], list[Any]]:
    """The accessionNumber and acceptanceDateTime columns of a recent block or a page."""
    if not isinstance(block, dict) or "accessionNumber" not in block or "acceptanceDateTime" not in block:
        raise InputError(where, "missing key accessionNumber or acceptanceDateTime")
    numbers, accepted = block["accessionNumber"], block["acceptanceDateTime"]
    if not isinstance(numbers, list) or not isinstance(accepted, list):
        raise InputError(where, "accessionNumber and acceptanceDateTime must be lists")
    if len(numbers) != len(accepted):
        raise InputError(where, "accessionNumber and acceptanceDateTime differ in length")
    return numbers, accepted


def read_submissions(docs: Sequence[Document], cik: int, sink: Sink | None = None) -> Acceptances:
    """Merge a company's submissions files (its main file and any pages, in any order)."""
    out = Acceptances()
    named: set[str] = set()
    given: set[str] = set()
    for doc in docs:
        data = read_json(doc)
        if not isinstance(data, dict):
            raise InputError(doc.name, "a submissions object is required at the top level")
        if "cik" in data and _cik(data["cik"], f"{doc.name}: cik") != cik:
            raise InputError(f"{doc.name}: cik", f"is {data['cik']!r}, but the company facts are CIK {cik}")
        given.add(Path(doc.name.rpartition(":")[2]).name)
        if "filings" in data:  # a main file: its recent block, its pages, its tickers
            filings = data["filings"]
            if not isinstance(filings, dict) or "recent" not in filings:
                raise InputError(doc.name, "missing key 'recent' under filings")
            numbers, accepted = _columns(filings["recent"], f"{doc.name}: filings.recent")
            where = f"{doc.name}: filings.recent"
            named |= {f["name"] for f in filings.get("files") or [] if isinstance(f, dict)
                      and isinstance(f.get("name"), str)}
            tickers = data.get("tickers") or []
            if not isinstance(tickers, list) or not all(isinstance(t, str) for t in tickers):
                raise InputError(f"{doc.name}: tickers", "must be a list of strings")
            out.tickers = tuple(dict.fromkeys(out.tickers + tuple(t for t in tickers if t)))
        else:
            numbers, accepted = _columns(data, doc.name)
            where = doc.name
        for index, (number, text) in enumerate(zip(numbers, accepted, strict=True)):
            problem = _acceptance_problem(number, text)
            if problem is None:
                if text not in (None, ""):
                    out.times[number] = text
                continue
            record = Quarantined(file=doc.name, row=index, reason="bad-acceptance", accession=_accession_of(number),
                                 detail=f"{where} row {index}: {problem}")
            out.quarantined.append(record)
            if sink is not None:
                sink(record)
    out.missing_pages = tuple(sorted(n for n in named if n not in given and not _page_given(n, given)))
    out.ny_clock = av.edgar_clock_is_new_york(out.times.values())
    return out


def _page_given(name: str, given: set[str]) -> bool:
    """Was the page the SEC names ``CIK##########-submissions-001.json`` given under
    another name (``submissions-CIK##########-company-001.json``)?"""
    match = re.search(r"CIK(\d{10})-submissions-(\d+)\.json$", name)
    if not match:
        return False
    return any(match[1] in g and re.search(rf"-{match[2]}\.json$", g) for g in given)


def _acceptance_problem(number: Any, text: Any) -> str | None:
    if not isinstance(number, str) or not _ACCESSION.match(number):
        return f"accessionNumber {number!r} is not an accession number"
    if text in (None, ""):
        return None
    if not isinstance(text, str):
        return f"acceptanceDateTime must be a string, got {text!r}"
    try:
        av.from_acceptance(text)
    except InputError as exc:
        return f"acceptanceDateTime: {exc.reason}"
    return None


_ROW_DEPTH = 6  # facts > taxonomy > concept > "units" > unit > row index
FACTS = object()  # what _stream yields for the start of `facts`: present, and an object


def _stream(doc: Document) -> Iterator[tuple[tuple[str | int, ...], Any]]:
    """(location, value) of each top-level value but ``facts`` and of each row, streamed.

    ``location`` is the path of keys (and the row's index) down to the value. The nesting
    above the rows is checked on the way; each row and top-level value is built alone, so
    no more than one row is ever held (``ijson``, decimals exact as with ``json.load``).
    """
    file = doc.name
    keys: list[str | int] = []  # the current key (map) or index (array) of each open container
    arrays: list[bool] = []  # whether each open container is an array
    seen_units: list[bool] = []  # per open concept body: has it a "units" key?
    try:
        with doc.open() as handle:
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
    except InputError:  # the wrong shape, or a file that cannot be opened: named as it was raised
        raise
    except ArchiveError as exc:
        raise InputError(exc.where, exc.reason) from None
    except (ijson.JSONError, UnicodeDecodeError, ValueError, OSError) as exc:
        raise InputError(file, f"not valid JSON: {_first_line(exc)}") from None


def _first_line(exc: BaseException) -> str:
    """The parser's message without yajl's multi-line excerpt (or a bytes repr)."""
    text = exc.args[0] if exc.args else str(exc)
    text = text.decode("utf-8", "replace") if isinstance(text, bytes) else str(text)
    return text.strip().splitlines()[0] if text.strip() else type(exc).__name__


def _build(event: str, value: Any, events: Iterator[tuple[str, Any]], depth: int = 0) -> Any:
    """The whole value that starts with this event (consuming the rest of it).

    Built by hand rather than with ``ijson.ObjectBuilder``: a row is a flat map of
    scalars, and this loop is most of the parse's time. A container nested more than
    _MAX_DEPTH deep is read past and stands as a :class:`_TooDeep` (no row has one, and
    building it would recurse as deep as the file goes).
    """
    if event in _OPENS and depth >= _MAX_DEPTH:
        _skip(events)
        return _TooDeep()
    if event == "start_map":
        built: dict[str, Any] = {}
        key = ""
        for event, value in events:
            if event == "map_key":
                key = value
            elif event == "end_map":
                return built
            else:  # a scalar is its own value: no call for it (most of a row's values)
                built[key] = _build(event, value, events, depth + 1) if event in _OPENS else value
    if event == "start_array":
        items: list[Any] = []
        for event, value in events:
            if event == "end_array":
                return items
            items.append(_build(event, value, events, depth + 1) if event in _OPENS else value)
    return value


_MAX_DEPTH = 32


class _TooDeep:
    """A value nested deeper than _MAX_DEPTH, read past (what a row check reports)."""

    def __repr__(self) -> str:
        return f"<nested more than {_MAX_DEPTH} deep>"


def _skip(events: Iterator[tuple[str, Any]]) -> None:
    """Read past the rest of a container whose start was just read."""
    depth = 1
    for event, _ in events:
        if event in _OPENS:
            depth += 1
        elif event in _CLOSES:
            depth -= 1
            if not depth:
                return


_OPENS = frozenset({"start_map", "start_array"})
_CLOSES = frozenset({"end_map", "end_array"})


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


# ------------------------------------------------------------------ one company


@dataclass
class Batch:
    """One filing as graphmem writes it: its source and the entity's facts (one
    transaction), as rows of ``Build.record_rows`` (attribute, unit, period, value) and,
    built when asked for, as the FactIns ``Memory.record`` takes (``items``). Reading
    checked each row against every bound a FactIn holds (the rows refused are in
    :attr:`CompanyFacts.quarantined`), so none is refused.

    ``recorded``: a previous load recorded this filing with the same ``digest``, so
    its facts were not built (empty).
    """

    source: Source
    entity: str
    facts: list[FactRow]
    digest: str
    rows: int
    rerounded: int
    duplicates: int
    recorded: bool = False

    @cached_property
    def items(self) -> list[FactIn]:
        return [FactIn(entity=self.entity, attribute=attribute, unit=unit, period=period, value=value,
                       sources=(self.source.id,)) for attribute, unit, period, value in self.facts]


@dataclass
class CompanyFacts:
    """One company read and checked: its entity, filings in publication order, and the
    rows quarantined while reading. Its rows stay in ``spool`` (open while it is used)."""

    file: str
    entity: Entity
    cik: int
    rows: int
    plan: list[tuple[_Filing, av.Availability]]
    acceptances: Acceptances
    quarantined: list[Quarantined]
    case_variants: list[str]
    spool: Spool = field(repr=False)
    reround: bool = True
    sink: Sink | None = field(default=None, repr=False)

    @property
    def accessions(self) -> list[str]:
        return [filing.accession for filing, _ in self.plan]

    def source_id(self, accession: str, shared: frozenset[str] = frozenset()) -> str:
        """The id of a filing's Source: its accession number, or for a filing that
        another company already recorded under that id (a combined filing of several
        registrants), the accession and this company's entity id
        (``0001193125-24-000123:cik:1326160``)."""
        return f"{accession}:{self.entity.id}" if accession in shared else accession

    def source(self, filing: _Filing, when: av.Availability, shared: frozenset[str] = frozenset()) -> Source:
        """The Source of one filing (see the module docstring)."""
        meta = {"available_by_rule": when.rule, "form": filing.form, "filed": filing.filed.isoformat(),
                "accession": filing.accession, "cik": str(self.cik)}
        if filing.accession in self.acceptances.times:
            meta["acceptance"] = self.acceptances.times[filing.accession]
        return Source(id=self.source_id(filing.accession, shared), kind=filing.form, authority=Authority.PRIMARY,
                      available_by=when.at, publisher=self.entity.id, uri=filing_uri(self.cik, filing.accession),
                      title=f"{filing.form} filed {filing.filed.isoformat()}", meta=meta)

    def batches(self, recorded: Mapping[str, str] | None = None,
                shared: frozenset[str] = frozenset()) -> Iterator[Batch]:
        """Each filing's Batch, in publication order. ``recorded`` maps accessions to the
        digest a previous load recorded for them: a filing with the same digest now is
        yielded ``recorded`` without its FactIns (see the module docstring). ``shared``:
        accessions another company recorded already (see :meth:`source_id`)."""
        recorded = recorded or {}
        for filing, when in self.plan:
            source = self.source(filing, when, shared)
            rows = list(self.spool.rows(filing.accession))
            keys = [row.key for row in rows]  # a row's key is text made anew at each read: made once
            values, rerounded = self._values(filing, rows, keys)
            digest = _digest(source, keys, values)
            duplicates = len(rows) - len(set(zip(keys, values, strict=True)))  # repeats of a key and value
            if recorded.get(filing.accession) == digest:
                yield Batch(source, self.entity.id, [], digest, len(rows), rerounded, duplicates, recorded=True)
                continue
            yield Batch(source, self.entity.id, _facts(rows, values), digest, len(rows), rerounded, duplicates)

    def _values(self, filing: _Filing, rows: list[Row], keys: list[str]) -> tuple[list[Decimal], int]:
        """A filing's values (of its ``rows``, whose keys are ``keys``), re-rounded ones
        replaced by the value they re-round (and the re-rounding state moved past this
        filing); how many were."""
        if not self.reround:
            return [r.value for r in rows], 0
        current = self.spool.current(set(keys))
        changed: dict[str, Decimal] = {}
        values: list[Decimal] = []
        rerounded = 0
        for row, key in zip(rows, keys, strict=True):
            value, earlier = row.value, current.get(key)
            if earlier is not None and rerounds(earlier, value, filing.precision(row.unit)):
                value = earlier
                rerounded += 1
            if earlier != value:
                current[key] = changed[key] = value
            values.append(value)
        self.spool.keep_current(changed)  # only what moved: the rest is in the spool already
        return values, rerounded


def _facts(rows: list[Row], values: list[Decimal]) -> list[FactRow]:
    """A filing's facts: each row's attribute, unit, period and (re-rounded) value."""
    periods = _Periods()
    return [(f"{row.taxonomy}:{row.concept}", row.unit, periods.of(row.start, row.end), value)
            for row, value in zip(rows, values, strict=True)]


def _digest(source: Source, keys: list[str], values: list[Decimal]) -> str:
    """What a filing writes, as one hash: its source and every row's key and value."""
    h = hashlib.blake2b(digest_size=16)
    h.update(json.dumps([DIGEST_VERSION, source.model_dump(mode="json")], sort_keys=True).encode())
    h.update("".join([f"{key}\x1e{value}\n" for key, value in zip(keys, values, strict=True)]).encode())
    return h.hexdigest()


def read(companyfacts: str | Path | Document, submissions: Sequence[str | Path | Document] = (),
         *, spool: Spool, ny_clock: bool | None = None, reround: bool = True,
         sink: Sink | None = None) -> CompanyFacts:
    """Read one company: its companyfacts file and its submissions files (main and pages).

    ``ny_clock`` forces (True/False) the submissions clock reading; None detects it (see
    :mod:`.availability`). ``reround=False`` makes every changed value a new version.
    ``sink`` receives each quarantine record as it is made. Raises InputError for a file
    that is not companyfacts or submissions JSON; the rows stay in ``spool``.
    """
    facts_doc = document(companyfacts)
    found = _read_facts(facts_doc, spool, sink)
    docs = [document(d) for d in submissions]
    acceptances = read_submissions(docs, found.cik, sink) if docs else Acceptances()
    clock = acceptances.ny_clock if ny_clock is None else ny_clock
    plan = []
    for filing in found.filings.values():
        when = av.filing_availability(filing.accession, filed=filing.filed, acceptances=acceptances.times,
                                      ny_clock=clock, where=f"{facts_doc.name}: accession {filing.accession}")
        plan.append((filing, when))
    plan.sort(key=lambda p: (p[1].at, p[0].accession))
    entity = Entity(id=entity_id(found.cik), name=found.name, kind="company", aliases=acceptances.tickers)
    return CompanyFacts(facts_doc.name, entity, found.cik, found.rows, plan, acceptances,
                        found.quarantined + acceptances.quarantined, found.case_variants, spool, reround, sink)


@contextmanager
def reading(company: Company, *, ny_clock: bool | None = None, reround: bool = True,
            sink: Sink | None = None) -> Iterator[CompanyFacts]:
    """:func:`read` of a universe's company (see :mod:`.universe`), with a spool of its
    own that is deleted when the block ends: the input of any writer, online or not::

        with universe.discover(paths) as found:
            for company in universe.select(found):
                with sec.reading(company) as facts:
                    for batch in facts.batches():
                        ...  # batch.source, batch.items (or batch.facts); facts.quarantined
    """
    if company.facts is None:
        raise InputError(f"CIK {company.cik}", "no companyfacts file for this CIK in the inputs")
    with Spool() as spool:
        yield read(company.facts, company.submissions, spool=spool, ny_clock=ny_clock, reround=reround, sink=sink)


def load(mem: Any, scope: Any, companyfacts: str | Path | Document,
         submissions: str | Path | Document | Sequence[str | Path | Document] | None = None, *,
         ny_clock: bool | None = None, reround: bool = True, show_progress: bool | None = None,
         quarantine: Sink | None = None, resume: bool = True) -> LoadReport:
    """Load one companyfacts file (and the company's submissions files, for acceptance
    times) into ``mem``: :func:`graphmem.loaders.edgar.load_company` for one company.

    Returns its :class:`LoadReport`; raises InputError for a file that is not
    companyfacts JSON. Rows that cannot be facts are quarantined (``quarantine`` receives
    each record; the report counts them by reason). Filings a previous load recorded
    are not written again unless ``resume=False``.
    """
    from .edgar import load_files  # the online write builds on this module

    if submissions is None:
        docs: list[str | Path | Document] = []
    elif isinstance(submissions, (str, Path, Document)):
        docs = [submissions]
    else:
        docs = list(submissions)
    return load_files(mem, scope, companyfacts, docs, ny_clock=ny_clock, reround=reround,
                      show_progress=show_progress, quarantine=quarantine, resume=resume)


class _Periods(dict[tuple[str | None, str], Period]):
    """One Period per (start, end) of a filing: its rows report a few periods for many
    concepts, and a Period is immutable, so its facts share them."""

    def of(self, start: str | None, end: str) -> Period:
        period = self.get((start, end))
        if period is None:
            period = self[start, end] = Period(start=dt.date.fromisoformat(start) if start else None,
                                               end=dt.date.fromisoformat(end))
        return period
