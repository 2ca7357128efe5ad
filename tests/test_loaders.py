"""The filings loaders against the real Neo4j: SEC company facts, submissions, KPI table.

Tesla's full company facts (17,718 rows, 50 filings) are loaded once for the module,
twice in a row, in a tenant of their own; the other tests use the small LPA file or
copies of it broken on purpose. Counts the public API does not offer are read with a
tiny local statement catalogue (as tests/test_db.py does), never through cypher/.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
import uuid
from decimal import Decimal
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from graphmem.loaders import availability as av
from graphmem.loaders import kpi, sec
from graphmem.loaders._common import unit_ok
from graphmem.loaders.quarantine import REASONS
from graphmem.loaders.spool import Spool

from graphmem import InputError, Period, Scope

UTC = dt.UTC
NY = ZoneInfo("America/New_York")
FIXTURES = Path(__file__).parent / "fixtures"
TESLA = FIXTURES / "companyfacts-CIK0001318605-tesla.json"
TESLA_SUBMISSIONS = FIXTURES / "submissions-CIK0001318605-tesla.json"
LPA = FIXTURES / "companyfacts-CIK0001997711-lpa.json"
KPI = FIXTURES / "kpi-pypl-shop.csv"

def counts(mem, scope: Scope) -> dict[str, int]:
    return mem.counts(scope)


def source(mem, scope: Scope, source_id: str) -> dict:
    record = mem.source(scope, source_id)
    assert record is not None, f"source {source_id} not stored"
    return record.model_dump()


def entity(mem, scope: Scope, entity_id: str) -> dict | None:
    found = mem.entity(scope, entity_id)
    return None if found is None else {"name": found.name, "kind": found.kind,
                                       "aliases": list(found.aliases)}


EMPTY = {"entities": 0, "sources": 0, "derivations": 0, "keys": 0, "versions": 0, "evidence": 0}
TESLA_ID = "cik:1318605"
ASSETS_2015 = Period(end=dt.date(2015, 12, 31))


# ---------------------------------------------------------------- Tesla, loaded once


@pytest.fixture(scope="module")
def tesla(migrated):
    scope = Scope(tenant=f"test-loaders-{uuid.uuid4().hex[:12]}")
    with migrated.connect() as mem:
        first = sec.load(mem, scope, TESLA, TESLA_SUBMISSIONS)
        after_first = counts(mem, scope)
        second = sec.load(mem, scope, TESLA, TESLA_SUBMISSIONS)
        after_second = counts(mem, scope)
        third = sec.load(mem, scope, TESLA, TESLA_SUBMISSIONS, resume=False)
        after_third = counts(mem, scope)
        yield {"mem": mem, "scope": scope, "first": first, "second": second, "third": third,
               "after_first": after_first, "after_second": after_second, "after_third": after_third}


def test_tesla_load_counts(tesla):
    first, counted = tesla["first"], tesla["after_first"]
    print(f"\nTesla load: {first.seconds:.1f}s first, {tesla['second'].seconds:.1f}s reload; "
          f"{first.model_dump(exclude={'file'})}")
    assert first.rows == 17_718
    assert first.entities == 1 and first.sources == 50 and first.sources_recorded == 50
    assert first.rules == {"acceptance-ny-quirk": 39, "filed-end-of-day": 11}
    assert first.versions_created + first.evidence_added == first.assertions == 17_718
    assert first.unchanged == 0
    assert first.rerounded > 0
    assert counted["entities"] == 1
    assert counted["sources"] == 50
    assert counted["keys"] == 9_381
    assert counted["versions"] == first.versions_created
    assert counted["evidence"] == 17_718


def test_tesla_second_load_skips_every_recorded_filing(tesla):
    """A re-run finds each filing's load mark and writes nothing: no assertion reaches
    the read rule, and the re-rounding state still moves through the skipped filings."""
    second = tesla["second"]
    assert tesla["after_second"] == tesla["after_first"]
    assert second.filings_recorded == 50 and second.sources == 50
    assert second.sources_recorded == second.assertions == 0
    assert second.versions_created == second.evidence_added == second.unchanged == 0
    assert second.rerounded == tesla["first"].rerounded


def test_tesla_load_without_resume_changes_nothing(tesla):
    """The safety net under the load marks: every filing written again through the write
    path's idempotency leaves the graph as it was."""
    third = tesla["third"]
    assert tesla["after_third"] == tesla["after_first"]
    assert third.filings_recorded == 0
    assert third.sources_recorded == 0
    assert third.versions_created == 0 and third.evidence_added == 0
    assert third.unchanged == 17_718
    assert third.rerounded == tesla["first"].rerounded


