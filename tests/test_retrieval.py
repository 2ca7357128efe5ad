"""Retrieval by meaning on the real Neo4j (graphmem/retrieval), with the deterministic
ToyEmbedder: the hard filters decide the candidates before any similarity (a property
against the text search's own legal set, and ranking against exact cosine over it),
identifiers stay exact, an erasure takes the vectors, one embedder per scope, a killed
re-embedding resumes, and MCP and context snapshots carry the mode."""

from __future__ import annotations

import datetime as dt
import itertools
import math
import uuid
from decimal import Decimal
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st
from world import Q1, Q2, World, lose_first_acknowledgement

from graphmem import Entity, ExperienceIn, InputError, Memory, Scope, TaskStateIn
from graphmem.retrieval import Embedder, ToyEmbedder, rank
from graphmem.retrieval.vectors import ScopeVectors, Scores

DAY0 = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
WORDS = ("widget", "payment", "declined", "deploy", "rollback", "certificate", "pizza", "lunch")
toy = Embedder(ToyEmbedder(32), name="toy:32")


def vectors(mem: Memory, scope: Scope) -> dict[str, list[float] | None]:
    """Every stored vector of the scope by memory id (a test's own look at the graph)."""
    with mem.db.driver.session(database="neo4j") as s:
        rows = s.run("MATCH (n) WHERE (n:Fact OR n:Memory) AND n.tenant = $t "
                     "RETURN coalesce(n.version_id, n.memory_id) AS id, n.embedding AS v",
                     t=scope.tenant)
        return {r["id"]: r["v"] for r in rows}


def cosine01(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return (1 + dot / (math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(x * x for x in b)))) / 2


# ------------------------------------------------------------------ the legal set

sources = st.lists(st.tuples(st.sampled_from(("primary", "primary", "inference", "user_correction")),
                             st.integers(0, 3), st.lists(st.sampled_from(WORDS), max_size=3)),
                   min_size=1, max_size=4)  # (authority, day published, words of the title)
fact_rows = st.lists(st.tuples(st.sampled_from(("acme", "globex")), st.sampled_from((Q1, Q2)),
                               st.integers(1, 3), st.integers(0, 3)), max_size=8)
experiences = st.lists(st.tuples(st.lists(st.sampled_from(WORDS), max_size=4), st.integers(0, 3),
                                 st.booleans()), max_size=4)
task_states = st.lists(st.tuples(st.integers(0, 1), st.lists(st.sampled_from(WORDS), max_size=4)),
                       max_size=3)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(srcs=sources, rows=fact_rows, exps=experiences, tasks=task_states,
       invalidate=st.none() | st.integers(0, 7), erase=st.none() | st.sampled_from(("acme", "globex")),
       retract=st.none() | st.integers(0, 3), cutoff_day=st.integers(0, 4),
       types=st.none() | st.lists(st.sampled_from(("fact", "experience", "task_state")), min_size=1,
                                  unique=True),
       entity=st.none() | st.sampled_from(("acme", "globex")), mode=st.sampled_from(("semantic", "hybrid")),
       query=st.lists(st.sampled_from(WORDS), min_size=1, max_size=3))
def test_every_hit_is_legal_and_ranked_exactly(mem, srcs, rows, exps, tasks, invalidate, erase, retract,
                                               cutoff_day, types, entity, mode, query):
    """Every memory says "widget", so a text search for it, exhaustive, gives the legal
    set; a search by meaning returns exactly that set, in the order of (authority tier,
    identifiers, fused score) with the similarity of each hit's stored vector; a fact key's
    fused score is its best legal version's, so never below the returned version's."""
    w = World(mem, Scope(tenant=f"retr-prop-{uuid.uuid4().hex[:12]}"))
    for i, (authority, day, words) in enumerate(srcs):
        w.source(f"s{i}", DAY0 + dt.timedelta(days=day), authority=authority,
                 title=" ".join(["widget", *words]))
    written = mem.assert_facts(w.scope, [
        w.fact_in(Decimal(value), f"s{src % len(srcs)}", entity=e, period=period)
        for e, period, value, src in rows]) if rows else None
    for words, src, observed in exps:
        mem.remember_experience(w.scope, ExperienceIn(
            trigger=" ".join(["widget", *words]), outcome="cleared" if observed else None,
            evidence=(f"s{src % len(srcs)}",), entities=("acme",)))
    for task, words in tasks:
        mem.save_task_state(w.scope, TaskStateIn(task_id=f"task-{task}", goal=" ".join(["widget", *words])))
    mem.embed(w.scope, embedder=toy)  # before the changes below: erasure must reach the vectors
    # a search now reads the scope's vectors into this process; the one below must see
    # every change after it (graphmem/retrieval/vectors.py catches up)
    w.search("widget", mode="semantic", embedder=toy, match="any")
    if written and invalidate is not None and written.version_ids:
        ids = [v for v in written.version_ids if v]
        if ids:
            mem.invalidate(w.scope, ids[invalidate % len(ids)], reason="wrong")
    if retract is not None:
        mem.retract_source(w.scope, f"s{retract % len(srcs)}", reason="withdrawn")
    if erase is not None and rows:
        try:
            mem.erase(w.scope, entity=erase, reason="asked to forget", by="test")
        except Exception as exc:  # noqa: BLE001 - an entity never written cannot be erased
            note(f"erase: {exc}")
    options = {"cutoff": DAY0 + dt.timedelta(days=cutoff_day, hours=12), "types": types, "entity": entity}
    legal = w.search("widget", limit=1000, **options)
    text = " ".join(query)
    found = w.search(text, limit=1000, mode=mode, embedder=toy, match="any", **options)
    note(f"legal {[h.memory_id for h in legal.hits]}; found {[h.rank.why for h in found.hits]}")
    assert sorted(h.memory_id for h in found.hits) == sorted(h.memory_id for h in legal.hits)
    assert found.query.mode == mode and found.explain.kept == len(legal.hits)
    stored, q = vectors(mem, w.scope), toy.query(text)
    for h in found.hits:  # the score shown is the stored vector's exact similarity
        assert h.rank.semantic_score == pytest.approx(cosine01(stored[h.memory_id], q), abs=1e-6)
    keys = [(-(h.rank.authority.rank if h.rank.authority else 0), -h.rank.identifiers, -h.rank.fused_score)
            for h in found.hits]
    assert all(a[:2] < b[:2] or a[:2] == b[:2] and a[2] <= b[2] + 1e-9 for a, b in itertools.pairwise(keys))
    if mode == "semantic":  # a fact key ranks by its best legal version (search.hits), as in text search
        for h in found.hits:
            if h.type == "fact":
                assert h.rank.fused_score >= h.rank.semantic_score - 1e-9
            else:
                assert h.rank.fused_score == pytest.approx(h.rank.semantic_score, abs=1e-9)


