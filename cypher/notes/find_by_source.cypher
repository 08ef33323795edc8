// Notes of the scope with these source ids (e.g. LoCoMo dia_id), for resumable ingest. Params: $source_ids, scope.
MATCH (n:Note {user_id: $user_id, agent_id: $agent_id, run_id: $run_id})
WHERE n.source_id IN $source_ids
RETURN n.source_id AS source_id, n.id AS id