def test_tesla_assets_restated_by_the_next_10q(tesla):
    mem, scope = tesla["mem"], tesla["scope"]

    def assets(cutoff: dt.datetime):
        return mem.as_of(scope, entity=TESLA_ID, attribute="us-gaap:Assets", period=ASSETS_2015,
                         unit="USD", cutoff=cutoff)

    before = assets(dt.datetime(2016, 5, 9, 12, tzinfo=UTC))
    assert before.status == "active" and before.value == Decimal("8092460000")
    assert before.version.sources[0].source_id == "0001564590-16-013195"
    assert before.version.period == ASSETS_2015 and before.version.unit == "USD"
    after = assets(dt.datetime(2016, 5, 11, tzinfo=UTC))
    assert after.status == "active" and after.value == Decimal("8067939000")
    assert assets(dt.datetime(2023, 1, 1, tzinfo=UTC)).value == Decimal("8067939000")
    assert assets(dt.datetime(2016, 2, 1, tzinfo=UTC)).status == "not_found"

    history = mem.history(scope, entity=TESLA_ID, attribute="us-gaap:Assets", period=ASSETS_2015)
    assert [v.value for v in history] == [Decimal("8092460000"), Decimal("8067939000")]
    assert [e.source_id for e in history[1].sources] == [
        "0001564590-16-018886", "0001564590-16-023024", "0001564590-16-026820",
        "0001564590-17-003118",
    ]
    evidence = history[1].sources[0]
    assert evidence.kind == "10-Q" and evidence.authority.value == "primary"
    assert evidence.publisher == TESLA_ID
    assert evidence.title == "10-Q filed 2016-05-10"
    assert evidence.uri == ("https://www.sec.gov/Archives/edgar/data/1318605/"
                            "000156459016018886/0001564590-16-018886-index.htm")


def test_acceptance_clock_is_read_as_new_york(tesla):
    """The 10-Q is labelled 15:27:20Z but was accepted 15:27:20 in New York (19:27:20Z):
    a cutoff between the two must still see the 10-K's figure (no look-ahead)."""
    mem, scope = tesla["mem"], tesla["scope"]
    meta = source(mem, scope, "0001564590-16-018886")
    assert meta["available_by"] == dt.datetime(2016, 5, 10, 19, 27, 20, tzinfo=UTC)
    assert meta["meta"] == {
        "available_by_rule": "acceptance-ny-quirk", "form": "10-Q", "filed": "2016-05-10",
        "accession": "0001564590-16-018886", "cik": "1318605",
        "acceptance": "2016-05-10T15:27:20.000Z",
    }
    between = mem.as_of(scope, entity=TESLA_ID, attribute="us-gaap:Assets", period=ASSETS_2015,
                        cutoff=dt.datetime(2016, 5, 10, 18, tzinfo=UTC))
    assert between.value == Decimal("8092460000")
    at = mem.as_of(scope, entity=TESLA_ID, attribute="us-gaap:Assets", period=ASSETS_2015,
                   cutoff=dt.datetime(2016, 5, 10, 19, 27, 20, tzinfo=UTC))
    assert at.value == Decimal("8067939000")


def test_accession_missing_from_submissions_is_filed_end_of_day(tesla):
    mem, scope = tesla["mem"], tesla["scope"]
    row = source(mem, scope, "0001193125-13-096241")  # 10-K filed 2013-03-07, before the index
    assert row["meta"]["available_by_rule"] == "filed-end-of-day"
    assert "acceptance" not in row["meta"]
    assert row["available_by"] == dt.datetime(2013, 3, 8, 4, 59, 59, 999999, tzinfo=UTC)
    assert row["available_by"].astimezone(NY) == dt.datetime(2013, 3, 7, 23, 59, 59, 999999,
                                                             tzinfo=NY)
    summer = source(mem, scope, "0001193125-11-221497")  # 10-Q filed 2011-08-12 (EDT)
    assert summer["available_by"] == dt.datetime(2011, 8, 13, 3, 59, 59, 999999, tzinfo=UTC)
    # the facts of that filing carry that time too
    history = mem.history(scope, entity=TESLA_ID, attribute="us-gaap:Assets",
                          period=Period(end=dt.date(2012, 12, 31)))
    first = history[0].sources[0]
    assert first.source_id == "0001193125-13-096241"
    assert first.available_by == row["available_by"]


def test_tesla_entity_has_name_and_ticker(tesla):
    row = entity(tesla["mem"], tesla["scope"], TESLA_ID)
    assert row == {"name": "Tesla, Inc.", "kind": "company", "aliases": ["TSLA"]}


def test_rerounded_value_corroborates_and_real_change_is_a_version(tesla):
    mem, scope = tesla["mem"], tesla["scope"]
    end_2018 = Period(end=dt.date(2018, 12, 31))
    # 29,739,614,000 re-printed as 29,740,000,000 in millions: the same version, more evidence
    assets = mem.history(scope, entity=TESLA_ID, attribute="us-gaap:Assets", period=end_2018)
    assert [v.value for v in assets] == [Decimal("29739614000")]
    assert [e.source_id for e in assets[0].sources][-2:] == [
        "0001564590-19-038256", "0001564590-20-004475"]
    latest = mem.as_of(scope, entity=TESLA_ID, attribute="us-gaap:Assets", period=end_2018,
                       cutoff=dt.datetime(2023, 1, 1, tzinfo=UTC))
    assert latest.value == Decimal("29739614000") and len(latest.version.sources) == 5
    # 3,404,451,000 re-printed as 3,405,000,000 is not its rounding to millions: a new version
    payable = mem.history(scope, entity=TESLA_ID, attribute="us-gaap:AccountsPayableCurrent",
                          period=end_2018)
    assert [v.value for v in payable] == [Decimal("3404451000"), Decimal("3405000000")]


