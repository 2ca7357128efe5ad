"""The loaders at their edges, against the real Neo4j: a KPI table with a trailing blank
line or a quoted note over two lines, resumed loads and their quarantined rows, a ZIP
with one badly named member, a byte-order mark, a form past the bounds, and reloads
that know no tickers."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest
from graphmem.loaders import edgar, kpi, sec, universe
from graphmem.loaders.quarantine import Quarantined

from graphmem import InputError

FIXTURES = Path(__file__).parent / "fixtures"
KPI = FIXTURES / "kpi-pypl-shop.csv"
LPA = FIXTURES / "companyfacts-CIK0001997711-lpa.json"
CIK = 1234567
FIRST, SECOND = "0001234567-24-000001", "0001234567-24-000002"


def _row(val: int, accn: str, filed: str, end: str = "2023-12-31") -> dict:
    return {"end": end, "val": val, "accn": accn, "form": "10-K", "filed": filed}


def _companyfacts(path: Path, filings: int, long_concept: str) -> Path:
    """A small company: Assets in one or two filings, and in the first filing a concept
    whose name is longer than graphmem's identifiers (out of bounds when built)."""
    assets = [_row(1000, FIRST, "2024-02-01")]
    if filings == 2:
        assets.append(_row(1100, SECOND, "2025-02-01", end="2024-12-31"))
    facts = {"us-gaap": {"Assets": {"units": {"USD": assets}},
                         long_concept: {"units": {"USD": [_row(5, FIRST, "2024-02-01")]}}}}
    path.write_text(json.dumps({"cik": CIK, "entityName": "Probe Inc.", "facts": facts}))
    return path


# ---------------------------------------------------------------- KPI table


def test_a_kpi_table_ending_in_a_blank_line_loads(mem, scope, tmp_path):
    """A CSV saved with an empty last line (an editor's or a spreadsheet's habit) is the
    same table: it loads, and the blank line is not a row."""
    path = tmp_path / "kpi.csv"
    path.write_text(KPI.read_text() + "\n")
    report = kpi.load(mem, scope, path)
    assert report.rows == len(KPI.read_text().splitlines()) - 1
    assert report.versions_created == kpi.load(mem, scope.model_copy(update={"tenant": scope.tenant + "-b"}),
                                               KPI).versions_created


def test_a_kpi_error_names_the_line_after_a_quoted_note_over_two_lines(mem, scope, tmp_path):
    """A note in quotes may hold a line break (CSV allows it): an error in a later row
    names that row's own line in the file, not the row number plus two."""
    lines = KPI.read_text().splitlines(keepends=True)
    assert lines[1].rstrip("\r\n").endswith(",secondary,")
    lines[1] = lines[1].rstrip("\r\n") + '"first line of the note\nsecond line"\n'
    assert ",USD," in lines[3]
    lines[3] = lines[3].replace(",USD,", ",US Dollars,", 1)  # data row 2, on line 5 of the file now
    path = tmp_path / "kpi.csv"
    path.write_text("".join(lines))
    with pytest.raises(InputError) as info:
        kpi.load(mem, scope, path)
    assert "row 2 (line 5," in str(info.value), str(info.value)


# ---------------------------------------------------------------- resumption


def test_a_resumed_load_still_reports_every_out_of_bounds_row(mem, scope, tmp_path):
    """A load killed after its first filing (here: a first load of the file as it was
    then) and run again must report the same quarantined rows as one clean load: the
    filing it skips as recorded still has a row that was kept out."""
    long_concept = "X" * 2100  # past graphmem's 2,048 bytes for an identifier
    clean_scope = scope.model_copy(update={"tenant": scope.tenant + "-clean"})
    clean = sec.load(mem, clean_scope, _companyfacts(tmp_path / "full.json", 2, long_concept))
    assert clean.quarantine == {"out-of-bounds": 1}

    sec.load(mem, scope, _companyfacts(tmp_path / "first.json", 1, long_concept))
    records: list[Quarantined] = []
    resumed = sec.load(mem, scope, tmp_path / "full.json", quarantine=records.append)
    assert resumed.filings_recorded == 1
    assert resumed.quarantine == clean.quarantine
    assert [(r.attribute, r.accession, r.reason) for r in records] == [
        (f"us-gaap:{long_concept}", FIRST, "out-of-bounds")]


# ---------------------------------------------------------------- archives


def test_one_member_name_that_is_not_utf8_does_not_refuse_the_archive(mem, scope, tmp_path):
    """companyfacts.zip with a member whose name is flagged UTF-8 but is not: the other
    companies of the archive still load, and that member is named."""
    path = tmp_path / "companyfacts.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as archive:
        archive.writestr("CIK0001997711.json", LPA.read_bytes())
        archive.writestr("CIK0000000002-\u00e9.json", b"{}")
    data = path.read_bytes()
    assert data.count(b"\xc3\xa9.json") == 2  # the local header and the directory entry
    path.write_bytes(data.replace(b"\xc3\xa9.json", b"\xc3\x28.json"))
    with universe.discover([path]) as found:
        chosen = universe.select(found, ciks=[1997711])
        report = edgar.load(mem, scope, chosen, skipped=found.skipped)
    assert [(c.cik, c.status) for c in report.companies] == [(1997711, "loaded")]
    assert report.companies[0].rows == 768


# ---------------------------------------------------------------- entities


