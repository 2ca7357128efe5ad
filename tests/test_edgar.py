"""A universe of SEC companies against the real Neo4j: bulk archives, folders and files,
selection, quarantine, resuming, a kill in the middle of a load, and the real quirks of
TSMC (a 20-F filer in IFRS and TWD), Marvell (custom units) and Imunon (paged
submissions). Synthetic universes come from graphmem.loaders.synthetic.

Counts the public API does not offer (load marks, a canonical dump of a tenant's facts)
are read with plain Cypher on the test's own driver session.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
import zipfile
from decimal import Decimal
from pathlib import Path

import pytest
from click.testing import CliRunner
from graphmem.loaders import availability as av
from graphmem.loaders import edgar, sec, universe
from graphmem.loaders.spool import Spool, clean_stale
from graphmem.loaders.synthetic import SyntheticUniverse

from graphmem import InputError, Period, Scope, render
from graphmem.cli import main

UTC = dt.UTC
FIXTURES = Path(__file__).parent / "fixtures"
LPA = FIXTURES / "companyfacts-CIK0001997711-lpa.json"
TSMC = FIXTURES / "companyfacts-CIK0001046179-tsmc.json"
TSMC_SUBMISSIONS = FIXTURES / "submissions-CIK0001046179-tsmc.json"
MARVELL = FIXTURES / "companyfacts-CIK0001835632-marvell.json"
MARVELL_SUBMISSIONS = FIXTURES / "submissions-CIK0001835632-marvell.json"
IMUNON = FIXTURES / "submissions-CIK0000749647-imunon.json"
IMUNON_PAGE = FIXTURES / "submissions-CIK0000749647-imunon-001.json"
LATE = dt.datetime(2100, 1, 1, tzinfo=UTC)
CLI = [sys.executable, "-c", "from graphmem.cli import main; main()"]  # the graphmem command


def _dump(mem, scope: Scope) -> dict:
    """A tenant's graph without ids or transaction times: every version (key, value, its
    first availability, its sources), every source, every entity."""
    with mem.db.driver.session(database="neo4j") as session:
        versions = sorted(tuple(r) for r in session.run(
            "MATCH (f:Fact {tenant: $t})-[:VERSION_OF]->(k:FactKey) "
            "RETURN k.entity, k.attribute, k.unit, k.period, f.value, toString(f.available_by), "
            "COLLECT { MATCH (f)-[:EVIDENCED_BY]->(s:Source) RETURN s.id ORDER BY s.id } AS sources",
            t=scope.tenant))
        sources = sorted(tuple(r) for r in session.run(
            "MATCH (s:Source {tenant: $t}) RETURN s.id, s.kind, toString(s.available_by), s.meta", t=scope.tenant))
        entities = sorted(tuple(r) for r in session.run(
            "MATCH (e:Entity {tenant: $t}) RETURN e.id, e.name, e.aliases", t=scope.tenant))
    return {"versions": versions, "sources": sources, "entities": entities}


def _marks(mem, scope: Scope) -> int:
    with mem.db.driver.session(database="neo4j") as session:
        return session.run("MATCH (m:LoadMark {tenant: $t}) RETURN count(m) AS n", t=scope.tenant).single()["n"]


def _zip(path: Path, members: dict[str, Path | bytes]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, content in members.items():
            archive.writestr(name, content if isinstance(content, bytes) else content.read_bytes())
    return path


def _cli(*args: str, env_extra: dict | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
    env = {**os.environ, **(env_extra or {})}
    return subprocess.run([*CLI, *args], capture_output=True, text=True, env=env, timeout=timeout, check=False)


@pytest.fixture
def uri(migrated) -> str:
    return migrated.uri


# ---------------------------------------------------------------- reading, no database


def test_submissions_pages_are_merged():
    """Imunon's recent block stops in 2010; the page holds 395 older filings and has no cik."""
    main_only = sec.read_submissions([sec.document(IMUNON)], 749647)
    merged = sec.read_submissions([sec.document(IMUNON_PAGE), sec.document(IMUNON)], 749647)
    page = json.loads(IMUNON_PAGE.read_text())
    assert "cik" not in page and len(page["accessionNumber"]) == 395
    assert main_only.missing_pages == ("CIK0000749647-submissions-001.json",)
    assert merged.missing_pages == ()
    assert len(merged.times) == len(main_only.times) + 395
    oldest = page["accessionNumber"][-1]
    assert oldest not in main_only.times and merged.times[oldest] == page["acceptanceDateTime"][-1]
    assert merged.quarantined == [] and merged.tickers == main_only.tickers


@pytest.mark.parametrize("cik", ["1997711", "0001997711", 1997711])
def test_cik_given_as_number_or_digits(tmp_path, cik):
    data = json.loads(LPA.read_text())
    data["cik"] = cik
    facts = tmp_path / "facts.json"
    facts.write_text(json.dumps(data))
    subs = tmp_path / "subs.json"
    subs.write_text(json.dumps({"cik": "0001997711" if cik == 1997711 else 1997711, "tickers": ["LPA"],
                                "filings": {"recent": {"accessionNumber": [], "acceptanceDateTime": []}}}))
    with Spool() as spool:
        read = sec.read(facts, [subs], spool=spool)
    assert read.entity.id == "cik:1997711" and read.entity.aliases == ("LPA",)
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"cik": "320193", "filings": {"recent": {"accessionNumber": [],
                                                                          "acceptanceDateTime": []}}}))
    with Spool() as spool, pytest.raises(InputError, match="company facts are CIK 1997711"):
        sec.read(facts, [other], spool=spool)