# ---------------------------------------------------------------- LPA and broken copies


def test_small_lpa_file_loads(mem, scope, capsys):
    report = sec.load(mem, scope, LPA)
    assert capsys.readouterr().err == "", "no progress bar off a terminal"
    assert (report.entities, report.sources, report.rows) == (1, 3, 768)
    assert report.rules == {"filed-end-of-day": 3}
    assert report.versions_created + report.evidence_added == 768
    counted = counts(mem, scope)
    assert counted["sources"] == 3 and counted["evidence"] == 768
    assert counted["versions"] == report.versions_created
    revenue = mem.as_of(scope, entity="cik:1997711", attribute="ifrs-full:Revenue",
                        period=Period(start=dt.date(2024, 1, 1), end=dt.date(2024, 12, 31)),
                        cutoff=dt.datetime(2025, 6, 1, tzinfo=UTC))
    assert revenue.value == Decimal("43862372")
    assert revenue.version.available_by == dt.datetime(2025, 4, 3, 3, 59, 59, 999999, tzinfo=UTC)
    pen = mem.as_of(scope, entity="cik:1997711", attribute="ifrs-full:AverageForeignExchangeRate",
                    unit="PEN", period=Period(start=dt.date(2021, 1, 1), end=dt.date(2021, 12, 31)),
                    cutoff=dt.datetime(2025, 6, 1, tzinfo=UTC))
    assert pen.value == Decimal("3.885")
    again = sec.load(mem, scope, LPA)
    assert again.filings_recorded == 3 and again.assertions == 0
    assert counts(mem, scope) == counted


def _broken(tmp_path: Path, change) -> Path:
    data = json.loads(LPA.read_text())
    change(data)
    path = tmp_path / "broken-lpa.json"
    path.write_text(json.dumps(data))
    return path


def _revenue_row(data) -> dict:
    # the last row of the later 20-F: if validation ran per filing, the earlier 20-F
    # would already be written when this one fails
    return data["facts"]["ifrs-full"]["Revenue"]["units"]["USD"][5]


def _drop_accn(data):
    del _revenue_row(data)["accn"]


def _string_value(data):
    _revenue_row(data)["val"] = "43862372"


def _start_after_end(data):
    _revenue_row(data)["start"] = "2025-01-01"


def _other_form(data):
    _revenue_row(data)["form"] = "20-F/A"


def _other_filed(data):
    _revenue_row(data)["filed"] = "2025-04-03"


def _bad_filed(data):
    _revenue_row(data)["filed"] = "2025-02-30"


def _empty_form(data):
    _revenue_row(data)["form"] = " "


def _filed_past_the_last_datetime(data):
    # a filing of its own, whose end of day in New York is in the year 10000 in UTC
    _revenue_row(data).update(accn=FAR_ACCESSION, filed="9999-12-31")


FAR_ACCESSION = "0001997711-99-999999"


def _impossible_unit(data):
    units = data["facts"]["ifrs-full"]["Revenue"]["units"]
    units["US Dollars"] = units.pop("USD")


def _not_an_object(data):
    data["facts"]["ifrs-full"]["Revenue"]["units"]["USD"][5] = "row"


REVENUE_ACCESSION = "0001997711-25-000030"


