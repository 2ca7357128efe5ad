"""Point-in-time screens across companies (graphmem/screen.py), on the real Neo4j.

Real filings first: Tesla's and LPA's company facts and a part of Marvell's (three
us-gaap concepts; Marvell's fiscal quarters end on the Saturday nearest a month's end,
a month after the calendar quarter) loaded through the SEC loader into one tenant. Then
synthetic companies written through the API in the real key shape (``cik:N``,
``us-gaap:Revenues``, ``USD``, filings as primary sources published by the company),
each built for one rule: a 52/53-week quarter, a two-month stub that a better-fitting
quarter displaces once it is public, a fiscal quarter filed after the cutoff, two
publishers that disagree, a restatement on either side of the cutoff.

The frame rule itself is checked without a database against the SEC's own labels: every
row of the real files that the SEC labelled with a frame.
"""

from __future__ import annotations

import datetime as dt
import json
import uuid
from decimal import Decimal
from pathlib import Path

import pytest
from graphmem.loaders import metrics, sec
from world import t

from graphmem import Authority, Entity, FactIn, InputError, Memory, Period, Require, Scope, Source
from graphmem.screen import Selection, frame_of

FIXTURES = Path(__file__).parent / "fixtures"
TESLA, LPA, MARVELL = "cik:1318605", "cik:1997711", "cik:1835632"
REAL_FILES = ("companyfacts-CIK0001318605-tesla.json", "companyfacts-CIK0001997711-lpa.json",
              "companyfacts-CIK0001835632-marvell.json", "companyfacts-CIK0001046179-tsmc.json")
MARVELL_CONCEPTS = ("Assets", "OperatingIncomeLoss", "RevenueFromContractWithCustomerExcludingAssessedTax")


def P(start: str | None, end: str) -> Period:
    return Period(start=dt.date.fromisoformat(start) if start else None, end=dt.date.fromisoformat(end))


def rows(screen) -> dict[str, tuple]:
    """entity -> (status, value, period text) of a screen's answers."""
    return {a.entity: (a.status, a.value, a.version.period.text if a.version else None)
            for a in screen.answers}


# ---------------------------------------------------------------- the frame rule, no database


def _labelled(path: Path):
    data = json.loads(path.read_text())
    for concepts in data["facts"].values():
        for body in concepts.values():
            for unit_rows in body["units"].values():
                for row in unit_rows:
                    if "frame" in row:
                        yield P(row.get("start"), row["end"]), row["frame"]


def test_the_frame_rule_gives_the_secs_own_labels_on_real_filings():
    """15,160 of the 15,172 rows of four real files that the SEC labelled with a frame get
    the same frame from the rule; the others are one-month durations the SEC labels as
    instant frames, which a screen never takes for instants."""
    agree, differ = 0, []
    for name in REAL_FILES:
        for period, label in _labelled(FIXTURES / name):
            if frame_of(period) == label:
                agree += 1
            else:
                differ.append((name, period.text, label, frame_of(period)))
    assert agree == 15_160
    assert len(differ) == 12
    assert all(label.endswith("I") and got is None for _, _, label, got in differ)
    assert all(28 <= P(*text.split("..")).days <= 31 for _, text, _, _ in differ)


@pytest.mark.parametrize(("period", "frame"), [
    (P("2024-07-01", "2024-09-30"), "CY2024Q3"),
    (P("2024-06-30", "2024-09-28"), "CY2024Q3"),   # a 52/53-week quarter
    (P("2024-08-04", "2024-11-02"), "CY2024Q3"),   # Marvell's fiscal Q3 (SEC: CY2024Q3)
    (P("2024-05-05", "2024-08-03"), "CY2024Q2"),   # ... and its Q2
    (P("2024-08-16", "2024-11-15"), "CY2024Q3"),   # two middle days: the earlier one
    (P("2024-08-01", "2024-09-30"), "CY2024Q3"),   # 61 days: a quarter's length, just
    (P("2024-08-02", "2024-09-30"), None),         # 60 days: none
    (P("2024-06-01", "2024-09-29"), "CY2024Q3"),   # 121 days
    (P("2024-06-01", "2024-09-30"), None),         # 122 days
    (P("2024-01-01", "2024-09-30"), None),         # nine months
    (P("2023-01-29", "2024-02-03"), "CY2023"),     # a 53-week fiscal year
    (P("2023-10-01", "2024-09-28"), "CY2024"),     # a fiscal year ending in September
    (P(None, "2024-09-28"), "CY2024Q3I"),
    (P(None, "2024-11-15"), "CY2024Q3I"),          # halfway between two quarter ends
    (P(None, "2024-11-16"), "CY2024Q4I"),
    (P(None, "2024-08-15"), "CY2024Q2I"),          # halfway again: the earlier
    (P(None, "2025-02-14"), "CY2024Q4I"),
    (P(None, "2025-02-15"), "CY2025Q1I"),
    (P("0202-01-01", "0202-03-31"), None),         # a typo'd year: no frame of it can be asked
    (P("9999-01-01", "9999-12-31"), None),
    (P(None, "9999-12-31"), None),
    (P(None, "1000-01-10"), None),                 # nearest to 999-12-31's quarter end
    (P(None, "9999-01-10"), "CY9998Q4I"),          # the last frame that can be asked
])
def test_frame_of(period, frame):
    assert frame_of(period) == frame
    if frame:
        assert Selection.frame(frame).matches(period)


