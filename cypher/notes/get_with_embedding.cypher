// One note of a scope with its embedding (export, re-embedding checks). Params: $id, scope.
MATCH (n:Note {id: $id, user_id: $user_id, agent_id: $agent_id, run_id: $run_id})
RETURN n {.id, .content, .user_id, .agent_id, .run_id, .event_time, .event_time_text, .created_at,
          .updated_at, .keywords, .tags, .context, .category, .source_id, .metadata_json, .enrichment,
          .retrieval_count, .last_accessed, .version, .embedding} AS note