@pytest.mark.parametrize(
    ("change", "unit", "rows", "accession", "reason", "detail"),
    [
        (_drop_accn, "USD", [5], None, "missing-key", "missing key 'accn'"),
        (_string_value, "USD", [5], REVENUE_ACCESSION, "not-a-number", "val must be a number, got str '43862372'"),
        (_start_after_end, "USD", [5], REVENUE_ACCESSION, "impossible-period", "start 2025-01-01 is after end"),
        # rows of an accession seen before are checked against it, not only once
        (_other_form, "USD", [5], REVENUE_ACCESSION, "filing-mismatch",
         "is form 20-F/A filed 2025-04-02 here but 20-F filed 2025-04-02 in an earlier row"),
        (_other_filed, "USD", [5], REVENUE_ACCESSION, "filing-mismatch",
         "is form 20-F filed 2025-04-03 here but 20-F filed 2025-04-02 in an earlier row"),
        (_bad_filed, "USD", [5], REVENUE_ACCESSION, "bad-date", "filed: not a YYYY-MM-DD date: '2025-02-30'"),
        (_filed_past_the_last_datetime, "USD", [5], FAR_ACCESSION, "bad-date",
         "filed: the end of 9999-12-31 in New York is past the last time a datetime holds"),
        (_not_an_object, "USD", [5], None, "not-an-object", "row must be an object, got str"),
        (_empty_form, "USD", [5], REVENUE_ACCESSION, "bad-form", "form must be a non-empty string, got ' '"),
        (_impossible_unit, "US Dollars", [0, 1, 2, 3, 4, 5], "*", "bad-unit", "whitespace or control characters"),
    ],
    ids=["missing-key", "wrong-type", "start-after-end", "other-form", "other-filed", "bad-filed",
         "filed-9999-12-31", "not-an-object", "empty-form", "impossible-unit"],
)
def test_rows_that_cannot_be_facts_are_quarantined(mem, scope, tmp_path, change, unit, rows, accession,
                                                   reason, detail):
    """Each bad row is kept out and recorded - file, concept, unit, row index, accession,
    reason - and every other row of its filing loads."""
    path = _broken(tmp_path, change)
    kept: list = []
    report = sec.load(mem, scope, path, quarantine=kept.append)
    assert [(q.file, q.attribute, q.unit, q.row, q.reason) for q in kept] == [
        (str(path), "ifrs-full:Revenue", unit, row, reason) for row in rows]
    assert all(detail in q.detail for q in kept), kept
    if accession == "*":  # the whole unit: each row names its own accession
        earlier = "0001493152-24-016772"
        assert [q.accession for q in kept] == [earlier, earlier, REVENUE_ACCESSION, earlier,
                                               REVENUE_ACCESSION, REVENUE_ACCESSION]
    else:
        assert all(q.accession == accession for q in kept)
    assert reason in REASONS
    assert report.rows == 768 and report.quarantined == len(rows)
    assert report.quarantine == {reason: len(rows)}
    assert report.quarantined_filings == sorted({q.accession for q in kept if q.accession})
    assert report.assertions == 768 - len(rows)
    assert counts(mem, scope)["evidence"] == 768 - len(rows)
    # the row is not a fact; the other rows of its filing are (2023 is reported by it too)
    def revenue(year: int):
        return mem.as_of(scope, entity="cik:1997711", attribute="ifrs-full:Revenue", unit="USD",
                         period=Period(start=dt.date(year, 1, 1), end=dt.date(year, 12, 31)),
                         cutoff=dt.datetime(2025, 6, 1, tzinfo=UTC))

    assert revenue(2024).status == "not_found"
    if unit == "USD":
        assert REVENUE_ACCESSION in [e.source_id for e in revenue(2023).version.sources]
    assert mem.source(scope, REVENUE_ACCESSION) is not None


def _refused(mem, scope, path: Path, where: str, reason: str) -> None:
    """Loading ``path`` raises an InputError naming the file, the place and the reason,
    and writes nothing."""
    with pytest.raises(InputError) as info:
        sec.load(mem, scope, path)
    message = str(info.value)
    assert str(path) in message and where in message and reason in message, message
    assert counts(mem, scope) == EMPTY


def test_a_submissions_file_given_as_companyfacts_is_named_as_such(mem, scope):
    with pytest.raises(InputError, match="missing key 'facts'; it looks like a submissions file"):
        sec.load(mem, scope, TESLA_SUBMISSIONS)
    assert counts(mem, scope) == EMPTY


def test_bad_json_raises_and_writes_nothing(mem, scope, tmp_path):
    path = tmp_path / "truncated.json"
    path.write_text(LPA.read_text()[:5000])
    with pytest.raises(InputError, match="not valid JSON") as info:
        sec.load(mem, scope, path)
    assert str(path) in str(info.value)
    assert counts(mem, scope) == EMPTY


def test_unreadable_submissions_rows_are_quarantined_and_keep_the_filed_date(mem, scope, tmp_path):
    """A submissions row whose acceptance time cannot be read is recorded; its filing
    falls back to the end of its filed date (never earlier than the real release)."""
    subs = tmp_path / "submissions-lpa.json"
    subs.write_text(json.dumps({"cik": "0001997711", "tickers": ["LPA"], "filings": {"recent": {
        "accessionNumber": ["0001997711-25-000030", "0001493152-24-016772", "bad"],
        "acceptanceDateTime": ["yesterday", "2024-04-26T16:05:00.000Z", "2024-04-26T16:05:00.000Z"]}}}))
    kept: list = []
    report = sec.load(mem, scope, LPA, subs, quarantine=kept.append)
    assert [(q.file, q.row, q.accession, q.reason) for q in kept] == [
        (str(subs), 0, "0001997711-25-000030", "bad-acceptance"), (str(subs), 2, None, "bad-acceptance")]
    assert "not an ISO 8601 date-time: 'yesterday'" in kept[0].detail
    assert "filings.recent row 0" in kept[0].detail
    assert report.quarantine == {"bad-acceptance": 2} and report.assertions == 768
    assert report.rules == {"acceptance": 1, "filed-end-of-day": 2}
    assert source(mem, scope, "0001997711-25-000030")["meta"]["available_by_rule"] == "filed-end-of-day"
    assert source(mem, scope, "0001493152-24-016772")["available_by"] == dt.datetime(2024, 4, 26, 16, 5,
                                                                                     tzinfo=UTC)