def test_frames_parse():
    q3 = Selection.frame("cy2024q3")
    assert (q3.label, q3.kind, q3.start, q3.end, q3.days) == (
        "CY2024Q3", "duration", dt.date(2024, 7, 1), dt.date(2024, 9, 30), (61, 121))
    year = Selection.frame("CY2024")
    assert (year.start, year.end, year.days) == (dt.date(2024, 1, 1), dt.date(2024, 12, 31), (335, 395))
    instant = Selection.frame("CY2024Q4I")
    assert (instant.kind, instant.end, instant.end_from, instant.end_to) == (
        "instant", dt.date(2024, 12, 31), dt.date(2024, 11, 16), dt.date(2025, 2, 14))


@pytest.mark.parametrize(("frame", "reason"), [
    ("2024Q3", "not a calendar frame"),
    ("CY24Q3", "not a calendar frame"),
    ("CY2024Q5", "not a calendar frame"),
    ("FY2024", "not a calendar frame"),
    ("CY2024Q3 extra", "not a calendar frame"),
    ("", "not a calendar frame"),
    ("CY2024I", "an instant frame names a quarter; the year's last day is CY2024Q4I"),
    ("CY0999", "the year must be from 1000 to 9998"),
    (2024, "a string such as 'CY2024Q3' is required"),
])
def test_a_frame_that_is_not_one_is_refused_naming_it(mem, scope, frame, reason):
    with pytest.raises(InputError) as info:
        mem.screen(scope, attribute="us-gaap:Revenues", frame=frame, cutoff=t("2025-01-01"))
    assert info.value.where == "frame" and reason in info.value.reason
    if isinstance(frame, str) and frame:
        assert repr(frame) in str(info.value)


@pytest.mark.parametrize(("kwargs", "where", "reason"), [
    ({"frame": "CY2024Q3", "period": P(None, "2024-09-30")}, "frame", "exactly one of frame="),
    ({}, "frame", "exactly one of frame="),
    ({"frame": "CY2024Q3", "entities": []}, "entities", "empty"),
    ({"frame": "CY2024Q3", "entities": "cik:1"}, "entities", "a single string is not one"),
    ({"frame": "CY2024Q3", "entities": ["cik:1", ""]}, "entities[1]", "non-empty string"),
    ({"frame": "CY2024Q3", "entities": ["x" * 4001]}, "entities[0]", "at most 2,048"),
    ({"frame": "CY2024Q3", "sort": "size"}, "sort", "must be one of entity, value, -value"),
    ({"frame": "CY2024Q3", "attribute": ""}, "attribute", "non-empty string"),
    ({"frame": "CY2024Q3", "cutoff": dt.datetime(2025, 1, 1)}, "cutoff", "naive datetime"),
    ({"frame": "CY2024Q3", "cutoff": None}, "cutoff", "needs a cutoff"),
    ({"frame": "CY2024Q3", "require": "primary"}, "require", "graphmem.Require"),
    ({"period": "2024-09-30"}, "period", "graphmem.Period"),
])
def test_bad_screen_arguments_are_refused_before_any_query(kwargs, where, reason):
    # a memory whose database cannot be reached: nothing may be asked of it
    with Memory.connect("bolt://127.0.0.1:9") as offline:
        args = {"attribute": "us-gaap:Revenues", "cutoff": t("2025-01-01"), **kwargs}
        with pytest.raises(InputError) as info:
            offline.screen(Scope(tenant="t"), **args)
    assert info.value.where == where and reason in info.value.reason, str(info.value)


# ---------------------------------------------------------------- real filings


@pytest.fixture(scope="module")
def real(migrated, tmp_path_factory):
    """Tesla, LPA and three concepts of Marvell, loaded once into a tenant of their own."""
    data = json.loads((FIXTURES / REAL_FILES[2]).read_text())
    data["facts"] = {"us-gaap": {c: data["facts"]["us-gaap"][c] for c in MARVELL_CONCEPTS}}
    marvell = tmp_path_factory.mktemp("marvell") / "companyfacts-marvell-part.json"
    marvell.write_text(json.dumps(data))
    scope = Scope(tenant=f"test-screen-{uuid.uuid4().hex[:12]}")
    with migrated.connect() as mem:
        sec.load(mem, scope, FIXTURES / REAL_FILES[0], FIXTURES / "submissions-CIK0001318605-tesla.json")
        sec.load(mem, scope, FIXTURES / REAL_FILES[1])
        sec.load(mem, scope, marvell, FIXTURES / "submissions-CIK0001835632-marvell.json")
        yield mem, scope


