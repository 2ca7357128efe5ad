"""When a filing became public: the ONE place that decides a filing's ``available_by``.

Every loader asks :func:`filing_availability` (or the two rules under it) and stores
the rule's name beside the time, in ``Source.meta["available_by_rule"]``, so every
source — and through its evidence every fact — shows which rule gave its time.

The rules, in the order they are tried
--------------------------------------

``acceptance``
    The filing's acceptance time, as given, when it carries an explicit UTC offset
    that can be trusted: a numeric offset (``2025-11-04T07:03:12-05:00``, as in the
    SEC header or a curated table), or a trailing ``Z`` when nothing below says the
    ``Z`` is wrong.

``acceptance-ny-quirk``
    The SEC's ``submissions`` JSON prints ``acceptanceDateTime`` with a trailing
    ``Z`` (``2016-05-10T15:27:20.000Z``), but for some filers that clock is really
    New York local time. Then the wall-clock time is read in America/New_York
    (EST/EDT as on that day) and converted to UTC. The clock is read as New York when

    1. the labelled time of day is before 06:00 (the documented sign of the quirk); or
    2. read as UTC, the time falls outside EDGAR's acceptance hours, 06:00-22:00
       New York time — EDGAR cannot have accepted a filing then, while the New York
       reading lands inside those hours (a ``06:08:50Z`` 10-Q is 06:08 in New York,
       not 02:08); or
    3. the filer's submissions file shows sign 2 on any of its filings
       (``ny_clock=True``; see :func:`edgar_clock_is_new_york`). The quirk belongs to
       the file, not to one filing: Tesla's file has 142 filings labelled between
       06:00Z and 10:00Z, and its filing dates agree with a New York clock (a 10-Q
       labelled ``2017-11-02T19:56:36Z`` got filing date 2017-11-03, which only a
       19:56 New York acceptance — after EDGAR's 17:30 cut-off — explains).

    The rule can only move a time *later* (New York is behind UTC), so a wrong
    guess errs on the safe side: the value appears 4-5 hours late, never early
    (DESIGN.md section 1: never earlier than the real release).

``filed-end-of-day``
    No acceptance time is known (the accession is missing from the submissions
    file, or no submissions file was given): the ``filed`` date is widened to the
    *end* of that day in America/New_York, 23:59:59.999999 local time, converted to
    UTC (04:59:59.999999Z in winter, 03:59:59.999999Z in summer). A filing is never
    public later than the end of its filing date, so this is never earlier than the
    real release.

    Also when the acceptance time is one EDGAR cannot have accepted a filing at, read
    as UTC or as New York time: the SEC's submissions files give the filings of the
    1990s and early 2000s the *date* only, as midnight in New York
    (``2002-04-10T04:00:00.000Z``, ``1999-11-03T05:00:00.000Z``), and either reading
    of that is before the filing could have been public that day. Such a time says
    nothing the filed date does not: the later of its reading and the end of the
    filed day is taken (an SEC notice stamped after its filed day keeps its stamp).

A time with no offset at all is refused (InputError): graphmem never guesses a
naive time's zone.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable, Mapping
from typing import NamedTuple
from zoneinfo import ZoneInfo

from graphmem.errors import InputError

NEW_YORK = ZoneInfo("America/New_York")

ACCEPTANCE = "acceptance"
ACCEPTANCE_NY_QUIRK = "acceptance-ny-quirk"
FILED_END_OF_DAY = "filed-end-of-day"
RULES = (ACCEPTANCE, ACCEPTANCE_NY_QUIRK, FILED_END_OF_DAY)

#: EDGAR accepts filings between these New York times (filings after 17:30 get the
#: next business day's filing date, but are accepted — and disseminated — at once).
EDGAR_OPENS = dt.time(6, 0)
EDGAR_CLOSES = dt.time(22, 0)
#: The documented sign of the quirk: a ``Z`` time of day before this.
QUIRK_BEFORE = dt.time(6, 0)

_Z = re.compile(r"(Z|[+-]00:?00)$", re.IGNORECASE)


class Availability(NamedTuple):
    """When something became public (UTC) and the name of the rule that says so."""

    at: dt.datetime
    rule: str


def end_of_day(day: dt.date, tz: ZoneInfo = NEW_YORK) -> dt.datetime:
    """The last microsecond of ``day`` in ``tz``, in UTC."""
    return dt.datetime.combine(day, dt.time.max, tzinfo=tz).astimezone(dt.UTC)


def filed_end_of_day(filed: dt.date | str, where: str = "filed") -> Availability:
    """Rule ``filed-end-of-day``: the end of the filing date in New York (InputError for
    9999-12-31, whose end in New York is past the last time a datetime holds in UTC)."""
    day = parse_date(filed, where)
    try:
        return Availability(end_of_day(day), FILED_END_OF_DAY)
    except OverflowError:
        raise InputError(where, f"the end of {day} in New York is past the last time a datetime holds") from None


def parse_date(value: dt.date | str, where: str) -> dt.date:
    """An ISO ``YYYY-MM-DD`` date, or InputError naming ``where``."""
    if isinstance(value, dt.datetime):
        raise InputError(where, f"a date is required, got a datetime {value!r}")
    if isinstance(value, dt.date):
        return value
    if not isinstance(value, str):
        raise InputError(where, f"a YYYY-MM-DD date is required, got {type(value).__name__}")
    try:
        if len(value) != 10:
            raise ValueError
        return dt.date.fromisoformat(value)
    except ValueError:
        raise InputError(where, f"not a YYYY-MM-DD date: {value!r}") from None


def _parse_stamp(text: str, where: str) -> dt.datetime:
    if not isinstance(text, str) or not text.strip():
        raise InputError(where, f"an acceptance time is required, got {text!r}")
    try:
        stamp = dt.datetime.fromisoformat(text.strip())
    except ValueError:
        raise InputError(where, f"not an ISO 8601 date-time: {text!r}") from None
    if stamp.tzinfo is None or stamp.tzinfo.utcoffset(stamp) is None:
        raise InputError(where, f"acceptance time {text!r} has no UTC offset; refused")
    wall = stamp.replace(tzinfo=None)
    try:  # every reading the rules may take, converted once here rather than overflow there
        stamp.astimezone(dt.UTC), wall.replace(tzinfo=dt.UTC).astimezone(NEW_YORK)
        wall.replace(tzinfo=NEW_YORK).astimezone(dt.UTC)
    except OverflowError:
        raise InputError(where, f"acceptance time {text!r} is outside the years a datetime holds") from None
    return stamp


def _outside_edgar_hours(moment: dt.datetime) -> bool:
    local = moment.astimezone(NEW_YORK).time()
    return not (EDGAR_OPENS <= local < EDGAR_CLOSES)


def shows_ny_clock(text: str, where: str = "acceptanceDateTime") -> bool:
    """Sign 2: a ``Z`` time that EDGAR's hours rule out as UTC but allow as New York."""
    stamp = _parse_stamp(text, where)
    if not _Z.search(text.strip()):
        return False
    wall = stamp.replace(tzinfo=None)
    as_utc = wall.replace(tzinfo=dt.UTC)
    as_ny = wall.replace(tzinfo=NEW_YORK)
    return _outside_edgar_hours(as_utc) and not _outside_edgar_hours(as_ny)


