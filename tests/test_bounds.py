"""Every input has a bound, checked before anything is written (issue 13, section 4).

Three kinds of test:
- each bound of the input models, refused with an InputError naming the model and field,
  and the value just inside it accepted;
- each bound on a ``Memory`` call's own arguments, refused naming the argument by a
  Memory whose server does not exist (a query would fail with another error: the check
  ran before any);
- the bounds against the real server: values at the limits of every indexed identifier
  are stored and read back (the bounds sit below Neo4j's index key limit), a search of
  the most terms allowed runs (below Lucene's clause limit), and the files and command
  line that used to crash or half-load now fail with one line naming the place.
"""

from __future__ import annotations

import datetime as dt
import itertools
import json
import os
import random
import subprocess
import sys
import time
from decimal import Decimal
from pathlib import Path
from typing import Any

import neo4j
import pytest
from graphmem.loaders import kpi
from world import Q1, World, t

from graphmem import (
    Entity,
    ExperienceIn,
    FactIn,
    InputError,
    Memory,
    Period,
    Require,
    RetryPolicy,
    Scope,
    Source,
    TaskStateIn,
    limits,
    values,
)
from graphmem.errors import UnavailableError

FIXTURES = Path(__file__).parent / "fixtures"
KPI = FIXTURES / "kpi-pypl-shop.csv"
LPA = FIXTURES / "companyfacts-CIK0001997711-lpa.json"
AT = dt.datetime(2024, 5, 1, tzinfo=dt.UTC)
ID = limits.IDENTIFIER_BYTES
TEXT = limits.TEXT_BYTES
EMPTY = {"entities": 0, "sources": 0, "derivations": 0, "keys": 0, "versions": 0, "evidence": 0}


