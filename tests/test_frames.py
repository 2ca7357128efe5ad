"""Results as DataFrames (graphmem/research/frames.py): typed columns - exact decimals,
UTC timestamps, filings as lists - from screens, panels, facts_as_of and histories, the
same values back through pandas, polars and Parquet, and the panel command's formats."""

from __future__ import annotations

import datetime as dt
import uuid
from decimal import Decimal

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from procs import env
from world import t

from graphmem import Authority, Entity, FactIn, InputError, Period, Scope, Source
from graphmem.cli import main
from graphmem.research import cli as panel_cli
from graphmem.research import frames, lineitems
from graphmem.screen import Selection

Q3, Q2 = Period(start=dt.date(2024, 7, 1), end=dt.date(2024, 9, 30)), Period(start=dt.date(2024, 4, 1),
                                                                            end=dt.date(2024, 6, 30))
CUTOFFS = [t("2024-08-15"), t("2024-11-15")]


@pytest.fixture(scope="module")
def world(migrated):
    """Two companies: cik:1 files Q2 then Q3 with a fraction of a dollar; cik:2's Q3 is
    disputed by a newswire (conflicted)."""
    scope = Scope(tenant=f"test-frames-{uuid.uuid4().hex[:12]}")
    with migrated.connect() as mem:
        for n in (1, 2):
            mem.put_entity(scope, Entity(id=f"cik:{n}", kind="company"))

        def file(sid, publisher, day, *facts):
            mem.record(scope, sources=[Source(id=sid, kind="10-Q", authority=Authority.PRIMARY,
                                              publisher=publisher, available_by=t(day))],
                       items=[FactIn(entity=e, attribute="us-gaap:Revenues", unit="USD", period=p,
                                     value=Decimal(v), sources=(sid,)) for e, p, v in facts])

        file("a-q2", "cik:1", "2024-07-30", ("cik:1", Q2, "90.25"))
        file("a-q3", "cik:1", "2024-10-30", ("cik:1", Q3, "100.125"))
        file("b-q3", "cik:2", "2024-10-29", ("cik:2", Q3, "400"))
        file("b-wire", "wire:news", "2024-10-29T12:00", ("cik:2", Q3, "401"))
        yield mem, scope


def test_a_panel_as_arrow_pandas_and_polars_keeps_its_types_and_values(world):
    mem, scope = world
    panel = mem.panel(scope, attribute="us-gaap:Revenues", frames=["CY2024Q2", "CY2024Q3"], cutoffs=CUTOFFS,
                      first_reported=True)
    table = panel.to_arrow()
    assert table.num_rows == len(panel.cells) == 6
    types = dict(zip(table.schema.names, table.schema.types, strict=True))
    assert types["value"] == pa.decimal128(38, 10) and types["first_value"] == pa.decimal128(38, 10)
    assert types["cutoff"] == pa.timestamp("us", tz="UTC") == types["available_by"]
    assert types["filings"] == pa.list_(pa.string()) and types["period_end"] == pa.date32()
    assert types["restated"] == pa.bool_()
    values = table.column("value").to_pylist()
    assert values == [c.value for c in panel.cells]  # exact: 100.125, not a float
    assert Decimal("100.125") in values and None in values  # the conflicted cell has none
    assert table.column("cutoff").to_pylist() == [c.cutoff for c in panel.cells]
    assert table.column("available_by").to_pylist() == [c.available_by for c in panel.cells]
    assert table.column("known_at").to_pylist() == [c.answer.known_at for c in panel.cells]

    df = panel.to_pandas()
    assert str(df["cutoff"].dtype) == "datetime64[us, UTC]"
    assert df["value"].tolist() == values
    assert [list(x) for x in df["filings"]] == [list(c.filings) for c in panel.cells]
    assert df.loc[df["entity"].eq("cik:2") & df["status"].eq("conflicted"), "filings"].map(sorted).tolist() == \
        [["b-q3", "b-wire"]]

    pl = panel.to_polars()
    assert str(pl.schema["value"]).startswith("Decimal") and pl.schema["cutoff"].time_zone == "UTC"
    assert pl["value"].to_list() == values

    floats = panel.to_arrow(decimals="float")
    assert floats.schema.field("value").type == pa.float64()
    assert Decimal("100.125") == Decimal(str(max(v for v in floats.column("value").to_pylist() if v)))


