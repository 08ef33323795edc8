// Exact top-k by cosine over one scope: the fallback when a small or heavily filtered scope starves the
// over-fetched HNSW result. Uses the scope index, then scores only that scope's notes.
// Params: $embedding, $k, scope, $exclude_ids, $tags_any, $category, $since, $until.
// Temporal properties come back as ISO-8601 strings (the driver's DateTime hydration is slow); the store parses them.
MATCH (node:Note {user_id: $user_id, agent_id: $agent_id, run_id: $run_id})
WHERE node.embedding IS NOT NULL AND NOT node.id IN $exclude_ids
  AND ($tags_any IS NULL OR any(t IN node.tags WHERE t IN $tags_any))
  AND ($category IS NULL OR node.category = $category)
  AND ($since IS NULL OR node.event_time >= $since)
  AND ($until IS NULL OR node.event_time <= $until)
WITH node, vector.similarity.cosine(node.embedding, $embedding) AS score
ORDER BY score DESC
LIMIT $k
RETURN 2 * score - 1 AS cosine, node {.id, .content, .user_id, .agent_id, .run_id, event_time: toString(node.event_time),
  .event_time_text, created_at: toString(node.created_at), updated_at: toString(node.updated_at), .keywords,
  .tags, .context, .category, .source_id, .metadata_json, .enrichment, .retrieval_count,
  last_accessed: toString(node.last_accessed), .version} AS note
