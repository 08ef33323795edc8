// Full-text (Lucene, English analyzer) hits within one scope. $lucene is built by the store from escaped
// terms. Params: $lucene, $fetch_k, $k, scope, $tags_any, $category, $since, $until.
// Temporal properties come back as ISO-8601 strings (the driver's DateTime hydration is slow); the store parses them.
CALL db.index.fulltext.queryNodes('note_text', $lucene, {limit: $fetch_k}) YIELD node, score
WHERE node.user_id = $user_id AND node.agent_id = $agent_id AND node.run_id = $run_id
  AND ($tags_any IS NULL OR any(t IN node.tags WHERE t IN $tags_any))
  AND ($category IS NULL OR node.category = $category)
  AND ($since IS NULL OR node.event_time >= $since)
  AND ($until IS NULL OR node.event_time <= $until)
RETURN score, node {.id, .content, .user_id, .agent_id, .run_id, event_time: toString(node.event_time),
  .event_time_text, created_at: toString(node.created_at), updated_at: toString(node.updated_at), .keywords,
  .tags, .context, .category, .source_id, .metadata_json, .enrichment, .retrieval_count,
  last_accessed: toString(node.last_accessed), .version} AS note
ORDER BY score DESC
LIMIT $k
