// The note the session's newest remembered message became (GraphmemChatMessageHistory(remember=True)),
// so the next one can follow it. Params: $key, scope. Returns: note_id (null when none; no row when
// the session does not exist).
MATCH (s:ChatSession {key: $key, user_id: $user_id, agent_id: $agent_id, run_id: $run_id})
RETURN s.last_note AS note_id
