// Which of some notes of a scope the supersession step never judged (`updates/mark_judged`): those an
// ingest stored before it stopped, since its supersession pass runs last. Only enriched notes: the pass
// judges nothing else, so a note stored raw would be found again by every rerun. Params: $ids, scope.
// Returns one row per such note: id.
UNWIND $ids AS nid
MATCH (n:Note {id: nid, user_id: $user_id, agent_id: $agent_id, run_id: $run_id})
WHERE n.updates_judged_at IS NULL AND n.enrichment = 'done'
RETURN n.id AS id
