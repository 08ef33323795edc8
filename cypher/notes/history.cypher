// Previous versions of a note, oldest first. Params: $id, scope.
MATCH (n:Note {id: $id, user_id: $user_id, agent_id: $agent_id, run_id: $run_id})-[:PREVIOUS_VERSION]->(v:NoteVersion)
RETURN v {.version, .content, .context, .tags, .keywords, .replaced_at, .changed_by} AS version
ORDER BY v.version
