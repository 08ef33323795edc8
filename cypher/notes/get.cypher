// One note of a scope, without its embedding. Params: $id, $user_id, $agent_id, $run_id.
MATCH (n:Note {id: $id, user_id: $user_id, agent_id: $agent_id, run_id: $run_id})
RETURN n {.id, .content, .user_id, .agent_id, .run_id, .event_time, .event_time_text, .created_at,
          .updated_at, .keywords, .tags, .context, .category, .source_id, .metadata_json, .enrichment,
          .retrieval_count, .last_accessed, .version} AS note
