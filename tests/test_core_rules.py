"""The core read rule and the writes it reads (DESIGN.md sections 1-5) on the real Neo4j,
where no other test pins them down: every evidence of an active value listed, text the
driver cannot carry refused by name, times at their bounds and in other zones, keys by
unit, definition and period kind, revisions that move with every change of a read.

Publication times are the test's; transaction times are the server's, so a read "known
just before an event" uses the recorded_at the event reports, minus one microsecond.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from test_core import values
from world import FAR, Q1, US, UTC, World, t

from graphmem import Authority, InputError, Memory, Period, Require, Scope, Source
from graphmem.values import parse_time


@pytest.fixture
def w(mem: Memory, scope: Scope) -> World:
    return World(mem, scope, ("acme", "globex"))


def pd_time(day: str):
    import pandas as pd

    return pd.Timestamp(day, tz="UTC")


def source_ids(version) -> list[str]:
    return sorted(e.source_id for e in version.sources)


# ------------------------------------------------------------------ answers and inputs


def test_an_active_value_lists_the_evidence_of_every_version_that_holds_it(w):
    """Step 4 of the read rule: one value left is ``active`` with *all its evidence
    listed*. Two versions can hold the same value - written in one transaction, a
    vendor's figure before the company's earlier filing of it (read at the filing's
    availability, nothing was there yet, so it is a version of its own) - and both
    survive: two publishers. The answer showed the filing's evidence only, so "where did
    this number come from" lost the vendor."""
    vendor = Source(id="vendor", kind="feed", authority=Authority.PRIMARY, publisher="vendor:x",
                    available_by=t("2024-05-02"))
    filing = Source(id="10q", kind="filing", authority=Authority.PRIMARY, publisher="cik:1",
                    available_by=t("2024-05-01"))
    report = w.mem.record(w.scope, sources=[vendor, filing],
                          items=[w.fact_in(Decimal("100"), "vendor"), w.fact_in(Decimal("100.0"), "10q")])
    assert report.created == 2  # the rule's own outcome: two versions of one value

    late = w.read(FAR)
    assert (late.status, late.value) == ("active", Decimal("100"))
    assert late.explain.superseded == 0
    assert source_ids(late.version) == ["10q", "vendor"]
    # before the vendor's figure was public: the filing alone
    assert source_ids(w.read(t("2024-05-02") - US).version) == ["10q"]
    # and a screen's row, built from the same answer, names both
    # the same with versions written one at a time: two inference sources corroborate a
    # figure below a primary one (each a version of its own: the key then held the
    # primary's value); once the primary is invalidated, both stand behind the answer
    w.source("model-a", t("2024-05-03"), authority="inference", publisher="model-a")
    w.source("model-b", t("2024-05-04"), authority="inference", publisher="model-b")
    w.source("filing", t("2024-05-01"), publisher="cik:2")
    primary = w.fact(Decimal("7"), "filing", attribute="employees", unit="")
    a = w.fact(Decimal("8"), "model-a", attribute="employees", unit="")
    b = w.fact(Decimal("8"), "model-b", attribute="employees", unit="")
    assert a.version_id != b.version_id
    w.mem.invalidate(w.scope, primary.version_id, "wrong filing")
    eight = w.read(FAR, attribute="employees", unit="")
    assert (eight.status, eight.value) == ("active", Decimal("8"))
    assert source_ids(eight.version) == ["model-a", "model-b"]
    row = w.mem.screen(w.scope, attribute="revenue", period=Q1, cutoff=FAR, entities=["acme"]).answers[0]
    assert source_ids(row.version) == ["10q", "vendor"]


