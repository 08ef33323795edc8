// Insert or replace store items (the LangGraph store), one transaction for the whole list: a
// replacement sets the new value, leaves, TTL and embedding together, so the old value survives any
// failure (nothing is deleted first). created_at is kept on replacement.
// $items: list of {uid, user_id, agent_id, run_id, ns, ns_key, key, value_json, leaves, embedding
// (null: not indexed, any old embedding is removed), ttl_minutes, expires_at}; $now.
// uid is derived from scope, namespace and key by the adapter (graphmem/store/records.py), so an
// item of another scope can never be matched or replaced; the scope is checked again all the same.
// Returns: written (count).
UNWIND $items AS it
MERGE (i:StoreItem {uid: it.uid})
ON CREATE SET
  i.user_id = it.user_id, i.agent_id = it.agent_id, i.run_id = it.run_id,
  i.ns = it.ns, i.ns_key = it.ns_key, i.key = it.key, i.created_at = $now
WITH i, it
WHERE i.user_id = it.user_id AND i.agent_id = it.agent_id AND i.run_id = it.run_id
SET i.value_json = it.value_json, i.leaves = it.leaves, i.updated_at = $now,
    i.ttl_minutes = it.ttl_minutes, i.expires_at = it.expires_at
WITH i, it
CALL (i, it) {
  WITH i WHERE it.embedding IS NULL
  REMOVE i.embedding
}
CALL (i, it) {
  WITH i, it WHERE it.embedding IS NOT NULL
  CALL db.create.setNodeVectorProperty(i, 'embedding', it.embedding)
}
RETURN count(i) AS written
