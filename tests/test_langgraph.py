"""The LangGraph store on the real Neo4j: current-state reads agree with LangGraph's own
InMemoryStore on random operation sequences; history, as-of views, deletes, scope,
erasure and bad input behave as graphmem promises; and a LangGraph graph of scripted
nodes remembers and recalls through the store."""

from __future__ import annotations

import asyncio
import datetime as dt
import itertools
import json
import math
import string
import uuid
from decimal import Decimal
from typing import Any, TypedDict

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from world import lose_first_acknowledgement

pytest.importorskip("langgraph")

from langgraph.graph import END, START, StateGraph  # noqa: E402
from langgraph.store.base import BaseStore, GetOp, PutOp  # noqa: E402
from langgraph.store.memory import InMemoryStore  # noqa: E402

from graphmem import Authority, FactIn, InputError, Memory, Scope, ScopeError, Source  # noqa: E402
from graphmem.integrations.langgraph import (  # noqa: E402
    DEFINITION,
    PERIOD,
    ConflictedItemError,
    GraphmemStore,
    matches,
)
from graphmem.retrieval import ToyEmbedder  # noqa: E402
from graphmem.search import STOP_WORDS  # noqa: E402


def tenant() -> str:
    return f"lg-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def store(mem: Memory) -> GraphmemStore:
    return GraphmemStore(mem, tenant=tenant())


def now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


# ------------------------------------------------------------------ differential


NAMESPACES = [("a",), ("a", "b"), ("a", "c"), ("a", "b", "d"), ("e",)]
PREFIXES = [(), ("a",), ("a", "b"), ("e",), ("x",)]
KEYS = ["k1", "k2", "k3"]
scalars = st.one_of(st.none(), st.booleans(), st.integers(-10**20, 10**20),
                    st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=8))
json_values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=4), inner, max_size=3)),
    max_leaves=6)
# every value has a numeric "n", so that range filters are defined on both stores
values = st.fixed_dictionaries({"n": st.integers(-5, 5)},
                               optional={"s": st.sampled_from(["red", "blue"]), "x": json_values})
filters = st.one_of(
    st.none(),
    st.builds(lambda op, v: {"n": {op: v}}, st.sampled_from(["$eq", "$ne", "$gt", "$gte", "$lt", "$lte"]),
              st.integers(-5, 5)),
    st.builds(lambda v: {"s": v}, st.sampled_from(["red", "blue"])),
    st.builds(lambda v: {"n": v, "s": {"$ne": "red"}}, st.integers(-5, 5)),
)
ns_st, key_st = st.sampled_from(NAMESPACES), st.sampled_from(KEYS)
operations = st.lists(st.one_of(
    st.tuples(st.just("put"), ns_st, key_st, values),
    st.tuples(st.just("put"), ns_st, key_st, values),
    st.tuples(st.just("delete"), ns_st, key_st),
    st.tuples(st.just("get"), ns_st, key_st),
    st.tuples(st.just("search"), st.sampled_from(PREFIXES), filters),
    st.tuples(st.just("list"), st.sampled_from(PREFIXES + [("a", "*")]),
              st.sampled_from([None, ("b",), ("*", "d")]), st.sampled_from([None, 1, 2])),
    st.tuples(st.just("batch"), st.lists(st.tuples(ns_st, key_st, st.one_of(st.none(), values)),
                                         min_size=1, max_size=4)),
), min_size=1, max_size=14)


def _rows(items: list[Any]) -> list[tuple]:
    return sorted((tuple(i.namespace), i.key, json.dumps(i.value, sort_keys=True)) for i in items)


def _live_namespaces(reference: InMemoryStore, **kw: Any) -> list[tuple[str, ...]]:
    """InMemoryStore's answer without its phantom namespaces (those only read, or whose
    items were all deleted): a fresh copy holding only the live items."""
    clean = InMemoryStore()
    for item in reference.search((), limit=10_000):
        clean.put(item.namespace, item.key, item.value)
    return clean.list_namespaces(**kw)


def _apply(op: tuple, ours: GraphmemStore, reference: InMemoryStore) -> None:
    kind = op[0]
    if kind == "put":
        _, ns, key, value = op
        ours.put(ns, key, value)
        reference.put(ns, key, value)
    elif kind == "delete":
        _, ns, key = op
        ours.delete(ns, key)
        reference.delete(ns, key)
    elif kind == "get":
        _, ns, key = op
        mine, theirs = ours.get(ns, key), reference.get(ns, key)
        assert (mine is None) == (theirs is None)
        if mine is not None:
            assert (mine.value, mine.key, mine.namespace) == (theirs.value, theirs.key, theirs.namespace)
    elif kind == "search":
        _, prefix, flt = op
        mine = ours.search(prefix, filter=flt, limit=100)
        assert _rows(mine) == _rows(reference.search(prefix, filter=flt, limit=100))
        assert ours.search(prefix, filter=flt, limit=2, offset=1) == mine[1:3]  # pages of one order
    elif kind == "list":
        _, prefix, suffix, depth = op
        kw = {"prefix": prefix or None, "suffix": suffix, "max_depth": depth}
        assert ours.list_namespaces(**kw) == _live_namespaces(reference, **kw)
    else:
        batch = [PutOp(ns, key, value) for ns, key, value in op[1]]
        gets = [GetOp(ns, key) for ns, key, _ in op[1]]
        mine, theirs = ours.batch(gets + batch), reference.batch(gets + batch)
        assert [None if i is None else i.value for i in mine] == [None if i is None else i.value
                                                                    for i in theirs]


