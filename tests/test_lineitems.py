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


def test_a_line_items_cutoffs_frames_and_entities_may_be_read_once(switched):
    """A panel takes any iterable of cutoffs, frames and entities - a generator too, read
    once. A line item's panel used to read them once per member: the second member found
    the generator spent and the panel was refused as empty ("cutoffs: empty")."""
    mem, scope = switched
    revenue = lineitems.load()["revenue"]
    cutoffs = [t("2018-03-31"), t("2018-06-30"), t("2019-03-31")]
    listed = mem.panel(scope, attribute=revenue, frames=["CY2017Q4", "CY2018Q1"], cutoffs=cutoffs,
                       entities=["cik:7"])
    once = mem.panel(scope, attribute=revenue, frames=iter(["CY2017Q4", "CY2018Q1"]), cutoffs=(c for c in cutoffs),
                     entities=iter(["cik:7"]), known_at=listed.known_at)
    assert [(c.cutoff, c.frame, c.concept, c.value) for c in once.cells] == [
        (c.cutoff, c.frame, c.concept, c.value) for c in listed.cells]
    screen = mem.screen(scope, attribute=revenue, frame="CY2018Q1", cutoff=cutoffs[1], entities=iter(["cik:7"]))
    assert [(a.entity, a.value) for a in screen.answers] == [("cik:7", Decimal("520"))]


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


def test_a_sign_keeps_every_digit_of_a_value(mem, scope):
    """A value of 29 digits (graphmem stores 64 exactly, decimal128 holds 38): a member's
    sign flips it, and a first value is carried, without rounding to Decimal's default
    28 digits (``* -1`` gave ...567.9, and ``* 1`` too)."""
    exact = Decimal("123456789012345678901234567.89")
    mem.put_entity(scope, Entity(id="cik:3", kind="company"))
    for attribute in (CAPEX, RFCC):
        mem.record(scope, sources=[Source(id=f"k-{attribute}", kind="10-K", authority=Authority.PRIMARY,
                                          publisher="cik:3", available_by=t("2018-02-20"))],
                   items=[FactIn(entity="cik:3", attribute=attribute, unit="USD", period=Q4_17, value=exact,
                                 sources=(f"k-{attribute}",))])
    family = lineitems.load()
    for name, want in (("capex", exact.copy_negate()), ("revenue", exact)):
        panel = mem.panel(scope, attribute=family[name], frames=["CY2017Q4"], cutoffs=[t("2018-03-31")],
                          first_reported=True)
        (cell,) = panel.cells
        assert (cell.value, cell.answer.version.value, cell.first_value) == (want, want, want), name
        assert str(panel.to_arrow()["value"][0].as_py()) == f"{want:.10f}", name
        screen = mem.screen(scope, attribute=family[name], frame="CY2017Q4", cutoff=t("2018-03-31"))
        assert screen.answers[0].value == want, name


def test_a_screens_inputs_hold_only_what_was_public_by_its_cutoff(mem, scope):
    """The reported version behind a value, as the screen read it: a filing that repeated
    the value after the cutoff is no part of it (nor a record made after known_at)."""
    mem.put_entity(scope, Entity(id="cik:4", kind="company"))
    for accession, day in (("k-2017", "2018-02-20"), ("q-2018-1", "2018-05-03")):
        mem.record(scope, sources=[Source(id=accession, kind="10-Q", authority=Authority.PRIMARY, publisher="cik:4",
                                          available_by=t(day))],
                   items=[FactIn(entity="cik:4", attribute=CAPEX, unit="USD", period=Q4_17, value=Decimal("40"),
                                 sources=(accession,))])
    then = mem.server_now()
    capex = lineitems.load()["capex"]
    plain = mem.screen(scope, attribute=CAPEX, frame="CY2017Q4", cutoff=t("2018-03-31"), known_at=then)
    mem.invalidate(scope, plain.answers[0].version.version_id, "a wrong figure, found later")
    screen = mem.screen(scope, attribute=capex, frame="CY2017Q4", cutoff=t("2018-03-31"), known_at=then)
    (reported,) = screen.inputs["cik:4"]
    assert [e.source_id for e in reported.sources] == ["k-2017"] == [e.source_id for e in
                                                                     plain.answers[0].version.sources]
    assert (reported.value, reported.lifecycle) == (Decimal("40"), ())
    assert reported == plain.answers[0].version


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
    # equal to -1 and 1, but no integers: a Decimal value times -1.0 fails, times true is no sign
    ({"family": "x", "version": "1", "items": {"a": {"unit": "shares", "period": "instant",
                                                       "concepts": [{"concept": "x:Y", "sign": -1.0}]}}},
     "f.json: items.a.concepts[0]", "sign must be 1 or -1 (an integer), got -1.0"),
    ({"family": "x", "version": "1", "items": {"a": {"unit": "shares", "period": "instant",
                                                       "concepts": [{"concept": "x:Y", "sign": True}]}}},
     "f.json: items.a.concepts[0]", "sign must be 1 or -1 (an integer), got True"),
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


