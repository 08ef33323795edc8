// Create one note, idempotently: an id already in the note's scope is left untouched and reported.
// Ids are unique per scope (constraint note_scope_id_unique): the MERGE names the whole key, so it takes
// the constraint's lock (concurrent adds of one id make one note) and never sees another scope's note.
// Params: $note (map of note properties, see graphmem/store/neo4j_store.py), $embedding (list of floats).
// Returns: created (bool).
MERGE (n:Note {id: $note.id, user_id: $note.user_id, agent_id: $note.agent_id, run_id: $note.run_id})
ON CREATE SET
  n.content = $note.content, n.content_sha = $note.content_sha,
  n.event_time = $note.event_time, n.event_time_text = $note.event_time_text,
  n.created_at = $note.created_at, n.updated_at = $note.updated_at,
  n.keywords = $note.keywords, n.tags = $note.tags, n.context = $note.context,
  n.category = $note.category, n.source_id = $note.source_id, n.metadata_json = $note.metadata_json,
  n.enrichment = $note.enrichment, n.retrieval_count = 0, n.version = 1,
  n.embed_text_variant = $note.embed_text_variant, n._new = true
WITH n, coalesce(n._new, false) AS created
REMOVE n._new
WITH n, created
CALL (n, created) {
  WITH n WHERE created
  CALL db.create.setNodeVectorProperty(n, 'embedding', $embedding)
}
RETURN created
