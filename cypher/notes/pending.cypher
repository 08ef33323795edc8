// Notes whose enrichment failed and waits for `graphmem repair`. Params: scope, $limit.
MATCH (n:Note {user_id: $user_id, agent_id: $agent_id, run_id: $run_id})
WHERE n.enrichment = 'pending'
RETURN n.id AS id
ORDER BY n.created_at
LIMIT $limit
