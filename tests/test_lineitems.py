"""Line-item families (graphmem/research/lineitems.py): the choice of concept per cell
from what was public by its cutoff, sign and unit rules, a user's own family file, and
the derivation each standardized value is recorded as (withdrawn with its filing).

The concept switch: a company reports revenue as SalesRevenueNet until 2018, then as
RevenueFromContractWithCustomerExcludingAssessedTax - and its 2018 10-K restates 2017's
fourth quarter under the new concept. No fixture file holds SalesRevenueNet (Tesla's real
Revenues -> RevenueFromContract... switch is in test_panel.py), so it is written here in
the real key shape."""

from __future__ import annotations

import datetime as dt
import json
import uuid
from decimal import Decimal

import pytest
from click.testing import CliRunner
from procs import env
from world import t

from graphmem import Authority, Entity, FactIn, InputError, Memory, Period, Scope, Source
from graphmem.cli import main
from graphmem.research import lineitems

SRN, RFCC = "us-gaap:SalesRevenueNet", "us-gaap:RevenueFromContractWithCustomerExcludingAssessedTax"
Q4_17, Q1_18 = Period(start=dt.date(2017, 10, 1), end=dt.date(2017, 12, 31)), Period(start=dt.date(2018, 1, 1),
                                                                                    end=dt.date(2018, 3, 31))
CAPEX = "us-gaap:PaymentsToAcquirePropertyPlantAndEquipment"


@pytest.fixture(scope="module")
def switched(migrated):
    scope = Scope(tenant=f"test-lineitems-{uuid.uuid4().hex[:12]}")
    with migrated.connect() as mem:
        mem.put_entity(scope, Entity(id="cik:7", kind="company"))

        def file(accession, accepted, *facts):
            mem.record(scope, sources=[Source(id=accession, kind="10-Q", authority=Authority.PRIMARY,
                                              publisher="cik:7", available_by=t(accepted))],
                       items=[FactIn(entity="cik:7", attribute=a, unit=u, period=p, value=Decimal(v),
                                     sources=(accession,)) for a, u, p, v in facts])

        file("k-2017", "2018-02-20", (SRN, "USD", Q4_17, "500"), (CAPEX, "USD", Q4_17, "40"))
        file("q-2018-1", "2018-05-03", (RFCC, "USD", Q1_18, "520"), (SRN, "EUR", Q1_18, "430"))
        file("k-2018", "2019-02-20", (RFCC, "USD", Q4_17, "505"))  # 2017 Q4 restated under the new concept
        yield mem, scope


def test_each_cell_takes_the_first_concept_public_by_its_cutoff(switched):
    mem, scope = switched
    revenue = lineitems.load()["revenue"]
    cutoffs = [t("2018-03-31"), t("2018-06-30"), t("2019-03-31")]
    panel = mem.panel(scope, attribute=revenue, frames=["CY2017Q4", "CY2018Q1"], cutoffs=cutoffs)
    got = {(c.cutoff.date().isoformat(), c.frame): (c.status, c.concept, c.value) for c in panel.cells}
    assert got == {
        ("2018-03-31", "CY2017Q4"): ("active", SRN, Decimal("500")),
        ("2018-03-31", "CY2018Q1"): ("not_found", None, None),
        ("2018-06-30", "CY2017Q4"): ("active", SRN, Decimal("500")),  # the new concept is not public for it yet
        ("2018-06-30", "CY2018Q1"): ("active", RFCC, Decimal("520")),
        ("2019-03-31", "CY2017Q4"): ("active", RFCC, Decimal("505")),  # restated under it by the 2018 10-K
        ("2019-03-31", "CY2018Q1"): ("active", RFCC, Decimal("520")),
    }
    early = panel.cell("cik:7", cutoffs[0], "CY2017Q4")
    assert early.skipped == (f"{RFCC}: nothing public", "us-gaap:Revenues: nothing public")
    assert early.filings == ("k-2017",)
    # the EUR figure under SalesRevenueNet is never a candidate beside RFCC's USD one: RFCC comes first
    assert panel.cell("cik:7", cutoffs[1], "CY2018Q1").skipped == ()


