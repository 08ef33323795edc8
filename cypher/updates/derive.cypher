// A synthesis note's sources (issue 28, consolidation): (synthesis)-[:DERIVED_FROM]->(source) for each
// source, all notes of the scope; a source of another scope, or missing, gets nothing. No source changes.
// Not an A-MEM link type. Params: $note_id, scope, $source_ids, $now. Returns one row per link: source_id.
MATCH (n:Note {id: $note_id, user_id: $user_id, agent_id: $agent_id, run_id: $run_id})
UNWIND $source_ids AS sid
MATCH (s:Note {id: sid, user_id: $user_id, agent_id: $agent_id, run_id: $run_id})
WHERE s <> n
MERGE (n)-[r:DERIVED_FROM]->(s)
SET r.created_at = coalesce(r.created_at, $now), r.caused_by = $note_id,
    r.user_id = $user_id, r.agent_id = $agent_id, r.run_id = $run_id
RETURN s.id AS source_id
