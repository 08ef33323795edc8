// Browse: notes of a scope carrying a tag (exact, case-insensitive), with the links between them.
// Params: :params {user_id: 'alice', agent_id: 'default', run_id: 'default', tag: 'travel'}
MATCH (n:Note {user_id: $user_id, agent_id: $agent_id, run_id: $run_id})
WHERE any(t IN n.tags WHERE toLower(t) = toLower($tag))
WITH collect(n)[..50] AS notes
UNWIND notes AS n
OPTIONAL MATCH link = (n)-[:RELATED_TO|SUPPORTS|CONTRADICTS|ELABORATES|FOLLOWS|SAME_TOPIC]->(m:Note)
WHERE m IN notes
RETURN n, link