def test_a_read_writes_nothing_and_record_derives_once_for_lineage(switched):
    mem, scope = switched
    capex = lineitems.load()["capex"]
    before = mem.counts(scope)
    screen = mem.screen(scope, attribute=capex, frame="CY2017Q4", cutoff=t("2018-06-30"))
    panel = mem.panel(scope, attribute=capex, frames=["CY2017Q4"], cutoffs=[t("2018-06-30"), t("2018-07-31")])
    assert mem.counts(scope) == before  # a screen or panel is a read
    (answer,) = screen.answers
    assert answer.value == Decimal("-40")  # a payment of 40, a cash outflow
    assert answer.version.version_id == screen.inputs["cik:7"][0].version_id  # the reported version, signed
    assert screen.inputs["cik:7"][0].value == Decimal("40")
    assert screen.choices["cik:7"]["concept"] == CAPEX
    derived = lineitems.record(mem, scope, capex, screen)[answer.version.version_id]
    assert (derived.attribute, derived.value) == ("item:graphmem-standard:capex", Decimal("-40"))
    again = lineitems.record(mem, scope, capex, panel)  # both cutoffs: one reported version, recorded once
    assert list(again.values()) == [derived]
    assert mem.counts(scope)["derivations"] == before["derivations"] + 1
    report = mem.impact(scope, source_id="k-2017")
    assert derived.version_id in {i.id for i in report.items if i.reason == "invalid"}


def test_a_past_known_at_reads_as_of_then_despite_a_later_invalidation(migrated):
    scope = Scope(tenant=f"test-lineitems-{uuid.uuid4().hex[:12]}")
    with migrated.connect() as mem:
        for cik, unit, value in (("cik:1", "USD", "100"), ("cik:2", "EUR", "80")):
            mem.put_entity(scope, Entity(id=cik, kind="company"))
            mem.record(scope, sources=[Source(id=f"q-{cik}", kind="10-Q", authority=Authority.PRIMARY,
                                              publisher=cik, available_by=t("2018-05-03"))],
                       items=[FactIn(entity=cik, attribute=RFCC, unit=unit, period=Q1_18, value=Decimal(value),
                                     sources=(f"q-{cik}",))])
        then = mem.server_now()
        usd = mem.as_of(scope, entity="cik:1", attribute=RFCC, period=Q1_18, cutoff=t("2018-06-30"))
        mem.invalidate(scope, usd.version.version_id, "typo")
        revenue = lineitems.load()["revenue"]
        past = mem.panel(scope, attribute=revenue, frames=["CY2018Q1"], cutoffs=[t("2018-06-30")], known_at=then)
        assert past.known_at == then
        # one filer in EUR beside one in USD: each in its own currency, no one-unit refusal
        assert {c.entity: (c.status, c.value, c.unit) for c in past.cells} == {
            "cik:1": ("active", Decimal("100"), "USD"), "cik:2": ("active", Decimal("80"), "EUR")}
        cell = past.cell("cik:1", t("2018-06-30"), "CY2018Q1")
        assert cell.answer.version == mem.as_of(scope, entity="cik:1", attribute=RFCC, period=Q1_18,
                                                cutoff=t("2018-06-30"), known_at=then).version
        now = mem.panel(scope, attribute=revenue, frames=["CY2018Q1"], cutoffs=[t("2018-06-30")])
        gone = now.cell("cik:1", t("2018-06-30"), "CY2018Q1")
        assert gone.status == "not_found" and gone.answer.explain.invalidated == 1
        with pytest.raises(InputError):  # the invalidated version is no input any more
            lineitems.record(mem, scope, revenue, past)


