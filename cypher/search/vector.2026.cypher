// 2026 line (Cypher 25): approximate top-k by cosine within one scope, the scope filtered INSIDE the
// vector index (its WITH [n.user_id, n.agent_id, n.run_id] properties), so a small tenant among large
// ones gets its own top-k at the cost of a normal search. SEARCH returns $fetch_k in-scope candidates
// (the store asks for 3 x k: recall@10 0.99-1.000 for every tenant size at 100k, docs/neo4j-2026.md);
// the optional filters and excluded ids are applied to those, and the caller grows $fetch_k while
// fewer than $k survive and the index had more to give. The scope is checked again on the rows (the
// store's rule: every query states its scope where it reads).
// The prefix is needed: a 2026 database keeps Cypher 5 as its default language, where SEARCH is a syntax error.
// Neo4j reports cosine as (1 + cos) / 2: converted here. Temporals come back as ISO-8601 strings, and
// one row per hit, not one for all (see search/vector.cypher for both reasons).
// Params: $embedding, $fetch_k, $k, scope, $exclude_ids, $tags_any, $category, $since, $until.
// Returns one row per kept hit: fetched (rows the index gave), cosine, note; when none is kept, one row
// with a null note.
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
RETURN fetched, 2 * r.score - 1 AS cosine, CASE WHEN r IS NULL THEN null ELSE {id: r.node.id, content: r.node.content,
  user_id: r.node.user_id, agent_id: r.node.agent_id, run_id: r.node.run_id,
  event_time: toString(r.node.event_time), event_time_text: r.node.event_time_text,
  created_at: toString(r.node.created_at), updated_at: toString(r.node.updated_at),
  keywords: r.node.keywords, tags: r.node.tags, context: r.node.context, category: r.node.category,
  source_id: r.node.source_id, metadata_json: r.node.metadata_json, enrichment: r.node.enrichment,
  retrieval_count: r.node.retrieval_count, last_accessed: toString(r.node.last_accessed),
  version: r.node.version} END AS note