def test_a_bad_sign_in_a_family_file_names_the_file_and_the_item(tmp_path):
    path = tmp_path / "mine.json"
    path.write_text(json.dumps({"family": "mine", "version": "1", "items": {
        "capex": {"unit": "currency", "period": "duration", "concepts": [{"concept": CAPEX, "sign": -1.0}]}}}))
    with pytest.raises(InputError) as info:
        lineitems.load(path)
    assert info.value.where == f"{path}: items.capex.concepts[0]", str(info.value)
    assert info.value.reason == "sign must be 1 or -1 (an integer), got -1.0"


EPS, EPS_IFRS, REV = "us-gaap:EarningsPerShareBasic", "ifrs-full:BasicEarningsLossPerShare", "us-gaap:Revenues"
Q2_24, Q3_24 = Period(start=dt.date(2024, 4, 1), end=dt.date(2024, 6, 30)), Period(start=dt.date(2024, 7, 1),
                                                                                    end=dt.date(2024, 9, 30))


@pytest.fixture(scope="module")
def mistagged(migrated):
    """cik:1 files its EPS for 2024 Q2 per share, then Q3's mis-tagged in USD, and Q3
    revenue under RFCC (invalidated since) and Revenues; cik:2 files its Q3 EPS in USD
    only (its 10-K again, 1.38), and Q3 revenue under Revenues and, in a filing since
    retracted, under RFCC; cik:1 files its Q3-end total assets."""
    scope = Scope(tenant=f"test-lineitems-{uuid.uuid4().hex[:12]}")
    with migrated.connect() as mem:
        def file(cik, accession, accepted, *facts, kind="10-Q"):
            mem.record(scope, sources=[Source(id=accession, kind=kind, authority=Authority.PRIMARY, publisher=cik,
                                              available_by=t(accepted))],
                       items=[FactIn(entity=cik, attribute=a, unit=u, period=p, value=Decimal(v),
                                     sources=(accession,)) for a, u, p, v in facts])

        for cik in ("cik:1", "cik:2"):
            mem.put_entity(scope, Entity(id=cik, kind="company"))
        file("cik:1", "1-q2", "2024-08-01", (EPS, "USD/shares", Q2_24, "1.25"))
        file("cik:1", "1-q3", "2024-11-01", (EPS, "USD", Q3_24, "1.40"), (RFCC, "USD", Q3_24, "50"),
             (REV, "USD", Q3_24, "51"), ("us-gaap:Assets", "USD", Period(end=dt.date(2024, 9, 30)), "1000"))
        file("cik:2", "2-q3", "2024-11-02", (EPS, "USD", Q3_24, "1.40"), (REV, "USD", Q3_24, "61"))
        file("cik:2", "2-8k", "2024-11-03", (RFCC, "USD", Q3_24, "60"), kind="8-K")
        file("cik:2", "2-k", "2025-02-20", (EPS, "USD", Q3_24, "1.38"), kind="10-K")
        typo = mem.as_of(scope, entity="cik:1", attribute=RFCC, period=Q3_24, cutoff=t("2024-12-31"))
        mem.invalidate(scope, typo.version.version_id, "typo")
        mem.retract_source(scope, "2-8k", reason="withdrawn")
        yield mem, scope


