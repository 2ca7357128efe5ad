// A database built offline by Neo4j's importer (graphmem bootstrap): the probe that
// learns what the online statements write, and the steps around the import.

// name: bootstrap.probe
// What the write statements wrote for the probe version (graphmem/probe.py, in a
// transaction that is rolled back): its search text and scope token, and the property
// names of the version, its key, entity, sources and edges, of the tenant clock and
// of a load mark.
MATCH (f:Fact {version_id: $version_id})-[:VERSION_OF]->(k:FactKey)-[:ABOUT]->(e:Entity)
RETURN f.search_text AS text, f.search_scope AS scope_token,
       keys(f) AS fact, keys(k) AS key, keys(e) AS entity,
       COLLECT { MATCH (f)-[:EVIDENCED_BY]->(s:Source) UNWIND keys(s) AS p RETURN DISTINCT p } AS source,
       COLLECT { MATCH (f)-[r:EVIDENCED_BY]->(:Source) UNWIND keys(r) AS p RETURN DISTINCT p } AS evidence,
       COLLECT { MATCH (f)-[r:VERSION_OF]->(:FactKey) UNWIND keys(r) AS p RETURN DISTINCT p } AS version_of,
       COLLECT { MATCH (k)-[r:ABOUT]->(:Entity) UNWIND keys(r) AS p RETURN DISTINCT p } AS about,
       COLLECT { MATCH (c:GraphmemClock {id: $tenant}) UNWIND keys(c) AS p RETURN p } AS clock,
       COLLECT { MATCH (m:LoadMark {uid: $mark_uid}) UNWIND keys(m) AS p RETURN p } AS mark

// name: bootstrap.holds_data
// Whether a database holds anything but graphmem's schema record: a bootstrap replaces
// such a database only when told to.
RETURN EXISTS { MATCH (n) WHERE NOT n:GraphmemSchema } AS holds_data

// name: bootstrap.entity_aliases
// After the import: an entity put without aliases holds an empty list (entity.put
// stores one), which the importer cannot write (graphmem/importcsv.py).
MATCH (e:Entity) WHERE e.aliases IS NULL
SET e.aliases = []
RETURN count(e) AS fixed

// name: bootstrap.key_flags
// After the import: a key with no flagged version holds an empty list
// (fact.create_versions starts one), which the importer cannot write
// (graphmem/importcsv.py). Every key of a build; in transactions of their own, so
// the heap holds one batch.
MATCH (k:FactKey) WHERE k.flagged IS NULL
CALL (k) {
  SET k.flagged = []
} IN TRANSACTIONS OF 10000 ROWS
