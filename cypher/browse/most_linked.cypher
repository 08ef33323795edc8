// Browse: the 15 most linked notes of a scope (hubs of the memory), with their links.
// Params: :params {user_id: 'alice', agent_id: 'default', run_id: 'default'}
MATCH (n:Note {user_id: $user_id, agent_id: $agent_id, run_id: $run_id})
WITH n, COUNT { (n)-[:RELATED_TO|SUPPORTS|CONTRADICTS|ELABORATES|FOLLOWS|SAME_TOPIC]-(:Note) } AS degree
WHERE degree > 0
ORDER BY degree DESC, n.created_at DESC
LIMIT 15
MATCH link = (n)-[:RELATED_TO|SUPPORTS|CONTRADICTS|ELABORATES|FOLLOWS|SAME_TOPIC]-(m:Note)
RETURN n, degree, link
