// Both lines: global HNSW top-$fetch_k, then the scope filter (graphmem's 5.26 search, ids only).
// Params: $embedding, $fetch_k, $k, scope. Returns: fetched, ids (best first), scores.
CALL db.index.vector.queryNodes('note_embedding', $fetch_k, $embedding) YIELD node, score
WITH collect({node: node, score: score}) AS rows
WITH size(rows) AS fetched, [r IN rows WHERE r.node.user_id = $user_id AND r.node.agent_id = $agent_id
  AND r.node.run_id = $run_id][0..$k] AS kept
RETURN fetched, [r IN kept | r.node.id] AS ids
