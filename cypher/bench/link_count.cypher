// Number of typed links whose source note is in one scope. Params: scope. Returns: links.
MATCH (n:Note {user_id: $user_id, agent_id: $agent_id, run_id: $run_id})
      -[r:RELATED_TO|SUPPORTS|CONTRADICTS|ELABORATES|FOLLOWS|SAME_TOPIC]->()
RETURN count(r) AS links
