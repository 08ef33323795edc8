// Undo of an add, planning: does the note exist in the scope, and every typed link touching it, with
// caused_by (the links its add made carry its id; links of later adds or of link() carry theirs).
// Params: $id, scope. Returns: one row: exists, links (oldest first).
OPTIONAL MATCH (n:Note {id: $id, user_id: $user_id, agent_id: $agent_id, run_id: $run_id})
OPTIONAL MATCH (n)-[r:RELATED_TO|SUPPORTS|CONTRADICTS|ELABORATES|FOLLOWS|SAME_TOPIC]-
               (:Note {user_id: $user_id, agent_id: $agent_id, run_id: $run_id})
WITH n, r ORDER BY r.created_at
RETURN n IS NOT NULL AS exists,
       collect(CASE WHEN r IS NULL THEN NULL ELSE {source_id: startNode(r).id, target_id: endNode(r).id,
         type: type(r), reason: r.reason, strength: r.strength, created_at: r.created_at,
         caused_by: r.caused_by} END) AS links