def test_a_restatement_changes_the_screen_only_from_its_filing_on(real):
    """Tesla's 2015 total assets, restated by the 10-Q accepted 2016-05-10 19:27:20Z."""
    mem, scope = real

    def screen(cutoff):
        return mem.screen(scope, attribute="us-gaap:Assets", frame="CY2015Q4I", cutoff=cutoff)

    before = screen(dt.datetime(2016, 5, 10, 19, 27, 19, tzinfo=dt.UTC))
    assert rows(before) == {TESLA: ("active", Decimal("8092460000"), "2015-12-31")}
    assert before.universe == "attribute"  # Marvell had filed nothing yet: not in it
    assert [e.source_id for e in before.answers[0].version.sources] == ["0001564590-16-013195"]
    after = screen(dt.datetime(2016, 5, 10, 19, 27, 20, tzinfo=dt.UTC))
    assert rows(after) == {TESLA: ("active", Decimal("8067939000"), "2015-12-31")}
    version = after.answers[0].version
    assert version.sources[0].source_id == "0001564590-16-018886"
    assert version.available_by == dt.datetime(2016, 5, 10, 19, 27, 20, tzinfo=dt.UTC)
    assert after.answers[0].explain.superseded == 1


def test_fiscal_quarters_a_month_off_the_calendar_and_no_look_ahead(real):
    """CY2021Q3 is Tesla's July-September quarter and Marvell's August-October one, which
    Marvell filed on 2021-12-03: invisible at a 2021-11-15 cutoff, then its first figure,
    then the figure its next year's 10-Q gave (-33,400,000, not a re-rounding of
    -33,341,000: a new version)."""
    mem, scope = real

    def screen(cutoff):
        return mem.screen(scope, attribute="us-gaap:OperatingIncomeLoss", frame="CY2021Q3",
                          cutoff=cutoff, sort="-value")

    early = screen(t("2021-11-15"))
    assert rows(early) == {TESLA: ("active", Decimal("2004000000"), "2021-07-01..2021-09-30"),
                           MARVELL: ("not_found", None, None)}
    assert early.answers[1].entity == MARVELL and early.answers[1].explain.cutoff == 2  # filed, later
    assert early.answers[0].version.sources[0].source_id == "0000950170-21-002253"
    first = screen(t("2021-12-31"))
    assert rows(first)[MARVELL] == ("active", Decimal("-33341000"), "2021-08-01..2021-10-30")
    marvell = first.answers[1].version
    assert [e.source_id for e in marvell.sources] == ["0001835632-21-000032"]
    assert marvell.sources[0].available_by == dt.datetime(2021, 12, 3, 21, 4, 6, tzinfo=dt.UTC)
    later = screen(t("2023-01-01"))
    assert rows(later)[MARVELL] == ("active", Decimal("-33400000"), "2021-08-01..2021-10-30")
    assets = mem.screen(scope, attribute="us-gaap:Assets", frame="CY2021Q3I", cutoff=t("2023-01-01"))
    assert rows(assets) == {TESLA: ("active", Decimal("57834000000"), "2021-09-30"),
                            MARVELL: ("active", Decimal("22018842000"), "2021-10-30")}


def test_the_entity_filter_keeps_every_entity_asked_for(real):
    mem, scope = real
    asked = [MARVELL, TESLA, LPA, "cik:404"]
    s = mem.screen(scope, attribute="us-gaap:Assets", frame="CY2015Q4I", cutoff=t("2016-06-01"),
                   entities=asked + [TESLA])
    assert s.universe == "entities" and s.unknown == ("cik:404",)
    assert [a.entity for a in s.answers] == sorted(asked)
    assert rows(s)[TESLA][0] == "active"
    assert {rows(s)[e][0] for e in (MARVELL, LPA, "cik:404")} == {"not_found"}
    # LPA reports in IFRS: us-gaap:Assets is not its attribute; its own is
    ifrs = mem.screen(scope, attribute="ifrs-full:Assets", frame="CY2024Q4I", cutoff=t("2025-06-01"))
    assert rows(ifrs)[LPA][0] == "active" and set(rows(ifrs)) == {LPA}


# ---------------------------------------------------------------- synthetic companies


class Filer:
    """Companies and their filings written through the API in the real key shape."""

    def __init__(self, mem: Memory, scope: Scope):
        self.mem, self.scope = mem, scope

    def company(self, n: int, name: str) -> str:
        self.mem.put_entity(self.scope, Entity(id=f"cik:{n}", name=name, kind="company"))
        return f"cik:{n}"

    def file(self, cik: str, accession: str, accepted: str, *facts: tuple, publisher: str | None = None,
             attribute: str = "us-gaap:Revenues", unit: str = "USD") -> None:
        """One filing (a primary source) and the facts it reports, (period, value) each."""
        source = Source(id=accession, kind="10-Q", authority=Authority.PRIMARY, publisher=publisher or cik,
                        available_by=t(accepted))
        items = [FactIn(entity=cik, attribute=attribute, unit=unit, period=period, value=Decimal(value),
                        sources=(accession,)) for period, value in facts]
        self.mem.record(self.scope, sources=[source], items=items)


Q3 = P("2024-07-01", "2024-09-30")