def test_screens_histories_and_facts_as_of_convert_too(world, tmp_path):
    mem, scope = world
    screen = mem.screen(scope, attribute="us-gaap:Revenues", frame="CY2024Q3", cutoff=CUTOFFS[1])
    table = screen.to_arrow()
    assert table.column("entity").to_pylist() == ["cik:1", "cik:2"]
    assert table.column("status").to_pylist() == ["active", "conflicted"]
    assert table.column("frame").to_pylist() == ["CY2024Q3"] * 2
    history = mem.history(scope, entity="cik:2", attribute="us-gaap:Revenues")
    versions = history.to_pandas()
    assert sorted(versions["value"].tolist()) == [Decimal("400"), Decimal("401")]
    assert history == list(history)  # still a list
    answers = mem.facts_as_of(scope, attribute="us-gaap:Revenues", cutoff=CUTOFFS[1])
    round_trip = tmp_path / "answers.parquet"
    pq.write_table(answers.to_arrow(), round_trip)
    back = pq.read_table(round_trip)
    assert back.equals(answers.to_arrow())
    assert back.column("value").to_pylist() == [a.value for a in answers]


def test_a_value_that_does_not_fit_the_decimal_column_asks_for_floats():
    with pytest.raises(InputError) as info:
        frames._number(Decimal("1e-11"), "decimal", "cells[0]")
    assert info.value.where == "cells[0]" and "decimals='float'" in info.value.reason
    assert frames._number(Decimal("1e-11"), "float", "x") == 1e-11
    big = Decimal("1e27") + Decimal("0.5")  # 28 digits before the point, one after: fits decimal128(38, 10)
    assert pa.array([frames._number(big, "decimal", "x")], pa.decimal128(38, 10)).to_pylist() == [big]
    with pytest.raises(InputError) as info:  # 29 digits before the point do not
        frames._number(Decimal("1e28"), "decimal", "cells[1]")
    assert info.value.where == "cells[1]" and "decimals='float'" in info.value.reason
    with pytest.raises(InputError):
        frames.to_arrow(["not a result"])


def test_a_table_names_the_row_whose_value_does_not_fit(world):
    """Arrow checks a decimal column whole; the row it refuses is then named."""
    mem, scope = world
    versions = mem.history(scope, entity="cik:1", attribute="us-gaap:Revenues")
    assert frames.to_arrow(versions).column("value").to_pylist() == [v.value for v in versions]
    tiny = [versions[0], versions[1].model_copy(update={"value": Decimal("1e-11")})]
    with pytest.raises(InputError) as info:
        frames.to_arrow(tiny)
    assert info.value.where == "versions[1]" and "decimals='float'" in info.value.reason
    assert frames.to_arrow(tiny, decimals="float").column("value").to_pylist()[1] == 1e-11
    huge = tiny[1].model_copy(update={"value": Decimal("1e28")})
    with pytest.raises(InputError) as info:
        frames.to_arrow([huge])
    assert info.value.where == "versions[0]"
    # 39 digits with 11 after the point: Arrow alone wraps it around 128 bits, unreported
    wraps = tiny[1].model_copy(update={"value": Decimal("4000000000000000000000000000.00000000006")})
    with pytest.raises(InputError) as info:
        frames.to_arrow([versions[0], wraps])
    assert info.value.where == "versions[1]"
    # more digits than the column, but only zeros past its scale: the value fits exactly
    zeros = tiny[1].model_copy(update={"value": Decimal("1." + "0" * 40)})
    assert frames.to_arrow([zeros]).column("value").to_pylist() == [Decimal(1)]


