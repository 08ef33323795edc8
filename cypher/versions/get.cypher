// One earlier version of a note (rollback). Params: $id, scope, $version.
// Returns: version, or no row (no such note in the scope, or no such version).
MATCH (:Note {id: $id, user_id: $user_id, agent_id: $agent_id, run_id: $run_id})
      -[:PREVIOUS_VERSION]->(v:NoteVersion {version: $version})
RETURN v {.version, .content, .context, .tags, .keywords, .replaced_at, .changed_by} AS version
