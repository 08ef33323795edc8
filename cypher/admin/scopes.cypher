// Distinct scopes holding notes, optionally for one user. Params: $user_id (nullable), $limit.
MATCH (n:Note)
WHERE $user_id IS NULL OR n.user_id = $user_id
RETURN DISTINCT n.user_id AS user_id, n.agent_id AS agent_id, n.run_id AS run_id
ORDER BY user_id, agent_id, run_id
LIMIT $limit
