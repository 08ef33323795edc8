// Create typed links from one note to notes of the same scope. The type is chosen from the closed set
// below (Cypher cannot parameterise a relationship type); any other value creates nothing.
// Params: $source_id, scope, $links (list of {target_id, type, reason, strength, created_at?, caused_by?}),
//         $now, $caused_by (defaults for links that carry none, i.e. all but imported ones).
// Returns: one row per link written: target_id, type.
MATCH (s:Note {id: $source_id, user_id: $user_id, agent_id: $agent_id, run_id: $run_id})
UNWIND $links AS l
MATCH (t:Note {id: l.target_id, user_id: $user_id, agent_id: $agent_id, run_id: $run_id})
WHERE t <> s AND l.type IN ['RELATED_TO', 'SUPPORTS', 'CONTRADICTS', 'ELABORATES', 'FOLLOWS', 'SAME_TOPIC']
FOREACH (_ IN CASE WHEN l.type = 'RELATED_TO' THEN [1] ELSE [] END |
  MERGE (s)-[r:RELATED_TO]->(t)
  SET r.reason = l.reason, r.strength = l.strength, r.created_at = coalesce(l.created_at, $now),
      r.caused_by = coalesce(l.caused_by, $caused_by),
      r.user_id = $user_id, r.agent_id = $agent_id, r.run_id = $run_id)
FOREACH (_ IN CASE WHEN l.type = 'SUPPORTS' THEN [1] ELSE [] END |
  MERGE (s)-[r:SUPPORTS]->(t)
  SET r.reason = l.reason, r.strength = l.strength, r.created_at = coalesce(l.created_at, $now),
      r.caused_by = coalesce(l.caused_by, $caused_by),
      r.user_id = $user_id, r.agent_id = $agent_id, r.run_id = $run_id)
FOREACH (_ IN CASE WHEN l.type = 'CONTRADICTS' THEN [1] ELSE [] END |
  MERGE (s)-[r:CONTRADICTS]->(t)
  SET r.reason = l.reason, r.strength = l.strength, r.created_at = coalesce(l.created_at, $now),
      r.caused_by = coalesce(l.caused_by, $caused_by),
      r.user_id = $user_id, r.agent_id = $agent_id, r.run_id = $run_id)
FOREACH (_ IN CASE WHEN l.type = 'ELABORATES' THEN [1] ELSE [] END |
  MERGE (s)-[r:ELABORATES]->(t)
  SET r.reason = l.reason, r.strength = l.strength, r.created_at = coalesce(l.created_at, $now),
      r.caused_by = coalesce(l.caused_by, $caused_by),
      r.user_id = $user_id, r.agent_id = $agent_id, r.run_id = $run_id)
FOREACH (_ IN CASE WHEN l.type = 'FOLLOWS' THEN [1] ELSE [] END |
  MERGE (s)-[r:FOLLOWS]->(t)
  SET r.reason = l.reason, r.strength = l.strength, r.created_at = coalesce(l.created_at, $now),
      r.caused_by = coalesce(l.caused_by, $caused_by),
      r.user_id = $user_id, r.agent_id = $agent_id, r.run_id = $run_id)
FOREACH (_ IN CASE WHEN l.type = 'SAME_TOPIC' THEN [1] ELSE [] END |
  MERGE (s)-[r:SAME_TOPIC]->(t)
  SET r.reason = l.reason, r.strength = l.strength, r.created_at = coalesce(l.created_at, $now),
      r.caused_by = coalesce(l.caused_by, $caused_by),
      r.user_id = $user_id, r.agent_id = $agent_id, r.run_id = $run_id)
RETURN t.id AS target_id, l.type AS type
