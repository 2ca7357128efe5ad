// Retrieval by meaning (graphmem/retrieval/): the vectors kept with each memory, the
// embedder a scope's vectors were made with, and the similarity of the legal candidates
// of a search (search.hits decides which memories are legal; nothing here filters).
// A memory's vector is `embedding` (one or more vectors of `dims` floats, concatenated:
// a LangGraph item indexed on several fields has one per field) made by `embedder`;
// erasing the memory's payload erases it (lifecycle.erase, cascade.erase_memories).

// name: retrieval.space
// The embedder a scope's vectors are made with, and the one a re-embedding moves it to.
OPTIONAL MATCH (s:EmbeddingSpace {tenant: $tenant, scope: $scope})
RETURN s.name AS name, s.dims AS dims, s.target AS target, s.target_dims AS target_dims

// name: retrieval.claim
// The first embedder used in a scope becomes the scope's (written under the tenant's
// clock lock, so two first uses cannot both claim it); the record as it now stands.
MERGE (s:EmbeddingSpace {tenant: $tenant, scope: $scope})
  ON CREATE SET s.name = $name, s.dims = $dims, s.recorded_at = $recorded_at
RETURN s.name AS name, s.dims AS dims, s.target AS target, s.target_dims AS target_dims

// name: retrieval.retarget
// Begin (or continue) re-embedding a scope with another embedder: searches are refused
// until graphmem embed has re-embedded every memory and retrieval.switch ran.
MATCH (s:EmbeddingSpace {tenant: $tenant, scope: $scope})
SET s.target = $name, s.target_dims = $dims
RETURN s.name AS name

// name: retrieval.switch
// Every memory of the scope is re-embedded: the target becomes the scope's embedder.
MATCH (s:EmbeddingSpace {tenant: $tenant, scope: $scope})
WHERE s.target = $name
SET s.name = s.target, s.dims = s.target_dims, s.target = null, s.target_dims = null,
    s.recorded_at = $recorded_at
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
// Store vectors made by $name ($rows: {id, fact, vector}); a memory erased since its
// text was read takes none.
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
WITH n, row WHERE n.erased_at IS NULL
SET n.embedding = row.vector, n.embedder = $name
RETURN count(n) AS stored

// name: retrieval.similarity
// The cosine similarity of each named memory's vector with $vector, in [0, 1] (Neo4j's
// vector.similarity.cosine: (1 + cos) / 2); a memory with several vectors takes its
// best ($zero: the query's vector is all zeros). `ready` is false for a memory with no vector by $name yet (the caller embeds
// it); an empty vector list (a LangGraph item put with index=False) has no similarity.
// include: retrieval.nodes
WITH n, n.embedder = $name AND n.embedding IS NOT NULL AS ready
RETURN coalesce(n.version_id, n.memory_id) AS id, ready,
       reduce(best = null, s IN [p IN [i IN range(0, CASE WHEN ready THEN size(n.embedding) / $dims ELSE 0 END - 1) |
                                        n.embedding[i * $dims..(i + 1) * $dims]] |
              // a zero vector (an empty text) is orthogonal to everything: cos 0
              CASE WHEN $zero OR all(x IN p WHERE x = 0.0) THEN 0.5 ELSE vector.similarity.cosine(p, $vector) END] |
              CASE WHEN best IS NULL OR s > best THEN s ELSE best END) AS similarity

// name: retrieval.text_scores
// Full-text scores of the scope's memories for a query (the scope token is in $lucene):
// hybrid ranking's text side, and the memories holding an identifier. Scores only: which
// memories are legal is search.hits' answer, never this one's.
CALL db.index.fulltext.awaitEventuallyConsistentIndexRefresh()
CALL db.index.fulltext.queryNodes('graphmem_search_text', $lucene) YIELD node AS n, score
WHERE n.tenant = $tenant AND n.scope = $scope
RETURN coalesce(n.version_id, n.memory_id, n.id) AS id, score

// fragment: retrieval.rescore
// `found` for search.hits: `matched_text` ([node, text score] for the memories a search's
// Lucene query matched) as it is, for a text search ($meaning null); for a search by
// meaning ($meaning: {name, dims, vector, zero, mode, w, text, idents}) the scope's
// memories (the Lucene query is the scope alone) rescored: 2 x the query's identifiers
// the memory holds ($meaning.idents by id) + the fused score in [0, 1] - the similarity
// (semantic) or w x min-max(text score, $meaning.text by id) + (1 - w) x
// min-max(similarity) over the scope's memories (hybrid). `unready`: [id, is a fact] of
// the memories with no vector by $meaning.name yet (the caller embeds them, asks again).
WITH matched_text WHERE $meaning IS NULL
RETURN matched_text AS found, [] AS unready
UNION
WITH matched_text WHERE $meaning IS NOT NULL
UNWIND matched_text AS hit
WITH hit[0] AS n, coalesce(hit[0].version_id, hit[0].memory_id, hit[0].id) AS id
WITH n, id, n.embedder = $meaning.name AND n.embedding IS NOT NULL AS ready
WITH n, id, ready, coalesce($meaning.text[id], 0.0) AS t,
     reduce(best = null, s IN [p IN [i IN range(0, CASE WHEN ready THEN size(n.embedding) / $meaning.dims ELSE 0 END - 1) |
                                     n.embedding[i * $meaning.dims..(i + 1) * $meaning.dims]] |
            CASE WHEN $meaning.zero OR all(x IN p WHERE x = 0.0) THEN 0.5
                 ELSE vector.similarity.cosine(p, $meaning.vector) END] |
            CASE WHEN best IS NULL OR s > best THEN s ELSE best END) AS sim
WITH collect({n: n, id: id, ready: ready, t: t, sim: sim}) AS rows,
     min(t) AS tmin, max(t) AS tmax, min(sim) AS smin, max(sim) AS smax
RETURN [r IN rows | [r.n, 2.0 * coalesce($meaning.idents[r.id], 0) + CASE $meaning.mode
          WHEN 'semantic' THEN coalesce(r.sim, 0.0)
          ELSE $meaning.w * CASE WHEN tmax > tmin THEN (r.t - tmin) / (tmax - tmin) ELSE 0.0 END
               + (1 - $meaning.w) * CASE WHEN smax > smin THEN (coalesce(r.sim, smin) - smin) / (smax - smin)
                                         ELSE 0.0 END
        END]] AS found,
       [r IN rows WHERE NOT r.ready AND (r.n:Fact OR r.n:Memory) | [r.id, r.n:Fact]] AS unready