def test_a_float_refused_is_not_sent_to_a_text_value_by_its_own_advice(w):
    """A float is refused, and the refusal said "pass a Decimal or a string of digits".
    A string is a text value: following that advice stored "1.5" as text, which does not
    compare numerically - the company's Decimal("1.50") then conflicted with it."""
    w.source("vendor", t("2024-05-01"), publisher="vendor")
    w.source("10q", t("2024-05-01"), publisher="cik:1")
    with pytest.raises(InputError) as info:
        w.fact_in(1.5, "vendor")
    assert "Decimal" in info.value.reason
    assert "string of digits" not in info.value.reason
    # what the old advice led to: a text value, and a conflict with the same number
    w.fact("1.5", "vendor")
    w.fact(Decimal("1.50"), "10q")
    assert values(w.read(FAR)) == {"1.5", Decimal("1.5")}


def test_a_text_value_that_is_not_unicode_is_refused_naming_the_value(w):
    """A lone surrogate (a JSON ``\\ud800`` escape, a file name decoded with
    surrogateescape) cannot be sent to Neo4j. It got past the value check and failed
    inside the write with a bare UnicodeEncodeError that named no field."""
    w.source("10q", t("2024-05-01"))
    with pytest.raises(InputError, match="value"):
        w.fact("caf\udce9", "10q", attribute="segment")
    assert w.history(attribute="segment") == []


def test_a_read_argument_that_is_not_unicode_is_refused_by_name(w):
    """The same for a read's arguments: InputError naming the argument, before any query,
    not a UnicodeEncodeError from the driver."""
    with pytest.raises(InputError, match="entity"):
        w.mem.as_of(w.scope, entity="acme\ud800", attribute="revenue", cutoff=FAR)
    with pytest.raises(InputError, match="unit"):
        w.mem.as_of(w.scope, entity="acme", attribute="revenue", unit="\udc00", cutoff=FAR)
    with pytest.raises(InputError, match="attribute"):
        w.mem.history(w.scope, entity="acme", attribute="rev\ud800")


@pytest.mark.parametrize("text, upper", [("2024-01-31T10:00z", "2024-01-31T10:00Z"),
                                         ("2024-01-31t10:00:00.5z", "2024-01-31T10:00:00.5Z"),
                                         ("2024-01-31z", "2024-01-31Z")])
def test_a_cutoff_in_utc_with_a_lower_case_z_is_read_as_utc(text, upper):
    """A cutoff or known_at as text (command line, MCP, web view): RFC 3339 writes UTC
    with a Z or a z. A lower-case t was taken, a lower-case z refused as "not an ISO date
    or datetime"."""
    assert parse_time(text, "--cutoff") == parse_time(upper, "--cutoff")


@pytest.mark.parametrize("when", [
    dt.datetime(1, 1, 1, 0, 30, tzinfo=dt.timezone(dt.timedelta(hours=1))),
    dt.datetime(9999, 12, 31, 23, 30, tzinfo=dt.timezone(-dt.timedelta(hours=1))),
], ids=["year-0-in-utc", "year-10000-in-utc"])
def test_an_available_by_outside_the_years_in_utc_is_refused_naming_it(when):
    """A zoned available_by whose UTC falls outside the years 1 to 9999 raised a bare
    OverflowError from the model, naming no field (Memory's own time arguments go
    through values.aware_utc, which names them)."""
    with pytest.raises(InputError, match="available_by"):
        Source(id="s", kind="filing", authority=Authority.PRIMARY, available_by=when)


# ------------------------------------------------------------------ rules without a test


def test_minus_zero_and_zero_with_any_exponent_are_one_value_and_one_version(w):
    """Values compare numerically: -0, 0.000 and 0E-50 are the same value, so a second
    source saying so is more evidence, not a new version or a conflict."""
    w.source("a", t("2024-05-01"), publisher="cik:1")
    w.source("b", t("2024-05-02"), publisher="vendor")
    w.source("c", t("2024-05-03"), publisher="blog")
    v1 = w.fact(Decimal("-0"), "a")
    v2 = w.fact(Decimal("0.000"), "b")
    v3 = w.fact(Decimal("0E-50"), "c")
    assert v1.version_id == v2.version_id == v3.version_id
    answer = w.read(FAR)
    assert (answer.status, answer.value) == ("active", Decimal("0"))
    assert str(answer.value) == "0" and source_ids(answer.version) == ["a", "b", "c"]


