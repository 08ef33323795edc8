// Browse: how a note evolved. Its previous versions (NoteVersion: the old context, tags, keywords,
// content) and the notes whose arrival changed it (version.changed_by), with the links between them.
// Params: :params {user_id: 'alice', agent_id: 'default', run_id: 'default', note_id: '<id>'}
MATCH (n:Note {id: $note_id, user_id: $user_id, agent_id: $agent_id, run_id: $run_id})
OPTIONAL MATCH version = (n)-[:PREVIOUS_VERSION]->(v:NoteVersion)
OPTIONAL MATCH cause = (c:Note {id: v.changed_by, user_id: $user_id, agent_id: $agent_id, run_id: $run_id})
                       -[:RELATED_TO|SUPPORTS|CONTRADICTS|ELABORATES|FOLLOWS|SAME_TOPIC]-(n)
RETURN n, version, cause
ORDER BY v.version