@pytest.fixture(scope="module")
def synthetic(migrated):
    scope = Scope(tenant=f"test-screen-synth-{uuid.uuid4().hex[:12]}")
    with migrated.connect() as mem:
        f = Filer(mem, scope)
        cal = f.company(101, "Calendar Co")
        f.file(cal, "a-24-q2", "2024-07-30", (P("2024-04-01", "2024-06-30"), 90), (P("2024-01-01", "2024-06-30"), 170))
        f.file(cal, "a-24-q3", "2024-10-30", (Q3, 100), (P("2024-01-01", "2024-09-30"), 270))
        f.file(cal, "a-24-q3-restated", "2024-12-05", (Q3, 105))  # a restatement after the cutoff
        retail = f.company(102, "Retail 52/53")
        f.file(retail, "b-stub", "2024-10-10", (P("2024-08-01", "2024-09-30"), 70))  # a two-month stub
        f.file(retail, "b-24-q3", "2024-11-01", (P("2024-06-30", "2024-09-28"), 200))
        offset = f.company(103, "Aug-Oct Fiscal")
        f.file(offset, "c-24-q2", "2024-08-30", (P("2024-05-05", "2024-08-03"), 290))
        f.file(offset, "c-24-q3", "2024-12-04", (P("2024-08-04", "2024-11-02"), 300))
        split = f.company(104, "Disputed Inc")
        f.file(split, "d-24-q3", "2024-10-29", (Q3, 400))
        f.file(split, "d-wire", "2024-10-29T12:00", (Q3, 401), publisher="wire:newsdesk")
        late = f.company(105, "Late Filer")
        f.file(late, "e-25-q1", "2025-05-01", (P("2025-01-01", "2025-03-31"), 500))
        f.company(106, "No Revenues")
        yield mem, scope


def test_a_screen_at_a_cutoff_takes_only_what_was_public_then(synthetic):
    mem, scope = synthetic
    s = mem.screen(scope, attribute="us-gaap:Revenues", frame="CY2024Q3", cutoff=t("2024-11-15"))
    assert rows(s) == {
        "cik:101": ("active", Decimal("100"), "2024-07-01..2024-09-30"),
        "cik:102": ("active", Decimal("200"), "2024-06-30..2024-09-28"),
        "cik:103": ("not_found", None, None),  # its Q3 came on 2024-12-04, its Q2 is CY2024Q2
        "cik:104": ("conflicted", None, None),
    }  # cik:105 first reported in 2025, cik:106 never: neither is in the universe
    assert s.counts() == {"active": 2, "conflicted": 1, "not_found": 1}
    disputed = s.answers[3]
    assert {c.value for c in disputed.candidates} == {Decimal("400"), Decimal("401")}
    assert {c.sources[0].publisher for c in disputed.candidates} == {"cik:104", "wire:newsdesk"}
    assert s.answers[2].explain.cutoff == 1
    calendar = s.answers[0].version
    assert calendar.available_by == t("2024-10-30") and calendar.sources[0].source_id == "a-24-q3"


def test_the_restatement_after_the_cutoff_shows_in_a_later_screen(synthetic):
    mem, scope = synthetic
    s = mem.screen(scope, attribute="us-gaap:Revenues", frame="CY2024Q3", cutoff=t("2025-01-01"))
    assert rows(s)["cik:101"] == ("active", Decimal("105"), "2024-07-01..2024-09-30")
    assert rows(s)["cik:103"] == ("active", Decimal("300"), "2024-08-04..2024-11-02")
    assert s.answers[0].version.sources[0].source_id == "a-24-q3-restated"
    assert set(rows(s)) == {"cik:101", "cik:102", "cik:103", "cik:104"}  # cik:105: not until 2025-05-01
    later = mem.screen(scope, attribute="us-gaap:Revenues", frame="CY2024Q3", cutoff=t("2025-06-01"))
    assert rows(later)["cik:105"] == ("not_found", None, None)


def test_a_better_fitting_key_counts_only_once_it_is_public(synthetic):
    """Retail's two-month stub is its only CY2024Q3 figure until its 13-week quarter is
    filed, which then fits better; the stub's filing date never decides for the quarter."""
    mem, scope = synthetic
    early = mem.screen(scope, attribute="us-gaap:Revenues", frame="CY2024Q3", cutoff=t("2024-10-15"),
                       entities=["cik:102"])
    assert rows(early) == {"cik:102": ("active", Decimal("70"), "2024-08-01..2024-09-30")}
    later = mem.screen(scope, attribute="us-gaap:Revenues", frame="CY2024Q3", cutoff=t("2024-11-02"),
                       entities=["cik:102"])
    assert rows(later) == {"cik:102": ("active", Decimal("200"), "2024-06-30..2024-09-28")}