def test_units_and_definitions_are_part_of_the_key(w):
    """A figure in another unit, or under another definition, is another key: never a
    restatement of, or a conflict with, the first."""
    w.source("10q", t("2024-05-01"), publisher="cik:1")
    w.source("10k", t("2025-02-01"), publisher="cik:1")
    usd = w.fact(Decimal("100"), "10q")
    eur = w.fact(Decimal("92"), "10k", unit="EUR")
    adj = w.fact(Decimal("120"), "10k", definition="adjusted")
    assert len({usd.version_id, eur.version_id, adj.version_id}) == 3
    assert w.read(FAR, unit="USD", definition="").value == Decimal("100")
    assert w.read(FAR, unit="EUR").value == Decimal("92")
    assert w.read(FAR, unit="USD", definition="adjusted").value == Decimal("120")
    with pytest.raises(InputError, match="pass period=, unit= or definition="):
        w.read(FAR)


def test_text_and_boolean_values_supersede_and_conflict_by_type_and_text(w):
    """Typed values: a text restated by its publisher supersedes; the boolean true and
    the text "true" are different values, so two publishers saying them conflict."""
    w.source("10q", t("2024-05-01"), publisher="cik:1")
    w.source("10k", t("2025-02-01"), publisher="cik:1")
    w.source("vendor", t("2025-03-01"), publisher="vendor")
    w.fact("Acme Holdings", "10q", attribute="legal_name", unit="")
    w.fact("Acme Holdings, Inc.", "10k", attribute="legal_name", unit="")
    assert w.read(t("2024-06-01"), attribute="legal_name", unit="").value == "Acme Holdings"
    assert w.read(FAR, attribute="legal_name", unit="").value == "Acme Holdings, Inc."

    w.fact(True, "10k", attribute="going_concern", unit="")
    w.fact("true", "vendor", attribute="going_concern", unit="")
    assert w.read(t("2025-02-15"), attribute="going_concern", unit="").value is True
    both = w.read(FAR, attribute="going_concern", unit="")
    assert both.status == "conflicted" and values(both) == {True, "true"}


def test_a_user_correction_outranks_a_later_primary_restatement_until_it_is_invalidated(w):
    """Authority first: a user_correction stays over the company's later restatement (a
    lower authority arriving later does not displace); once it is invalidated, the
    latest primary figure is what remains - and known_at before that still shows it."""
    w.source("10q", t("2024-05-01"), publisher="cik:1")
    w.source("note", t("2024-06-01"), authority="user_correction", publisher="user:ann")
    w.source("10k", t("2025-02-01"), publisher="cik:1")
    w.fact(Decimal("100"), "10q")
    note = w.fact(Decimal("101"), "note")
    w.fact(Decimal("110"), "10k")
    assert w.read(t("2024-06-01") - US).value == Decimal("100")
    late = w.read(FAR)
    assert (late.value, late.version.authority) == (Decimal("101"), Authority.USER_CORRECTION)
    assert late.explain.outranked == 2
    inv_at = w.mem.invalidate(w.scope, note.version_id, "typo in the note").lifecycle[0].recorded_at
    assert w.read(FAR).value == Decimal("110")
    assert w.read(t("2024-12-31")).value == Decimal("100")
    assert w.read(FAR, inv_at - US).value == Decimal("101")