@settings(max_examples=200, deadline=None)
@given(size=st.integers(1, 6000), distinct=st.integers(1, 50), data=st.data())
def test_the_best_candidates_are_those_a_full_sort_gives(size, distinct, data):
    """A large scope's best candidates come from a sampled threshold (rank._best): the
    same k scores and next score as sorting them all, ties, small scopes and a sample
    misled included."""
    k = data.draw(st.integers(0, size - 1))
    scores = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1))).integers(0, distinct, size) / distinct
    if data.draw(st.booleans()):  # the best scores all where a sample looks: too few reach its threshold
        scores[::max(1, size // 1024)] += 1
    best, rest = rank._best(scores, k)
    ranked = np.sort(scores)[::-1]
    assert len(set(best.tolist())) == k and sorted(scores[best].tolist()) == sorted(ranked[:k].tolist())
    assert rest == ranked[k]


DIMS = 3
vector_lists = st.none() | st.just([]) | st.lists(st.integers(-2, 2).map(float), min_size=DIMS, max_size=DIMS) \
    | st.lists(st.integers(-2, 2).map(float), min_size=2 * DIMS, max_size=2 * DIMS)  # two vectors: best of them


@st.composite
def memory_rows(draw: Any, i: int, vectors_of: Any = vector_lists) -> dict[str, Any]:
    """A memory as retrieval.vector_row gives it (times as epoch microseconds)."""
    return {"id": f"m{i}", "fact": draw(st.booleans()), "alive": draw(st.booleans()),
            "embedding": draw(vectors_of), "entities": draw(st.lists(st.sampled_from(("e1", "e2")), unique=True)),
            "recorded": draw(st.integers(0, 4)), "available": draw(st.none() | st.integers(0, 4))}


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_a_copys_scores_and_filters_are_each_memorys_own(data):
    """ScopeVectors.scores over a copy read whole, then caught up (memories added,
    erased, re-embedded, given several vectors): the members are those not erased (about
    the entity, when one is asked for); each member's similarity is the best of its
    vectors' (NaN without one; a memory that is not a member is not scored); the legal
    ones those recorded by known_at, public by the cutoff, of the types asked; unready
    counts the members with no vector yet; the span is the members' similarity range."""
    draw = data.draw
    first = [draw(memory_rows(i, st.none() | st.just([]) | vector_lists.filter(lambda v: v is None or len(v) <= DIMS)))
             for i in range(draw(st.integers(0, 12)))]
    later = [draw(memory_rows(draw(st.integers(0, 16)))) for _ in range(draw(st.integers(0, 8)))]
    copy = ScopeVectors(DIMS)
    copy.load([{"ids": [r["id"] for r in first], "embedding": [[r["embedding"]] for r in first]}
               | {k: [r[k] for r in first] for k in ("fact", "alive", "entities", "recorded", "available")}])
    copy.apply(later)
    now: dict[str, dict[str, Any]] = {}
    for row in first + later:  # a memory's type, entities and times are its first row's
        now[row["id"]] = {**row, **now.get(row["id"], {}), "alive": row["alive"], "embedding": row["embedding"]}
    query = draw(st.lists(st.integers(-2, 2).map(float), min_size=DIMS, max_size=DIMS))
    entity, facts = draw(st.sampled_from((None, "e1", "e2"))), draw(st.sampled_from((None, True, False)))
    known_at, cutoff = draw(st.integers(0, 4)), draw(st.integers(0, 4))
    got = copy.scores(query, entity, known_at, cutoff, facts)

    def similarity(embedding: list[float] | None) -> float:
        if not embedding:
            return math.nan
        q = np.asarray(query) / (np.linalg.norm(query) or 1)
        parts = np.asarray(embedding).reshape(-1, DIMS)
        return max((1 + p @ q / (np.linalg.norm(p) or 1)) / 2 for p in parts)

    rows = [now[memory_id] for memory_id in got.ids]
    member = [r["alive"] and (entity is None or entity in r["entities"]) for r in rows]
    assert got.member.tolist() == member
    expected = np.asarray([similarity(r["embedding"]) if m else math.nan for r, m in zip(rows, member, strict=True)])
    assert np.allclose(got.similarity, expected, atol=1e-6, equal_nan=True)
    assert got.legal.tolist() == [i for i, r in enumerate(rows) if member[i] and r["recorded"] <= known_at
                                  and (r["available"] is None or r["available"] <= cutoff)
                                  and (facts is None or r["fact"] == facts)]
    assert got.unready == sum(1 for i, r in enumerate(rows) if member[i] and r["embedding"] is None)
    sims = [s for s, m in zip(expected, member, strict=True) if m and not math.isnan(s)]
    assert np.allclose(got.span, (min(sims), max(sims)) if sims else (0.0, 0.0), atol=1e-6)


def dense_meaning(mode: str, sim: np.ndarray, member: np.ndarray, legal: np.ndarray,
                  text: dict[int, float], idents: dict[int, int]) -> np.ndarray:
    """The meaning score as the module docstring writes it, over every member of the scope
    at once: min-max over the members, a member the index did not match scoring text 0."""
    members = np.flatnonzero(member)
    s = sim[members].astype(np.float64)
    t = np.asarray([text.get(i, 0.0) for i in members])
    n = np.asarray([idents.get(i, 0) for i in members], np.float64)
    has = ~np.isnan(s)
    if mode == "semantic":
        m = np.where(has, s, 0.0)
    else:
        lo, hi = (s[has].min(), s[has].max()) if has.any() else (0.0, 0.0)
        f = np.where(has, s, lo)
        tmin, tmax = (t.min(), t.max()) if len(t) else (0.0, 0.0)
        m = (rank.TEXT_WEIGHT * ((t - tmin) / (tmax - tmin) if tmax > tmin else 0 * t)
             + (1 - rank.TEXT_WEIGHT) * ((f - lo) / (hi - lo) if hi > lo else 0 * f))
    out = dict(zip(members.tolist(), (2.0 * n + m).tolist(), strict=True))
    return np.asarray([out[i] for i in legal])


@settings(max_examples=300, deadline=None)
@given(size=st.integers(1, 60), mode=st.sampled_from(("semantic", "hybrid")), data=st.data())
def test_the_meaning_score_is_the_documented_one(size, mode, data):
    """rank._fused adds the full-text scores and identifiers where the index matched
    (sparse) and normalises over the members: the same scores, to the bit (a tie decides
    an order), as the formula computed densely over every member - scopes whose every
    member the index matched (the text's minimum is then not 0), members without a
    vector, spans of one value, matches outside the members or the copy included."""
    draw = data.draw
    sim = np.asarray(draw(st.lists(st.none() | st.sampled_from((0.1, 0.5, 0.5, 0.9)) | st.floats(0, 1),
                                   min_size=size, max_size=size)), dtype=float).astype(np.float32)  # None: NaN
    member = np.asarray(draw(st.lists(st.booleans(), min_size=size, max_size=size)))
    legal = np.asarray(sorted(draw(st.sets(st.sampled_from(np.flatnonzero(member).tolist())))
                              if member.any() else []), np.int64)
    # ids beyond size: in the index, written after this look (another search caught the
    # copy up meanwhile); beyond size + 2: never in the copy
    ids = [f"m{i}" for i in range(size + 3)]
    text = draw(st.dictionaries(st.integers(0, size + 5), st.floats(0.1, 9)))
    idents = draw(st.dictionaries(st.integers(0, size + 5), st.integers(1, 2)))
    scores = Scores(ids, {m: i for i, m in enumerate(ids)}, np.zeros(size, bool), sim, member, legal, 0,
                    _span(sim[member]))
    found = rank._Lookup({f"m{i}": v for i, v in text.items()}, {f"m{i}": v for i, v in idents.items()})
    inside = {i: v for i, v in text.items() if i < size and member[i]}
    expected = dense_meaning(mode, sim, member, legal, inside,
                             {i: v for i, v in idents.items() if i < size and member[i]})
    assert np.array_equal(rank._fused(mode, scores, found), expected)  # ties are exact: the same bits


def _span(sim: np.ndarray) -> tuple[float, float]:
    has = sim[~np.isnan(sim)]
    return (float(has.min()), float(has.max())) if len(has) else (0.0, 0.0)


# ------------------------------------------------------------------ behaviour


@pytest.fixture
def w(mem: Memory, scope: Scope) -> World:
    return World(mem, scope)


def test_an_identifier_ranks_the_memory_holding_it_first(w):
    for text in ("payment declined with error code insufficient funds",
                 "payment declined error insufficient funds again",
                 "declined payment error E-4012"):
        w.mem.save_task_state(w.scope, TaskStateIn(task_id=uuid.uuid4().hex[:8], goal=text))
    w.mem.embed(w.scope, embedder=toy)
    for mode in ("semantic", "hybrid"):
        found = w.search("payment declined error insufficient funds E-4012", mode=mode, embedder=toy)
        assert "E-4012" in found.hits[0].task_state.goal, found.hits[0].rank.why
        assert found.hits[0].rank.identifiers == 1 and found.hits[1].rank.identifiers == 0
        # a token of stop words only is no identifier (the index does not hold it)
        for words in ("IT", "IT'S", "AND/OR"):
            found = w.search(f"{words} payment declined E-4012", mode=mode, embedder=toy)
            assert found.hits[0].rank.identifiers == 1 and found.hits[1].rank.identifiers == 0, words


def test_a_paraphrase_found_by_meaning_that_text_misses(w):
    w.mem.save_task_state(w.scope, TaskStateIn(task_id="t1", goal="the certificates expired overnight"))
    w.mem.save_task_state(w.scope, TaskStateIn(task_id="t2", goal="lunch order for the team"))
    assert w.search("certificate expiry", match="all").status == "not_found"
    w.mem.embed(w.scope, embedder=toy)
    found = w.search("certificate expiry", mode="semantic", embedder=toy)
    assert found.hits[0].task_state.task_id == "t1" and found.explain.embedding_ms is not None


def test_erasure_takes_the_vectors_and_the_hit(w):
    w.source("s1", DAY0, title="incident report")
    w.mem.remember_experience(w.scope, ExperienceIn(trigger="tls certificate expired during deploy",
                                                    outcome="rolled back", evidence=("s1",),
                                                    entities=("acme",)))
    w.fact(Decimal(7), "s1")
    w.mem.embed(w.scope, embedder=toy)
    found = w.search("certificate expired", mode="hybrid", embedder=toy)
    assert len(found.hits) == 2 and all(v for v in vectors(w.mem, w.scope).values())
    w.mem.erase(w.scope, entity="acme", reason="forget acme", by="test")
    assert all(v is None for v in vectors(w.mem, w.scope).values())
    assert w.search("certificate expired", mode="hybrid", embedder=toy).status == "not_found"


def test_a_vector_goes_when_its_text_is_rebuilt_without_an_erased_source(w):
    """A fact kept alive by other evidence no longer names an erased source: its vector,
    made from the old text, goes too, and re-embedding makes it from the new text."""
    w.source("s1", DAY0, title="widget inventory")
    w.source("s2", DAY0, title="certificate expired overnight")
    version = w.fact(Decimal(7), "s1", "s2").version_id
    w.mem.embed(w.scope, embedder=toy)
    assert vectors(w.mem, w.scope)[version] is not None
    w.mem.erase(w.scope, source_id="s2", reason="withdrawn", by="test")
    assert vectors(w.mem, w.scope)[version] is None
    with pytest.raises(InputError, match="graphmem embed"):
        w.search("certificate expired", mode="semantic", embedder=toy)
    w.mem.embed(w.scope, embedder=toy)
    with w.mem.db.driver.session(database="neo4j") as s:
        text = s.run("MATCH (f:Fact {version_id: $v}) RETURN f.search_text AS t", v=version).single()["t"]
    assert "certificate" not in text and vectors(w.mem, w.scope)[version] == toy.query(text)


def test_another_embedder_is_refused_in_a_scope(w):
    w.mem.save_task_state(w.scope, TaskStateIn(task_id="t1", goal="deploy the widget"))
    w.mem.embed(w.scope, embedder=toy)
    for other in (Embedder(ToyEmbedder(16), name="toy:16"), Embedder(ToyEmbedder(32), name="other")):
        with pytest.raises(InputError, match="toy:32"):
            w.search("widget", mode="semantic", embedder=other)
    with pytest.raises(InputError, match="embedder"):
        w.search("widget", mode="semantic")  # none configured
    with pytest.raises(InputError, match="mode"):
        w.search("widget", mode="fuzzy", embedder=toy)


def test_a_process_copy_of_the_vectors_follows_every_write_of_another(w):
    """A second Memory (as another process) keeps its own copy of the scope's vectors
    (graphmem/retrieval/vectors.py): after its first search it sees each write of the
    first - a memory embedded, one not yet embedded (refused, never silently missed), an
    entity renamed (its memories' vectors cleared with their old text), an erasure - and
    ranks exactly as a fresh copy would."""
    reader = Memory(w.mem.db.driver)
    scope = w.scope

    def ids(mem: Memory, **kw) -> list[str]:
        return [h.memory_id for h in mem.search(scope, text="widget rollback", mode="hybrid", embedder=toy,
                                                match="any", limit=50, **kw).hits]

    def remember(task: str, goal: str, **kw) -> None:
        w.mem.save_task_state(scope, TaskStateIn(task_id=task, goal=goal, **kw))

    remember("t1", "widget rollback after the certificate expired")
    w.mem.embed(scope, embedder=toy)
    assert len(ids(reader)) == 1
    remember("t2", "widget deploy went fine", entities=("acme", "acme"))  # one memory, named twice
    w.mem.embed(scope, embedder=toy)
    assert len(ids(reader)) == 2 and ids(reader) == ids(Memory(w.mem.db.driver))
    remember("t3", "lunch order")
    w.source("s1", DAY0, title="widget rollback filing")
    w.fact(Decimal(7), "s1", entity="globex")
    with pytest.raises(InputError, match="2 memories .* no vector"):  # a task state, a fact version
        ids(reader)
    w.mem.embed(scope, embedder=toy)
    assert len(ids(reader)) == 4
    w.mem.put_entity(scope, Entity(id="acme", name="Acme Renamed", kind="company"))
    with pytest.raises(InputError, match="no vector"):  # t2's text now names the new name
        ids(reader)
    w.mem.embed(scope, embedder=toy)
    assert ids(reader, entity="acme") == [h.memory_id for h in w.search("widget", entity="acme").hits]
    w.mem.erase(scope, entity="acme", reason="forget acme", by="test")
    assert len(ids(reader)) == 3 and ids(reader, entity="acme") == []
    assert ids(reader) == ids(Memory(w.mem.db.driver))


def spaces(mem: Memory, scope: Scope) -> int:
    with mem.db.driver.session(database="neo4j") as s:
        return s.run("MATCH (s:EmbeddingSpace {tenant: $t}) RETURN count(s) AS n", t=scope.tenant).single()["n"]


def test_a_search_by_meaning_never_writes(w):
    """Memories not embedded yet: refused, naming the step that embeds them, with nothing
    written (no vector, no embedder record), or ranked after the embedded ones; once
    embedded, a search at a past known_at reads what was known then."""
    w.mem.save_task_state(w.scope, TaskStateIn(task_id="t1", goal="roll back the widget release"))
    before = dt.datetime.now(dt.UTC)
    for mode in ("semantic", "hybrid"):
        with pytest.raises(InputError, match="graphmem embed"):
            w.search("widget", mode=mode, embedder=toy)
    assert vectors(w.mem, w.scope) == {w.search("widget").hits[0].memory_id: None}
    assert spaces(w.mem, w.scope) == 0
    w.mem.embed(w.scope, embedder=toy)
    w.mem.save_task_state(w.scope, TaskStateIn(task_id="t2", goal="widget lunch"))
    found = w.search("widget", mode="semantic", embedder=toy, unembedded="last")
    assert [h.task_state.task_id for h in found.hits] == ["t1", "t2"] and found.hits[1].rank.semantic_score is None
    # hybrid with one vector in the scope: no similarity spread, and t2 none at all - it
    # takes the lowest similarity, and its fused score is a number (it was NaN)
    fused = {h.task_state.task_id: h.rank.fused_score for h in
             w.search("widget", mode="hybrid", embedder=toy, unembedded="last").hits}
    assert sorted(fused) == ["t1", "t2"] and all(math.isfinite(x) for x in fused.values())
    with pytest.raises(InputError, match="graphmem embed"):  # t2 still has no vector
        w.search("widget", mode="semantic", embedder=toy, known_at=before)
    w.mem.embed(w.scope, embedder=toy)
    past = w.search("widget", mode="hybrid", embedder=toy, known_at=before)
    assert [h.task_state.task_id for h in past.hits] == ["t1"] and spaces(w.mem, w.scope) == 1


def test_two_embedders_racing_for_a_new_scope_leave_one_record(w):
    """Two first embeddings of a scope at once: one embedder becomes the scope's, the
    other is refused; the scope keeps one record (schema.029's constraint as well)."""
    from concurrent.futures import ThreadPoolExecutor
    w.mem.save_task_state(w.scope, TaskStateIn(task_id="t1", goal="deploy the widget"))
    rivals = [Embedder(ToyEmbedder(8 + i), name=f"toy:{8 + i}") for i in range(4)]

    def first(e: Embedder) -> str:
        try:
            return w.mem.embed(w.scope, embedder=e)["embedder"]
        except InputError:
            return "refused"

    with ThreadPoolExecutor(4) as pool:
        outcome = list(pool.map(first, rivals))
    assert sorted(outcome).count("refused") == 3 and spaces(w.mem, w.scope) == 1
    winner = next(e for e in rivals if e.name in outcome)
    assert w.search("widget", mode="semantic", embedder=winner).hits
    with w.mem.db.driver.session(database="neo4j") as s, pytest.raises(Exception, match="already exists"):
        s.run("CREATE (:EmbeddingSpace {tenant: $t, scope: $s})", t=w.scope.tenant, s=w.scope.id).consume()


def test_a_switch_whose_commit_acknowledgement_is_lost_says_it_switched(w, monkeypatch):
    """``retrieval.switch`` moved the scope to its target only where the target was still
    set: a retry after its commit landed found none, and the re-embedding reported that
    the scope had not switched (``graphmem embed`` then leaves out "the scope switched to
    it")."""
    w.source("s1", DAY0, title="widget inventory")
    w.fact(Decimal(1), "s1", attribute="widget")
    w.mem.embed(w.scope, embedder=toy)
    new = Embedder(ToyEmbedder(16), name="toy:16", dims=16)
    lost = lose_first_acknowledgement(monkeypatch, writing="s.name = s.target")
    report = w.mem.embed(w.scope, embedder=new, switch=True)
    monkeypatch.undo()
    assert lost and report["switched"]
    assert w.search("widget", mode="semantic", embedder=new).hits


def test_two_models_under_one_name_are_refused(w):
    """Two lambdas are both ``<lambda>``, and two models of one dimension give a search
    numbers that mean nothing side by side: the scope keeps its embedder's vector of a
    fixed text, so another model under the recorded name is refused - searching,
    embedding, resuming a re-embedding - while the same model wrapped again, or run with
    float noise, is the same embedder. A new name and a switch make the new model the
    scope's."""
    w.mem.save_task_state(w.scope, TaskStateIn(task_id="t1", goal="deploy the widget"))
    model = ToyEmbedder(32)
    first = Embedder(lambda texts: model(texts))
    flipped = Embedder(lambda texts: [v[::-1] for v in model(texts)])  # another model, one dimension
    noisy = Embedder(lambda texts: [[x + 1e-3 for x in v] for v in model(texts)])
    assert first.name == flipped.name == noisy.name and first.name.endswith("<lambda>")
    w.mem.embed(w.scope, embedder=first)
    for use in (lambda e: w.search("widget", mode="semantic", embedder=e),
                lambda e: w.mem.embed(w.scope, embedder=e), lambda e: w.mem.embed(w.scope, embedder=e, switch=True)):
        with pytest.raises(InputError, match="not the model this scope's vectors were made with"):
            use(flipped)
    assert w.search("widget", mode="semantic", embedder=noisy).hits
    assert w.search("widget", mode="semantic", embedder=Embedder(lambda texts: model(texts))).hits
    named = Embedder(flipped._docs, name="flipped")
    assert w.mem.embed(w.scope, embedder=named, switch=True)["switched"]
    assert w.search("widget", mode="semantic", embedder=named).hits
    with pytest.raises(InputError, match="flipped"):
        w.search("widget", mode="semantic", embedder=first)


def test_a_re_embedding_resumed_with_another_model_under_its_name_is_refused(w):
    w.source("s1", DAY0, title="widget inventory")
    w.mem.assert_facts(w.scope, [w.fact_in(Decimal(i), "s1", attribute=f"widget_{i}") for i in range(70)])
    w.mem.embed(w.scope, embedder=toy)
    model = ToyEmbedder(16)

    def dying(texts):
        if len(texts) > 1:
            raise KeyboardInterrupt("killed")  # after the switch began
        return model(texts)

    with pytest.raises(KeyboardInterrupt):
        w.mem.embed(w.scope, embedder=Embedder(dying, name="next"), switch=True)
    impostor = Embedder(lambda texts: [v[::-1] for v in model(texts)], name="next")
    with pytest.raises(InputError, match="not the model"):
        w.mem.embed(w.scope, embedder=impostor, switch=True)
    assert w.mem.embed(w.scope, embedder=Embedder(model, name="next"), switch=True)["switched"]


def test_a_scope_recorded_before_probes_takes_its_embedders(w):
    """A scope whose record has no probe (written before probes were kept) takes its own
    embedder's on that embedder's next claim; another model under its name is refused from
    then on."""
    w.mem.save_task_state(w.scope, TaskStateIn(task_id="t1", goal="deploy the widget"))
    w.mem.embed(w.scope, embedder=toy)
    with w.mem.db.driver.session(database="neo4j") as s:
        s.run("MATCH (s:EmbeddingSpace {tenant: $t}) REMOVE s.probe", t=w.scope.tenant).consume()
    impostor = Embedder(lambda texts: [v[::-1] for v in ToyEmbedder(32)(texts)], name="toy:32")
    assert w.search("widget", mode="semantic", embedder=impostor).hits  # nothing recorded to tell them apart
    w.mem.embed(w.scope, embedder=toy)
    with pytest.raises(InputError, match="not the model"):
        w.search("widget", mode="semantic", embedder=impostor)


def test_a_killed_re_embedding_resumes_and_searches_wait_for_it(w):
    w.source("s1", DAY0, title="widget inventory")
    w.mem.assert_facts(w.scope, [w.fact_in(Decimal(i), "s1", attribute=f"widget_{i}") for i in range(70)])
    assert w.mem.embed(w.scope, embedder=toy)["embedded"] == 70
    batches = []

    def dying(texts):
        if len(texts) > 1:  # a batch (the probe text is one)
            batches.append(len(texts))
            if len(batches) == 2:
                raise KeyboardInterrupt("killed")
        return ToyEmbedder(16)(texts)

    new = Embedder(dying, name="toy:16", dims=16)
    with pytest.raises(InputError, match="toy:32"):
        w.mem.embed(w.scope, embedder=new)  # another model only with switch
    with pytest.raises(KeyboardInterrupt):
        w.mem.embed(w.scope, embedder=new, switch=True)
    with pytest.raises(InputError, match="re-embedded"):
        w.search("widget", mode="semantic", embedder=toy)
    seen = []
    report = w.mem.embed(w.scope, embedder=new, switch=True, progress=lambda d, t: seen.append((d, t)))
    assert report["embedded"] == 70 - 64 and report["switched"] and seen[-1] == (6, 6)
    assert w.search("widget 7", mode="semantic", embedder=new).hits
    with pytest.raises(InputError, match="toy:16"):
        w.search("widget", mode="semantic", embedder=toy)


def test_the_context_and_trace_record_the_mode(w):
    w.mem.save_task_state(w.scope, TaskStateIn(task_id="t1", goal="roll back the widget release"))
    w.mem.save_task_state(w.scope, TaskStateIn(task_id="t2", goal="order lunch"))
    w.mem.embed(w.scope, embedder=toy)
    found = w.search("rollback", mode="hybrid", embedder=toy, limit=1)
    ctx = w.mem.build_context(w.scope, task_id="job", memories=found, token_budget=500)
    assert ctx.query.mode == "hybrid" and ctx.query.embedder == "toy:32"
    other = next(h for h in w.search("rollback lunch", mode="semantic", embedder=toy).hits
                 if h.memory_id != found.hits[0].memory_id)
    trace = w.mem.trace(w.scope, ctx.snapshot_id, other.memory_id)
    assert trace.outcome == "not_considered"  # legal, ranked below the limit: not "not found"


def test_trace_of_a_search_by_meaning_judges_the_traced_memory_and_claims_no_text_rank(w):
    """A semantic snapshot's trace judged every memory of the scope by a text search of
    the scope alone (every score 0), and told a legal memory's rank by recency: "ranked
    #3" for the memory the search ranks second. Now only the traced memories are judged,
    at the snapshot's time, and the rank by meaning is not claimed."""
    goals = {"b": "widget release", "c": "order lunch", "a": "widget release rollback done"}
    saved = {task: w.mem.save_task_state(w.scope, TaskStateIn(task_id=task, goal=goal)).id
             for task, goal in goals.items()}  # b, then c, then a: a is the newest, b the oldest
    w.mem.save_task_state(w.scope, TaskStateIn(task_id="c", goal="order lunch for two"))
    w.mem.embed(w.scope, embedder=toy)
    ranked = w.search("widget release rollback", mode="semantic", embedder=toy, limit=10).hits
    assert [h.task_state.task_id for h in ranked[:2]] == ["a", "b"]
    found = w.search("widget release rollback", mode="semantic", embedder=toy, limit=1)
    ctx = w.mem.build_context(w.scope, task_id="job", memories=found, token_budget=500)
    second = w.mem.trace(w.scope, ctx.snapshot_id, ranked[1].memory_id).steps[0]
    assert second.outcome == "not_considered" and "#" not in second.detail, second.detail
    assert "by meaning" in second.detail
    step = w.mem.trace(w.scope, ctx.snapshot_id, saved["c"]).steps[0]
    assert (step.outcome, step.filter) == ("filtered", "status:superseded"), step
    pytest.importorskip("mcp")
    from test_mcp import call, ok

    from graphmem.integrations.mcp import FixedAccess, build_server
    w.mem.save_task_state(w.scope, TaskStateIn(task_id="t1", goal="the certificates expired overnight"))
    mem = Memory(w.mem.db.driver, embedder=toy)
    mem.embed(w.scope)
    server = build_server(mem, FixedAccess(w.scope, "agent"))
    assert ok(call(server, "search", text="certificate expiry"))["status"] == "not_found"
    found = ok(call(server, "search", text="certificate expiry", mode="semantic"))
    assert found["status"] == "found" and found["hits"][0]["rank"]["semantic_score"] > 0.5
    assert ok(call(server, "search", text="certificate expiry", mode="hybrid"))["status"] == "found"


def stored(mem: Memory, scope: Scope, memory_id: str) -> tuple[list[float] | None, str | None]:
    """A memory's stored vector and search text (a test's own look at the graph)."""
    with mem.db.driver.session(database="neo4j") as s:
        row = s.run("MATCH (n) WHERE (n:Fact OR n:Memory) AND n.tenant = $t "
                    "AND coalesce(n.version_id, n.memory_id) = $id "
                    "RETURN n.embedding AS v, n.search_text AS text", t=scope.tenant, id=memory_id).single()
        return row["v"], row["text"]


def test_an_async_callable_object_embeds_and_searches(w):
    """An embedder is "any callable list[str] -> list[list[float]] (sync or async)": an
    object whose ``__call__`` is async (or a sync callable returning an awaitable) embeds
    the scope, and then searches it - the query is awaited as the documents are."""
    class AsyncToy:
        async def __call__(self, texts: list[str]) -> list[list[float]]:
            return ToyEmbedder(32)(texts)

    w.mem.save_task_state(w.scope, TaskStateIn(task_id="t1", goal="roll back the widget release"))
    for emb in (Embedder(AsyncToy(), name="toy:32"), Embedder(lambda texts: AsyncToy()(texts), name="toy:32")):
        w.mem.embed(w.scope, embedder=emb)
        found = w.search("widget rollback", mode="semantic", embedder=emb)
        assert [h.task_state.task_id for h in found.hits] == ["t1"]


def test_an_erasure_during_embedding_leaves_no_vector_of_the_erased_text(w):
    """`graphmem embed` reads a batch's texts, calls the model, then stores the vectors:
    a source erased while the model runs rebuilds the fact's text without the source's
    title and drops its vector; the vector made from the old text must not be stored
    after it (it holds the erased source's words, and no later embed would replace it)."""
    w.source("s1", DAY0, title="widget inventory")
    w.source("s2", DAY0, title="certificate expired overnight")
    version = w.fact(Decimal(7), "s1", "s2").version_id
    erased: list[bool] = []

    def erasing(texts: list[str]) -> list[list[float]]:
        if not erased:  # the erasure commits while the model embeds the old text
            w.mem.erase(w.scope, source_id="s2", reason="withdrawn", by="test")
            erased.append(True)
        return ToyEmbedder(32)(texts)

    w.mem.embed(w.scope, embedder=Embedder(erasing, name="toy:32", dims=32))
    assert erased
    vector, text = stored(w.mem, w.scope, version)
    assert "certificate" not in text
    assert vector is None or vector == toy.query(text)
    w.mem.embed(w.scope, embedder=toy)  # what is left to embed is embedded from the new text
    vector, text = stored(w.mem, w.scope, version)
    assert vector == toy.query(text)


def test_a_renamed_entity_during_embedding_leaves_no_vector_of_the_old_name(w):
    """The same for a rename: the old name must not stay in a vector no embed replaces."""
    from graphmem import Entity

    w.source("s1", DAY0, title="widget inventory")
    version = w.fact(Decimal(7), "s1").version_id
    renamed: list[bool] = []

    def renaming(texts: list[str]) -> list[list[float]]:
        if not renamed:
            w.mem.put_entity(w.scope, Entity(id="acme", name="Zenith Holdings", kind="company"))
            renamed.append(True)
        return ToyEmbedder(32)(texts)

    w.mem.embed(w.scope, embedder=Embedder(renaming, name="toy:32", dims=32))
    w.mem.embed(w.scope, embedder=toy)
    vector, text = stored(w.mem, w.scope, version)
    assert "Zenith" in text and vector == toy.query(text)


def test_a_fact_keys_rank_fields_are_those_of_the_version_it_ranks_by(w):
    """Two publishers disagree on a figure: the key is one hit showing both versions
    (the earlier one's id first). Only the later one's source names the accession in the
    query, and the key ranks by that version (2 per identifier + its fused score); its
    explain must say so - one identifier, a fused score in [0, 1] - not an identifier
    count of 0 beside a fused score above 2."""
    w.source("s1", DAY0, publisher="alpha", title="quarterly filing")
    w.source("s2", DAY0 + dt.timedelta(days=1), publisher="beta", title="filing 0001-23-456")
    w.fact(Decimal(7), "s1")
    w.fact(Decimal(8), "s2")
    w.mem.embed(w.scope, embedder=toy)
    for mode in ("semantic", "hybrid"):
        hit = w.search("0001-23-456 revenue", mode=mode, embedder=toy).hits[0]
        assert hit.status == "conflicted" and len(hit.memory_ids) == 2
        assert hit.rank.identifiers == 1, hit.rank.why
        assert 0.0 <= hit.rank.fused_score <= 1.0, hit.rank.why


def test_a_hybrid_search_of_too_many_words_is_refused_as_a_text_search_is(w):
    """Hybrid's text side is the query's words as a full-text query (at most
    limits.SEARCH_TERMS clauses, as for a text search); past that bound it was silently
    dropped - every hit's text score 0, a semantic search under a hybrid label."""
    w.mem.save_task_state(w.scope, TaskStateIn(task_id="t1", goal="roll back the widget release"))
    w.mem.save_task_state(w.scope, TaskStateIn(task_id="t2", goal="order lunch for the team"))
    w.mem.embed(w.scope, embedder=toy)
    filler = ["q" + "".join("abcdefghij"[int(d)] for d in str(i)) for i in range(300)]
    text = " ".join(["widget", "rollback", *filler])
    with pytest.raises(InputError, match="at most 256"):
        w.search(text, match="any")
    with pytest.raises(InputError, match="at most 256"):
        w.search(text, mode="hybrid", embedder=toy)
    assert w.search(text, mode="semantic", embedder=toy).hits  # no text side: no bound



def test_an_identifier_with_inner_dots_stays_exact_by_meaning(w):
    """``S.A.`` is one word to the index (letters joined by dots), an exact and required
    phrase to a text search; by meaning it was taken for stop words (``s``, ``a``) and
    got no identifier credit - and in hybrid, as a required clause of the words' query
    standing in for the one other identifier's holders, it took E-4012's credit away from
    the memory holding E-4012."""
    for task, goal in (("t1", "payment declined for Acme S.A. supplier"), ("t2", "payment declined for supplier"),
                       ("t3", "payment declined E-4012 supplier")):
        w.mem.save_task_state(w.scope, TaskStateIn(task_id=task, goal=goal))
    w.mem.embed(w.scope, embedder=toy)
    assert [h.task_state.task_id for h in w.search("S.A. payment").hits] == ["t1"]
    for mode in ("semantic", "hybrid"):
        found = w.search("E-4012 S.A. payment declined supplier", mode=mode, embedder=toy)
        assert {h.task_state.task_id: h.rank.identifiers for h in found.hits} == {"t1": 1, "t2": 0, "t3": 1}, mode
        assert found.hits[-1].task_state.task_id == "t2"


@pytest.mark.parametrize("spec", ["toy:0", "toy:-3", "toy:x"])
def test_a_bad_toy_dimension_is_refused_as_a_bad_argument(w, spec):
    """``toy:0`` raised ZeroDivisionError, ``toy:-3`` IndexError and ``toy:x`` ValueError
    from deep inside the embedder: an InputError naming the dimension is what a bad
    argument gets (``graphmem embed --embedder``, GRAPHMEM_EMBEDDER, ``embedder=``)."""
    w.mem.save_task_state(w.scope, TaskStateIn(task_id="t1", goal="roll back the widget release"))
    with pytest.raises(InputError, match="dim"):
        w.mem.embed(w.scope, embedder=spec)
    with pytest.raises(InputError, match="dim"):
        w.search("widget", mode="semantic", embedder=spec)


def test_explain_by_meaning_counts_what_the_copys_filters_removed_as_a_text_search_does(w):
    """A search by meaning sends only members of the asked types, recorded by known_at and
    public by the cutoff; the others were counted nowhere (explain.removed said nothing
    of the cutoff that left out half the scope). They are counted as a text search of
    the same memories counts them."""
    w.source("early", DAY0, title="widget report")
    w.source("late", DAY0 + dt.timedelta(days=30), title="widget report")
    w.mem.assert_facts(w.scope, [w.fact_in(Decimal(i), "early" if i % 2 else "late", attribute=f"widget_{i}")
                                 for i in range(6)])
    w.mem.save_task_state(w.scope, TaskStateIn(task_id="t1", goal="count the widgets"))
    w.mem.embed(w.scope, embedder=toy)
    cutoff = DAY0 + dt.timedelta(days=1)
    for types in (["fact"], ["fact", "task_state"], ["task_state"]):
        text = w.search("widget", types=types, cutoff=cutoff, match="any", limit=50)
        for mode in ("semantic", "hybrid"):
            meaning = w.search("widget", types=types, cutoff=cutoff, mode=mode, embedder=toy, limit=50)
            assert meaning.explain.removed == text.explain.removed, (types, mode, meaning.explain)
            assert meaning.explain.matched == text.explain.matched
    assert w.search("widget", types=["fact"], cutoff=cutoff, mode="semantic",
                    embedder=toy).explain.removed == {"type": 1, "cutoff": 3}  # the task state; late facts
