// Roll a note back to one of its earlier versions, as a NEW version (history is append-only): the
// current values are kept as a NoteVersion whose changed_by is $changed_by ('rollback:<version>', or
// 'undo:<note id>' when an undo reverts an evolution), the old version's content, context, tags and
// keywords are copied back, and the note gets $embedding (computed from those values by the caller).
// Optimistic: nothing is written unless the note is still at $expected_version and the version still
// holds $content (what the embedding was computed from). The write lock is taken (dummy write) before
// the version is read, so a concurrent change makes this one write nothing rather than hide it.
// Params: $id, scope, $version, $expected_version, $content, $content_sha, $uid, $now, $changed_by,
//         $embedding. Returns: version (the new one); no row when nothing was written.
MATCH (n:Note {id: $id, user_id: $user_id, agent_id: $agent_id, run_id: $run_id})
SET n._lock = true
REMOVE n._lock
WITH n
MATCH (n)-[:PREVIOUS_VERSION]->(old:NoteVersion {version: $version})
WHERE n.version = $expected_version AND old.content = $content
CREATE (n)-[:PREVIOUS_VERSION]->(:NoteVersion {
  uid: $uid, note_id: n.id, version: n.version, content: n.content, context: n.context,
  tags: n.tags, keywords: n.keywords, replaced_at: $now, changed_by: $changed_by,
  user_id: n.user_id, agent_id: n.agent_id, run_id: n.run_id})
SET n.content = old.content, n.content_sha = $content_sha, n.context = old.context, n.tags = old.tags,
    n.keywords = old.keywords, n.version = n.version + 1, n.updated_at = $now
WITH n
CALL db.create.setNodeVectorProperty(n, 'embedding', $embedding)
RETURN n.version AS version