@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(ops=operations)
def test_current_state_reads_agree_with_langgraphs_in_memory_store(mem, ops):
    ours, reference = GraphmemStore(mem, tenant=tenant()), InMemoryStore()
    for op in ops:
        _apply(op, ours, reference)
    # and in the end every item agrees
    assert _rows(ours.search((), limit=1000)) == _rows(reference.search((), limit=1000))


# the same differential with LangGraph's index configuration: both stores embed with one
# deterministic function; a query search ranks by cosine among the live items, whatever
# identifiers (ERR42) the query holds, and every page is a slice of that one order
toy = ToyEmbedder(32)
INDEX = {"dims": 32, "embed": toy, "fields": ["s", "t"]}
texts = st.fixed_dictionaries({"n": st.integers(-5, 5)}, optional={
    "s": st.sampled_from(["red", "blue"]),
    "t": st.lists(st.sampled_from(["deploy", "rollback", "pizza", "lunch", "widget", "ERR42"]),
                  max_size=3).map(" ".join)})
indexed_ops = st.lists(st.one_of(
    st.tuples(st.just("put"), ns_st, key_st, texts, st.sampled_from([None, None, False, ["t"]])),
    st.tuples(st.just("delete"), ns_st, key_st),
    st.tuples(st.just("query"), st.sampled_from(PREFIXES),
              st.sampled_from(["rollback pizza", "red", "deploy", "ERR42 lunch", "pizza ERR42"]), filters,
              st.sampled_from([(0, 1), (1, 1), (0, 2), (1, 2), (2, 3)])),
), min_size=1, max_size=10)


def _scored(items: list[Any]) -> list[tuple]:
    return sorted((tuple(i.namespace), i.key, i.score) for i in items)


def _agree(mine: list[Any], theirs: list[Any]) -> None:
    """The same items with the same scores, to 1e-5: the two compute one cosine in
    different float arithmetic, so a rounding to fixed digits could fall either side."""
    a, b = _scored(mine), _scored(theirs)
    assert [x[:2] for x in a] == [x[:2] for x in b]
    for (ns, key, s), (_, _, t) in zip(a, b, strict=True):
        assert _same_score(s, t), (ns, key, s, t)


def _same_score(s: float | None, t: float | None) -> bool:
    return (s is None) == (t is None) and (s is None or abs(s - t) <= 1e-5)


def _best_first(scores: list[float | None]) -> list[float | None]:
    return sorted(scores, key=lambda x: (x is None, -(x or 0)))


def _page_agrees(ours: GraphmemStore, mine: list[Any], theirs: list[Any], prefix: tuple,
                 query: str, flt: Any, offset: int, limit: int) -> None:
    """A page is the slice of our whole answer (``mine``), and has the scores of that slice
    of the reference's whole answer (``theirs``; its order of equal scores may differ, so
    scores are compared, and InMemoryStore's own pages start every page's unscored items
    from the first one, so its whole answer is sliced)."""
    page = ours.search(prefix, query=query, filter=flt, offset=offset, limit=limit)
    assert page == mine[offset:offset + limit]
    expected = _best_first([i.score for i in theirs])[offset:offset + limit]
    assert len(page) == len(expected)
    assert all(_same_score(i.score, t) for i, t in zip(page, expected, strict=True)), (page, expected)


