// Record that notes were retrieved (A-MEM's retrieval_count / last_accessed, maintained here).
// Params: $hits (list of {id, times}), scope, $now.
UNWIND $hits AS h
MATCH (n:Note {id: h.id, user_id: $user_id, agent_id: $agent_id, run_id: $run_id})
SET n.retrieval_count = coalesce(n.retrieval_count, 0) + h.times, n.last_accessed = $now