def test_invalidate_then_resolve_to_the_invalidated_value_is_a_new_version(w):
    """A resolution naming an invalidated version and choosing its value makes a new
    user_correction version (the invalidated one stays invalid); known_at before the
    invalidation still shows the conflict, and between the two the survivor alone."""
    w.source("wire-a", t("2024-05-01"))
    w.source("wire-b", t("2024-05-01"))
    a = w.fact(Decimal("100"), "wire-a")
    b = w.fact(Decimal("105"), "wire-b")
    inv_at = w.mem.invalidate(w.scope, a.version_id, "wrong wire").lifecycle[0].recorded_at
    assert w.read(FAR).value == Decimal("105")
    r = w.mem.resolve(w.scope, versions=[a.version_id, b.version_id], value=Decimal("100"),
                      reason="the filing says 100", by="ann")
    assert r.version_id not in (a.version_id, b.version_id)
    res_at = r.recorded_at
    assert (w.read(FAR).value, w.read(FAR).version.version_id) == (Decimal("100"), r.version_id)
    assert w.read(FAR, res_at - US).value == Decimal("105")
    assert w.read(FAR, inv_at - US).status == "conflicted"
    assert w.read(res_at - US).value == Decimal("105")  # an earlier cutoff, known now


def test_a_retraction_known_only_later_counts_from_its_own_recorded_at(w):
    """A withdrawn source: a version whose only evidence it was is gone from the
    retraction's recorded_at on, at every cutoff (the microsecond of the record
    included), and seen by a known_at before it; a version with other live evidence
    stays, listing that evidence alone."""
    w.source("10q", t("2024-05-01"), publisher="cik:1")
    w.source("blog", t("2024-05-01"), publisher="blog")
    w.source("vendor", t("2024-05-03"), publisher="vendor")
    w.fact(Decimal("100"), "10q")
    w.fact(Decimal("100"), "vendor")
    w.fact(Decimal("7"), "blog", attribute="employees", unit="")
    report = w.mem.retract_source(w.scope, "blog", reason="made up")
    assert report is not None
    [at] = [x.recorded_at for x in w.history(attribute="employees")[0].lifecycle]
    for cutoff in (t("2024-05-02"), FAR):
        assert w.read(cutoff, at - US, attribute="employees", unit="").value == Decimal("7")
        gone = w.read(cutoff, at, attribute="employees", unit="")
        assert gone.status == "not_found" and gone.explain.retracted == 1
    withdrawn = w.mem.retract_source(w.scope, "10q", reason="withdrawn")
    kept = w.read(FAR)
    assert kept.value == Decimal("100") and source_ids(kept.version) == ["vendor"]
    assert w.read(t("2024-05-02")).status == "not_found"  # the vendor was not public yet
    # and it is public from the vendor's figure on, not from the filing withdrawn
    assert kept.version.available_by == t("2024-05-03")
    assert withdrawn.known_at is not None  # the retraction's own time
    assert w.read(FAR, withdrawn.known_at - US).version.available_by == t("2024-05-01")


def test_an_answer_is_public_from_its_earliest_evidence_that_counts_in_every_read(w):
    """An answer's available_by is when what it shows became public as read: its
    earliest evidence that counts at (cutoff, known_at) under the requirement. A version
    first made public by a note and then filed keeps the note's time as its own; read
    for filings only, it answers nothing before the filing and, after it, named the
    note's time beside the filing alone - a backtest would have placed the figure a
    month early. The same in a screen, a panel cell and its DataFrame."""
    w.source("note", t("2024-04-01"), publisher="cik:1", kind="note")
    w.source("10q", t("2024-05-01"), publisher="cik:1")
    w.fact(Decimal("100"), "note")
    assert w.fact(Decimal("100"), "10q").version_id == w.read(FAR).version.version_id  # evidence added
    filings = Require(kinds=("filing",))
    assert w.read(FAR).version.available_by == t("2024-04-01")
    assert w.read(t("2024-04-30"), require=filings).status == "not_found"
    read = w.read(FAR, require=filings)
    assert source_ids(read.version) == ["10q"] and read.version.available_by == t("2024-05-01")
    screen = w.mem.screen(w.scope, attribute="revenue", period=Q1, cutoff=FAR, unit="USD", require=filings)
    assert [a.version.available_by for a in screen.answers if a.entity == "acme"] == [t("2024-05-01")]
    panel = w.mem.panel(w.scope, attribute="revenue", frames=["CY2024Q1"], cutoffs=[FAR], unit="USD",
                        entities=["acme"], require=filings)
    assert panel.cell("acme", FAR, "CY2024Q1").available_by == t("2024-05-01")
    pytest.importorskip("pandas")
    assert list(panel.to_pandas()["available_by"]) == [pd_time("2024-05-01")]


