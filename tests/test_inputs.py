"""Bad input is refused with an error naming what and where, and nothing is half-written."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from zoneinfo import ZoneInfo

import pytest

from graphmem import Entity, FactIn, InputError, Memory, Period, Require, Scope, Source
from graphmem.models import Rank, SearchHit

UTC = dt.UTC
Q1 = Period(start=dt.date(2024, 1, 1), end=dt.date(2024, 3, 31))
FAR = dt.datetime(2100, 1, 1, tzinfo=UTC)
NAIVE = dt.datetime(2024, 5, 1, 12, 0)


def t(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text).replace(tzinfo=UTC)


def fact(value=Decimal("1"), sources=("s",), entity="acme", attribute="revenue", period=Q1, **kw):
    return FactIn(entity=entity, attribute=attribute, value=value, period=period,
                  sources=sources, unit="USD", **kw)


@pytest.fixture
def ready(mem: Memory, scope: Scope) -> tuple[Memory, Scope]:
    mem.put_entity(scope, Entity(id="acme"))
    mem.record_source(scope, Source(id="s", kind="filing", authority="primary",
                                    available_by=t("2024-05-01")))
    return mem, scope


def _history(mem, scope, attribute="revenue"):
    return mem.history(scope, entity="acme", attribute=attribute)


# ------------------------------------------------------------------ naive datetimes


def test_naive_source_available_by_is_refused_naming_the_field():
    with pytest.raises(InputError) as info:
        Source(id="s", kind="filing", authority="primary", available_by=NAIVE)
    assert info.value.where == "Source.available_by"
    assert "naive" in info.value.reason


def test_naive_fact_available_by_is_refused_naming_the_field():
    with pytest.raises(InputError) as info:
        fact(available_by=NAIVE)
    assert info.value.where == "FactIn.available_by"
    assert "naive" in info.value.reason


@pytest.mark.parametrize("field", ["cutoff", "known_at"])
def test_naive_read_times_are_refused_naming_the_field(ready, field):
    mem, scope = ready
    times = {"cutoff": FAR, "known_at": None, field: NAIVE}
    with pytest.raises(InputError) as info:
        mem.as_of(scope, entity="acme", attribute="revenue", **times)
    assert info.value.where == field
    assert "naive" in str(info.value)
    with pytest.raises(InputError) as info:
        mem.facts_as_of(scope, entity="acme", attribute="revenue", **times)
    assert info.value.where == field


def test_aware_times_in_any_zone_mean_the_same_instant(ready):
    mem, scope = ready
    tokyo = dt.datetime(2024, 5, 2, 9, 0, tzinfo=ZoneInfo("Asia/Tokyo"))  # 2024-05-02T00:00Z
    mem.record_source(scope, Source(id="jp", kind="filing", authority="primary",
                                    available_by=tokyo))
    mem.assert_fact(scope, fact(Decimal("5"), sources=("jp",), attribute="staff"))
    new_york = ZoneInfo("America/New_York")  # UTC-4 in May
    before = dt.datetime(2024, 5, 1, 19, 59, tzinfo=new_york)  # 23:59Z
    after = dt.datetime(2024, 5, 1, 20, 1, tzinfo=new_york)  # 00:01Z
    assert mem.as_of(scope, entity="acme", attribute="staff", cutoff=before).status == "not_found"
    assert mem.as_of(scope, entity="acme", attribute="staff", cutoff=after).value == Decimal("5")
    [h] = _history(mem, scope, "staff")
    assert h.available_by == dt.datetime(2024, 5, 2, tzinfo=UTC)


# ------------------------------------------------------------------ values


@pytest.mark.parametrize("value", [1.5, 0.1, float("nan")])
def test_float_values_are_refused(value):
    with pytest.raises(InputError) as info:
        fact(value)
    assert info.value.where == "FactIn.value"
    assert "float" in info.value.reason


@pytest.mark.parametrize("value", [Decimal("NaN"), Decimal("Infinity"), NAIVE])
def test_non_finite_decimals_and_datetimes_are_refused(value):
    with pytest.raises(InputError) as info:
        fact(value)
    assert info.value.where == "FactIn.value"


def test_a_fact_needs_a_source(ready):
    mem, scope = ready
    with pytest.raises(InputError) as info:
        mem.assert_facts(scope, [fact(attribute="x"), fact(sources=())])
    assert info.value.where == "facts[1].sources"
    assert _history(mem, scope, "x") == []


def test_a_period_must_be_ordered():
    with pytest.raises(InputError, match="after its end"):
        Period(start=dt.date(2024, 4, 1), end=dt.date(2024, 3, 31))


# ------------------------------------------------------------------ unknown names


def test_unknown_source_is_refused_naming_row_and_field(ready):
    mem, scope = ready
    with pytest.raises(InputError) as info:
        mem.assert_fact(scope, fact(sources=("s", "nope")))
    assert info.value.where == "facts[0].sources"
    assert "'nope'" in str(info.value)
    assert _history(mem, scope) == []


def test_unknown_entity_is_refused_naming_row_and_field(ready):
    mem, scope = ready
    with pytest.raises(InputError) as info:
        mem.assert_fact(scope, fact(entity="ghost"))
    assert info.value.where == "facts[0].entity"
    assert "'ghost'" in str(info.value)
    assert mem.history(scope, entity="ghost", attribute="revenue") == []


def test_entity_and_source_of_another_tenant_are_unknown_here(ready, mem):
    _, scope = ready
    other = Scope(tenant=f"{scope.tenant}-b")
    mem.put_entity(other, Entity(id="x"))
    with pytest.raises(InputError, match=r"facts\[0\]\.sources"):
        mem.assert_fact(other, fact(entity="x"))  # source "s" lives in the first tenant only
    with pytest.raises(InputError, match=r"facts\[0\]\.entity"):
        mem.assert_fact(scope, fact(entity="x"))  # entity "x" lives in the other tenant only


def test_available_by_before_the_source_is_refused(ready):
    mem, scope = ready
    with pytest.raises(InputError) as info:
        mem.assert_fact(scope, fact(available_by=t("2024-04-30")))
    assert info.value.where == "facts[0].available_by"
    assert _history(mem, scope) == []


def test_re_recording_a_source_with_other_fields_is_refused(ready):
    mem, scope = ready
    same = Source(id="s", kind="filing", authority="primary", available_by=t("2024-05-01"))
    assert mem.record_source(scope, same) is False
    with pytest.raises(InputError, match="'s'"):
        mem.record_source(scope, same.model_copy(update={"available_by": t("2024-06-01")}))


# ------------------------------------------------------------------ batches


def test_a_bad_row_leaves_nothing_of_its_batch(ready):
    mem, scope = ready
    rows = [
        fact(Decimal("1"), attribute="a"),
        fact(Decimal("2"), attribute="b"),
        fact(Decimal("3"), attribute="c", sources=("missing",)),
        fact(Decimal("4"), attribute="d"),
    ]
    with pytest.raises(InputError) as info:
        mem.assert_facts(scope, rows)
    assert info.value.where == "facts[2].sources"
    for attribute in "abcd":
        assert _history(mem, scope, attribute) == [], attribute
    # fixed, the same batch loads whole
    rows[2] = fact(Decimal("3"), attribute="c")
    report = mem.assert_facts(scope, rows)
    assert (report.rows, report.created, report.chunks) == (4, 4, 1)


@pytest.fixture
def small_chunks(migrated, ready):
    _, scope = ready
    with migrated.connect(chunk_size=2) as mem:
        yield mem, scope


def _five_rows_bad_fourth():
    rows = [fact(Decimal(i), attribute=f"a{i}") for i in range(5)]
    rows[3] = fact(Decimal(3), attribute="a3", sources=("missing",))
    return rows


def test_a_bad_row_leaves_nothing_of_its_chunk_and_earlier_chunks_stay(small_chunks):
    mem, scope = small_chunks
    with pytest.raises(InputError):
        mem.assert_facts(scope, _five_rows_bad_fourth())
    present = {a: len(_history(mem, scope, a)) for a in ("a0", "a1", "a2", "a3", "a4")}
    # chunk 1 (rows 0-1) committed; chunk 2 (rows 2-3) left nothing; chunk 3 never ran
    assert present == {"a0": 1, "a1": 1, "a2": 0, "a3": 0, "a4": 0}
    # resumable: re-sending the whole fixed batch creates only what is missing
    rows = _five_rows_bad_fourth()
    rows[3] = fact(Decimal(3), attribute="a3")
    report = mem.assert_facts(scope, rows)
    assert (report.created, report.unchanged, report.chunks) == (3, 2, 3)


def test_a_bad_row_in_a_later_chunk_is_named_by_its_row_in_the_batch(small_chunks):
    """The caller's row 3 must be reported as facts[3], not as its index inside its chunk."""
    mem, scope = small_chunks
    with pytest.raises(InputError) as info:
        mem.assert_facts(scope, _five_rows_bad_fourth())
    assert info.value.where == "facts[3].sources", str(info.value)


