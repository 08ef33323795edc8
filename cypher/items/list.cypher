// Store items of a scope under a namespace prefix that pass the filter conditions, most recently
// updated first (as PostgresStore orders a search without a query), paged.
// $ns_key: the prefix's encoding (labels are self-delimiting, so STARTS WITH matches whole labels).
// $conds: list of {op, head, entry}: each compares the value's scalar leaf under head (kind + path)
// with entry (head + operand); leaves and entries are encoded by graphmem/service/items.py so that
// string order is the order of the values (numbers included). Parameters only: no filter text
// ever becomes Cypher.
// Params: scope, $ns_key, $conds, $live_at (nullable), $skip, $limit.
MATCH (i:StoreItem {user_id: $user_id, agent_id: $agent_id, run_id: $run_id})
WHERE i.ns_key STARTS WITH $ns_key
  AND ($live_at IS NULL OR i.expires_at IS NULL OR i.expires_at > $live_at)
  AND all(c IN $conds WHERE CASE c.op
    WHEN '$eq' THEN c.entry IN i.leaves
    WHEN '$ne' THEN NOT c.entry IN i.leaves
    WHEN '$gt' THEN any(e IN i.leaves WHERE e STARTS WITH c.head AND e > c.entry)
    WHEN '$gte' THEN any(e IN i.leaves WHERE e STARTS WITH c.head AND e >= c.entry)
    WHEN '$lt' THEN any(e IN i.leaves WHERE e STARTS WITH c.head AND e < c.entry)
    WHEN '$lte' THEN any(e IN i.leaves WHERE e STARTS WITH c.head AND e <= c.entry)
  END)
RETURN i {.ns, .key, .value_json, .created_at, .updated_at, .expires_at, .ttl_minutes} AS item
ORDER BY i.updated_at DESC, i.ns_key, i.key
SKIP $skip LIMIT $limit