def edgar_cannot_have_accepted(text: str, where: str = "acceptanceDateTime") -> bool:
    """A ``Z`` time outside EDGAR's hours read as UTC and read as New York time: not when
    the filing was accepted (a date given as midnight in New York, see the module
    docstring)."""
    stamp = _parse_stamp(text, where)
    if not _Z.search(text.strip()):
        return False
    wall = stamp.replace(tzinfo=None)
    return _outside_edgar_hours(wall.replace(tzinfo=dt.UTC)) and _outside_edgar_hours(wall.replace(tzinfo=NEW_YORK))


def edgar_clock_is_new_york(acceptances: Iterable[str]) -> bool:
    """Sign 3: does any acceptance of this filer's submissions file show sign 2?"""
    return any(shows_ny_clock(text) for text in acceptances if text)


def from_acceptance(text: str, *, ny_clock: bool = False, where: str = "acceptance") -> Availability:
    """Rules ``acceptance`` / ``acceptance-ny-quirk`` for one acceptance time text."""
    stamp = _parse_stamp(text, where)
    if not _Z.search(text.strip()):
        return Availability(stamp.astimezone(dt.UTC), ACCEPTANCE)
    wall = stamp.replace(tzinfo=None)
    if ny_clock or wall.time() < QUIRK_BEFORE or shows_ny_clock(text, where):
        return Availability(wall.replace(tzinfo=NEW_YORK).astimezone(dt.UTC), ACCEPTANCE_NY_QUIRK)
    return Availability(stamp.astimezone(dt.UTC), ACCEPTANCE)


def filing_availability(
    accession: str,
    *,
    filed: dt.date | str,
    acceptances: Mapping[str, str] | None = None,
    ny_clock: bool = False,
    where: str | None = None,
) -> Availability:
    """A filing's ``available_by`` and its rule: acceptance when known (and a time EDGAR
    can have accepted it at, else the later of it and the filed end-of-day), else filed
    end-of-day.

    ``acceptances`` maps accession numbers to acceptance times (the submissions JSON's
    ``acceptanceDateTime``); ``ny_clock`` says the filer's file shows the New York
    clock quirk (rule 3 above).
    """
    where = where or f"accession {accession}"
    text = (acceptances or {}).get(accession)
    if not text:
        return filed_end_of_day(filed, f"{where}: filed")
    accepted = from_acceptance(text, ny_clock=ny_clock, where=f"{where}: acceptanceDateTime")
    if edgar_cannot_have_accepted(text, f"{where}: acceptanceDateTime"):
        return max(accepted, filed_end_of_day(filed, f"{where}: filed"), key=lambda when: when.at)
    return accepted
