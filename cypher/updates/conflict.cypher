// Two notes of the same scope that state clashing values with no order in time (issue 28):
// (a)-[:CONFLICTS_WITH]->(b), one relationship per pair. Neither note changes. Not an A-MEM link type.
// Scope as for links (links/create.cypher): both notes are matched in the scope, so a pair across
// scopes writes nothing; so does a note clashing with itself, or a pair already recorded either way.
// Params: $note_id, $other_id, scope, $at, $reason, $p_yes, $now, $caused_by.
// Returns: one row when written or already there: other_id.
MATCH (a:Note {id: $note_id, user_id: $user_id, agent_id: $agent_id, run_id: $run_id})
MATCH (b:Note {id: $other_id, user_id: $user_id, agent_id: $agent_id, run_id: $run_id})
WHERE a <> b AND NOT (b)-[:CONFLICTS_WITH]->(a)
MERGE (a)-[r:CONFLICTS_WITH]->(b)
SET r.at = $at, r.reason = $reason, r.p_yes = $p_yes, r.created_at = coalesce(r.created_at, $now),
    r.caused_by = coalesce(r.caused_by, $caused_by),
    r.user_id = $user_id, r.agent_id = $agent_id, r.run_id = $run_id
RETURN b.id AS other_id
