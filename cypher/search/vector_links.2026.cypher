// 2026 line (Cypher 25): search/vector.2026.cypher (the scope filtered inside the vector index) and
// search/expand_links.cypher in one round trip (the "links" and "hybrid" modes). SEARCH cannot carry a
// relationship pattern (42I70), so the hop runs in a subquery per hit. The hop runs only once the
// top-k is final (enough hits, or the index has no more in this scope); otherwise the caller grows
// $fetch_k and asks again. A hop may reach another hit (never an excluded id): the service then ranks
// that hit at the better of its own and its parent's score. See search/vector_links.cypher for the rest.
// Params: $embedding, $fetch_k, $k, scope, $exclude_ids, $tags_any, $category, $since, $until, $per_hit.
// Returns one row per kept hit: fetched, cosine, note, linked (its hop: list of {from_id, type, reason,
// strength, note}); when none is kept, one row with a null note.
CYPHER 25
MATCH (node:Note)
  SEARCH node IN (VECTOR INDEX note_embedding FOR $embedding
    WHERE node.user_id = $user_id AND node.agent_id = $agent_id AND node.run_id = $run_id
    LIMIT $fetch_k) SCORE AS score
WITH node, score ORDER BY score DESC
WITH collect({node: node, score: score}) AS rows
WITH size(rows) AS fetched, [r IN rows WHERE
  r.node.user_id = $user_id AND r.node.agent_id = $agent_id AND r.node.run_id = $run_id
  AND NOT r.node.id IN $exclude_ids
  AND ($tags_any IS NULL OR any(t IN r.node.tags WHERE t IN $tags_any))
  AND ($category IS NULL OR r.node.category = $category)
  AND ($since IS NULL OR r.node.event_time >= $since)
  AND ($until IS NULL OR r.node.event_time <= $until)][0..$k] AS kept
UNWIND CASE WHEN size(kept) = 0 THEN [null] ELSE kept END AS r
CALL (r, kept, fetched) {
  WITH r, $exclude_ids AS skip
  WHERE r IS NOT NULL AND (size(kept) >= $k OR fetched < $fetch_k)
  WITH r.node AS h, skip
  MATCH (h)-[l:RELATED_TO|SUPPORTS|CONTRADICTS|ELABORATES|FOLLOWS|SAME_TOPIC]-(m:Note)
  WHERE m.user_id = $user_id AND m.agent_id = $agent_id AND m.run_id = $run_id AND NOT m.id IN skip
  WITH h, l, m
  ORDER BY l.strength DESC, l.created_at DESC, m.id  // m.id: ties (a batch of links) in a fixed order
  LIMIT $per_hit
  RETURN collect({from_id: h.id, type: type(l), reason: l.reason, strength: l.strength,
    note: m {.id, .content, .user_id, .agent_id, .run_id, event_time: toString(m.event_time),
      .event_time_text, created_at: toString(m.created_at), updated_at: toString(m.updated_at), .keywords,
      .tags, .context, .category, .source_id, .metadata_json, .enrichment, .retrieval_count,
      last_accessed: toString(m.last_accessed), .version}}) AS linked
}
RETURN fetched, 2 * r.score - 1 AS cosine, CASE WHEN r IS NULL THEN null ELSE {id: r.node.id, content: r.node.content,
  user_id: r.node.user_id, agent_id: r.node.agent_id, run_id: r.node.run_id,
  event_time: toString(r.node.event_time), event_time_text: r.node.event_time_text,
  created_at: toString(r.node.created_at), updated_at: toString(r.node.updated_at),
  keywords: r.node.keywords, tags: r.node.tags, context: r.node.context, category: r.node.category,
  source_id: r.node.source_id, metadata_json: r.node.metadata_json, enrichment: r.node.enrichment,
  retrieval_count: r.node.retrieval_count, last_accessed: toString(r.node.last_accessed),
  version: r.node.version} END AS note, linked