@settings(max_examples=12, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(ops=indexed_ops)
# graphmem ranks the holders of the query's identifier first (k1, and k3 without a vector):
# a page must still come from the cosine order (k2 first), as InMemoryStore's does
@example(ops=[("put", ("a",), "k1", {"n": 0, "t": "ERR42 widget deploy"}, None),
              ("put", ("a",), "k2", {"n": 0, "t": "lunch"}, None),
              ("put", ("a",), "k3", {"n": 0, "t": "ERR42"}, False),
              ("query", ("a",), "ERR42 lunch", None, (0, 1)),
              ("query", (), "ERR42 lunch", None, (1, 2))])
def test_semantic_search_agrees_with_langgraphs_in_memory_store_given_the_same_index(mem, ops):
    ours, reference = GraphmemStore(mem, tenant=tenant(), index=INDEX), InMemoryStore(index=INDEX)
    for op in ops:
        if op[0] == "put":
            ours.put(op[1], op[2], op[3], index=op[4])
            reference.delete(op[1], op[2])  # InMemoryStore keeps a re-put item's old vectors
            reference.put(op[1], op[2], op[3], index=op[4])
        elif op[0] == "delete":
            ours.delete(op[1], op[2])
            reference.delete(op[1], op[2])
        else:
            _, prefix, query, flt, (offset, limit) = op
            mine = ours.search(prefix, query=query, filter=flt, limit=100)
            theirs = reference.search(prefix, query=query, filter=flt, limit=100)
            _agree(mine, theirs)
            scores = [i.score for i in mine]  # best first, unscored last
            assert scores == _best_first(scores)
            _page_agrees(ours, mine, theirs, prefix, query, flt, offset, limit)
    past = ours.as_of(cutoff=now())  # an as-of view searches by meaning too
    _agree(past.search((), query="deploy", limit=100), reference.search((), query="deploy", limit=100))


def test_semantic_pages_are_cut_from_the_cosine_order_whatever_identifiers_the_query_holds(mem):
    """graphmem ranks the holders of a query's identifier (ABC123) first; the store ranks by
    cosine alone, as InMemoryStore does, and cuts every page from that order: the best
    scored item comes first, an unindexed holder of the identifier last."""
    ours, reference = GraphmemStore(mem, tenant=tenant(), index=INDEX), InMemoryStore(index=INDEX)
    for store in (ours, reference):
        store.put(("docs",), "holder", {"t": "ticket ABC123 log dump"})  # cosine 0.35
        store.put(("docs",), "best", {"t": "apple apple"})  # 0.63
        store.put(("docs",), "second", {"t": "apple crumble"})  # 0.39
        store.put(("docs",), "raw", {"t": "ABC123 zebra"}, index=False)  # no vector
    query = "ABC123 apple"
    mine, theirs = ours.search(("docs",), query=query), reference.search(("docs",), query=query)
    assert [i.key for i in mine] == [i.key for i in theirs] == ["best", "second", "holder", "raw"]
    assert [i.key for i in ours.search(("docs",), query=query, limit=1)] == ["best"]
    for offset in range(5):
        for limit in range(1, 4):
            _page_agrees(ours, mine, theirs, ("docs",), query, None, offset, limit)


def test_another_embedder_is_refused_for_a_namespace(mem):
    name = tenant()
    GraphmemStore(mem, tenant=name, index=INDEX).put(("a",), "k", {"t": "deploy"})
    other = GraphmemStore(mem, tenant=name, index={"dims": 16, "embed": ToyEmbedder(16)})
    with pytest.raises(InputError, match="ToyEmbedder"):
        other.put(("a",), "k2", {"t": "deploy"})
    with pytest.raises(InputError, match="ToyEmbedder"):
        other.search(("a",), query="deploy")


@pytest.mark.parametrize("value", [
    {"big": 10**30, "small": -2**63, "float": 0.1, "exp": 1e300, "tiny": 5e-324, "neg0": -0.0},
    {"text": "naïve ☃ \u2028 line\nbreak \"quoted\" \\", "empty": "", "nul": "a\x00b"},
    {"nested": {"deep": [[1, [2, {"three": [None, True, False]}]]]}, "list": []},
    {},
])
def test_values_round_trip_exactly(store, value):
    store.put(("docs",), "k", value)
    got = store.get(("docs",), "k").value
    assert got == value
    assert json.dumps(got, sort_keys=True) == json.dumps(value, sort_keys=True)  # types too
    assert {k: type(v) for k, v in got.items()} == {k: type(v) for k, v in value.items()}


# ------------------------------------------------------------------ history and as-of


def test_put_keeps_history_and_as_of_views_show_each_moment(store):
    ns = ("memories", "alice")
    store.put(ns, "food", {"likes": "pizza"})
    t1 = now()
    store.put(ns, "food", {"likes": "pizza"})  # the same value: more evidence, no version
    t2 = now()
    store.put(ns, "food", {"likes": "sushi"})
    t3 = now()

    first, second = store.history(ns, "food")
    assert (first.value, second.value) == ({"likes": "pizza"}, {"likes": "sushi"})
    assert first.created_at < first.updated_at < t2 < second.created_at == second.updated_at < t3
    assert first.recorded_at == first.created_at  # public the moment it was recorded

    assert store.as_of(cutoff=t1).get(ns, "food").value == {"likes": "pizza"}
    at_t2 = store.as_of(cutoff=t2).get(ns, "food")
    assert (at_t2.value, at_t2.updated_at) == ({"likes": "pizza"}, first.updated_at)
    current = store.get(ns, "food")
    assert (current.value, current.created_at) == ({"likes": "sushi"}, second.created_at)
    assert store.as_of(cutoff=first.created_at - dt.timedelta(microseconds=1)).get(ns, "food") is None


def test_delete_invalidates_and_the_past_stays_readable(store):
    ns = ("memories", "alice")
    store.put(ns, "food", {"likes": "pizza"})
    store.put(ns, "food", {"likes": "sushi"})
    before = now()
    store.delete(ns, "food")
    after = now()

    assert store.get(ns, "food") is None
    assert store.search(ns) == [] and store.list_namespaces() == []
    # deleting the latest version must not bring the older one back
    assert store.as_of(cutoff=after).get(ns, "food") is None
    # the store as it stood before the delete
    assert store.as_of(cutoff=before).get(ns, "food").value == {"likes": "sushi"}
    assert store.as_of(cutoff=before).list_namespaces() == [ns]
    # what was public by then, with the delete (a correction) applied
    assert store.as_of(cutoff=before, known_at=after).get(ns, "food") is None
    assert [v.deleted_at is not None for v in store.history(ns, "food")] == [True, True]

    store.delete(ns, "food")  # deleting again changes nothing
    store.put(ns, "food", {"likes": "ramen"})  # a new life
    assert store.get(ns, "food").value == {"likes": "ramen"}
    assert [v.deleted_at is None for v in store.history(ns, "food")] == [False, False, True]


def test_a_view_is_read_only(store):
    view = store.as_of(cutoff=now())
    assert view.read_only and not store.read_only
    with pytest.raises(InputError, match="read-only view"):
        view.put(("a",), "k", {"v": 1})
    with pytest.raises(InputError, match="read-only view") as info:
        view.delete(("a",), "k")
    assert info.value.where == "delete"


def test_a_view_time_outside_the_years_a_datetime_holds_is_refused_by_name(store):
    """A cutoff or known_at whose UTC falls outside the years 1 to 9999 (the start of year 1
    east of Greenwich, the end of 9999 west of it) is an InputError naming it, as in every
    graphmem read, not an OverflowError; so is a naive one."""
    early = dt.datetime(1, 1, 1, tzinfo=dt.timezone(dt.timedelta(hours=1)))
    late = dt.datetime(9999, 12, 31, 23, tzinfo=dt.timezone(dt.timedelta(hours=-5)))
    for kwargs, where in (({"cutoff": early}, "cutoff"), ({"cutoff": late}, "cutoff"),
                          ({"cutoff": now(), "known_at": late}, "known_at"),
                          ({"cutoff": dt.datetime(2024, 1, 1)}, "cutoff"),
                          ({"cutoff": now(), "known_at": dt.datetime(2024, 1, 1)}, "known_at")):
        with pytest.raises(InputError) as info:
            store.as_of(**kwargs)
        assert info.value.where == where, kwargs
    edge = dt.datetime(9999, 12, 31, 23, tzinfo=dt.UTC)
    assert store.as_of(cutoff=edge).get(("a",), "k") is None  # the last hour still reads


def test_search_ranks_by_text_and_filters_before_the_limit(store):
    for i in range(6):
        store.put(("notes", "u1"), f"n{i}", {"text": f"user likes pizza number {i}", "i": i})
    store.put(("notes", "u1"), "other", {"text": "the user plays chess", "i": 99})
    store.put(("notes", "u2"), "n0", {"text": "pizza for someone else", "i": 0})

    hits = store.search(("notes", "u1"), query="pizza", limit=10)
    assert {h.key for h in hits} == {f"n{i}" for i in range(6)}
    assert all(h.score and h.score > 0 for h in hits)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    # the filter runs before the limit: the two matches are found though ranked last
    found = store.search(("notes",), query="pizza", filter={"i": {"$gte": 4}}, limit=2)
    assert {h.key for h in found} == {"n4", "n5"}
    # a query of stop words only is no query
    assert len(store.search(("notes", "u1"), query="the", limit=100)) == 7
    with pytest.raises(InputError, match="unknown operator"):
        store.search(("notes",), filter={"i": {"$in": [1]}})


def test_query_pages_are_slices_of_one_order_when_scores_tie(store):
    """Items of equal text score (one batch: one time, one text) are ordered by key; a page
    is the slice of that order, never the items graphmem's own tie-break (its key uids)
    cut at offset + limit: paging by one shows every item once."""
    store.batch([PutOp(("notes",), f"k{i}", {"text": "pizza"}) for i in range(6)])
    whole = store.search(("notes",), query="pizza")
    assert [i.key for i in whole] == [f"k{i}" for i in range(6)]
    assert len({i.score for i in whole}) == 1
    for offset in range(6):
        for limit in (1, 2, 4):
            page = store.search(("notes",), query="pizza", offset=offset, limit=limit)
            assert page == whole[offset:offset + limit], (offset, limit)


def test_a_query_over_graphmems_word_bound_is_refused_not_taken_for_no_query(mem, store):
    """A full-text query takes at most 256 words that are not stop words (one Lucene clause
    each): one more is refused naming the query, within the 1,000 characters, rather than
    answered as if there were no query (every item, unscored)."""
    store.put(("docs",), "fruit", {"text": "apple pie"})
    store.put(("docs",), "car", {"text": "red sports car"})
    words = [w for w in map("".join, itertools.product(string.ascii_lowercase, repeat=2))
             if w not in STOP_WORDS]
    at_bound = " ".join(["apple", *words[:255]])
    assert [(i.key, i.score > 0) for i in store.search(("docs",), query=at_bound)] == [("fruit", True)]
    over = " ".join(["apple", *words[:256]])
    assert len(over) <= 1000
    with pytest.raises(InputError) as info:
        store.search(("docs",), query=over)
    assert (info.value.where, info.value.reason) == (
        "query", "257 searchable words (stop words aside); at most 256 for a full-text search")
    # by meaning, the words are not clauses: no such bound
    semantic = GraphmemStore(mem, tenant=tenant(), index=INDEX)
    semantic.put(("docs",), "fruit", {"t": "apple pie"})
    assert [i.key for i in semantic.search(("docs",), query=over)] == ["fruit"]


def test_filter_operators_follow_langgraphs_definition():
    value = {"n": 3, "s": "b", "flag": True, "obj": {"a": 1}, "xs": [1, 2]}
    assert matches(value, {"n": 3}) and matches(value, {"n": {"$eq": 3.0}})
    assert matches(value, {"n": {"$gt": 2, "$lte": 3}}) and not matches(value, {"n": {"$lt": 3}})
    assert matches(value, {"s": {"$gt": "a"}}) and not matches(value, {"s": {"$gt": 1}})
    assert not matches(value, {"flag": {"$gt": 0}})  # booleans are not numbers here
    assert matches(value, {"missing": {"$ne": 1}}) and not matches(value, {"missing": {"$gt": 1}})
    assert matches(value, {"obj": {"a": 1}}) and matches(value, {"xs": [1, 2]})
    assert not matches(value, {"xs": [1]})


# ------------------------------------------------------------------ scope and mapping


def test_namespaces_are_scopes_and_the_tenant_is_fixed(mem):
    name = tenant()
    a, b = GraphmemStore(mem, tenant=name), GraphmemStore(mem, tenant=name + "-other")
    a.put(("memories", "alice"), "k", {"v": 1})
    assert a.scope_of(("memories", "alice")) == Scope(tenant=name, namespace="memories.alice")
    assert b.get(("memories", "alice"), "k") is None and b.list_namespaces() == []
    assert a.get(("memories", "bob"), "k") is None
    # the item is an ordinary fact of that scope, readable through the Memory API
    answer = mem.as_of(a.scope_of(("memories", "alice")), entity="langgraph:memories.alice",
                       attribute="k", period=PERIOD, cutoff=now())
    assert json.loads(answer.value) == {"v": 1} and answer.version.definition == DEFINITION
    assert answer.version.sources[0].authority == Authority.PRIMARY


def test_labels_supply_the_scope_keys_a_deployment_requires(migrated):
    with migrated.connect(required_scope=("user",)) as strict:
        store = GraphmemStore(strict, tenant=tenant(), labels=("kind", "user"), scope={"app": "x"})
        store.put(("memories", "alice"), "k", {"v": 1})
        assert store.scope_of(("memories", "alice")).keys() == {
            "app": "x", "kind": "memories", "user": "alice", "namespace": "memories.alice"}
        assert store.get(("memories", "alice"), "k").value == {"v": 1}
        with pytest.raises(InputError, match="fewer labels"):
            store.get(("memories",), "k")
        unlabeled = GraphmemStore(strict, tenant=tenant())
        with pytest.raises(ScopeError, match="user"):
            unlabeled.put(("memories", "alice"), "k", {"v": 1})
        with pytest.raises(InputError, match="distinct"):
            GraphmemStore(strict, tenant="t", scope={"namespace": "x"})


def test_erase_forgets_a_namespace_history_included(store):
    ns = ("users", "carol")
    store.put(ns, "a", {"secret": "s1"})
    store.put(ns, "a", {"secret": "s2"})
    store.put(ns, "b", {"secret": "s3"})
    assert store.erase(ns, reason="carol asked to be forgotten") == 3
    assert store.get(ns, "a") is None and store.search(ns) == []
    assert store.as_of(cutoff=now()).get(ns, "a") is None
    assert [(v.value, v.erased) for v in store.history(ns, "a")] == [(None, True), (None, True)]
    with pytest.raises(InputError, match="erased"):
        store.put(ns, "a", {"secret": "again"})


def test_a_conflict_written_outside_the_store_is_never_a_silent_pick(mem, store):
    ns = ("shared",)
    store.put(ns, "k", {"v": 1})
    scope = store.scope_of(ns)
    mem.record_source(scope, Source(id="other", kind="import", authority=Authority.PRIMARY,
                                    publisher="someone-else", available_by=now()))
    mem.assert_fact(scope, FactIn(entity="langgraph:shared", attribute="k", value='{"v":2}',
                                  period=PERIOD, definition=DEFINITION, sources=("other",)))
    with pytest.raises(ConflictedItemError, match="conflicted"):
        store.get(ns, "k")


def test_a_retry_after_a_lost_acknowledgement_puts_once(store, monkeypatch):
    lost = lose_first_acknowledgement(monkeypatch)
    store.batch([PutOp(("a",), "k", {"v": 1}), PutOp(("a",), "j", {"v": 2}),
                 PutOp(("a",), "k", {"v": 3})])
    assert lost
    [version] = store.history(("a",), "k")
    assert version.value == {"v": 3} and version.created_at == version.updated_at
    assert len(store.history(("a",), "j")) == 1


def test_agents_putting_and_deleting_one_item_at_once_lose_and_double_nothing(mem):
    """Three agents, each with its own store on one tenant, put and delete one item at
    once (each puts twice, then deletes or puts the value another agent put). Every put
    is recorded once (as a version or as more evidence for the value the item had), no
    read meets a conflict, and the item ends as the last committed operation left it."""
    import threading

    shared = tenant()
    ns, agents = ("team", "notes"), [GraphmemStore(mem, tenant=shared) for _ in range(3)]
    store = agents[0]
    both, errors, puts = threading.Barrier(3), [], []

    def agent(i: int) -> None:
        try:
            both.wait(timeout=30)
            for step, value in enumerate([{"by": i, "n": 0}, {"by": i, "n": 1}, {"by": 0, "n": 0}]):
                if step == 2 and i == 2:
                    agents[i].delete(ns, "k")
                else:
                    agents[i].put(ns, "k", value)
                    puts.append(value)
                agents[i].get(ns, "k")
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=agent, args=(i,)) for i in range(3)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=120)
    assert not errors, errors
    versions = mem.history(store.scope_of(ns), entity=store.entity_of(ns), attribute="k")
    sources = [e.source_id for v in versions for e in v.sources]
    assert len(sources) == len(set(sources)) == len(puts) == 8
    assert sorted(json.dumps(json.loads(v.value), sort_keys=True) for v in versions for _ in v.sources) == \
        sorted(json.dumps(p, sort_keys=True) for p in puts)
    last_put = max((e.available_by, json.loads(v.value)) for v in versions for e in v.sources)
    deleted = [x.recorded_at for v in versions for x in v.lifecycle if x.kind == "invalidated"]
    item = store.get(ns, "k")
    if deleted and max(deleted) > last_put[0]:
        assert item is None
    else:
        assert item is not None and item.value == last_put[1]


