// Browse: the conflicts of a scope (issue 28): pairs of notes that state clashing values with no order in
// time (CONFLICTS_WITH, written when the model said they clash and both hold from the same time).
// Answers name both statements with their dates. Params: :params {user_id: 'alice', agent_id: 'default', run_id: 'default'}
MATCH clash = (a:Note {user_id: $user_id, agent_id: $agent_id, run_id: $run_id})
              -[r:CONFLICTS_WITH]->(b:Note {user_id: $user_id, agent_id: $agent_id, run_id: $run_id})
RETURN clash
ORDER BY r.at
