// One note supersedes another of the same scope (issue 28): (newer)-[:SUPERSEDES]->(older), and the
// older note's valid_to becomes the earliest time that superseded it. No other property of either note
// changes (content, context, tags, keywords, version stay). SUPERSEDES is not an A-MEM link type.
// Scope as for links (links/create.cypher): both notes are matched in the scope, so a pair across
// scopes writes nothing, even when the service's checks are bypassed; so does a note superseding
// itself, or a pair that already stands the other way round.
// Params: $newer_id, $older_id, scope, $at (the newer note's time), $reason, $p_yes, $now, $caused_by.
// Returns: one row when written: older_id, valid_to.
MATCH (n:Note {id: $newer_id, user_id: $user_id, agent_id: $agent_id, run_id: $run_id})
MATCH (o:Note {id: $older_id, user_id: $user_id, agent_id: $agent_id, run_id: $run_id})
WHERE n <> o AND NOT (o)-[:SUPERSEDES]->(n)
MERGE (n)-[r:SUPERSEDES]->(o)
SET r.at = $at, r.reason = $reason, r.p_yes = $p_yes, r.created_at = coalesce(r.created_at, $now),
    r.caused_by = coalesce(r.caused_by, $caused_by),
    r.user_id = $user_id, r.agent_id = $agent_id, r.run_id = $run_id
SET o.valid_to = CASE WHEN o.valid_to IS NULL OR o.valid_to > $at THEN $at ELSE o.valid_to END
RETURN o.id AS older_id, o.valid_to AS valid_to
