// A page of the typed links touching a note, both directions, oldest first. Params: $id, scope, $skip, $limit.
MATCH (n:Note {id: $id, user_id: $user_id, agent_id: $agent_id, run_id: $run_id})
MATCH (n)-[r:RELATED_TO|SUPPORTS|CONTRADICTS|ELABORATES|FOLLOWS|SAME_TOPIC]-(m:Note)
WHERE m.user_id = $user_id AND m.agent_id = $agent_id AND m.run_id = $run_id
RETURN startNode(r).id AS source_id, endNode(r).id AS target_id, type(r) AS type, r.reason AS reason,
       r.strength AS strength, r.created_at AS created_at, r.caused_by AS caused_by
ORDER BY r.created_at, source_id, target_id, type
SKIP $skip LIMIT $limit