@pytest.mark.parametrize("namespace, key, value, where", [
    (("a.b",), "k", {}, "namespace"),
    (("a",), "", {}, "key"),
    (("a",), "k" * 2049, {}, "key"),
    (("a",), "中" * 683, {}, "key"),  # 683 characters, 2,049 bytes
    (tuple(f"{i}" + "a" * 255 for i in range(8)), "k", {}, "namespace"),  # 2,091 bytes as a scope
    (("a",), "k", {"x": math.nan}, "value['x']"),
    (("a",), "k", {"x": {1: "int key"}}, "value['x']"),
    (("a",), "k", {"x": {1, 2}}, "value['x']"),
    (("a",), "k", {"x": Decimal("1.5")}, "value['x']"),
    (("a",), "k", {"x": "\ud800"}, "value"),
    (("a",), "k", {"x": "y" * 300_000}, "value"),
    (("langgraph",), "k", {}, "namespace"),
])
def test_bad_input_is_refused_before_anything_is_written(store, namespace, key, value, where):
    with pytest.raises((InputError, ValueError)) as info:
        store.batch([PutOp(("ok",), "first", {"v": 1}), PutOp(namespace, key, value)])
    if isinstance(info.value, InputError):
        assert info.value.where == where
    assert store.get(("ok",), "first") is None  # nothing of the batch was written


