// Agent memory types beside facts (experiences, task states), the candidate queue
// with its approval and rejection records, and the erase cascade. Experiences and task
// states are (:Memory) nodes with a unique memory_id; like fact versions they are
// immutable once written, except for erasure (payload removed, tombstone kept).

// name: memory.content_hash
// A stored memory's content hash (to tell a re-sent write from a different one).
MATCH (m:Memory {memory_id: $memory_id})
WHERE m.tenant = $tenant AND m.scope = $scope
RETURN m.content_hash AS content_hash

// name: experience.create
CREATE (x:Memory:Experience {memory_id: $memory_id, tenant: $tenant, scope: $scope,
                             trigger: $trigger, preconditions: $preconditions,
                             procedure: $procedure, outcome: $outcome,
                             content_hash: $content_hash, available_by: $available_by,
                             recorded_at: $recorded_at})
WITH x
CALL (x) {
  UNWIND $evidence AS uid
  MATCH (s:Source {uid: uid})
  WHERE s.tenant = $tenant AND s.scope = $scope
  CREATE (x)-[:VALIDATED_BY {recorded_at: $recorded_at}]->(s)
}
CALL (x) {
  UNWIND $entities AS uid
  MATCH (e:Entity {uid: uid})
  WHERE e.tenant = $tenant AND e.scope = $scope
  CREATE (x)-[:ABOUT]->(e)
}
RETURN x.memory_id AS memory_id

// name: task.current
// The latest revision of a task's state (revision 0 when it has none).
OPTIONAL MATCH (t:TaskState {tenant: $tenant, task_id: $task_id})
WHERE t.scope = $scope
WITH t ORDER BY t.revision DESC LIMIT 1
RETURN t.memory_id AS memory_id, coalesce(t.revision, 0) AS revision,
       t.content_hash AS content_hash

// name: task.create
CREATE (t:Memory:TaskState {memory_id: $memory_id, tenant: $tenant, scope: $scope,
                            task_id: $task_id, goal: $goal, checkpoint: $checkpoint,
                            open_items: $open_items, artifact_refs: $artifact_refs,
                            revision: $revision, content_hash: $content_hash,
                            available_by: coalesce($available_by, $recorded_at),
                            recorded_at: $recorded_at})
WITH t
CALL (t) {
  UNWIND $sources AS uid
  MATCH (s:Source {uid: uid})
  WHERE s.tenant = $tenant AND s.scope = $scope
  CREATE (t)-[:REFERS_TO]->(s)
}
CALL (t) {
  UNWIND $entities AS uid
  MATCH (e:Entity {uid: uid})
  WHERE e.tenant = $tenant AND e.scope = $scope
  CREATE (t)-[:ABOUT]->(e)
}
RETURN t.memory_id AS memory_id

// name: candidate.create
// A write that failed its gate. Idempotent: the same failing write re-sent is one
// candidate (its id comes from scope, memory type and event id or content).
MERGE (c:Record:Candidate {id: $id})
ON CREATE SET c.kind = 'candidate', c.tenant = $tenant, c.scope = $scope,
              c.memory_type = $memory_type, c.payload = $payload, c.reasons = $reasons,
              c.refs = $refs, c.search_text = $search_text, c.search_scope = $scope_token,
              c.recorded_at = $recorded_at
RETURN c.id AS id

// name: candidate.list
// Candidates with their status, computed from their approval and rejection records.
MATCH (c:Candidate {tenant: $tenant, scope: $scope})
WHERE $ids IS NULL OR c.id IN $ids
OPTIONAL MATCH (c)<-[:APPROVES]-(a:Approval)
OPTIONAL MATCH (c)<-[:REJECTS]-(r:Rejection)
OPTIONAL MATCH (a)-[:MADE]->(n)
WITH c, a, r, n,
     CASE WHEN a IS NOT NULL THEN 'approved' WHEN r IS NOT NULL THEN 'rejected'
          ELSE 'pending' END AS status
WHERE $status IS NULL OR status = $status
RETURN c {.*} AS c, status, coalesce(a.recorded_at, r.recorded_at) AS decided_at,
       coalesce(a.by, r.by) AS decided_by, r.reason AS decision_reason,
       coalesce(n.version_id, n.memory_id) AS memory_id
ORDER BY c.recorded_at, c.id

