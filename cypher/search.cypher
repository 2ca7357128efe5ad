// Search: the text every memory is found by (kept in step with writes by
// graphmem/indexing.py), and the hard filters a search applies before any ranking.
// The full-text index is graphmem_search_text (schema.021), eventually consistent:
// search.hits waits for every committed update to be indexed before it queries it.

// fragment: search.source_text
// A source as search text, from `s`: its id, title, kind and publisher, so that an
// accession number, a ticker or a publisher finds what the source stands behind.
s.id + ' ' + coalesce(s.title, '') + ' ' + s.kind + ' ' + coalesce(s.publisher, '')

// fragment: search.fact_text
// The text a fact version `f` is found by: its key `k` (the entity id, and the kind,
// name and aliases of its entity `e`; attribute, definition, unit, period), its value,
// and `sources`, the text of every source behind it; null once the version is erased.
// Written by fact.create_versions for a new version and by search.index_facts after
// an entity is renamed or a version erased, so both must say the same thing: hence
// one fragment. (fact.add_evidence appends its source's text: the same words.)
CASE WHEN f.erased_at IS NULL THEN
  k.entity + ' ' + coalesce(e.kind, '') + ' ' + coalesce(e.name, '') + ' '
  + reduce(t = '', a IN coalesce(e.aliases, []) | t + ' ' + a) + ' '
  + k.attribute + ' ' + k.definition + ' ' + k.unit + ' ' + k.period + ' '
  + coalesce(f.value, '') + ' ' + sources
END

// name: search.index_facts
// Rebuild the search text of fact versions (search.fact_text) after their entity is
// renamed or they are erased (an erased version drops out of the index). A vector made
// from the old text goes with it (graphmem/retrieval): it could still hold an erased
// source's words; graphmem embed makes it again from the new text.
UNWIND $version_ids AS vid
MATCH (f:Fact {version_id: vid})-[:VERSION_OF]->(k:FactKey)
WHERE f.tenant = $tenant AND f.scope = $scope
OPTIONAL MATCH (k)-[:ABOUT]->(e:Entity)
WITH f, k, e,
     reduce(t = '', text IN COLLECT {
       MATCH (f)-[:EVIDENCED_BY]->(s:Source)
       RETURN
         // include: search.source_text
     } | t + ' ' + text) AS sources
SET f.search_scope = CASE WHEN f.erased_at IS NULL THEN $scope_token END,
    f.embedding = null, f.embedder = null,
    f.search_text =
      // include: search.fact_text
SET f.embedded_at =
  // include: retrieval.now
RETURN count(f) AS indexed

// name: search.index_memories
// The text an experience or task state is found by: its own fields, the entities it is
// about and the sources that validate it or that it refers to; a vector made from the
// old text goes with it (as in search.index_facts).
UNWIND $memory_ids AS mid
MATCH (m:Memory {memory_id: mid})
WHERE m.tenant = $tenant AND m.scope = $scope
WITH m,
     reduce(t = '', x IN COLLECT {
       MATCH (m)-[:ABOUT]->(e:Entity)
       RETURN e.id + ' ' + coalesce(e.name, '') + ' '
              + reduce(u = '', a IN coalesce(e.aliases, []) | u + ' ' + a)
     } | t + ' ' + x) AS entities,
     reduce(t = '', x IN COLLECT {
       MATCH (m)-[:VALIDATED_BY|REFERS_TO]->(s:Source)
       RETURN
         // include: search.source_text
     } | t + ' ' + x) AS sources
WITH m, entities + ' ' + sources AS linked,
     reduce(t = '', x IN coalesce(m.preconditions, []) + coalesce(m.procedure, [])
                         + coalesce(m.open_items, []) + coalesce(m.artifact_refs, []) | t + ' ' + x)
       AS lists
SET m.search_scope = CASE WHEN m.erased_at IS NULL THEN $scope_token END,
    m.embedding = null, m.embedder = null,
    m.search_text = CASE WHEN m.erased_at IS NULL THEN
      coalesce(m.trigger, '') + ' ' + coalesce(m.outcome, '') + ' ' + coalesce(m.task_id, '') + ' '
      + coalesce(m.goal, '') + ' ' + coalesce(m.checkpoint, '') + ' ' + lists + ' ' + linked
    END
SET m.embedded_at =
  // include: retrieval.now
RETURN count(m) AS indexed

