// Record that notes were retrieved (A-MEM's retrieval_count / last_accessed, maintained here).
// Params: $ids, scope, $now.
UNWIND $ids AS id
MATCH (n:Note {id: id, user_id: $user_id, agent_id: $agent_id, run_id: $run_id})
SET n.retrieval_count = coalesce(n.retrieval_count, 0) + 1, n.last_accessed = $now