def test_the_panel_command_writes_parquet(world, migrated, tmp_path):
    mem, scope = world
    environ = env(migrated)
    args = ["panel", "--tenant", scope.tenant, "--attribute", "us-gaap:Revenues", "--frames", "CY2024Q2..CY2024Q3",
            "--cutoffs", "2024-07-01..2024-12-31:quarterly"]
    out = tmp_path / "panel.parquet"
    done = CliRunner().invoke(main, [*args, "--format", "parquet", "--out", str(out), "--first-reported"],
                              env=environ)
    assert (done.exit_code, done.output) == (0, f"wrote {out}\n")
    table = pq.read_table(out)
    assert table.schema.field("value").type == pa.decimal128(38, 10)
    # two quarter ends: 2024-09-30 (cik:1's Q2 only) and 2024-12-31 (both, both frames)
    assert table.num_rows == 2 + 4
    assert Decimal("100.125") in table.column("value").to_pylist()
    pairs = zip(table.column("first_value").to_pylist(), table.column("value").to_pylist(), strict=True)
    assert all(first == value for first, value in pairs if value is not None)  # nothing restated
    # as CSV, an empty panel keeps the columns of a full one (a pipeline reading it needs them)
    full, empty = (CliRunner().invoke(main, [*args[:4], attribute, *args[5:], "--format", "csv", "--first-reported"],
                                      env=environ) for attribute in ("us-gaap:Revenues", "us-gaap:NoSuchConcept"))
    assert empty.output.splitlines()[0] == full.output.splitlines()[0] == (
        "cutoff,frame,entity,status,value,unit,period,available_by,filings,version_id,first_value,restated")
    # mistakes: one line naming the option (exit 2), before anything is read or written
    for extra, said in ((["--format", "parquet", "--out", str(tmp_path / "absent" / "p.parquet")],
                         f"--out: {tmp_path / 'absent' / 'p.parquet'}: no such folder: {tmp_path / 'absent'}"),
                        (["--latest", "quarter"],
                         "--frames: give exactly one of --frames (e.g. CY2024Q3) or --latest")):
        done = CliRunner().invoke(main, [*args, *extra], env=environ)
        assert (done.exit_code, done.stderr) == (2, f"graphmem: error: {said}\n"), done.output


def test_cutoff_and_frame_ranges():
    assert [c.date().isoformat() for c in panel_cli.cutoffs("2019-03-31..2019-12-31:quarterly")] == [
        "2019-03-31", "2019-06-30", "2019-09-30", "2019-12-31"]
    assert len(panel_cli.cutoffs("2019-01-01..2024-12-31:quarterly")) == 24
    assert panel_cli.cutoffs("2020-01-15..2020-03-31:monthly")[0].isoformat() == "2020-01-31T23:59:59.999999+00:00"
    assert panel_cli.frames("CY2019Q3..CY2020Q1") == ["CY2019Q3", "CY2019Q4", "CY2020Q1"]
    assert panel_cli.frames("CY2019..CY2020") == ["CY2019", "CY2020"]
    assert panel_cli.frames("CY2019Q4I..CY2020Q1I") == ["CY2019Q4I", "CY2020Q1I"]
    with pytest.raises(InputError):
        panel_cli.frames("CY2019Q4..CY2020")
    with pytest.raises(InputError):
        panel_cli.cutoffs("2019-03-31..2019-12-31:weekly")


def test_a_panel_names_the_first_cell_of_a_shared_value_that_does_not_fit(world):
    """A panel's cells at the cutoffs of one stretch share their version, converted once:
    the error still names the first cell that holds it, not the version's place."""
    mem, scope = world
    panel = mem.panel(scope, attribute="us-gaap:Revenues", frames=["CY2024Q3"],
                      cutoffs=[CUTOFFS[0], t("2024-09-15"), CUTOFFS[1], t("2024-12-15")])
    # cik:2 joins the universe with its first filing; cik:1's two not_found share a part
    assert [(c.entity, c.status) for c in panel.cells] == [("cik:1", "not_found")] * 2 + \
        [("cik:1", "active"), ("cik:2", "conflicted")] * 2
    tiny = panel.cells[2].answer.version.model_copy(update={"value": Decimal("1e-11")})
    cells = [c.model_copy(update={"answer": c.answer.model_copy(update={"version": tiny})})
             if c.status == "active" else c for c in panel.cells]
    with pytest.raises(InputError) as info:
        frames.to_arrow(panel.model_copy(update={"cells": cells}))
    assert info.value.where == "cells[2]"
    floats = frames.to_arrow(panel.model_copy(update={"cells": cells}), decimals="float")
    assert floats.column("value").to_pylist() == [None, None, 1e-11, None, 1e-11, None]
    assert floats.column("filings").to_pylist()[2:4] == [["a-q3"], ["b-q3", "b-wire"]]


