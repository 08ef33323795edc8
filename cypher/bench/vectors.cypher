// Ids, source ids and embeddings of one scope, a page at a time (exact NumPy baselines in the bench
// and the retrieval evaluation). Params: scope, $skip, $limit. Returns: id, source_id, embedding.
MATCH (n:Note {user_id: $user_id, agent_id: $agent_id, run_id: $run_id})
WITH n ORDER BY n.id SKIP $skip LIMIT $limit
RETURN n.id AS id, n.source_id AS source_id, n.embedding AS embedding