def test_a_value_up_to_the_documented_bound_is_kept_and_one_byte_more_is_refused_as_value(store):
    """The docstring's bound (64 KiB of JSON, the bound of a text fact value) is the one
    enforced, and the error names the store's own argument, not the model's field."""
    at_bound = {"x": "y" * (65_536 - len('{"x":""}'))}
    store.put(("big",), "k", at_bound)
    assert store.get(("big",), "k").value == at_bound
    with pytest.raises(InputError) as info:
        store.put(("big",), "k", {"x": at_bound["x"][:-1] + "é"})  # as many characters, one byte more
    assert (info.value.where, info.value.reason) == ("value", "65,537 bytes of JSON in UTF-8; at most 65,536")
    assert store.get(("big",), "k").value == at_bound


def test_a_key_and_a_namespace_up_to_their_real_bounds_are_kept_and_one_byte_more_is_refused(store):
    """The documented bounds are graphmem's: a key is a fact attribute (2,048 bytes in
    UTF-8), a namespace a scope (2,048 bytes as JSON with the tenant); one byte more is
    refused naming the key or the namespace before any query, for reads too."""
    key = "中" * 682 + "kk"  # 2,048 bytes
    store.put(("a",), key, {"v": 1})
    assert store.get(("a",), key).value == {"v": 1}
    with pytest.raises(InputError) as info:
        store.get(("a",), key + "k")
    assert (info.value.where, info.value.reason) == (
        "key", "2,049 bytes in UTF-8; at most 2,048 (a key is a graphmem fact attribute)")

    room = 2048 - len(store.scope_of(("x",)).id.encode()) + 1  # bytes of the dotted path
    namespace = ("a" * (room - 1001), "b" * 1000)
    store.put(namespace, "k", {"v": 2})
    assert [i.value for i in store.search(namespace)] == [{"v": 2}]
    assert store.list_namespaces(prefix=namespace[:1]) == [namespace]
    longer = (namespace[0] + "a", namespace[1])
    for call, where in ((lambda: store.get(longer, "k"), "namespace"),
                        (lambda: store.put(longer, "k", {"v": 3}), "namespace"),
                        (lambda: store.search(longer), "namespace_prefix"),
                        (lambda: store.list_namespaces(prefix=longer), "match_conditions")):
        with pytest.raises(InputError) as info:
            call()
        assert (info.value.where, info.value.reason) == (
            where, "its graphmem scope (the tenant, the scope keys and the labels, as JSON) is "
                   "2,049 bytes in UTF-8; at most 2,048")


