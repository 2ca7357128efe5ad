// The LangGraph store (graphmem.integrations.langgraph): what it asks across the
// namespaces of one tenant. Everything about one item goes through the Memory API.

// fragment: langgraph.keys
// The store's keys in the tenant whose entity (the store's name for a namespace) starts
// with $prefix, through the FactKey (tenant, entity, attribute) index, grouped by
// namespace: one row per (entity, scope) with its keys' uids.
MATCH (k:FactKey)
WHERE k.tenant = $tenant AND k.entity STARTS WITH $prefix AND k.attribute IS NOT NULL
  AND k.definition = $definition AND k.period = $period
WITH k.entity AS entity, k.scope AS scope, collect(k.uid) AS uids

// name: langgraph.namespaces
// The namespaces that hold at least one item at (cutoff, known_at): kept when the read
// rule itself (fact.read, included) answers one of their keys with something other than
// not_found. $times is [cutoff, known_at]; a null known_at is the transaction's time, as
// in every read.
// include: langgraph.keys
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

// name: langgraph.namespaces_ever
// The namespaces that ever held an item: what a search reads one by one (each read
// applies the read rule itself, so checking it here too would only repeat it).
// include: langgraph.keys
RETURN entity, scope
ORDER BY entity
