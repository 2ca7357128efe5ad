// Fact keys and their immutable versions: the read rule and the write path.

// name: fact.read
// The read rule (DESIGN.md section 3) for a batch of reads. Each read selects keys
// of one entity and attribute (optionally unit, definition, exact period or a
// valid-time range) and gives a cutoff C (publication) and known_at K (transaction).
// A version's status is computed here from its records, never kept in a field:
//   recorded by K -> not erased -> evidence public by C -> not invalidated by K and
//   some evidence not retracted by K -> evidence meeting the requirement -> highest
//   authority -> not superseded (every publisher behind it has since said otherwise,
//   or a resolution settled it for a kept version).
// One row per matched key; `explain` counts what each filter removed, in that order.
// A read names its cutoff and known_at by their index in $times (see graphmem.facts.Times).
UNWIND $reads AS r
WITH r {.*, cutoff: $times[r.cutoff]} AS r, coalesce($times[r.known_at], datetime.transaction()) AS K
// A read naming its key's uid (the write path) seeks that one key; any other read
// seeks the keys of its entity and attribute and filters them. (The second seek gets a
// null entity for a read by uid, so it finds nothing: a filter on `r` alone would be
// applied only after the seek.)
CALL (r) {
  MATCH (k:FactKey {uid: r.uid})
  RETURN k
  UNION
  MATCH (k:FactKey {tenant: $tenant, entity: CASE WHEN r.uid IS NULL THEN r.entity END,
                    attribute: r.attribute})
  WHERE (r.unit IS NULL OR k.unit = r.unit)
    AND (r.definition IS NULL OR k.definition = r.definition)
    AND (r.period IS NULL OR k.period = r.period)
    AND (r.valid_from IS NULL OR k.period_end >= r.valid_from)
    AND (r.valid_to IS NULL OR k.period_end <= r.valid_to)
  RETURN k
}
WITH r, K, k
WHERE k.tenant = $tenant AND k.scope = $scope
WITH r, K, k, COLLECT {
  MATCH (f:Fact)-[:VERSION_OF]->(k)
  RETURN {
    f: f,
    // what the rule reads of each evidence; the source node itself for what only an
    // answer shows (id, uri, title), read in the projection for the candidates alone
    ev: COLLECT {
      MATCH (f)-[e:EVIDENCED_BY]->(s:Source)
      WHERE e.recorded_at <= K
      RETURN {s: s, kind: s.kind, rank: s.authority_rank, publisher: s.publisher, idem: e.idem,
              available_by: e.available_by, recorded_at: e.recorded_at,
              retracted: EXISTS { (s)<-[:RETRACTS]-(x:Retraction) WHERE x.recorded_at <= K }}
    },
    invalidated: EXISTS { (f)<-[:INVALIDATES]-(i:Invalidation) WHERE i.recorded_at <= K },
    settled_for: COLLECT {
      MATCH (f)<-[:SETTLES]-(z:Resolution)-[:CHOSE]->(w:Fact)
      WHERE z.recorded_at <= K AND z.available_by <= r.cutoff AND w <> f
      RETURN w.version_id
    }
  }
} AS stored
WITH r, K, k, stored, [v IN stored WHERE v.f.recorded_at <= K] AS recorded
WITH r, K, k, stored, recorded, [v IN recorded WHERE v.f.erased_at IS NULL] AS present
WITH r, K, k, stored, recorded, present,
     [v IN present WHERE any(e IN v.ev WHERE e.available_by <= r.cutoff)] AS public
WITH r, K, k, stored, recorded, present, public,
     [v IN public WHERE NOT v.invalidated] AS valid
WITH r, K, k, stored, recorded, present, public, valid,
     [v IN valid WHERE any(e IN v.ev WHERE e.available_by <= r.cutoff AND NOT e.retracted)] AS live
WITH r, K, k, stored, recorded, present, public, valid, live,
     [v IN live
       WHERE any(e IN v.ev WHERE e.available_by <= r.cutoff AND NOT e.retracted
                 AND e.rank >= $min_rank AND ($kinds IS NULL OR e.kind IN $kinds))
       | v {.*, live: [e IN v.ev WHERE e.available_by <= r.cutoff AND NOT e.retracted
                         AND e.rank >= $min_rank AND ($kinds IS NULL OR e.kind IN $kinds)]}
     ] AS required
WITH r, K, k, stored, recorded, present, public, valid, live,
     [v IN required | v {.*, rank: reduce(m = 0, e IN v.live | CASE WHEN e.rank > m THEN e.rank ELSE m END)}] AS required
WITH r, K, k, stored, recorded, present, public, valid, live, required,
     reduce(m = 0, v IN required | CASE WHEN v.rank > m THEN v.rank ELSE m END) AS best
WITH r, K, k, stored, recorded, present, public, valid, live, required,
     [v IN required WHERE v.rank = best] AS kept