# ------------------------------------------------------------------ a LangGraph graph


class State(TypedDict, total=False):
    user: str
    said: str
    recalled: list[str]
    answer: str


def test_a_graph_of_scripted_nodes_remembers_and_recalls_through_the_store(store):
    def remember(state: State, *, store: BaseStore) -> State:
        ns = ("memories", state["user"])
        count = len(store.search(ns, limit=100))
        store.put(ns, f"m{count}", {"text": state["said"]})
        return {}

    def recall(state: State, *, store: BaseStore) -> State:
        hits = store.search(("memories", state["user"]), query="pizza", limit=5)
        return {"recalled": [h.value["text"] for h in hits]}

    def respond(state: State) -> State:
        return {"answer": f"you told me: {'; '.join(state['recalled']) or 'nothing about pizza'}"}

    builder = StateGraph(State)
    for name, node in (("remember", remember), ("recall", recall), ("respond", respond)):
        builder.add_node(name, node)
    builder.add_edge(START, "remember")
    builder.add_edge("remember", "recall")
    builder.add_edge("recall", "respond")
    builder.add_edge("respond", END)
    graph = builder.compile(store=store)

    graph.invoke({"user": "alice", "said": "I like pizza with olives"})
    out = graph.invoke({"user": "alice", "said": "my cat is called Tom"})
    assert out["answer"] == "you told me: I like pizza with olives"
    assert graph.invoke({"user": "bob", "said": "hello"})["answer"] == "you told me: nothing about pizza"
    assert [i.value["text"] for i in sorted(store.search(("memories", "alice")), key=lambda i: i.key)] == [
        "I like pizza with olives", "my cat is called Tom"]


