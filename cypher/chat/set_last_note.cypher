// Record the note the session's newest remembered message became. Params: $key, scope, $note_id.
// Returns: note_id (no row when the session does not exist).
MATCH (s:ChatSession {key: $key, user_id: $user_id, agent_id: $agent_id, run_id: $run_id})
SET s.last_note = $note_id
RETURN s.last_note AS note_id
