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
// The facts a source evidences directly (the origin of a retraction's impact). A fact
// is `anchored` when other live evidence that no cascade can reach (a non-derived
// source, not retracted) stands behind it: it survives, and nothing below it is hit.
MATCH (s:Source {uid: $uid})<-[e:EVIDENCED_BY]-(f:Fact)
WHERE s.tenant = $tenant AND s.scope = $scope AND e.recorded_at <= $known_at
RETURN f.version_id AS version_id,
       EXISTS {
         MATCH (f)-[o:EVIDENCED_BY]->(p:Source)
         WHERE p.uid <> $uid AND NOT p:Derivation AND o.recorded_at <= $known_at
           AND NOT EXISTS { (p)<-[:RETRACTS]-(x:Retraction) WHERE x.recorded_at <= $known_at }
       } AS anchored,
       COUNT { (f)-[:EVIDENCED_BY]->(:Derivation) } AS derivations

// name: lineage.downstream_step
// One step down from a frontier of facts: one row per derivation that uses them, with
// the frontier inputs it uses (and their roles) and its outputs, each output `anchored`
// as in lineage.source_facts and with its number of derivation evidences.
UNWIND $version_ids AS vid
MATCH (f:Fact {version_id: vid})<-[u:USES]-(d:Derivation)
WHERE d.tenant = $tenant AND d.scope = $scope AND d.recorded_at <= $known_at
WITH d, collect({input: vid, role: u.role}) AS inputs
RETURN d.id AS derivation, d.uid AS derivation_uid, d.method AS method, inputs,
       COLLECT {
         MATCH (d)<-[e:EVIDENCED_BY]-(out:Fact)
         WHERE e.recorded_at <= $known_at
         RETURN {version_id: out.version_id,
                 anchored: EXISTS {
                   MATCH (out)-[o:EVIDENCED_BY]->(p:Source)
                   WHERE NOT p:Derivation AND o.recorded_at <= $known_at
                     AND ($origin IS NULL OR p.uid <> $origin)
                     AND NOT EXISTS { (p)<-[:RETRACTS]-(x:Retraction) WHERE x.recorded_at <= $known_at }
                 },
                 derivations: COUNT { (out)-[:EVIDENCED_BY]->(:Derivation) }}
       } AS outputs

// name: lineage.fact_labels
// What a report or a drawing shows of each fact: its key, and its publication time
// when a cutoff needs it (decoding thousands of datetimes is not free).
UNWIND $version_ids AS vid
MATCH (f:Fact {version_id: vid})-[:VERSION_OF]->(k:FactKey)
WHERE f.tenant = $tenant AND f.scope = $scope
RETURN vid AS version_id, k.entity AS entity, k.attribute AS attribute, k.period AS period,
       CASE WHEN $with_time THEN f.available_by END AS available_by

// name: lineage.superseded
// Whether a version has been superseded by K: a later version of its key, still
// standing, from one of its publishers (its consumers are then stale, not invalid).
MATCH (f:Fact {version_id: $version_id})-[:VERSION_OF]->(k:FactKey)
WHERE f.tenant = $tenant AND f.scope = $scope
RETURN EXISTS {
         MATCH (k)<-[:VERSION_OF]-(newer:Fact)-[:EVIDENCED_BY]->(s:Source)
         WHERE newer.available_by > f.available_by AND newer.recorded_at <= $known_at
           AND newer.erased_at IS NULL
           AND NOT EXISTS { (newer)<-[:INVALIDATES]-(y:Invalidation) WHERE y.recorded_at <= $known_at }
           AND s.publisher IN COLLECT { MATCH (f)-[:EVIDENCED_BY]->(p:Source) RETURN p.publisher }
       } AS superseded

// name: lineage.upstream_step
// One step up from a frontier of facts: each fact's evidence, and for derivations
// their inputs with roles.
UNWIND $version_ids AS vid
MATCH (f:Fact {version_id: vid})-[:EVIDENCED_BY]->(s:Source)
WHERE f.tenant = $tenant AND f.scope = $scope
RETURN vid AS fact, s.id AS source, s.kind AS kind, s.authority AS authority,
       s:Derivation AS derivation, s.method AS method, s.uri AS uri,
       COLLECT { MATCH (s)-[u:USES]->(i:Fact) RETURN {version_id: i.version_id, role: u.role} } AS inputs
