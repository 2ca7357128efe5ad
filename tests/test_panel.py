"""Point-in-time panels (graphmem/research/panel.py) on real SEC filings: every cell is
the screen's row for its frame and cutoff, a latest-quarter panel is the screen of each
entity's latest frame, and Tesla's real 2015-assets restatement shows as first reported
against restated. Loaded once: Tesla's and LPA's company facts, three concepts of
Marvell's (a fiscal quarter a month off the calendar)."""

from __future__ import annotations

import datetime as dt
import json
import uuid
from decimal import Decimal
from pathlib import Path

import pytest
from graphmem.loaders import sec
from world import t

from graphmem import Authority, Entity, FactIn, InputError, Memory, Period, Scope, Source
from graphmem.research import lineitems

FIXTURES = Path(__file__).parent / "fixtures"
TESLA, LPA, MARVELL = "cik:1318605", "cik:1997711", "cik:1835632"
CONCEPTS = ("Assets", "OperatingIncomeLoss", "Revenues", "RevenueFromContractWithCustomerExcludingAssessedTax")
QUARTER_ENDS = [dt.datetime.combine(d, dt.time.max, dt.UTC) for d in
                (dt.date(y, m, {3: 31, 6: 30, 9: 30, 12: 31}[m]) for y in range(2015, 2025) for m in (3, 6, 9, 12))]


def part(name: str, folder: Path) -> Path:
    """A company-facts file cut to the concepts these tests read (the whole of Tesla's
    takes minutes to load on a busy machine)."""
    data = json.loads((FIXTURES / name).read_text())
    data["facts"] = {taxonomy: {c: body for c, body in concepts.items() if c in CONCEPTS}
                     for taxonomy, concepts in data["facts"].items()}
    (folder / name).write_text(json.dumps(data))
    return folder / name


@pytest.fixture(scope="module")
def real(migrated, tmp_path_factory):
    """Tesla's and Marvell's filings (four concepts) and LPA's (IFRS), in one tenant."""
    folder = tmp_path_factory.mktemp("companyfacts")
    scope = Scope(tenant=f"test-panel-{uuid.uuid4().hex[:12]}")
    with migrated.connect() as mem:
        sec.load(mem, scope, part("companyfacts-CIK0001318605-tesla.json", folder),
                 FIXTURES / "submissions-CIK0001318605-tesla.json")
        sec.load(mem, scope, part("companyfacts-CIK0001997711-lpa.json", folder))
        sec.load(mem, scope, part("companyfacts-CIK0001835632-marvell.json", folder),
                 FIXTURES / "submissions-CIK0001835632-marvell.json")
        yield mem, scope, mem.server_now()


def _row(answer) -> tuple:
    shown = [answer.version] if answer.version else list(answer.candidates)
    return (answer.entity, answer.status, tuple(v.version_id for v in shown), answer.explain)


def assert_cells_are_screens(mem: Memory, scope: Scope, panel, known_at, **kwargs) -> int:
    """Each cell with a frame equals the screen's row for its frame and cutoff (same
    version, same explain; a panel of frames: the same entities too); returns how many
    cells were compared."""
    compared = 0
    asked = {(c.cutoff, c.frame) for c in panel.cells if c.frame}
    for cutoff, frame in sorted(asked):
        screen = mem.screen(scope, attribute=panel.attribute, frame=frame, cutoff=cutoff, known_at=known_at,
                            **kwargs)
        want = {a.entity: _row(a) for a in screen.answers}
        cells = {c.entity: c for c in panel.cells if c.cutoff == cutoff and c.frame == frame}
        if panel.latest is None:
            assert set(cells) == set(want), (frame, cutoff)
        for entity, cell in cells.items():
            assert _row(cell.answer) == want[entity], (entity, frame, cutoff)
            assert cell.answer.cutoff == cutoff
            compared += 1
    return compared


def test_a_panel_of_frames_is_the_screens_cell_by_cell(real):
    mem, scope, known_at = real
    frames = ["CY2020Q1", "CY2021Q3"]
    cutoffs = QUARTER_ENDS[21:36:3]
    panel = mem.panel(scope, attribute="us-gaap:OperatingIncomeLoss", frames=frames, cutoffs=cutoffs,
                      known_at=known_at)
    assert panel.frames == tuple(frames) and panel.universe == "attribute"
    assert len(panel.cells) == assert_cells_are_screens(mem, scope, panel, known_at) > 10
    marvell = panel.cell(MARVELL, QUARTER_ENDS[27], "CY2021Q3")  # 2021-12-31
    assert (marvell.status, marvell.value, marvell.filings) == (
        "active", Decimal("-33341000"), ("0001835632-21-000032",))


