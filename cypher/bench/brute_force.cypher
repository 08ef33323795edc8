// Benchmark baseline: exact top-k by cosine as a plain Cypher scan of one scope (no vector index).
// Params: $embedding, $k, scope. Returns: id, score (Neo4j's (1 + cos) / 2).
MATCH (n:Note {user_id: $user_id, agent_id: $agent_id, run_id: $run_id})
WITH n, vector.similarity.cosine(n.embedding, $embedding) AS score
ORDER BY score DESC
LIMIT $k
RETURN n.id AS id, score
