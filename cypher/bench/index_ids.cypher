// Benchmark probe: the bare HNSW query, ids only, filtered to one scope (what graphmem's search costs
// before note conversion). Params: $embedding, $fetch_k, $k, scope. Returns: id, score.
CALL db.index.vector.queryNodes('note_embedding', $fetch_k, $embedding) YIELD node, score
WHERE node.user_id = $user_id AND node.agent_id = $agent_id AND node.run_id = $run_id
RETURN node.id AS id, score
LIMIT $k