def test_a_latest_panel_is_the_screen_of_each_entitys_latest_frame(real):
    mem, scope, known_at = real
    cutoffs = QUARTER_ENDS[18:28:2]
    given = [TESLA, MARVELL, LPA, "cik:404"]
    panel = mem.panel(scope, attribute="us-gaap:Assets", latest="instant", cutoffs=cutoffs, known_at=known_at,
                      entities=given)
    assert panel.unknown == ("cik:404",) and panel.latest == "instant"
    assert assert_cells_are_screens(mem, scope, panel, known_at, entities=given) == 5 + 1
    tesla = [c for c in panel.cells if c.entity == TESLA]
    assert [c.frame for c in tesla] == ["CY2019Q2I", "CY2019Q4I", "CY2020Q2I", "CY2020Q4I", "CY2021Q2I"]
    marvell = [c for c in panel.cells if c.entity == MARVELL]  # its first 10-Q: 2021-06-09
    assert [(c.status, c.frame) for c in marvell] == [("not_found", None)] * 4 + [("active", "CY2021Q2I")]
    for cell in tesla[:2]:  # the same as as_of for that key
        answer = mem.as_of(scope, entity=TESLA, attribute="us-gaap:Assets", period=cell.period,
                           cutoff=cell.cutoff, known_at=known_at)
        assert answer.version.version_id == cell.version_id
    assert {c.status for c in panel.cells if c.entity in (LPA, "cik:404")} == {"not_found"}
    ifrs = mem.panel(scope, attribute="ifrs-full:Assets", latest="instant", known_at=known_at,
                     cutoffs=[t("2024-06-30"), t("2025-06-30")])  # LPA, in IFRS
    assert assert_cells_are_screens(mem, scope, ifrs, known_at) == len(ifrs.cells) >= 1
    assert {c.entity for c in ifrs.cells} == {LPA}


def test_first_reported_against_restated_on_teslas_2015_assets(real):
    mem, scope, known_at = real
    cutoffs = [t("2016-03-01"), t("2016-05-11"), t("2017-06-01")]
    panel = mem.panel(scope, attribute="us-gaap:Assets", frames=["CY2015Q4I"], cutoffs=cutoffs,
                      known_at=known_at, entities=[TESLA], first_reported=True)
    first, restated, later = panel.cells
    assert (first.value, first.first_value, first.restated) == (Decimal("8092460000"), Decimal("8092460000"), False)
    assert first.filings == ("0001564590-16-013195",)  # the 10-K filed 2016-02-24
    assert (restated.value, restated.first_value, restated.restated) == (
        Decimal("8067939000"), Decimal("8092460000"), True)
    assert restated.filings == ("0001564590-16-018886",)
    assert restated.first_version_id == first.version_id != restated.version_id
    assert later.restated is True and later.cutoff == cutoffs[2]
    plain = mem.panel(scope, attribute="us-gaap:Assets", frames=["CY2015Q4I"], cutoffs=cutoffs,
                      known_at=known_at, entities=[TESLA])
    assert [c.first_value for c in plain.cells] == [None] * 3 and plain.cells[1].value == restated.value


def test_first_reported_is_the_first_filing_known_at_known_at_that_still_counts(mem, scope):
    """Filed 100 (Apr 20), then 101 (May 1); at known_at, a filing of 99 dated Apr 10 was
    not recorded yet - and it is invalidated since: either way the first report is 100."""
    q1 = Period(start=dt.date(2024, 1, 1), end=dt.date(2024, 3, 31))
    mem.put_entity(scope, Entity(id="cik:9", kind="company"))

    def file(accession, day, value):
        mem.record(scope, sources=[Source(id=accession, kind="10-Q", authority=Authority.PRIMARY,
                                          publisher="cik:9", available_by=t(day))],
                   items=[FactIn(entity="cik:9", attribute="us-gaap:Revenues", unit="USD", period=q1,
                                 value=Decimal(value), sources=(accession,))])

    file("a", "2024-04-20", "100")
    file("b", "2024-05-01", "101")
    then = mem.server_now()
    file("c", "2024-04-10", "99")
    late = mem.as_of(scope, entity="cik:9", attribute="us-gaap:Revenues", period=q1, cutoff=t("2024-04-15"))
    mem.invalidate(scope, late.version.version_id, "wrong figure")
    for known_at in (then, None):
        panel = mem.panel(scope, attribute="us-gaap:Revenues", frames=["CY2024Q1"], cutoffs=[t("2024-06-30")],
                          known_at=known_at, first_reported=True)
        (cell,) = panel.cells
        assert (cell.value, cell.first_value, cell.restated) == (Decimal("101"), Decimal("100"), True), known_at