// name: search.entity_text
// An entity's searchable fields before it is updated (to reindex only on a change);
// no row for a new entity.
MATCH (e:Entity {uid: $uid})
WHERE e.tenant = $tenant AND e.scope = $scope
RETURN e.name AS name, e.kind AS kind, e.aliases AS aliases, e.erased_at IS NOT NULL AS erased

// name: search.about_entity
// Every fact version and memory about an entity (their text includes its names).
MATCH (e:Entity {uid: $uid})
WHERE e.tenant = $tenant AND e.scope = $scope
RETURN COLLECT { MATCH (e)<-[:ABOUT]-(:FactKey)<-[:VERSION_OF]-(f:Fact) RETURN f.version_id }
         AS version_ids,
       COLLECT { MATCH (e)<-[:ABOUT]-(m:Memory) RETURN m.memory_id } AS memory_ids

// name: search.hits
// Step 1 of a search: the index hits in this scope, and every hard filter that is a
// property of the hit itself, before any ranking or limit. Scope is the index lookup
// (the search_scope token, a 128-bit hash of the scope) and is re-checked on the node of
// every hit evaluated. Then, for every type:
//   type -> entity -> task -> known_at (recorded_at <= K) -> erased -> candidate (never
//   live) -> cutoff (available_by <= C; for a fact version that is its earliest
//   evidence, so this is exactly fact.read's own cutoff stage).
// A fact version's status and evidence are the read rule's (fact.read, run next on the
// keys of the versions kept here). Experiences and task states are decided here:
//   retracted (no validating source public by C and not retracted by K) -> evidence
//   (none meets the requirement) -> superseded (a later revision of the same task).
// Returns the effective (known_at, cutoff) as epoch microseconds, what each filter
// removed, the kept experiences and task states in rank order, the fact keys best bound
// first, and - so that a search is usually one round trip - the read rule's answers for
// the first batch of keys and the details of the memories that can reach the page.
// $limit: the search's limit, null for a trace (every hit evaluated, every key read,
// removed ids listed, no details); $keys: how many keys to return (null: all); $read:
// run the first batch; $lazy: stop early when the first hits settle the page (below).
// Every subquery is its own projection (planned as an Apply per hit), never inside a
// CASE (a nested plan re-run per row, many times slower).
// $known_at and $cutoff come as [epoch seconds, nanoseconds] (graphmem.values.epoch:
// cheaper to send than a datetime, which the driver encodes in Python).
WITH CASE WHEN $known_at IS NULL THEN
       // include: admin.known_at
          ELSE datetime.fromepoch($known_at[0], $known_at[1]) END AS K
WITH K, CASE WHEN $cutoff IS NULL THEN datetime.transaction()
          ELSE datetime.fromepoch($cutoff[0], $cutoff[1]) END AS C