def test_a_value_nested_thousands_deep_is_quarantined_not_a_crash(tmp_path):
    """A row's value 5,000 arrays deep is read past (building it would overflow Python's
    stack): the row is quarantined, the file's other rows are read; a submissions file
    nested as deep is an error naming it."""
    nested = "[" * 5000 + "]" * 5000
    text = json.dumps(json.loads(LPA.read_text())).replace('"val": 2650535,', f'"val": {nested},', 1)
    facts = tmp_path / "facts.json"
    facts.write_text(text)
    with Spool() as spool:
        read = sec.read(facts, spool=spool)
    [record] = read.quarantined
    assert (read.rows, record.reason) == (768, "not-a-number")
    assert record.attribute == "ifrs-full:AccrualsClassifiedAsCurrent"
    assert "nested more than 32 deep" in record.detail
    subs = tmp_path / "subs.json"
    subs.write_text('{"cik": 1997711, "filings": ' + nested + "}")
    with pytest.raises(InputError, match="not valid JSON") as info:
        sec.read_submissions([sec.document(subs)], 1997711)
    assert info.value.where == str(subs)


def test_after_hours_friday_acceptance_is_when_it_became_public():
    """Accepted Friday 2024-11-01 at 18:45 New York (after the 17:30 cut-off), dated Monday
    2024-11-04: public on Friday evening, three days before its filed date."""
    when = av.filing_availability("0000320193-24-000123", filed="2024-11-04",
                                  acceptances={"0000320193-24-000123": "2024-11-01T22:45:00.000Z"})
    assert when == (dt.datetime(2024, 11, 1, 22, 45, tzinfo=UTC), "acceptance")
    assert when.at < av.filed_end_of_day("2024-11-01").at < av.filed_end_of_day("2024-11-04").at



def test_a_date_given_as_midnight_in_new_york_is_not_an_acceptance_time(mem, scope, tmp_path):
    """Imunon's page dates its 1990s filings at midnight in New York (the 10-Q/A filed
    1999-11-03 is ``1999-11-03T05:00:00.000Z``): EDGAR was closed then however the clock is
    read, so the filing is public at the end of its filed day, not at 05:00 that morning.
    A 10-K accepted in EDGAR's hours keeps its acceptance time."""
    old, new = "0000931731-99-000413", "0001493152-25-008460"
    path = _tiny(tmp_path, {"us-gaap": {"Assets": {"units": {"USD": [
        _row(old, "10-Q/A", 7, end="1999-09-30", filed="1999-11-03"),
        _row(new, "10-K", 9, filed="2025-02-27")]}}}}, cik=749647)
    report = sec.load(mem, scope, path, [IMUNON, IMUNON_PAGE])
    assert report.rules == {"acceptance": 1, "filed-end-of-day": 1}
    dated = mem.source(scope, old)
    assert dated.available_by == av.filed_end_of_day("1999-11-03").at
    assert dated.meta["acceptance"] == "1999-11-03T05:00:00.000Z"
    assert dated.meta["available_by_rule"] == "filed-end-of-day"
    noon = dt.datetime(1999, 11, 3, 17, tzinfo=UTC)  # 12:00 in New York on its filed day
    answer = mem.as_of(scope, entity="cik:749647", attribute="us-gaap:Assets",
                       period=Period(end=dt.date(1999, 9, 30)), cutoff=noon)
    assert answer.value is None
    assert mem.source(scope, new).available_by == dt.datetime(2025, 2, 27, 13, 15, 43, tzinfo=UTC)


def test_an_sec_notice_stamped_after_its_filed_day_keeps_its_stamp():
    """An EFFECT notice filed 2021-11-16 and stamped 00:15 New York the next day (05:15Z):
    outside EDGAR's hours either way, and later than the end of its filed day, which
    would be earlier than the stamp."""
    accession = "9999999995-21-004370"  # Marvell's submissions file
    when = av.filing_availability(accession, filed="2021-11-16", acceptances={accession: "2021-11-17T05:15:13.000Z"})
    assert when.at == dt.datetime(2021, 11, 17, 10, 15, 13, tzinfo=UTC)
    assert when.at > av.filed_end_of_day("2021-11-16").at

