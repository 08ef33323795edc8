// A page of a note's previous versions, oldest first. Params: $id, scope, $skip, $limit.
MATCH (n:Note {id: $id, user_id: $user_id, agent_id: $agent_id, run_id: $run_id})-[:PREVIOUS_VERSION]->(v:NoteVersion)
RETURN v {.version, .content, .context, .tags, .keywords, .replaced_at, .changed_by} AS version
ORDER BY v.version
SKIP $skip LIMIT $limit
