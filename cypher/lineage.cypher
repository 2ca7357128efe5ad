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

// name: lineage.downstream
// The whole downstream closure of an origin in one statement: a source ($source, its
// facts are the roots) or a version ($version, the root itself). One breadth-first
// search from the origin (ANY SHORTEST reaches each node once), so the cost follows
// what is reached, not the graph. A fact is `anchored` when other live evidence that
// no cascade can reach (a non-derived source other than the origin, not retracted)
// stands behind it; with $prune the search does not go below anchored facts (nothing
// there can be affected). The search walks only derivations of this scope; the
// derivations pass below filters again (the caller walks only what that pass returns).
// One row back, ids only, not node maps (decoding is what costs): `facts` as
// [version_id, root (the origin's own), anchored, live derivations, entity, attribute,
// period, available_by (only $with_time), public_from], `derivations` (those the walked
// facts feed) as [id, uid, method, [[walked input version_id, role]], output version_ids,
// available_by]. `public_from`: for a fact not anchored that other live evidence still
// backs, when that evidence is public from - later than the fact was (the origin held its
// first evidence), so it is walked below like an unanchored one. Both times as epoch
// microseconds (a driver DateTime costs about 40 times an integer to decode).
// A fact's live derivations are [id, later] for those that evidence it by K and were not
// retracted by K (an earlier cascade's): the fact dies when all of them do, so one
// already retracted, or recorded after K, must not count as evidence still to lose.
// `later`: when that evidence is public, if later than the fact was (else null, as for
// public_from): a fact left with only later evidence is public only from then.
// A version origin is its own root, never anchored, and has no live derivations
// (whatever backs it, it is the thing assumed gone).
CALL () {
  MATCH (o:Source {uid: $source}) WHERE o.tenant = $tenant AND o.scope = $scope RETURN o
  UNION
  MATCH (o:Fact {version_id: $version}) WHERE o.tenant = $tenant AND o.scope = $scope RETURN o
}
MATCH ANY SHORTEST (o) (()<-[r:EVIDENCED_BY WHERE r.recorded_at <= $known_at]-()){0,1} (:Fact)
  ((a:Fact WHERE a.version_id = $version OR NOT $prune OR NOT EXISTS {
      MATCH (a)-[ae:EVIDENCED_BY]->(p:Source)
      WHERE NOT p:Derivation AND ae.recorded_at <= $known_at AND ($source IS NULL OR p.uid <> $source)
        AND ae.available_by <= a.available_by
        AND NOT EXISTS { (p)<-[:RETRACTS]-(x:Retraction) WHERE x.recorded_at <= $known_at }
    })
   <-[:USES]-(d:Derivation WHERE d.recorded_at <= $known_at AND d.tenant = $tenant AND d.scope = $scope)
   <-[e:EVIDENCED_BY WHERE e.recorded_at <= $known_at]-(:Fact))* (f:Fact)
MATCH (f)-[:VERSION_OF]->(k:FactKey)
// each piece of evidence, once: [from the origin, a live derivation (other than the
// origin) as [id, later], when other live non-derived evidence is public]
WITH f, k, f = o AS root_version,
     [(f)-[fe:EVIDENCED_BY]->(p:Source) |
       [p = o AND fe.recorded_at <= $known_at,
        CASE WHEN p:Derivation AND fe.recorded_at <= $known_at AND p <> o
                  AND NOT EXISTS { (p)<-[:RETRACTS]-(dx:Retraction) WHERE dx.recorded_at <= $known_at }
             THEN [p.id, CASE WHEN fe.available_by > f.available_by
                              THEN fe.available_by.epochSeconds * 1000000 + fe.available_by.nanosecond / 1000 END]
             END,
        CASE WHEN NOT p:Derivation AND fe.recorded_at <= $known_at AND ($source IS NULL OR p.uid <> $source)
                  AND NOT EXISTS { (p)<-[:RETRACTS]-(rx:Retraction) WHERE rx.recorded_at <= $known_at }
             THEN fe.available_by END]] AS evidence
// when the other live non-derived evidence is public from: a fact whose earliest is its own
// availability is anchored; one whose is later stands but is public only from then (the
// origin held its first evidence), so what was derived from it before then looked ahead
WITH f, k, root_version, evidence,
     CASE WHEN NOT root_version THEN reduce(m = null, x IN evidence |
       CASE WHEN x[2] IS NOT NULL AND (m IS NULL OR x[2] < m) THEN x[2] ELSE m END) END AS public_from
