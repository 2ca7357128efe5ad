// graphmem eval (graphmem/eval/): the throwaway tenants an evaluation writes into.

// name: eval.drop_tenant
// Remove every node of a throwaway evaluation tenant (graphmem/eval refuses any tenant
// not named eval-...), in batches, in an auto-commit transaction: its own nodes, and its
// clock (admin.tick), which names the tenant by id only.
MATCH (n)
WHERE n.tenant = $tenant OR (n:GraphmemClock AND n.id = $tenant)
CALL (n) { DETACH DELETE n } IN TRANSACTIONS OF 2000 ROWS
