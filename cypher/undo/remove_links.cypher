// Undo of an add: remove the typed links its add made (caused_by = $id) touching the note, inside the
// scope; with $keep_follows, its FOLLOWS link (the conversation order) stays.
// Params: $id, scope, $keep_follows. Returns: one row per link removed.
MATCH (n:Note {id: $id, user_id: $user_id, agent_id: $agent_id, run_id: $run_id})
MATCH (n)-[r:RELATED_TO|SUPPORTS|CONTRADICTS|ELABORATES|FOLLOWS|SAME_TOPIC]-
      (:Note {user_id: $user_id, agent_id: $agent_id, run_id: $run_id})
WHERE r.caused_by = $id AND NOT ($keep_follows AND type(r) = 'FOLLOWS')
WITH r, startNode(r).id AS source_id, endNode(r).id AS target_id, type(r) AS type, r.reason AS reason,
     r.strength AS strength, r.created_at AS created_at, r.caused_by AS caused_by
DELETE r
RETURN source_id, target_id, type, reason, strength, created_at, caused_by
ORDER BY created_at
