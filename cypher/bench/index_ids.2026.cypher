// Benchmark probe, 2026 line: the bare in-index SEARCH, ids only (what graphmem's search costs before
// note conversion). Params: $embedding, $fetch_k, $k, scope. Returns: id, score.
CYPHER 25
MATCH (node:Note)
  SEARCH node IN (VECTOR INDEX note_embedding FOR $embedding
    WHERE node.user_id = $user_id AND node.agent_id = $agent_id AND node.run_id = $run_id
    LIMIT $fetch_k) SCORE AS score
RETURN node.id AS id, score
ORDER BY score DESC
LIMIT $k
