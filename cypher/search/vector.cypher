// Approximate top-k by cosine within one scope, over-fetching from the HNSW index because
// db.index.vector.queryNodes (5.26) cannot filter: the caller grows $fetch_k while fewer than $k survive.
// Optional filters are null when unused. Neo4j reports cosine as (1 + cos) / 2: converted here.
// Temporal properties come back as ISO-8601 strings: the driver's DateTime hydration cost ~0.1 ms per
// value in Python (30 per search at k=10), more than the index query itself; the store parses them.
// Params: $embedding, $fetch_k, $k, scope, $exclude_ids, $tags_any, $category, $since, $until.
// Returns one row per kept hit: fetched (rows the index gave), cosine, note; when none is kept, one row
// with a null note. Not one row holding them all: the driver keeps a receive buffer per pooled connection
// as big as the biggest message it ever got, so one row of a hundred 40 KB notes left megabytes on every
// connection for the life of the process (issue 16).
CALL db.index.vector.queryNodes('note_embedding', $fetch_k, $embedding) YIELD node, score
WITH collect({node: node, score: score}) AS rows
WITH size(rows) AS fetched, [r IN rows WHERE
  r.node.user_id = $user_id AND r.node.agent_id = $agent_id AND r.node.run_id = $run_id
  AND NOT r.node.id IN $exclude_ids
  AND ($tags_any IS NULL OR any(t IN r.node.tags WHERE t IN $tags_any))
  AND ($category IS NULL OR r.node.category = $category)
  AND ($since IS NULL OR r.node.event_time >= $since)
  AND ($until IS NULL OR r.node.event_time <= $until)][0..$k] AS kept
UNWIND CASE WHEN size(kept) = 0 THEN [null] ELSE kept END AS r
RETURN fetched, 2 * r.score - 1 AS cosine, CASE WHEN r IS NULL THEN null ELSE {id: r.node.id, content: r.node.content,
  user_id: r.node.user_id, agent_id: r.node.agent_id, run_id: r.node.run_id,
  event_time: toString(r.node.event_time), event_time_text: r.node.event_time_text,
  created_at: toString(r.node.created_at), updated_at: toString(r.node.updated_at),
  keywords: r.node.keywords, tags: r.node.tags, context: r.node.context, category: r.node.category,
  source_id: r.node.source_id, metadata_json: r.node.metadata_json, enrichment: r.node.enrichment,
  retrieval_count: r.node.retrieval_count, last_accessed: toString(r.node.last_accessed),
  version: r.node.version} END AS note