@pytest.mark.parametrize("accepted", ["9999-12-31T23:00:00-05:00", "0001-01-01T01:00:00.000Z"])
def test_an_acceptance_time_outside_the_years_of_a_datetime_is_quarantined(mem, scope, tmp_path, accepted):
    """Read in UTC (or as New York time, for a Z) it would be in the year 10000 or 0: a
    bad-acceptance row, whose filing keeps its filed date; not an OverflowError that ends
    the load."""
    subs = tmp_path / "submissions-lpa.json"
    subs.write_text(json.dumps({"cik": "0001997711", "filings": {"recent": {
        "accessionNumber": ["0001997711-25-000030"], "acceptanceDateTime": [accepted]}}}))
    kept: list = []
    report = sec.load(mem, scope, LPA, subs, quarantine=kept.append)
    assert [(q.row, q.accession, q.reason) for q in kept] == [(0, "0001997711-25-000030", "bad-acceptance")]
    assert "outside the years a datetime holds" in kept[0].detail
    assert report.assertions == 768 and report.rules == {"filed-end-of-day": 3}


def test_a_filing_time_learned_later_keeps_the_one_recorded(mem, scope, tmp_path):
    """Sources are immutable: an acceptance time learned after a filed-date load does not
    change the filing (no second source of it either); the load cites the filing as
    recorded and says so, and its other filings still load (refusing the company would
    have kept every later filing of it out of this scope)."""
    accession = "0001997711-25-000030"
    sec.load(mem, scope, LPA)
    filed = source(mem, scope, accession)
    before = counts(mem, scope)
    subs = tmp_path / "submissions-lpa.json"
    subs.write_text(json.dumps({"cik": "1997711", "tickers": ["LPA"], "filings": {"recent": {
        "accessionNumber": [accession], "acceptanceDateTime": ["2025-04-02T16:05:00.000Z"]}}}))
    again = sec.load(mem, scope, LPA, subs)
    assert again.cited_as_recorded == [accession]
    assert again.versions_created == again.evidence_added == 0
    assert source(mem, scope, accession) == filed  # the filed day's end, as recorded
    assert filed["meta"]["available_by_rule"] == "filed-end-of-day"
    assert counts(mem, scope) == before


def test_filings_load_after_a_kpi_table_that_named_them(mem, scope, tmp_path):
    """The other order of the flagship's two loads: a KPI table recorded PayPal's 10-Q
    first (its filed day's end, its document's title); the companyfacts rows cite it as
    recorded, so the table's figures and the filing's stand on one source."""
    kpi.load(mem, scope, KPI)
    accession = "0001633917-25-000064"
    table = source(mem, scope, accession)
    facts = tmp_path / "companyfacts-pypl.json"
    facts.write_text(json.dumps({"cik": 1633917, "entityName": "PayPal Holdings, Inc.", "facts": {"us-gaap": {
        "Revenues": {"units": {"USD": [{"start": "2025-01-01", "end": "2025-03-31", "val": 7791000000,
                                        "accn": accession, "fy": 2025, "fp": "Q1", "form": "10-Q",
                                        "filed": "2025-04-29"}]}}}}}))
    loaded = sec.load(mem, scope, facts)
    assert loaded.cited_as_recorded == [accession] and loaded.versions_created == 1
    assert source(mem, scope, accession) == table
    revenue = mem.as_of(scope, entity="cik:1633917", attribute="us-gaap:Revenues",
                        period=Period(start=dt.date(2025, 1, 1), end=dt.date(2025, 3, 31)),
                        cutoff=dt.datetime(2026, 1, 1, tzinfo=UTC))
    assert [e.source_id for e in revenue.version.sources] == [accession]
    assert revenue.version.available_by == table["available_by"]


# ---------------------------------------------------------------- KPI table