def test_a_flag_given_as_text_is_refused_not_taken_for_true(ready):
    """``replace="no"`` was truthy: the entity recorded first was overwritten by the very
    call that asked to leave it as it was."""
    mem, scope = ready
    mem.put_entity(scope, Entity(id="acme", name="Acme Corp"))
    with pytest.raises(InputError) as info:
        mem.put_entity(scope, Entity(id="acme", name="Someone else"), replace="no")
    assert info.value.where == "replace"
    assert mem.entity(scope, "acme").name == "Acme Corp"


def test_a_search_names_each_memory_type_once_in_what_a_context_records(ready):
    """``types`` was kept as given, so ``["fact"] * 100_000`` (a list with no bound) was sent
    to the server and written into the context snapshot's query, 800 kB of one word; the
    types are a choice among three, named once each."""
    mem, scope = ready
    mem.assert_fact(scope, fact())
    found = mem.search(scope, text="acme", types=["fact"] * 100_000 + ["task_state", "fact"])
    assert found.query.types == ("fact", "task_state") and found.status == "found"
    context = mem.build_context(scope, task_id="T", memories=found, token_budget=1000)
    assert mem.context_snapshot(scope, context.snapshot_id).query.types == ("fact", "task_state")


def _hit(memory_id: str) -> SearchHit:
    return SearchHit(type="experience", memory_id=memory_id, memory_ids=(memory_id,), status="active",
                     rank=Rank(position=1, authority=None, text_score=0.0, text_norm=0.0, recency_days=0.0,
                               why="made by hand"))


