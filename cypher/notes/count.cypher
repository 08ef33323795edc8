// Number of notes in a scope. Params: scope.
MATCH (n:Note {user_id: $user_id, agent_id: $agent_id, run_id: $run_id})
RETURN count(n) AS count
