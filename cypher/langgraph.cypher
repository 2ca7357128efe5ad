// The LangGraph store (graphmem.integrations.langgraph): what it asks across the
// namespaces of one tenant. Everything about one item goes through the Memory API.

// name: langgraph.namespaces
// The namespaces of one store that hold at least one item at (cutoff, known_at): the
// keys of the tenant whose entity (the store's name for a namespace) starts with
// $prefix, through the FactKey (tenant, entity, attribute) index, grouped by namespace
// and kept when the read rule itself (fact.read, included) answers one of them with
// something other than not_found. $times is [cutoff, known_at]; a null known_at is the
// transaction's time, as in every read.
MATCH (k:FactKey)
WHERE k.tenant = $tenant AND k.entity STARTS WITH $prefix AND k.attribute IS NOT NULL
  AND k.definition = $definition AND k.period = $period
WITH k.entity AS entity, k.scope AS scope, collect(k.uid) AS uids
WITH entity, scope, $times AS times,
     [i IN range(0, size(uids) - 1) | {
       i: i, uid: uids[i], entity: null, attribute: null, unit: null, definition: null,
       period: null, valid_from: null, valid_to: null, cutoff: 0, known_at: 1, idem: null}]
       AS reads
WHERE EXISTS {
  CALL (reads, times, scope) {
    // include: fact.read $reads=reads $times=times $brief=true $scope=scope $min_rank=0 $kinds=null
  }
  WITH status WHERE status <> 'not_found'
  RETURN 1
}
RETURN entity, scope
ORDER BY entity
