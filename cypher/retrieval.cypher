// Retrieval by meaning (graphmem/retrieval/): the vectors kept with each memory, the
// embedder a scope's vectors were made with, and the similarity of the legal candidates
// of a search (search.hits decides which memories are legal; nothing here filters).
// A memory's vector is `embedding` (one or more vectors of `dims` floats, concatenated:
// a LangGraph item indexed on several fields has one per field) made by `embedder`;
// erasing the memory's payload erases it (lifecycle.erase, cascade.erase_memories).
// `embedded_at`: when its vector was last set or cleared (the writing transaction's
// clock time), so that a process's copy of the scope's vectors can catch up
// (graphmem/retrieval/vectors.py).

// fragment: retrieval.now
// The writing transaction's time, for a statement that has no $recorded_at: the tenant
// clock's, which admin.tick set first in every write transaction.
COLLECT { MATCH (clock:GraphmemClock {id: $tenant}) RETURN clock.last }[0]

// name: retrieval.space
// The embedder a scope's vectors are made with, and the one a re-embedding moves it to.
OPTIONAL MATCH (s:EmbeddingSpace {tenant: $tenant, scope: $scope})
RETURN s.name AS name, s.dims AS dims, s.target AS target, s.target_dims AS target_dims, s.probe AS probe

// name: retrieval.claim
// The first embedder used in a scope becomes the scope's (written under the tenant's
// clock lock, so two first uses cannot both claim it), with its vector of the probe text;
// a scope recorded before probes were kept takes its own embedder's. The record as it
// now stands.
MERGE (s:EmbeddingSpace {tenant: $tenant, scope: $scope})
  ON CREATE SET s.name = $name, s.dims = $dims, s.probe = $probe, s.recorded_at = $recorded_at
FOREACH (_ IN CASE WHEN s.probe IS NULL AND s.name = $name AND s.dims = $dims THEN [1] ELSE [] END |
  SET s.probe = $probe)
RETURN s.name AS name, s.dims AS dims, s.target AS target, s.target_dims AS target_dims, s.probe AS probe

// name: retrieval.retarget
// Begin (or continue) re-embedding a scope with another embedder: searches are refused
// until graphmem embed has re-embedded every memory and retrieval.switch ran.
// The target's vector of the probe text is the first run's: a resumed run compares its own.
MATCH (s:EmbeddingSpace {tenant: $tenant, scope: $scope})
SET s.target_probe = CASE WHEN s.target = $name AND s.target_probe IS NOT NULL THEN s.target_probe
                          ELSE $probe END,
    s.target = $name, s.target_dims = $dims
RETURN s.name AS name, s.target_probe AS target_probe

// name: retrieval.switch
// Every memory of the scope is re-embedded: the target becomes the scope's embedder. A
// scope already switched to $name says so too (a retry after a commit that landed).
MATCH (s:EmbeddingSpace {tenant: $tenant, scope: $scope})
WHERE s.target = $name OR (s.target IS NULL AND s.name = $name)
FOREACH (_ IN CASE WHEN s.target = $name THEN [1] ELSE [] END |
  SET s.name = s.target, s.dims = s.target_dims, s.probe = s.target_probe, s.target = null,
      s.target_dims = null, s.target_probe = null, s.recorded_at = $recorded_at)
RETURN s.name AS name

// name: retrieval.pending
// The memories of a scope with search text and no vector by $name (never embedded, or
// by another embedder): what a backfill still has to do. Read through the full-text
// index by the scope's token alone ($lucene), which holds exactly the scope's memories
// that have search text; candidates are never embedded (never legal).
CALL db.index.fulltext.awaitEventuallyConsistentIndexRefresh()
CALL db.index.fulltext.queryNodes('graphmem_search_text', $lucene) YIELD node AS n
WHERE n.tenant = $tenant AND n.scope = $scope AND (n:Fact OR n:Memory)
  AND coalesce(n.embedder, '') <> $name
RETURN coalesce(n.version_id, n.memory_id) AS id, n:Fact AS fact