async def _async_roundtrip(store: GraphmemStore) -> Any:
    await store.aput(("async",), "k", {"v": 1})
    return (await store.aget(("async",), "k")).value, await store.alist_namespaces()


def test_the_async_interface_runs_the_same_operations(store):
    assert asyncio.run(_async_roundtrip(store)) == ({"v": 1}, [("async",)])


def test_an_async_embed_function_embeds_on_put_and_aput(mem):
    """``index["embed"]`` may be an async function, as LangGraph's stores take it."""
    async def embed(texts: list[str]) -> list[list[float]]:
        return toy(texts)

    store = GraphmemStore(mem, tenant=tenant(), index={"dims": 32, "embed": embed, "fields": ["t"]})
    store.put(("a",), "sync", {"t": "rollback"})

    async def run() -> list[Any]:
        await store.aput(("a",), "async", {"t": "deploy"})
        return await store.asearch(("a",), query="deploy")

    hits = asyncio.run(run())
    assert [h.key for h in hits] == ["async", "sync"]
    assert hits[0].score == pytest.approx(1.0) and hits[1].score < 1.0


def test_a_re_put_is_found_by_its_new_text_only(mem):
    """The vectors belong to the value put: a field the new value no longer has (or a re-put
    with index=False) leaves the item unscored, not scored by its old text."""
    store = GraphmemStore(mem, tenant=tenant(), index=INDEX)
    store.put(("a",), "k", {"t": "rollback"})
    assert store.search(("a",), query="rollback")[0].score == pytest.approx(1.0)
    store.put(("a",), "k", {"n": 1})
    assert [i.score for i in store.search(("a",), query="rollback")] == [None]
    store.put(("a",), "k", {"t": "rollback"})
    store.put(("a",), "k", {"t": "rollback"}, index=False)
    assert [i.score for i in store.search(("a",), query="rollback")] == [None]


def test_an_integer_json_cannot_write_back_is_refused_by_its_place_and_nothing_is_written(store):
    """Python writes at most 4,300 digits of an integer as text (and reads no more back):
    a value holding a longer one failed inside ``json.dumps`` as a bare ValueError that
    named neither the argument nor the field, telling the caller to raise an interpreter
    limit."""
    with pytest.raises(InputError) as info:
        store.batch([PutOp(("ok",), "first", {"v": 1}), PutOp(("a",), "k", {"x": [10**4300]})])
    assert info.value.where == "value['x'][0]" and "4,300 digits" in info.value.reason
    assert store.get(("ok",), "first") is None
    at_bound = {"x": [-(10**4300 - 1)]}  # 4,300 nines: written and read back exactly
    store.put(("a",), "k", at_bound)
    assert store.get(("a",), "k").value == at_bound