def test_kpi_table_loads_with_publication_times(mem, scope):
    report = kpi.load(mem, scope, KPI)
    assert (report.entities, report.sources, report.rows) == (2, 9, 27)
    assert report.rules == {"acceptance": 1, "filed-end-of-day": 8}
    assert report.versions_created == 27
    q3 = Period(start=dt.date(2025, 7, 1), end=dt.date(2025, 9, 30))

    tpv = mem.as_of(scope, entity="cik:1633917", attribute="TotalPaymentVolume", period=q3,
                    cutoff=dt.datetime(2025, 10, 30, tzinfo=UTC))
    assert tpv.status == "active" and tpv.value == Decimal("458088000000")
    assert tpv.version.unit == "USD"
    assert tpv.version.available_by.astimezone(NY).date() == dt.date(2025, 10, 28)
    assert tpv.version.available_by == dt.datetime(2025, 10, 29, 3, 59, 59, 999999, tzinfo=UTC)
    assert mem.as_of(scope, entity="cik:1633917", attribute="TotalPaymentVolume", period=q3,
                     cutoff=dt.datetime(2025, 10, 28, 12, tzinfo=NY)).status == "not_found"

    gmv = mem.as_of(scope, entity="cik:1594805", attribute="GrossMerchandiseVolume", period=q3,
                    cutoff=dt.datetime(2025, 11, 5, tzinfo=UTC))
    assert gmv.value == Decimal("92013000000")
    assert gmv.version.available_by == dt.datetime(2025, 11, 4, 12, 3, 12, tzinfo=UTC)
    assert mem.as_of(scope, entity="cik:1594805", attribute="GrossMerchandiseVolume", period=q3,
                     cutoff=dt.datetime(2025, 10, 30, tzinfo=UTC)).status == "not_found"

    shop = source(mem, scope, "0001594805-25-000089")
    assert shop["meta"]["available_by_rule"] == "acceptance"
    assert shop["meta"]["accepted"] == "2025-11-04T07:03:12-05:00"
    assert shop["authority"] == "primary" and shop["publisher"] == "cik:1594805"
    mixed = source(mem, scope, "0001633917-25-000064")
    assert mixed["meta"]["basis"] == "derived,secondary"
    assert mixed["meta"]["basis:TotalPaymentVolume 2025-01-01..2025-03-31"] == "derived"
    assert mixed["meta"]["note:TotalPaymentVolume 2025-01-01..2025-03-31"].startswith("1,756,679")
    assert mixed["meta"]["available_by_rule"] == "filed-end-of-day"
    assert mixed["authority"] == "primary"
    no_accession = source(mem, scope, "SHOP-6K-2024-11-12")
    assert no_accession["uri"] is None and "accession" not in no_accession["meta"]
    assert entity(mem, scope, "cik:1633917") == {
        "name": "PayPal Holdings, Inc.", "kind": "company", "aliases": ["PYPL"]}

    before = counts(mem, scope)
    again = kpi.load(mem, scope, KPI)
    assert again.unchanged == 27 and again.versions_created == again.evidence_added == 0
    assert counts(mem, scope) == before


def test_a_kpi_table_cites_the_filing_its_companyfacts_recorded(mem, scope, tmp_path):
    """The flagship's two loads in one scope: PayPal's filings, then its KPI table, whose
    rows name the same 10-Q. The table's rows cite the filing as recorded (by its
    acceptance time), so withdrawing the 10-Q reaches the KPIs too."""
    accession = "0001633917-25-000064"
    facts = tmp_path / "companyfacts-pypl.json"
    facts.write_text(json.dumps({"cik": 1633917, "entityName": "PayPal Holdings, Inc.", "facts": {"us-gaap": {
        "Revenues": {"units": {"USD": [{"start": "2025-01-01", "end": "2025-03-31", "val": 7791000000,
                                        "accn": accession, "fy": 2025, "fp": "Q1", "form": "10-Q",
                                        "filed": "2025-04-29"}]}}}}}))
    subs = tmp_path / "submissions-pypl.json"
    subs.write_text(json.dumps({"cik": "1633917", "tickers": ["PYPL"], "filings": {"recent": {
        "accessionNumber": [accession], "acceptanceDateTime": ["2025-04-29T16:06:21.000Z"]}}}))
    sec.load(mem, scope, facts, subs)
    filed = source(mem, scope, accession)

    report = kpi.load(mem, scope, KPI)
    assert report.cited_as_recorded == [accession]
    assert report.versions_created == 27 and report.sources_recorded == 8
    assert source(mem, scope, accession) == filed  # the filing as recorded: its title, meta and time
    q1 = Period(start=dt.date(2025, 1, 1), end=dt.date(2025, 3, 31))
    tpv = mem.as_of(scope, entity="cik:1633917", attribute="TotalPaymentVolume", period=q1,
                    cutoff=dt.datetime(2025, 4, 30, tzinfo=UTC))
    assert tpv.value == Decimal("417208000000")
    assert [e.source_id for e in tpv.version.sources] == [accession]
    # the filing's acceptance time, not the table's end of the filed day
    assert tpv.version.available_by == filed["available_by"] == dt.datetime(2025, 4, 29, 16, 6, 21, tzinfo=UTC)
    impact = mem.impact(scope, source_id=accession)
    assert {i.label for i in impact.items if i.kind == "fact"} >= {
        f"cik:1633917 {name} {q1.text}" for name in ("TotalPaymentVolume", "TransactionRevenues", "us-gaap:Revenues")}
    again = kpi.load(mem, scope, KPI)
    assert (again.unchanged, again.versions_created, again.cited_as_recorded) == (27, 0, [accession])


def _kpi_copy(tmp_path: Path, line: int, old: str, new: str) -> Path:
    lines = KPI.read_text().splitlines(keepends=True)
    assert old in lines[line]
    lines[line] = lines[line].replace(old, new, 1)
    path = tmp_path / "kpi.csv"
    path.write_text("".join(lines))
    return path


