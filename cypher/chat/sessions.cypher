// Chat sessions of a scope, most recently used first. Params: scope, $limit.
MATCH (s:ChatSession {user_id: $user_id, agent_id: $agent_id, run_id: $run_id})
RETURN s.session_id AS session_id, s.next_seq AS messages, s.created_at AS created_at,
       s.updated_at AS updated_at
ORDER BY s.updated_at DESC
LIMIT $limit
