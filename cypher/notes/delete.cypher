// Delete a note, its versions and every relationship touching them (DETACH: nothing dangles).
// Params: $id, scope. Returns: deleted (0 or 1).
MATCH (n:Note {id: $id, user_id: $user_id, agent_id: $agent_id, run_id: $run_id})
OPTIONAL MATCH (n)-[:PREVIOUS_VERSION]->(v:NoteVersion)
DETACH DELETE v
WITH DISTINCT n
DETACH DELETE n
RETURN count(*) AS deleted
