// Server and schema bookkeeping: versions, the transaction clock, migrations.

// name: admin.server_info
CALL dbms.components() YIELD name, versions, edition
RETURN name, versions[0] AS version, edition

// name: admin.schema_version
OPTIONAL MATCH (s:GraphmemSchema {id: 'graphmem'})
RETURN coalesce(s.version, 0) AS version

// name: admin.await_indexes
// Wait (up to 300 s) until every index is online: a new or re-created index populates
// in the background, and a search against a populating index fails.
CALL db.awaitIndexes(300)

// name: admin.record_schema_version
// Only ever moves forward, so two processes migrating at once agree on the result.
MERGE (s:GraphmemSchema {id: 'graphmem'})
ON CREATE SET s.version = $version, s.applied_at = datetime()
ON MATCH SET s.version = CASE WHEN s.version < $version THEN $version ELSE s.version END,
             s.applied_at = CASE WHEN s.version < $version THEN datetime() ELSE s.applied_at END
RETURN s.version AS version

// name: admin.sample
// One stored fact key and its first version's search text, the first the label scan
// finds: the key graphmem.warm makes its calls with answers on (read only).
MATCH (k:FactKey)
WITH k LIMIT 1
MATCH (f:Fact)-[:VERSION_OF]->(k)
RETURN k.scope AS scope, k.entity AS entity, k.attribute AS attribute, f.search_text AS text
LIMIT 1

// name: admin.constraints_and_indexes
SHOW INDEXES YIELD name, type, labelsOrTypes, properties, state
WHERE name STARTS WITH 'graphmem_'
RETURN name, type, labelsOrTypes AS labels, properties, state
ORDER BY name

// name: admin.tick
// Transaction time for one write transaction of a tenant. Setting `lock` first takes
// the tenant clock's write lock, so a tenant's write transactions are serialised
// here: recorded_at is monotonic within a tenant (all that any read can see, since
// reads never cross tenants), two writers to one key can never interleave, and
// tenants do not wait for each other.
MERGE (c:GraphmemClock {id: $tenant})
ON CREATE SET c.last = datetime('1970-01-01T00:00:00Z')
SET c.lock = true
// Stamped after the lock is held (realtime, not the transaction's start), so a writer
// that waited for another is not stamped before it.
WITH c, datetime.truncate('microsecond', coalesce($now, datetime.realtime())) AS now
SET c.last = CASE WHEN now > c.last THEN now ELSE c.last + duration({nanoseconds: 1000}) END
RETURN c.last AS recorded_at

// name: admin.counts
// What one scope holds, counted through the tenant-prefixed indexes.
CALL () { MATCH (e:Entity) WHERE e.tenant = $tenant AND e.scope = $scope RETURN count(e) AS entities }
CALL () {
  MATCH (s:Source) WHERE s.tenant = $tenant AND s.scope = $scope
  RETURN count(CASE WHEN s:Derivation THEN null ELSE s END) AS sources,
         count(CASE WHEN s:Derivation THEN s END) AS derivations
}
CALL () {
  MATCH (k:FactKey) WHERE k.tenant = $tenant AND k.scope = $scope
  OPTIONAL MATCH (f:Fact)-[:VERSION_OF]->(k)
  RETURN count(DISTINCT k) AS keys, count(f) AS versions,
         sum(COUNT { (f)-[:EVIDENCED_BY]->(:Source) }) AS evidence
}
RETURN entities, sources, derivations, keys, versions, evidence

// name: admin.now
// The server's clock: the default cutoff (NOW) of reads that take it as a parameter.
RETURN datetime.realtime() AS now

// name: admin.recorded_through
// The default known_at of tenant $tenant's reads (see admin.known_at).
RETURN
  // include: admin.known_at
  AS known_at

// fragment: admin.known_at
// The default known_at: the tenant's last committed transaction time (the read's own
// time for a tenant that wrote nothing). A write is stamped when it takes the clock
// (admin.tick), before it commits, so a read at its own time would not see a write in
// flight yet would report a known_at after that write's stamp: the same read at the
// reported known_at, once the write commits, answered otherwise. The committed clock is
// before every write in flight, so a read's reported known_at reproduces it.
coalesce(head(COLLECT { MATCH (clock:GraphmemClock {id: $tenant}) RETURN clock.last }), datetime.transaction())
