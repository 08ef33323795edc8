// Full-text rows of one scope from a named index (analyzer comparisons): ids and BM25 scores, best first.
// Params: $index, $lucene, $fetch_k, $k, $user_id, $agent_id, $run_id.
CALL db.index.fulltext.queryNodes($index, $lucene, {limit: $fetch_k}) YIELD node, score
WITH node, score
WHERE node.user_id = $user_id AND node.agent_id = $agent_id AND node.run_id = $run_id
RETURN node.id AS id, score
LIMIT $k