WITH r, K, k, stored, recorded, present, public, valid, live, required, kept,
     [v IN kept
       WHERE NOT any(w IN kept WHERE w.f.version_id IN v.settled_for)
         AND any(a IN v.live WHERE NOT any(w IN kept WHERE w.f <> v.f
               AND any(b IN w.live WHERE b.publisher = a.publisher AND b.available_by > a.available_by)))
     ] AS final
WITH r, K, k, stored, recorded, present, public, valid, live, required, kept, final,
     reduce(vals = [], v IN final |
       CASE WHEN v.f.value_type + ':' + v.f.value IN vals THEN vals
            ELSE vals + (v.f.value_type + ':' + v.f.value) END) AS values
// With $brief (the write path, which only compares values) a row carries just the
// candidates' ids and values: decoding times and maps in the Python driver costs far
// more than computing them. For the same reason the full projection returns its times
// as microseconds since the epoch (graphmem.values.from_micros reads them back).
RETURN r.i AS i, CASE WHEN NOT $brief THEN K.epochSeconds * 1000000 + K.nanosecond / 1000 END AS known_at,
       CASE WHEN NOT $brief THEN k {.uid, .entity, .attribute, .unit, .definition, .period,
                                    .period_start, .period_end, .revision} END AS key,
       CASE size(values) WHEN 0 THEN 'not_found' WHEN 1 THEN 'active' ELSE 'conflicted' END AS status,
       // only what an answer shows of each candidate
       [v IN final | CASE WHEN $brief
          THEN {f: {version_id: v.f.version_id, value: v.f.value, value_type: v.f.value_type}}
          ELSE {f: {version_id: v.f.version_id, value: v.f.value, value_type: v.f.value_type,
                    available_by: v.f.available_by.epochSeconds * 1000000 + v.f.available_by.nanosecond / 1000,
                    recorded_at: v.f.recorded_at.epochSeconds * 1000000 + v.f.recorded_at.nanosecond / 1000,
                    revision: v.f.revision,
                    erased_at: v.f.erased_at.epochSeconds * 1000000 + v.f.erased_at.nanosecond / 1000},
                live: [e IN v.live | e {.kind, .rank, .publisher, .retracted,
                                        source_id: e.s.id, authority: e.s.authority,
                                        uri: e.s.uri, title: e.s.title,
                                        available_by: e.available_by.epochSeconds * 1000000
                                                      + e.available_by.nanosecond / 1000,
                                        recorded_at: e.recorded_at.epochSeconds * 1000000
                                                     + e.recorded_at.nanosecond / 1000}],
                rank: v.rank} END] AS candidates,
       {versions: size(stored),
        known_at: size(stored) - size(recorded),
        erased: size(recorded) - size(present),
        cutoff: size(present) - size(public),
        invalidated: size(public) - size(valid),
        retracted: size(valid) - size(live),
        evidence: size(live) - size(required),
        outranked: size(required) - size(kept),
        superseded: size(kept) - size(final)} AS explain,
       CASE WHEN r.idem IS NULL THEN null
            ELSE head([v IN stored WHERE any(e IN v.ev WHERE e.idem = r.idem) | v.f.version_id])
       END AS already,
       // which filter above removed each version (null: it is among the candidates), for
       // search explain and context trace; the same lists as `explain`, per version.
       CASE WHEN NOT $brief THEN [v IN stored | {version_id: v.f.version_id, by: CASE
          WHEN NOT v IN recorded THEN 'known_at'
          WHEN NOT v IN present THEN 'erased'
          WHEN NOT v IN public THEN 'cutoff'
          WHEN NOT v IN valid THEN 'invalidated'
          WHEN NOT v IN live THEN 'retracted'
          WHEN NOT v.f.version_id IN [x IN required | x.f.version_id] THEN 'evidence'
          WHEN NOT v.f.version_id IN [x IN kept | x.f.version_id] THEN 'outranked'
          WHEN NOT v.f.version_id IN [x IN final | x.f.version_id] THEN 'superseded'
          END}] END AS removed

// name: fact.keys_of_entity
// The keys of one entity, any attribute, whose period ends in [$valid_from, $valid_to]
// (either bound may be null): what facts_as_of reads when its attribute is left open.
MATCH (k:FactKey {tenant: $tenant, entity: $entity})
WHERE k.attribute IS NOT NULL AND k.scope = $scope
  AND ($valid_from IS NULL OR k.period_end >= $valid_from)
  AND ($valid_to IS NULL OR k.period_end <= $valid_to)
RETURN k.uid AS uid

// name: fact.keys_of_attribute
// The keys of one attribute, any entity, in the period range (facts_as_of with its
// entity left open).
MATCH (k:FactKey {tenant: $tenant, attribute: $attribute})
WHERE k.scope = $scope
  AND ($valid_from IS NULL OR k.period_end >= $valid_from)
  AND ($valid_to IS NULL OR k.period_end <= $valid_to)
RETURN k.uid AS uid

