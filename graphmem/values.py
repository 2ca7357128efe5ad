"""Typed fact values as the graph stores them, and the stable ids derived from them.

A value is stored as canonical text beside its type, so a decimal round-trips
exactly (``Decimal("123.450")`` is stored as ``123.45`` and compares equal), and two
writes of the same value agree on their text. Ids are hashes of canonical JSON, so
they are stable across machines and reloads: the same assertion always names the
same version and the same idempotency key.

Values are bounded (graphmem/limits.py): a decimal by its significant digits and
magnitude, checked on its digits and exponent before its text is ever built (the text
of ``Decimal("1e100000000")`` has 100,000,001 characters), and text by its size.
:func:`typed` checks a value as ``FactIn`` takes it; :func:`encode` checks again, so
that no value reaches the graph unchecked.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
from decimal import Decimal
from json.encoder import encode_basestring
from typing import TYPE_CHECKING, Any

from . import limits
from .errors import InputError

if TYPE_CHECKING:
    from .models import FactValue

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def typed(value: Any) -> Any:
    """A fact value as graphmem takes it, or ValueError saying why not: an int becomes a
    Decimal; a float (inexact) or a datetime (not a value) is refused; a decimal must be
    finite and within ``limits.DECIMAL_DIGITS`` and ``limits.DECIMAL_EXPONENT``, a text
    within ``limits.TEXT_BYTES``. Other types are left to the model to refuse."""
    if isinstance(value, int) and not isinstance(value, bool):
        value = Decimal(value)
    if isinstance(value, Decimal):  # first: what loaders send
        problem = ("decimal values must be finite" if not value.is_finite()
                   else limits.decimal_problem(value))
    elif isinstance(value, float):
        # not "a string of digits": a str is a text value, which never equals a number
        problem = ("floats are refused (inexact): pass a Decimal built from the figure's "
                   "digits, e.g. Decimal('1.5'), or an int; a str is stored as text")
    elif isinstance(value, dt.datetime):
        problem = "datetimes are not fact values; pass a date"
    elif isinstance(value, str):
        problem = limits.utf8_problem(value, limits.TEXT_BYTES)
    else:
        problem = None
    if problem:
        raise ValueError(problem)
    return value


def encode(value: FactValue) -> tuple[str, str, float | None]:
    """Return ``(type, canonical text, float copy for range queries)`` for a fact value,
    a decimal checked against graphmem's bounds first (one that bypassed FactIn's
    validation: ``model_construct``)."""
    if isinstance(value, Decimal):
        problem = limits.decimal_problem(value) if value.is_finite() else "not finite"
        if problem:
            raise InputError("value", problem)
    return encode_typed(value)


def encode_typed(value: FactValue) -> tuple[str, str, float | None]:
    """:func:`encode` of a value :func:`typed` took (a FactIn's): not checked again."""
    if isinstance(value, bool):
        return "boolean", "true" if value else "false", None
    if isinstance(value, Decimal):
        if not value:  # a zero's exponent can be anything: 0E-100000000 is 0
            return "decimal", "0", 0.0
        # format(..., "f") is exact at any precision (normalize() would round to 28 digits).
        text = format(value, "f")
        if "." in text:
            text = text.rstrip("0").rstrip(".")
        if text.lstrip("-") in ("0", ""):
            text = "0"
        return "decimal", text, float(value)
    if isinstance(value, dt.date):
        return "date", value.isoformat(), None
    if isinstance(value, str):
        return "text", value, None
    raise TypeError(f"unsupported fact value type {type(value).__name__}")


def from_micros(micros: int) -> dt.datetime:
    """A time a statement returned as microseconds since the epoch (``t.epochSeconds *
    1000000 + t.nanosecond / 1000``): exact for graphmem's times, which are never finer
    than a microsecond, and decoded far faster than a driver DateTime."""
    return _EPOCH + dt.timedelta(microseconds=micros)


def micros(t: dt.datetime) -> int:
    """An aware datetime as microseconds since the epoch (the inverse of from_micros)."""
    return (t - _EPOCH) // dt.timedelta(microseconds=1)


def epoch(t: dt.datetime | None) -> list[int] | None:
    """An aware datetime as [seconds since the epoch, nanoseconds >= 0], for Cypher's
    ``datetime.fromepoch``: the driver encodes a datetime parameter in Python (about 0.1
    ms), and a short list of integers costs next to nothing."""
    if t is None:
        return None
    seconds, rest = divmod(micros(t), 1_000_000)
    return [seconds, rest * 1000]


class Now:
    """The type of :data:`NOW`."""

    def __repr__(self) -> str:
        return "graphmem.NOW"


NOW = Now()
"""``cutoff=NOW``: the read's own time - the database server's clock as the read runs,
the time its default known_at takes - named explicitly (a cutoff is never left to
default). "Public now, as recorded now" is then one statement, with no round trip to
ask the server's clock first; the answer reports the time it used."""


def parse_time(text: str | None, name: str) -> dt.datetime | None:
    """A cutoff or known_at as text (the command line, an MCP tool): an ISO date or
    datetime, UTC if it names no zone; a bare date - in any of ISO 8601's forms
    (``2024-01-31``, ``20240131``, ``2024-W05-3``) - means the end of that day in UTC, so
    a filing accepted that day is public by it, and a date with a zone but no time
    (``2024-01-31Z``, ``2024-01-31-05:00``) the end of that day in that zone (Python
    would read it as midnight, the day's start). A week without its day names seven
    days, not one: refused. The time comes back in UTC: one whose UTC falls outside the
    years 1 to 9999 is refused here, by name, rather than failing in the read."""
    if text is None:
        return None
    if text.endswith("z"):  # RFC 3339's lower-case UTC, as its lower-case t is taken
        text = text[:-1] + "Z"
    if _WEEK.fullmatch(text):
        raise InputError(name, f"{text!r} is a week; name its day (e.g. {text}-7) or a date")
    try:
        value = _day_end(text) or dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError as exc:  # for a date's shape, Python's reason says what is wrong with it
        why = f" ({exc})" if re.match(r"\d{4}-?\d{2}-?\d{2}", text) and "isoformat" not in str(exc) else ""
        raise InputError(name, f"not an ISO date or datetime: {text!r}{why}") from exc
    return aware_utc(name, value if value.tzinfo else value.replace(tzinfo=dt.UTC))


def aware_utc(name: str, value: Any) -> dt.datetime:
    """An aware datetime in UTC, refused by ``name`` when it is none, or when its UTC
    falls outside the years a datetime holds (``0001-01-01T00:00+01:00``): a bad
    parameter, not an OverflowError in the read. Every time a read or write takes goes
    through here (Memory's arguments, the command line, the web view, panels' cutoffs)."""
    if not isinstance(value, dt.datetime):
        raise InputError(name, f"a datetime is required, got {type(value).__name__}")
    if value.tzinfo is None or value.tzinfo.utcoffset(value) is None:
        raise InputError(name, "naive datetime refused: give a timezone (for example UTC)")
    try:
        return value.astimezone(dt.UTC)
    except (OverflowError, ValueError) as exc:
        raise InputError(name, f"{value.isoformat()} is outside the years 1 to 9999 in UTC") from exc


def _day_end(text: str) -> dt.datetime | None:
    """A date alone (the end of that day in UTC) or with a zone and no time (the end of
    that day in that zone); None when ``text`` is not one (a datetime, say)."""
    zoned = _ZONED_DATE.fullmatch(text)
    day, zone = (zoned["day"], zoned["zone"]) if zoned else (text, "+00:00")
    try:
        date = dt.date.fromisoformat(day)
    except ValueError:
        return None
    offset = dt.datetime.fromisoformat(f"2000-01-01T00:00{zone.replace('Z', '+00:00')}").tzinfo
    return dt.datetime.combine(date, dt.time.max, offset)


_WEEK = re.compile(r"\d{4}-?W\d{2}")
_ZONED_DATE = re.compile(r"(?P<day>\d{4}-\d{2}-\d{2}|\d{8}|\d{4}-?W\d{2}-?\d)(?P<zone>Z|[+-]\d{2}(?::?\d{2})?)")


def with_times(item: dict[str, Any], *names: str) -> dict[str, Any]:
    """``item`` with these fields (epoch microseconds, or null) as datetimes."""
    return {**item, **{n: None if item[n] is None else from_micros(item[n]) for n in names}}


def decode(value_type: str | None, text: str | None) -> FactValue | None:
    """Inverse of :func:`encode`; an erased value (None) stays None."""
    if text is None or value_type is None:
        return None
    if value_type == "decimal":
        return Decimal(text)
    if value_type == "boolean":
        return text == "true"
    if value_type == "date":
        return dt.date.fromisoformat(text)
    return text


def digest(*parts: Any, prefix: str = "", size: int = 24) -> str:
    """A short stable hash of JSON-encoded parts (dates and datetimes as ISO text).

    Ids of keys, versions and idempotency keys are digests, several per assertion, so
    parts that are text, None, dates or datetimes (nearly all of them) are encoded
    directly, with the escaper ``json.dumps`` itself uses: the same bytes, a few times
    faster. Any other part takes ``json.dumps``.
    """
    payload = _text_json(parts)
    if payload is None:
        encoded = [encode_basestring(p) if type(p) is str else _json_part(p) for p in parts]  # text: no call
        if None in encoded:
            payload = json.dumps(parts, default=_iso, separators=(",", ":"), ensure_ascii=False)
        else:
            payload = "[" + ",".join(encoded) + "]"
    return prefix + hashlib.sha256(payload.encode()).hexdigest()[:size]


def _text_json(parts: tuple[Any, ...]) -> str | None:
    """The parts as JSON when all are text (most digests), else None: joined as they are
    when none holds what JSON escapes (checked before the join, which puts quotes of its
    own between them), else each through JSON's escaper."""
    try:
        joined = "".join(parts)
    except TypeError:  # a part that is not text
        return None
    if not parts:
        return None
    if _ESCAPED.search(joined) is None:
        return '["' + '","'.join(parts) + '"]'
    return "[" + ",".join(map(encode_basestring, parts)) + "]"


_ESCAPED = re.compile(r'[\x00-\x1f"\\]')  # what encode_basestring writes otherwise than as itself


def _json_part(part: Any) -> str | None:
    """``part`` as ``json.dumps(..., ensure_ascii=False)`` writes it, or None if not simple."""
    if isinstance(part, str):
        return encode_basestring(part)
    if part is None:
        return "null"
    if isinstance(part, (dt.date, dt.datetime)):
        return encode_basestring(part.isoformat())
    return None


def _iso(value: Any) -> str:
    if isinstance(value, (dt.date, dt.datetime)):
        return value.isoformat()
    if hasattr(value, "iso_format"):  # neo4j.time values returned by the driver
        return value.iso_format()
    raise TypeError(f"cannot encode {type(value).__name__}")