def test_a_key_in_a_unit_the_item_refuses_never_decides_its_latest_frame(mistagged):
    mem, scope = mistagged
    eps = lineitems.load()["eps_basic"]
    panel = mem.panel(scope, attribute=eps, latest="quarter", cutoffs=[t("2024-09-30"), t("2024-12-31")])
    got = {(c.entity, c.cutoff.date().isoformat()): (c.frame, c.status, c.value, c.unit, c.skipped)
           for c in panel.cells}
    assert got == {
        ("cik:1", "2024-09-30"): ("CY2024Q2", "active", Decimal("1.25"), "USD/shares", ()),
        # its USD key of Q3 is later, but not per share: Q2's value stands
        ("cik:1", "2024-12-31"): ("CY2024Q2", "active", Decimal("1.25"), "USD/shares", ()),
        ("cik:2", "2024-12-31"): (None, "not_found", None, None, (f"{EPS}: unit USD", f"{EPS_IFRS}: nothing public")),
    }


def test_a_skipped_member_says_what_removed_its_keys(mistagged):
    mem, scope = mistagged
    family = lineitems.load()
    screen = mem.screen(scope, attribute=family["revenue"], frame="CY2024Q3", cutoff=t("2024-12-31"))
    assert {a.entity: a.value for a in screen.answers} == {"cik:1": Decimal("51"), "cik:2": Decimal("61")}
    assert screen.choices == {"cik:1": {"concept": REV, "skipped": [f"{RFCC}: invalidated"]},
                              "cik:2": {"concept": REV, "skipped": [f"{RFCC}: retracted"]}}
    panel = mem.panel(scope, attribute=family["eps_basic"], frames=["CY2024Q3"], cutoffs=[t("2024-12-31")])
    assert {c.entity: (c.status, c.skipped) for c in panel.cells} == {
        e: ("not_found", (f"{EPS}: unit USD", f"{EPS_IFRS}: nothing public")) for e in ("cik:1", "cik:2")}
    early = mem.panel(scope, attribute=family["eps_basic"], frames=["CY2024Q3"], cutoffs=[t("2024-10-31")],
                      entities=["cik:1"])
    assert early.cells[0].skipped == (f"{EPS}: nothing public", f"{EPS_IFRS}: nothing public")  # filed later


def test_an_items_period_decides_the_kind_of_its_frames(mistagged, migrated):
    mem, scope = mistagged
    family = lineitems.load()
    assets, revenue, cutoff = family["total_assets"], family["revenue"], t("2024-12-31")
    refused = [
        (lambda: mem.panel(scope, attribute=assets, frames=["CY2024Q3"], cutoffs=[cutoff]), "frames",
         "total_assets is an instant item and CY2024Q3 a duration frame: ask an instant frame such as CY2024Q3I"),
        (lambda: mem.screen(scope, attribute=assets, frame="CY2024", cutoff=cutoff), "frame",
         "total_assets is an instant item and CY2024 a duration frame: ask an instant frame such as CY2024Q4I"),
        (lambda: mem.panel(scope, attribute=assets, latest="quarter", cutoffs=[cutoff]), "latest",
         "total_assets is an instant item: ask latest='instant', not 'quarter'"),
        (lambda: mem.screen(scope, attribute=revenue, frame="CY2024Q3I", cutoff=cutoff), "frame",
         "revenue is a duration item and CY2024Q3I an instant frame: ask a quarter or a year such as CY2024Q3"),
        (lambda: mem.panel(scope, attribute=revenue, latest="instant", cutoffs=[cutoff]), "latest",
         "revenue is a duration item: ask latest='quarter' or 'year', not 'instant'"),
    ]
    for call, where, reason in refused:
        with pytest.raises(InputError) as info:
            call()
        assert (info.value.where, info.value.reason) == (where, reason)
    (answer,) = mem.screen(scope, attribute=assets, frame="CY2024Q3I", cutoff=cutoff).answers
    assert (answer.entity, answer.value) == ("cik:1", Decimal("1000"))
    (cell,) = mem.panel(scope, attribute=assets, latest="instant", cutoffs=[cutoff]).cells
    assert (cell.frame, cell.value) == ("CY2024Q3I", Decimal("1000"))
    # the command line says it in its own words, an option and its value apart ("--latest'instant'" before)
    for item, latest, said in (("total_assets", "quarter", "ask --latest 'instant', not 'quarter'"),
                               ("revenue", "instant", "ask --latest 'quarter' or 'year', not 'instant'")):
        done = CliRunner().invoke(main, ["panel", "--tenant", scope.tenant, "--item", item, "--latest", latest,
                                         "--cutoffs", "2024-12-31..2024-12-31:quarterly"], env=env(migrated))
        assert (done.exit_code, done.output) == (
            2, f"graphmem: error: --latest: {item} is {'an instant' if item == 'total_assets' else 'a duration'} "
               f"item: {said}\n")


