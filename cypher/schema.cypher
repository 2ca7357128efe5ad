// Schema migrations, applied in order by Memory.migrate(). Each statement is one
// idempotent DDL command (Neo4j runs schema changes alone in their transaction), or an
// idempotent fill of new fields in existing data (run in its own transactions).
// Community edition has uniqueness constraints and range/full-text indexes, but no
// existence or node-key constraints: required properties are checked in Python.
// Never edit a released migration; add the next number instead.

// name: schema.001.entity_uid
CREATE CONSTRAINT graphmem_entity_uid IF NOT EXISTS FOR (n:Entity) REQUIRE n.uid IS UNIQUE

// name: schema.002.source_uid
CREATE CONSTRAINT graphmem_source_uid IF NOT EXISTS FOR (n:Source) REQUIRE n.uid IS UNIQUE

// name: schema.003.factkey_uid
CREATE CONSTRAINT graphmem_factkey_uid IF NOT EXISTS FOR (n:FactKey) REQUIRE n.uid IS UNIQUE

// name: schema.004.fact_version_id
CREATE CONSTRAINT graphmem_fact_version_id IF NOT EXISTS FOR (n:Fact) REQUIRE n.version_id IS UNIQUE

// name: schema.005.record_id
CREATE CONSTRAINT graphmem_record_id IF NOT EXISTS FOR (n:Record) REQUIRE n.id IS UNIQUE

// name: schema.006.clock_id
CREATE CONSTRAINT graphmem_clock_id IF NOT EXISTS FOR (n:GraphmemClock) REQUIRE n.id IS UNIQUE

// name: schema.007.factkey_lookup
CREATE INDEX graphmem_factkey_lookup IF NOT EXISTS FOR (n:FactKey) ON (n.tenant, n.entity, n.attribute)

// name: schema.008.factkey_period
CREATE INDEX graphmem_factkey_period IF NOT EXISTS FOR (n:FactKey) ON (n.tenant, n.period_end)

// name: schema.009.source_tenant
CREATE INDEX graphmem_source_tenant IF NOT EXISTS FOR (n:Source) ON (n.tenant, n.id)

// name: schema.010.entity_tenant
CREATE INDEX graphmem_entity_tenant IF NOT EXISTS FOR (n:Entity) ON (n.tenant, n.id)

// name: schema.011.schema_state
CREATE CONSTRAINT graphmem_schema_id IF NOT EXISTS FOR (n:GraphmemSchema) REQUIRE n.id IS UNIQUE

// --- agent memory (governance): experiences, task states, candidates, search, context

// name: schema.012.memory_id
CREATE CONSTRAINT graphmem_memory_id IF NOT EXISTS FOR (n:Memory) REQUIRE n.memory_id IS UNIQUE

// name: schema.013.task_state_task
CREATE INDEX graphmem_task_state_task IF NOT EXISTS FOR (n:TaskState) ON (n.tenant, n.task_id)

// name: schema.014.candidate_tenant
CREATE INDEX graphmem_candidate_tenant IF NOT EXISTS FOR (n:Candidate) ON (n.tenant, n.scope)

// name: schema.015.memory_text
// The search index over every memory's text (graphmem/indexing.py builds `search_text`;
// `search_scope` is a token of the scope, so Lucene itself skips other scopes). The
// english analyzer stems words (a paraphrase still meets its stem); codes such as
// E-4012 or accession numbers are searched as phrases, so they match only exactly.
CREATE FULLTEXT INDEX graphmem_memory_text IF NOT EXISTS
FOR (n:Fact|Experience|TaskState|Candidate) ON EACH [n.search_text, n.search_scope]
OPTIONS {indexConfig: {`fulltext.analyzer`: 'english', `fulltext.eventually_consistent`: false}}

// name: schema.016.snapshot_echo
CREATE INDEX graphmem_snapshot_echo IF NOT EXISTS FOR (n:ContextSnapshot) ON (n.tenant, n.echo_hash)

// name: schema.017.included_line
CREATE INDEX graphmem_included_line IF NOT EXISTS FOR ()-[r:INCLUDED]-() ON (r.line_hash)

// name: schema.018.included_claim
CREATE INDEX graphmem_included_claim IF NOT EXISTS FOR ()-[r:INCLUDED]-() ON (r.claim_hash)

// name: schema.019.included_memory
CREATE INDEX graphmem_included_memory IF NOT EXISTS FOR ()-[r:INCLUDED]-() ON (r.memory_id)

// --- the search index becomes eventually consistent (migrations 020-021)
// Updating Lucene inside each commit cost about twice a raw write of the same facts;
// an eventually consistent index takes those updates after the commit, in the
// background. Searches stay read-your-writes: `search.hits` first waits for every
// committed update to be indexed (db.index.fulltext.awaitEventuallyConsistentIndexRefresh).
// Neo4j cannot change an index's options, and refuses a second index over the same
// schema (`IF NOT EXISTS` would silently keep the old one), so the old index is dropped
// first and the new one has its own name; both statements are no-ops once applied, and
// schema.015 is a no-op once graphmem_search_text exists.

// name: schema.020.drop_sync_memory_text
DROP INDEX graphmem_memory_text IF EXISTS

// name: schema.021.search_text
CREATE FULLTEXT INDEX graphmem_search_text IF NOT EXISTS
FOR (n:Fact|Experience|TaskState|Candidate) ON EACH [n.search_text, n.search_scope]
OPTIONS {indexConfig: {`fulltext.analyzer`: 'english', `fulltext.eventually_consistent`: true}}

