// Replace a note's content and/or enrichment, keeping the previous values as a NoteVersion, and re-embed.
// Used by update and repair. The dummy write takes the node's write lock before the values are read,
// so concurrent revisions serialise and each leaves its own version.
// Params: $id, scope, $uid, $now, $changed_by, $content, $content_sha, $context, $tags, $keywords,
//         $enrichment, $embedding. Returns: version (null when the note is not in the scope).
MATCH (n:Note {id: $id, user_id: $user_id, agent_id: $agent_id, run_id: $run_id})
SET n._lock = true
WITH n
CREATE (n)-[:PREVIOUS_VERSION]->(v:NoteVersion {
  uid: $uid, note_id: n.id, version: n.version, content: n.content, context: n.context,
  tags: n.tags, keywords: n.keywords, replaced_at: $now, changed_by: $changed_by,
  user_id: n.user_id, agent_id: n.agent_id, run_id: n.run_id})
SET n.content = $content, n.content_sha = $content_sha, n.context = $context, n.tags = $tags,
    n.keywords = $keywords, n.enrichment = $enrichment, n.version = n.version + 1, n.updated_at = $now
REMOVE n._lock
WITH n
CALL db.create.setNodeVectorProperty(n, 'embedding', $embedding)
RETURN n.version AS version
