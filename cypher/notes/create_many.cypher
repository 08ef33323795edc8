// Bulk import of ready notes (raw mode, embeddings computed by the caller). Ids already in the row's
// scope are skipped (ids are unique per scope: see notes/add_group.cypher).
// Params: $rows (list of note maps, each with an `embedding`). Returns: created_ids.
UNWIND $rows AS row
MERGE (n:Note {id: row.id, user_id: row.user_id, agent_id: row.agent_id, run_id: row.run_id})
ON CREATE SET
  n.content = row.content, n.content_sha = row.content_sha,
  n.event_time = row.event_time, n.event_time_text = row.event_time_text,
  n.created_at = row.created_at, n.updated_at = row.updated_at,
  n.keywords = row.keywords, n.tags = row.tags, n.context = row.context,
  n.category = row.category, n.source_id = row.source_id, n.metadata_json = row.metadata_json,
  n.enrichment = row.enrichment, n.retrieval_count = coalesce(row.retrieval_count, 0),
  n.last_accessed = row.last_accessed, n.version = coalesce(row.version, 1),
  n.embed_text_variant = row.embed_text_variant, n._new = true
WITH n, row, coalesce(n._new, false) AS created
REMOVE n._new
WITH n, row, created
CALL (n, row, created) {
  WITH n, row WHERE created
  CALL db.create.setNodeVectorProperty(n, 'embedding', row.embedding)
}
RETURN [x IN collect(CASE WHEN created THEN n.id END) WHERE x IS NOT NULL] AS created_ids