def test_far_past_and_far_future_times_and_periods_are_read_at_their_bounds(w):
    """Periods and publication times at the ends of what a datetime holds: stored and
    read back exactly, with the cutoff boundary at the microsecond."""
    first = dt.datetime(1, 1, 1, tzinfo=UTC)
    last = dt.datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)
    w.source("old", first)
    w.source("new", last)
    early = Period(start=dt.date(1, 1, 1), end=dt.date(1, 1, 1))
    late = Period(end=dt.date(9999, 12, 31))
    assert w.fact(Decimal(1), "old", period=early).available_by == first
    assert w.fact(Decimal(2), "new", period=late).available_by == last
    assert w.read(first, period=early).value == Decimal(1)
    assert w.read(last - US, period=late).status == "not_found"
    assert w.read(last, period=late).value == Decimal(2)
    assert w.mem.as_of(w.scope, entity="acme", attribute="revenue", cutoff=last).value == Decimal(2)
    found = w.mem.facts_as_of(w.scope, entity="acme", attribute="revenue", valid_from=dt.date(1, 1, 1),
                              valid_to=dt.date(9999, 12, 31), cutoff=last)
    assert [a.value for a in found] == [Decimal(1), Decimal(2)]


def test_a_resend_in_another_zone_is_the_same_assertion(w):
    """Zoned inputs mean their instant: the same assertion with its available_by given
    in another zone (or left to its source) changes nothing."""
    w.source("10q", t("2024-05-01T16:05"), publisher="cik:1")
    v = w.fact(Decimal("100"), "10q")
    zoned = t("2024-05-01T16:05").astimezone(dt.timezone(dt.timedelta(hours=-4)))
    report = w.mem.assert_facts(w.scope, [w.fact_in(Decimal("100.00"), "10q", available_by=zoned)])
    assert (report.unchanged, report.created, report.evidence_added) == (1, 0, 0)
    assert report.version_ids == (v.version_id,)
    assert len(w.history()[0].sources) == 1


def test_two_writes_of_one_key_in_one_transaction_see_each_other(w):
    """In one transaction (one recorded_at), a later assertion reads what the earlier one
    wrote: the same value from another publisher is evidence; a restatement by the same
    publisher supersedes at its own available_by; a read at the shared recorded_at
    sees all of it, a microsecond before nothing."""
    srcs = [Source(id=i, kind="filing", authority=Authority.PRIMARY, publisher=p, available_by=a)
            for i, p, a in (("10q", "cik:1", t("2024-05-01")), ("vendor", "vendor", t("2024-05-02")),
                            ("10k", "cik:1", t("2025-02-01")))]
    report = w.mem.record(w.scope, sources=srcs, items=[
        w.fact_in(Decimal("100"), "10q"), w.fact_in(Decimal("100"), "vendor"),
        w.fact_in(Decimal("110"), "10k")])
    assert (report.created, report.evidence_added) == (2, 1)
    assert report.version_ids[0] == report.version_ids[1] != report.version_ids[2]
    at = w.history()[0].recorded_at
    assert w.read(FAR, at - US).status == "not_found"
    # the vendor still stands behind 100: two publishers moving apart conflict
    assert values(w.read(FAR, at)) == {Decimal("100"), Decimal("110")}
    assert w.read(t("2024-06-01"), at).value == Decimal("100")