def test_equally_fitting_keys_go_to_the_most_recently_public(mem, scope):
    """Two keys one day off the calendar quarter each: the one whose evidence was public
    last wins, as the SEC's frames take the last filed."""
    f = Filer(mem, scope)
    cik = f.company(501, "Two Shapes")
    early, late = P("2024-07-02", "2024-09-30"), P("2024-07-01", "2024-09-29")
    f.file(cik, "t-1", "2024-10-20", (early, 1))
    f.file(cik, "t-2", "2024-10-25", (late, 2))
    f.file(cik, "t-3", "2024-10-28", (early, 1))  # the first figure filed again

    def at(day: str):
        return rows(mem.screen(scope, attribute="us-gaap:Revenues", frame="CY2024Q3", cutoff=t(day)))[cik]

    assert at("2024-10-22") == ("active", Decimal("1"), early.text)
    assert at("2024-10-26") == ("active", Decimal("2"), late.text)
    assert at("2024-10-29") == ("active", Decimal("1"), early.text)


def test_sort_by_value_puts_conflicted_then_not_found_last(synthetic):
    mem, scope = synthetic
    order = {}
    for sort in ("value", "-value", "entity"):
        s = mem.screen(scope, attribute="us-gaap:Revenues", frame="CY2024Q3", cutoff=t("2024-11-15"),
                       entities=["cik:106", "cik:104", "cik:102", "cik:101", "cik:103"], sort=sort)
        order[sort] = [a.entity for a in s.answers]
        assert s.sort == sort
    assert order["value"] == ["cik:101", "cik:102", "cik:104", "cik:103", "cik:106"]
    assert order["-value"] == ["cik:102", "cik:101", "cik:104", "cik:103", "cik:106"]
    assert order["entity"] == ["cik:101", "cik:102", "cik:103", "cik:104", "cik:106"]


def test_an_exact_period_and_an_evidence_requirement(synthetic):
    mem, scope = synthetic
    s = mem.screen(scope, attribute="us-gaap:Revenues", period=Q3, cutoff=t("2024-11-15"))
    assert s.frame is None and s.period == Q3
    assert {e: r[0] for e, r in rows(s).items()} == {
        "cik:101": "active", "cik:102": "not_found", "cik:103": "not_found", "cik:104": "conflicted"}
    strict = mem.screen(scope, attribute="us-gaap:Revenues", frame="CY2024Q3", cutoff=t("2024-11-15"),
                        require=Require(min_authority=Authority.USER_CORRECTION))
    assert {r[0] for r in rows(strict).values()} == {"not_found"}
    assert strict.answers[0].explain.evidence == 1


def test_known_at_shows_the_screen_as_recorded_then(mem, scope):
    f = Filer(mem, scope)
    cik = f.company(201, "Recorded Late")
    f.file(cik, "r-1", "2024-10-30", (Q3, 10))
    recorded = mem.server_now()
    f.file(cik, "r-2", "2024-11-01", (Q3, 11))  # public before the cutoff, recorded after `recorded`
    now = mem.screen(scope, attribute="us-gaap:Revenues", frame="CY2024Q3", cutoff=t("2024-11-15"))
    then = mem.screen(scope, attribute="us-gaap:Revenues", frame="CY2024Q3", cutoff=t("2024-11-15"),
                      known_at=recorded)
    assert rows(now)[cik][1] == Decimal("11") and rows(then)[cik][1] == Decimal("10")
    assert then.known_at == recorded and now.known_at > recorded
    before = mem.screen(scope, attribute="us-gaap:Revenues", frame="CY2024Q3", cutoff=t("2024-11-15"),
                        known_at=recorded - dt.timedelta(days=1), entities=[cik])
    assert rows(before)[cik] == ("not_found", None, None) and before.answers[0].explain.known_at == 2
    # invalidated from its recorded_at on: the screen falls back to the first filing
    mem.invalidate(scope, now.answers[0].version.version_id, "keyed from the wrong column")
    again = mem.screen(scope, attribute="us-gaap:Revenues", frame="CY2024Q3", cutoff=t("2024-11-15"))
    assert rows(again)[cik][1] == Decimal("10") and again.answers[0].explain.invalidated == 1


def test_answers_in_several_units_need_a_unit(mem, scope):
    f = Filer(mem, scope)
    f.file(f.company(301, "Dollar Co"), "u-1", "2024-10-30", (Q3, 1))
    f.file(f.company(302, "Euro SE"), "u-2", "2024-10-30", (Q3, 2), unit="EUR")
    with pytest.raises(InputError) as info:
        mem.screen(scope, attribute="us-gaap:Revenues", frame="CY2024Q3", cutoff=t("2024-11-15"))
    assert info.value.where == "unit"
    assert "'EUR': 1 entity, 'USD': 1 entity" in info.value.reason
    usd = mem.screen(scope, attribute="us-gaap:Revenues", frame="CY2024Q3", cutoff=t("2024-11-15"), unit="USD")
    assert rows(usd) == {"cik:301": ("active", Decimal("1"), Q3.text), "cik:302": ("not_found", None, None)}