WITH f, k, root_version, evidence, public_from, coalesce(public_from <= f.available_by, false) AS anchored
WITH collect([f.version_id, root_version OR any(x IN evidence WHERE x[0]), anchored,
              CASE WHEN root_version THEN [] ELSE [x IN evidence WHERE x[1] IS NOT NULL | x[1]] END,
              k.entity, k.attribute, k.period, CASE WHEN $with_time THEN f.available_by END,
              CASE WHEN NOT anchored THEN public_from.epochSeconds * 1000000 + public_from.nanosecond / 1000
              END]) AS facts,
     collect(CASE WHEN NOT $prune OR NOT anchored THEN f END) AS walked
CALL (walked) {
  UNWIND walked AS w
  MATCH (w)<-[u:USES]-(d:Derivation)
  WITH d, collect([w.version_id, u.role]) AS inputs
  WHERE d.tenant = $tenant AND d.scope = $scope AND d.recorded_at <= $known_at
  RETURN collect([d.id, d.uid, d.method, inputs,
                  [(d)<-[de:EVIDENCED_BY]-(out:Fact) WHERE de.recorded_at <= $known_at | out.version_id],
                  d.available_by.epochSeconds * 1000000 + d.available_by.nanosecond / 1000]
         ) AS derivations
}
RETURN facts, derivations

// name: lineage.fact_labels
// What a lineage drawing shows of each fact recorded by $known_at: its key.
UNWIND $version_ids AS vid
MATCH (f:Fact {version_id: vid})-[:VERSION_OF]->(k:FactKey)
WHERE f.tenant = $tenant AND f.scope = $scope AND f.recorded_at <= $known_at
RETURN vid AS version_id, k.entity AS entity, k.attribute AS attribute, k.period AS period

// name: lineage.superseded
// Whether a version has been superseded by K (its consumers are then stale, not
// invalid), as step 3 of the read rule (DESIGN.md section 3) says at a cutoff after all
// evidence: the version is live, and every publisher behind its live evidence has
// later-available live evidence on another live version holding live evidence of at
// least its authority. Liveness is the read rule's own fragments, so a newer version
// that was invalidated, erased or is backed only by retracted sources supersedes
// nothing, and one of a lower authority does not displace it.
MATCH (f:Fact {version_id: $version_id})-[:VERSION_OF]->(k:FactKey)
WHERE f.tenant = $tenant AND f.scope = $scope
WITH f, k, $known_at AS K, datetime({year: 9999}) AS C
CALL (f, k, K, C) {
  MATCH (f)-[e:EVIDENCED_BY]->(s:Source)
  WHERE
    // include: fact.live_evidence $edge=e $source=s $min_rank=0 $kinds=null
  WITH s.publisher AS publisher, max(e.available_by) AS last, max(s.authority_rank) AS rank
  RETURN collect({publisher: publisher, last: last}) AS latest, max(rank) AS rank
}
RETURN size(latest) > 0 AND
         // include: fact.live_version $version=f $flagged=k.flagged
       AND all(p IN latest WHERE EXISTS {
         MATCH (k)<-[:VERSION_OF]-(newer:Fact)-[e:EVIDENCED_BY]->(s:Source)
         WHERE newer <> f AND s.publisher = p.publisher AND e.available_by > p.last AND
           // include: fact.live_evidence $edge=e $source=s $min_rank=0 $kinds=null
           AND
           // include: fact.live_version $version=newer $flagged=k.flagged
           AND EXISTS {
             MATCH (newer)-[e2:EVIDENCED_BY]->(s2:Source)
             WHERE s2.authority_rank >= rank AND
               // include: fact.live_evidence $edge=e2 $source=s2 $min_rank=0 $kinds=null
           }
       }) AS superseded

// name: lineage.upstream_step
// One step up from a frontier of facts: each fact's evidence as recorded by $known_at,
// and for derivations their inputs with roles (recorded with the derivation).
UNWIND $version_ids AS vid
MATCH (f:Fact {version_id: vid})-[e:EVIDENCED_BY]->(s:Source)
WHERE f.tenant = $tenant AND f.scope = $scope AND e.recorded_at <= $known_at
RETURN vid AS fact, s.id AS source, s.kind AS kind, s.authority AS authority,
       s:Derivation AS derivation, s.method AS method, s.uri AS uri,
       COLLECT { MATCH (s)-[u:USES]->(i:Fact) RETURN {version_id: i.version_id, role: u.role} } AS inputs

// name: lineage.derivations
// The derivations (not erased) behind derived facts, by their sources' uids: method,
// method version, parameters (JSON text) and inputs with their roles, as an answer
// shows them (DESIGN.md section 4).
UNWIND $uids AS uid
MATCH (d:Source {uid: uid})
WHERE d.tenant = $tenant AND d.scope = $scope AND d:Derivation AND d.erased_at IS NULL
RETURN d.id AS source_id, d.method AS method, d.method_version AS method_version, d.params AS params,
       COLLECT { MATCH (d)-[u:USES]->(i:Fact)
                 RETURN {role: u.role, version_id: i.version_id} ORDER BY u.role, u.position } AS inputs