def test_expected_revision_moves_with_an_invalidation(w):
    """An invalidation is a change to the key: a writer holding the revision it read
    before it is refused, and nothing of its write lands."""
    from graphmem import ConcurrentWriteError

    w.source("10q", t("2024-05-01"), publisher="cik:1")
    w.source("10k", t("2025-02-01"), publisher="cik:1")
    v = w.fact(Decimal("100"), "10q", expected_revision=0)
    assert v.revision == 1
    w.mem.invalidate(w.scope, v.version_id, "wrong")
    with pytest.raises(ConcurrentWriteError):
        w.fact(Decimal("110"), "10k", expected_revision=1)
    assert len(w.history()) == 1
    assert w.fact(Decimal("110"), "10k", expected_revision=2).value == Decimal("110")


def test_a_writer_refused_for_a_stale_revision_can_re_read_it_and_write(w):
    """``ConcurrentWriteError`` says "re-read it and decide again". The revision it
    compares with is the key's, which every write, evidence, invalidation and retraction
    moves, while a version's ``revision`` is the key's when the version was made. A
    read gave no other, so a writer holding what graphmem itself answered - even right
    after its own write of a value with two sources - was refused again after every
    re-read. A read of one key says the key's revision (0 before its first write)."""
    from graphmem import ConcurrentWriteError

    w.source("10q", t("2024-05-01"), publisher="cik:1")
    w.source("wire", t("2024-05-01"), publisher="wire:a")
    w.source("10k", t("2025-02-01"), publisher="cik:1")
    w.source("10k-a", t("2025-03-01"), publisher="cik:1")
    assert w.read(FAR).revision == 0
    v = w.fact(Decimal("100"), "10q", "wire", expected_revision=0)  # one write: a version, more evidence
    with pytest.raises(ConcurrentWriteError) as info:
        w.fact(Decimal("110"), "10k", expected_revision=v.revision)
    read = w.read(FAR)
    assert read.revision == info.value.actual == 2 and read.version.revision == v.revision == 1
    restated = w.fact(Decimal("110"), "10k", expected_revision=read.revision)
    w.mem.invalidate(w.scope, restated.version_id, "wrong column")
    after = w.read(FAR)
    assert after.value == Decimal("100") and after.revision == 4
    assert w.fact(Decimal("111"), "10k-a", expected_revision=after.revision).value == Decimal("111")
    assert [h.value for h in w.history()] == [Decimal("100"), Decimal("110"), Decimal("111")]


def test_a_retraction_racing_a_derivation_never_leaves_its_output_live(w):
    """A source withdrawn while an agent derives from a fact only it evidences: whichever
    commits first, nothing derived from the withdrawn fact is live afterwards - the
    derivation is refused (its input is retracted), or recorded and then retracted by
    the retraction's cascade. The two calls are released together, one of them a moment
    later in turn, so that each order is met."""
    import threading
    import time

    met = set()
    for n in range(4):
        w.source(f"wire-{n}", t("2024-05-01"), publisher=f"wire:{n}")
        base = w.fact(Decimal(n + 1), f"wire-{n}", attribute=f"base_{n}")
        both, outcome = threading.Barrier(2), {}

        def derive(n=n, base=base, both=both, outcome=outcome):
            both.wait(timeout=30)
            time.sleep(0.3 * (n % 2))
            try:
                outcome["derive"] = w.mem.derive(
                    w.scope, method="double", method_version="1", params={}, inputs={"x": base.version_id},
                    output=w.fact_in(Decimal(2 * (n + 1)), "wire-0", attribute=f"double_{n}"))
            except InputError as exc:
                outcome["derive"] = exc

        def retract(n=n, both=both, outcome=outcome):
            both.wait(timeout=30)
            time.sleep(0.3 * (1 - n % 2))
            outcome["retract"] = w.mem.retract_source(w.scope, f"wire-{n}", reason="withdrawn")

        threads = [threading.Thread(target=derive), threading.Thread(target=retract)]
        for th in threads:
            th.start()
        for th in threads:
            th.join(timeout=60)
        assert set(outcome) == {"derive", "retract"}, outcome
        if isinstance(outcome["derive"], InputError):
            assert "retracted" in str(outcome["derive"])
        else:
            derived = outcome["derive"].version_id
            assert any(i.id == derived and i.reason == "invalid" for i in outcome["retract"].items)
        met.add(type(outcome["derive"]).__name__)
        assert w.read(FAR, attribute=f"double_{n}").status == "not_found"
        assert w.read(FAR, attribute=f"base_{n}").status == "not_found"
    assert met == {"InputError", "FactVersion"}


