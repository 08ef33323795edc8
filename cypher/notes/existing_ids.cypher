// Which of these ids are notes of the scope (a resumed ingest skips them). Looked up by the id
// constraint's index, one id at a time; ids of other scopes are not reported.
// Params: $ids (list of note ids), scope.
// Returns: one row per stored id: id.
UNWIND $ids AS id
MATCH (n:Note {id: id})
WHERE n.user_id = $user_id AND n.agent_id = $agent_id AND n.run_id = $run_id
RETURN n.id AS id
