// Context snapshots (what a context builder showed a model) and the echo guard that
// uses them. A snapshot is a (:Record:ContextSnapshot) linked by INCLUDED to every
// memory node it rendered; each INCLUDED edge keeps that memory's rendered line and
// the hashes of the line and of its claim (graphmem/echo.py).

// name: context.record
// Record a snapshot, once: its id names the build_context call (graphmem.context), so
// a retry of a transaction that committed but whose acknowledgement was lost finds the
// snapshot it wrote (an earlier recorded_at) and changes nothing.
MERGE (s:Record:ContextSnapshot {id: $id})
ON CREATE SET s += {
  kind: 'context', tenant: $tenant, scope: $scope, task_id: $task_id,
  rendered: $rendered, rendered_hash: $rendered_hash, echo_hash: $echo_hash,
  token_budget: $token_budget, tokens_used: $tokens_used, tokens_considered: $tokens_considered,
  tokenizer: $tokenizer, considered: $considered, included: $included, cut: $cut,
  items: $items, query: $query, query_words: $query_words, cutoff: $cutoff, known_at: $known_at,
  recorded_at: $recorded_at}
WITH s
CALL (s) {
  WITH s WHERE s.recorded_at = $recorded_at
  UNWIND $lines AS line
  OPTIONAL MATCH (f:Fact {version_id: line.memory_id})
  WHERE f.tenant = $tenant AND f.scope = $scope
  OPTIONAL MATCH (m:Memory {memory_id: line.memory_id})
  WHERE m.tenant = $tenant AND m.scope = $scope
  WITH line, coalesce(f, m) AS n
  WHERE n IS NOT NULL
  CREATE (s)-[:INCLUDED {memory_id: line.memory_id, item: line.item, line: line.line,
                         tokens: line.tokens, text: line.text, line_hash: line.line_hash,
                         claim_hash: line.claim_hash}]->(n)
}
RETURN s.recorded_at AS recorded_at

// name: context.reread
// build_context's re-read, in one statement: which of $ids name a fact version,
// experience or task state of this scope (`stored`: [id, type, key uid]; the caller
// refuses any other id), the read rule on the keys of those fact versions at (C, K)
// under the search's evidence requirement (fact.read, included), the experiences
// and task states with their evidence as of K (search.memories, included), and the task
// states a later revision of their task replaced by (C, K) (search.hits' `superseded`).
// $cutoff and $known_at come as [epoch seconds, nanoseconds] (graphmem.values.epoch).
WITH datetime.fromepoch($cutoff[0], $cutoff[1]) AS C,
     datetime.fromepoch($known_at[0], $known_at[1]) AS K
CALL () {
  UNWIND $ids AS id
  OPTIONAL MATCH (f:Fact {version_id: id})
  WHERE f.tenant = $tenant AND f.scope = $scope
  OPTIONAL MATCH (m:Memory {memory_id: id})
  WHERE m.tenant = $tenant AND m.scope = $scope
  RETURN collect(CASE WHEN f IS NOT NULL THEN [id, 'fact', f.key_uid]
                      WHEN m:Experience THEN [id, 'experience', null]
                      WHEN m IS NOT NULL THEN [id, 'task_state', null] END) AS stored,
         collect(DISTINCT f.key_uid) AS uids,
         collect(m.memory_id) AS memory_ids
}
WITH C, K, stored, uids, memory_ids,
     [i IN range(0, size(uids) - 1) | {
       i: i, uid: uids[i], entity: null, attribute: null, unit: null, definition: null,
       period: null, valid_from: null, valid_to: null, cutoff: 0, known_at: 1, idem: null}]
       AS reads,
     [C, K] AS times
RETURN stored, uids,
       COLLECT {
         UNWIND memory_ids AS id
         MATCH (t:TaskState {memory_id: id})
         WHERE t.tenant = $tenant AND t.scope = $scope
           AND EXISTS { MATCH (o:TaskState {tenant: $tenant, task_id: t.task_id})
                        WHERE o.scope = $scope AND o.revision > t.revision
                          AND o.recorded_at <= K AND o.available_by <= C }
         RETURN id
       } AS superseded,
       COLLECT {
         CALL (reads, times) {
           // include: fact.read $reads=reads $times=times $brief=false
         }
         RETURN {i: i, known_at: known_at, key: key, status: status, candidates: candidates,
                 explain: explain, removed: removed} AS answer
       } AS answers,
       COLLECT {
         CALL (memory_ids, K) {
           // include: search.memories $memory_ids=memory_ids $known_at=K
         }
         RETURN {m: m, entities: entities, ev: ev} AS detail
       } AS details

