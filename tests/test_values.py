"""Ids are digests of canonical JSON: they must never drift, or a reload of the same
filing would name new keys and versions instead of finding the stored ones. Times sent
as epoch integers must name the same instant."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given
from hypothesis import strategies as st

from graphmem import Authority, InputError, Memory, Scope
from graphmem.values import _text_json, digest, epoch, from_micros, parse_time


def reference(*parts, prefix: str = "", size: int = 24) -> str:
    """The definition of a digest: SHA-256 of the parts as compact JSON, ISO times."""
    payload = json.dumps(parts, default=lambda v: v.isoformat(), separators=(",", ":"),
                         ensure_ascii=False)
    return prefix + hashlib.sha256(payload.encode()).hexdigest()[:size]


PARTS = st.one_of(
    st.text(),  # quotes, backslashes, control characters, any unicode
    st.none(),
    st.dates(),
    st.datetimes(timezones=st.sampled_from([dt.UTC, ZoneInfo("America/New_York")])),
    st.integers(), st.booleans(), st.floats(allow_nan=False),
    st.sampled_from(list(Authority)),  # a str enum
)


@given(st.lists(PARTS, max_size=6), st.sampled_from(["", "fv_"]), st.integers(8, 64))
def test_digest_is_sha256_of_the_parts_as_compact_json(parts, prefix, size):
    assert digest(*parts, prefix=prefix, size=size) == reference(*parts, prefix=prefix, size=size)


@given(st.lists(st.one_of(st.text(), st.text(alphabet="ab,[]")), max_size=6))
def test_a_digest_of_text_alone_is_that_json_too(parts):
    """Text alone (most ids) takes a shorter route to the same bytes: the parts joined, when
    no part holds what JSON escapes."""
    assert digest(*parts) == reference(*parts)


def test_text_parts_take_the_shorter_routes():
    """Text alone, what ids are made of, is written without a call per part: joined when
    no part needs escaping (it was not, once: the check saw the quotes the join puts
    between the parts), else through JSON's escaper (a scope's id is JSON, quotes and
    all); anything else is left to the general route."""
    parts = ("t:acme", "cik:0001318605", "us-gaap:Assets", "USD", "", "2015-12-31")
    assert _text_json(parts) == json.dumps(parts, separators=(",", ":"))
    for escaped in (("a", 'say "b"'), ("a", "b\\c"), ("a", "line\nbreak"), ('["t",[]]', "é")):
        assert _text_json(escaped) == json.dumps(escaped, separators=(",", ":"), ensure_ascii=False)
    assert _text_json(("a", None)) is None
    assert _text_json(()) is None


def test_a_known_assertion_keeps_its_ids():
    """Pinned values: these ids name keys and versions already stored in graphs."""
    at = dt.datetime(2016, 5, 10, 20, 5, 12, tzinfo=dt.UTC)
    key = digest("t:acme", "0001318605", "us-gaap:Assets", "USD", "", "2015-12-31")
    assert key == reference("t:acme", "0001318605", "us-gaap:Assets", "USD", "", "2015-12-31")
    assert key == "caced6253d7a1b7a77e31905"
    assert digest(key, "src", "decimal", "8067939000", at) == "7c011e9bbfd521ac3cca7a6c"


@given(st.datetimes(min_value=dt.datetime(1800, 1, 1), max_value=dt.datetime(2200, 1, 1),
                    timezones=st.sampled_from([dt.UTC, dt.timezone(dt.timedelta(hours=-3, minutes=-30))])))
def test_an_epoch_pair_names_the_same_instant(t):
    seconds, nanos = epoch(t)
    assert 0 <= nanos < 10**9 and nanos % 1000 == 0  # datetime.fromepoch wants this
    assert from_micros(seconds * 10**6 + nanos // 1000) == t


@pytest.mark.parametrize("text", ["2024-01-01", "20240101", "2024-W01-1", "2024W011"])
def test_a_bare_date_in_any_iso_form_is_the_end_of_that_day(text):
    """A cutoff given as a date means the end of that day in UTC (a filing accepted that
    day is public by it), whichever of ISO 8601's date forms names the day; read as
    midnight, a fact public at noon would be reported not found."""
    assert parse_time(text, "cutoff") == dt.datetime(2024, 1, 1, 23, 59, 59, 999999, dt.UTC)


@pytest.mark.parametrize(("text", "end"), [
    ("2024-01-01Z", dt.datetime(2024, 1, 1, 23, 59, 59, 999999, dt.UTC)),
    ("2024-01-01+00:00", dt.datetime(2024, 1, 1, 23, 59, 59, 999999, dt.UTC)),
    ("2024-W01-1-05:00", dt.datetime(2024, 1, 2, 4, 59, 59, 999999, dt.UTC)),
    ("20240101+0530", dt.datetime(2024, 1, 1, 18, 29, 59, 999999, dt.UTC)),
])
def test_a_date_with_a_zone_and_no_time_is_the_end_of_that_day_in_that_zone(text, end):
    """Python reads "2024-01-01Z" as midnight, the day's start: a filing accepted at noon
    that day would be left out of a cutoff the user meant to include it."""
    assert parse_time(text, "cutoff") == end


@pytest.mark.parametrize("text", ["0001-01-01T00:00:00+01:00", "9999-12-31T23:00:00-05:00", "9999-12-31-01:00"])
def test_a_time_outside_the_years_1_to_9999_in_utc_is_refused_by_name(text):
    """Not an OverflowError from the read that converts it to UTC (an MCP client saw only
    "Error executing tool")."""
    with pytest.raises(InputError, match="known_at.*outside the years 1 to 9999 in UTC"):
        parse_time(text, "known_at")


@pytest.mark.parametrize("read", ["as_of", "screen", "search"])
def test_a_read_refuses_a_time_outside_the_years_1_to_9999_in_utc_before_any_query(read):
    """The API's own times too (screen, as_of, search, ...): refused by name, not an
    OverflowError from the conversion to UTC."""
    early = dt.datetime(1, 1, 1, tzinfo=dt.timezone(dt.timedelta(hours=5)))
    calls = {"as_of": lambda m: m.as_of(Scope(tenant="t"), entity="e", attribute="a", cutoff=early),
             "screen": lambda m: m.screen(Scope(tenant="t"), attribute="a", frame="CY2024Q3", cutoff=early),
             "search": lambda m: m.search(Scope(tenant="t"), text="x", known_at=early)}
    with (Memory.connect("bolt://127.0.0.1:9") as offline,  # nothing listens there: no query is sent
          pytest.raises(InputError, match="outside the years 1 to 9999 in UTC")):
        calls[read](offline)


def test_a_date_of_the_right_shape_that_is_no_day_says_why():
    with pytest.raises(InputError, match=r"'2016-02-30' \(day is out of range for month\)"):
        parse_time("2016-02-30", "cutoff")
    with pytest.raises(InputError) as info:
        parse_time("yesterday", "cutoff")
    assert info.value.reason == "not an ISO date or datetime: 'yesterday'"


def test_a_week_without_its_day_is_refused_and_a_datetime_keeps_its_time():
    with pytest.raises(InputError, match="cutoff.*week"):
        parse_time("2024-W01", "cutoff")
    assert parse_time("20240101T1000Z", "cutoff") == dt.datetime(2024, 1, 1, 10, tzinfo=dt.UTC)
    assert parse_time("2024-01-01T10:00", "cutoff") == dt.datetime(2024, 1, 1, 10, tzinfo=dt.UTC)
    with pytest.raises(InputError, match="known_at.*not an ISO date"):
        parse_time("2024-001", "known_at")