@pytest.mark.parametrize(
    ("line", "old", "new", "reason"),
    [
        (25, ",USD,", ",US Dollars,", "a unit must not contain whitespace"),
        (25, ",92013000000,", ",92.0 bn,", "value must be a decimal number"),
        (25, "2025-07-01,2025-09-30", "2025-10-01,2025-09-30", "start 2025-10-01 is after end"),
        (25, ",filing,", ",rumour,", "basis must be one of"),
    ],
    ids=["impossible-unit", "bad-value", "start-after-end", "bad-basis"],
)
def test_malformed_kpi_rows_raise_and_write_nothing(mem, scope, tmp_path, line, old, new, reason):
    path = _kpi_copy(tmp_path, line, old, new)
    with pytest.raises(InputError) as info:
        kpi.load(mem, scope, path)
    message = str(info.value)
    assert str(path) in message and "row 24 (line 26" in message, message
    assert "GrossMerchandiseVolume" in message and reason in message, message
    assert counts(mem, scope) == EMPTY


def test_kpi_missing_column_raises(mem, scope, tmp_path):
    path = tmp_path / "kpi.csv"
    shutil.copy(KPI, path)
    text = path.read_text().replace(",accepted,", ",accepted_at,", 1)
    path.write_text(text)
    with pytest.raises(InputError, match="missing column.*accepted"):
        kpi.load(mem, scope, path)
    assert counts(mem, scope) == EMPTY


# ---------------------------------------------------------------- rules without a database


def test_filed_end_of_day_in_new_york():
    assert av.filed_end_of_day("2025-10-28") == (
        dt.datetime(2025, 10, 29, 3, 59, 59, 999999, tzinfo=UTC), "filed-end-of-day")
    assert av.filed_end_of_day("2025-12-01").at == dt.datetime(2025, 12, 2, 4, 59, 59, 999999,
                                                               tzinfo=UTC)
    with pytest.raises(InputError, match="not a YYYY-MM-DD date"):
        av.filed_end_of_day("2025-13-01")


def test_acceptance_rules():
    # explicit numeric offset: trusted
    assert av.from_acceptance("2025-11-04T07:03:12-05:00") == (
        dt.datetime(2025, 11, 4, 12, 3, 12, tzinfo=UTC), "acceptance")
    # Z inside EDGAR hours either way, no file-level sign: taken as UTC
    assert av.from_acceptance("2016-05-10T15:27:20.000Z") == (
        dt.datetime(2016, 5, 10, 15, 27, 20, tzinfo=UTC), "acceptance")
    # ... unless the filer's file shows the New York clock
    assert av.from_acceptance("2016-05-10T15:27:20.000Z", ny_clock=True) == (
        dt.datetime(2016, 5, 10, 19, 27, 20, tzinfo=UTC), "acceptance-ny-quirk")
    # before 06:00Z: the documented sign, read as New York (EST in winter)
    assert av.from_acceptance("2016-01-12T05:10:00Z") == (
        dt.datetime(2016, 1, 12, 10, 10, tzinfo=UTC), "acceptance-ny-quirk")
    # 06:08Z would be 02:08 in New York, when EDGAR is closed: New York clock
    assert av.from_acceptance("2022-10-24T06:08:50.000Z") == (
        dt.datetime(2022, 10, 24, 10, 8, 50, tzinfo=UTC), "acceptance-ny-quirk")
    with pytest.raises(InputError, match="no UTC offset"):
        av.from_acceptance("2022-10-24T06:08:50")
    assert av.edgar_clock_is_new_york(["2022-10-24T06:08:50.000Z", "2022-11-08T20:18:10.000Z"])
    assert not av.edgar_clock_is_new_york(["2022-11-08T20:18:10.000Z"])


def test_filing_availability_falls_back_to_filed():
    accepted = {"0000950170-22-019867": "2022-10-24T06:08:50.000Z"}
    assert av.filing_availability("0000950170-22-019867", filed="2022-10-24",
                                  acceptances=accepted).rule == "acceptance-ny-quirk"
    fallback = av.filing_availability("0001193125-13-096241", filed="2013-03-07",
                                      acceptances=accepted)
    assert fallback.rule == "filed-end-of-day"
    assert fallback.at == dt.datetime(2013, 3, 8, 4, 59, 59, 999999, tzinfo=UTC)


@pytest.mark.parametrize("unit", [
    "USD", "shares", "USD/shares", "pure", "EUR/shares", "CAD/Mcf", "TWD", "segment", "Segment",
    "Stock_options", "case_filed", "reportableSegments", "business", "states", "instrument", "bu",
    "reporting_unit", "USD/shares_unit", "usd", "XYZ", "$", "USD/shares/D", "a" * 256])
def test_any_unit_id_the_sec_emits_is_a_unit(unit):
    assert unit_ok(unit)


@pytest.mark.parametrize("unit", ["", " ", "US Dollars", "USD ", "USD\n", "USD\x00", "US\u00a0D", "USD\u200b",
                                  "a" * 257, None, 3])