// fragment: retrieval.nodes
// `n`: the memories named by $facts (version ids) and $memories (memory ids) in the scope.
CALL () {
  UNWIND $facts AS id
  MATCH (n:Fact {version_id: id})
  WHERE n.tenant = $tenant AND n.scope = $scope
  RETURN n
  UNION ALL
  UNWIND $memories AS id
  MATCH (n:Memory {memory_id: id})
  WHERE n.tenant = $tenant AND n.scope = $scope
  RETURN n
}

// name: retrieval.texts
// What a memory is embedded by: its search text, and a fact's value (a LangGraph
// store embeds fields of it); nothing for an erased memory.
// include: retrieval.nodes
WITH n WHERE n.search_text IS NOT NULL
RETURN coalesce(n.version_id, n.memory_id) AS id, n.search_text AS text, n.value AS value

// name: retrieval.set_vectors
// Store vectors made by $name ($rows: {id, fact, vector, text}); a memory erased since
// its text was read takes none, nor one whose text was rebuilt meanwhile (`text`: the
// search text the vector was made from; an entity renamed, a source it named erased):
// that rebuild dropped the vector of the old text, which may hold an erased source's
// words, and the memory stays for the next embed to make from its new text. A row
// without `text` is made in the transaction that wrote the memory (a LangGraph put).
UNWIND $rows AS row
CALL (row) {
  MATCH (n:Fact {version_id: row.id})
  WHERE row.fact AND n.tenant = $tenant AND n.scope = $scope
  RETURN n
  UNION ALL
  MATCH (n:Memory {memory_id: row.id})
  WHERE NOT row.fact AND n.tenant = $tenant AND n.scope = $scope
  RETURN n
}
WITH n, row WHERE n.erased_at IS NULL AND (row.text IS NULL OR n.search_text = row.text)
SET n.embedding = row.vector, n.embedder = $name, n.embedded_at =
  // include: retrieval.now
RETURN count(n) AS stored

// fragment: retrieval.vector_row
// A memory as a process's copy of its scope's vectors keeps it: its id, whether it is a
// fact version, whether it is still searchable (not erased), its vector(s) by $name, and
// what a search's candidates are chosen by, all fixed when it is written: its recorded_at
// and available_by (epoch microseconds: search.hits' known_at and cutoff filters) and the
// entities it is about (a fact version: its key's).
RETURN coalesce(n.version_id, n.memory_id) AS id, n:Fact AS fact, n.search_text IS NOT NULL AS alive,
       CASE WHEN n.embedder = $name THEN n.embedding END AS embedding,
       n.recorded_at.epochSeconds * 1000000 + n.recorded_at.nanosecond / 1000 AS recorded,
       n.available_by.epochSeconds * 1000000 + n.available_by.nanosecond / 1000 AS available,
       CASE WHEN n:Fact THEN COLLECT { MATCH (n)-[:VERSION_OF]->(:FactKey)-[:ABOUT]->(e:Entity) RETURN e.uid }
            ELSE COLLECT { MATCH (n)-[:ABOUT]->(e:Entity) RETURN DISTINCT e.uid } END AS entities

// name: retrieval.vectors
// Every fact version and memory of a scope (retrieval.vector_row), for a process's first
// look at its vectors: in records of $chunk memories, each a list per field (a record per
// memory costs the driver more than reading the store does).
CALL () {
  MATCH (n:Fact) WHERE n.tenant = $tenant AND n.scope = $scope AND n.recorded_at IS NOT NULL
  RETURN n
  UNION ALL
  MATCH (n:Memory) WHERE n.tenant = $tenant AND n.scope = $scope AND n.recorded_at IS NOT NULL
  RETURN n
}
CALL (n) {
  // include: retrieval.vector_row
}
// (each vector in a list of its own: collect drops nulls, and an unembedded memory has none)
WITH collect(id) AS ids, collect(fact) AS fact, collect(alive) AS alive,
     collect([embedding]) AS embedding, collect(entities) AS entities,
     collect(recorded) AS recorded, collect(available) AS available