def test_a_fact_available_before_its_source_is_refused_naming_the_row(w):
    """available_by is checked: never before the source became public (the microsecond
    before is refused, the same instant in another zone taken)."""
    w.source("10q", t("2024-05-01T16:05"))
    with pytest.raises(InputError, match=r"facts\[0\]\.available_by"):
        w.fact(Decimal("1"), "10q", available_by=t("2024-05-01T16:05") - US)
    same = t("2024-05-01T16:05").astimezone(dt.timezone(dt.timedelta(hours=9)))
    assert w.fact(Decimal("1"), "10q", available_by=same).available_by == t("2024-05-01T16:05")


def test_an_instant_and_a_one_day_duration_are_two_keys_and_a_reversed_period_is_refused(w):
    """Periods: an instant (end only) and a duration of one day ending then are different
    keys; a period whose start is after its end is refused naming the field."""
    w.source("10q", t("2024-05-01"), publisher="cik:1")
    instant = Period(end=dt.date(2024, 3, 31))
    one_day = Period(start=dt.date(2024, 3, 31), end=dt.date(2024, 3, 31))
    a = w.fact(Decimal("1"), "10q", period=instant)
    b = w.fact(Decimal("2"), "10q", period=one_day)
    assert a.version_id != b.version_id and (a.period.days, b.period.days) == (None, 1)
    assert w.read(FAR, period=instant).value == Decimal("1")
    assert w.read(FAR, period=one_day).value == Decimal("2")
    with pytest.raises(InputError, match="after its end"):
        Period(start=dt.date(2024, 4, 1), end=dt.date(2024, 3, 31))


def test_a_resend_after_an_invalidation_changes_nothing_and_a_new_source_is_a_new_version(w):
    """Re-sending the very same assertion changes nothing - also after its version was
    invalidated (it stays gone); the same value from another source is a new version,
    since the key has no value then."""
    w.source("10q", t("2024-05-01"), publisher="cik:1")
    w.source("10q-a", t("2024-05-08"), publisher="cik:1")
    v = w.fact(Decimal("100"), "10q")
    w.mem.invalidate(w.scope, v.version_id, "wrong column")
    again = w.fact(Decimal("100"), "10q")
    assert again.version_id == v.version_id and w.read(FAR).status == "not_found"
    amended = w.fact(Decimal("100"), "10q-a")
    assert amended.version_id != v.version_id
    assert w.read(FAR).version.version_id == amended.version_id
    assert w.read(t("2024-05-08") - US).status == "not_found"


def test_recorded_at_is_the_systems_never_the_inputs(w):
    """Transaction time is set by the system only: an input naming it is refused by
    name, and a version's recorded_at is the server's clock at the write (monotonic:
    later writes are later)."""
    with pytest.raises(InputError, match="recorded_at"):
        Source(id="s", kind="filing", authority=Authority.PRIMARY, available_by=t("2024-05-01"),
               recorded_at=t("2000-01-01"))
    with pytest.raises(InputError, match="recorded_at"):
        w.fact_in(Decimal("1"), "s", recorded_at=t("2000-01-01"))
    w.source("10q", t("2024-05-01"))
    before = w.mem.server_now()
    a = w.fact(Decimal("1"), "10q")
    b = w.fact(Decimal("2"), "10q", attribute="margin")
    assert before <= a.recorded_at < b.recorded_at <= w.mem.server_now()


