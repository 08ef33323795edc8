// Indexed store items of a scope under a namespace prefix that pass the filter conditions, ranked by
// exact cosine similarity to $embedding (no approximate index: a filter never hides a match), paged.
// Neo4j reports cosine as (1 + cos) / 2: converted here. Conditions as in items/list.cypher.
// Params: scope, $ns_key, $conds, $live_at (nullable), $embedding, $skip, $limit.
MATCH (i:StoreItem {user_id: $user_id, agent_id: $agent_id, run_id: $run_id})
WHERE i.ns_key STARTS WITH $ns_key AND i.embedding IS NOT NULL
  AND ($live_at IS NULL OR i.expires_at IS NULL OR i.expires_at > $live_at)
  AND all(c IN $conds WHERE CASE c.op
    WHEN '$eq' THEN c.entry IN i.leaves
    WHEN '$ne' THEN NOT c.entry IN i.leaves
    WHEN '$gt' THEN any(e IN i.leaves WHERE e STARTS WITH c.head AND e > c.entry)
    WHEN '$gte' THEN any(e IN i.leaves WHERE e STARTS WITH c.head AND e >= c.entry)
    WHEN '$lt' THEN any(e IN i.leaves WHERE e STARTS WITH c.head AND e < c.entry)
    WHEN '$lte' THEN any(e IN i.leaves WHERE e STARTS WITH c.head AND e <= c.entry)
  END)
WITH i, 2 * vector.similarity.cosine(i.embedding, $embedding) - 1 AS score
ORDER BY score DESC, i.ns_key, i.key
SKIP $skip LIMIT $limit
RETURN i {.ns, .key, .value_json, .created_at, .updated_at, .expires_at, .ttl_minutes} AS item, score
