// Load marks: what a filings load has fully recorded (graphmem/loaders/edgar.py).
// Bookkeeping of the loader, not memory: a mark is neither a fact nor a source, no
// read of the memory looks at it, and it changes in place when a filing is written
// again with other content. Its uid hashes the scope, its kind and its id.

// name: load.marks
// The marks with these uids in this scope (one lookup for a company and its filings).
UNWIND $uids AS uid
MATCH (m:LoadMark {uid: uid})
WHERE m.tenant = $tenant AND m.scope = $scope
RETURN m.kind AS kind, m.id AS id, m.digest AS digest, m.report AS report

// name: load.mark
// Record that a filing (in its own write transaction) or a company (after its last
// filing) is in, with the digest of what was written and, for a company, its report.
MERGE (m:LoadMark {uid: $uid})
ON CREATE SET m.tenant = $tenant, m.scope = $scope, m.kind = $kind, m.id = $id
SET m.digest = $digest, m.report = $report, m.recorded_at = $recorded_at
RETURN m.uid AS uid