def test_a_cell_no_member_answers_keeps_nothing_of_a_refused_row(mistagged):
    mem, scope = mistagged
    eps = lineitems.load()["eps_basic"]
    panel = mem.panel(scope, attribute=eps, frames=["CY2024Q3"], cutoffs=[t("2025-03-31")], entities=["cik:2"],
                      unit="USD", first_reported=True)
    (cell,) = panel.cells
    assert (cell.status, cell.value, cell.unit, cell.skipped) == (
        "not_found", None, None, (f"{EPS}: unit USD", f"{EPS_IFRS}: nothing public"))
    # the refused USD row was 1.38, first reported 1.40: none of it is the item's
    assert (cell.first_value, cell.first_version_id, cell.restated) == (None, None, None)
    row = panel.to_arrow().to_pylist()[0]
    assert (row["first_value"], row["first_version_id"], row["restated"]) == (None, None, None)


def test_a_line_items_arguments_are_checked_before_the_server_is_asked():
    """No server answers: a bad argument is refused at once, as for a concept, never
    after the retries of a query for the server's time."""
    family = lineitems.load()
    scope, now = Scope(tenant="t"), t("2025-01-01")
    with Memory.connect("bolt://127.0.0.1:9") as offline:
        for kwargs, where in ((dict(frames=["CY2024Q3"], cutoffs=[]), "cutoffs"),
                              (dict(frames=["CY24"], cutoffs=[now]), "frame"),
                              (dict(latest="instant", cutoffs=[now]), "latest")):
            with pytest.raises(InputError) as info:
                offline.panel(scope, attribute=family["revenue"], **kwargs)
            assert info.value.where == where, str(info.value)
        # a line item's screen without a cutoff says what a concept's screen says
        with pytest.raises(InputError) as concept:
            offline.screen(scope, attribute=REV, frame="CY2024Q3", cutoff=None)
        for known_at in (None, now):
            with pytest.raises(InputError) as item:
                offline.screen(scope, attribute=family["revenue"], frame="CY2024Q3", cutoff=None, known_at=known_at)
            assert (item.value.where, item.value.reason) == (concept.value.where, concept.value.reason)


def test_a_filer_in_two_currencies_is_conflicted_and_the_universe_still_reads(migrated):
    """TSMC's real 20-Fs give revenue in TWD and, for the latest year, a USD convenience
    translation. A line-item panel over TSMC and LPA failed whole ("comes in several
    units"); TSMC's cell is now conflicted between its two figures - each what a screen of
    that concept in that unit answers - and LPA's reads as before. A screen of the concept
    itself still asks for a unit (one column of values cannot mix currencies)."""
    from pathlib import Path

    from graphmem.loaders import sec
    fixtures = Path(__file__).parent / "fixtures"
    scope = Scope(tenant=f"test-lineitems-tsmc-{uuid.uuid4().hex[:8]}")
    cutoff = t("2024-12-31")
    with migrated.connect() as mem:
        sec.load(mem, scope, fixtures / "companyfacts-CIK0001046179-tsmc.json",
                 [fixtures / "submissions-CIK0001046179-tsmc.json"])
        sec.load(mem, scope, fixtures / "companyfacts-CIK0001997711-lpa.json")
        panel = mem.panel(scope, attribute=lineitems.load()["revenue"], frames=["CY2021"], cutoffs=[cutoff])
        cells = {c.entity: c for c in panel.cells}
        tsmc, lpa = cells["cik:1046179"], cells["cik:1997711"]
        assert tsmc.status == "conflicted" and tsmc.value is None
        by_unit = {v.unit: v for v in tsmc.answer.candidates}
        assert set(by_unit) == {"TWD", "USD"}
        for unit, version in by_unit.items():
            [row] = mem.screen(scope, attribute="ifrs-full:Revenue", frame="CY2021", cutoff=cutoff, unit=unit,
                               entities=["cik:1046179"]).answers
            assert row.version.version_id == version.version_id
        [alone] = mem.screen(scope, attribute=lpa.concept, frame="CY2021", cutoff=cutoff,
                             entities=["cik:1997711"]).answers
        assert lpa.status == "active" and lpa.value == alone.value
        with pytest.raises(InputError, match="several units"):
            mem.screen(scope, attribute="ifrs-full:Revenue", frame="CY2021", cutoff=cutoff)