// name: fact.keys_in_period
// Every key of the scope whose period ends in the range (facts_as_of with entity and
// attribute left open), through the (tenant, period_end) index.
MATCH (k:FactKey)
WHERE k.tenant = $tenant AND k.period_end >= coalesce($valid_from, date('0001-01-01'))
  AND k.period_end <= coalesce($valid_to, date('9999-12-31')) AND k.scope = $scope
RETURN k.uid AS uid

// name: fact.create_versions
// New versions, each with its first evidence edge and its search text; creates the
// key (linked to its entity) on its first version, and bumps the key's revision. A row
// names its available_by and its key's period dates by their index in $times (see
// graphmem.facts.Times).
UNWIND $rows AS row
MERGE (k:FactKey {uid: row.key.uid})
ON CREATE SET k.tenant = $tenant, k.scope = $scope, k.entity = row.key.entity,
              k.attribute = row.key.attribute, k.unit = row.key.unit,
              k.definition = row.key.definition, k.period = row.key.period,
              k.period_start = $times[row.key.period_start], k.period_end = $times[row.key.period_end],
              k.revision = 0
WITH k, row
MATCH (e:Entity {uid: row.key.entity_uid})
MERGE (k)-[:ABOUT]->(e)
WITH k, e, row
MATCH (s:Source {uid: row.source_uid})
SET k.revision = k.revision + 1
CREATE (f:Fact {version_id: row.version_id, tenant: $tenant, scope: $scope,
                key_uid: row.key.uid, value: row.value, value_type: row.value_type,
                value_num: row.value_num, value_hash: row.value_hash,
                event_time: k.period_end, period_start: k.period_start,
                available_by: $times[row.available_by], recorded_at: $recorded_at,
                revision: k.revision})
CREATE (f)-[:VERSION_OF]->(k)
CREATE (f)-[:EVIDENCED_BY {idem: row.idem, available_by: $times[row.available_by],
                           recorded_at: $recorded_at}]->(s)
// searchable at once, by the same text search.index_facts writes (one source so far);
// here rather than in a second statement that would find each version again
WITH f, k, e, ' ' +
       // include: search.source_text
     AS sources
SET f.search_scope = $scope_token,
    f.search_text =
      // include: search.fact_text
RETURN count(f) AS created

// name: fact.add_evidence
// More evidence for an existing version: the same value asserted by another source
// (available_by by its index in $times, as in fact.create_versions). The source's
// text joins the version's search text: the words search.index_facts would write
// (it lists every source), without finding the version's key, entity and sources
// again; an erased version's text is null and stays null.
UNWIND $rows AS row
MATCH (f:Fact {version_id: row.version_id})-[:VERSION_OF]->(k:FactKey)
MATCH (s:Source {uid: row.source_uid})
SET k.revision = k.revision + 1
CREATE (f)-[:EVIDENCED_BY {idem: row.idem, available_by: $times[row.available_by],
                           recorded_at: $recorded_at}]->(s)
SET f.search_text = f.search_text + ' ' +
      // include: search.source_text
RETURN count(f) AS added

// name: fact.versions
// Versions by id in this scope, with all their evidence and lifecycle records.
UNWIND $version_ids AS vid
MATCH (f:Fact {version_id: vid})-[:VERSION_OF]->(k:FactKey)
WHERE f.tenant = $tenant AND f.scope = $scope
RETURN k {.uid, .entity, .attribute, .unit, .definition, .period, .period_start, .period_end,
          .revision} AS key,
       f {.*} AS f,
       COLLECT {
         MATCH (f)-[e:EVIDENCED_BY]->(s:Source)
         RETURN {source_id: s.id, kind: s.kind, authority: s.authority, rank: s.authority_rank,
                 publisher: s.publisher, uri: s.uri, title: s.title,
                 available_by: e.available_by, recorded_at: e.recorded_at,
                 retracted: EXISTS { (s)<-[:RETRACTS]-(:Retraction) }}
       } AS ev,
       COLLECT {
         MATCH (f)<-[:INVALIDATES|SETTLES|ERASES]-(x:Record)
         RETURN {kind: x.kind, recorded_at: x.recorded_at, reason: x.reason, by: x.by, ref: x.id}
         UNION
         MATCH (f)-[:EVIDENCED_BY]->(:Source)<-[:RETRACTS]-(x:Retraction)
         RETURN {kind: x.kind, recorded_at: x.recorded_at, reason: x.reason, by: x.by, ref: x.id}
       } AS lifecycle

// name: fact.history
// Every version of the matching keys, in transaction-time order.
MATCH (k:FactKey {tenant: $tenant, entity: $entity, attribute: $attribute})
WHERE k.scope = $scope AND ($period IS NULL OR k.period = $period)
MATCH (f:Fact)-[:VERSION_OF]->(k)
RETURN f.version_id AS version_id
ORDER BY k.period_end, k.period, f.recorded_at, f.version_id