def test_one_entity_in_two_units_is_not_a_silent_pick(mem, scope):
    """A 20-F filer's figure in its own currency and a convenience translation, same period."""
    f = Filer(mem, scope)
    cik = f.company(303, "Foreign Filer")
    f.file(cik, "w-1", "2024-10-30", (Q3, 3200), unit="TWD")
    f.file(cik, "w-2", "2024-10-30", (Q3, 100))
    with pytest.raises(InputError) as info:
        mem.screen(scope, attribute="us-gaap:Revenues", frame="CY2024Q3", cutoff=t("2024-11-15"))
    assert "'TWD': 1 entity, 'USD': 1 entity" in info.value.reason
    twd = mem.screen(scope, attribute="us-gaap:Revenues", frame="CY2024Q3", cutoff=t("2024-11-15"), unit="TWD")
    assert rows(twd) == {cik: ("active", Decimal("3200"), Q3.text)}


def test_a_derived_ltm_value_is_not_taken_for_the_reported_year(mem, scope):
    """metrics.ltm records LTM values under the same attribute with definition 'ltm'."""
    f = Filer(mem, scope)
    cik = f.company(401, "Quarterly Only")
    quarters = [P("2023-10-01", "2023-12-31"), P("2024-01-01", "2024-03-31"), P("2024-04-01", "2024-06-30"), Q3]
    for n, q in enumerate(quarters):
        f.file(cik, f"q-{n}", (q.end + dt.timedelta(days=30)).isoformat(), (q, 10 + n))
    ltm = metrics.ltm(mem, scope, entity=cik, concept="us-gaap:Revenues", cutoff=t("2024-11-15"))
    assert ltm.value == Decimal("46") and ltm.period == P("2023-10-01", "2024-09-30")
    reported = mem.screen(scope, attribute="us-gaap:Revenues", frame="CY2024", cutoff=t("2024-11-15"))
    assert rows(reported) == {cik: ("not_found", None, None)}
    derived = mem.screen(scope, attribute="us-gaap:Revenues", frame="CY2024", definition="ltm",
                         cutoff=t("2024-11-15"))
    assert rows(derived) == {cik: ("active", Decimal("46"), "2023-10-01..2024-09-30")}


# ---------------------------------------------------------------- the command line


def _cli(migrated, scope: Scope, *args: str):
    from click.testing import CliRunner

    from graphmem.cli import main

    env = {"GRAPHMEM_NEO4J_URI": migrated.uri, "GRAPHMEM_TENANT": scope.tenant}
    if migrated.auth:
        env |= {"GRAPHMEM_NEO4J_USER": migrated.auth[0], "GRAPHMEM_NEO4J_PASSWORD": migrated.auth[1]}
    return CliRunner().invoke(main, ["screen", *args], env=env)


def test_the_command_line_in_every_format(migrated, synthetic, tmp_path):
    _, scope = synthetic
    universe = tmp_path / "universe.txt"
    universe.write_text("\ufeff# my universe\ncik:102\n\ncik:101\ncik:103\ncik:104\ncik:999\n", encoding="utf-8")
    args = ["--attribute", "us-gaap:Revenues", "--frame", "CY2024Q3", "--cutoff", "2024-11-15",
            "--entities", str(universe), "--sort", "-value"]

    table = _cli(migrated, scope, *args)
    assert table.exit_code == 0, table.output
    lines = table.output.splitlines()
    assert "us-gaap:Revenues for CY2024Q3 as of cutoff 2024-11-15T23:59:59+00:00" in lines[0]
    assert "5 entities (as given); 2 active, 1 conflicted, 2 not_found" in lines[0]
    assert lines[1] == "not in this scope: cik:999"
    body = [line.split() for line in lines[3:]]
    assert [r[0] for r in body] == ["cik:102", "cik:101", "cik:104", "cik:103", "cik:999"]
    assert body[0][:6] == ["cik:102", "active", "200", "USD", "2024-06-30..2024-09-28", "2024-11-01T00:00:00+00:00"]
    assert "b-24-q3" in lines[3] and "2 candidates" in lines[5] and "cutoff=1" in lines[6]
    assert "nothing reported" in lines[7]

    as_json = _cli(migrated, scope, *args, "--format", "json")
    assert as_json.exit_code == 0, as_json.output
    data = json.loads(as_json.output)
    assert data["frame"] == "CY2024Q3" and data["universe"] == "entities" and data["unknown"] == ["cik:999"]
    assert [a["entity"] for a in data["answers"]] == ["cik:102", "cik:101", "cik:104", "cik:103", "cik:999"]
    assert data["answers"][0]["version"]["value"] == "200"
    assert data["answers"][0]["version"]["sources"][0]["source_id"] == "b-24-q3"
    assert len(data["answers"][2]["candidates"]) == 2

    as_csv = _cli(migrated, scope, *args, "--format", "csv")
    assert as_csv.exit_code == 0, as_csv.output
    import csv
    import io

    got = list(csv.DictReader(io.StringIO(as_csv.output)))
    assert [r["entity"] for r in got] == ["cik:102", "cik:101", "cik:104", "cik:103", "cik:999"]
    assert got[1] == {"entity": "cik:101", "status": "active", "value": "100", "unit": "USD",
                      "period_start": "2024-07-01", "period_end": "2024-09-30",
                      "available_by": "2024-10-30T00:00:00+00:00", "recorded_at": got[1]["recorded_at"],
                      "sources": "a-24-q3", "version_id": got[1]["version_id"], "note": ""}
    assert got[2]["value"] in ("400 | 401", "401 | 400") and got[2]["status"] == "conflicted"
    assert got[3]["note"] == "cutoff=1" and got[3]["value"] == ""