// read-your-writes: index every update committed so far before querying
CALL db.index.fulltext.awaitEventuallyConsistentIndexRefresh()
CALL (K, C) {
  // Early termination. The index streams hits by text score; ranking is authority, then
  // score, then recency, then id (a fact key ranks by its best matched version kept:
  // its score, then its availability; its id is the key's uid). No memory of the tenant
  // ranks above its strongest source (`top`, from the end of an index), and none
  // without a source - a task state, a candidate, a type not asked for, anything not
  // public by C (`able` false) - ranks above one that has it. With $lazy, the hits are
  // ordered by (able, score, availability, id), and only those before the 1.5 x
  // $limit-th able hit are evaluated (a guess of how far to read, which the check below
  // makes safe). Every hit after them - and so every fact key whose matched versions
  // all come after them - ranks no better than the `frontier` (`top`, or 0 if it is
  // not able, with its score, availability and id): once $limit hits rank strictly
  // above that, the page is settled (graphmem/search.py checks, after the read rule);
  // if not, the search asks again with $lazy false and every hit is evaluated.
  OPTIONAL CALL () {
    MATCH (s:Source) USING INDEX s:Source(tenant, authority_rank)
    WHERE s.tenant = $tenant AND s.authority_rank IS NOT NULL
    WITH s ORDER BY s.tenant DESC, s.authority_rank DESC LIMIT 1
    RETURN s.authority_rank AS top
  }
  WITH coalesce(top, 0) AS top, -4611686018427387904 AS never
  CALL () {
    WITH 1 AS text WHERE $meaning IS NULL
    CALL db.index.fulltext.queryNodes('graphmem_search_text', $lucene) YIELD node AS n, score
    RETURN collect([n, score]) AS matched_text
  }
  // a search by meaning takes its best candidates by meaning instead (everything below -
  // filters, early termination, ranking - is the same; graphmem/retrieval/rank.py)
  CALL (matched_text) {
    // include: retrieval.rescore
  }
  CALL (C, never, top, found) {  // the first 1.5 x $limit + 1 hits in that order
    WITH C, never, found, 'fact' IN $types AS facts, 'experience' IN $types AS experiences
    UNWIND CASE WHEN $lazy AND top > 0 THEN found ELSE [] END AS hit
    WITH C, never, facts, experiences, hit[0] AS n, hit[1] AS score
    WITH C, never, facts, experiences, n, score, n.key_uid AS key,  // a fact version's
         n.available_by AS at
    WITH n, score, coalesce(key, n.memory_id, n.id) AS id,
         CASE WHEN at <= C THEN at.epochMillis ELSE never END AS at,
         CASE WHEN key IS NULL THEN experiences AND n:Experience ELSE facts END AS asked
    WITH n, score, at, id, asked AND at > never AS able
    ORDER BY able DESC, score DESC, at DESC, id
    LIMIT coalesce($limit + $limit / 2 + 1, 0)
    RETURN collect([n, score, at, id, able]) AS first
  }
  WITH top, found, first, $limit + $limit / 2 AS enough
  WITH size(found) + coalesce($meaning.others, 0) AS matched,
       CASE WHEN enough <= size(first) AND first[enough - 1][4] THEN enough END AS upto,
       top, found, first
  // the memories a search by meaning did not send score at most $meaning.rest: no
  // better than its authority bound with that score (the latest availability, the
  // smallest id)
  WITH matched, coalesce(first[..upto], found) AS evaluated,
       CASE WHEN upto < size(first)
            THEN [CASE WHEN first[upto][4] THEN top ELSE 0 END] + first[upto][1..4]
            WHEN $meaning.rest IS NOT NULL THEN [top, $meaning.rest, 4611686018427387904, '']
       END AS frontier
  CALL (evaluated, K, C) {
    UNWIND evaluated AS hit
    WITH hit[0] AS n, hit[1] AS score
    WHERE n.tenant = $tenant AND n.scope = $scope
    WITH n, score,
         CASE WHEN n:Fact THEN 'fact' WHEN n:Experience THEN 'experience'
              WHEN n:TaskState THEN 'task_state' ELSE 'candidate' END AS type
    // Each subquery starts with a guard on values it imports, which the planner checks
    // before expanding: the entity's only when an entity is asked for, the rest only for
    // the hits that every cheaper filter kept (the type it concerns, not yet removed).
    WITH n, score, type,
         EXISTS { MATCH (n)-[:VERSION_OF]->(:FactKey)-[:ABOUT]->(e:Entity)
                  WHERE $entity_uid IS NOT NULL AND type = 'fact' AND e.uid = $entity_uid }
           AS key_about,
         EXISTS { MATCH (n)-[:ABOUT]->(e:Entity)
                  WHERE $entity_uid IS NOT NULL AND type <> 'fact' AND e.uid = $entity_uid }
           AS memory_about
    WITH n, score, type,
         CASE
           WHEN NOT coalesce(n.memory_type, type) IN $types THEN 'type'
           WHEN $entity_uid IS NOT NULL AND NOT CASE type WHEN 'fact' THEN key_about
                WHEN 'candidate' THEN $entity_uid IN coalesce(n.refs, []) ELSE memory_about END
             THEN 'entity'
           WHEN $task_id IS NOT NULL AND type = 'task_state' AND n.task_id <> $task_id THEN 'task'
           WHEN n.recorded_at > K THEN 'known_at'
           WHEN n.erased_at IS NOT NULL THEN 'erased'
           WHEN type = 'candidate' THEN 'candidate'
           WHEN n.available_by > C THEN 'cutoff'
         END AS removed_by
    WITH n, score, type, removed_by,
         // the strongest source of a fact version: an upper bound of the authority the
         // read rule can give it
         COLLECT { MATCH (n)-[:EVIDENCED_BY]->(s:Source)
                   WHERE removed_by IS NULL AND type = 'fact'
                   RETURN s.authority_rank ORDER BY s.authority_rank DESC LIMIT 1 } AS strongest,
         // an experience's validating sources public by C and not retracted by K
         COLLECT { MATCH (n)-[v:VALIDATED_BY]->(s:Source)
                   WHERE removed_by IS NULL AND type = 'experience'
                     AND v.recorded_at <= K AND s.available_by <= C
                     AND NOT EXISTS { (s)<-[:RETRACTS]-(x:Retraction) WHERE x.recorded_at <= K }
                   RETURN {rank: s.authority_rank, kind: s.kind} } AS live,
         EXISTS { MATCH (o:TaskState {tenant: $tenant, task_id: n.task_id})
                  WHERE removed_by IS NULL AND type = 'task_state'
                    AND o.scope = $scope AND o.revision > n.revision
                    AND o.recorded_at <= K AND o.available_by <= C } AS newer
    WITH n, score, type, removed_by, strongest, newer,
         reduce(m = null, e IN live |
                CASE WHEN e.rank >= $min_rank AND ($kinds IS NULL OR e.kind IN $kinds)
                          AND (m IS NULL OR e.rank > m) THEN e.rank ELSE m END) AS required,
         size(live) AS live
    WITH n, score, type, strongest, required,
         CASE
           WHEN removed_by IS NOT NULL OR type = 'fact' THEN removed_by
           WHEN type = 'experience' AND live = 0 THEN 'retracted'
           WHEN type = 'experience' AND required IS NULL THEN 'evidence'
           WHEN type = 'task_state' AND ($min_rank > 0 OR $kinds IS NOT NULL) THEN 'evidence'
           WHEN type = 'task_state' AND newer THEN 'superseded'
         END AS removed_by
    // Compact rows (the driver decodes every value): times as epoch milliseconds; removed
    // ids only when asked for (trace), else reasons only.
    WITH max(CASE WHEN removed_by IS NULL THEN score END) AS best,
         collect(removed_by) AS reasons,
         collect(CASE WHEN removed_by IS NOT NULL AND $limit IS NULL
                      THEN [coalesce(n.version_id, n.memory_id, n.id), removed_by] END) AS dropped,
         collect(CASE WHEN removed_by IS NULL AND type <> 'fact' THEN {
           id: n.memory_id, type: type, score: score, at: n.available_by.epochMillis,
           rank: coalesce(required, 0)} END) AS memories,
         collect(CASE WHEN removed_by IS NULL AND type = 'fact' THEN {
           key: n.key_uid, id: n.version_id, score: score, at: n.available_by.epochMillis,
           rank: coalesce(strongest[0], 0)} END) AS versions
    // Experiences and task states in rank order (graphmem.search: authority, text score,
    // recency, id), and fact keys in the same order of their bounds, only the first $keys:
    // the search reads keys best-first and asks again, for all, if it needs more.
    CALL (memories) {
      UNWIND memories AS m
      WITH m ORDER BY m.rank DESC, m.score DESC, m.at DESC, m.id
      RETURN collect(m) AS ranked
    }
    CALL (versions) {
      UNWIND versions AS v
      WITH v ORDER BY v.score DESC, v.at DESC  // a key's best version first
      WITH v.key AS uid, max(v.rank) AS rank, head(collect([v.score, v.at])) AS best,
           collect([v.id, v.score, v.at]) AS matched
      WITH uid, rank, best[0] AS score, best[1] AS at, matched
      ORDER BY rank DESC, score DESC, at DESC, uid
      WITH collect({uid: uid, rank: rank, score: score, at: at, matched: matched}) AS keys
      RETURN size(keys) AS key_count, keys[..coalesce($keys, size(keys))] AS keys
    }
    RETURN best, reasons, dropped, ranked, size(versions) AS fact_versions, key_count, keys
  }
  RETURN matched, matched - size(evaluated) AS skipped, frontier,
         best, reasons, dropped, ranked, fact_versions, key_count, keys
}
// The first batch of the read rule, in this statement: the keys that would fill the
// page if the rule kept them all (`placed`: fewer than $limit keys and experiences or
// task states rank above each), and half as many again after them that still rank above
// the $limit-th experience or task state (the rule removes a key whole often enough - a
// figure restated in a later filing - that a second statement costs more than a few more
// rows); every key for a trace. Read by uid at (C, K) - fact.read itself, included.
WITH K, C, matched, skipped, frontier, best, reasons, dropped, ranked, fact_versions,
     key_count, keys, ranked[$limit - 1] AS floor,
     [i IN range(0, size(keys) - 1)
      WHERE i + size([m IN ranked WHERE m.rank > keys[i].rank OR m.rank = keys[i].rank AND (
                        m.score > keys[i].score OR m.score = keys[i].score AND (
                          m.at > keys[i].at OR m.at = keys[i].at AND m.id < keys[i].uid))])
            < $limit] AS placed