@pytest.mark.parametrize("memory_id", ["exp_\ud800", "exp_" + "x" * 3000], ids=["lone surrogate", "3,004 bytes"])
def test_a_hand_made_hits_id_is_held_to_an_ids_bound_before_any_query(ready, memory_id):
    """A hit's memory id is an id passed back (2,048 bytes, text UTF-8 can carry): one with
    a lone surrogate failed in the driver as a UnicodeEncodeError, one of any length was
    sent to the server and echoed whole in the refusal."""
    mem, scope = ready
    with pytest.raises(InputError) as info:
        mem.build_context(scope, task_id="T", memories=[_hit(memory_id)], token_budget=100,
                          cutoff=FAR, known_at=FAR)
    assert info.value.where == "memories[0].memory_id" and len(str(info.value)) < 300
    assert mem.context_snapshots(scope) == []


def test_an_evidence_requirement_of_no_kind_is_refused_not_read_as_nothing(ready):
    """``Require(kinds=())`` asked for evidence of no kind: every read under it was
    ``not_found`` (an active fact included), where the caller meant "any kind" - kinds left
    out - or forgot to name one. Each read refuses it as its ``require`` argument."""
    mem, scope = ready
    mem.assert_fact(scope, fact())
    assert mem.as_of(scope, entity="acme", attribute="revenue", cutoff=FAR,
                     require=Require(kinds=("filing",))).status == "active"
    none = Require(kinds=())
    for read in (lambda: mem.as_of(scope, entity="acme", attribute="revenue", cutoff=FAR, require=none),
                 lambda: mem.facts_as_of(scope, entity="acme", cutoff=FAR, require=none),
                 lambda: mem.screen(scope, attribute="revenue", period=Q1, cutoff=FAR, require=none),
                 lambda: mem.panel(scope, attribute="revenue", frames=["CY2024Q1"], cutoffs=[FAR], require=none),
                 lambda: mem.search(scope, text="acme", require=none)):
        with pytest.raises(InputError) as info:
            read()
        assert info.value.where == "require" and "kinds=()" in info.value.reason


def test_a_scope_key_without_a_name_is_refused_as_the_command_line_refuses_it(migrated):
    """``Scope(tenant="t", **{"": "v"})`` was a scope of its own - written to, read from -
    that the command line cannot name (``--scope =v`` is refused: expected KEY=VALUE) and
    a LangGraph store cannot map to; a key's name is an identifier like its value."""
    with pytest.raises(InputError) as info:
        Scope(tenant="t", **{"": "v"})
    assert info.value.where == "Scope" and "name" in info.value.reason
    assert Scope(tenant="t", project="v").keys() == {"project": "v"}