def test_a_universe_is_found_in_archives_folders_and_files(tmp_path):
    facts_zip = _zip(tmp_path / "companyfacts.zip", {"CIK0001997711.json": LPA})
    subs_zip = _zip(tmp_path / "submissions.zip", {"CIK0000749647.json": IMUNON,
                                                    "CIK0000749647-submissions-001.json": IMUNON_PAGE})
    folder = tmp_path / "unpacked"
    folder.mkdir()
    (folder / "CIK0001835632.json").write_bytes(MARVELL.read_bytes())  # told by its content
    (folder / "whatever.json").write_bytes(MARVELL_SUBMISSIONS.read_bytes())  # kind and CIK from content
    (folder / "company_tickers.json").write_text('{"0": {"cik_str": 1, "ticker": "A", "title": "A"}}')
    with pytest.raises(InputError, match="neither companyfacts nor submissions"):
        universe.discover([folder / "company_tickers.json"])
    with universe.discover([facts_zip, subs_zip, folder, TSMC, TSMC_SUBMISSIONS]) as found:
        assert found.skipped == []  # the SEC's tickers file beside the company files is not one of them
        companies = {cik: found.company(cik) for cik in found.ciks}
        assert sorted(companies) == [749647, 1046179, 1835632, 1997711]
        assert companies[1997711].facts.name == f"{facts_zip}:CIK0001997711.json"
        assert companies[1997711].facts.fingerprint.startswith("crc32:")
        assert companies[749647].facts is None
        assert [d.name for d in companies[749647].submissions] == [
            f"{subs_zip}:CIK0000749647-submissions-001.json", f"{subs_zip}:CIK0000749647.json"]
        assert companies[1835632].facts.name == str(folder / "CIK0001835632.json")
        assert [d.name for d in companies[1835632].submissions] == [str(folder / "whatever.json")]
        # the member streams from the archive
        with Spool() as spool:
            read = sec.read(companies[1997711].facts, spool=spool)
        assert read.rows == 768 and read.file == f"{facts_zip}:CIK0001997711.json"


def test_selection_by_cik_and_by_ticker(tmp_path):
    tickers = tmp_path / "company_tickers.json"
    tickers.write_text(json.dumps({"0": {"cik_str": 1997711, "ticker": "LPA", "title": "LPA"},
                                   "1": {"cik_str": 320193, "ticker": "AAPL", "title": "Apple Inc."}}))
    with universe.discover([LPA, TSMC]) as found:
        assert [c.cik for c in universe.select(found)] == [1046179, 1997711]
        assert [c.cik for c in universe.select(found, ciks=universe.parse_ciks(["0001046179"], "--cik"))] == [1046179]
        picked = universe.select(found, tickers=["lpa", "AAPL"], tickers_file=tickers)
        assert [(c.cik, c.facts is not None) for c in picked] == [(320193, False), (1997711, True)]
        with pytest.raises(InputError, match="no such ticker.*MSFT"):
            universe.select(found, tickers=["MSFT"], tickers_file=tickers)
        with pytest.raises(InputError, match="company_tickers.json"):
            universe.select(found, tickers=["LPA"])
    with pytest.raises(InputError, match="not a CIK"):
        universe.parse_ciks(["12x"], "--cik")