WITH K, C, matched, skipped, frontier, best, reasons, dropped, ranked, fact_versions,
     key_count, keys,
     CASE WHEN NOT $read THEN []
          WHEN $limit IS NULL THEN keys
          ELSE [k IN keys WHERE floor IS NULL OR k.rank > floor.rank OR k.rank = floor.rank AND (
                  k.score > floor.score OR k.score = floor.score AND (
                    k.at > floor.at OR k.at = floor.at AND k.uid < floor.id))
               ][..size(placed) + size(placed) / 2]
     END AS first
WITH K, C, matched, skipped, frontier, best, reasons, dropped, ranked, fact_versions,
     key_count, keys, first,
     [i IN range(0, size(first) - 1) | {
       i: i, uid: first[i].uid, entity: null, attribute: null, unit: null, definition: null,
       period: null, valid_from: null, valid_to: null, cutoff: 0, known_at: 1, idem: null,
       source: null, versions: [m IN first[i].matched | m[0]]}]
       AS reads,
     [C, K] AS times,
     // the experiences and task states that can reach the page: shown with their details
     CASE WHEN $read AND $limit IS NOT NULL THEN [m IN ranked[..$limit] | m.id] ELSE [] END
       AS shown
RETURN K.epochSeconds * 1000000 + K.nanosecond / 1000 AS known_at,
       C.epochSeconds * 1000000 + C.nanosecond / 1000 AS cutoff,
       matched, skipped, frontier, best, reasons, dropped AS removed, fact_versions,
       key_count,
       [m IN ranked | [m.id, m.type, m.score, m.at, m.rank]] AS memories,
       [k IN keys | [k.uid, k.rank, k.matched]] AS keys,
       [k IN first | k.uid] AS read,
       COLLECT {
         CALL (reads, times) {
           // include: fact.read $reads=reads $times=times $brief=false
         }
         RETURN {i: i, known_at: known_at, key: key, status: status, candidates: candidates,
                 explain: explain, removed: removed} AS answer
       } AS answers,
       COLLECT {
         CALL (shown, K) {
           // include: search.memories $memory_ids=shown $known_at=K
         }
         RETURN {m: m, entities: entities, ev: ev} AS detail
       } AS details