def test_a_reload_without_submissions_keeps_the_tickers(mem, scope, tmp_path):
    """The tickers come from the submissions file. Loading the company's facts again
    without it (an updated companyfacts file, the submissions optional) knows nothing
    new about tickers: the company keeps the ones recorded."""
    facts = _companyfacts(tmp_path / "cf.json", 1, "Liabilities")
    subs = tmp_path / "subs.json"
    subs.write_text(json.dumps({"cik": str(CIK), "name": "Probe Inc.", "tickers": ["PRB"],
                                "filings": {"recent": {"accessionNumber": [FIRST],
                                                       "acceptanceDateTime": ["2024-02-01T21:05:00.000Z"]}}}))
    sec.load(mem, scope, facts, subs)
    assert mem.entity(scope, f"cik:{CIK}").aliases == ("PRB",)
    _companyfacts(tmp_path / "cf2.json", 2, "Liabilities")
    sec.load(mem, scope, tmp_path / "cf2.json")
    assert mem.entity(scope, f"cik:{CIK}").aliases == ("PRB",)


# ---------------------------------------------------------------- encodings


def test_a_companyfacts_file_with_a_byte_order_mark_loads(mem, scope, tmp_path):
    """A file saved by an editor that starts UTF-8 with a byte-order mark (JSON readers
    may ignore it; the submissions reader and the KPI loader do): the same company, in a
    folder too, not "not valid JSON"."""
    folder = tmp_path / "in"
    folder.mkdir()
    path = folder / "lpa.json"  # no CIK in the name: told by its content
    path.write_bytes(b"\xef\xbb\xbf" + LPA.read_bytes())
    report = sec.load(mem, scope, path)
    assert (report.rows, report.sources) == (768, 3)
    with universe.discover([folder]) as found:
        assert (found.with_facts, found.skipped) == ([1997711], [])


def test_a_kpi_table_without_tickers_keeps_the_ones_recorded(mem, scope, tmp_path):
    """A KPI table whose ticker column is empty names no ticker: the tickers the
    company's submissions file gave an earlier load stay."""
    facts = _companyfacts(tmp_path / "cf.json", 1, "Liabilities")
    subs = tmp_path / "subs.json"
    subs.write_text(json.dumps({"cik": str(CIK), "tickers": ["PRB"], "filings": {"recent": {
        "accessionNumber": [FIRST], "acceptanceDateTime": ["2024-02-01T21:05:00.000Z"]}}}))
    sec.load(mem, scope, facts, subs)
    header = KPI.read_text().splitlines()[0]
    row = (f",{CIK},Probe Inc.,Volume,Volume,2023-01-01,2023-12-31,5000,USD,5000,{FIRST},{FIRST},10-K,"
           "2024-02-01,,Probe annual report,filing,")
    path = tmp_path / "kpi.csv"
    path.write_text(f"{header}\n{row}\n")
    kpi.load(mem, scope, path)
    assert mem.entity(scope, f"cik:{CIK}").aliases == ("PRB",)


# ---------------------------------------------------------------- a form past the bounds


def test_a_row_whose_form_is_past_the_bounds_is_quarantined_and_the_rest_loads(mem, scope, tmp_path):
    """A form names the filing's Source kind, an identifier of at most 2,048 bytes. A row
    with a longer one (a corrupt file) cannot be a fact: it is kept out with its reason,
    and the company's other 768 rows load, rather than the company failing with an
    error that names neither the file nor the row."""
    data = json.loads(LPA.read_text())
    rows = data["facts"]["ifrs-full"]["Revenue"]["units"]["USD"]
    rows.append(dict(rows[0], accn="0001997711-99-000001", form="F" * 3000))
    path = tmp_path / "lpa.json"
    path.write_text(json.dumps(data))
    records: list[Quarantined] = []
    report = sec.load(mem, scope, path, quarantine=records.append)
    assert (report.rows, report.sources, report.assertions, report.quarantined) == (769, 3, 768, 1)
    [record] = records
    assert (record.attribute, record.row, record.accession) == ("ifrs-full:Revenue", len(rows) - 1,
                                                                "0001997711-99-000001")
    assert "form" in record.detail


# ---------------------------------------------------------------- the quarantine report of a resumed universe load


def test_a_resumed_universe_load_writes_every_quarantined_row_again(mem, scope, tmp_path):
    """`load edgar DIR --quarantine q.jsonl` killed after its first company, then run
    again with the same options: the file is written anew, so it must list that
    company's kept-out rows too, not only the next company's (the report still counts
    them for the company)."""
    folder = tmp_path / "in"
    folder.mkdir()
    data = json.loads(LPA.read_text())
    data["facts"]["ifrs-full"]["Revenue"]["units"]["USD"][0]["val"] = "n/a"  # one row that cannot be a fact
    (folder / "CIK0001997711.json").write_text(json.dumps(data))
    _companyfacts(folder / f"CIK{CIK:010d}.json", 2, "Liabilities")

    with universe.discover([folder]) as found:  # the killed run: it got through the first company
        first = edgar.load(mem, scope, universe.select(found, ciks=[1997711]), quarantine=lambda r: None)
    assert first.companies[0].quarantine == {"not-a-number": 1}

    records: list[Quarantined] = []  # the run again, into a new quarantine file
    with universe.discover([folder]) as found:
        again = edgar.load(mem, scope, universe.select(found), quarantine=records.append)
    assert [c.cik for c in again.companies] == [CIK, 1997711]
    assert again.companies[1].quarantine == {"not-a-number": 1}
    assert [(r.file, r.reason) for r in records] == [(str(folder / "CIK0001997711.json"), "not-a-number")]
