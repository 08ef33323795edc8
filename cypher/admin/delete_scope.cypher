// Delete every note and note version of one scope, with their relationships (tests, `graphmem` admin).
// Params: $user_id, $agent_id, $run_id. Returns: deleted (count).
MATCH (n)
WHERE (n:Note OR n:NoteVersion)
  AND n.user_id = $user_id AND n.agent_id = $agent_id AND n.run_id = $run_id
DETACH DELETE n
RETURN count(*) AS deleted