UNWIND range(0, size(ids) - 1, $chunk) AS at
RETURN ids[at..at + $chunk] AS ids, fact[at..at + $chunk] AS fact, alive[at..at + $chunk] AS alive,
       embedding[at..at + $chunk] AS embedding, entities[at..at + $chunk] AS entities,
       recorded[at..at + $chunk] AS recorded, available[at..at + $chunk] AS available

// name: retrieval.prepare
// Everything a search by meaning reads before it ranks, in one round trip:
// - `space`: the scope's embedder record (retrieval.space);
// - what changed in the scope since the process last looked at its vectors ($since: the
//   tenant clock's time then; $store: the store's id then): nothing when the tenant's
//   clock has not moved (every write ticks it), else the scope's fact versions and
//   memories written, or whose vector was set or cleared, after $since. The clock is read
//   first, so a write that commits after it is read again next time. No rows without
//   $since (a first look reads retrieval.vectors) or when the store is another (it was
//   replaced: read whole again);
// - `found`: for each Lucene query of $lucene (the scope's token in each), the ids of the
//   memories of the scope it matches and their scores, as two lists (hybrid's text side,
//   the query's identifiers: graphmem/retrieval/rank.py);
// - `now`, this read's time: a search's default cutoff and known_at.
CALL db.index.fulltext.awaitEventuallyConsistentIndexRefresh()
CALL db.info() YIELD id AS store
OPTIONAL MATCH (c:GraphmemClock {id: $tenant})
WITH store, c.last AS last
CALL (store, last) {
  WITH store, last WHERE store = $store AND last > $since
  CALL () {
    MATCH (n:Fact) WHERE n.tenant = $tenant AND n.scope = $scope AND n.recorded_at > $since
    RETURN n
    UNION
    MATCH (n:Fact) WHERE n.tenant = $tenant AND n.scope = $scope AND n.embedded_at > $since
    RETURN n
    UNION
    MATCH (n:Memory) WHERE n.tenant = $tenant AND n.scope = $scope AND n.recorded_at > $since
    RETURN n
    UNION
    MATCH (n:Memory) WHERE n.tenant = $tenant AND n.scope = $scope AND n.embedded_at > $since
    RETURN n
  }
  CALL (n) {
    // include: retrieval.vector_row
  }
  RETURN collect({id: id, fact: fact, alive: alive, embedding: embedding, entities: entities,
                  recorded: recorded, available: available}) AS rows
}
CALL () {
  UNWIND $lucene AS query
  CALL (query) {
    CALL db.index.fulltext.queryNodes('graphmem_search_text', query) YIELD node AS n, score
    WHERE n.tenant = $tenant AND n.scope = $scope
    RETURN collect(coalesce(n.version_id, n.memory_id, n.id)) AS ids, collect(score) AS scores
  }
  RETURN collect([ids, scores]) AS found
}
OPTIONAL MATCH (s:EmbeddingSpace {tenant: $tenant, scope: $scope})
RETURN store, last, datetime.transaction() AS now, rows, found,
       {name: s.name, dims: s.dims, target: s.target, target_dims: s.target_dims,
        probe: CASE WHEN $probe THEN s.probe END} AS space

// fragment: retrieval.rescore
// `found` for search.hits: `matched_text` ([node, text score] for the memories a search's
// Lucene query matched) as it is, for a text search ($meaning null). A search by meaning
// ($meaning: {candidates, rest, others}) scores the scope's memories in process
// (graphmem/retrieval/rank.py) and sends its best candidates (in no order),
// $meaning.candidates ([id, is a fact, score]); `others` more memories of the scope score
// at most $meaning.rest (null: none), which bounds them (`beyond`, search.hits' frontier).
WITH matched_text WHERE $meaning IS NULL
RETURN matched_text AS found
UNION
WITH matched_text WHERE $meaning IS NOT NULL
UNWIND $meaning.candidates AS c
CALL (c) {
  MATCH (n:Fact {version_id: c[0]}) WHERE c[1]
  RETURN n
  UNION ALL
  MATCH (n:Memory {memory_id: c[0]}) WHERE NOT c[1]
  RETURN n
}
RETURN collect([n, c[2]]) AS found
