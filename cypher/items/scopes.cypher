// Scopes holding store items under a namespace prefix (for a LangGraph search or listing whose
// prefix does not name one scope): scope ids only, no item crosses scopes. Any of $user_id,
// $agent_id, $run_id may be null (= any). Params: those, $ns_key, $skip, $limit.
MATCH (i:StoreItem)
WHERE ($user_id IS NULL OR i.user_id = $user_id) AND ($agent_id IS NULL OR i.agent_id = $agent_id)
  AND ($run_id IS NULL OR i.run_id = $run_id) AND i.ns_key STARTS WITH $ns_key
RETURN DISTINCT i.user_id AS user_id, i.agent_id AS agent_id, i.run_id AS run_id
ORDER BY user_id, agent_id, run_id
SKIP $skip LIMIT $limit
