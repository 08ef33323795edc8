// A page of a note's earlier versions, oldest first, with the note's values now (history diffs: the
// last version of the last page is compared with the note itself), in one read.
// Params: $id, scope, $skip, $limit. Returns: current, versions; no row when the note is not in the scope.
MATCH (n:Note {id: $id, user_id: $user_id, agent_id: $agent_id, run_id: $run_id})
CALL (n) {
  OPTIONAL MATCH (n)-[:PREVIOUS_VERSION]->(v:NoteVersion)
  WITH v ORDER BY v.version SKIP $skip LIMIT $limit
  RETURN collect(v {.version, .content, .context, .tags, .keywords, .replaced_at, .changed_by}) AS versions
}
RETURN n {.version, .content, .context, .tags, .keywords} AS current, versions