def test_what_cannot_be_a_unit_is_refused(unit):
    assert not unit_ok(unit)


def test_rerounding_rule():
    r = sec.rerounds
    assert r(Decimal(29739614000), Decimal(29740000000), 6)
    assert r(Decimal(-8218000), Decimal(-8000000), 6)
    assert not r(Decimal(3404451000), Decimal(3405000000), 6)  # off by a million
    assert not r(Decimal(5300748000), Decimal(5300000000), 6)  # 8 zeros, but filed in millions
    assert not r(Decimal(8092460000), Decimal(8067939000), 3)  # a restatement
    assert not r(Decimal(125687607), Decimal(125688000), 0)    # the filing is not rounded
    assert not r(Decimal("2.07"), Decimal("2.1"), 6)           # decimals are never re-rounded
    assert not r(Decimal(400000), Decimal(0), 6)


_ROW = '{"end": "2020-12-31", "val": 1, "accn": "0000000001-21-000001", "form": "10-K", "filed": "2021-02-01"}'


@pytest.mark.parametrize(
    ("text", "where", "reason"),
    [
        ("[1, 2]", "", "a companyfacts object is required at the top level"),
        ('{"cik": 1, "entityName": "X", "facts": []}', "facts", "missing or not an object"),
        ('{"cik": 1, "entityName": "X", "facts": {"us-gaap": {"A": {"label": "a"}}}}',
         "us-gaap:A", "missing key 'units'"),
        ('{"cik": 1, "entityName": "X", "facts": {"us-gaap": {"A": {"units": {"USD": {}}}}}}',
         "us-gaap:A [USD]", "rows must be a list"),
        ('{"cik": 1, "entityName": "X", "facts": {"us-gaap": {"A": {"label": {"en": ["a"]}, '
         '"units": {"USD": [' + _ROW + ']}}}}', "", "not valid JSON"),
        ("\x00\x01binary\xff", "", "not valid JSON"),
        ('{"entityName": "X", "facts": {"us-gaap": {"A": {"units": {"USD": [' + _ROW + ']}}}}}',
         "", "missing key 'cik'"),
        ('{"cik": 1, "entityName": "X", "facts": {"us-gaap": {"A": {"units": {"USD": ['
         + _ROW.replace('"val": 1', '"val": NaN') + ']}}}}}', "", "not valid JSON"),
    ],
    ids=["top-level-array", "facts-not-object", "no-units", "rows-not-list", "truncated", "binary",
         "no-cik", "nan"],
)
def test_companyfacts_structure_is_checked_as_it_streams(mem, scope, tmp_path, text, where, reason):
    path = tmp_path / "structure.json"
    path.write_text(text)
    _refused(mem, scope, path, where, reason)


@pytest.mark.parametrize(
    ("text", "where", "reason"),
    [
        ('{"cik": 1, "entityName": "X", "facts": []}', "facts", "missing or not an object"),
        ('{"cik": 1, "entityName": "X", "facts": {"us-gaap": {"A": {"label": "a"}}}}', "us-gaap:A",
         "missing key 'units'"),
        ('{"cik": 1, "entityName": "X", "facts": {"us-gaap": {"A": {"units": {"USD": {}}}}}}', "us-gaap:A [USD]",
         "rows must be a list"),
    ],
    ids=["facts-not-object", "no-units", "rows-not-list"],
)
def test_a_file_of_the_wrong_shape_is_named_where_not_called_invalid_json(tmp_path, text, where, reason):
    """Valid JSON of the wrong shape: the error names the place in the file and the
    reason, as the check raised it, not as "not valid JSON"."""
    path = tmp_path / "shape.json"
    path.write_text(text)
    with Spool() as spool, pytest.raises(InputError) as info:
        sec.read(path, spool=spool)
    assert (info.value.where, info.value.reason) == (f"{path}: {where}", reason)


def test_a_submissions_file_gone_before_it_is_read_is_named_as_gone(tmp_path):
    subs = tmp_path / "submissions-lpa.json"
    subs.write_text("{}")
    doc = sec.document(subs)
    subs.unlink()
    with pytest.raises(InputError) as info:
        sec.read_submissions([doc], 1997711)
    assert (info.value.where, info.value.reason) == (str(subs), "file not found")


def test_labels_and_descriptions_are_read_past(mem, scope, tmp_path):
    # nested values beside `units` (labels, descriptions) are skipped whatever their shape
    path = tmp_path / "labels.json"
    path.write_text('{"facts": {"us-gaap": {"A": {"label": {"en": ["Assets", {"x": 1}]}, "description": null, '
                    '"units": {"USD": [' + _ROW + ']}}}}, "entityName": "X", "cik": "0000000001"}')
    report = sec.load(mem, scope, path)
    assert (report.rows, report.versions_created) == (1, 1)
    answer = mem.as_of(scope, entity="cik:1", attribute="us-gaap:A", cutoff=dt.datetime(2100, 1, 1, tzinfo=dt.UTC))
    assert answer.value == 1
