// Point-in-time panels (graphmem/research/panel.py): one attribute, many frames and
// cutoffs, one known_at, every entity of a universe.

// name: panel.keys
// What a panel must read, in one statement: the known_at it uses (with $q.now the
// default, admin.known_at), each entity of the universe with the time it first made the attribute
// public (any period or unit, this definition, as recorded by known_at: the screen's
// universe at cutoff C is the entities whose `first` is at or before C), and each of its
// keys of the attribute that can belong to an asked frame, with the key's evidence times.
// A key's read at (C, K) changes with C only where one of its evidence edges or one of
// the resolutions settling its versions becomes public (fact.read compares C with
// nothing else: a version's available_by is one of its evidence edges'), so these
// `points` are all a panel needs to read each key once per stretch of cutoffs between
// two of them, with fact.read itself. Only what known_at sees counts: edges and
// resolutions recorded by K, of versions recorded by K and not erased (so a key's first
// point is its first evidence as known at K; with first_reported, the key is read at
// its points in order and the first that reads active is "as first reported").
// The keys are those whose period ends in [$q.end_from, $q.end_to] and, roughly, of an
// asked kind ($q.instants; $q.durations lasting min_days to max_days, both counted);
// graphmem.screen.Selection.matches, screen.read's filter in Python, places each in its
// frames. $q is one map for the reason screen.read gives; times come back as epoch
// microseconds.
WITH CASE WHEN $q.now THEN
       // include: admin.known_at
          ELSE datetime.fromepoch($q.known_at[0], $q.known_at[1]) END AS K
WITH K, CASE WHEN $q.everyone THEN COLLECT {
          MATCH (e:Entity)
          WHERE e.tenant = $tenant AND e.id IS NOT NULL AND e.scope = $scope AND e.erased_at IS NULL
          RETURN e.id
        } ELSE $q.entities END AS ids
RETURN K.epochSeconds * 1000000 + K.nanosecond / 1000 AS known_at, COLLECT {
  UNWIND ids AS id
  CALL (id, K) {
    MATCH (k:FactKey {tenant: $tenant, entity: id, attribute: $q.attribute})
    WHERE k.scope = $scope AND k.definition = $q.definition
    MATCH (f:Fact)-[:VERSION_OF]->(k)
    WHERE f.recorded_at <= K AND f.erased_at IS NULL
    RETURN min(f.available_by) AS first
  }
  CALL (id, K) {
    MATCH (k:FactKey {tenant: $tenant, entity: id, attribute: $q.attribute})
    WHERE k.period_end >= $q.end_from AND k.period_end <= $q.end_to  // the index range
    WITH k, k.period_start AS start, k.period_end AS end
    WHERE k.scope = $scope AND k.definition = $q.definition AND ($q.any_unit OR k.unit = $q.unit)
      AND CASE WHEN start IS NULL THEN $q.instants
               ELSE $q.durations AND $q.min_days <= duration.inDays(start, end).days + 1 <= $q.max_days END
    RETURN collect({uid: k.uid, period: k.period, points: COLLECT {
      MATCH (f:Fact)-[:VERSION_OF]->(k)
      WHERE f.recorded_at <= K AND f.erased_at IS NULL
      MATCH (f)-[e:EVIDENCED_BY]->(:Source)
      WHERE e.recorded_at <= K
      RETURN e.available_by.epochSeconds * 1000000 + e.available_by.nanosecond / 1000 AS at
      UNION
      MATCH (f:Fact)-[:VERSION_OF]->(k)
      MATCH (f)<-[:SETTLES]-(z:Resolution)
      WHERE z.recorded_at <= K
      RETURN z.available_by.epochSeconds * 1000000 + z.available_by.nanosecond / 1000 AS at
    }}) AS keys
  }
  RETURN {id: id, first: first.epochSeconds * 1000000 + first.nanosecond / 1000, keys: keys,
          known: EXISTS { MATCH (e:Entity {tenant: $tenant, id: id})
                          WHERE e.scope = $scope AND e.erased_at IS NULL }}
} AS entities
