// Delete up to $batch notes of one scope with their versions and relationships (bench clean-up; call
// until it returns 0). Params: scope, $batch. Returns: deleted.
MATCH (n:Note {user_id: $user_id, agent_id: $agent_id, run_id: $run_id})
WITH n LIMIT $batch
OPTIONAL MATCH (n)-[:PREVIOUS_VERSION]->(v:NoteVersion)
DETACH DELETE v
WITH DISTINCT n
DETACH DELETE n
RETURN count(*) AS deleted