# ------------------------------------------------------------------ found, not fixed here


def test_expected_revision_moves_with_a_retraction(w):
    """A retraction changes what a key reads as much as an invalidation does (which bumps
    the revision): a writer holding the revision it read before the retraction was
    accepted, deciding on a value the key no longer had."""
    from graphmem import ConcurrentWriteError

    w.source("10q", t("2024-05-01"), publisher="cik:1")
    w.source("10k", t("2025-02-01"), publisher="cik:1")
    v = w.fact(Decimal("100"), "10q", expected_revision=0)
    w.mem.retract_source(w.scope, "10q", reason="withdrawn")
    with pytest.raises(ConcurrentWriteError):
        w.fact(Decimal("110"), "10k", expected_revision=v.revision)


def test_a_read_reports_a_known_at_that_reproduces_it_while_a_write_is_in_flight(w, monkeypatch):
    """A read as recorded now reports the known_at it read at, so that reading again at
    that known_at reproduces it (an audit of what an agent was told). A write takes its
    recorded_at when it takes the tenant's clock, before it commits: a read in between
    does not see it, and reported the time it ran - later than the write's stamp - so the
    same read at the reported known_at, after the commit, answered otherwise. It now
    reports the tenant's last committed transaction time, which a write in flight is after."""
    import threading

    from graphmem import facts

    w.source("10q", t("2024-05-01"))
    written, release = threading.Event(), threading.Event()
    original = facts.write_facts

    def held_open(*args, **kwargs):  # the write is done, its commit not yet
        out = original(*args, **kwargs)
        written.set()
        assert release.wait(30)
        return out

    monkeypatch.setattr(facts, "write_facts", held_open)
    writer = threading.Thread(target=w.fact, args=(Decimal("100"), "10q"))
    writer.start()
    try:
        assert written.wait(30)
        during = w.read(FAR)
        screen = w.mem.screen(w.scope, attribute="revenue", period=Q1, cutoff=FAR, entities=["acme"])
        hits = w.search("revenue", types=["fact"])
    finally:
        release.set()
        writer.join(30)
    assert during.status == "not_found" and w.read(FAR).status == "active"
    assert w.read(FAR, during.known_at).status == "not_found"  # as it was told
    again = w.mem.screen(w.scope, attribute="revenue", period=Q1, cutoff=FAR, entities=["acme"],
                         known_at=screen.known_at)
    assert [a.status for a in again.answers] == [a.status for a in screen.answers] == ["not_found"]
    assert w.search("revenue", types=["fact"], known_at=hits.query.known_at).hits == hits.hits == ()


def test_a_new_assertion_from_a_withdrawn_source_is_refused_and_a_re_send_is_unchanged(w):
    """A withdrawn (retracted) source evidences nothing new: asserting a new value from it
    stored a version no read ever shows, without a word. It is refused by name, with
    nothing of the call written; re-sending what landed before the retraction (a reload)
    stays unchanged."""
    w.source("10q", t("2024-05-01"), publisher="cik:1")
    w.source("8k", t("2024-05-02"), publisher="cik:1")
    first = w.fact(Decimal("100"), "10q")
    w.mem.retract_source(w.scope, "10q", reason="withdrawn")
    with pytest.raises(InputError, match=r"facts\[1\]\.sources: source '10q' was withdrawn \(retracted\)"):
        w.mem.record(w.scope, items=[w.fact_in(Decimal("7"), "8k", attribute="employees", unit=""),
                                     w.fact_in(Decimal("120"), "10q")])
    assert w.read(FAR, attribute="employees", unit="").status == "not_found"  # nothing of the call
    assert [v.value for v in w.history()] == [Decimal("100")]
    again = w.mem.record(w.scope, items=[w.fact_in(Decimal("100"), "10q")])
    assert (again.unchanged, again.created, again.evidence_added) == (1, 0, 0)
    assert w.history()[0].version_id == first.version_id
