// Browse: notes of a scope whose event happened in a time range (event_time; created_at when the
// note has no event time), oldest first, with the links between them.
// Params: :params {user_id: 'alice', agent_id: 'default', run_id: 'default',
//                  since: '2023-05-01T00:00:00Z', until: '2023-06-01T00:00:00Z'}
MATCH (n:Note {user_id: $user_id, agent_id: $agent_id, run_id: $run_id})
WITH n, coalesce(n.event_time, n.created_at) AS at
WHERE at >= datetime($since) AND at < datetime($until)
WITH n ORDER BY at LIMIT 50
WITH collect(n) AS notes
UNWIND notes AS n
OPTIONAL MATCH link = (n)-[:RELATED_TO|SUPPORTS|CONTRADICTS|ELABORATES|FOLLOWS|SAME_TOPIC]->(m:Note)
WHERE m IN notes
RETURN n, link
