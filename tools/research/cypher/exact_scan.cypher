// Both lines: exact top-$k by cosine over the scope (range index, then a scan of the scope's vectors).
// Params: $embedding, $k, scope.
MATCH (n:Note {user_id: $user_id, agent_id: $agent_id, run_id: $run_id})
WITH n, vector.similarity.cosine(n.embedding, $embedding) AS score
ORDER BY score DESC
LIMIT $k
RETURN n.id AS id, score
