// What happens to versions after they are written: each event is a :Record node
// stamped with its own recorded_at; versions themselves are never edited, except
// erasure, which removes the payload and leaves a tombstone (ids, hashes, times).

// name: lifecycle.invalidate
// Idempotent: a version already invalidated gets no second record. The key flags the
// version (fact.read classifies a flagged version one by one).
UNWIND $version_ids AS vid
MATCH (f:Fact {version_id: vid})-[:VERSION_OF]->(k:FactKey)
WHERE f.tenant = $tenant AND f.scope = $scope
  AND NOT EXISTS { (f)<-[:INVALIDATES]-(:Invalidation) }
SET k.revision = k.revision + 1,
    k.flagged = CASE WHEN vid IN k.flagged THEN k.flagged ELSE k.flagged + vid END
CREATE (x:Record:Invalidation {id: $record_id + ':' + vid, kind: 'invalidated', tenant: $tenant,
                               scope: $scope, reason: $reason, by: $by, cause: $cause,
                               recorded_at: $recorded_at})
CREATE (x)-[:INVALIDATES]->(f)
RETURN f.version_id AS version_id

// name: lifecycle.resolution
// The version a resolution chose, if that resolution is recorded (a retry of a resolve
// whose commit landed finds it).
MATCH (z:Record:Resolution {id: $record_id})-[:CHOSE]->(w:Fact)
WHERE z.tenant = $tenant AND z.scope = $scope
RETURN w.version_id AS chosen

// name: lifecycle.resolve
// Records which versions a resolution settles and which one it chose.
MATCH (w:Fact {version_id: $chosen})-[:VERSION_OF]->(k:FactKey)
WHERE w.tenant = $tenant AND w.scope = $scope
SET k.revision = k.revision + 1
CREATE (z:Record:Resolution {id: $record_id, kind: 'resolved', tenant: $tenant, scope: $scope,
                             reason: $reason, by: $by, recorded_at: $recorded_at,
                             available_by: $available_by})
CREATE (z)-[:CHOSE]->(w)
WITH z
UNWIND $settled AS vid
MATCH (f:Fact {version_id: vid})
WHERE f.tenant = $tenant AND f.scope = $scope
CREATE (z)-[:SETTLES]->(f)
RETURN count(f) AS settled

// name: lifecycle.erase_targets
// Versions an erasure reaches: every version about the entity, or every version
// whose evidence comes only from the source (others keep their other evidence).
OPTIONAL MATCH (f1:Fact)-[:VERSION_OF]->(:FactKey)-[:ABOUT]->(e:Entity {uid: $entity_uid})
WHERE f1.tenant = $tenant AND f1.scope = $scope
WITH collect(DISTINCT f1.version_id) AS by_entity
OPTIONAL MATCH (f2:Fact)-[:EVIDENCED_BY]->(s:Source {uid: $source_uid})
WHERE f2.tenant = $tenant AND f2.scope = $scope
  AND NOT EXISTS { (f2)-[:EVIDENCED_BY]->(o:Source) WHERE o.uid <> $source_uid }
WITH by_entity, collect(DISTINCT f2.version_id) AS by_source
RETURN by_entity + by_source AS version_ids

// name: lifecycle.erasure
// How many fact versions an erasure erased, if that erasure is recorded (a retry of an
// erase whose commit landed finds it).
MATCH (x:Record:Erasure {id: $record_id})
WHERE x.tenant = $tenant AND x.scope = $scope
RETURN COUNT { (x)-[:ERASES]->(:Fact) } AS erased

// name: lifecycle.erase
// Removes payloads and records one Erasure linked to all it erased: what an earlier
// erasure erased already keeps that one's stamp and record, and is not counted again.
CREATE (x:Record:Erasure {id: $record_id, kind: 'erased', tenant: $tenant, scope: $scope,
                          reason: $reason, by: $by, target: $target, recorded_at: $recorded_at})
WITH x
OPTIONAL MATCH (e:Entity {uid: $entity_uid})
WHERE e.tenant = $tenant AND e.scope = $scope
SET e.name = null, e.aliases = null, e.erased_at = coalesce(e.erased_at, $recorded_at)
FOREACH (_ IN CASE WHEN e IS NULL THEN [] ELSE [1] END | CREATE (x)-[:ERASES]->(e))
WITH x
OPTIONAL MATCH (s:Source {uid: $source_uid})
WHERE s.tenant = $tenant AND s.scope = $scope
SET s.title = null, s.uri = null, s.meta = null, s.erased_at = coalesce(s.erased_at, $recorded_at)
FOREACH (_ IN CASE WHEN s IS NULL THEN [] ELSE [1] END | CREATE (x)-[:ERASES]->(s))
WITH x
UNWIND $version_ids AS vid
MATCH (f:Fact {version_id: vid})-[:VERSION_OF]->(k:FactKey)
WHERE f.tenant = $tenant AND f.scope = $scope AND f.erased_at IS NULL
SET f.value = null, f.value_num = null, f.embedding = null, f.embedder = null, f.embedded_at = $recorded_at,
    f.erased_at = $recorded_at,
    k.revision = k.revision + 1,
    k.flagged = CASE WHEN vid IN k.flagged THEN k.flagged ELSE k.flagged + vid END
CREATE (x)-[:ERASES]->(f)
RETURN count(f) AS erased

// name: lifecycle.retract
// Retraction records for sources (a withdrawn source, or the derivations a cascade
// invalidates). Idempotent: a source already retracted gets no second record. The source
// carries the record's recorded_at (a closing stamp, which fact.read compares with its
// known_at), and each key flags the versions the source evidences (fact.read classifies
// them one by one) and moves its revision, as an invalidation does: what it reads changed,
// so a writer holding the revision read before must be refused.
UNWIND $uids AS uid
MATCH (s:Source {uid: uid})
WHERE s.tenant = $tenant AND s.scope = $scope
  AND NOT EXISTS { (s)<-[:RETRACTS]-(:Retraction) }
CREATE (x:Record:Retraction {id: $record_id + ':' + s.id, kind: 'retracted', tenant: $tenant,
                             scope: $scope, reason: $reason, by: $by, cause: $cause,
                             recorded_at: $recorded_at})
CREATE (x)-[:RETRACTS]->(s)
SET s.retracted_at = $recorded_at
WITH x, s
CALL (s) {
  MATCH (s)<-[:EVIDENCED_BY]-(f:Fact)-[:VERSION_OF]->(k:FactKey)
  SET k.revision = k.revision + 1,
      k.flagged = CASE WHEN f.version_id IN k.flagged THEN k.flagged ELSE k.flagged + f.version_id END
}
RETURN count(x) AS retracted