// name: schema.022.factkey_attribute
// facts_as_of(attribute=...) across entities (fact.keys_of_attribute).
CREATE INDEX graphmem_factkey_attribute IF NOT EXISTS FOR (n:FactKey) ON (n.tenant, n.attribute)

// name: schema.023.source_authority
// The strongest authority among a tenant's sources, read from the end of this index: no
// memory of the tenant can rank above it, which lets a search stop reading hits early.
CREATE INDEX graphmem_source_authority IF NOT EXISTS FOR (n:Source) ON (n.tenant, n.authority_rank)

// --- a key with a long history reads what can still win (migrations 024-025)
// fact.read walks a key's evidence per (publisher, top) feed in availability order,
// from the cutoff backwards, and stops at the first evidence that can still win (see
// the comment above fact.read). Each evidence edge carries its key's uid, its source's
// publisher and its version's top (the strongest authority rank of all the version's
// evidence); each key counts its versions by top (`tiers`), lists its feeds, the
// versions with a lifecycle record (`flagged`: invalidated, erased, or evidenced by a
// retracted source) and the time of its last write (`written_at`); a retracted source
// carries its retraction's recorded_at (`retracted_at`).

// name: schema.024.evidence_feed
CREATE INDEX graphmem_evidence_feed IF NOT EXISTS
FOR ()-[e:EVIDENCED_BY]-() ON (e.key_uid, e.publisher, e.top, e.available_by)

// name: schema.025.evidence_feeds
// Not DDL: fills those fields in for the keys written before them (idempotent: a key
// that has `tiers` is done; each key in its own transaction, so an interrupted run
// resumes). The writers keep them in step from then on.
MATCH (k:FactKey)
WHERE k.tiers IS NULL
CALL (k) {
  MATCH (f:Fact)-[:VERSION_OF]->(k)
  WITH k, f, COLLECT { MATCH (f)-[:EVIDENCED_BY]->(s:Source) RETURN max(s.authority_rank) AS top }[0] AS top
  CALL (k, f, top) {
    MATCH (f)-[e:EVIDENCED_BY]->(s:Source)
    SET e.key_uid = k.uid, e.publisher = s.publisher, e.top = top,
        s.retracted_at = COLLECT { MATCH (s)<-[:RETRACTS]-(x:Retraction) RETURN x.recorded_at
                                   ORDER BY x.recorded_at LIMIT 1 }[0]
    RETURN collect(DISTINCT toString(top) + s.publisher) AS feeds, max(e.recorded_at) AS written
  }
  WITH k, f, top, feeds, written,
       f.erased_at IS NOT NULL OR EXISTS { (f)<-[:INVALIDATES]-(:Invalidation) }
         OR EXISTS { (f)-[:EVIDENCED_BY]->(:Source)<-[:RETRACTS]-(:Retraction) } AS flagged
  WITH k, collect(top) AS tops, collect(feeds) AS feeds, max(written) AS written_at,
       collect(CASE WHEN flagged THEN f.version_id END) AS flagged
  SET k.tiers = [t IN range(1, 4) | size([x IN tops WHERE x = t])],
      k.feeds = reduce(all = [], x IN feeds | all + [y IN x WHERE NOT y IN all]),
      k.flagged = flagged, k.written_at = written_at
} IN TRANSACTIONS OF 100 ROWS

// name: schema.026.factkey_entity_period
// A screen seeks each entity's keys of one attribute whose period ends in a frame's
// window (screen.read): a range on period_end after three equalities.
CREATE INDEX graphmem_factkey_entity_period IF NOT EXISTS FOR (n:FactKey) ON (n.tenant, n.entity, n.attribute, n.period_end)

// name: schema.028.load_mark
// What a filings load has recorded (graphmem.loaders.edgar): one LoadMark per filing,
// written in the filing's own transaction, and one per company once all its filings
// are in, so that a re-run skips them with one lookup per company.
CREATE CONSTRAINT graphmem_load_mark_uid IF NOT EXISTS FOR (n:LoadMark) REQUIRE n.uid IS UNIQUE

// name: schema.029.embedding_space
// One embedder record per scope (graphmem/retrieval/store.py: retrieval.claim MERGEs it
// under the tenant's clock lock; the constraint keeps it one whatever writes it) and
// the index a search by meaning finds it with.
CREATE CONSTRAINT graphmem_embedding_space IF NOT EXISTS FOR (n:EmbeddingSpace) REQUIRE (n.tenant, n.scope) IS UNIQUE

// name: schema.030.fact_recorded
// A process's copy of a scope's vectors (graphmem/retrieval/vectors.py) catches up with
// the graph through these four: the scope's fact versions and memories written since its
// last look (recorded_at), and those whose vector was set or cleared since (embedded_at,
// stamped by every statement that writes a vector). Its first look reads the scope whole
// through the first two (an existence predicate on the third property).
CREATE INDEX graphmem_fact_recorded IF NOT EXISTS FOR (n:Fact) ON (n.tenant, n.scope, n.recorded_at)

// name: schema.031.memory_recorded
CREATE INDEX graphmem_memory_recorded IF NOT EXISTS FOR (n:Memory) ON (n.tenant, n.scope, n.recorded_at)

// name: schema.032.fact_embedded
CREATE INDEX graphmem_fact_embedded IF NOT EXISTS FOR (n:Fact) ON (n.tenant, n.scope, n.embedded_at)

// name: schema.033.memory_embedded
CREATE INDEX graphmem_memory_embedded IF NOT EXISTS FOR (n:Memory) ON (n.tenant, n.scope, n.embedded_at)
