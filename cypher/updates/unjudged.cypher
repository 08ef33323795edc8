// Which of some notes of a scope the supersession step never judged (`updates/mark_judged`): those an
// ingest stored before it stopped, since its supersession pass runs last. Params: $ids, scope.
// Returns one row per such note: id.
UNWIND $ids AS nid
MATCH (n:Note {id: nid, user_id: $user_id, agent_id: $agent_id, run_id: $run_id})
WHERE n.updates_judged_at IS NULL
RETURN n.id AS id
