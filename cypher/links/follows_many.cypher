// Bulk FOLLOWS links inside one scope: each conversation turn follows the one before it (bulk import,
// the LoCoMo ingest, benchmark chains). Pairs whose notes are not both in the scope create nothing.
// Params: $pairs (list of {source_id, target_id}: source happens after target), scope, $now, $reason,
// $strength. A link already there keeps its creation time (a rerun repairs, it does not re-date).
// Returns: created (links written or refreshed).
UNWIND $pairs AS p
MATCH (s:Note {id: p.source_id, user_id: $user_id, agent_id: $agent_id, run_id: $run_id})
MATCH (t:Note {id: p.target_id, user_id: $user_id, agent_id: $agent_id, run_id: $run_id})
WHERE s <> t
MERGE (s)-[r:FOLLOWS]->(t)
ON CREATE SET r.created_at = $now, r.caused_by = s.id
SET r.reason = $reason, r.strength = $strength, r.user_id = $user_id, r.agent_id = $agent_id, r.run_id = $run_id
RETURN count(r) AS created