def test_a_line_items_panel_keeps_its_concept_and_skipped_columns(world, tmp_path):
    """What its CSV and table show: the concept chosen and the members skipped, here
    as a string and a list of strings (a concept's panel has neither)."""
    mem, scope = world
    revenue = lineitems.load()["revenue"]
    panel = mem.panel(scope, attribute=revenue, frames=["CY2024Q3"], cutoffs=CUTOFFS)
    rfcc = "us-gaap:RevenueFromContractWithCustomerExcludingAssessedTax"
    table = panel.to_arrow()
    assert table.schema.field("concept").type == pa.string()
    assert table.schema.field("skipped").type == pa.list_(pa.string())
    assert table.column("concept").to_pylist() == [c.concept for c in panel.cells] == \
        [None, "us-gaap:Revenues", "us-gaap:Revenues"]  # cik:1 at 2024-08-15: nothing public yet
    assert table.column("skipped").to_pylist() == [list(c.skipped) for c in panel.cells]
    assert table.column("skipped").to_pylist()[1] == [f"{rfcc}: nothing public"]
    df = panel.to_pandas()
    assert df["concept"].isna().tolist() == [True, False, False] and df["concept"].iloc[2] == "us-gaap:Revenues"
    assert [list(x) for x in df["skipped"]] == [list(c.skipped) for c in panel.cells]
    pl = panel.to_polars()
    assert str(pl.schema["concept"]) == "String" and str(pl.schema["skipped"]) == "List(String)"
    path = tmp_path / "item.parquet"
    frames.write_parquet(panel, path)
    assert pq.read_table(path).equals(table)
    concept = mem.panel(scope, attribute="us-gaap:Revenues", frames=["CY2024Q3"], cutoffs=CUTOFFS).to_arrow()
    assert "concept" not in concept.column_names and "skipped" not in concept.column_names


def test_a_bad_range_is_refused_naming_its_option():
    with pytest.raises(InputError) as single:
        Selection.frame("CY2019I")
    with pytest.raises(InputError) as info:  # an instant names a quarter: not silently every year
        panel_cli.frames("CY2019I..CY2020I")
    assert (info.value.where, info.value.reason) == ("--frames", single.value.reason)
    with pytest.raises(InputError) as info:
        panel_cli.frames("CY2024Q4..CY2019Q1", "frames")
    assert (info.value.where, info.value.reason) == ("frames", "'CY2024Q4..CY2019Q1': FROM CY2024Q4 is after "
                                                               "TO CY2019Q1")
    with pytest.raises(InputError) as info:
        panel_cli.frames("CY2024..CY2019")
    assert "FROM CY2024 is after TO CY2019" in info.value.reason
    with pytest.raises(InputError) as info:  # a range that holds no cutoff says so, not "empty"
        panel_cli.cutoffs("2024-01-05..2024-01-20:monthly")
    assert (info.value.where, info.value.reason) == (
        "--cutoffs", "'2024-01-05..2024-01-20:monthly': no monthly month end from 2024-01-05 to 2024-01-20 "
                     "(a step's cutoffs are the last days of its months: every month)")
    with pytest.raises(InputError, match="no quarterly month end from 2024-04-01 to 2024-06-29 .*June"):
        panel_cli.cutoffs("2024-04-01..2024-06-29:quarterly")
    assert len(panel_cli.cutoffs("2024-04-01..2024-06-30:quarterly")) == 1
    with pytest.raises(InputError) as info:
        panel_cli.cutoffs("2024-12-31..2019-03-31:quarterly")
    assert (info.value.where, info.value.reason) == ("--cutoffs", "'2024-12-31..2019-03-31:quarterly': FROM "
                                                                  "2024-12-31 is after TO 2019-03-31")
    with pytest.raises(InputError) as info:
        panel_cli.cutoffs("2019-02-30..2024-12-31:quarterly", "cutoffs", files=False)
    assert (info.value.where, info.value.reason) == ("cutoffs", "'2019-02-30' is not a date: day is out of "
                                                               "range for month")
    # the last month end there is: no day after 9999-12-31 is made
    years = panel_cli.cutoffs("2024-01-01..9999-12-31:yearly", "cutoffs", files=False)
    assert len(years) == 7976 and years[-1].isoformat() == "9999-12-31T23:59:59.999999+00:00"
    assert [c.date().isoformat() for c in panel_cli.cutoffs("9999-10-15..9999-12-31:monthly")] == [
        "9999-10-31", "9999-11-30", "9999-12-31"]


