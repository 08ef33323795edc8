// Evolve one neighbour: keep its previous values as a NoteVersion, write the new context/tags/keywords
// (never its content) and its new embedding, all in the caller's transaction.
// The dummy write takes the node's write lock before the values are read, so two evolutions of the
// same neighbour in parallel serialise and both leave a version (no lost update).
// Params: $id, scope, $uid, $now, $caused_by, $context, $tags, $keywords, $embedding.
// Returns: version (the new one), or no row when the neighbour is gone or in another scope.
MATCH (n:Note {id: $id, user_id: $user_id, agent_id: $agent_id, run_id: $run_id})
SET n._lock = true
WITH n
CREATE (n)-[:PREVIOUS_VERSION]->(v:NoteVersion {
  uid: $uid, note_id: n.id, version: n.version, content: n.content, context: n.context,
  tags: n.tags, keywords: n.keywords, replaced_at: $now, changed_by: $caused_by,
  user_id: n.user_id, agent_id: n.agent_id, run_id: n.run_id})
SET n.context = $context, n.tags = $tags, n.keywords = $keywords,
    n.version = n.version + 1, n.updated_at = $now
REMOVE n._lock
WITH n
CALL db.create.setNodeVectorProperty(n, 'embedding', $embedding)
RETURN n.version AS version
