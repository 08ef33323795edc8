// Ids, source ids and embeddings of one scope, a page at a time by id (keyset paging: each page starts
// after the last id of the previous one, so no page sorts or skips the whole scope). For the exact
// NumPy baselines of the bench and the retrieval evaluation.
// Params: scope, $after (last id of the previous page, '' for the first), $limit.
// Returns: id, source_id, embedding.
MATCH (n:Note {user_id: $user_id, agent_id: $agent_id, run_id: $run_id})
WHERE n.id > $after
WITH n ORDER BY n.id LIMIT $limit
RETURN n.id AS id, n.source_id AS source_id, n.embedding AS embedding