@pytest.mark.parametrize("options, where", [
    ({"labels": "user"}, "labels"),  # was taken letter by letter: u, s, e, r
    ({"labels": ("user", 5)}, "labels[1]"),
    ({"labels": ("",)}, "labels[0]"),
    ({"labels": tuple(f"l{i}" for i in range(17))}, "labels"),
    ({"scope": {"app": ""}}, "scope"),  # was named as the tenant
    ({"scope": {1: "x"}}, "scope"),  # was a TypeError: keywords must be strings
    ({"scope": "app=x"}, "scope"),
])
def test_the_stores_own_options_are_refused_by_name_when_it_is_made(mem, options, where):
    """A store's ``labels`` and ``scope`` are checked when it is made, each error naming
    the option: a string of labels was taken letter by letter (every namespace then
    refused for having fewer labels than 'u, s, e, r'), an empty or non-string label
    made a scope key no namespace can fill, and a bad scope was reported as the tenant."""
    with pytest.raises(InputError) as info:
        GraphmemStore(mem, tenant=tenant(), **options)
    assert info.value.where == where, str(info.value)


@pytest.mark.parametrize("max_depth", ["1", 0, -1, 1.5, True])
def test_a_list_namespaces_depth_that_is_no_depth_is_refused_by_name(store, max_depth):
    """``max_depth`` cuts each namespace to its first labels: "1" failed as a TypeError
    after the read, 0 answered the empty namespace () (none exists) and -1 each namespace
    without its last label - namespaces that hold nothing - instead of refusing them."""
    store.put(("a", "b"), "k", {"v": 1})
    with pytest.raises(InputError) as info:
        store.list_namespaces(max_depth=max_depth)
    assert info.value.where == "max_depth"
    assert store.list_namespaces(max_depth=1) == [("a",)]
    assert store.list_namespaces(max_depth=99) == [("a", "b")]


def test_a_query_that_is_not_text_utf8_can_carry_is_refused_as_query_before_any_read(store):
    """A lone surrogate (a JSON ``\\ud800`` escape) in a query was passed to graphmem's
    search: an empty store answered [] and a store with an item refused it as ``text``,
    an argument the store does not have, after reading its namespaces."""
    for _ in range(2):
        with pytest.raises(InputError) as info:
            store.search(("a",), query="pizza \ud800")
        assert info.value.where == "query" and "surrogate" in info.value.reason
        store.put(("a",), "k", {"v": "pizza"})


@pytest.mark.parametrize("fields, put_index", [
    ([5], None), ("t", None), (["t"], [5]), (["t"], "t"), (["t"], True)],
    ids=["a field that is a number", "fields as a string", "a put's field that is a number",
         "a put's fields as a string", "a put's index True"])
def test_index_fields_that_are_not_a_list_of_paths_are_refused_as_index(mem, fields, put_index):
    """The fields to embed are a list of paths: a number failed inside LangGraph's path
    parser as a TypeError ("object of type 'int' has no len()") at every put, and a string
    was taken letter by letter ("text": the fields t, e, x, t), embedding other fields
    than named without a word. Both are refused, naming the index, before anything is
    written."""
    store = GraphmemStore(mem, tenant=tenant(), index={"dims": 16, "embed": ToyEmbedder(16), "fields": ["t"]})
    with pytest.raises(InputError) as info:
        if put_index is None:
            GraphmemStore(mem, tenant=tenant(), index={"dims": 16, "embed": ToyEmbedder(16), "fields": fields})
        else:
            store.put(("a",), "k", {"t": "deploy", "e": "lunch"}, index=put_index)
    assert info.value.where == "index"
    assert store.get(("a",), "k") is None


def test_a_batch_that_fails_leaves_no_embedder_claim_on_its_namespaces(mem):
    """The first put with an index makes its embedder the namespace's. That claim was its
    own transaction, before the batch's: a batch refused as a whole (a put into an erased
    namespace beside one into a fresh one) wrote no item, yet left the fresh namespace
    claimed, so another embedder was refused there for a namespace that holds nothing."""
    name = tenant()
    plain = GraphmemStore(mem, tenant=name)
    plain.put(("gone",), "k", {"t": "deploy"})
    plain.erase(("gone",), reason="forgotten")
    first = GraphmemStore(mem, tenant=name, index=INDEX)
    with pytest.raises(InputError, match="erased"):
        first.batch([PutOp(("fresh",), "k", {"t": "deploy"}), PutOp(("gone",), "k", {"t": "lunch"})])
    assert first.get(("fresh",), "k") is None
    other = GraphmemStore(mem, tenant=name, index={"dims": 16, "embed": ToyEmbedder(16)})
    other.put(("fresh",), "k", {"t": "deploy"})  # the namespace holds nothing: its embedder is free
    assert other.search(("fresh",), query="deploy")[0].key == "k"
