// Restart the TTL of store items that have one (a read with refresh_ttl). Params: $uids, scope, $now.
// Returns: refreshed (count).
UNWIND $uids AS uid
MATCH (i:StoreItem {uid: uid, user_id: $user_id, agent_id: $agent_id, run_id: $run_id})
WHERE i.ttl_minutes IS NOT NULL
SET i.expires_at = $now + duration({seconds: i.ttl_minutes * 60})
RETURN count(i) AS refreshed
