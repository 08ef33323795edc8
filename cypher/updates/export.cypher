// Every supersession, conflict and derivation between two notes of a scope, for export (issue 28's
// relationships are not A-MEM links, so notes/export.cypher leaves them out). Both notes and the
// relationship hold the scope. Params: scope. Returns one row per relationship: source_id, type,
// target_id, at, reason, p_yes, created_at, caused_by.
MATCH (a:Note {user_id: $user_id, agent_id: $agent_id, run_id: $run_id})
      -[r:SUPERSEDES|CONFLICTS_WITH|DERIVED_FROM]->
      (b:Note {user_id: $user_id, agent_id: $agent_id, run_id: $run_id})
WHERE r.user_id = $user_id AND r.agent_id = $agent_id AND r.run_id = $run_id
RETURN a.id AS source_id, type(r) AS type, b.id AS target_id, r.at AS at, r.reason AS reason,
       r.p_yes AS p_yes, r.created_at AS created_at, r.caused_by AS caused_by
ORDER BY r.created_at, a.id, b.id
