// Every note of a scope with embedding and outgoing links, oldest first (export). Params: scope, $skip, $limit.
MATCH (n:Note {user_id: $user_id, agent_id: $agent_id, run_id: $run_id})
WITH n ORDER BY n.created_at, n.id SKIP $skip LIMIT $limit
OPTIONAL MATCH (n)-[r:RELATED_TO|SUPPORTS|CONTRADICTS|ELABORATES|FOLLOWS|SAME_TOPIC]->(t:Note)
WITH n, collect(CASE WHEN t IS NULL THEN NULL ELSE {target_id: t.id, type: type(r), reason: r.reason,
  strength: r.strength, created_at: r.created_at, caused_by: r.caused_by} END) AS links
RETURN n {.id, .content, .user_id, .agent_id, .run_id, .event_time, .event_time_text, .created_at,
          .updated_at, .keywords, .tags, .context, .category, .source_id, .metadata_json, .enrichment,
          .retrieval_count, .last_accessed, .version, .embedding} AS note, links
