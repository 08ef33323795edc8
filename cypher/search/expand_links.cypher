// One hop along typed links (either direction) from the given hits, bounded per hit, same scope only.
// Params: $ids, scope, $per_hit, $exclude_ids.
// Returns: from_id, type, reason, strength, note (the linked note).
// Temporal properties come back as ISO-8601 strings (the driver's DateTime hydration is slow); the store parses them.
UNWIND $ids AS hid
MATCH (h:Note {id: hid, user_id: $user_id, agent_id: $agent_id, run_id: $run_id})
CALL (h) {
  MATCH (h)-[r:RELATED_TO|SUPPORTS|CONTRADICTS|ELABORATES|FOLLOWS|SAME_TOPIC]-(m:Note)
  WHERE m.user_id = $user_id AND m.agent_id = $agent_id AND m.run_id = $run_id
    AND NOT m.id IN $exclude_ids
  RETURN r, m
  ORDER BY r.strength DESC, r.created_at DESC, m.id  // m.id: ties (a batch of links) in a fixed order
  LIMIT $per_hit
}
RETURN h.id AS from_id, type(r) AS type, r.reason AS reason, r.strength AS strength,
  m {.id, .content, .user_id, .agent_id, .run_id, event_time: toString(m.event_time),
     .event_time_text, created_at: toString(m.created_at), updated_at: toString(m.updated_at), .keywords,
     .tags, .context, .category, .source_id, .metadata_json, .enrichment, .retrieval_count,
     last_accessed: toString(m.last_accessed), .version} AS note