def test_a_latest_panel_passes_over_a_period_no_frame_can_name(mem, scope):
    """A filing's typo (0202 for 2024) or a far date (9999-12-31) is a period no frame
    can name (years 1000 to 9998): it is no entity's latest frame, and never fails the
    panel with an error about a frame nobody asked for."""
    mem.put_entity(scope, Entity(id="cik:8", kind="company"))
    q1, typo = Period(start=dt.date(2024, 1, 1), end=dt.date(2024, 3, 31)), Period(start=dt.date(202, 1, 1),
                                                                                   end=dt.date(202, 3, 31))
    mem.record(scope, sources=[Source(id="a", kind="10-Q", authority=Authority.PRIMARY, publisher="cik:8",
                                      available_by=t("2024-05-01"))],
               items=[FactIn(entity="cik:8", attribute=a, unit="USD", period=p, value=Decimal(v), sources=("a",))
                      for a, p, v in (("us-gaap:Revenues", q1, "10"), ("us-gaap:Revenues", typo, "11"),
                                      ("us-gaap:Assets", Period(end=dt.date(2024, 3, 31)), "20"),
                                      ("us-gaap:Assets", Period(end=dt.date(9999, 12, 31)), "21"))])
    for attribute, latest, frame, value in (("us-gaap:Revenues", "quarter", "CY2024Q1", "10"),
                                            ("us-gaap:Assets", "instant", "CY2024Q1I", "20")):
        (cell,) = mem.panel(scope, attribute=attribute, latest=latest, cutoffs=[t("2024-06-30")]).cells
        assert (cell.frame, cell.value) == (frame, Decimal(value)), attribute


def test_a_panels_cell_is_looked_up_as_a_panel_takes_its_times(mem, scope):
    """``Panel.cell`` takes a cutoff as ``panel`` does: an aware time in any zone finds the
    cell of that instant, and a naive one is refused by name - it used to find nothing
    and answer None, as if the entity had no cell there. Its frame is read as a frame
    is (``cy2024q1 `` is CY2024Q1)."""
    mem.put_entity(scope, Entity(id="cik:6", kind="company"))
    q1 = Period(start=dt.date(2024, 1, 1), end=dt.date(2024, 3, 31))
    mem.record(scope, sources=[Source(id="a", kind="10-Q", authority=Authority.PRIMARY, publisher="cik:6",
                                      available_by=t("2024-05-01"))],
               items=[FactIn(entity="cik:6", attribute="us-gaap:Revenues", unit="USD", period=q1,
                             value=Decimal("10"), sources=("a",))])
    panel = mem.panel(scope, attribute="us-gaap:Revenues", frames=["CY2024Q1"], cutoffs=[t("2024-06-30")])
    new_york = dt.datetime(2024, 6, 29, 20, tzinfo=dt.timezone(dt.timedelta(hours=-4)))  # 2024-06-30 00:00 UTC
    assert panel.cell("cik:6", new_york, "cy2024q1 ").value == Decimal("10")
    with pytest.raises(InputError) as info:
        panel.cell("cik:6", dt.datetime(2024, 6, 30), "CY2024Q1")
    assert info.value.where == "cutoff" and "naive" in info.value.reason


@pytest.mark.parametrize(("kwargs", "where", "reason"), [
    ({"frames": ["CY2024Q3"], "latest": "quarter"}, "frames", "exactly one of frames="),
    ({}, "frames", "exactly one of frames="),
    ({"latest": "month"}, "latest", "must be one of quarter, year, instant"),
    ({"frames": "CY2024Q3"}, "frames", "a single string is not one"),
    ({"frames": ["CY2024Q5"]}, "frame", "not a calendar frame"),
    ({"frames": ["CY2024Q3"], "cutoffs": []}, "cutoffs", "empty"),
    ({"frames": ["CY2024Q3"], "cutoffs": [dt.datetime(2025, 1, 1)]}, "cutoffs[0]", "naive datetime refused"),
    ({"frames": ["CY2024Q3"], "cutoffs": [t("2025-01-01")] * 2 + ["2025"]}, "cutoffs[2]", "a datetime is required"),
    ({"frames": ["CY2024Q3"], "cutoffs": [t("2025-01-01"), dt.datetime(1, 1, 1, tzinfo=dt.timezone(
        dt.timedelta(hours=5)))]}, "cutoffs[1]", "outside the years 1 to 9999 in UTC"),  # not an OverflowError
    ({"frames": ["CY2024Q3"], "entities": []}, "entities", "empty"),
    ({"frames": ["CY2024Q3"], "first_reported": "yes"}, "first_reported", "True or False"),
    ({"frames": ["CY2024Q3", "CY2024Q4"], "entities": [f"cik:{n}" for n in range(5_000)],
      "cutoffs": [t("2025-01-01") + dt.timedelta(days=d) for d in range(501)]}, "cutoffs", "5,010,000 cells"),
])
def test_bad_panel_arguments_are_refused_before_any_query(kwargs, where, reason):
    with Memory.connect("bolt://127.0.0.1:9") as offline:
        args = {"attribute": "us-gaap:Revenues", "cutoffs": [t("2025-01-01")], **kwargs}
        with pytest.raises(InputError) as info:
            offline.panel(Scope(tenant="t"), **args)
    assert info.value.where == where and reason in info.value.reason, str(info.value)


