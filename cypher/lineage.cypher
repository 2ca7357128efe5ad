// Derivations and the lineage graph. A Derivation is also a Source (labels
// :Source:Derivation, authority 'derived'): its output facts are EVIDENCED_BY it, and
// it USES its input facts. Downstream of a fact: (f)<-[:USES]-(d)<-[:EVIDENCED_BY]-(out).

// name: lineage.mark_derivation
// Turns the derivation's source node into a Derivation and links its inputs.
MATCH (d:Source {uid: $uid})
WHERE d.tenant = $tenant AND d.scope = $scope AND NOT d:Derivation
SET d:Derivation, d.method = $method, d.method_version = $method_version,
    d.params = $params, d.cutoff = $cutoff
WITH d
UNWIND $inputs AS input
MATCH (f:Fact {version_id: input.version_id})
WHERE f.tenant = $tenant AND f.scope = $scope
CREATE (d)-[:USES {role: input.role, position: input.position}]->(f)
RETURN count(*) AS linked

// name: lineage.input_state
// For each would-be input: when it became public (earliest evidence not retracted),
// and whether it is invalidated or erased - the no-look-ahead check of derive().
UNWIND $version_ids AS vid
MATCH (f:Fact {version_id: vid})
WHERE f.tenant = $tenant AND f.scope = $scope
RETURN vid AS version_id,
       f.erased_at IS NOT NULL AS erased,
       EXISTS { (f)<-[:INVALIDATES]-(:Invalidation) } AS invalidated,
       COLLECT {
         MATCH (f)-[e:EVIDENCED_BY]->(s:Source)
         WHERE NOT EXISTS { (s)<-[:RETRACTS]-(:Retraction) }
         RETURN e.available_by ORDER BY e.available_by LIMIT 1
       }[0] AS public_by

// name: lineage.reaches
// True when `target` lies upstream of any of `inputs` (a derivation from them to
// `target` would close a cycle).
UNWIND $inputs AS vid
MATCH (i:Fact {version_id: vid})
WHERE i.tenant = $tenant AND i.scope = $scope
RETURN vid AS input,
       vid = $target OR EXISTS {
         MATCH (i)-[:EVIDENCED_BY|USES]->+(t:Fact {version_id: $target})
       } AS cycle

// name: lineage.source_facts
// The facts a source evidences directly (the origin of a retraction's impact).
MATCH (s:Source {uid: $uid})<-[e:EVIDENCED_BY]-(f:Fact)
WHERE s.tenant = $tenant AND s.scope = $scope AND e.recorded_at <= $known_at
RETURN f.version_id AS version_id

// name: lineage.downstream_step
// One step down from a frontier of facts: the derivations that use them, and each
// derivation's outputs with all their evidence (to tell invalid from survives).
UNWIND $version_ids AS vid
MATCH (f:Fact {version_id: vid})<-[u:USES]-(d:Derivation)
WHERE d.tenant = $tenant AND d.scope = $scope AND d.recorded_at <= $known_at
RETURN vid AS input, d.id AS derivation, d.uid AS derivation_uid, u.role AS role,
       d.method AS method, d.available_by AS available_by,
       EXISTS { (d)<-[:RETRACTS]-(x:Retraction) WHERE x.recorded_at <= $known_at } AS retracted,
       COLLECT {
         MATCH (d)<-[e:EVIDENCED_BY]-(out:Fact)
         WHERE e.recorded_at <= $known_at
         RETURN out.version_id
       } AS outputs

// name: lineage.fact_info
// What impact needs to know about each fact: its key, its evidence, its status records.
UNWIND $version_ids AS vid
MATCH (f:Fact {version_id: vid})-[:VERSION_OF]->(k:FactKey)
WHERE f.tenant = $tenant AND f.scope = $scope
RETURN vid AS version_id, k.entity AS entity, k.attribute AS attribute, k.period AS period,
       f.available_by AS available_by,
       EXISTS { (f)<-[:INVALIDATES]-(x:Invalidation) WHERE x.recorded_at <= $known_at } AS invalidated,
       EXISTS {
         MATCH (f)-[:VERSION_OF]->(k)<-[:VERSION_OF]-(newer:Fact)-[:EVIDENCED_BY]->(s:Source)
         WHERE newer.available_by > f.available_by AND newer.recorded_at <= $known_at
           AND newer.erased_at IS NULL
           AND NOT EXISTS { (newer)<-[:INVALIDATES]-(y:Invalidation) WHERE y.recorded_at <= $known_at }
           AND s.publisher IN COLLECT { MATCH (f)-[:EVIDENCED_BY]->(p:Source) RETURN p.publisher }
       } AS superseded,
       COLLECT {
         MATCH (f)-[e:EVIDENCED_BY]->(s:Source)
         WHERE e.recorded_at <= $known_at
         RETURN {uid: s.uid, id: s.id, derivation: s:Derivation,
                 retracted: EXISTS { (s)<-[:RETRACTS]-(x:Retraction) WHERE x.recorded_at <= $known_at }}
       } AS evidence

// name: lineage.upstream_step
// One step up from a frontier of facts: each fact's evidence, and for derivations
// their inputs with roles.
UNWIND $version_ids AS vid
MATCH (f:Fact {version_id: vid})-[:EVIDENCED_BY]->(s:Source)
WHERE f.tenant = $tenant AND f.scope = $scope
RETURN vid AS fact, s.id AS source, s.kind AS kind, s.authority AS authority,
       s:Derivation AS derivation, s.method AS method, s.uri AS uri,
       COLLECT { MATCH (s)-[u:USES]->(i:Fact) RETURN {version_id: i.version_id, role: u.role} } AS inputs