def over(limit: int, char: str = "x") -> str:
    """A text one byte over ``limit`` bytes of UTF-8 (whole characters)."""
    width = len(char.encode())
    return char * (limit // width + 1)


def at(limit: int, char: str = "x") -> str:
    """A text of exactly ``limit`` bytes of UTF-8 (``limit`` divisible by its width)."""
    return char * (limit // len(char.encode()))


def fact(**kw: Any) -> FactIn:
    return FactIn(**{"entity": "acme", "attribute": "revenue", "value": 1, "period": Q1,
                     "sources": ("s",), **kw})


def source(**kw: Any) -> Source:
    return Source(**{"id": "s", "kind": "filing", "authority": "primary", "available_by": AT,
                     **kw})


# ---------------------------------------------------------------- the models


MODEL_BOUNDS = {  # a model built with one field past its bound -> where the error points
    "fact value 1e100000000": (lambda: fact(value=Decimal("1e100000000")), "FactIn.value"),
    "fact value 5,000-digit int": (lambda: fact(value=10**5000), "FactIn.value"),
    "fact value 1e5000": (lambda: fact(value=Decimal("1e5000")), "FactIn.value"),
    "fact value 1e-400": (lambda: fact(value=Decimal("-1e-400")), "FactIn.value"),
    "fact value beyond a double": (lambda: fact(value=Decimal("1.8e308")), "FactIn.value"),
    "fact value 65 digits": (lambda: fact(value=Decimal("1" * 65)), "FactIn.value"),
    "fact text value": (lambda: fact(value=over(TEXT)), "FactIn.value"),
    "fact entity": (lambda: fact(entity=over(ID)), "FactIn.entity"),
    "fact attribute": (lambda: fact(attribute=over(ID, "é")), "FactIn.attribute"),
    "fact unit": (lambda: fact(unit=over(ID)), "FactIn.unit"),
    "fact definition": (lambda: fact(definition=over(ID, "€")), "FactIn.definition"),
    "fact source id": (lambda: fact(sources=("s", over(ID))), "FactIn.sources[1]"),
    "fact sources": (lambda: fact(sources=tuple(f"s{i}" for i in range(257))), "FactIn.sources"),
    "entity id": (lambda: Entity(id=over(ID)), "Entity.id"),
    "entity name": (lambda: Entity(id="e", name=over(TEXT)), "Entity.name"),
    "entity kind": (lambda: Entity(id="e", kind=over(ID)), "Entity.kind"),
    "entity alias": (lambda: Entity(id="e", aliases=("A", over(ID))), "Entity.aliases[1]"),
    "entity aliases": (lambda: Entity(id="e", aliases=("A",) * 257), "Entity.aliases"),
    "source id": (lambda: source(id=over(ID, "😀")), "Source.id"),
    "source kind": (lambda: source(kind=over(ID)), "Source.kind"),
    "source publisher": (lambda: source(publisher=over(ID)), "Source.publisher"),
    "source uri": (lambda: source(uri=over(TEXT)), "Source.uri"),
    "source title": (lambda: source(title=over(TEXT)), "Source.title"),
    "source meta value": (lambda: source(meta={"k": over(TEXT)}), "Source.meta.k"),
    "source meta": (lambda: source(meta={f"k{i}": "v" * 60_000 for i in range(20)}),
                    "Source.meta"),
    "tenant": (lambda: Scope(tenant=over(limits.TENANT_BYTES)), "Scope.tenant"),
    "scope keys": (lambda: Scope(tenant="t", **{f"k{i}": "v" for i in range(17)}), "Scope"),
    "scope": (lambda: Scope(tenant="t", project=over(limits.SCOPE_BYTES)), "Scope"),
    "experience trigger": (lambda: ExperienceIn(trigger=over(TEXT)), "ExperienceIn.trigger"),
    "experience step": (lambda: ExperienceIn(trigger="t", procedure=("a", over(TEXT))),
                        "ExperienceIn.procedure[1]"),
    "experience steps": (lambda: ExperienceIn(trigger="t", procedure=("a",) * 257),
                         "ExperienceIn.procedure"),
    "experience outcome": (lambda: ExperienceIn(trigger="t", outcome=over(TEXT)),
                           "ExperienceIn.outcome"),
    "experience evidence": (lambda: ExperienceIn(trigger="t", evidence=(over(ID),)),
                            "ExperienceIn.evidence[0]"),
    "experience event id": (lambda: ExperienceIn(trigger="t", event_id=over(ID)),
                            "ExperienceIn.event_id"),
    "task id": (lambda: TaskStateIn(task_id=over(ID), goal="g"), "TaskStateIn.task_id"),
    "task goal": (lambda: TaskStateIn(goal=over(TEXT)), "TaskStateIn.goal"),
    "task checkpoint": (lambda: TaskStateIn(goal="g", checkpoint=over(TEXT)),
                        "TaskStateIn.checkpoint"),
    "task open item": (lambda: TaskStateIn(goal="g", open_items=(over(TEXT),)),
                       "TaskStateIn.open_items[0]"),
    "task artifact": (lambda: TaskStateIn(goal="g", artifact_refs=(over(ID),)),
                      "TaskStateIn.artifact_refs[0]"),
    "require kinds": (lambda: Require(kinds=("10-K",) * 257), "Require.kinds"),
    "nested period": (lambda: fact(period={"start": "2024-04-01", "end": "2024-03-31"}),
                      "FactIn.period"),
    "copy past a bound": (lambda: fact().model_copy(update={"attribute": over(ID)}),
                          "FactIn.attribute"),
    "validate past a bound": (lambda: FactIn.model_validate(
        {"entity": over(ID), "attribute": "a", "value": 1, "period": {"end": "2024-03-31"}}),
        "FactIn.entity"),
}


@pytest.mark.parametrize("case", list(MODEL_BOUNDS))
def test_a_model_field_past_its_bound_is_refused_naming_it(case):
    build, where = MODEL_BOUNDS[case]
    with pytest.raises(InputError) as info:
        build()
    assert info.value.where == where
    assert len(str(info.value)) < 300  # one readable line, not the input echoed back


def test_values_just_inside_the_bounds_are_accepted():
    assert fact(attribute=at(ID, "é")).attribute == at(ID, "é")
    assert fact(value=Decimal("9" * 64)).value == Decimal("9" * 64)
    assert fact(value=Decimal("1" + "0" * 300)).value == Decimal(10) ** 300  # 1 digit
    assert fact(value=Decimal("1.7976931348623157e308")).value
    assert fact(value=Decimal("-1e-308")).value
    assert fact(value=at(TEXT, "€")).value == at(TEXT, "€")
    assert Scope(tenant=at(limits.TENANT_BYTES, "😀")).tenant
    assert len(source(meta={f"k{i}": "v" * 60_000 for i in range(17)}).meta) == 17
    assert len(Entity(id="e", aliases=("A",) * 256).aliases) == 256
    # a zero is within bounds whatever its exponent, and is stored as 0, not as the
    # 100,000,001 characters its fixed-point text would have
    assert values.encode(fact(value=Decimal("0E-100000000")).value) == ("decimal", "0", 0.0)


# ---------------------------------------------------------------- Memory's arguments


DEAD = "bolt://127.0.0.1:9"  # nothing listens there


@pytest.fixture
def dead() -> Memory:
    """A Memory whose server does not exist: any query raises ServiceUnavailable."""
    with Memory.connect(DEAD, retry=RetryPolicy(attempts=1, seconds=1)) as m:
        yield m


S = Scope(tenant="t")


def derive(m: Memory, **kw: Any) -> Any:
    return m.derive(S, **{"method": "m", "method_version": "1", "params": {}, "inputs": {"x": "fv_x"},
                          "output": fact(), **kw})


CALL_BOUNDS = {  # a call with one argument past its bound -> the argument it names
    "as_of entity": (lambda m: m.as_of(S, entity=over(ID), attribute="a", cutoff=AT), "entity"),
    "as_of attribute": (lambda m: m.as_of(S, entity="e", attribute=over(ID), cutoff=AT),
                        "attribute"),
    "as_of unit": (lambda m: m.as_of(S, entity="e", attribute="a", unit=over(ID), cutoff=AT),
                   "unit"),
    "as_of period": (lambda m: m.as_of(S, entity="e", attribute="a", period="2024-03-31",
                                       cutoff=AT), "period"),
    "facts_as_of attribute": (lambda m: m.facts_as_of(S, attribute=over(ID), cutoff=AT),
                              "attribute"),
    "history entity": (lambda m: m.history(S, entity=over(ID), attribute="a"), "entity"),
    "source id": (lambda m: m.source(S, over(ID)), "source_id"),
    "entity id": (lambda m: m.entity(S, over(ID)), "entity_id"),
    "versions ids": (lambda m: m.versions(S, ["fv_x"] * 10_001), "version_ids"),
    "versions id": (lambda m: m.versions(S, [over(ID)]), "version_ids[0]"),
    "versions as text": (lambda m: m.versions(S, "fv_x"), "version_ids"),
    "memories ids": (lambda m: m.memories(S, [over(ID)]), "memory_ids[0]"),
    "invalidate reason": (lambda m: m.invalidate(S, "fv_x", over(TEXT)), "reason"),
    "invalidate version": (lambda m: m.invalidate(S, over(ID), "wrong"), "version_id"),
    "resolve value": (lambda m: m.resolve(S, versions=["fv_x"], value=Decimal("1e5000"),
                                          reason="r", by="me"), "value"),
    "resolve by": (lambda m: m.resolve(S, versions=["fv_x"], value=1, reason="r",
                                       by=over(limits.NAME_BYTES)), "by"),
    "erase reason": (lambda m: m.erase(S, entity="e", reason=over(TEXT)), "reason"),
    "erase source": (lambda m: m.erase(S, source_id=over(ID), reason="r"), "source_id"),
    "derive method": (lambda m: m.derive(S, method=over(limits.NAME_BYTES), method_version="1",
                                         params={}, inputs={"x": "fv_x"}, output=fact()),
                      "method"),
    "derive params": (lambda m: m.derive(S, method="m", method_version="1",
                                         params={"p": over(TEXT)}, inputs={"x": "fv_x"},
                                         output=fact()), "params"),
    "derive inputs": (lambda m: m.derive(S, method="m", method_version="1", params={},
                                         inputs={"x": ["fv_x"] * 10_001}, output=fact()),
                      "inputs"),
    "impact depth": (lambda m: m.impact(S, source_id="s", max_depth=-1), "max_depth"),
    "lineage version": (lambda m: m.lineage(S, over(ID)), "version_id"),
    "retract reason": (lambda m: m.retract_source(S, "s", reason=over(TEXT)), "reason"),
    "approve candidate": (lambda m: m.approve(S, over(ID), by="me"), "candidate_id"),
    "reject reason": (lambda m: m.reject(S, "cand_x", over(TEXT)), "reason"),
    "search text": (lambda m: m.search(S, text=over(limits.SEARCH_TEXT_BYTES)), "text"),
    "search 100 kB": (lambda m: m.search(S, text="word " * 20_000), "text"),
    "search terms": (lambda m: m.search(S, text=" ".join(f"w{i}" for i in range(257))),
                     "text"),
    "search entity": (lambda m: m.search(S, text="x", entity=over(ID)), "entity"),
    "search limit": (lambda m: m.search(S, text="x", limit=1001), "limit"),
    "context budget": (lambda m: m.build_context(S, task_id="T", memories=[],
                                                 token_budget=limits.TOKEN_BUDGET + 1),
                       "token_budget"),
    "context task": (lambda m: m.build_context(S, task_id=over(ID), memories=[],
                                               token_budget=100), "task_id"),
    "context memories": (lambda m: m.build_context(S, task_id="T", memories=[None] * 1001,
                                                   token_budget=100), "memories"),
    "snapshot id": (lambda m: m.context_snapshot(S, over(ID)), "snapshot_id"),
    "trace memory": (lambda m: m.trace(S, "ctx_x", over(ID)), "memory_id"),
    "assert_fact revision": (lambda m: m.assert_fact(S, fact(), expected_revision=-1),
                             "expected_revision"),
    "assert_fact type": (lambda m: m.assert_fact(S, {"entity": "e"}), "fact"),
    "assert_facts item": (lambda m: m.assert_facts(S, [fact(), "row"]), "facts[1]"),
    "record items": (lambda m: m.record(S, items=[fact()] * (limits.RECORD_ITEMS + 1)),
                     "items"),
    "record sources": (lambda m: m.record(S, sources=[source()] * (limits.RECORD_SOURCES + 1)),
                       "sources"),
    "put_entity type": (lambda m: m.put_entity(S, "acme"), "entity"),
    # an argument of the wrong type: a TypeError from inside the call, or a write
    "record items None": (lambda m: m.record(S, items=None), "items"),
    "record items int": (lambda m: m.record(S, items=5), "items"),
    "record sources None": (lambda m: m.record(S, sources=None), "sources"),
    "assert_facts None": (lambda m: m.assert_facts(S, None), "items"),
    "assert_facts int": (lambda m: m.assert_facts(S, 5), "items"),
    "derive input None": (lambda m: derive(m, inputs={"x": None}), "inputs['x']"),
    "derive input int": (lambda m: derive(m, inputs={"x": 5}), "inputs['x']"),
    "derive input dict": (lambda m: derive(m, inputs={"x": {"fv_x": 1}}), "inputs['x']"),
    "derive params None": (lambda m: derive(m, params=None), "params"),
    "derive params str": (lambda m: derive(m, params="x"), "params"),
    "derive params list": (lambda m: derive(m, params=[1, 2]), "params"),
    "impact neither": (lambda m: m.impact(S), "impact"),
    "impact both": (lambda m: m.impact(S, source_id="s", version_id="fv_x"), "impact"),
    "lineage direction": (lambda m: m.lineage(S, "fv_x", direction="sideways"), "direction"),
    "lineage direction int": (lambda m: m.lineage(S, "fv_x", direction=5), "direction"),
    "derive params NaN": (lambda m: derive(m, params={"p": float("nan")}), "params"),  # no JSON holds it
    "search types int": (lambda m: m.search(S, text="x", types=5), "types"),
    # a RecursionError from json.dumps; a TypeError from sorting roles of two types
    "derive params nested": (lambda m: derive(m, params={"p": _nested(10_000)}), "params"),
    "derive input roles of two types": (lambda m: derive(m, inputs={"x": "fv_x", 1: "fv_y"}), "inputs"),
    # a flag given as text was taken for True: replace="no" overwrote the entity
    "put_entity replace text": (lambda m: m.put_entity(S, Entity(id="e"), replace="no"), "replace"),
    "entity erased text": (lambda m: m.entity(S, "e", erased="no"), "erased"),
    "embed switch text": (lambda m: m.embed(S, embedder=lambda texts: [[1.0] for _ in texts], switch="no"),
                          "switch"),
    # checked only by a search by meaning: a text search ran with it
    "search unembedded": (lambda m: m.search(S, text="x", unembedded="sometimes"), "unembedded"),
    "search types unknown": (lambda m: m.search(S, text="x", types=["facts"] * 100_000), "types"),  # 900 kB
    # a long text refused was echoed whole (a megabyte of error message)
    "lineage direction long": (lambda m: m.lineage(S, "fv_x", direction="x" * 1_000_000), "direction"),
    "search mode long": (lambda m: m.search(S, text="x", mode="x" * 1_000_000), "mode"),
    "search unembedded long": (lambda m: m.search(S, text="x", unembedded="x" * 1_000_000), "unembedded"),
    "screen sort long": (lambda m: m.screen(S, attribute="a", frame="CY2024", cutoff=AT, sort="x" * 1_000_000),
                         "sort"),
    "screen frame long": (lambda m: m.screen(S, attribute="a", frame="x" * 1_000_000, cutoff=AT), "frame"),
    "panel latest long": (lambda m: m.panel(S, attribute="a", latest="x" * 1_000_000, cutoffs=[AT]), "latest"),
    "period text long": (lambda m: Period.parse("x" * 1_000_000), "period"),
    "put_entity replace 5,000 digits": (lambda m: m.put_entity(S, Entity(id="e"), replace=10**5000), "replace"),
    # an int too long for Python's text: its repr() in the refusal raised a ValueError
    "search limit 5,000 digits": (lambda m: m.search(S, text="x", limit=10**5000), "limit"),
    "impact depth 5,000 digits": (lambda m: m.impact(S, source_id="s", max_depth=-10**5000), "max_depth"),
    "context budget 5,000 digits": (lambda m: m.build_context(S, task_id="T", memories=[],
                                                              token_budget=10**5000), "token_budget"),
    "snapshots offset 5,000 digits": (lambda m: m.context_snapshots(S, offset=10**5000), "offset"),
    "assert_fact revision 5,000 digits": (lambda m: m.assert_fact(S, fact(), expected_revision=10**5000),
                                          "expected_revision"),
    # distinct items were bounded, not items given: an endless iterator of one value never ended
    "panel cutoffs endless": (lambda m: m.panel(S, attribute="a", latest="quarter", cutoffs=itertools.repeat(AT)),
                              "cutoffs"),
    "panel frames endless": (lambda m: m.panel(S, attribute="a", frames=itertools.repeat("CY2024Q1"),
                                               cutoffs=[AT]), "frames"),
    "screen entities endless": (lambda m: m.screen(S, attribute="a", frame="CY2024", cutoff=AT,
                                                   entities=itertools.repeat("e")), "entities"),
}


def _nested(depth: int) -> list[Any]:
    """A list nested ``depth`` deep (two bytes of JSON text a level)."""
    outer: list[Any] = []
    inner = outer
    for _ in range(depth):
        inner.append([])
        inner = inner[0]
    return outer


@pytest.mark.parametrize("case", list(CALL_BOUNDS))
def test_a_call_argument_past_its_bound_is_refused_before_any_query(dead, case):
    call, where = CALL_BOUNDS[case]
    with pytest.raises(InputError) as info:
        call(dead)
    assert info.value.where == where
    assert len(str(info.value)) < 300


def test_a_chunk_size_past_its_bound_is_refused():
    driver = neo4j.GraphDatabase.driver("bolt://127.0.0.1:9")
    try:
        for size in (limits.CHUNK_SIZE + 1, 10**5000):  # the second's repr() raised a ValueError
            with pytest.raises(InputError, match="chunk_size"):
                Memory(driver, chunk_size=size)
    finally:
        driver.close()


# ---------------------------------------------------------------- against the server


def test_identifiers_at_their_bounds_are_stored_and_read_back(mem):
    """Tenant, entity and attribute share one index key: at their bounds, in four-byte
    characters, they still fit Neo4j's 8,167 bytes (9,000 characters used to fail there,
    on the server, after earlier work)."""
    scope = Scope(tenant="t" + at(limits.TENANT_BYTES - 4, "😀") + "abc",
                  project=at(limits.SCOPE_BYTES // 2, "p"))
    entity, attribute = at(ID, "😀"), at(ID, "€")[:-1] + "x"
    source_id, task_id = at(ID, "é"), at(ID, "😀")
    w = World(mem, scope, entities=())
    mem.put_entity(scope, Entity(id=entity, name=at(TEXT, "é")))
    w.source(source_id, t("2024-05-01"), title=at(TEXT, "x"))
    value = Decimal("-" + "9" * 64 + "e+244")  # 64 digits, leading digit at 10^307
    v = mem.assert_fact(scope, FactIn(entity=entity, attribute=attribute, value=value,
                                      period=Q1, sources=(source_id,), unit=at(ID, "u"),
                                      definition=at(ID, "d")))
    answer = mem.as_of(scope, entity=entity, attribute=attribute, cutoff=t("2025-01-01"))
    assert answer.status == "active" and answer.value == value == v.value
    task = mem.save_task_state(scope, TaskStateIn(task_id=task_id, goal="g"))
    assert task.status == "live" and task.task_state.task_id == task_id
    cand = mem.remember_fact(scope, FactIn(entity=entity, attribute="a", value=1, period=Q1))
    assert cand.status == "candidate"  # Candidate(tenant, scope) is indexed too
    assert mem.candidates(scope)[0].id == cand.id


def test_a_search_of_the_most_terms_allowed_runs(mem, scope):
    w = World(mem, scope)
    w.source("10q", t("2024-05-01"))
    w.fact(Decimal("100"), "10q")
    # plain words (no digit, not in capitals): optional with match="any"
    words = " ".join("q" + chr(97 + i // 26) + chr(97 + i % 26)
                     for i in range(limits.SEARCH_TERMS - 1))
    assert w.search(words + " acme", match="any").status == "found"
    with pytest.raises(InputError, match="at most 256"):
        w.search(words + " acme extra", match="any")


def test_a_value_that_bypassed_the_model_is_refused_where_it_is_encoded(mem, scope):
    """``model_construct`` skips validation; the write path's encoding checks the value
    again, and the transaction leaves nothing of the batch."""
    w = World(mem, scope)
    w.source("10q", t("2024-05-01"))
    good = [w.fact_in(Decimal(i), "10q", attribute=f"a{i}") for i in range(3)]
    bad = FactIn.model_construct(**{**dict(good[0]), "attribute": "bad",
                                    "value": Decimal("1e100000000")})
    with pytest.raises(InputError, match="magnitude"):
        mem.record(scope, items=[*good, bad])
    assert mem.counts(scope)["versions"] == 0


# ---------------------------------------------------------------- files and command line


def _kpi(tmp_path: Path, text: str, name: str = "kpi.csv", bom: bool = False) -> Path:
    path = tmp_path / name
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + text.encode())
    return path


def test_a_kpi_table_with_a_byte_order_mark_loads_like_one_without(mem, scope, tmp_path):
    with_bom = kpi.load(mem, scope, _kpi(tmp_path, KPI.read_text(), bom=True))
    assert with_bom.versions_created == 27
    again = kpi.load(mem, scope, KPI)
    assert again.unchanged == 27 and again.versions_created == 0


@pytest.mark.parametrize(("old", "new", "columns"), [
    (",value,", ",value,value,", "8 and 9"),
    (",value,", ",value, Value ,", "8 and 9"),
    ("ticker,", "ticker,TICKER,", "1 and 2"),
], ids=["value twice", "value in another case", "ticker twice"])
def test_a_kpi_table_naming_a_column_twice_is_refused(mem, scope, tmp_path, old, new, columns):
    lines = KPI.read_text().splitlines()
    header = lines[0].replace(old, new, 1)
    extra = new.count(",") - old.count(",")
    rows = [line + "," * extra for line in lines[1:]]  # as many fields as the header
    path = _kpi(tmp_path, "\n".join([header, *rows]) + "\n")
    with pytest.raises(InputError) as info:
        kpi.load(mem, scope, path)
    assert info.value.where == f"{path}: header" and f"columns {columns}" in info.value.reason
    assert mem.counts(scope) == EMPTY


@pytest.mark.parametrize(("old", "new", "where"), [
    (",GrossMerchandiseVolume,", "," + "G" * 9000 + ",", "FactIn.attribute"),
    (",92013000000,", "," + "9" * 70 + ",", "FactIn.value"),
], ids=["9,000-character concept", "70-digit value"])
def test_a_kpi_row_past_a_bound_is_refused_naming_the_row(mem, scope, tmp_path, old, new,
                                                          where):
    lines = KPI.read_text().splitlines(keepends=True)
    lines[25] = lines[25].replace(old, new, 1)
    path = _kpi(tmp_path, "".join(lines))
    with pytest.raises(InputError) as info:
        kpi.load(mem, scope, path)
    assert info.value.where.startswith(f"{path}: row 24 (line 26")
    assert info.value.where.endswith(where)
    assert mem.counts(scope) == EMPTY


def _cli(neo4j, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GRAPHMEM_NEO4J_URI": neo4j.uri}
    if neo4j.auth:
        env["GRAPHMEM_NEO4J_USER"], env["GRAPHMEM_NEO4J_PASSWORD"] = neo4j.auth
    graphmem = str(Path(sys.executable).parent / "graphmem")
    return subprocess.run([graphmem, *args], capture_output=True, text=True, env=env,
                          timeout=120, check=False)


# A number too long for the parser (ijson's C backend crashed on a 5,000-digit integer,
# Decimal refuses an exponent of 19 digits) reaches it written short, and as far out of
# bounds (loaders/longnumbers.py).
@pytest.mark.parametrize(("val", "reason"), [
    ("1e5000", "magnitude 10^5,000"),
    ("1e100000000", "magnitude 10^100,000,000"),
    ("9" * 5000, "more than 600 significant digits"),
    ("-1e" + "9" * 20, "an exponent of 17 digits or more"),
], ids=["1e5000", "1e100000000", "5,000-digit integer", "20-digit exponent"])
def test_a_companyfacts_value_past_its_bound_is_quarantined_and_the_rest_loads(
        migrated, tmp_path, val, reason):
    """The row is kept out and recorded (issue 12: a row that cannot be a fact never fails
    its file), naming the file, the row and the bound; the file's 767 other rows load."""
    data = json.loads(LPA.read_text())
    text = json.dumps(data).replace('"val": 2650535,', f'"val": {val},', 1)
    assert text != json.dumps(data)
    path = tmp_path / "companyfacts.json"
    path.write_text(text)
    quarantine = tmp_path / "quarantine.jsonl"
    tenant = f"test-bounds-{os.getpid()}-{len(val)}-{tmp_path.name}"
    run = _cli(migrated, "load", "companyfacts", str(path), "--tenant", tenant, "--quarantine", str(quarantine))
    assert run.returncode == 0, run.stderr
    assert run.stderr == "" and "quarantine={'out-of-bounds': 1}" in run.stdout, run.stdout
    [record] = [json.loads(line) for line in quarantine.read_text().splitlines()]
    assert record["file"] == str(path) and record["reason"] == "out-of-bounds" and reason in record["detail"]
    with migrated.connect() as mem:
        assert mem.counts(Scope(tenant=tenant))["evidence"] == 767


# Issue 13: a 9,000-character concept name passed validation and failed on the server
# ("Property value is too large to index") at the 50th filing of a load.
@pytest.mark.parametrize(("part", "reason", "detail"), [
    ("concept", "out-of-bounds", "FactIn.attribute"),
    ("unit", "bad-unit", "a unit of 3000 characters is longer than 256"),
], ids=["9,000-character concept", "3,000-byte unit"])
def test_a_companyfacts_identifier_past_its_bound_is_quarantined_and_the_rest_loads(
        migrated, tmp_path, part, reason, detail):
    """Every row of that concept (or unit) is kept out and recorded naming the file; every
    filing loads with its other rows, the filings before those rows as the ones after."""
    data = json.loads(LPA.read_text())
    concepts = data["facts"]["ifrs-full"]
    name = sorted(concepts)[len(concepts) // 2]  # a concept in the middle of the file
    rows = concepts[name]["units"]["USD"]
    if part == "concept":
        concepts["C" * 9000] = concepts.pop(name)
    else:
        concepts[name]["units"] = {"u" * 3000: rows}
    assert len({r["accn"] for r in rows}) >= 2 and len(rows) < 768
    path = tmp_path / "companyfacts.json"
    path.write_text(json.dumps(data))
    quarantine = tmp_path / "quarantine.jsonl"
    tenant = f"test-bounds-{os.getpid()}-{part}-{tmp_path.name}"
    run = _cli(migrated, "load", "companyfacts", str(path), "--tenant", tenant, "--quarantine", str(quarantine))
    assert run.returncode == 0 and run.stderr == "", run.stderr
    assert f"quarantine={{'{reason}': {len(rows)}}}" in run.stdout, run.stdout
    records = [json.loads(line) for line in quarantine.read_text().splitlines()]
    assert sorted(r["row"] for r in records) == list(range(len(rows)))
    assert sorted(r["accession"] for r in records) == sorted(r["accn"] for r in rows)
    assert all(r["file"] == str(path) and r["reason"] == reason and detail in r["detail"] for r in records)
    with migrated.connect() as mem:
        scope = Scope(tenant=tenant)
        counts = mem.counts(scope)
        assert (counts["sources"], counts["evidence"]) == (3, 768 - len(rows))
        answer = mem.as_of(scope, entity="cik:1997711", attribute="ifrs-full:AccrualsClassifiedAsCurrent",
                           unit="USD", period=Period(end=dt.date(2022, 12, 31)),
                           cutoff=dt.datetime(2100, 1, 1, tzinfo=dt.UTC))
        assert answer.value == Decimal(2650535)  # a row of the first filing


@pytest.mark.parametrize("val", ["2650535." + "0" * 5000, "2650535" + "0" * 5000 + "e-5000"],
                         ids=["5,000 zeros after the point", "5,000 zeros times 10^-5000"])
def test_a_companyfacts_value_written_long_but_within_bounds_loads_exactly(migrated, tmp_path, val):
    """2,650,535 written with 5,000 needless zeros is read short, with its exact value."""
    text = json.dumps(json.loads(LPA.read_text())).replace('"val": 2650535,', f'"val": {val},', 1)
    path = tmp_path / "companyfacts.json"
    path.write_text(text)
    tenant = f"test-bounds-{os.getpid()}-long-{tmp_path.name}"
    run = _cli(migrated, "load", "companyfacts", str(path), "--tenant", tenant)
    assert run.returncode == 0 and run.stderr == "", run.stderr
    with migrated.connect() as mem:
        scope = Scope(tenant=tenant)
        assert mem.counts(scope)["evidence"] == 768
        answer = mem.as_of(scope, entity="cik:1997711", attribute="ifrs-full:AccrualsClassifiedAsCurrent",
                           unit="USD", period=Period(end=dt.date(2022, 12, 31)),
                           cutoff=dt.datetime(2100, 1, 1, tzinfo=dt.UTC))
        assert answer.value == Decimal(2650535)


def test_an_empty_tenant_on_the_command_line_is_one_line(migrated):
    run = _cli(migrated, "asof", "--tenant", "", "--entity", "e", "--attribute", "a",
               "--cutoff", "2024-01-01")
    assert run.returncode == 2  # a usage error, naming the option
    assert run.stderr.splitlines() == ["graphmem: error: --tenant: must be a non-empty string"]


def test_an_iterable_argument_is_still_taken_lazily(dead):
    """The iterable check does not consume a generator: its bad item is named by place."""
    with pytest.raises(InputError) as info:
        dead.assert_facts(S, (x for x in [fact(), "row"]))
    assert info.value.where == "facts[1]"


def test_no_retry_starts_after_the_policy_time():
    """A transient fault is retried within ``RetryPolicy.seconds``: the backoff before
    the last try is cut to what is left, never slept past it (seeded: a 3 s backoff
    draw would otherwise start a try seconds after a 0.5 s budget)."""
    random.seed(0)
    policy = RetryPolicy(attempts=1000, seconds=0.5, first_wait=3, max_wait=3)
    with Memory.connect(DEAD, retry=policy) as m:
        began = time.monotonic()
        with pytest.raises(UnavailableError):
            m.counts(S)
        assert time.monotonic() - began < 1.0


@pytest.mark.parametrize(("options", "where"), [
    ({"required_scope": "project"}, "required_scope"),
    ({"required_scope": ("project", 5)}, "required_scope[1]"),
    ({"retry": "x"}, "retry"),
    ({"timeouts": 5}, "timeouts"),
])
def test_a_memory_option_of_the_wrong_type_is_refused_when_it_is_made(options, where):
    """A string ``required_scope`` was required letter by letter (every call refused for
    keys p, r, o, ...); a retry policy or timeouts of another type was an AttributeError
    at the first call."""
    with pytest.raises(InputError) as info:
        Memory.connect(DEAD, **options)
    assert info.value.where == where
