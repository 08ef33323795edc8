// Browse: one note and every note within two typed links of it (same scope only).
// Params: :params {user_id: 'alice', agent_id: 'default', run_id: 'default', note_id: '<id>'}
MATCH (n:Note {id: $note_id, user_id: $user_id, agent_id: $agent_id, run_id: $run_id})
OPTIONAL MATCH path = (n)-[:RELATED_TO|SUPPORTS|CONTRADICTS|ELABORATES|FOLLOWS|SAME_TOPIC*1..2]-(m:Note)
WHERE all(x IN nodes(path) WHERE x.user_id = $user_id AND x.agent_id = $agent_id AND x.run_id = $run_id)
RETURN n, path
LIMIT 200
