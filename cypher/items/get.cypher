// One store item of a scope. $live_at (nullable): hide items whose TTL expired before it.
// Params: $uid, scope, $live_at.
MATCH (i:StoreItem {uid: $uid, user_id: $user_id, agent_id: $agent_id, run_id: $run_id})
WHERE $live_at IS NULL OR i.expires_at IS NULL OR i.expires_at > $live_at
RETURN i {.ns, .key, .value_json, .created_at, .updated_at, .expires_at, .ttl_minutes} AS item