# ---------------------------------------------------------------- a zero negated, a text first reported


Q1_24 = Period(start=dt.date(2024, 1, 1), end=dt.date(2024, 3, 31))
JUNE = t("2024-06-01")


def _file_cik5(mem, scope, sid, day, attribute, value, unit="USD"):
    mem.record(scope, sources=[Source(id=sid, kind="10-Q", authority=Authority.PRIMARY, publisher="cik:5",
                                      available_by=t(day))],
               items=[FactIn(entity="cik:5", attribute=attribute, unit=unit, period=Q1_24, value=value,
                             sources=(sid,))])


def test_a_negated_zero_reads_zero_as_as_of_of_its_recorded_item_does(mem, scope):
    """A capex of 0 (a member with sign -1) is 0 in the panel, its CSV and the screen -
    not '-0' - as the recorded line item's as_of says."""
    mem.put_entity(scope, Entity(id="cik:5", kind="company"))
    _file_cik5(mem, scope, "a", "2024-04-20", "us-gaap:PaymentsToAcquirePropertyPlantAndEquipment", Decimal("0"))
    capex = lineitems.load()["capex"]
    panel = mem.panel(scope, attribute=capex, frames=["CY2024Q1"], cutoffs=[JUNE], first_reported=True)
    (cell,) = panel.cells
    row = panel_cli.rows(panel)[0]
    assert (row["value"], row["first_value"]) == ("0", "0")
    assert str(cell.value) == str(cell.answer.version.value) == "0"
    screen = mem.screen(scope, attribute=capex, frame="CY2024Q1", cutoff=JUNE)
    assert str(screen.answers[0].value) == "0"
    lineitems.record(mem, scope, capex, panel)
    recorded = mem.as_of(scope, entity="cik:5", attribute=capex.attribute, period=Q1_24, cutoff=JUNE)
    assert str(recorded.value) == str(cell.value)


def test_a_text_value_as_first_reported_survives_the_dataframe(mem, scope):
    """A text attribute restated (auditor KPMG, then EY): the table keeps the first
    value, as its value column keeps the value (value_text), not a null beside restated."""
    mem.put_entity(scope, Entity(id="cik:5", kind="company"))
    _file_cik5(mem, scope, "a", "2024-04-20", "dei:AuditorName", "KPMG", unit="")
    _file_cik5(mem, scope, "b", "2024-05-20", "dei:AuditorName", "EY", unit="")
    panel = mem.panel(scope, attribute="dei:AuditorName", frames=["CY2024Q1"], cutoffs=[JUNE],
                      first_reported=True)
    (cell,) = panel.cells
    assert (cell.value, cell.first_value, cell.restated) == ("EY", "KPMG", True)
    table = panel.to_arrow()
    assert table.column("value_text").to_pylist() == ["EY"]
    assert table.column("first_value_text").to_pylist() == ["KPMG"]
    assert table.column("restated").to_pylist() == [True]
    assert panel.to_pandas()["first_value_text"].tolist() == ["KPMG"]
    assert panel.to_polars()["first_value_text"].to_list() == ["KPMG"]
