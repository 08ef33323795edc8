// Forget what the supersession step recorded in a scope, to judge it again with today's rules
// (`rejudge_updates`, issue 28): every SUPERSEDES and CONFLICTS_WITH between two
// notes of the scope, and the notes' stored valid_to. Synthesis notes and their relationships stay
// (a synthesis is superseded by its successor synthesis, never judged). No note's content changes.
// Params: scope. Returns one row: removed (relationships deleted).
MATCH (a:Note {user_id: $user_id, agent_id: $agent_id, run_id: $run_id})-[r:SUPERSEDES|CONFLICTS_WITH]->(b:Note)
WHERE b.user_id = $user_id AND b.agent_id = $agent_id AND b.run_id = $run_id
  AND coalesce(a.category, '') <> 'synthesis' AND coalesce(b.category, '') <> 'synthesis'
WITH collect(DISTINCT r) AS found, collect(DISTINCT b) AS ended
FOREACH (r IN found | DELETE r)
FOREACH (n IN ended | REMOVE n.valid_to)
RETURN size(found) AS removed