# ---------------------------------------------------------------- line items on real filings


def test_revenue_as_a_line_item_follows_teslas_concepts_as_they_were_public(real):
    """Tesla reported Revenues, then (10-Qs of 2018) also RevenueFromContractWithCustomer-
    ExcludingAssessedTax, then Revenues alone again from 2019: the family prefers the
    latter, so each quarter takes it only once it was public, and falls back after."""
    mem, scope, known_at = real
    revenue = lineitems.load()["revenue"]
    cutoffs = [t("2018-03-31"), t("2018-06-30"), t("2019-06-30")]
    panel = mem.panel(scope, attribute=revenue, latest="quarter", cutoffs=cutoffs, known_at=known_at,
                      entities=[TESLA])
    rfcc, revenues = "us-gaap:RevenueFromContractWithCustomerExcludingAssessedTax", "us-gaap:Revenues"
    got = [(c.frame, c.concept, c.value, c.skipped) for c in panel.cells]
    assert got == [
        ("CY2017Q4", revenues, Decimal("3288249000"), (f"{rfcc}: nothing public",)),
        ("CY2018Q1", rfcc, Decimal("3408751000"), ()),
        ("CY2019Q1", revenues, Decimal("4541464000"), (f"{rfcc}: latest CY2018Q3",)),
    ]
    assert panel.attribute == "item:graphmem-standard:revenue" and panel.item == "revenue"
    cell = panel.cells[1]
    assert cell.version_id == cell.reported_version_id == cell.answer.version.version_id  # a read: as reported
    derived = lineitems.record(mem, scope, revenue, panel)[cell.reported_version_id]  # lineage, when asked
    assert derived.attribute == "item:graphmem-standard:revenue" and derived.value == cell.value
    assert [(e.kind, e.title) for e in derived.sources] == [("derivation", "lineitem 1")]
    upstream = mem.lineage(scope, derived.version_id, "upstream")  # the reported fact and its filing
    filing = cell.filings[0]
    assert {f"f:{cell.reported_version_id}", f"s:{filing}"} <= set(upstream.nodes)
    reached = {i.id for i in mem.impact(scope, source_id=filing).items}
    assert derived.version_id in reached
    screen = mem.screen(scope, attribute=revenue, frame="CY2018Q1", cutoff=cutoffs[1], entities=[TESLA])
    assert screen.choices[TESLA] == {"concept": rfcc, "skipped": []}
    assert screen.answers[0].version.version_id == cell.version_id
    assert screen.inputs[TESLA][0].version_id == cell.reported_version_id


# ---------------------------------------------------------------- the synthetic universe


@pytest.fixture(scope="module")
def synthetic(migrated):
    """bench_screen.py's universe, three companies: a calendar filer with a disagreeing
    newswire (conflicted Q3s), a 52/53-week filer and one a month off the calendar."""
    import sys

    sys.path.insert(0, str(Path(__file__).parents[1] / "bench"))
    from bench_screen import Universe

    from graphmem import Entity

    universe, scope = Universe(companies=20, years=2, seed=3), Scope(tenant=f"test-panel-synth-{uuid.uuid4().hex[:12]}")
    with migrated.connect() as mem:
        for n in (7, 12, 17):
            mem.put_entity(scope, Entity(id=universe.cik(n), kind="company"))
            filings = universe.filings(n)
            mem.record(scope, sources=[source for source, _ in filings])
            mem.assert_facts(scope, (item for _, items in filings for item in items))
        yield mem, scope, mem.server_now()


def test_panels_on_the_synthetic_universe_are_its_screens(synthetic):
    mem, scope, known_at = synthetic
    cutoffs = [dt.datetime(2021, m, 28, tzinfo=dt.UTC) for m in (4, 6, 8, 11)] + [t("2022-03-01"), t("2022-09-01")]
    for attribute, latest in (("us-gaap:Revenues", "quarter"), ("us-gaap:Assets", "instant")):
        panel = mem.panel(scope, attribute=attribute, latest=latest, cutoffs=cutoffs, known_at=known_at)
        assert assert_cells_are_screens(mem, scope, panel, known_at) == len(
            [c for c in panel.cells if c.frame]) > 10
    frames = mem.panel(scope, attribute="us-gaap:Revenues", frames=["CY2021Q3", "CY2021"], cutoffs=cutoffs,
                       known_at=known_at)
    assert assert_cells_are_screens(mem, scope, frames, known_at) == len(frames.cells)
    assert "conflicted" in {c.status for c in frames.cells}