// name: candidate.approve
// The approval record, linked to the candidate and to the live memory it made.
MATCH (c:Record:Candidate {id: $id})
WHERE c.tenant = $tenant AND c.scope = $scope
OPTIONAL MATCH (f:Fact {version_id: $memory_id})
WHERE f.tenant = $tenant AND f.scope = $scope
OPTIONAL MATCH (m:Memory {memory_id: $memory_id})
WHERE m.tenant = $tenant AND m.scope = $scope
WITH c, coalesce(f, m) AS made
CREATE (a:Record:Approval {id: $record_id, kind: 'approved', tenant: $tenant, scope: $scope,
                           by: $by, recorded_at: $recorded_at})
CREATE (a)-[:APPROVES]->(c)
CREATE (a)-[:MADE]->(made)
RETURN a.id AS id

// name: candidate.reject
MATCH (c:Record:Candidate {id: $id})
WHERE c.tenant = $tenant AND c.scope = $scope
CREATE (r:Record:Rejection {id: $record_id, kind: 'rejected', tenant: $tenant, scope: $scope,
                            by: $by, reason: $reason, recorded_at: $recorded_at})
CREATE (r)-[:REJECTS]->(c)
RETURN r.id AS id

// name: cascade.downstream
// Fact versions derived, at any depth, from these versions: a derivation's output
// carries information from its inputs, so an erasure reaches it too.
UNWIND $version_ids AS vid
MATCH (f:Fact {version_id: vid})
WHERE f.tenant = $tenant AND f.scope = $scope
MATCH (f)<-[:USES|EVIDENCED_BY]-+(out:Fact)
RETURN collect(DISTINCT out.version_id) AS version_ids

// name: cascade.source_facts
// Versions with this source among their evidence (their search text names it).
MATCH (f:Fact)-[:EVIDENCED_BY]->(s:Source {uid: $source_uid})
WHERE f.tenant = $tenant AND f.scope = $scope
RETURN collect(f.version_id) AS version_ids

// name: cascade.erase_memories
// Removes the payload of every experience, task state and candidate that used the
// erased entity or source (about it, validated by it, referring to it); links each to
// the erasure record lifecycle.erase created. Ids, hashes and times stay.
MATCH (x:Record:Erasure {id: $record_id})
WHERE x.tenant = $tenant AND x.scope = $scope
CALL (x) {
  CALL () {
    MATCH (:Entity {uid: $entity_uid})<-[:ABOUT]-(m:Memory)
    RETURN m
    UNION
    MATCH (:Source {uid: $source_uid})<-[:VALIDATED_BY|REFERS_TO]-(m:Memory)
    RETURN m
  }
  WITH m
  WHERE m.tenant = $tenant AND m.scope = $scope
  SET m.trigger = null, m.preconditions = null, m.procedure = null, m.outcome = null,
      m.goal = null, m.checkpoint = null, m.open_items = null, m.artifact_refs = null,
      m.search_text = null, m.search_scope = null, m.embedding = null, m.embedder = null,
      m.embedded_at = $recorded_at,
      m.erased_at = coalesce(m.erased_at, $recorded_at)
  CREATE (x)-[:ERASES]->(m)
  RETURN collect(m.memory_id) AS memories
}
CALL (x) {
  MATCH (c:Candidate {tenant: $tenant, scope: $scope})
  WHERE any(uid IN coalesce(c.refs, []) WHERE uid IN [$entity_uid, $source_uid])
  SET c.payload = null, c.search_text = null, c.search_scope = null,
      c.erased_at = coalesce(c.erased_at, $recorded_at)
  CREATE (x)-[:ERASES]->(c)
  RETURN collect(c.id) AS candidates
}
RETURN memories, candidates

// name: cascade.scrub_snapshots
// Every context snapshot that rendered a memory this erasure reached loses that
// memory's line, and so does the line of a fact that keeps other evidence but listed
// the erased source (with its uri, which is payload): the rendering keeps a tombstone
// line, the edge keeps its hashes.
MATCH (x:Record:Erasure {id: $record_id})
WHERE x.tenant = $tenant AND x.scope = $scope
CALL (x) {
  MATCH (x)-[:ERASES]->(n)<-[r:INCLUDED]-(s:ContextSnapshot)
  RETURN s, r
  UNION
  MATCH (x)-[:ERASES]->(:Source)<-[:EVIDENCED_BY]-(:Fact)<-[r:INCLUDED]-(s:ContextSnapshot)
  RETURN s, r
}
WITH x, s, r
WHERE r.text IS NOT NULL
WITH x, s, collect(r) AS rels
SET s.rendered = reduce(t = s.rendered, r IN rels |
                        replace(t, r.text, '- [erased ' + r.memory_id + ']')),
    s.erased_at = coalesce(s.erased_at, $recorded_at)
FOREACH (r IN rels | SET r.text = null)
CREATE (x)-[:ERASES]->(s)
RETURN s.id AS id