def test_the_command_line_exit_codes(migrated, synthetic, tmp_path):
    _, scope = synthetic
    nobody = _cli(migrated, scope, "--attribute", "us-gaap:Revenues", "--frame", "CY2019Q3",
                  "--cutoff", "2024-11-15")
    assert nobody.exit_code == 4, nobody.output  # nobody has a value for 2019
    bad = _cli(migrated, scope, "--attribute", "us-gaap:Revenues", "--frame", "CY2024Q9",
               "--cutoff", "2024-11-15")
    assert bad.exit_code == 2 and "--frame: 'CY2024Q9' is not a calendar frame" in bad.output  # usage
    empty = tmp_path / "empty.txt"
    empty.write_text("# nothing\n\n")
    refused = _cli(migrated, scope, "--attribute", "us-gaap:Revenues", "--frame", "CY2024Q3",
                   "--cutoff", "2024-11-15", "--entities", str(empty))
    assert refused.exit_code == 2 and f"--entities: {empty}: no entity ids" in refused.output
    exact = _cli(migrated, scope, "--attribute", "us-gaap:Revenues", "--period", "2024-07-01..2024-09-30",
                 "--cutoff", "2024-11-15", "--format", "csv")
    assert exact.exit_code == 0 and "cik:101,active,100," in exact.output
    # a screen nobody answers keeps its columns: a pipeline reading the CSV needs them
    empty = _cli(migrated, scope, "--attribute", "us-gaap:NoSuchConcept", "--frame", "CY2024Q3",
                 "--cutoff", "2024-11-15", "--format", "csv")
    assert empty.exit_code == 4, empty.output
    assert empty.output.splitlines()[0] == exact.output.splitlines()[0] == ",".join(
        ("entity", "status", "value", "unit", "period_start", "period_end", "available_by", "recorded_at",
         "sources", "version_id", "note"))


def test_the_entities_file_is_split_at_newlines_only(migrated, synthetic, tmp_path):
    """A vertical tab or a form feed inside a line is part of that line's id (str.splitlines
    would make each piece an entity of its own); a CRLF file reads as an LF one."""
    _, scope = synthetic
    universe = tmp_path / "universe.txt"
    universe.write_bytes(b"cik:101\x0bcik:102\r\ncik:103\x0c\r\ncik:104\n")
    done = _cli(migrated, scope, "--attribute", "us-gaap:Revenues", "--frame", "CY2024Q3", "--cutoff", "2024-11-15",
                "--entities", str(universe), "--format", "json")
    assert done.exit_code == 0, done.output
    data = json.loads(done.output)
    assert [a["entity"] for a in data["answers"]] == ["cik:101\x0bcik:102", "cik:103", "cik:104"]
    assert data["unknown"] == ["cik:101\x0bcik:102"]


def test_a_large_table_shows_every_row_on_a_line_of_its_own(migrated, synthetic, tmp_path):
    """3,000 entities asked for (most not in the scope): the table lists every one, one
    line each, in the sort order (rich laid such a table out at about 2 ms a row; the
    plain layout's time is in docs/PERFORMANCE.md, not asserted here)."""
    _, scope = synthetic
    asked = [f"cik:{n}" for n in range(101, 3101)]
    universe = tmp_path / "universe.txt"
    universe.write_text("\n".join(asked))
    done = _cli(migrated, scope, "--attribute", "us-gaap:Revenues", "--frame", "CY2024Q3", "--cutoff", "2024-11-15",
                "--entities", str(universe))
    assert done.exit_code == 0, done.output
    lines = done.output.splitlines()
    assert "3000 entities (as given)" in lines[0] and len(lines[1].split(", ")) == 3000 - 6
    assert lines[2].split() == ["entity", "status", "value", "unit", "period", "available_by", "sources", "note"]
    assert [line.split()[0] for line in lines[3:]] == sorted(asked)
    assert lines[3 + sorted(asked).index("cik:101")].split()[:3] == ["cik:101", "active", "100"]


# ---------------------------------------------------------------- the LTM screen