// name: context.erase_names
// The names an erasure's target is known by, read before lifecycle.erase removes them:
// an entity's id, name and aliases, or a source's id and title.
OPTIONAL MATCH (e:Entity {uid: $entity_uid})
WHERE e.tenant = $tenant AND e.scope = $scope
OPTIONAL MATCH (s:Source {uid: $source_uid})
WHERE s.tenant = $tenant AND s.scope = $scope
RETURN [n IN [e.id, e.name] + coalesce(e.aliases, []) + [s.id, s.title] WHERE n IS NOT NULL]
         AS names

// name: context.scrub_queries
// The search query of every snapshot an erasure reaches goes (the snapshot keeps what it
// considered, included and cut, by id): a snapshot that considered a memory the erasure
// erased, or whose query names the erased entity or source ($names: each a sequence of
// whole words, as graphmem.search.words writes them, found in the query's words).
MATCH (x:Record:Erasure {id: $record_id})
WHERE x.tenant = $tenant AND x.scope = $scope
WITH x, COLLECT { MATCH (x)-[:ERASES]->(n) RETURN coalesce(n.version_id, n.memory_id, n.id) }
          AS erased
MATCH (s:ContextSnapshot)
WHERE s.tenant = $tenant AND s.scope = $scope AND s.query IS NOT NULL
  AND (any(m IN s.considered WHERE m IN erased)
       OR any(name IN $names WHERE s.query_words CONTAINS name
              // a snapshot recorded before query_words existed: any mention of the
              // name in its query text (scrubbing too much is the safe side)
              OR (s.query_words IS NULL AND toLower(s.query) CONTAINS trim(name))))
SET s.query = null, s.query_words = null, s.erased_at = coalesce(s.erased_at, $recorded_at)
MERGE (x)-[:ERASES]->(s)
RETURN s.id AS id

// name: context.get
MATCH (s:Record:ContextSnapshot {id: $id})
WHERE s.tenant = $tenant AND s.scope = $scope
RETURN s {.*} AS s,
       COLLECT {
         MATCH (s)-[r:INCLUDED]->()
         RETURN r {.memory_id, .item, .line, .text} AS r ORDER BY r.item, r.line
       } AS lines

// name: context.list
// The ids of this scope's snapshots, newest first, one page ($skip, $limit), of one task
// when $task_id is given. `echo_hash IS NOT NULL` (every snapshot has one) lets the
// planner seek the (tenant, echo_hash) index instead of scanning every tenant's snapshots.
MATCH (s:ContextSnapshot)
WHERE s.tenant = $tenant AND s.echo_hash IS NOT NULL AND s.scope = $scope
  AND ($task_id IS NULL OR s.task_id = $task_id)
RETURN s.id AS id
ORDER BY s.recorded_at DESC, s.id
SKIP $skip LIMIT $limit

// name: context.memory_state
// Whether a memory id names something stored in this scope, and when: a fact version,
// an experience or task state, or a candidate (never live).
OPTIONAL MATCH (f:Fact {version_id: $id})
WHERE f.tenant = $tenant AND f.scope = $scope
OPTIONAL MATCH (m:Memory {memory_id: $id})
WHERE m.tenant = $tenant AND m.scope = $scope
OPTIONAL MATCH (c:Record:Candidate {id: $id})
WHERE c.tenant = $tenant AND c.scope = $scope
WITH coalesce(f, m, c) AS n, c IS NOT NULL AS candidate
RETURN n IS NOT NULL AS stored, candidate, n.recorded_at AS recorded_at,
       n.erased_at AS erased_at

// name: echo.find
// Which snapshot of this scope rendered text with one of these fingerprints, or
// injected one of these memory ids (see graphmem/echo.py).
CALL () {
  MATCH (s:ContextSnapshot)
  WHERE s.tenant = $tenant AND s.echo_hash IN $hashes AND s.scope = $scope
  RETURN s.id AS snapshot, 'rendering' AS match, s.echo_hash AS hash, null AS memory_id
  UNION
  MATCH (s:ContextSnapshot)-[r:INCLUDED]->()
  WHERE r.line_hash IN $hashes AND s.tenant = $tenant AND s.scope = $scope
  RETURN s.id AS snapshot, 'line' AS match, r.line_hash AS hash, r.memory_id AS memory_id
  UNION
  MATCH (s:ContextSnapshot)-[r:INCLUDED]->()
  WHERE r.claim_hash IN $hashes AND s.tenant = $tenant AND s.scope = $scope
  RETURN s.id AS snapshot, 'claim' AS match, r.claim_hash AS hash, r.memory_id AS memory_id
  UNION
  MATCH (s:ContextSnapshot)-[r:INCLUDED]->()
  WHERE r.memory_id IN $memory_ids AND s.tenant = $tenant AND s.scope = $scope
  RETURN s.id AS snapshot, 'memory_id' AS match, null AS hash, r.memory_id AS memory_id
}
RETURN snapshot, match, hash, memory_id
LIMIT 10
