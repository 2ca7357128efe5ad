"""The search index is eventually consistent (Lucene is updated after each commit, in
the background), yet a search sees every write committed before it: search.hits
waits for the index to catch up first."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

from world import World, t

from graphmem import FactIn, Period, indexing


def test_a_search_right_after_a_large_write_finds_every_fact_of_it(migrated, scope):
    # one transaction of 3,000 versions: their index updates are still queued when the
    # commit returns (without the wait, this search finds only part of them)
    mem = migrated.connect(chunk_size=5000)
    w = World(mem, scope)
    w.source("0000950170-24-000001", t("2024-05-01"))
    quarters = [Period(end=dt.date(2000 + n // 4, 3 * (n % 4) + 1, 1)) for n in range(100)]
    facts = [FactIn(entity="acme", attribute=f"kpi{a:02d}", value=Decimal(a * 1000 + q), unit="USD",
                    period=period, sources=["0000950170-24-000001"])
             for a in range(30) for q, period in enumerate(quarters)]
    w.mem.assert_facts(w.scope, facts)
    # The last fact written is the one whose index update is most likely still queued.
    found = w.search("kpi29", cutoff=t("2024-06-01"), limit=200)
    assert len(found.hits) == 100
    assert {h.answer.attribute for h in found.hits} == {"kpi29"}
    mem.close()


def test_a_new_version_is_indexed_with_the_text_a_reindex_gives_it(migrated, scope):
    # a new version gets its search text as it is created (fact.create_versions); any
    # later touch rebuilds it with search.index_facts: both must write the same text
    mem = migrated.connect()
    w = World(mem, scope)
    w.source("0000950170-24-000002", t("2024-05-01"), title="10-Q for Q1", publisher="0000001")
    version = w.fact(Decimal("12.5"), "0000950170-24-000002")

    def text() -> str:
        with mem.db.driver.session(database=mem.db.database) as session:
            return session.run("MATCH (f:Fact {version_id: $vid}) RETURN f.search_text AS text",
                               vid=version.version_id).single()["text"]

    created = text()
    for part in ("0000950170-24-000002", "10-Q for Q1", "0000001", "acme", "revenue", "12.5"):
        assert part in created
    with mem.db.driver.session(database=mem.db.database) as session:
        session.execute_write(lambda tx: tx.run(
            "MATCH (f:Fact {version_id: $vid}) SET f.search_text = null", vid=version.version_id).consume())
    mem.db.write(lambda tx: indexing.index_facts(tx, scope, [version.version_id]), "reindex")
    assert text() == created
    mem.close()


def test_new_evidence_adds_its_source_words_as_a_reindex_would(migrated, scope):
    # fact.add_evidence appends the new source's text; a full rebuild lists every
    # source: the same words, whatever their order
    mem = migrated.connect()
    w = World(mem, scope)
    w.source("0000950170-24-000003", t("2024-05-01"), title="10-Q for Q1", publisher="0000001")
    w.source("0000950170-25-000004", t("2025-02-01"), title="10-K for 2024", publisher="0000001")
    first = w.fact(Decimal("12.5"), "0000950170-24-000003")
    again = w.fact(Decimal("12.5"), "0000950170-25-000004")
    assert again.version_id == first.version_id and len(again.sources) == 2

    def words() -> list[str]:
        with mem.db.driver.session(database=mem.db.database) as session:
            text = session.run("MATCH (f:Fact {version_id: $vid}) RETURN f.search_text AS text",
                               vid=first.version_id).single()["text"]
        return sorted(text.split())

    appended = words()
    assert "0000950170-25-000004" in appended and "2024" in appended
    mem.db.write(lambda tx: indexing.index_facts(tx, scope, [first.version_id]), "reindex")
    assert words() == appended
    mem.close()
