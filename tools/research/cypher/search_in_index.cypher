// 2026: SEARCH with the scope filtered inside the index, $fetch_k candidates, best $k kept.
// Params: $embedding, $fetch_k, $k, scope.
CYPHER 25
MATCH (n:Note)
  SEARCH n IN (VECTOR INDEX note_embedding FOR $embedding
    WHERE n.user_id = $user_id AND n.agent_id = $agent_id AND n.run_id = $run_id
    LIMIT $fetch_k) SCORE AS score
RETURN n.id AS id, score
ORDER BY score DESC
LIMIT $k