// name: search.memories
// Experiences and task states by id, with their evidence as of (C, K). Only the fields
// a memory shows, and times as microseconds since the epoch: a driver DateTime costs
// about 40 times a plain integer to decode (graphmem.values.from_micros reads them).
UNWIND $memory_ids AS mid
MATCH (m:Memory {memory_id: mid})
WHERE m.tenant = $tenant AND m.scope = $scope
RETURN m {.memory_id, .trigger, .preconditions, .procedure, .outcome, .task_id, .goal,
          .checkpoint, .open_items, .artifact_refs, .revision,
          type: CASE WHEN m:Experience THEN 'experience' ELSE 'task_state' END,
          available_by: m.available_by.epochSeconds * 1000000 + m.available_by.nanosecond / 1000,
          recorded_at: m.recorded_at.epochSeconds * 1000000 + m.recorded_at.nanosecond / 1000,
          erased: m.erased_at IS NOT NULL} AS m,
       COLLECT { MATCH (m)-[:ABOUT]->(e:Entity) RETURN e.id ORDER BY e.id } AS entities,
       COLLECT {
         MATCH (m)-[v:VALIDATED_BY]->(s:Source)
         WHERE v.recorded_at <= $known_at
         RETURN {source_id: s.id, kind: s.kind, authority: s.authority, rank: s.authority_rank,
                 publisher: s.publisher, uri: s.uri, title: s.title,
                 available_by: s.available_by.epochSeconds * 1000000
                               + s.available_by.nanosecond / 1000,
                 recorded_at: v.recorded_at.epochSeconds * 1000000 + v.recorded_at.nanosecond / 1000,
                 retracted: EXISTS { (s)<-[:RETRACTS]-(x:Retraction)
                                     WHERE x.recorded_at <= $known_at }}
       } AS ev
