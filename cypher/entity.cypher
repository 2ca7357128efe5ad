// Entities and sources: what facts are about, and what evidences them.

// name: entity.put
MERGE (e:Entity {uid: $uid})
ON CREATE SET e.tenant = $tenant, e.scope = $scope, e.id = $id, e.recorded_at = $recorded_at
SET e.name = $name, e.kind = $kind, e.aliases = $aliases
RETURN e.id AS id

// name: entity.get
MATCH (e:Entity {uid: $uid})
WHERE e.tenant = $tenant AND e.scope = $scope
RETURN e.id AS id, e.name AS name, e.kind AS kind, coalesce(e.aliases, []) AS aliases,
       e.erased_at IS NOT NULL AS erased

// name: write.prepare
// What a write needs to know before any rule runs, in one round trip: when each of
// its sources became public (epoch microseconds), whether it was erased, and whether
// retracted (the write gates: a withdrawn source validates nothing new); which of
// its entities are missing from the scope (or erased: which says so, never brought back,
// so a gate names that rather than "put_entity first"); which of its fact keys are
// stored, with their revision - only those need the read rule (a key's first
// assertion is a new version), and expected_revision checks it.
RETURN COLLECT {
         UNWIND $source_uids AS uid
         MATCH (s:Source {uid: uid})
         WHERE s.tenant = $tenant AND s.scope = $scope
         RETURN {uid: uid, erased: s.erased_at IS NOT NULL, retracted: EXISTS { (s)<-[:RETRACTS]-(:Retraction) },
                 available_by: s.available_by.epochSeconds * 1000000 + s.available_by.nanosecond / 1000}
       } AS sources,
       COLLECT {
         UNWIND $entity_uids AS uid
         OPTIONAL MATCH (e:Entity {uid: uid})
         WITH uid, e, e.tenant = $tenant AND e.scope = $scope AS here
         WHERE e IS NULL OR NOT here OR e.erased_at IS NOT NULL
         RETURN {uid: uid, erased: coalesce(here, false) AND e.erased_at IS NOT NULL}
       } AS missing_entities,
       COLLECT {
         UNWIND $key_uids AS uid
         MATCH (k:FactKey {uid: uid})
         WHERE k.tenant = $tenant AND k.scope = $scope
         RETURN {uid: uid, revision: k.revision}
       } AS keys

// name: source.get_many
UNWIND $uids AS uid
MATCH (s:Source {uid: uid})
WHERE s.tenant = $tenant AND s.scope = $scope
RETURN s.uid AS uid, s.id AS id, s.kind AS kind, s.authority AS authority,
       s.available_by AS available_by, s.publisher AS publisher, s.uri AS uri,
       s.title AS title, s.meta AS meta, s.erased_at AS erased_at, s.recorded_at AS recorded_at,
       COLLECT { MATCH (s)<-[:RETRACTS]-(x:Retraction) RETURN x.recorded_at
                 ORDER BY x.recorded_at LIMIT 1 }[0] AS retracted_at

// name: source.create
CREATE (s:Source {uid: $uid, tenant: $tenant, scope: $scope, id: $id, kind: $kind,
                  authority: $authority, authority_rank: $rank, publisher: $publisher,
                  uri: $uri, title: $title, meta: $meta, available_by: $available_by,
                  recorded_at: $recorded_at})
RETURN s.id AS id
