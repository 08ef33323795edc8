// Full-text (Lucene, English analyzer) hits within one scope. $lucene is built by the store from escaped
// terms. The index spans every scope and cannot filter, so, as for vector search, the store grows
// $fetch_k while fewer than $k of the rows it gave belong to the scope (other tenants' notes may
// outrank all of this scope's). queryNodes yields rows best first. With $embedding, each hit also
// carries its cosine to it (hybrid search fuses by score: a note only the words find needs one).
// Params: $lucene, $fetch_k, $k, scope, $tags_any, $category, $since, $until, $embedding (or null).
// Returns one row per hit: fetched (rows the index gave), score, cosine (null without $embedding or
// an embedding), note (null in the one row of no hits); one row per hit for the reason given in
// search/vector.cypher.
// Temporal properties come back as ISO-8601 strings (the driver's DateTime hydration is slow); the store parses them.
CALL db.index.fulltext.queryNodes('note_text', $lucene, {limit: $fetch_k}) YIELD node, score
WITH collect({node: node, score: score}) AS rows
WITH size(rows) AS fetched, [r IN rows WHERE
  r.node.user_id = $user_id AND r.node.agent_id = $agent_id AND r.node.run_id = $run_id
  AND ($tags_any IS NULL OR any(t IN r.node.tags WHERE t IN $tags_any))
  AND ($category IS NULL OR r.node.category = $category)
  AND ($since IS NULL OR r.node.event_time >= $since)
  AND ($until IS NULL OR r.node.event_time <= $until)][0..$k] AS kept
UNWIND CASE WHEN size(kept) = 0 THEN [null] ELSE kept END AS r
RETURN fetched, r.score AS score,
  CASE WHEN r IS NULL OR $embedding IS NULL OR r.node.embedding IS NULL THEN null
    ELSE 2 * vector.similarity.cosine(r.node.embedding, $embedding) - 1 END AS cosine,
  CASE WHEN r IS NULL THEN null ELSE {id: r.node.id, content: r.node.content,
  user_id: r.node.user_id, agent_id: r.node.agent_id, run_id: r.node.run_id,
  event_time: toString(r.node.event_time), event_time_text: r.node.event_time_text,
  created_at: toString(r.node.created_at), updated_at: toString(r.node.updated_at),
  keywords: r.node.keywords, tags: r.node.tags, context: r.node.context, category: r.node.category,
  source_id: r.node.source_id, metadata_json: r.node.metadata_json, enrichment: r.node.enrichment,
  retrieval_count: r.node.retrieval_count, last_accessed: toString(r.node.last_accessed),
  version: r.node.version} END AS note