def test_a_users_family_file_with_a_unit_rule(switched, tmp_path):
    mem, scope = switched
    path = tmp_path / "mine.json"
    path.write_text(json.dumps({"family": "mine", "version": "2", "items": {
        "sales": {"unit": "currency", "period": "duration", "concepts": [SRN]},
        "sales_per_share": {"unit": "per_share", "period": "duration", "concepts": [SRN]}}}))
    family = lineitems.load(path)
    panel = mem.panel(scope, attribute=family["sales"], latest="quarter", cutoffs=[t("2018-06-30")],
                      unit="EUR")
    (cell,) = panel.cells
    assert (cell.frame, cell.value, cell.unit, cell.concept) == ("CY2018Q1", Decimal("430"), "EUR", SRN)
    derived = lineitems.record(mem, scope, family["sales"], panel)[cell.version_id]
    assert derived.sources[0].title == "lineitem 2" and derived.attribute == "item:mine:sales"
    (wrong,) = mem.panel(scope, attribute=family["sales_per_share"], latest="quarter",
                         cutoffs=[t("2018-06-30")], unit="EUR").cells
    assert (wrong.status, wrong.skipped) == ("not_found", (f"{SRN}: unit EUR",))


@pytest.mark.parametrize(("data", "where", "reason"), [
    ({"items": {}}, "f.json", "a family is"),
    ({"family": "x", "items": {"a": {"unit": "currency", "period": "duration", "concepts": ["x:Y"]}}},
     "f.json", "a \"version\""),
    ({"family": "x", "version": "1", "items": {"a": {"unit": "euros", "period": "duration", "concepts": ["x:Y"]}}},
     "f.json: items.a", "an item needs unit"),
    ({"family": "x", "version": "1", "items": {"a": {"unit": "shares", "period": "instant", "concepts": []}}},
     "f.json: items.a", "non-empty list"),
    ({"family": "x", "version": "1", "items": {"a": {"unit": "shares", "period": "instant",
                                                       "concepts": [{"concept": "x:Y", "sign": 2}]}}},
     "f.json: items.a.concepts[0]", "sign must be 1 or -1"),
    ({"family": "x", "version": "1", "items": {"a": {"unit": "shares", "period": "instant", "concepts": ["Y"]}}},
     "f.json: items.a.concepts[0]", "taxonomy:Concept"),
])
def test_a_bad_family_is_refused_naming_where(data, where, reason):
    with pytest.raises(InputError) as info:
        lineitems.parse(data, "f.json")
    assert info.value.where == where and reason in info.value.reason, str(info.value)


def test_the_built_in_family_and_bad_uses():
    family = lineitems.load()
    assert len(family.items) >= 20 and family["eps_diluted"].unit == "per_share"
    assert family["capex"].members[0].sign == -1
    with pytest.raises(InputError, match="not an item"):
        family["ebitda"]
    with Memory.connect("bolt://127.0.0.1:9") as offline, pytest.raises(InputError) as info:
        offline.screen(Scope(tenant="t"), attribute=family["revenue"], frame="CY2024Q3",
                       cutoff=t("2025-01-01"), definition="ltm")
    assert info.value.where == "definition"


def test_the_panel_command_takes_a_line_item(switched, migrated, tmp_path):
    mem, scope = switched
    cutoffs = tmp_path / "cutoffs.txt"
    cutoffs.write_text("# two cutoffs\n2018-03-31\n2019-03-31\n")
    derivations = mem.counts(scope)["derivations"]
    done = CliRunner().invoke(main, ["panel", "--tenant", scope.tenant, "--item", "revenue", "--frames", "CY2017Q4",
                                     "--cutoffs", str(cutoffs), "--format", "csv", "--record"], env=env(migrated))
    assert done.exit_code == 0, done.output
    rows = [line.split(",") for line in done.output.splitlines()]
    assert rows[0][-2:] == ["concept", "skipped"]
    assert [(r[4], r[-2]) for r in rows[1:]] == [("500", SRN), ("505", RFCC)]
    assert mem.counts(scope)["derivations"] == derivations + 2  # --record: one per reported version