def test_stale_spool_folders_are_cleaned(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = tmp_path / f"graphmem-spool-{dead.pid}-abc"
    live = tmp_path / f"graphmem-spool-{os.getpid()}-def"
    other = tmp_path / "graphmem-spool-notapid"
    for folder in (stale, live, other):
        folder.mkdir()
        (folder / "rows.sqlite3").write_text("x")
    assert clean_stale(tmp_path) == [stale]
    assert not stale.exists() and live.exists() and other.exists()
    with Spool() as spool:  # a spool is named after its process
        assert f"graphmem-spool-{os.getpid()}-" in str(spool._dir.name)


def test_synthetic_universe_is_deterministic(tmp_path):
    shape = SyntheticUniverse(companies=3, filings=6, concepts=6, malformed=3)
    first, second = shape.write_zips(tmp_path / "a"), shape.write_zips(tmp_path / "b")
    for name in ("companyfacts", "submissions"):
        with zipfile.ZipFile(first[name]) as a, zipfile.ZipFile(second[name]) as b:
            assert [(i.filename, i.CRC) for i in a.infolist()] == [(i.filename, i.CRC) for i in b.infolist()]
    other = SyntheticUniverse(companies=3, filings=6, concepts=6, malformed=3, seed=1).write_zips(tmp_path / "c")
    with zipfile.ZipFile(first["companyfacts"]) as a, zipfile.ZipFile(other["companyfacts"]) as c:
        assert [i.CRC for i in a.infolist()] != [i.CRC for i in c.infolist()]


# ---------------------------------------------------------------- real files, real database


def test_bulk_archive_of_real_files_loads_as_the_single_file_does(mem, scope, tmp_path):
    facts_zip = _zip(tmp_path / "companyfacts.zip", {"CIK0001997711.json": LPA})
    subs_zip = _zip(tmp_path / "submissions.zip", {"CIK0000749647.json": IMUNON,
                                                    "CIK0000749647-submissions-001.json": IMUNON_PAGE})
    with universe.discover([facts_zip, subs_zip]) as found:
        assert [c.cik for c in universe.select(found)] == [1997711]  # Imunon: submissions only
        report = edgar.load(mem, scope, universe.select(found, ciks=[749647, 1997711]))
    statuses = {c.cik: c.status for c in report.companies}
    assert statuses == {749647: "missing", 1997711: "loaded"}
    lpa = next(c for c in report.companies if c.cik == 1997711)
    assert (lpa.rows, lpa.sources, lpa.assertions, lpa.quarantined) == (768, 3, 768, 0)

    alone = Scope(tenant=f"{scope.tenant}-file")
    sec.load(mem, alone, LPA)
    assert mem.counts(scope) == mem.counts(alone)
    assert _dump(mem, scope) == _dump(mem, alone)

    with universe.discover([facts_zip, subs_zip]) as found:
        again = edgar.load(mem, scope, universe.select(found))
    assert {c.cik: c.status for c in again.companies} == {1997711: "recorded"}
    recorded = next(c for c in again.companies if c.cik == 1997711)
    assert (recorded.rows, recorded.versions_created) == (768, lpa.versions_created)
    assert mem.counts(scope) == mem.counts(alone)


def test_a_20f_filer_in_ifrs_and_twd_loads_whole(mem, scope):
    """TSMC: 20-F and 6-K, ifrs-full and dei, TWD, USD, EUR, a Stock_options unit, null
    labels; its 2018 FinanceIncome restated in the 20-F filed 2021-04-16."""
    with universe.discover([TSMC, TSMC_SUBMISSIONS]) as found:
        report = edgar.load(mem, scope, universe.select(found))
    tsmc = report.companies[0]
    assert (tsmc.status, tsmc.rows, tsmc.quarantined) == ("loaded", 5_979, 0)
    assert tsmc.assertions == 5_979 and tsmc.sources == 9
    assert tsmc.missing_pages == ["CIK0001046179-submissions-001.json"]
    entity = "cik:1046179"
    year = Period(start=dt.date(2018, 1, 1), end=dt.date(2018, 12, 31))

    def finance_income(cutoff: dt.datetime):
        return mem.as_of(scope, entity=entity, attribute="ifrs-full:FinanceIncome", unit="TWD", period=year,
                         cutoff=cutoff)

    before = finance_income(dt.datetime(2021, 4, 15, tzinfo=UTC))
    assert before.value == Decimal("14852800000")
    assert [e.source_id for e in before.version.sources] == ["0001193125-19-108390", "0001193125-20-107579"]
    after = finance_income(LATE)
    assert after.value == Decimal("158400000")
    assert after.version.sources[0].kind == "20-F"
    assert after.version.available_by == dt.datetime(2021, 4, 16, 11, 58, 57, tzinfo=UTC)
    options = mem.as_of(scope, entity=entity, attribute="ifrs-full:NumberOfOutstandingShareOptions",
                        unit="Stock_options", period=Period(end=dt.date(2014, 12, 31)), cutoff=LATE)
    assert options.value == 700000
    six_k = mem.source(scope, "0001193125-21-301021")
    assert six_k.kind == "6-K" and six_k.meta["available_by_rule"] == "acceptance"


def test_custom_units_and_forms_of_a_mid_cap(mem, scope):
    """Marvell: segment, reporting_unit, lender and company units (one concept and period
    in two units is two keys), proxy and prospectus forms."""
    report = sec.load(mem, scope, MARVELL, MARVELL_SUBMISSIONS)
    assert (report.rows, report.quarantined, report.assertions) == (8_053, 0, 8_053)
    entity = "cik:1835632"
    acquired = Period(end=dt.date(2022, 4, 30))
    keys = mem.facts_as_of(scope, entity=entity, attribute="us-gaap:NumberOfBusinessesAcquired", cutoff=LATE)
    units = sorted({(a.version.unit, a.version.period.end) for a in keys if a.status == "active"})
    assert ("company", acquired.end) in units and ("lender", acquired.end) in units
    segments = mem.as_of(scope, entity=entity, attribute="us-gaap:NumberOfReportableSegments",
                         unit="reporting_unit", period=Period(start=dt.date(2022, 1, 30), end=dt.date(2023, 1, 28)),
                         cutoff=LATE)
    assert segments.value == 1
    kinds = {e.kind for a in mem.facts_as_of(scope, entity=entity, cutoff=LATE) if a.version
             for e in a.version.sources}
    assert {"10-K", "10-Q", "DEF 14A", "424B2"} <= kinds


def _tiny(tmp_path: Path, facts: dict, cik: int = 4242) -> Path:
    path = tmp_path / f"companyfacts-CIK{cik:010d}.json"
    path.write_text(json.dumps({"cik": cik, "entityName": "Tiny", "facts": facts}))
    return path


def _row(accn: str, form: str, val, end="2023-12-31", start=None, filed="2024-02-01") -> dict:
    row = {"end": end, "val": val, "accn": accn, "fy": None, "fp": None, "form": form, "filed": filed}
    if start:
        row["start"] = start
    return row


def test_case_variants_of_a_unit_are_two_keys(mem, scope, tmp_path):
    path = _tiny(tmp_path, {"us-gaap": {"NumberOfSegments": {"label": None, "units": {
        "Segment": [_row("0000004242-24-000001", "10-K", 3)],
        "segment": [_row("0000004242-24-000001", "10-K", 4)]}}}})
    report = sec.load(mem, scope, path)
    assert report.case_variants == ["us-gaap:NumberOfSegments [Segment, segment]"]
    period = Period(end=dt.date(2023, 12, 31))
    for unit, value in (("Segment", 3), ("segment", 4)):
        answer = mem.as_of(scope, entity="cik:4242", attribute="us-gaap:NumberOfSegments", unit=unit,
                           period=period, cutoff=LATE)
        assert (answer.status, answer.value, answer.version.unit) == ("active", value, unit)


def test_any_taxonomy_form_and_value_range_loads(mem, scope, tmp_path):
    """Forms beyond 10-K/10-Q, company and other taxonomies, fy/fp and labels null, a
    tiny fraction and 1e14, a currency other than USD: every row is a fact, exactly."""
    forms = ["40-F", "8-K", "DEF 14A", "S-1", "10-K/A", "6-K", "20-F/A", "424B4"]
    facts = {
        "srt": {"A": {"label": None, "units": {"JPY": [_row("0000004242-24-000001", forms[0], 100000000000000)]}}},
        "invest": {"B": {"units": {"pure": [_row("0000004242-24-000002", forms[1], "TINY")]}}},
        "tiny": {"C": {"units": {"USD": [_row(f"0000004242-24-00000{n}", form, n, start="2023-01-01",
                                             filed=f"2024-02-0{n}") for n, form in enumerate(forms[2:], 3)]}}},
        "dei": {"D": {"units": {"shares": [_row("0000004242-24-000001", forms[0], 5)]}}},
    }
    path = tmp_path / "facts.json"
    path.write_text(json.dumps({"cik": 4242, "entityName": "Tiny", "facts": facts}).replace('"TINY"', "0.0000001"))
    report = sec.load(mem, scope, path)
    assert (report.rows, report.quarantined, report.assertions, report.sources) == (9, 0, 9, 8)
    big = mem.as_of(scope, entity="cik:4242", attribute="srt:A", cutoff=LATE)
    assert big.value == Decimal("100000000000000") and big.version.unit == "JPY"
    assert mem.as_of(scope, entity="cik:4242", attribute="invest:B", cutoff=LATE).value == Decimal("1E-7")
    assert {mem.source(scope, f"0000004242-24-00000{n}").kind for n in range(1, 9)} == set(forms)


# ---------------------------------------------------------------- synthetic universes


def test_synthetic_universe_from_the_command_line_with_its_quarantine(uri, scope, tmp_path):
    """Archives, --quarantine FILE and --json: every malformed row is one JSON line naming
    its file, concept, unit, row index, accession and reason; paged submissions give the
    old filings their acceptance time; the first filing keeps its filed date; after-hours
    acceptances are public before their filed date."""
    shape = SyntheticUniverse(companies=3, filings=9, concepts=6, malformed=5, recent=3)
    paths = shape.write_zips(tmp_path)
    out = tmp_path / "quarantine.jsonl"
    done = _cli("load", "edgar", str(paths["companyfacts"]), str(paths["submissions"]), "--tenant", scope.tenant,
                "--quarantine", str(out), "--json", env_extra={"GRAPHMEM_NEO4J_URI": uri})
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["totals"]["companies"] == {"loaded": 3}
    assert report["totals"]["quarantine"] == {reason: 3 * n for reason, n in shape.expected_quarantine().items()}
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    expected = []
    for cik in shape.ciks():
        last = shape.filing(cik, shape.filings - 1).accession
        per_concept: dict[int, int] = {}
        for n, (c, _) in enumerate(shape._malformed(cik)):
            _, name, unit = shape.concept(cik, c)
            index = 2 * shape.filings + per_concept.get(c, 0)
            per_concept[c] = per_concept.get(c, 0) + 1
            reason = ("missing-key", "not-a-number", "bad-date", "impossible-period", "bad-accession")[n % 5]
            expected.append((f"{paths['companyfacts']}:CIK{cik:010d}.json", f"{shape.concept(cik, c)[0]}:{name}",
                             unit, index, None if reason == "bad-accession" else last, reason))
    got = [(q["file"], q["attribute"], q["unit"], q["row"], q["accession"], q["reason"]) for q in lines]
    assert sorted(got, key=str) == sorted(expected, key=str)
    per_company = {c["cik"]: c for c in report["companies"]}
    first = per_company[shape.first_cik]
    assert first["quarantined_filings"] == [shape.filing(shape.first_cik, shape.filings - 1).accession]
    assert first["rules"] == {"acceptance": shape.filings - 1, "filed-end-of-day": 1}

    from graphmem import Memory

    with Memory.connect(uri) as mem:
        cik = shape.first_cik
        late = shape.filing(cik, 4)  # after hours: accepted the business day before its filed date
        assert late.after_hours
        stored = mem.source(scope, late.accession)
        assert stored.available_by == late.accepted and stored.available_by.date() < late.filed
        oldest_paged = shape.filing(cik, 1)  # only in the page
        assert mem.source(scope, oldest_paged.accession).meta["available_by_rule"] == "acceptance"
        assert mem.source(scope, shape.filing(cik, 0).accession).meta["available_by_rule"] == "filed-end-of-day"
        entity = mem.entity(scope, f"cik:{cik}")
        assert entity.aliases == (shape.ticker(cik),)


def test_resume_skips_recorded_companies_and_the_write_path_stays_the_safety_net(mem, scope, tmp_path):
    shape = SyntheticUniverse(companies=3, filings=8, concepts=5, malformed=1)
    paths = shape.write_folders(tmp_path)  # CIK##########.json files: told apart by their content
    with universe.discover([paths["companyfacts"], paths["submissions"]]) as found:
        first = edgar.load(mem, scope, universe.select(found))
        counted, dumped = mem.counts(scope), _dump(mem, scope)
        again = edgar.load(mem, scope, universe.select(found))
        assert [c.status for c in again.companies] == ["recorded"] * 3
        assert [c.versions_created for c in again.companies] == [c.versions_created for c in first.companies]
        skipped = again.totals()  # what the re-run did: nothing read, every filing already recorded
        assert (skipped["rows"], skipped["versions_created"], skipped["rows_per_s"]) == (0, 0, 0.0)
        assert skipped["filings_recorded"] == first.totals()["sources"] > 0
        # the text report's lines say the same as its totals: nothing read, all recorded
        lines = render.universe_report(again).splitlines()
        for c in first.companies:
            row = next(line.split() for line in lines if line.startswith(str(c.cik)))
            work = row[row.index("recorded"):-1]  # after the name, before the seconds
            assert work == ["recorded", str(c.sources), str(c.sources), "0", "0", "0", "0", "0", "-"], row
        assert mem.counts(scope) == counted
        rewritten = edgar.load(mem, scope, universe.select(found), resume=False)
    totals = rewritten.totals()
    assert totals["companies"] == {"loaded": 3} and totals["filings_recorded"] == 0
    assert totals["unchanged"] == totals["assertions"] == first.totals()["assertions"]
    assert totals["versions_created"] == totals["evidence_added"] == 0
    assert first.totals()["rerounded"] > 0 and first.totals()["versions_created"] < first.totals()["assertions"]
    assert mem.counts(scope) == counted and _dump(mem, scope) == dumped


def test_a_file_that_is_not_companyfacts_fails_its_company_alone(uri, scope, tmp_path):
    folder = tmp_path / "universe"
    folder.mkdir()
    (folder / "companyfacts-CIK0001997711.json").write_bytes(LPA.read_bytes())
    (folder / "companyfacts-CIK0000000002.json").write_text(LPA.read_text()[:4000])  # truncated
    (folder / "companyfacts-CIK0000000003.json").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00binary")
    done = _cli("load", "edgar", str(folder), "--tenant", scope.tenant, "--json",
                env_extra={"GRAPHMEM_NEO4J_URI": uri})
    assert done.returncode == 5  # the others loaded
    errors = [line for line in done.stderr.splitlines() if line.strip()]
    assert errors == ["graphmem: incomplete: load edgar: 2 of 3 companies not loaded: CIK 2 (failed), CIK 3 (failed)"]
    report = {c["cik"]: c for c in json.loads(done.stdout)["companies"]}
    assert report[1997711]["status"] == "loaded" and report[1997711]["assertions"] == 768
    for cik in (2, 3):
        assert report[cik]["status"] == "failed"
        assert f"companyfacts-CIK{cik:010d}.json" in report[cik]["error"]
        assert "not valid JSON" in report[cik]["error"]


def test_a_killed_load_resumes_to_the_graph_of_one_clean_load(uri, tmp_path):
    """SIGKILL in the middle of a universe load, then the same command again: the graph
    equals one clean load's, and the killed load's spool folder is gone."""
    from graphmem import Memory

    shape = SyntheticUniverse(companies=8, filings=12, concepts=8, malformed=2)
    paths = shape.write_zips(tmp_path)
    args = ["load", "edgar", str(paths["companyfacts"]), str(paths["submissions"])]
    killed = Scope(tenant=f"test-kill-{uuid.uuid4().hex[:8]}")
    clean = Scope(tenant=f"test-clean-{uuid.uuid4().hex[:8]}")
    env = {**os.environ, "GRAPHMEM_NEO4J_URI": uri}
    with Memory.connect(uri) as mem:
        proc = subprocess.Popen([*CLI, *args, "--tenant", killed.tenant], env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 300
        while _marks(mem, killed) < 10 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        assert proc.returncode == -signal.SIGKILL, "the load finished before it could be killed"
        partial = _marks(mem, killed)
        assert 10 <= partial < shape.companies * (shape.filings + 1)
        spools = list(Path(tempfile.gettempdir()).glob(f"graphmem-spool-{proc.pid}-*"))
        resumed = _cli(*args, "--tenant", killed.tenant, "--json", env_extra={"GRAPHMEM_NEO4J_URI": uri})
        assert resumed.returncode == 0, resumed.stderr
        report = json.loads(resumed.stdout)
        assert report["totals"]["filings_recorded"] + len(
            [c for c in report["companies"] if c["status"] == "recorded"]) > 0
        assert not any(p.exists() for p in spools)
        done = _cli(*args, "--tenant", clean.tenant, env_extra={"GRAPHMEM_NEO4J_URI": uri})
        assert done.returncode == 0, done.stderr
        assert mem.counts(killed) == mem.counts(clean)
        assert _dump(mem, killed) == _dump(mem, clean)


def test_a_row_beyond_graphmem_bounds_is_quarantined(mem, scope, tmp_path):
    """A value graphmem's models refuse (71 significant digits) is quarantined when its
    filing's facts are built, naming its row; the filing's other rows load. The bounds
    live in graphmem.limits: until they exist there is nothing to refuse."""
    limits = pytest.importorskip("graphmem.limits")
    huge = 10 ** (limits.DECIMAL_DIGITS + 6) + 1
    accession = "0000004242-24-000001"
    path = _tiny(tmp_path, {"us-gaap": {"Big": {"units": {"USD": [_row(accession, "10-K", 1),
                                                                   _row(accession, "10-K", huge, end="2022-12-31")]}}}})
    kept: list = []
    report = sec.load(mem, scope, path, quarantine=kept.append)
    assert [(q.attribute, q.unit, q.row, q.accession, q.reason) for q in kept] == [
        ("us-gaap:Big", "USD", 1, accession, "out-of-bounds")]
    assert report.quarantine == {"out-of-bounds": 1} and report.quarantined_filings == [accession]
    assert report.assertions == 1
    assert mem.as_of(scope, entity="cik:4242", attribute="us-gaap:Big", period=Period(end=dt.date(2023, 12, 31)),
                     cutoff=LATE).value == 1


def test_a_combined_filing_of_two_companies_loads_for_both(mem, scope, tmp_path):
    """One accession filed for a parent and its subsidiary: each company's facts are
    evidenced by a source of its own (publisher its CIK), so each loads whole and a later
    filing of either supersedes only its own figures."""
    combined = "0001111111-24-000001"
    parent = _tiny(tmp_path, {"us-gaap": {"Assets": {"units": {"USD": [_row(combined, "10-K", 100)]}}}}, cik=1111111)
    child = _tiny(tmp_path, {"us-gaap": {"Assets": {"units": {"USD": [
        _row(combined, "10-K", 40), _row("0002222222-24-000009", "10-Q", 41, filed="2024-05-01")]}}}}, cik=2222222)
    with universe.discover([parent, child]) as found:
        report = edgar.load(mem, scope, universe.select(found))
        assert [c.status for c in report.companies] == ["loaded", "loaded"]
        assert [c.status for c in edgar.load(mem, scope, universe.select(found)).companies] == ["recorded"] * 2
    own = mem.source(scope, f"{combined}:cik:2222222")
    assert own.publisher == "cik:2222222" and own.meta["accession"] == combined and own.kind == "10-K"
    assert mem.source(scope, combined).publisher == "cik:1111111"
    period = Period(end=dt.date(2023, 12, 31))

    def assets(entity: str, cutoff: dt.datetime):
        return mem.as_of(scope, entity=entity, attribute="us-gaap:Assets", period=period, cutoff=cutoff)

    spring = dt.datetime(2024, 3, 1, tzinfo=UTC)
    assert assets("cik:1111111", spring).value == 100 and assets("cik:2222222", spring).value == 40
    assert assets("cik:2222222", LATE).value == 41  # superseded by its own later filing
    assert assets("cik:2222222", LATE).status == "active"


# ---------------------------------------------------------------- one rule for an unreadable member


def _load_edgar(uri: str, tenant: str, *paths: Path):
    return CliRunner().invoke(main, ["load", "edgar", *map(str, paths), "--tenant", tenant, "--json"],
                              env={"GRAPHMEM_NEO4J_URI": uri})


def test_an_unreadable_member_is_skipped_and_named_alike_in_a_folder_and_a_zip(uri, mem, tmp_path):
    """A company beside a member that is not JSON and one that is JSON of the wrong shape:
    in a folder and in a ZIP alike, the company loads, both members are named with their
    reason, and the exit code (5) says that something was left out. (A company of one
    filing, not LPA's 768 rows: the rule is the point, and the test stays quick.)"""
    bad = {"broken.json": b"{broken", "list.json": b"[1, 2]"}
    folder = tmp_path / "folder"
    folder.mkdir()
    company = _tiny(folder, {"us-gaap": {"Revenues": {"units": {"USD": [_row("0000004242-24-000001", "10-K", 7)]}}}})
    for name, content in bad.items():
        (folder / name).write_bytes(content)
    archive = _zip(tmp_path / "edgar.zip", {company.name: company, **bad})
    outcomes = []
    for source, prefix in ((folder, f"{folder}/"), (archive, f"{archive}:")):
        tenant = f"test-members-{uuid.uuid4().hex[:12]}"
        done = _load_edgar(uri, tenant, source)
        assert done.exit_code == 5, done.output
        report = json.loads(done.stdout)
        assert mem.counts(Scope(tenant=tenant))["versions"] > 0
        assert done.stderr.startswith("graphmem: incomplete: load edgar: 2 unreadable file(s) skipped: ")
        assert all(f"{prefix}{name}" in done.stderr for name in bad)
        outcomes.append(([(c["cik"], c["status"], c["assertions"]) for c in report["companies"]],
                         {s["file"].removeprefix(prefix): s["reason"] for s in report["skipped"]},
                         report["totals"]["skipped"]))
    assert outcomes[0] == outcomes[1] == ([(4242, "loaded", 1)], {
        "broken.json": "not valid JSON",
        "list.json": "neither companyfacts nor submissions JSON (no entityName, facts or filings at the top level)"},
        2)


def test_an_archive_or_folder_with_nothing_to_load_is_an_error(uri, mem, tmp_path):
    """An empty ZIP, a ZIP or folder of unreadable members only: one line naming it (and
    the members, with their reasons), exit 1, nothing written."""
    empty = _zip(tmp_path / "empty.zip", {})
    junk = _zip(tmp_path / "junk.zip", {"a.json": b"{", "b.json": b"3", "readme.txt": b"hello"})
    folder = tmp_path / "folder"
    folder.mkdir()
    (folder / "a.json").write_text("{")
    tenant = f"test-members-{uuid.uuid4().hex[:12]}"
    for source, expected in [
        (empty, f"graphmem: error: {empty}: nothing to load: no companyfacts or submissions JSON in it"),
        (junk, f"graphmem: error: {junk}: nothing to load: no companyfacts or submissions JSON in it "
               f"(2 unreadable: {junk}:a.json: not valid JSON; {junk}:b.json: neither companyfacts nor "
               "submissions JSON (no entityName, facts or filings at the top level))"),
        (folder, f"graphmem: error: {folder}: nothing to load: no companyfacts or submissions JSON in it "
                 f"(1 unreadable: {folder}/a.json: not valid JSON)"),
    ]:
        done = _load_edgar(uri, tenant, source)
        assert (done.exit_code, done.stdout, done.stderr.strip()) == (1, "", expected)
    assert mem.counts(Scope(tenant=tenant))["versions"] == 0


def test_a_selection_or_universe_where_no_company_loads_is_an_error_that_writes_nothing(uri, mem, tmp_path):
    """CIKs asked for and all absent: refused before anything is read (load and bootstrap
    alike). Every company failing: `load edgar` exits 1, and `bootstrap edgar` fails inside
    its build, so no importer input is left behind (and no database is replaced)."""
    tenant = f"test-none-{uuid.uuid4().hex[:12]}"
    env = {"GRAPHMEM_NEO4J_URI": uri}
    absent = "nothing to load: no companyfacts file in the inputs for the companies selected (asked for: CIK 5, CIK 6)"
    for command in (["load", "edgar", str(LPA), "--tenant", tenant], ["bootstrap", "edgar", str(LPA), "--csv",
                                                                       str(tmp_path / "csv")]):
        done = CliRunner().invoke(main, [*command, "--cik", "6,5"], env=env)
        assert (done.exit_code, done.stdout, done.stderr.strip()) == (1, "", f"graphmem: error: {LPA}: {absent}")
    folder = tmp_path / "universe"
    folder.mkdir()
    (folder / "companyfacts-CIK0000000002.json").write_text(LPA.read_text()[:4000])  # truncated
    (folder / "companyfacts-CIK0000000003.json").write_text(LPA.read_text()[:9000])
    failed = "2 of 2 companies not loaded: CIK 2 (failed), CIK 3 (failed)"
    for command in (["load", "edgar", str(folder), "--tenant", tenant], ["bootstrap", "edgar", str(folder), "--csv",
                                                                         str(tmp_path / "csv")]):
        done = CliRunner().invoke(main, command, env=env)
        assert (done.exit_code, done.stderr.strip()) == (1, f"graphmem: error: {command[0]} edgar: {failed}")
    assert not (tmp_path / "csv").exists()
    assert mem.counts(Scope(tenant=tenant))["versions"] == 0


def test_a_ciks_file_is_split_at_newlines_only(uri, tmp_path):
    """--ciks-file reads lines as --entities does: a form feed inside a line does not make
    two CIKs of it (it is refused, naming the file); CRLF, blank lines and comments are fine."""
    tenant = f"test-ciks-{uuid.uuid4().hex[:12]}"
    odd = tmp_path / "odd.txt"
    odd.write_bytes(b"1997711\x0c5\n")
    done = CliRunner().invoke(main, ["load", "edgar", str(LPA), "--ciks-file", str(odd)],
                              env={"GRAPHMEM_NEO4J_URI": ""})
    assert (done.exit_code, done.stderr.strip()) == (1, f"graphmem: error: {odd}: not a CIK: '1997711\\x0c5'")
    listed = tmp_path / "ciks.txt"
    listed.write_bytes(b"\xef\xbb\xbf# the universe\r\n0001997711\r\n\r\nCIK0000000005\r\n")
    done = CliRunner().invoke(main, ["load", "edgar", str(LPA), "--ciks-file", str(listed), "--tenant", tenant,
                                     "--json"], env={"GRAPHMEM_NEO4J_URI": uri})
    assert done.exit_code == 5, done.output
    assert [(c["cik"], c["status"]) for c in json.loads(done.stdout)["companies"]] == [(5, "missing"),
                                                                                        (1997711, "loaded")]


def test_quarantine_into_a_missing_folder_names_the_option_before_anything_is_read(tmp_path):
    missing = tmp_path / "no-such-folder" / "rows.jsonl"
    for command in (["load", "edgar", str(LPA)], ["load", "companyfacts", str(LPA)],
                    ["bootstrap", "edgar", str(LPA), "--csv", str(tmp_path / "csv")]):
        done = CliRunner().invoke(main, [*command, "--quarantine", str(missing)], env={"GRAPHMEM_NEO4J_URI": ""})
        assert (done.exit_code, done.stderr.strip()) == (  # a usage error: exit 2
            2, f"graphmem: error: --quarantine: {missing}: no such folder: {missing.parent}"), command
    assert not (tmp_path / "csv").exists()


def test_quarantine_into_a_file_that_cannot_be_written_names_the_option(uri, tmp_path):
    """The folder exists but the file cannot be made there (a name too long for it: what
    a read-only folder does to a user other than root): one line naming the option."""
    unwritable = tmp_path / ("x" * 300)
    for command in (["load", "edgar", str(LPA)], ["load", "companyfacts", str(LPA)],
                    ["bootstrap", "edgar", str(LPA), "--csv", str(tmp_path / "csv")]):
        done = CliRunner().invoke(main, [*command, "--quarantine", str(unwritable), "--tenant", "t"],
                                  env={"GRAPHMEM_NEO4J_URI": uri})
        assert done.exit_code == 2 and done.stderr.startswith("graphmem: error: ") and done.stderr.strip().endswith(
            f"--quarantine: {unwritable}: cannot be written: File name too long"), command
    assert not (tmp_path / "csv").exists()
