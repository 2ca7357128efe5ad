// Point-in-time screens across entities (graphmem/screen.py): one attribute, one period
// or calendar frame, one cutoff and known_at, every entity of a universe.

// name: screen.read
// The entities it reads (ids) and, for each of them, the read rule's answer (fact.read
// itself, included) for every fact key the selection matches; Python picks each
// entity's key.
// $q holds the screen (graphmem.screen.Query.params), in one map: Neo4j caches a plan
// per type and size class of each top-level parameter (a list of 1, of 2-10, of 11-100
// items ...; null or not), and planning this statement, fact.read included, takes
// seconds. Inside a map, values are not classed: a screen is planned once. So nothing
// in $q is null either: $q.everyone, $q.any_unit and $q.now say what a null would.
// The ids are $q.entities as given, or ($q.everyone) every entity of the scope. The
// universe of $q.everyone is those that had made a value of $q.attribute public by the
// cutoff; an entity with an answer found here has (its version is one), so Python asks
// screen.universe (at this statement's known_at) only about the rest - most of a
// universe is found, and testing each entity first cost a 2,000-entity screen an eighth
// of its time.
// A key matches the selection when its period ends in [end_from, end_to] and, by kind:
// 'period' - it is exactly $q.period; 'instant' - it is an instant; 'duration' - it
// lasts min_days to max_days (both ends counted) and its middle day (the earlier one for
// an even length) falls in [mid_from, mid_to].
// Cutoff and known_at come as [epoch seconds, nanoseconds] (graphmem.values.epoch);
// with $q.now, known_at is the default (admin.known_at). Times come back as epoch microseconds.
WITH datetime.fromepoch($q.cutoff[0], $q.cutoff[1]) AS C,
     CASE WHEN $q.now THEN
       // include: admin.known_at
          ELSE datetime.fromepoch($q.known_at[0], $q.known_at[1]) END AS K
WITH C, K, CASE WHEN $q.everyone THEN COLLECT {
          MATCH (e:Entity)
          WHERE e.tenant = $tenant AND e.id IS NOT NULL  // the (tenant, id) index
            AND e.scope = $scope AND e.erased_at IS NULL
          RETURN e.id
        } ELSE $q.entities END AS ids
CALL (ids) {
  UNWIND ids AS id
  MATCH (k:FactKey {tenant: $tenant, entity: id, attribute: $q.attribute})
  WHERE k.period_end >= $q.end_from AND k.period_end <= $q.end_to  // the index range
  WITH k, k.period_start AS start, k.period_end AS end  // each property read once
  WHERE k.scope = $scope AND k.definition = $q.definition AND ($q.any_unit OR k.unit = $q.unit)
    AND CASE $q.kind
          WHEN 'period' THEN k.period = $q.period
          WHEN 'instant' THEN start IS NULL
          ELSE start IS NOT NULL
               AND $q.min_days <= duration.inDays(start, end).days + 1 <= $q.max_days
               AND $q.mid_from <= start + duration({days: duration.inDays(start, end).days / 2}) <= $q.mid_to
        END
  RETURN collect(k.uid) AS uids
}
WITH C, K, ids,
     [i IN range(0, size(uids) - 1) | {
       i: i, uid: uids[i], entity: null, attribute: null, unit: null, definition: null,
       period: null, valid_from: null, valid_to: null, cutoff: 0, known_at: 1, idem: null}] AS reads,
     [C, K] AS times
RETURN K.epochSeconds * 1000000 + K.nanosecond / 1000 AS known_at,
       ids,
       COLLECT {
         UNWIND CASE WHEN $q.everyone THEN [] ELSE ids END AS id
         WITH id
         WHERE NOT EXISTS { MATCH (e:Entity {tenant: $tenant, id: id})
                            WHERE e.scope = $scope AND e.erased_at IS NULL }
         RETURN id
       } AS unknown,
       COLLECT {
         CALL (reads, times) {
           // include: fact.read $reads=reads $times=times $brief=false
         }
         RETURN {i: i, known_at: known_at, key: key, status: status, candidates: candidates,
                 explain: explain} AS answer
       } AS answers


// name: screen.universe
// Which of $ids (entities of the scope) had made a value of $attribute public by the
// cutoff - any period or unit, this definition - as recorded by known_at: no entity
// joins a universe through what it published later. (A version's available_by is its
// earliest evidence's, recorded with it.) $cutoff and $known_at as [epoch seconds,
// nanoseconds]: known_at is the one screen.read used, its own transaction's time when
// it was asked for now.
WITH datetime.fromepoch($cutoff[0], $cutoff[1]) AS C, datetime.fromepoch($known_at[0], $known_at[1]) AS K
RETURN COLLECT {
  UNWIND $ids AS id
  WITH id
  WHERE EXISTS {
    MATCH (k:FactKey {tenant: $tenant, entity: id, attribute: $attribute})
    WHERE k.scope = $scope AND k.definition = $definition
      AND EXISTS { MATCH (f:Fact)-[:VERSION_OF]->(k)
                   WHERE f.recorded_at <= K AND f.available_by <= C AND f.erased_at IS NULL }
  }
  RETURN id
} AS ids
