// Browse: the 25 newest notes of a scope and the typed links between them.
// Params (set once per Browser session):
//   :params {user_id: 'alice', agent_id: 'default', run_id: 'default'}
MATCH (n:Note {user_id: $user_id, agent_id: $agent_id, run_id: $run_id})
WITH n ORDER BY n.created_at DESC LIMIT 25
WITH collect(n) AS notes
UNWIND notes AS n
OPTIONAL MATCH link = (n)-[:RELATED_TO|SUPPORTS|CONTRADICTS|ELABORATES|FOLLOWS|SAME_TOPIC]->(m:Note)
WHERE m IN notes
RETURN n, link