def test_ltm_across_real_companies_each_window_from_what_was_public(real):
    """Tesla's LTM operating income to 2021-09-30 is year-to-date + 2020 - the 2020
    year-to-date (it reports no fourth quarter alone); Marvell's to 2021-10-30 needs its
    prior fiscal year, which its new registrant first filed on 2022-03-10."""
    mem, scope = real

    def screen(cutoff, frame="CY2021Q3"):
        return metrics.screen_ltm(mem, scope, concept="us-gaap:OperatingIncomeLoss", frame=frame, cutoff=cutoff)

    early = screen(t("2021-12-31"))
    assert rows(early) == {TESLA: ("active", Decimal("4485000000"), "2020-10-01..2021-09-30"),
                           MARVELL: ("not_found", None, None)}
    assert early.definition == "ltm" and early.frame == "CY2021Q3"
    assert [v.value for v in early.inputs[TESLA]] == [Decimal("3910000000"), Decimal("1994000000"),
                                                      Decimal("1419000000")]
    tesla = early.answers[0].version
    assert tesla.definition == "ltm" and tesla.authority == Authority.DERIVED
    assert tesla.available_by == max(v.available_by for v in early.inputs[TESLA])

    later = screen(t("2022-04-01"))
    assert rows(later)[MARVELL] == ("active", Decimal("-384056000"), "2020-11-01..2021-10-30")
    assert sorted({e.source_id for v in later.inputs[MARVELL] for e in v.sources}) == [
        "0001835632-21-000032", "0001835632-22-000016"]

    latest = screen(t("2022-04-01"), frame=None)  # each company's own latest window
    assert rows(latest) == {TESLA: ("active", Decimal("6523000000"), "2021-01-01..2021-12-31"),
                            MARVELL: ("active", Decimal("-347668000"), "2021-01-31..2022-01-29")}


def test_ltm_screen_conflicts_records_and_lineage(synthetic):
    mem, scope = synthetic
    f = Filer(mem, scope)
    quarters = [P("2023-10-01", "2023-12-31"), P("2024-01-01", "2024-03-31"), P("2024-04-01", "2024-06-30")]
    for cik, filed in (("cik:101", quarters[:2]), ("cik:104", quarters)):  # cik:101 filed its Q2 before
        for n, q in enumerate(filed):
            f.file(cik, f"{cik}-ltm-{n}", (q.end + dt.timedelta(days=30)).isoformat(), (q, 10 * (n + 1)))

    def screen():
        return metrics.screen_ltm(mem, scope, concept="us-gaap:Revenues", frame="CY2024Q3", cutoff=t("2024-11-15"),
                                  entities=["cik:101", "cik:104", "cik:106"], sort="-value")

    before = mem.counts(scope)
    s = screen()
    assert rows(s) == {"cik:101": ("active", Decimal("220"), "2023-10-01..2024-09-30"),  # 10 + 20 + 90 + 100
                       "cik:104": ("conflicted", None, None),  # its Q3 is disputed: no window around it
                       "cik:106": ("not_found", None, None)}
    assert {c.value for c in s.answers[1].candidates} == {Decimal("400"), Decimal("401")}
    assert "cik:104" not in s.inputs
    after = mem.counts(scope)
    assert after["derivations"] == before["derivations"] + 1
    assert rows(screen()) == rows(s) and mem.counts(scope) == after  # recorded once
    # withdrawing a filing behind an input reaches the screened value
    report = mem.impact(scope, source_id="a-24-q3")
    assert s.answers[0].version.version_id in {i.id for i in report.items}


def test_an_ltm_screen_that_finds_nothing_reports_the_known_at_it_read_at(synthetic):
    """The default known_at is the tenant's last committed time (a read at it reads the
    same whenever it runs); an LTM screen that found no figure reported the server's
    clock instead, a time after which a write in flight could still land."""
    mem, scope = synthetic
    s = metrics.screen_ltm(mem, scope, concept="us-gaap:NoSuchConcept", cutoff=t("2024-11-15"),
                           entities=["cik:101"])
    assert rows(s) == {"cik:101": ("not_found", None, None)}
    assert s.known_at == mem.recorded_through(scope) == s.answers[0].known_at


def test_the_command_line_ltm_screen(migrated, real):
    _, scope = real
    out = _cli(migrated, scope, "--ltm", "--attribute", "us-gaap:OperatingIncomeLoss", "--frame", "CY2021Q3",
               "--cutoff", "2022-04-01", "--format", "csv", "--sort", "value")
    assert out.exit_code == 0, out.output
    import csv
    import io

    got = {r["entity"]: r for r in csv.DictReader(io.StringIO(out.output))}
    assert list(got) == [MARVELL, TESLA]
    assert got[TESLA]["value"] == "4485000000" and got[TESLA]["period_start"] == "2020-10-01"
    # the filings behind the inputs by the cutoff: FY2020 again in the 10-K for 2021
    assert got[TESLA]["sources"] == ("0000950170-21-002253;0001564590-21-004599;0000950170-22-000796;"
                                     "0001564590-20-047486")
    assert got[TESLA]["note"] == "from 2021-01-01..2021-09-30, 2020-01-01..2020-12-31, 2020-01-01..2020-09-30"
    refused = _cli(migrated, scope, "--ltm", "--attribute", "us-gaap:OperatingIncomeLoss",
                   "--period", "2021-09-30", "--cutoff", "2022-04-01")
    assert refused.exit_code == 2 and "--ltm: an LTM screen takes --frame" in refused.output
    # without --frame (each entity's latest window) the table's first line says so ("for  as of" before)
    latest = _cli(migrated, scope, "--ltm", "--attribute", "us-gaap:OperatingIncomeLoss", "--cutoff", "2022-04-01")
    assert latest.exit_code == 0, latest.output
    assert latest.output.startswith("us-gaap:OperatingIncomeLoss (ltm) for each entity's latest window as of cutoff "
                                    "2022-04-01T23:59:59+00:00")
